// Internal to the connectors (connect_*.cpp): shape helpers, the weight test, and each op
// family's table of connectors. Nothing here is thread-hostile: every function is pure or works
// on the caller's TopK.
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "model/scene/connect.h"

namespace nnxr::scene::connect {

using Dims = std::vector<int64_t>;

struct Entry {
  std::string_view op_type;
  ConnectFn fn;
};

// Each family lists its ops ("" domain).
std::span<const Entry> conv_connectors();         // Conv, ConvTranspose
std::span<const Entry> matmul_connectors();       // Gemm, MatMul
std::span<const Entry> pool_connectors();         // *Pool
std::span<const Entry> elementwise_connectors();  // unary, activations, broadcasting n-ary ops
std::span<const Entry> shape_connectors();        // index mappings: Reshape ... DepthToSpace
std::span<const Entry> index_connectors();        // Gather*, Scatter*, TopK
std::span<const Entry> reduce_connectors();       // Reduce*, Arg*, Softmax family, normalisations, CumSum
std::span<const Entry> resize_connectors();       // Resize, Upsample
std::span<const Entry> misc_connectors();         // LSTM, GRU, RNN

int64_t numel(std::span<const int64_t> dims);
Dims strides_of(std::span<const int64_t> dims);

// The output slot's shape when `top`'s range lies inside it, else nullopt (connectors then offer
// nothing).
std::optional<Dims> output_shape(const NodeValues& v, uint32_t output, const TopK& top);

// Float32 data of input i, or nullptr when omitted, not float32 or not computed.
const TensorValue* float_input(const NodeValues& v, size_t i);

// True for a tensor that is a weight rather than an activation: an initializer, a Constant
// output, or computed only from such tensors (a few nodes deep). Weights are never sources.
bool is_weight(const model::Graph& graph, model::TensorId id);
bool input_is_weight(const NodeValues& v, size_t i);

// Integer contents of input i: constant in the graph (int64 or int32), else from
// NodeValues::int_inputs, else nullopt.
std::optional<std::vector<int64_t>> input_ints(const NodeValues& v, size_t i);

// Same element count, same order (Identity, Reshape, unary math, ...): score |a|.
void connect_one_to_one(const NodeValues& v, uint32_t output, TopK& top);

// Strides of `in` broadcast (numpy rules) to `out` (0 on broadcast dims), or nullopt when `in`
// does not broadcast to `out`.
std::optional<Dims> broadcast_strides(std::span<const int64_t> in, std::span<const int64_t> out);

// Multi-index odometer over a row-major shape that tracks one or more linear offsets.
// for_each_mapped(shape, strides, base, b, e, f) calls f(out, src) for out in [b, e) with
// src = base + sum(index_d * strides_d).
template <class F>
void for_each_mapped(std::span<const int64_t> shape, std::span<const int64_t> strides, int64_t base, int64_t b, int64_t e, F&& f) {
  const size_t r = shape.size();
  if (b >= e) return;
  if (r == 0) {
    f(b, base);
    return;
  }
  Dims idx(r);
  int64_t rem = b, src = base;
  for (size_t d = r; d-- > 0;) {
    idx[d] = rem % shape[d];
    rem /= shape[d];
    src += idx[d] * strides[d];
  }
  const int64_t last = shape[r - 1], lst = strides[r - 1];
  int64_t out = b;
  while (out < e) {
    const int64_t run = std::min<int64_t>(last - idx[r - 1], e - out);
    for (int64_t j = 0; j < run; ++j) f(out + j, src + j * lst);
    out += run;
    src += run * lst;
    idx[r - 1] += run;
    for (size_t d = r - 1; d > 0 && idx[d] == shape[d]; --d) {
      src -= idx[d] * strides[d];
      idx[d] = 0;
      ++idx[d - 1];
      src += strides[d - 1];
    }
  }
}

// Offers the single candidate (input, src) with weight w: score |w·a|, contribution w·a.
inline void offer_one(TopK& top, int64_t out, uint32_t input, int64_t src, float w, float a) {
  const float c = w * a;
  top.offer(out, input, src, std::fabs(c), c);
}

// The k strongest of a candidate set by |a|: kept to hand the same set to several outputs.
struct Best {
  struct Item {
    int64_t src;
    float a;
  };
  explicit Best(int k) : k_(k) { items_.reserve(size_t(k)); }
  float threshold() const { return int(items_.size()) == k_ ? std::fabs(items_.back().a) : -1.f; }
  void add(int64_t src, float a) {
    const float s = std::fabs(a);
    if (!(s > threshold())) return;
    if (int(items_.size()) == k_) items_.pop_back();
    size_t i = items_.size();
    items_.push_back({src, a});
    while (i > 0 && std::fabs(items_[i - 1].a) < s) {
      items_[i] = items_[i - 1];
      --i;
    }
    items_[i] = {src, a};
  }
  // add() for X[b0 + off] over `offsets`, the threshold kept in a register between the few adds
  // that pass it; contiguous offsets (0, 1, 2, ...) read X directly.
  void add_all(const float* X, int64_t b0, std::span<const int64_t> offsets, bool contiguous) {
    float th = threshold();
    const int64_t n = int64_t(offsets.size());
    if (contiguous) {
      const float* x = X + b0;
      for (int64_t j = 0; j < n; ++j)
        if (std::fabs(x[j]) > th) [[unlikely]] {
          add(b0 + j, x[j]);
          th = threshold();
        }
      return;
    }
    for (int64_t j = 0; j < n; ++j) {
      const int64_t src = b0 + offsets[size_t(j)];
      if (std::fabs(X[src]) > th) [[unlikely]] {
        add(src, X[src]);
        th = threshold();
      }
    }
  }
  void clear() { items_.clear(); }
  const std::vector<Item>& items() const { return items_; }
  // Offers the set to `out` with weight w; `n` candidates are counted.
  void give(TopK& top, int64_t out, uint32_t input, float w, uint64_t n) const {
    for (const Item& it : items_) {
      const float c = w * it.a;
      const float s = std::fabs(c);
      if (s > top.threshold(out)) top.insert(out, input, it.src, s, c);
    }
    top.count(n);
  }

 private:
  int k_;
  std::vector<Item> items_;
};

}  // namespace nnxr::scene::connect
