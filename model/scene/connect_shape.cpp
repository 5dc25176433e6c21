// Data movement: each output element connects to the one input element it is a copy of
// (score |a|, contribution a); elements a constant Pad or Trilu writes have no source. The index
// mappings follow the runtime kernels (kernels_shape.cpp, kernels_index.cpp).
#include <algorithm>
#include <cstring>

#include "model/scene/connect_ops.h"

namespace nnxr::scene::connect {
namespace {

// Output element -> x[base + sum(index_d * strides_d)] over `shape` (row-major, numel == output).
void offer_mapped(const TensorValue& x, std::span<const int64_t> shape, std::span<const int64_t> strides, int64_t base, TopK& top) {
  const float* X = x.data.data();
  for_each_mapped(shape, strides, base, top.begin(), top.end(), [&](int64_t y, int64_t src) { top.offer(y, 0, src, std::fabs(X[src]), X[src]); });
}

// Source input 0 when it is a float activation, with the output shape.
struct Io {
  const TensorValue* x;
  Dims os;
};
std::optional<Io> source_io(const NodeValues& v, uint32_t output, const TopK& top) {
  const auto os = output_shape(v, output, top);
  const TensorValue* x = float_input(v, 0);
  if (!os || !x || input_is_weight(v, 0)) return std::nullopt;
  return Io{x, *os};
}

void connect_transpose(const NodeValues& v, uint32_t output, TopK& top) {
  const auto io = source_io(v, output, top);
  if (output != 0 || !io) return;
  const size_t r = io->x->shape.size();
  Dims perm = v.node.attributes.get_ints("perm");
  if (perm.empty())
    for (size_t i = 0; i < r; ++i) perm.push_back(int64_t(r - 1 - i));
  if (perm.size() != r || io->os.size() != r) return;
  const Dims ist = strides_of(io->x->shape);
  Dims st(r);
  std::vector<bool> seen(r, false);
  for (size_t i = 0; i < r; ++i) {
    if (perm[i] < 0 || perm[i] >= int64_t(r) || seen[size_t(perm[i])]) return;
    seen[size_t(perm[i])] = true;
    if (io->os[i] != io->x->shape[size_t(perm[i])]) return;
    st[i] = ist[size_t(perm[i])];
  }
  offer_mapped(*io->x, io->os, st, 0, top);
}

// Concat: the output position along the axis picks the input.
void connect_concat(const NodeValues& v, uint32_t output, TopK& top) {
  const auto os = output_shape(v, output, top);
  if (output != 0 || !os || v.inputs.empty() || os->empty()) return;
  const int64_t rank = int64_t(os->size());
  int64_t axis = v.node.attributes.get_int("axis", 1);
  if (axis < -rank || axis >= rank) return;
  if (axis < 0) axis += rank;
  const size_t a = size_t(axis);
  const size_t n = v.inputs.size();
  Dims start(n + 1, 0);
  std::vector<const float*> data(n, nullptr);
  for (size_t i = 0; i < n; ++i) {
    const TensorValue& t = v.inputs[i];
    if (t.shape.size() != os->size()) return;
    for (size_t d = 0; d < os->size(); ++d)
      if (d != a && t.shape[d] != (*os)[d]) return;
    start[i + 1] = start[i] + t.shape[a];
    if (const TensorValue* f = float_input(v, i); f && !input_is_weight(v, i)) data[i] = f->data.data();
  }
  if (start[n] != (*os)[a]) return;
  const int64_t inner = numel(std::span<const int64_t>(*os).subspan(a + 1)), dim = (*os)[a];
  for (int64_t y = top.begin(); y < top.end(); ++y) {
    const int64_t outer = y / (dim * inner), p = (y / inner) % dim, in = y % inner;
    const size_t i = size_t(std::upper_bound(start.begin(), start.end(), p) - start.begin() - 1);
    if (!data[i]) continue;
    const int64_t di = start[i + 1] - start[i];
    const int64_t src = (outer * di + p - start[i]) * inner + in;
    top.offer(y, uint32_t(i), src, std::fabs(data[i][src]), data[i][src]);
  }
}

// Split: output slot `output` starts where the previous outputs end along the axis.
void connect_split(const NodeValues& v, uint32_t output, TopK& top) {
  const auto io = source_io(v, output, top);
  if (!io) return;
  const auto& xs = io->x->shape;
  const int64_t rank = int64_t(xs.size());
  int64_t axis = v.node.attributes.get_int("axis", 0);
  if (axis < -rank || axis >= rank || io->os.size() != xs.size()) return;
  if (axis < 0) axis += rank;
  const size_t a = size_t(axis);
  int64_t offset = 0;
  for (uint32_t o = 0; o < output; ++o) {
    if (v.outputs[o].shape.size() != xs.size()) return;
    offset += v.outputs[o].shape[a];
  }
  for (size_t d = 0; d < xs.size(); ++d)
    if (d != a && io->os[d] != xs[d]) return;
  if (offset + io->os[a] > xs[a]) return;
  const Dims ist = strides_of(xs);
  offer_mapped(*io->x, io->os, ist, offset * ist[a], top);
}

// Slice: start and step per axis, clamped as the runtime does.
void connect_slice(const NodeValues& v, uint32_t output, TopK& top) {
  const auto io = source_io(v, output, top);
  if (output != 0 || !io) return;
  const auto& xs = io->x->shape;
  const int64_t rank = int64_t(xs.size());
  Dims starts, ends, axes, steps;
  const auto& at = v.node.attributes;
  if (v.node.opset < 10) {
    starts = at.get_ints("starts");
    ends = at.get_ints("ends");
    axes = at.get_ints("axes");
  } else {
    const auto s = input_ints(v, 1), e = input_ints(v, 2);
    if (!s || !e) return;
    starts = *s;
    ends = *e;
    if (v.node.inputs.size() > 3 && v.node.inputs[3] != model::kNone) {
      const auto x = input_ints(v, 3);
      if (!x) return;
      axes = *x;
    }
    if (v.node.inputs.size() > 4 && v.node.inputs[4] != model::kNone) {
      const auto x = input_ints(v, 4);
      if (!x) return;
      steps = *x;
    }
  }
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(int64_t(i));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size()) return;
  const Dims ist = strides_of(xs);
  Dims st = ist, os(xs.begin(), xs.end());
  int64_t base = 0;
  for (size_t i = 0; i < starts.size(); ++i) {
    int64_t ax = axes[i];
    if (ax < -rank || ax >= rank || steps[i] == 0) return;
    if (ax < 0) ax += rank;
    const int64_t dim = xs[size_t(ax)];
    int64_t s = starts[i], e = ends[i];
    const int64_t step = steps[i];
    if (s < 0) s += dim;
    if (e < 0) e += dim;
    int64_t count;
    if (step > 0) {
      s = std::clamp<int64_t>(s, 0, dim);
      e = std::clamp<int64_t>(e, 0, dim);
      count = e > s ? (e - s + step - 1) / step : 0;
    } else {
      s = std::clamp<int64_t>(s, 0, std::max<int64_t>(0, dim - 1));
      e = std::clamp<int64_t>(e, -1, dim - 1);
      count = s > e ? (s - e + (-step) - 1) / (-step) : 0;
    }
    os[size_t(ax)] = count;
    if (count > 0) base += s * ist[size_t(ax)];
    st[size_t(ax)] = ist[size_t(ax)] * step;
  }
  if (os != io->os) return;
  offer_mapped(*io->x, os, st, base, top);
}

void connect_expand(const NodeValues& v, uint32_t output, TopK& top) {
  const auto io = source_io(v, output, top);
  if (output != 0 || !io) return;
  const auto st = connect::broadcast_strides(io->x->shape, io->os);
  if (!st) return;
  offer_mapped(*io->x, io->os, *st, 0, top);
}

// Tile: output [r0·d0, r1·d1, ...] is the row-major view [r0, d0, r1, d1, ...] of the input.
void connect_tile(const NodeValues& v, uint32_t output, TopK& top) {
  const auto io = source_io(v, output, top);
  if (output != 0 || !io) return;
  const auto& xs = io->x->shape;
  if (io->os.size() != xs.size()) return;
  const Dims ist = strides_of(xs);
  Dims view, st;
  for (size_t d = 0; d < xs.size(); ++d) {
    if (xs[d] == 0 || io->os[d] % xs[d] != 0) return;
    view.push_back(io->os[d] / xs[d]);
    view.push_back(xs[d]);
    st.push_back(0);
    st.push_back(ist[d]);
  }
  offer_mapped(*io->x, view, st, 0, top);
}

void connect_pad(const NodeValues& v, uint32_t output, TopK& top) {
  const auto io = source_io(v, output, top);
  if (output != 0 || !io) return;
  const auto& xs = io->x->shape;
  const int64_t rank = int64_t(xs.size());
  const std::string mode = v.node.attributes.get_string("mode", "constant");
  Dims pads;
  if (v.node.opset < 11) {
    pads = v.node.attributes.get_ints(v.node.opset < 2 ? "paddings" : "pads");
  } else {
    const auto p = input_ints(v, 1);
    if (!p) return;
    pads = *p;
    if (v.node.inputs.size() > 3 && v.node.inputs[3] != model::kNone) {
      const auto axes = input_ints(v, 3);
      if (!axes || pads.size() != 2 * axes->size()) return;
      Dims full(size_t(2 * rank), 0);
      for (size_t i = 0; i < axes->size(); ++i) {
        int64_t a = (*axes)[i];
        if (a < -rank || a >= rank) return;
        if (a < 0) a += rank;
        full[size_t(a)] = pads[i];
        full[size_t(a + rank)] = pads[i + axes->size()];
      }
      pads = full;
    }
  }
  if (int64_t(pads.size()) != 2 * rank || int64_t(io->os.size()) != rank) return;
  for (int64_t d = 0; d < rank; ++d)
    if (io->os[size_t(d)] != xs[size_t(d)] + pads[size_t(d)] + pads[size_t(d + rank)]) return;
  enum { Constant, Edge, Wrap, Reflect } m = mode == "constant" ? Constant : mode == "edge" ? Edge : mode == "wrap" ? Wrap : Reflect;
  if (m == Reflect && mode != "reflect") return;
  const Dims ist = strides_of(xs);
  const float* X = io->x->data.data();
  for (int64_t y = top.begin(); y < top.end(); ++y) {
    int64_t rem = y, src = 0;
    bool inside = true;
    for (int64_t d = rank; d-- > 0;) {
      const size_t k = size_t(d);
      int64_t i = rem % io->os[k] - pads[k];
      rem /= io->os[k];
      const int64_t n = xs[k];
      if (m == Constant) {
        inside = inside && i >= 0 && i < n;
      } else if (n == 0) {
        inside = false;
      } else if (m == Edge) {
        i = std::clamp<int64_t>(i, 0, n - 1);
      } else if (m == Wrap) {
        i = ((i % n) + n) % n;
      } else if (n == 1) {
        i = 0;
      } else {
        const int64_t p = 2 * (n - 1);
        i = ((i % p) + p) % p;
        if (i >= n) i = p - i;
      }
      src += i * ist[k];
    }
    if (inside) top.offer(y, 0, src, std::fabs(X[src]), X[src]);
  }
}

template <bool to_space>
void connect_d2s(const NodeValues& v, uint32_t output, TopK& top) {
  const auto io = source_io(v, output, top);
  if (output != 0 || !io || io->x->shape.size() != 4) return;
  const int64_t bs = v.node.attributes.get_int("blocksize", 0);
  const bool crd = v.node.attributes.get_string("mode", "DCR") == "CRD";
  const auto& xs = io->x->shape;
  const int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3];
  if (bs < 1) return;
  Dims view, perm, os;
  if (to_space) {
    if (C % (bs * bs) != 0) return;
    const int64_t c = C / (bs * bs);
    if (crd) {
      view = {N, c, bs, bs, H, W};
      perm = {0, 1, 4, 2, 5, 3};
    } else {
      view = {N, bs, bs, c, H, W};
      perm = {0, 3, 4, 1, 5, 2};
    }
    os = {N, c, H * bs, W * bs};
  } else {
    if (H % bs != 0 || W % bs != 0) return;
    view = {N, C, H / bs, bs, W / bs, bs};
    perm = {0, 3, 5, 1, 2, 4};
    os = {N, C * bs * bs, H / bs, W / bs};
  }
  if (os != io->os) return;
  const Dims vst = strides_of(view);
  Dims pshape(6), st(6);
  for (size_t i = 0; i < 6; ++i) {
    pshape[i] = view[size_t(perm[i])];
    st[i] = vst[size_t(perm[i])];
  }
  offer_mapped(*io->x, pshape, st, 0, top);
}

