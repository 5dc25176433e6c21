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
  std::array<float, 3> anchor{};  // above the middle of its blocks
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
// The class count predict() would see (0: no score vector output).
int64_t class_count(const model::Graph& graph, const Activations& values);

}  // namespace nnxr::scene
