// Indexing: Gather, GatherElements, GatherND (each output is a copy of one data element),
// ScatterND, ScatterElements/Scatter (a copy of an update where one was written, else of the
// data), TopK (each value connects to every element along the axis it was chosen from).
// Score |a|, contribution a. Indices are read from the graph or NodeValues::int_inputs; without
// them the gathered element is found by value (the output element equals it), and Scatter* fall
// back to the data element when the output still holds its value.
#include <algorithm>
#include <cstring>

#include "model/scene/connect_ops.h"

namespace nnxr::scene::connect {
namespace {

bool same(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0 || a == b; }

std::optional<int64_t> fix(int64_t i, int64_t dim) {
  if (i < -dim || i >= dim) return std::nullopt;
  return i < 0 ? i + dim : i;
}

void connect_gather(const NodeValues& v, uint32_t output, TopK& top) {
  const auto os = output_shape(v, output, top);
  const TensorValue* x = float_input(v, 0);
  if (output != 0 || !os || !x || input_is_weight(v, 0) || x->shape.empty() || v.inputs.size() < 2) return;
  const int64_t rank = int64_t(x->shape.size());
  int64_t axis = v.node.attributes.get_int("axis", 0);
  if (axis < -rank || axis >= rank) return;
  if (axis < 0) axis += rank;
  const auto d = std::span<const int64_t>(x->shape);
  const int64_t outer = numel(d.subspan(0, size_t(axis))), dim = d[size_t(axis)], inner = numel(d.subspan(size_t(axis) + 1));
  if (outer * inner == 0) return;
  const int64_t nidx = numel(*os) / (outer * inner);
  if (nidx * outer * inner != numel(*os)) return;
  const auto idx = input_ints(v, 1);
  if (idx && int64_t(idx->size()) != nidx) return;
  const float* X = x->data.data();
  const auto& Y = v.outputs[output].data;
  if (!idx && Y.empty()) return;
  int64_t cached_row = -1, cached = -1;  // last (outer, index position) and the data index it found
  for (int64_t y = top.begin(); y < top.end(); ++y) {
    const int64_t o = y / (nidx * inner), k = (y / inner) % nidx, in = y % inner;
    int64_t i = -1;
    if (idx) {
      i = fix((*idx)[size_t(k)], dim).value_or(-1);
    } else {
      const int64_t row = o * nidx + k;
      if (row == cached_row && cached >= 0 && same(Y[size_t(y)], X[(o * dim + cached) * inner + in])) {
        i = cached;
      } else {
        for (int64_t j = 0; j < dim; ++j)
          if (same(Y[size_t(y)], X[(o * dim + j) * inner + in])) {
            i = j;
            break;
          }
        cached_row = row;
        cached = i;
      }
    }
    if (i < 0) continue;
    const int64_t src = (o * dim + i) * inner + in;
    top.offer(y, 0, src, std::fabs(X[src]), X[src]);
  }
}

void connect_gather_elements(const NodeValues& v, uint32_t output, TopK& top) {
  const auto os = output_shape(v, output, top);
  const TensorValue* x = float_input(v, 0);
  if (output != 0 || !os || !x || input_is_weight(v, 0) || x->shape.size() != os->size() || os->empty()) return;
  const int64_t rank = int64_t(os->size());
  int64_t axis = v.node.attributes.get_int("axis", 0);
  if (axis < -rank || axis >= rank) return;
  if (axis < 0) axis += rank;
  for (int64_t dd = 0; dd < rank; ++dd)
    if (dd != axis && (*os)[size_t(dd)] > x->shape[size_t(dd)]) return;
  const auto idx = input_ints(v, 1);
  if (idx && int64_t(idx->size()) != numel(*os)) return;
  const auto& Y = v.outputs[output].data;
  if (!idx && Y.empty()) return;
  const Dims xst = strides_of(x->shape);
  const float* X = x->data.data();
  const int64_t dim = x->shape[size_t(axis)], ast = xst[size_t(axis)];
  for (int64_t y = top.begin(); y < top.end(); ++y) {
    int64_t rem = y, base = 0;
    for (int64_t dd = rank; dd-- > 0;) {
      const int64_t i = rem % (*os)[size_t(dd)];
      rem /= (*os)[size_t(dd)];
      if (dd != axis) base += i * xst[size_t(dd)];
    }
    int64_t i = -1;
    if (idx) {
      i = fix((*idx)[size_t(y)], dim).value_or(-1);
    } else {
      for (int64_t j = 0; j < dim && i < 0; ++j)
        if (same(Y[size_t(y)], X[base + j * ast])) i = j;
    }
    if (i < 0) continue;
    const int64_t src = base + i * ast;
    top.offer(y, 0, src, std::fabs(X[src]), X[src]);
  }
}

void connect_gather_nd(const NodeValues& v, uint32_t output, TopK& top) {
  const auto os = output_shape(v, output, top);
  const TensorValue* x = float_input(v, 0);
  if (output != 0 || !os || !x || input_is_weight(v, 0) || v.inputs.size() < 2) return;
  const auto& is = v.inputs[1].shape;
  const int64_t bd = v.node.attributes.get_int("batch_dims", 0);
  if (bd < 0 || is.empty() || int64_t(x->shape.size()) <= bd || int64_t(is.size()) <= bd) return;
  const size_t b = size_t(bd);
  const int64_t k = is.back();
  if (k < 1 || size_t(k) + b > x->shape.size()) return;
  const auto xd = std::span<const int64_t>(x->shape);
  const int64_t slice = numel(xd.subspan(b + size_t(k))), batches = numel(xd.subspan(0, b));
  const int64_t per_batch = numel(std::span<const int64_t>(is).subspan(b, is.size() - b - 1));
  if (slice == 0 || batches * per_batch * slice != numel(*os)) return;
  const auto idx = input_ints(v, 1);
  if (idx && int64_t(idx->size()) != batches * per_batch * k) return;
  const auto& Y = v.outputs[output].data;
  if (!idx && Y.empty()) return;
  const Dims xst = strides_of(x->shape);
  const int64_t bstride = b ? xst[b - 1] : 0, cells = numel(xd.subspan(b, size_t(k)));
  const float* X = x->data.data();
  int64_t cached_row = -1, cached = -1;
  for (int64_t y = top.begin(); y < top.end(); ++y) {
    const int64_t row = y / slice, in = y % slice, bi = row / per_batch;
    int64_t off = bi * bstride;
    bool ok = true;
    if (idx) {
      for (int64_t t = 0; t < k && ok; ++t) {
        const auto i = fix((*idx)[size_t(row * k + t)], xd[b + size_t(t)]);
        ok = i.has_value();
        if (ok) off += *i * xst[b + size_t(t)];
      }
    } else {  // the slice start inside this batch entry whose element matches
      int64_t found = -1;
      if (row == cached_row && cached >= 0 && same(Y[size_t(y)], X[off + cached * slice + in])) {
        found = cached;
      } else {
        for (int64_t j = 0; j < cells && found < 0; ++j)
          if (same(Y[size_t(y)], X[off + j * slice + in])) found = j;
        cached_row = row;
        cached = found;
      }
      ok = found >= 0;
      off += found * slice;
    }
    if (!ok) continue;
    const int64_t src = off + in;
    top.offer(y, 0, src, std::fabs(X[src]), X[src]);
  }
}

// The update (index in input 2) written to each output of [b, e), or -1; nullopt when indices
// are unknown or do not fit.
std::optional<std::vector<int64_t>> scatter_nd_sources(const NodeValues& v, const Dims& xs, int64_t b, int64_t e) {
  const auto idx = input_ints(v, 1);
  if (!idx || v.inputs.size() < 3 || v.inputs[1].shape.empty()) return std::nullopt;
  const int64_t k = v.inputs[1].shape.back();
  if (k < 1 || size_t(k) > xs.size()) return std::nullopt;
  const int64_t rows = int64_t(idx->size()) / k;
  const int64_t slice = numel(std::span<const int64_t>(xs).subspan(size_t(k)));
  const Dims xst = strides_of(xs);
  std::vector<int64_t> from(size_t(e - b), -1);
  for (int64_t r = 0; r < rows; ++r) {
    int64_t off = 0;
    for (int64_t t = 0; t < k; ++t) {
      const auto i = fix((*idx)[size_t(r * k + t)], xs[size_t(t)]);
      if (!i) return std::nullopt;
      off += *i * xst[size_t(t)];
    }
    for (int64_t j = std::max(off, b); j < std::min(off + slice, e); ++j) from[size_t(j - b)] = r * slice + (j - off);
  }
  return from;
}

std::optional<std::vector<int64_t>> scatter_elements_sources(const NodeValues& v, const Dims& xs, int64_t b, int64_t e) {
  const auto idx = input_ints(v, 1);
  if (!idx || v.inputs.size() < 3) return std::nullopt;
  const auto& is = v.inputs[1].shape;
  const int64_t rank = int64_t(xs.size());
  int64_t axis = v.node.attributes.get_int("axis", 0);
  if (axis < -rank || axis >= rank || int64_t(is.size()) != rank || int64_t(idx->size()) != numel(is)) return std::nullopt;
  if (axis < 0) axis += rank;
  const Dims xst = strides_of(xs);
  std::vector<int64_t> from(size_t(e - b), -1);
  for (size_t o = 0; o < idx->size(); ++o) {
    int64_t rem = int64_t(o), dst = 0;
    for (int64_t dd = rank; dd-- > 0;) {
      const size_t kk = size_t(dd);
      int64_t i = rem % is[kk];
      rem /= is[kk];
      if (dd == axis) {
        const auto f = fix((*idx)[o], xs[kk]);
        if (!f) return std::nullopt;
        i = *f;
      } else if (i >= xs[kk]) {
        return std::nullopt;
      }
      dst += i * xst[kk];
    }
    if (dst >= b && dst < e) from[size_t(dst - b)] = int64_t(o);
  }
  return from;
}

template <bool nd>
void connect_scatter(const NodeValues& v, uint32_t output, TopK& top) {
  const auto os = output_shape(v, output, top);
  const TensorValue* x = float_input(v, 0);
  if (output != 0 || !os || !x || int64_t(x->data.size()) != numel(*os)) return;
  const Dims xs(x->shape.begin(), x->shape.end());
  const auto from = nd ? scatter_nd_sources(v, xs, top.begin(), top.end()) : scatter_elements_sources(v, xs, top.begin(), top.end());
  const TensorValue* up = float_input(v, 2);
  const bool x_src = !input_is_weight(v, 0), up_src = up && !input_is_weight(v, 2);
  const float* X = x->data.data();
  const auto& Y = v.outputs[output].data;
  for (int64_t y = top.begin(); y < top.end(); ++y) {
    if (from) {
      const int64_t u = (*from)[size_t(y - top.begin())];
      if (u < 0) {
        if (x_src) top.offer(y, 0, y, std::fabs(X[y]), X[y]);
      } else if (up_src && u < int64_t(up->data.size())) {
        const float a = up->data[size_t(u)];
        top.offer(y, 2, u, std::fabs(a), a);
      }
    } else if (x_src && !Y.empty() && same(Y[size_t(y)], X[y])) {
      top.offer(y, 0, y, std::fabs(X[y]), X[y]);
    }
  }
}

// TopK values: every element of the line along the axis (the same set for each of the k outputs).
void connect_topk(const NodeValues& v, uint32_t output, TopK& top) {
  const auto os = output_shape(v, output, top);
  const TensorValue* x = float_input(v, 0);
  if (output != 0 || !os || !x || input_is_weight(v, 0) || x->shape.empty() || os->size() != x->shape.size()) return;
  const int64_t rank = int64_t(x->shape.size());
  int64_t axis = v.node.attributes.get_int("axis", -1);
  if (axis < -rank || axis >= rank) return;
  if (axis < 0) axis += rank;
  const auto d = std::span<const int64_t>(x->shape);
  const int64_t n = d[size_t(axis)], inner = numel(d.subspan(size_t(axis) + 1)), kk = (*os)[size_t(axis)];
  if (kk > n || numel(*os) != numel(d.subspan(0, size_t(axis))) * kk * inner) return;
  const float* X = x->data.data();
  Best best(top.k());
  int64_t cached = -1;
  for (int64_t y = top.begin(); y < top.end(); ++y) {
    const int64_t o = y / (kk * inner), i = y % inner, line = o * inner + i;
    if (line != cached) {
      best.clear();
      for (int64_t j = 0; j < n; ++j) best.add((o * n + j) * inner + i, X[(o * n + j) * inner + i]);
      cached = line;
    }
    best.give(top, y, 0, 1.f, uint64_t(n));
  }
}

constexpr Entry kEntries[] = {
    {"Gather", connect_gather},           {"GatherElements", connect_gather_elements}, {"GatherND", connect_gather_nd},
    {"ScatterND", connect_scatter<true>}, {"ScatterElements", connect_scatter<false>}, {"Scatter", connect_scatter<false>},
    {"TopK", connect_topk},
};

}  // namespace

std::span<const Entry> index_connectors() { return kEntries; }

}  // namespace nnxr::scene::connect