void connect_crop(const NodeValues& v, uint32_t output, TopK& top) {
  const auto io = source_io(v, output, top);
  if (output != 0 || !io || io->x->shape.size() != 4 || io->os.size() != 4) return;
  const auto border = v.node.attributes.get_ints("border");
  if (border.size() != 4) return;
  const auto& xs = io->x->shape;
  const int64_t left = border[0], top_b = border[1];
  if (left < 0 || top_b < 0 || io->os[0] != xs[0] || io->os[1] != xs[1] || top_b + io->os[2] > xs[2] || left + io->os[3] > xs[3]) return;
  const Dims ist = strides_of(xs);
  offer_mapped(*io->x, io->os, ist, top_b * ist[2] + left * ist[3], top);
}

// Trilu: kept elements are copies, the others are zeros without a source. k comes from the
// graph or int_inputs; without it, an element is a copy when the output holds its value.
void connect_trilu(const NodeValues& v, uint32_t output, TopK& top) {
  const auto io = source_io(v, output, top);
  if (output != 0 || !io || io->x->shape.size() < 2 || io->os != Dims(io->x->shape.begin(), io->x->shape.end())) return;
  const bool upper = v.node.attributes.get_int("upper", 1) != 0;
  std::optional<int64_t> k = 0;
  if (v.node.inputs.size() > 1 && v.node.inputs[1] != model::kNone) {
    const auto kv = input_ints(v, 1);
    k = kv && kv->size() == 1 ? std::optional<int64_t>((*kv)[0]) : std::nullopt;
  }
  const float* X = io->x->data.data();
  const auto& yd = v.outputs[output].data;
  if (!k && yd.empty()) return;
  const int64_t R = io->os[io->os.size() - 2], C = io->os.back();
  for (int64_t y = top.begin(); y < top.end(); ++y) {
    bool keep;
    if (k) {
      const int64_t i = (y / C) % R, j = y % C;
      keep = upper ? (j - i >= *k) : (j - i <= *k);
    } else {
      keep = std::memcmp(&yd[size_t(y)], &X[y], sizeof(float)) == 0 || yd[size_t(y)] == X[y];
    }
    if (keep) top.offer(y, 0, y, std::fabs(X[y]), X[y]);
  }
}

void connect_dropout(const NodeValues& v, uint32_t output, TopK& top) {
  if (output == 0) connect_one_to_one(v, output, top);
}

constexpr Entry kEntries[] = {
    {"Identity", connect_one_to_one}, {"Dropout", connect_dropout}, {"Reshape", connect_one_to_one}, {"Flatten", connect_one_to_one},
    {"Squeeze", connect_one_to_one}, {"Unsqueeze", connect_one_to_one}, {"Transpose", connect_transpose}, {"Concat", connect_concat},
    {"Split", connect_split}, {"Slice", connect_slice}, {"Expand", connect_expand}, {"Tile", connect_tile}, {"Pad", connect_pad},
    {"DepthToSpace", connect_d2s<true>}, {"SpaceToDepth", connect_d2s<false>}, {"Crop", connect_crop}, {"Trilu", connect_trilu},
};

}  // namespace

std::span<const Entry> shape_connectors() { return kEntries; }

}  // namespace nnxr::scene::connect
