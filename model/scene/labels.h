// What the view says about the network in words: a label per laid-out tensor (op, short name,
// shape) with an importance, group labels from the name hierarchy (features.3, encoder.layer.2),
// tensor statistics for the legend, and the prediction (top classes of the output) for the panel.
// Plain data computed from a Graph, a Layout and a run's activations; no rendering here (the
// engine turns it into glyphs, engine/annotations.h).
//
// Threading: free functions over immutable inputs; call from any thread.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "model/graph.h"
#include "model/scene/scene.h"

namespace nnxr::scene {

struct TensorLabel {
  model::TensorId tensor = model::kNone;
  std::array<float, 3> anchor{};  // top centre of the block (network space)
  float extent = 0;               // the block's larger side, metres
  std::string op;                 // producing op ("Input" for a graph input)
  std::string name;               // short name (short_name())
  std::string shape;              // "64x55x55" (leading 1s dropped)
  int importance = 2;             // 0: input, output, group; 1: Conv, Gemm, MatMul, Concat, ...; 2: the rest
};

struct GroupLabel {
  std::string name;               // "features.3"
  // Over the middle of its blocks in the row of its first block (a long chain wraps into rows,
  // scene.h Layout); y: the top of that row's tallest block.
  std::array<float, 3> anchor{};
  float extent = 0;               // width of its blocks along depth, metres
  int blocks = 0;
};

struct Labels {
  std::vector<TensorLabel> tensors;  // in layout order
  std::vector<GroupLabel> groups;    // groups of at least two blocks, when there are at least two groups
};

Labels make_labels(const model::Graph& graph, const Layout& layout);

// "/features/features.3/Relu_output_0" → "features.3/Relu", shortened to at most max_chars.
std::string short_name(std::string_view name, size_t max_chars = 24);
// The name's group: components up to the first numbered one ("encoder.layer.2"); empty if none.
std::string group_of(std::string_view name);
std::string shape_text(std::span<const int64_t> shape);  // "1x64x55x55" → "64x55x55"

struct TensorStats {
  int64_t count = 0;
  float min = 0, max = 0, mean = 0;
  float zero_fraction = 0;
};
TensorStats stats_of(std::span<const float> values);

struct ClassScore {
  int64_t index = 0;
  float probability = 0;
  std::string name;  // from the class list; "class N" without one
};

struct Prediction {
  model::TensorId output = model::kNone;
  int64_t classes = 0;
  bool softmax = false;  // the outputs were logits and were turned into probabilities
  std::vector<ClassScore> top;
};

// The top-k classes of the first graph output that is a score vector ([N], [1, N] or
// [1, N, 1, 1] with 2 ≤ N ≤ 100000); nullopt when there is none or it was not computed.
// `names` (may be empty) names the classes; with N = names.size() + 1 the first output is taken
// as a background class.
std::optional<Prediction> predict(const model::Graph& graph, const Activations& values,
                                  std::span<const std::string> names, int k = 5);
// The class count predict() would see, else a detector's (detect(); without its background
// class); 0: neither.
int64_t class_count(const model::Graph& graph, const Activations& values);

// ---- pictures: image tensors in their true colours ---------------------------------------------

// An image tensor's layout: [N, C, H, W] or [N, H, W, C] (also without N), C in {1, 3, 4},
// H and W at least 8 (the same rule as the image decoder's).
struct ImageShape {
  int64_t channels = 0, height = 0, width = 0;
  bool nchw = true;
};
std::optional<ImageShape> image_shape(std::span<const int64_t> shape);

// How values become bytes: byte = (value · std[c] + mean[c]) / scale (the image preprocessing
// undone), channels swapped back when the model takes BGR. Empty mean/std: 0 and 1.
struct PictureMapping {
  float scale = 1.0f / 255.0f;
  std::vector<float> mean, std;
  bool bgr = false;
  // Instead of scale, mean and std, the range from the values: [0, 255] when they exceed 1.5,
  // [-1, 1] when they go below -0.05, else [0, 1] (an image output).
  bool from_values = false;
};

// sRGB bytes as in the image file, RGBA8 with R in the low byte, row-major from the top row.
struct Picture {
  uint32_t width = 0, height = 0;
  std::vector<uint32_t> rgba;
  ImageShape shape;  // of the tensor
};

// The first image of `value` (batch 0), box-filtered down so that neither side exceeds max_side.
// One channel: grey; four: the alpha is dropped. nullopt when the tensor is not an image
// (image_shape()) or was not computed.
std::optional<Picture> picture_of(const TensorValue& value, const PictureMapping& mapping, uint32_t max_side);

// The first graph output that is an image (fns-candy's stylised picture, super-resolution's
// upscaled Y channel): image_shape() with H and W at least 16; nullopt when there is none.
std::optional<model::TensorId> image_output(const model::Graph& graph, const Activations& values);

// ---- detections --------------------------------------------------------------------------------

struct Detection {
  float x0 = 0, y0 = 0, x1 = 0, y1 = 0;  // corners as fractions of the input's width and height
  float score = 0;
  int64_t label = 0;                     // class index (without the background class)
  std::string name;
  // Landmarks (YuNet: eyes, nose tip, mouth corners) as fractions of the input's width and height.
  std::vector<std::array<float, 2>> points;
};

struct Detections {
  std::string format;       // "scores+boxes" (SSD, UltraFace), "yolox" or "yunet"
  model::TensorId output = model::kNone;  // the scores (or the YOLOX output)
  int64_t candidates = 0;   // anchors or grid cells scored
  int64_t classes = 0;      // object classes (without a background class)
  std::string noun;         // what was found, singular ("face", "object")
  std::vector<Detection> boxes;  // after the score threshold and non-maximum suppression, best first
};

// Recognises a detector's outputs and decodes them:
//  - scores [1, N, C] (C >= 2, class 0 the background; probabilities, else softmaxed) with boxes
//    [1, N, 4] as corner fractions (UltraFace, SSD exports with the prior decoding inside);
//  - YOLOX: one output [1, N, 5 + C] with N the grid cells of strides 8, 16 and 32 over the
//    input (boxes as offsets in cells and log sizes, objectness times class score);
//  - YuNet: per stride 8, 16 and 32 of the input, two score outputs [1, cells, 1] (class and
//    objectness, the score the geometric mean of the two clamped to [0, 1]), boxes [1, cells, 4]
//    (centre as offsets in cells, log sizes in cells) and optionally landmarks [1, cells, 10]
//    (five points as offsets in cells); anchor-free, one candidate per cell, row-major.
// Boxes scoring at least `threshold` (default: 0.7 for scores+boxes, 0.3 for YOLOX, 0.6 for
// YuNet) go through greedy non-maximum suppression per class (IoU 0.3 for scores+boxes and
// YuNet, 0.45 for YOLOX); at most
// max_boxes are kept. `names` names the classes (with or without a background entry);
// without them a two-class detector whose file name says "face" finds faces, else "object".
// "3 faces", "1 person", "no objects": the class name when every box has the same one.
std::string summary(const Detections& detections);

std::optional<Detections> detect(const model::Graph& graph, const Activations& values,
                                 std::span<const std::string> names, std::optional<float> threshold = std::nullopt,
                                 size_t max_boxes = 50);

// ---- outputs no reading recognises ---------------------------------------------------------------

// One row of the outputs table: a graph output, its shape as run and its largest values.
struct OutputRow {
  model::TensorId tensor = model::kNone;
  std::string name;
  std::string shape;                                 // "784x1" (shape_text of the run's shape)
  std::vector<std::pair<int64_t, float>> top;        // flat index and value, largest first
};

// Several outputs that are neither a score vector (predict), a detector format (detect) nor an
// image (image_output): a row per computed output (at most max_rows, in graph order) with its
// top_k largest finite values. Empty for a single output or a recognised one.
std::vector<OutputRow> output_table(const model::Graph& graph, const Activations& values, size_t top_k = 3,
                                    size_t max_rows = 16);

}  // namespace nnxr::scene
