#include "app/inputs.h"

#include "model/scene/labels.h"

#include <stb_image_resize.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>

#include "app/commands.h"
#include "app/image_decode.h"
#include "assets/assets.h"
#include "model/file_io.h"
#include "model/tensor_io.h"

namespace nnxr::app {
namespace {

bool has_extension(const std::string& file, std::initializer_list<const char*> exts) {
  std::string ext = std::filesystem::path(file).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return std::any_of(exts.begin(), exts.end(), [&](const char* e) { return ext == e; });
}

bool is_image(const InputSpec& s) { return s.embedded || has_extension(s.file, {".png", ".jpg", ".jpeg", ".bmp", ".gif", ".tga", ".ppm", ".pgm"}); }

std::vector<float> parse_floats(const std::string& text, const std::string& what) {
  std::vector<float> out;
  std::stringstream ss(text);
  for (std::string item; std::getline(ss, item, ',');) {
    try {
      size_t used = 0;
      out.push_back(std::stof(item, &used));
      if (used != item.size()) throw std::invalid_argument(item);
    } catch (const std::exception&) {
      throw UsageError(what + ": '" + text + "' is not a comma-separated list of numbers");
    }
  }
  return out;
}

std::string metadata(const model::Graph& g, const std::string& key) {
  for (const auto& [k, v] : g.metadata)
    if (k == key) return v;
  return {};
}

// The preprocessing in effect for an image fed to `input`: the model's metadata, then the flags.
Preprocessing preprocessing_for(const model::Graph& graph, const model::Tensor& input, const ImageOptions& flags, int64_t c) {
  float scale = 1.0f / 255.0f;
  std::vector<float> mean(static_cast<size_t>(c), 0.0f), stdev(static_cast<size_t>(c), 1.0f);
  auto from_meta = [&](const std::string& key, std::vector<float>& v) {
    const std::string text = metadata(graph, key);
    if (text.empty()) return;
    auto values = parse_floats(text, "model metadata " + key);
    if (values.size() == 1) values.assign(static_cast<size_t>(c), values[0]);
    if (values.size() == static_cast<size_t>(c)) v = values;
  };
  if (auto m = metadata(graph, "nnxr.image.scale"); !m.empty()) scale = parse_floats(m, "model metadata nnxr.image.scale").at(0);
  from_meta("nnxr.image.mean", mean);
  from_meta("nnxr.image.std", stdev);
  if (flags.scale) scale = *flags.scale;
  auto from_flag = [&](const std::vector<float>& f, std::vector<float>& v, const char* name) {
    if (f.empty()) return;
    if (f.size() == 1) v.assign(static_cast<size_t>(c), f[0]);
    else if (f.size() == static_cast<size_t>(c)) v = f;
    else throw UsageError(std::string(name) + " needs 1 or " + std::to_string(c) + " values for input '" + input.name + "'");
  };
  from_flag(flags.mean, mean, "--image-mean");
  from_flag(flags.std, stdev, "--image-std");

  return {scale, std::move(mean), std::move(stdev), flags.bgr && c >= 3};
}

// Decodes an image into the input's layout: [N, C, H, W] or [N, H, W, C] with C in {1, 3, 4}.
model::TensorData decode_image(std::span<const std::byte> bytes, const std::string& source, const model::Tensor& input,
                               const model::Graph& graph, const ImageOptions& flags) {
  auto fail = [&](const std::string& what) -> model::ModelError { return model::ModelError(source + ": " + what); };
  const auto& s = input.shape;
  if (input.dtype != model::DType::Float) throw fail("input '" + input.name + "' is " + std::string(model::dtype_name(input.dtype)) + ", not float32: images cannot feed it");
  if (!input.rank_known || (s.size() != 4 && s.size() != 3)) throw fail("input '" + input.name + "' has shape " + model::shape_string(s) + ", not an image shape ([N,C,H,W] or [N,H,W,C])");
  const size_t o = s.size() - 3;  // leading batch dim, if any
  const bool nchw = s[o] >= 1 && s[o] <= 4 && !(s[o + 2] >= 1 && s[o + 2] <= 4 && s[o] > s[o + 2]);
  const int64_t c = nchw ? s[o] : s[o + 2], h = nchw ? s[o + 1] : s[o], w = nchw ? s[o + 2] : s[o + 1];
  if (c < 1 || c > 4 || h < 1 || w < 1 || h > 16384 || w > 16384) throw fail("input '" + input.name + "' has shape " + model::shape_string(s) + ", not an image shape");
  DecodedImage image = decode_image_file(bytes, source, static_cast<int>(c));
  const int iw = static_cast<int>(image.width), ih = static_cast<int>(image.height);
  std::vector<unsigned char> resized;
  if (iw == w && ih == h) {
    resized = std::move(image.pixels);
  } else {
    resized.resize(static_cast<size_t>(h * w * c));
    stbir_resize_uint8(image.pixels.data(), iw, ih, 0, resized.data(), static_cast<int>(w), static_cast<int>(h), 0, static_cast<int>(c));
    std::cerr << "note: " << source << ": resized " << iw << "x" << ih << " to " << w << "x" << h << '\n';
  }

  const Preprocessing pre = preprocessing_for(graph, input, flags, c);
  const float scale = pre.scale;
  const std::vector<float>& mean = pre.mean;
  const std::vector<float>& stdev = pre.std;

  model::TensorData t;
  t.dtype = model::DType::Float;
  t.shape = s;
  if (o == 1) t.shape[0] = 1;
  t.bytes.resize(static_cast<size_t>(h * w * c) * sizeof(float));
  auto* out = reinterpret_cast<float*>(t.bytes.data());
  for (int64_t y = 0; y < h; ++y)
    for (int64_t x = 0; x < w; ++x)
      for (int64_t ch = 0; ch < c; ++ch) {
        const int64_t from = flags.bgr && c >= 3 && ch < 3 ? 2 - ch : ch;  // --image-preset caffe
        const float v = (resized[static_cast<size_t>((y * w + x) * c + from)] * scale - mean[static_cast<size_t>(ch)]) / stdev[static_cast<size_t>(ch)];
        out[nchw ? (ch * h + y) * w + x : (y * w + x) * c + ch] = v;
      }
  return t;
}

// Read once (no second copy), a regular file only, its size checked first.
std::vector<std::byte> read_file(const std::string& file) { return model::read_regular_file(file, kMaxImageFileBytes, "for images"); }

}  // namespace

std::vector<InputSpec> parse_input_specs(Args& args) {
  std::vector<InputSpec> specs;
  for (const std::string& v : args.options("--input")) {
    InputSpec s;
    const auto eq = v.find('=');
    // NAME=FILE, unless the '=' belongs to a path that exists as given.
    if (eq != std::string::npos && eq > 0 && !std::filesystem::exists(v)) {
      s.name = v.substr(0, eq);
      s.file = v.substr(eq + 1);
    } else {
      s.file = v;
    }
    if (s.file.empty()) throw UsageError("--input '" + v + "' names no file");
    specs.push_back(std::move(s));
  }
  return specs;
}

ImageOptions parse_image_options(Args& args) {
  ImageOptions o;
  if (auto v = args.option("--image-scale")) o.scale = parse_floats(*v, "--image-scale").at(0);
  if (auto v = args.option("--image-mean")) o.mean = parse_floats(*v, "--image-mean");
  if (auto v = args.option("--image-std")) o.std = parse_floats(*v, "--image-std");
  if (auto p = args.option("--image-preset")) {
    const ImageOptions preset = image_preset(*p);
    o.preset = preset.preset;
    o.bgr = preset.bgr;
    if (!o.scale) o.scale = preset.scale;
    if (o.mean.empty()) o.mean = preset.mean;
    if (o.std.empty()) o.std = preset.std;
  }
  return o;
}

ImageOptions image_preset(const std::string& name) {
  ImageOptions o;
  o.preset = name;
  if (name == "imagenet") o.scale = 1 / 255.0f, o.mean = {0.485f, 0.456f, 0.406f}, o.std = {0.229f, 0.224f, 0.225f};
  else if (name == "caffe") o.scale = 1.0f, o.mean = {104, 117, 123}, o.std = {1}, o.bgr = true;
  else if (name == "unit") o.scale = 1 / 255.0f, o.mean = {0}, o.std = {1};
  else if (name == "raw") o.scale = 1.0f, o.mean = {0}, o.std = {1};
  else throw UsageError("--image-preset takes imagenet, caffe, unit or raw, got '" + name + "'");
  return o;
}

InputSet::InputSet(std::vector<InputSpec> specs, const std::vector<std::string>& input_names) {
  size_t next = 0;
  for (InputSpec& s : specs) {
    Entry e;
    if (s.name.empty()) {
      while (next < input_names.size() &&
             std::any_of(entries_.begin(), entries_.end(), [&](const Entry& x) { return x.input == input_names[next]; }))
        ++next;
      if (next >= input_names.size())
        throw UsageError("more --input files than the model has inputs (" + std::to_string(input_names.size()) + ")");
      e.input = input_names[next++];
    } else {
      if (std::find(input_names.begin(), input_names.end(), s.name) == input_names.end()) {
        std::string names;
        for (const auto& n : input_names) names += (names.empty() ? "" : ", ") + n;
        throw UsageError("--input " + s.name + "=...: the model has no input '" + s.name + "' (its inputs: " + names + ")");
      }
      e.input = s.name;
    }
    if (std::any_of(entries_.begin(), entries_.end(), [&](const Entry& x) { return x.input == e.input; }))
      throw UsageError("input '" + e.input + "' is given twice");
    if (!is_image(s)) {
      if (has_extension(s.file, {".npy"})) e.tensor = model::read_npy(s.file);
      else if (has_extension(s.file, {".pb"})) e.tensor = model::read_tensor_pb(s.file);
      else throw UsageError("--input " + s.file + ": unknown file type (use .npy, .pb, .png or .jpg)");
    }
    e.spec = std::move(s);
    entries_.push_back(std::move(e));
  }
}

Preprocessing image_preprocessing(const model::Graph& graph, const std::string& input, const ImageOptions& flags) {
  const model::TensorId id = graph.find(input);
  if (id == model::kNone) throw UsageError("the model has no input '" + input + "'");
  const auto shape = scene::image_shape(graph.tensors[id].shape);
  return preprocessing_for(graph, graph.tensors[id], flags, shape ? shape->channels : 3);
}

std::vector<std::string> InputSet::image_inputs() const {
  std::vector<std::string> names;
  for (const Entry& e : entries_)
    if (!e.tensor) names.push_back(e.input);
  return names;
}

std::vector<std::string> InputSet::random_inputs(const model::Graph& graph) const {
  std::vector<std::string> names;
  for (model::TensorId id : graph.inputs) {
    const std::string& n = graph.tensors[id].name;
    if (std::none_of(entries_.begin(), entries_.end(), [&](const Entry& e) { return e.input == n; })) names.push_back(n);
  }
  return names;
}

bool InputSet::has_image() const {
  return std::any_of(entries_.begin(), entries_.end(), [](const Entry& e) { return !e.tensor; });
}

void InputSet::add_shapes(model::LoadOptions& options) const {
  for (const Entry& e : entries_)
    if (e.tensor) options.input_shapes[e.input] = e.tensor->shape;
}

std::map<std::string, model::TensorData> InputSet::resolve(const model::Graph& graph, std::optional<uint32_t> seed,
                                                           const ImageOptions& image, bool quiet) const {
  std::map<std::string, model::TensorData> out;
  for (const Entry& e : entries_) {
    if (e.tensor) {
      out[e.input] = *e.tensor;
      continue;
    }
    const model::Tensor& t = graph.tensors[graph.find(e.input)];
    if (e.spec.embedded) out[e.input] = decode_image(*e.spec.embedded, e.spec.file, t, graph, image);
    else out[e.input] = decode_image(read_file(e.spec.file), e.spec.file, t, graph, image);
  }
  bool noted = false;
  model::Mulberry32 rng(seed.value_or(42));
  for (model::TensorId id : graph.inputs) {
    const model::Tensor& t = graph.tensors[id];
    if (out.count(t.name)) continue;
    if (!seed && !quiet && !noted) {
      std::cerr << "note: no --input for '" << t.name << "'; using random values (--random 42)\n";
      noted = true;
    }
    if (!t.rank_known || !model::element_count(t.shape))
      throw model::ModelError(graph.source + ": input '" + t.name + "' has unknown shape " + model::shape_string(t.shape) + "; give it with --input or --dim");
    out[t.name] = model::random_tensor(t.dtype, t.shape, rng);
  }
  return out;
}

void add_default_input(bool has_model, std::optional<uint32_t> seed, std::vector<InputSpec>& specs) {
  if (!has_model && specs.empty() && !seed)
    specs.push_back({.name = "", .file = "digit-3.png (embedded)", .embedded = assets::default_input().bytes});
}

ModelWithInputs load_with_inputs(const std::optional<std::string>& path, std::vector<InputSpec> specs,
                                 model::LoadOptions options) {
  model::Graph graph = load_model_arg(path, options, /*quiet=*/true);
  std::vector<std::string> names;
  for (auto id : graph.inputs) names.push_back(graph.tensors[id].name);
  InputSet inputs(std::move(specs), names);
  const size_t shapes_before = options.input_shapes.size();
  inputs.add_shapes(options);
  if (options.input_shapes.size() != shapes_before) graph = load_model_arg(path, options, /*quiet=*/true);
  return {std::move(graph), std::move(inputs)};
}

}  // namespace nnxr::app
