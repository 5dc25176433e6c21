// Turning `--input [NAME=]FILE` arguments (.npy, ONNX TensorProto .pb, .png/.jpg/.bmp) and
// `--random SEED` into tensors for the graph's inputs. Used by run, inspect --scene, render and view.
#pragma once

#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "app/args.h"
#include "model/graph.h"
#include "model/load.h"

namespace nnxr::app {

struct InputSpec {
  std::string name;  // empty: the next graph input in order
  std::string file;  // empty with `embedded` set: an embedded asset
  std::optional<std::span<const std::byte>> embedded;
};

// Image preprocessing: value = (pixel * scale - mean[c]) / std[c]. Defaults come from the model's
// metadata (nnxr.image.scale/mean/std) and are overridden by --image-scale/--image-mean/--image-std.
// --image-preset imagenet|caffe|unit|raw sets all three (and caffe's BGR order); the other flags
// then override single values.
struct ImageOptions {
  std::optional<float> scale;
  std::vector<float> mean, std;
  std::string preset;  // empty: none given
  bool bgr = false;    // feed channels as B, G, R
};

// The preprocessing in effect: value = (pixel · scale − mean[c]) / std[c], channels fed as BGR
// when `bgr`.
struct Preprocessing {
  float scale = 1.0f / 255.0f;
  std::vector<float> mean, std;
  bool bgr = false;
};
// For an image fed to the graph input `input` (its metadata, then the flags). Throws UsageError
// for an unknown input or a flag with the wrong number of values.
Preprocessing image_preprocessing(const model::Graph& graph, const std::string& input, const ImageOptions& flags);

// Parses the repeated --input options, and the image flags.
std::vector<InputSpec> parse_input_specs(Args& args);
ImageOptions parse_image_options(Args& args);
// A preset's values alone (UsageError for an unknown name).
ImageOptions image_preset(const std::string& name);

// Tensors from .npy and .pb files, by input name, read before the model is loaded so that their
// shapes can fill symbolic dimensions (LoadOptions::input_shapes). Images are decoded later,
// when the input's shape is known.
class InputSet {
 public:
  // Reads the non-image files; `input_names` are the graph's inputs in order (known from a first
  // look at the model). Throws ModelError / UsageError.
  InputSet(std::vector<InputSpec> specs, const std::vector<std::string>& input_names);

  void add_shapes(model::LoadOptions& options) const;
  bool has_image() const;  // some input is an image (preprocessing applies)
  std::vector<std::string> image_inputs() const;  // graph inputs fed by image files
  std::vector<std::string> random_inputs(const model::Graph& graph) const;  // graph inputs given no file
  // Every graph input gets a tensor: the given file, else random values from `seed`
  // (ort-run.js's generator; 42 when no seed is given, with a note on stderr).
  std::map<std::string, model::TensorData> resolve(const model::Graph& graph, std::optional<uint32_t> seed,
                                                   const ImageOptions& image, bool quiet) const;

 private:
  struct Entry {
    std::string input;  // graph input name
    InputSpec spec;
    std::optional<model::TensorData> tensor;  // set for .npy/.pb
  };
  std::vector<Entry> entries_;
};

// Without a MODEL argument, inputs or --random, the default model runs on an embedded sample
// digit: adds it to `specs`.
void add_default_input(bool has_model, std::optional<uint32_t> seed, std::vector<InputSpec>& specs);

// Loads the model and reads the input files against its input names; when .npy/.pb files give
// shapes that fill symbolic dims, loads it again (milliseconds) with those shapes. Warnings are
// left to the caller (print_warnings).
struct ModelWithInputs {
  model::Graph graph;
  InputSet inputs;
};
ModelWithInputs load_with_inputs(const std::optional<std::string>& path, std::vector<InputSpec> specs,
                                 model::LoadOptions options);

}  // namespace nnxr::app
