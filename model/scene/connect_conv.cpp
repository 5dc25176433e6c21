// Conv and ConvTranspose: each output element connects to the input elements of its receptive
// field in its group's channels; score |w·a| with w the kernel weight, contribution w·a. The bias
// and the weight tensor are not sources. Geometry (pads, auto_pad, strides, dilations, groups) is
// resolved exactly as the runtime kernels do (model/runtime/spatial.h, kernels_conv.cpp).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <mutex>
#include <string>

#include "model/runtime/spatial.h"
#include "model/scene/connect_ops.h"
#include "model/scene/connect_scan.h"

namespace nnxr::scene::connect {
namespace {

struct Bad {};
struct ThrowCtx {
  [[noreturn]] void fail(const std::string&) const { throw Bad{}; }
};

runtime::SpatialAttrs spatial_attrs(const model::Node& node) {
  runtime::SpatialAttrs a;
  const auto& at = node.attributes;
  a.auto_pad = at.get_string("auto_pad", "NOTSET");
  if (a.auto_pad.empty()) a.auto_pad = "NOTSET";
  a.kernel = at.get_ints("kernel_shape");
  a.strides = at.get_ints("strides");
  a.dilations = at.get_ints("dilations");
  a.pads = at.get_ints("pads");
  a.group = at.get_int("group", 1);
  a.ceil_mode = at.get_int("ceil_mode", 0) != 0;
  return a;
}

// X [N, C, *in], W [M, C/group, *k] (Conv) or [C, M/group, *k] (ConvTranspose), Y [N, M, *out].
struct Geo {
  int64_t N = 0, C = 0, M = 0, group = 1, Cg = 0, Mg = 0;
  Dims in, k, out, stride, dil, pb;
};

bool positive(const Dims& d) {
  return std::all_of(d.begin(), d.end(), [](int64_t v) { return v >= 1; });
}

std::optional<Geo> conv_geo(const NodeValues& v, const TensorValue& x, const TensorValue& w, const Dims& os) {
  if (x.shape.size() < 3 || w.shape.size() != x.shape.size() || os.size() != x.shape.size()) return std::nullopt;
  const runtime::SpatialAttrs at = spatial_attrs(v.node);
  Geo g;
  g.N = x.shape[0];
  g.C = x.shape[1];
  g.M = w.shape[0];
  g.group = at.group;
  if (g.group < 1 || g.C != w.shape[1] * g.group || g.M % g.group != 0) return std::nullopt;
  g.Cg = g.C / g.group;
  g.Mg = g.M / g.group;
  g.in.assign(x.shape.begin() + 2, x.shape.end());
  g.k.assign(w.shape.begin() + 2, w.shape.end());
  Dims pe;
  try {
    at.resolve(ThrowCtx{}, g.in, g.k, g.stride, g.dil, g.pb, pe, g.out);
  } catch (const Bad&) {
    return std::nullopt;
  }
  if (!positive(g.stride) || !positive(g.dil) || !positive(g.k)) return std::nullopt;
  if (os[0] != g.N || os[1] != g.M || !std::equal(g.out.begin(), g.out.end(), os.begin() + 2)) return std::nullopt;
  return g;
}

// Positions per block of an input plane (pointwise convolutions).
constexpr int64_t kBlock = 32;

// What conv_2d knows about its input before scoring, computed once per node (NodeMemo) and shared
// by the node's ranges: per plane (n, c), the sum of |x| over its finite values; for a pointwise
// convolution also the max |x| over each block of kBlock positions, indexed [n][block][c]
// (NaN ignored: it never scores). The max is exact as a bound: |w·x| <= |w|·max|x| holds after
// rounding too.
struct InputSummary {
  const float* plane_sum = nullptr;
  const float* block_max = nullptr;  // null unless pointwise
  int64_t blocks = 0;                // per plane
};

InputSummary summarize(const NodeValues& v, const float* X, int64_t N, int64_t C, int64_t HW, bool pointwise) {
  const int64_t nb = (HW + kBlock - 1) / kBlock, planes = N * C;
  NodeMemo& memo = *v.memo;
  std::call_once(memo.once, [&] {
    memo.data.assign(size_t(planes + (pointwise ? planes * nb : 0)), 0.f);
    for (int64_t n = 0; n < N; ++n)
      for (int64_t c = 0; c < C; ++c) {
        const float* x = X + (n * C + c) * HW;
        double sum = 0;
        for (int64_t b = 0; b < nb; ++b) {
          float m = 0, s = 0;
          for (int64_t j = b * kBlock; j < std::min(HW, (b + 1) * kBlock); ++j) {
            m = std::max(m, std::fabs(x[j]));
            s += std::isfinite(x[j]) ? std::fabs(x[j]) : 0.f;
          }
          sum += s;
          if (pointwise) memo.data[size_t(planes + (n * nb + b) * C + c)] = m;
        }
        memo.data[size_t(n * C + c)] = float(sum);
      }
  });
  return {memo.data.data(), pointwise ? memo.data.data() + planes : nullptr, nb};
}

// 1-D and 2-D: rows of outputs against shifted rows of the input, one kernel tap at a time.
void conv_2d(const NodeValues& v, const Geo& g, const float* X, const float* W, TopK& top) {
  const bool two = g.in.size() == 2;
  const int64_t H = two ? g.in[0] : 1, Wd = g.in.back(), OH = two ? g.out[0] : 1, OW = g.out.back();
  const int64_t kh = two ? g.k[0] : 1, kw = g.k.back(), sh = two ? g.stride[0] : 1, sw = g.stride.back();
  const int64_t dh = two ? g.dil[0] : 1, dw = g.dil.back(), ph = two ? g.pb[0] : 0, pw = g.pb.back();
  const int64_t P = OH * OW, HW = H * Wd, KK = kh * kw;
  const bool pointwise = KK == 1 && sh == 1 && sw == 1 && ph == 0 && pw == 0 && OH == H && OW == Wd;
  std::vector<float> th;
  const InputSummary sum = summarize(v, X, g.N, g.C, HW, pointwise);
  // The output's input channels in order of their expected score, max |w| over the kernel times
  // the plane's sum of |x|: the kept scores then rise early, so later channels insert little
  // (inserting, not scanning, is the cost of an unordered scan). The order changes only the cost
  // and which of exactly tied candidates is kept.
  std::vector<int64_t> order(size_t(g.Cg));
  std::vector<uint64_t> keys(size_t(g.Cg));
  int64_t ordered_m = -1;
  uint64_t counted = 0;
  for (int64_t out = top.begin(); out < top.end();) {
    const int64_t nm = out / P, p0 = out % P, p1 = std::min(P, p0 + (top.end() - out));
    const int64_t n = nm / g.M, m = nm % g.M, grp = m / g.Mg;
    const int64_t base = out - p0;  // output index of spatial position 0
    const float* wm = W + m * g.Cg * KK;
    if (nm != ordered_m) {
      // Strongest first, ties by channel: keys (~bits of the strength, channel) in ascending
      // order (a non-negative float's bits order as the float does).
      const float* xs = sum.plane_sum + n * g.C + grp * g.Cg;
      for (int64_t c = 0; c < g.Cg; ++c) {
        float s = 0;
        for (int64_t t = 0; t < KK; ++t) s = std::max(s, std::fabs(wm[c * KK + t]));
        s *= xs[c];
        uint32_t bits;
        std::memcpy(&bits, &s, sizeof bits);
        keys[size_t(c)] = (uint64_t(~bits) << 32) | uint64_t(c);
      }
      std::sort(keys.begin(), keys.end());
      for (int64_t c = 0; c < g.Cg; ++c) order[size_t(c)] = int64_t(keys[size_t(c)] & 0xFFFFFFFFu);
      ordered_m = nm;
    }
    const int64_t xoff = (n * g.C + grp * g.Cg) * HW;
    const float* xg = X + xoff;
    th.resize(size_t(p1 - p0));
    for (int64_t p = p0; p < p1; ++p) th[size_t(p - p0)] = top.threshold(base + p);
    if (pointwise) {
      // A block of positions at a time, its rows of the top-K staying in L1; per channel, skip
      // the block when |w| · max|x| cannot beat its weakest threshold (about half of
      // mobilenet_v2's candidates). Each output still sees its candidates in `order`.
      for (int64_t b = p0 / kBlock; b * kBlock < p1; ++b) {
        const int64_t q0 = std::max(p0, b * kBlock), q1 = std::min(p1, (b + 1) * kBlock);
        float* tb = th.data() + (q0 - p0);
        auto weakest = [&] {
          float m = std::numeric_limits<float>::infinity();
          for (int64_t q = 0; q < q1 - q0; ++q) m = std::min(m, tb[q]);
          return m;
        };
        float floor = weakest();
        const float* bm = sum.block_max + (n * sum.blocks + b) * g.C + grp * g.Cg;
        for (const int64_t c : order) {
          if (std::fabs(wm[c]) * bm[c] <= floor) continue;
          if (scan_outputs(top, 0, base + q0, tb, xg + c * HW + q0, 1, xoff + c * HW + q0, wm[c], q1 - q0)) floor = weakest();
        }
      }
      counted += uint64_t(g.Cg) * uint64_t(p1 - p0);
      out = base + p1;
      continue;
    }
    const int64_t oh0 = p0 / OW, oh1 = (p1 - 1) / OW;
    for (const int64_t c : order) {
      const float* xc = xg + c * HW;
      const float* wc = wm + c * KK;
      for (int64_t oh = oh0; oh <= oh1; ++oh) {
        const int64_t ow0 = oh == oh0 ? p0 % OW : 0, ow1 = oh == oh1 ? (p1 - 1) % OW + 1 : OW;
        float* t = th.data() + (oh * OW + ow0 - p0);  // t[j] belongs to ow0 + j
        for (int64_t ki = 0; ki < kh; ++ki) {
          const int64_t ih = oh * sh - ph + ki * dh;
          if (ih < 0 || ih >= H) continue;
          for (int64_t kj = 0; kj < kw; ++kj) {
            const int64_t off = kj * dw - pw;  // iw = ow * sw + off
            const int64_t lo = std::max(ow0, off >= 0 ? 0 : (-off + sw - 1) / sw);
            const int64_t hi = std::min(ow1, Wd - off <= 0 ? 0 : (Wd - off + sw - 1) / sw);
            if (lo >= hi) continue;
            if (c == 0) counted += uint64_t(g.Cg) * uint64_t(hi - lo);
            const int64_t first = ih * Wd + lo * sw + off;
            scan_outputs(top, 0, base + oh * OW + lo, t + (lo - ow0), xc + first, sw, xoff + c * HW + first, wc[ki * kw + kj], hi - lo);
          }
        }
      }
    }
    out = base + p1;
  }
  top.count(counted);
}

// Any spatial rank, one output at a time; also 1-D and 2-D when few outputs of the range are
// resident (the others are counted, not scored).
void conv_nd(const Geo& g, const float* X, const float* W, TopK& top) {
  const size_t S = g.in.size();
  const int64_t P = numel(g.out), IS = numel(g.in), KS = numel(g.k);
  const Dims ist = strides_of(g.in), kst = strides_of(g.k);
  std::vector<Dims> valid(S);  // per dim: kernel indices inside the input
  std::vector<int64_t> o(S);
  for (int64_t out = top.begin(); out < top.end(); ++out) {
    const int64_t nm = out / P, n = nm / g.M, m = nm % g.M, grp = m / g.Mg;
    int64_t rem = out % P, combos = 1;
    for (size_t d = S; d-- > 0;) {
      o[d] = rem % g.out[d];
      rem /= g.out[d];
    }
    for (size_t d = 0; d < S; ++d) {
      valid[d].clear();
      for (int64_t j = 0; j < g.k[d]; ++j) {
        const int64_t i = o[d] * g.stride[d] - g.pb[d] + j * g.dil[d];
        if (i >= 0 && i < g.in[d]) valid[d].push_back(j);
      }
      combos *= int64_t(valid[d].size());
    }
    top.count(uint64_t(combos) * uint64_t(g.Cg));
    if (!top.wanted(out)) continue;
    float th = top.threshold(out);
    std::vector<size_t> pos(S, 0);
    for (int64_t q = 0; q < combos; ++q) {
      int64_t koff = 0, xo = 0;
      for (size_t d = 0; d < S; ++d) {
        const int64_t j = valid[d][pos[d]];
        koff += j * kst[d];
        xo += (o[d] * g.stride[d] - g.pb[d] + j * g.dil[d]) * ist[d];
      }
      for (int64_t c = 0; c < g.Cg; ++c) {
        const int64_t src = (n * g.C + grp * g.Cg + c) * IS + xo;
        const float w = W[(m * g.Cg + c) * KS + koff];
        const float s = std::fabs(w * X[src]);
        if (s > th) {
          top.insert(out, 0, src, s, w * X[src]);
          th = top.threshold(out);
        }
      }
      for (size_t d = S; d-- > 0;) {
        if (++pos[d] < valid[d].size()) break;
        pos[d] = 0;
      }
    }
  }
}

void connect_conv(const NodeValues& v, uint32_t output, TopK& top) {
  const auto os = output_shape(v, output, top);
  const TensorValue *x = float_input(v, 0), *w = float_input(v, 1);
  if (output != 0 || !os || !x || !w || input_is_weight(v, 0)) return;
  const auto g = conv_geo(v, *x, *w, *os);
  if (!g) return;
  if (g->in.size() <= 2 && !top.sparse()) conv_2d(v, *g, x->data.data(), w->data.data(), top);
  else conv_nd(*g, x->data.data(), w->data.data(), top);
}

// ConvTranspose: output o along a dim is fed by input i and tap j with o = i·s − pad + j·d.
std::optional<Geo> conv_transpose_geo(const NodeValues& v, const TensorValue& x, const TensorValue& w, const Dims& os) {
  if (x.shape.size() < 3 || w.shape.size() != x.shape.size() || os.size() != x.shape.size()) return std::nullopt;
  const runtime::SpatialAttrs at = spatial_attrs(v.node);
  const auto output_shape_attr = v.node.attributes.get_ints("output_shape");
  const auto output_padding = v.node.attributes.get_ints("output_padding");
  Geo g;
  g.N = x.shape[0];
  g.C = x.shape[1];
  g.group = at.group;
  if (g.group < 1 || w.shape[0] != g.C || g.C % g.group != 0) return std::nullopt;
  g.M = w.shape[1] * g.group;
  g.Cg = g.C / g.group;
  g.Mg = g.M / g.group;
  const size_t S = x.shape.size() - 2;
  g.in.assign(x.shape.begin() + 2, x.shape.end());
  g.k.assign(w.shape.begin() + 2, w.shape.end());
  auto fixed = [&](const Dims& d, int64_t def) { return d.empty() ? Dims(S, def) : d; };
  g.stride = fixed(at.strides, 1);
  g.dil = fixed(at.dilations, 1);
  const Dims opad = fixed(output_padding, 0);
  if (g.stride.size() != S || g.dil.size() != S || opad.size() != S || !positive(g.stride) || !positive(g.dil) || !positive(g.k)) return std::nullopt;
  g.pb.assign(S, 0);
  g.out.assign(S, 0);
  Dims pe(S, 0);
  if (at.auto_pad == "NOTSET" && !at.pads.empty()) {
    if (at.pads.size() != 2 * S) return std::nullopt;
    for (size_t i = 0; i < S; ++i) {
      g.pb[i] = at.pads[i];
      pe[i] = at.pads[i + S];
    }
  }
  for (size_t i = 0; i < S; ++i) {
    const int64_t full = g.stride[i] * (g.in[i] - 1) + opad[i] + (g.k[i] - 1) * g.dil[i] + 1;
    int64_t target = -1;
    if (!output_shape_attr.empty()) {
      if (output_shape_attr.size() != S && output_shape_attr.size() != S + 2) return std::nullopt;
      target = output_shape_attr[output_shape_attr.size() - S + i];
    } else if (at.auto_pad == "SAME_UPPER" || at.auto_pad == "SAME_LOWER") {
      target = g.in[i] * g.stride[i];
    }
    if (target >= 0) {
      const int64_t total = full - target;
      const int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);
      if (at.auto_pad == "SAME_UPPER") {
        g.pb[i] = half;
        pe[i] = total - half;
      } else {
        g.pb[i] = total - half;
        pe[i] = half;
      }
    }
    g.out[i] = full - g.pb[i] - pe[i];
  }
  if (os[0] != g.N || os[1] != g.M || !std::equal(g.out.begin(), g.out.end(), os.begin() + 2)) return std::nullopt;
  return g;
}

void connect_conv_transpose(const NodeValues& v, uint32_t output, TopK& top) {
  const auto os = output_shape(v, output, top);
  const TensorValue *xv = float_input(v, 0), *wv = float_input(v, 1);
  if (output != 0 || !os || !xv || !wv || input_is_weight(v, 0)) return;
  const auto gg = conv_transpose_geo(v, *xv, *wv, *os);
  if (!gg) return;
  const Geo& g = *gg;
  const float* X = xv->data.data();
  const float* W = wv->data.data();
  const size_t S = g.in.size();
  const int64_t P = numel(g.out), IS = numel(g.in), KS = numel(g.k);
  const Dims ist = strides_of(g.in), kst = strides_of(g.k);
  std::vector<std::vector<std::pair<int64_t, int64_t>>> valid(S);  // per dim: (tap, input index)
  Dims o(S);
  for (int64_t out = top.begin(); out < top.end(); ++out) {
    const int64_t nm = out / P, n = nm / g.M, m = nm % g.M, grp = m / g.Mg, mm = m % g.Mg;
    int64_t rem = out % P, combos = 1;
    for (size_t d = S; d-- > 0;) {
      o[d] = rem % g.out[d];
      rem /= g.out[d];
    }
    for (size_t d = 0; d < S; ++d) {
      valid[d].clear();
      for (int64_t j = 0; j < g.k[d]; ++j) {
        const int64_t t = o[d] + g.pb[d] - j * g.dil[d];
        if (t < 0 || t % g.stride[d] != 0) continue;
        const int64_t i = t / g.stride[d];
        if (i < g.in[d]) valid[d].push_back({j, i});
      }
      combos *= int64_t(valid[d].size());
    }
    top.count(uint64_t(combos) * uint64_t(g.Cg));
    if (!top.wanted(out)) continue;
    float th = top.threshold(out);
    std::vector<size_t> pos(S, 0);
    for (int64_t q = 0; q < combos; ++q) {
      int64_t koff = 0, xo = 0;
      for (size_t d = 0; d < S; ++d) {
        koff += valid[d][pos[d]].first * kst[d];
        xo += valid[d][pos[d]].second * ist[d];
      }
      for (int64_t c = grp * g.Cg; c < (grp + 1) * g.Cg; ++c) {
        const int64_t src = (n * g.C + c) * IS + xo;
        const float w = W[(c * g.Mg + mm) * KS + koff];
        const float s = std::fabs(w * X[src]);
        if (s > th) {
          top.insert(out, 0, src, s, w * X[src]);
          th = top.threshold(out);
        }
      }
      for (size_t d = S; d-- > 0;) {
        if (++pos[d] < valid[d].size()) break;
        pos[d] = 0;
      }
    }
  }
}

constexpr Entry kEntries[] = {{"Conv", connect_conv}, {"ConvTranspose", connect_conv_transpose}};

}  // namespace

std::span<const Entry> conv_connectors() { return kEntries; }

}  // namespace nnxr::scene::connect
