// Pooling: each output connects to the input elements of its window (padding excluded), with
// the geometry of the runtime kernel (model/runtime/spatial.h, kernels_pool.cpp).
//   MaxPool, LpPool, GlobalMaxPool, GlobalLpPool: score |a|, contribution a.
//   AveragePool, GlobalAveragePool: contribution a / count (the divisor the kernel uses, padding
//   included with count_include_pad), score its magnitude.
// MaxPool's Indices output has no connections.
#include <algorithm>
#include <string>

#include "model/runtime/spatial.h"
#include "model/scene/connect_ops.h"

namespace nnxr::scene::connect {
namespace {

struct Bad {};
struct ThrowCtx {
  [[noreturn]] void fail(const std::string&) const { throw Bad{}; }
};

enum class Kind { Max, Avg, Lp };

template <Kind kind>
void connect_pool(const NodeValues& v, uint32_t output, TopK& top) {
  const auto os = output_shape(v, output, top);
  const TensorValue* xv = float_input(v, 0);
  if (output != 0 || !os || !xv) return;
  const auto& at = v.node.attributes;
  runtime::SpatialAttrs sa;
  sa.auto_pad = at.get_string("auto_pad", "NOTSET");
  if (sa.auto_pad.empty()) sa.auto_pad = "NOTSET";
  sa.kernel = at.get_ints("kernel_shape");
  sa.strides = at.get_ints("strides");
  sa.dilations = at.get_ints("dilations");
  sa.pads = at.get_ints("pads");
  sa.ceil_mode = at.get_int("ceil_mode", 0) != 0;
  const bool include_pad = at.get_int("count_include_pad", 0) != 0;
  const size_t S = sa.kernel.size();
  if (S == 0 || xv->shape.size() != S + 2 || os->size() != S + 2) return;
  const Dims in(xv->shape.begin() + 2, xv->shape.end());
  Dims stride, dil, pb, pe, out;
  try {
    sa.resolve(ThrowCtx{}, in, sa.kernel, stride, dil, pb, pe, out);
  } catch (const Bad&) {
    return;
  }
  for (size_t d = 0; d < S; ++d)
    if (stride[d] < 1 || dil[d] < 1 || sa.kernel[d] < 1) return;
  if ((*os)[0] != xv->shape[0] || (*os)[1] != xv->shape[1] || !std::equal(out.begin(), out.end(), os->begin() + 2)) return;
  const int64_t P = numel(out), IS = numel(in);
  const Dims ist = strides_of(in);
  const float* X = xv->data.data();
  std::vector<Dims> pos(S);  // per dim: input indices inside the window
  Dims o(S);
  std::vector<size_t> it(S);
  for (int64_t y = top.begin(); y < top.end(); ++y) {
    const int64_t plane = y / P;
    int64_t rem = y % P, combos = 1, padded = 1;
    for (size_t d = S; d-- > 0;) {
      o[d] = rem % out[d];
      rem /= out[d];
    }
    for (size_t d = 0; d < S; ++d) {
      pos[d].clear();
      const int64_t start = o[d] * stride[d] - pb[d];
      int64_t cnt = 0;
      for (int64_t j = 0; j < sa.kernel[d]; ++j) {
        const int64_t i = start + j * dil[d];
        if (i >= in[d] + pe[d]) break;
        ++cnt;
        if (i >= 0 && i < in[d]) pos[d].push_back(i);
      }
      combos *= int64_t(pos[d].size());
      padded *= cnt;
    }
    if (!top.wanted(y)) {
      top.count(uint64_t(combos));
      continue;
    }
    const float div = float(include_pad ? padded : combos);
    std::fill(it.begin(), it.end(), 0);
    for (int64_t q = 0; q < combos; ++q) {
      int64_t off = plane * IS;
      for (size_t d = 0; d < S; ++d) off += pos[d][it[d]] * ist[d];
      const float a = X[off];
      const float c = kind == Kind::Avg ? a / div : a;
      top.offer(y, 0, off, std::fabs(c), c);
      for (size_t d = S; d-- > 0;) {
        if (++it[d] < pos[d].size()) break;
        it[d] = 0;
      }
    }
  }
}

// Global pools: one output per (n, c) plane, all of the plane's elements.
template <Kind kind>
void connect_global_pool(const NodeValues& v, uint32_t output, TopK& top) {
  const auto os = output_shape(v, output, top);
  const TensorValue* xv = float_input(v, 0);
  if (output != 0 || !os || !xv || xv->shape.size() < 2 || os->size() < 2) return;
  const int64_t planes = xv->shape[0] * xv->shape[1];
  if (numel(*os) != planes) return;
  const int64_t IS = numel(std::span<const int64_t>(xv->shape).subspan(2));
  const float* X = xv->data.data();
  const float div = float(IS);
  for (int64_t y = top.begin(); y < top.end(); ++y) {
    top.count(uint64_t(IS));
    if (!top.wanted(y)) continue;
    const float* xp = X + y * IS;
    float th = top.threshold(y);
    for (int64_t i = 0; i < IS; ++i) {
      const float c = kind == Kind::Avg ? xp[i] / div : xp[i];
      const float s = std::fabs(c);
      if (s > th) {
        top.insert(y, 0, y * IS + i, s, c);
        th = top.threshold(y);
      }
    }
  }
}

constexpr Entry kEntries[] = {
    {"MaxPool", connect_pool<Kind::Max>},
    {"AveragePool", connect_pool<Kind::Avg>},
    {"LpPool", connect_pool<Kind::Lp>},
    {"GlobalMaxPool", connect_global_pool<Kind::Max>},
    {"GlobalAveragePool", connect_global_pool<Kind::Avg>},
    {"GlobalLpPool", connect_global_pool<Kind::Lp>},
};

}  // namespace

std::span<const Entry> pool_connectors() { return kEntries; }

}  // namespace nnxr::scene::connect
