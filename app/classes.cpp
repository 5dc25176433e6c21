#include "app/classes.h"

#include <cstdio>
#include <fstream>
#include <sstream>

#include "app/commands.h"
#include "assets/assets.h"

namespace nnxr::app {
namespace {

std::vector<std::string> lines_of(std::string_view text) {
  std::vector<std::string> out;
  std::istringstream in{std::string(text)};
  for (std::string line; std::getline(in, line);) {
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
    out.push_back(line);
  }
  while (!out.empty() && out.back().empty()) out.pop_back();
  return out;
}

ClassList builtin(const char* file, const char* source) {
  const auto asset = assets::find(file);
  if (!asset) return {};
  return {lines_of({reinterpret_cast<const char*>(asset->bytes.data()), asset->bytes.size()}), source};
}

std::string metadata(const model::Graph& g, const std::string& key) {
  for (const auto& [k, v] : g.metadata)
    if (k == key) return v;
  return {};
}

int64_t input_channels(const model::Graph& g) {
  if (g.inputs.empty()) return 0;
  const model::Tensor& t = g.tensors[g.inputs[0]];
  if (!t.rank_known || t.shape.size() != 4) return 0;
  return t.shape[1] <= 4 ? t.shape[1] : t.shape[3];
}

}  // namespace

std::optional<ClassList> parse_labels_option(Args& args) {
  const auto file = args.option("--labels");
  if (!file) return std::nullopt;
  std::ifstream in(*file);
  if (!in) throw UsageError("--labels: cannot read '" + *file + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  ClassList list{lines_of(ss.str()), *file};
  if (list.names.empty()) throw UsageError("--labels: '" + *file + "' holds no class names");
  return list;
}

ClassList choose_classes(const model::Graph& graph, int64_t classes, const std::optional<ClassList>& given) {
  if (given) return *given;
  if (const std::string names = metadata(graph, "nnxr.labels"); !names.empty()) {
    ClassList list{{}, "model metadata"};
    std::stringstream ss(names);
    for (std::string item; std::getline(ss, item, ',');) list.names.push_back(item);
    return list;
  }
  const std::string kind = metadata(graph, "nnxr.classes");
  if (kind == "imagenet" || (kind.empty() && (classes == 1000 || classes == 1001)))
    return builtin("classes/imagenet.txt", "ImageNet-1k");
  if (kind == "cifar10") return builtin("classes/cifar10.txt", "CIFAR-10");
  if (kind == "digits") return builtin("classes/digits.txt", "digits");
  if (kind == "coco") return builtin(classes == 91 ? "classes/coco91.txt" : "classes/coco80.txt", "COCO");
  if (kind.empty() && classes == 10)  // grey inputs are digits; colour ones CIFAR-10
    return input_channels(graph) == 3 ? builtin("classes/cifar10.txt", "CIFAR-10") : builtin("classes/digits.txt", "digits");
  if (kind.empty() && classes == 91) return builtin("classes/coco91.txt", "COCO");
  if (kind.empty() && classes == 80) return builtin("classes/coco80.txt", "COCO");
  return {};
}

namespace {

std::string numbers(const std::vector<float>& v) {
  std::string out;
  for (float x : v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", double(x));
    out += (out.empty() ? "" : "/") + std::string(buf);
  }
  return out;
}

}  // namespace

std::string describe_preprocessing(const model::Graph& graph, const ImageOptions& image, bool& guessed) {
  guessed = false;
  // A preset with some of its values replaced by --image-scale/mean/std: the values in effect.
  if (!image.preset.empty()) {
    const ImageOptions plain = image_preset(image.preset);
    if (plain.scale != image.scale || plain.mean != image.mean || plain.std != image.std) {
      char scale[32];
      std::snprintf(scale, sizeof scale, "%g", double(image.scale.value_or(1.0f / 255.0f)));
      return "image: preset " + image.preset + " as changed (" + (image.bgr ? "BGR" : "RGB") + ", scale " + scale +
             ", mean " + numbers(image.mean) + ", std " + numbers(image.std) + ")";
    }
  }
  if (image.preset == "imagenet") return "image: preset imagenet (RGB, 0-1, mean 0.485/0.456/0.406, std 0.229/0.224/0.225)";
  if (image.preset == "caffe") return "image: preset caffe (BGR, 0-255, mean 104/117/123)";
  if (image.preset == "unit") return "image: preset unit (RGB, 0-1)";
  if (image.preset == "raw") return "image: preset raw (RGB, 0-255)";
  if (image.scale || !image.mean.empty() || !image.std.empty()) return "image: --image-scale/mean/std as given";
  if (!metadata(graph, "nnxr.image.scale").empty() || !metadata(graph, "nnxr.image.mean").empty())
    return "image: the model's preprocessing metadata (scale " + metadata(graph, "nnxr.image.scale").substr(0, 8) +
           ", mean " + metadata(graph, "nnxr.image.mean") + ")";
  guessed = true;
  return "image: RGB scaled to 0-1, a guess (no preprocessing metadata; see --image-preset)";
}

}  // namespace nnxr::app
