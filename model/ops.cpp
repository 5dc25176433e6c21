#include "model/ops.h"

#include <algorithm>
#include <map>

namespace nnxr::model {

// The kernels the CPU runtime (model/runtime) provides, by op name in the ai.onnx domain. This
// list lives here so that nnxr_model answers without linking the runtime; the runtime's test
// (tests/runtime/test_session.cpp, RegistryMatchesOpsList) checks it equals the kernel registry.
static constexpr std::string_view kSupported[] = {
    "Abs", "Acos", "Acosh", "Add", "Affine", "And", "ArgMax", "ArgMin", "Asin", "Asinh", "Atan",
    "Atanh", "AveragePool", "BatchNormalization", "Bernoulli", "BitShift", "BlackmanWindow", "Cast",
    "CastLike", "Ceil", "Celu", "Clip", "Compress", "Concat", "Constant", "ConstantOfShape", "Conv",
    "ConvInteger", "ConvTranspose", "Cos", "Cosh", "Crop", "CumSum", "DFT", "DepthToSpace",
    "DequantizeLinear", "Det", "Div", "Dropout", "DynamicQuantizeLinear", "Einsum", "Elu", "Equal",
    "Erf", "Exp", "Expand", "EyeLike", "Flatten", "Floor", "GRU", "Gather", "GatherElements",
    "GatherND", "Gelu", "Gemm", "GlobalAveragePool", "GlobalLpPool", "GlobalMaxPool", "Greater",
    "GreaterOrEqual", "GridSample", "HammingWindow", "HannWindow", "HardSigmoid", "HardSwish",
    "Hardmax", "Identity", "If", "ImageScaler", "InstanceNormalization", "IsInf", "IsNaN", "LRN",
    "LSTM", "LayerNormalization", "LeakyRelu", "Less", "LessOrEqual", "Log", "LogSoftmax", "Loop",
    "LpNormalization", "LpPool", "MatMul", "MatMulInteger", "Max", "MaxPool", "MaxRoiPool",
    "MaxUnpool", "Mean", "MeanVarianceNormalization", "MelWeightMatrix", "Min", "Mish", "Mod",
    "Mul", "Neg", "NegativeLogLikelihoodLoss", "NonMaxSuppression", "NonZero", "Not", "OneHot",
    "Or", "PRelu", "Pad", "Pow", "QLinearConv", "QLinearMatMul", "QuantizeLinear", "RNN",
    "RandomNormal", "RandomNormalLike", "RandomUniform", "RandomUniformLike", "Range", "Reciprocal",
    "ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceMax", "ReduceMean",
    "ReduceMin", "ReduceProd", "ReduceSum", "ReduceSumSquare", "Relu", "Reshape", "Resize",
    "ReverseSequence", "RoiAlign", "Round", "STFT", "Scan", "Scatter", "ScatterElements",
    "ScatterND", "Selu", "Shape", "Shrink", "Sigmoid", "Sign", "Sin", "Sinh", "Size", "Slice",
    "Softmax", "SoftmaxCrossEntropyLoss", "Softplus", "Softsign", "SpaceToDepth", "Split", "Sqrt",
    "Squeeze", "Sub", "Sum", "Tan", "Tanh", "TfIdfVectorizer", "ThresholdedRelu", "Tile", "TopK",
    "Transpose", "Trilu", "Unique", "Unsqueeze", "Upsample", "Where", "Xor"
};

bool runtime_supports(std::string_view domain, std::string_view op_type) {
  if (!domain.empty() || op_type.empty()) return false;
  return std::find(std::begin(kSupported), std::end(kSupported), op_type) != std::end(kSupported);
}

std::vector<UnsupportedOp> unsupported_ops(const Graph& graph) {
  std::map<std::pair<std::string, std::string>, int> counts;
  for (const Node& n : graph.nodes)
    if (!runtime_supports(n.domain, n.op_type)) ++counts[{n.domain, n.op_type}];
  std::vector<UnsupportedOp> out;
  for (const auto& [key, count] : counts) out.push_back({key.first, key.second, count});
  return out;
}

}  // namespace nnxr::model
