// Element-wise ops: each output element connects to the element of each float, non-weight input
// it was computed from (multidirectional broadcasting).
//   Unary math and activations, Cast: score |a|, contribution a.
//   Affine, ImageScaler: the scale attribute is the weight. BatchNormalization: the effective
//   per-channel factor scale / sqrt(var + epsilon) is the weight. PRelu: the slope is the weight
//   where a < 0.
//   Add, Sum, Max, Min, Mod, Pow: contribution a. Sub: a, and −b for the subtrahend. Mean: a / n.
//   Mul: contribution a·b for each source (the other operand is its weight). Div: a / b for each.
//   Where: the branch whose element the output holds (found by value; both when the output data
//   is unavailable). The bool condition is never a source.
#include <algorithm>
#include <cstring>

#include "model/scene/connect_ops.h"

namespace nnxr::scene::connect {
namespace {

}  // namespace

void connect_one_to_one(const NodeValues& v, uint32_t output, TopK& top) {
  const auto os = output_shape(v, output, top);
  const TensorValue* x = float_input(v, 0);
  if (output != 0 || !os || !x || input_is_weight(v, 0) || int64_t(x->data.size()) != numel(*os)) return;
  const float* X = x->data.data();
  for (int64_t y = top.begin(); y < top.end(); ++y) top.offer(y, 0, y, std::fabs(X[y]), X[y]);
}

namespace {

void scaled_one_to_one(const NodeValues& v, uint32_t output, TopK& top, float w) {
  const auto os = output_shape(v, output, top);
  const TensorValue* x = float_input(v, 0);
  if (output != 0 || !os || !x || input_is_weight(v, 0) || int64_t(x->data.size()) != numel(*os)) return;
  const float* X = x->data.data();
  for (int64_t y = top.begin(); y < top.end(); ++y) offer_one(top, y, 0, y, w, X[y]);
}

void connect_affine(const NodeValues& v, uint32_t output, TopK& top) {
  scaled_one_to_one(v, output, top, v.node.attributes.get_float("alpha", 1.f));
}
void connect_image_scaler(const NodeValues& v, uint32_t output, TopK& top) {
  scaled_one_to_one(v, output, top, v.node.attributes.get_float("scale", 1.f));
}

void connect_batch_norm(const NodeValues& v, uint32_t output, TopK& top) {
  const auto os = output_shape(v, output, top);
  const TensorValue *x = float_input(v, 0), *sc = float_input(v, 1), *var = float_input(v, 4);
  if (output != 0 || !os || !x || !sc || !var || input_is_weight(v, 0) || x->shape.size() < 2) return;
  const int64_t C = x->shape[1], S = numel(std::span<const int64_t>(x->shape).subspan(2));
  if (int64_t(sc->data.size()) != C || int64_t(var->data.size()) != C || numel(*os) != int64_t(x->data.size())) return;
  const float eps = v.node.attributes.get_float("epsilon", 1e-5f);
  const float* X = x->data.data();
  for (int64_t y = top.begin(); y < top.end(); ++y) {
    const int64_t c = S ? (y / S) % C : 0;
    offer_one(top, y, 0, y, sc->data[size_t(c)] / std::sqrt(var->data[size_t(c)] + eps), X[y]);
  }
}

// Calls f(out, offsets) for out in [b, e), offsets[i] = sum(index_d * strides[i][d]).
template <class F>
void for_each_broadcast(const Dims& shape, const std::vector<Dims>& strides, int64_t b, int64_t e, F&& f) {
  const size_t r = shape.size(), n = strides.size();
  Dims idx(r), off(n, 0);
  int64_t rem = b;
  for (size_t d = r; d-- > 0;) {
    idx[d] = rem % shape[d];
    rem /= shape[d];
    for (size_t i = 0; i < n; ++i) off[i] += idx[d] * strides[i][d];
  }
  for (int64_t out = b; out < e; ++out) {
    f(out, off.data());
    for (size_t d = r; d-- > 0;) {
      ++idx[d];
      for (size_t i = 0; i < n; ++i) off[i] += strides[i][d];
      if (idx[d] < shape[d]) break;
      for (size_t i = 0; i < n; ++i) off[i] -= idx[d] * strides[i][d];
      idx[d] = 0;
    }
  }
}

enum class Nary { Plain, Sub, Mean, Mul, Div, Where };

template <Nary op>
void connect_nary(const NodeValues& v, uint32_t output, TopK& top) {
  const auto os = output_shape(v, output, top);
  if (output != 0 || !os || top.begin() == top.end()) return;
  const size_t first = op == Nary::Where ? 1 : 0;  // Where's condition is bool
  const size_t n = v.inputs.size();
  if (n <= first) return;
  std::vector<const float*> data(n, nullptr);
  std::vector<Dims> strides(n, Dims(os->size(), 0));
  std::vector<bool> source(n, false);
  bool any = false;
  for (size_t i = first; i < n; ++i) {
    const TensorValue* t = float_input(v, i);
    if (!t) {
      if (op == Nary::Mul || op == Nary::Div) return;  // the other operand's value is needed
      continue;
    }
    const auto st = connect::broadcast_strides(t->shape, *os);
    if (!st) return;
    data[i] = t->data.data();
    strides[i] = *st;
    source[i] = !input_is_weight(v, i);
    any = any || source[i];
  }
  if (!any) return;
  if constexpr (op == Nary::Mul || op == Nary::Div)
    if (n != 2) return;
  const float inv_n = 1.f / float(n);
  const TensorValue& yv = v.outputs[output];
  const float* Y = yv.data.empty() ? nullptr : yv.data.data();
  auto same = [](float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0 || a == b; };
  for_each_broadcast(*os, strides, top.begin(), top.end(), [&](int64_t y, const int64_t* off) {
    if constexpr (op == Nary::Where) {
      const bool x_ok = data[1] && (!Y || same(Y[y], data[1][off[1]]));
      const bool y_ok = n > 2 && data[2] && (!Y || same(Y[y], data[2][off[2]]));
      if (x_ok && source[1]) top.offer(y, 1, off[1], std::fabs(data[1][off[1]]), data[1][off[1]]);
      if (y_ok && source[2] && !(Y && x_ok)) top.offer(y, 2, off[2], std::fabs(data[2][off[2]]), data[2][off[2]]);
      return;
    }
    for (size_t i = first; i < n; ++i) {
      if (!source[i]) continue;
      const float a = data[i][off[i]];
      float c = a;
      if constexpr (op == Nary::Sub) c = i == 1 ? -a : a;
      if constexpr (op == Nary::Mean) c = a * inv_n;
      if constexpr (op == Nary::Mul) c = data[1 - i][off[1 - i]] * a;
      if constexpr (op == Nary::Div) c = data[0][off[0]] / data[1][off[1]];
      top.offer(y, uint32_t(i), off[i], std::fabs(c), c);
    }
  });
}

void connect_prelu(const NodeValues& v, uint32_t output, TopK& top) {
  const auto os = output_shape(v, output, top);
  const TensorValue *x = float_input(v, 0), *slope = float_input(v, 1);
  if (output != 0 || !os || !x || !slope || input_is_weight(v, 0) || int64_t(x->data.size()) != numel(*os)) return;
  const Dims xs(x->shape.begin(), x->shape.end());
  Dims ss(slope->shape.begin(), slope->shape.end());
  if (ss.size() == 1 && xs.size() >= 2 && ss[0] == xs[1] && ss[0] != xs.back()) ss.insert(ss.end(), xs.size() - 2, 1);
  const auto st = connect::broadcast_strides(ss, xs);
  if (!st || xs != *os) return;
  const std::vector<Dims> strides{strides_of(xs), *st};
  const float* X = x->data.data();
  const float* W = slope->data.data();
  for_each_broadcast(xs, strides, top.begin(), top.end(), [&](int64_t y, const int64_t* off) {
    const float a = X[off[0]];
    offer_one(top, y, 0, off[0], a < 0 ? W[off[1]] : 1.f, a);
  });
}

constexpr Entry kEntries[] = {
    // Unary math.
    {"Abs", connect_one_to_one}, {"Neg", connect_one_to_one}, {"Sign", connect_one_to_one}, {"Exp", connect_one_to_one},
    {"Log", connect_one_to_one}, {"Sqrt", connect_one_to_one}, {"Reciprocal", connect_one_to_one}, {"Floor", connect_one_to_one},
    {"Ceil", connect_one_to_one}, {"Round", connect_one_to_one}, {"Erf", connect_one_to_one}, {"Sin", connect_one_to_one},
    {"Cos", connect_one_to_one}, {"Tan", connect_one_to_one}, {"Asin", connect_one_to_one}, {"Acos", connect_one_to_one},
    {"Atan", connect_one_to_one}, {"Sinh", connect_one_to_one}, {"Cosh", connect_one_to_one}, {"Asinh", connect_one_to_one},
    {"Acosh", connect_one_to_one}, {"Atanh", connect_one_to_one},
    // Activations.
    {"Relu", connect_one_to_one}, {"Sigmoid", connect_one_to_one}, {"Tanh", connect_one_to_one}, {"LeakyRelu", connect_one_to_one},
    {"Elu", connect_one_to_one}, {"Selu", connect_one_to_one}, {"Celu", connect_one_to_one}, {"HardSigmoid", connect_one_to_one},
    {"HardSwish", connect_one_to_one}, {"Softplus", connect_one_to_one}, {"Softsign", connect_one_to_one},
    {"ThresholdedRelu", connect_one_to_one}, {"Mish", connect_one_to_one}, {"Shrink", connect_one_to_one}, {"Gelu", connect_one_to_one},
    {"Clip", connect_one_to_one}, {"PRelu", connect_prelu},
    // Type changes (a float32 source only when the input is float32).
    {"Cast", connect_one_to_one}, {"CastLike", connect_one_to_one},
    // Scaled.
    {"Affine", connect_affine}, {"ImageScaler", connect_image_scaler}, {"BatchNormalization", connect_batch_norm},
    // Broadcasting n-ary.
    {"Add", connect_nary<Nary::Plain>}, {"Sum", connect_nary<Nary::Plain>}, {"Max", connect_nary<Nary::Plain>},
    {"Min", connect_nary<Nary::Plain>}, {"Mod", connect_nary<Nary::Plain>}, {"Pow", connect_nary<Nary::Plain>},
    {"Sub", connect_nary<Nary::Sub>}, {"Mean", connect_nary<Nary::Mean>}, {"Mul", connect_nary<Nary::Mul>},
    {"Div", connect_nary<Nary::Div>}, {"Where", connect_nary<Nary::Where>},
};

}  // namespace

std::span<const Entry> elementwise_connectors() { return kEntries; }

}  // namespace nnxr::scene::connect
