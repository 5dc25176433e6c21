// The connector registry, the list of ops without element relation, and the helpers shared by
// the connector families.
//
// Semantics common to all connectors (per-op details are in each connect_*.cpp):
//   - A source is an element of a float32 input that is not a weight (is_weight()).
//   - Where the op multiplies the source by a weight (Conv/Gemm/MatMul weights, the constant side
//     of Mul, PRelu slope, the normalisations' scale) or by a fixed coefficient of its own (1/n of
//     the averages, interpolation weights), contribution = w·a and score = |w·a|; otherwise
//     contribution = a and score = |a|.
//   - Ops whose output mixes many inputs without a weight (reductions, softmax, normalisations)
//     connect each output to every element it was computed from.
#include <algorithm>
#include <array>
#include <unordered_map>

#include "model/scene/connect_ops.h"

namespace nnxr::scene {

namespace {

// Ops with a kernel but no connector.
constexpr std::string_view kWithoutConnector[] = {
    // No output element stems from particular input elements: the output is computed from
    // shapes, attributes or scalars.
    "Constant", "ConstantOfShape", "EyeLike", "Range", "Shape", "Size",
    "BlackmanWindow", "HammingWindow", "HannWindow", "MelWeightMatrix", "RandomNormal", "RandomUniform",
    // Random values shaped like the input, not computed from its elements' values.
    "RandomNormalLike", "RandomUniformLike", "Bernoulli",
    // Index outputs (int64): they tell where, not what.
    "NonZero", "NonMaxSuppression",
    // Quantized arithmetic: integer inputs (no float32 sources) or integer outputs.
    "ConvInteger", "DequantizeLinear", "DynamicQuantizeLinear", "MatMulInteger", "QLinearConv", "QLinearMatMul", "QuantizeLinear",
    // Counts of integer token n-grams.
    "TfIdfVectorizer",
    // Control flow: the outputs come from a body graph run by the node; the body's elements are
    // not part of the scene.
    "If", "Loop", "Scan",
    // Element relations not mapped yet (each output element does stem from known input elements).
    "Compress", "DFT", "Det", "Einsum", "GridSample", "MaxRoiPool", "MaxUnpool", "ReverseSequence", "RoiAlign", "STFT", "Unique",
    // OneHot picks one of the two entries of `values` (a constant in practice) by index.
    "OneHot",
    // Training losses: a scalar (or one value per sample) that reads one class score per
    // element; the network shown is the one before them.
    "NegativeLogLikelihoodLoss", "SoftmaxCrossEntropyLoss",
    // Outputs are never float32: bool comparisons and logic, unsigned shifts.
    "And", "BitShift", "Equal", "Greater", "GreaterOrEqual", "IsInf", "IsNaN", "Less", "LessOrEqual", "Not", "Or", "Xor",
};

using Table = std::unordered_map<std::string_view, ConnectFn>;

const Table& table() {
  static const Table t = [] {
    Table m;
    for (auto list : {connect::conv_connectors(), connect::matmul_connectors(), connect::pool_connectors(), connect::elementwise_connectors(),
                      connect::shape_connectors(), connect::index_connectors(), connect::reduce_connectors(), connect::resize_connectors(),
                      connect::misc_connectors()})
      for (const connect::Entry& e : list) m.emplace(e.op_type, e.fn);
    return m;
  }();
  return t;
}

}  // namespace

ConnectFn find_connector(std::string_view domain, std::string_view op_type) {
  if (!domain.empty() && domain != "ai.onnx") return nullptr;
  const Table& t = table();
  const auto it = t.find(op_type);
  return it == t.end() ? nullptr : it->second;
}

std::span<const std::string_view> ops_without_connector() { return kWithoutConnector; }

namespace connect {

int64_t numel(std::span<const int64_t> dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

Dims strides_of(std::span<const int64_t> dims) {
  Dims s(dims.size());
  int64_t acc = 1;
  for (size_t d = dims.size(); d-- > 0;) {
    s[d] = acc;
    acc *= dims[d];
  }
  return s;
}

std::optional<Dims> output_shape(const NodeValues& v, uint32_t output, const TopK& top) {
  if (output >= v.outputs.size()) return std::nullopt;
  const TensorValue& o = v.outputs[output];
  for (int64_t d : o.shape)
    if (d < 0) return std::nullopt;
  Dims s(o.shape.begin(), o.shape.end());
  if (top.begin() < 0 || top.end() > numel(s) || top.begin() > top.end()) return std::nullopt;
  if (!o.data.empty() && int64_t(o.data.size()) != numel(s)) return std::nullopt;
  return s;
}

const TensorValue* float_input(const NodeValues& v, size_t i) {
  if (i >= v.inputs.size()) return nullptr;
  const TensorValue& t = v.inputs[i];
  if (t.data.empty()) return nullptr;
  for (int64_t d : t.shape)
    if (d < 0) return nullptr;
  if (int64_t(t.data.size()) != numel(t.shape)) return nullptr;
  return &t;
}

namespace {
bool weight_rec(const model::Graph& g, model::TensorId id, int depth) {
  if (id == model::kNone || id >= g.tensors.size()) return false;
  const model::Tensor& t = g.tensors[id];
  if (t.kind == model::TensorKind::Initializer || t.kind == model::TensorKind::Constant) return true;
  if (t.kind != model::TensorKind::Activation || t.producer == model::kNone || t.producer >= g.nodes.size() || depth == 0) return false;
  const model::Node& n = g.nodes[t.producer];
  bool any = false;
  for (model::TensorId in : n.inputs) {
    if (in == model::kNone) continue;
    if (!weight_rec(g, in, depth - 1)) return false;
    any = true;
  }
  return any;
}
}  // namespace

bool is_weight(const model::Graph& graph, model::TensorId id) { return weight_rec(graph, id, 4); }

bool input_is_weight(const NodeValues& v, size_t i) {
  return i < v.node.inputs.size() && is_weight(v.graph, v.node.inputs[i]);
}

std::optional<std::vector<int64_t>> input_ints(const NodeValues& v, size_t i) {
  if (i >= v.node.inputs.size()) return std::nullopt;
  const model::TensorId id = v.node.inputs[i];
  if (id == model::kNone || id >= v.graph.tensors.size()) return std::nullopt;
  const auto& data = v.graph.tensors[id].data;
  if (!data) {
    if (i < v.int_inputs.size() && (!v.int_inputs[i].empty() || v.graph.tensors[id].dtype == model::DType::Int64))
      return std::vector<int64_t>(v.int_inputs[i].begin(), v.int_inputs[i].end());
    return std::nullopt;
  }
  if (data->dtype == model::DType::Int64) {
    const auto s = data->as<int64_t>();
    return std::vector<int64_t>(s.begin(), s.end());
  }
  if (data->dtype == model::DType::Int32) {
    const auto s = data->as<int32_t>();
    return std::vector<int64_t>(s.begin(), s.end());
  }
  return std::nullopt;
}

std::optional<Dims> broadcast_strides(std::span<const int64_t> in, std::span<const int64_t> out) {
  if (in.size() > out.size()) return std::nullopt;
  const Dims st = strides_of(in);
  Dims r(out.size(), 0);
  const size_t off = out.size() - in.size();
  for (size_t d = 0; d < in.size(); ++d) {
    if (in[d] == out[off + d]) r[off + d] = in[d] == 1 ? 0 : st[d];
    else if (in[d] != 1) return std::nullopt;
  }
  return r;
}

}  // namespace connect
}  // namespace nnxr::scene
