// Reductions and normalisations: each output connects to every input element it was computed
// from (score |a|, contribution a unless stated):
//   Reduce*: the reduced window (ReduceMean: contribution a / n). ArgMax, ArgMin: the line along
//   the axis. Softmax, LogSoftmax, Hardmax, LpNormalization: the line along the axis (opset < 13
//   Softmax family: the flattened row from the axis on); Softmax: contribution a·p, p the
//   output at the source's place (the share of the line's mass its logit holds). LayerNormalization: the normalised row,
//   weight = the scale that multiplies this output. InstanceNormalization: the (n, c) plane,
//   weight = scale[c]. MeanVarianceNormalization: the elements sharing the output's index on the
//   kept axes. LRN: the channel window. CumSum: the elements summed into it.
// Outputs that share their candidate set (a softmax row, a normalised plane) get the strongest k
// of the set computed once per set; counts stay exact.
#include <algorithm>

#include "model/scene/connect_ops.h"

namespace nnxr::scene::connect {
namespace {

// Input 0 as a source, with the output shape.
struct Io {
  const float* x;
  Dims xs, os;
};
std::optional<Io> source_io(const NodeValues& v, uint32_t output, const TopK& top) {
  const auto os = output_shape(v, output, top);
  const TensorValue* x = float_input(v, 0);
  if (output != 0 || !os || !x || input_is_weight(v, 0)) return std::nullopt;
  return Io{x->data.data(), Dims(x->shape.begin(), x->shape.end()), *os};
}

std::optional<int64_t> axis_attr(const NodeValues& v, int64_t def, int64_t rank) {
  int64_t a = v.node.attributes.get_int("axis", def);
  if (a < -rank || a >= rank) return std::nullopt;
  return a < 0 ? a + rank : a;
}

// A reduction over the dims flagged in `reduce`: per output, base offset from the kept index and
// the shared window offsets.
struct Window {
  Dims kept_dims, kept_strides, offsets;
};
Window window_of(const Dims& in, const std::vector<bool>& reduce) {
  Window w;
  const Dims st = strides_of(in);
  Dims rd, rs;
  for (size_t d = 0; d < in.size(); ++d) {
    if (reduce[d]) {
      rd.push_back(in[d]);
      rs.push_back(st[d]);
    } else {
      w.kept_dims.push_back(in[d]);
      w.kept_strides.push_back(st[d]);
    }
  }
  const int64_t R = numel(rd);
  w.offsets.resize(size_t(R));
  for (int64_t i = 0; i < R; ++i) {
    int64_t rem = i, off = 0;
    for (size_t k = rd.size(); k-- > 0;) {
      off += (rem % rd[k]) * rs[k];
      rem /= rd[k];
    }
    w.offsets[size_t(i)] = off;
  }
  return w;
}
int64_t window_base(const Window& w, int64_t y) {
  int64_t rem = y, base = 0;
  for (size_t k = w.kept_dims.size(); k-- > 0;) {
    base += (rem % w.kept_dims[k]) * w.kept_strides[k];
    rem /= w.kept_dims[k];
  }
  return base;
}

// One output per window: scores every element of it.
void offer_window(TopK& top, int64_t y, const float* X, int64_t base, const Dims& offsets, float w) {
  top.count(offsets.size());
  if (!top.wanted(y)) return;
  float th = top.threshold(y);
  for (int64_t off : offsets) {
    const float c = w * X[base + off];
    const float s = std::fabs(c);
    if (s > th) {
      top.insert(y, 0, base + off, s, c);
      th = top.threshold(y);
    }
  }
}

template <bool mean>
void connect_reduce(const NodeValues& v, uint32_t output, TopK& top) {
  const auto io = source_io(v, output, top);
  if (!io) return;
  const int64_t rank = int64_t(io->xs.size());
  const bool keepdims = v.node.attributes.get_int("keepdims", 1) != 0;
  const bool noop = v.node.attributes.get_int("noop_with_empty_axes", 0) != 0;
  Dims axes = v.node.attributes.get_ints("axes");
  if (v.node.inputs.size() > 1 && v.node.inputs[1] != model::kNone) {
    const auto a = input_ints(v, 1);
    if (!a) return;
    axes = *a;
  }
  std::vector<bool> reduce(size_t(rank), axes.empty() && !noop);
  for (int64_t a : axes) {
    if (a < -rank || a >= rank) return;
    reduce[size_t(a < 0 ? a + rank : a)] = true;
  }
  Dims want;
  for (int64_t d = 0; d < rank; ++d)
    if (!reduce[size_t(d)]) want.push_back(io->xs[size_t(d)]);
    else if (keepdims) want.push_back(1);
  if (want != io->os) return;
  const Window w = window_of(io->xs, reduce);
  const float scale = mean ? 1.f / float(std::max<size_t>(1, w.offsets.size())) : 1.f;
  for (int64_t y = top.begin(); y < top.end(); ++y) offer_window(top, y, io->x, window_base(w, y), w.offsets, scale);
}

void connect_arg(const NodeValues& v, uint32_t output, TopK& top) {
  const auto io = source_io(v, output, top);
  if (!io || io->xs.empty()) return;
  const int64_t rank = int64_t(io->xs.size());
  const auto axis = axis_attr(v, 0, rank);
  if (!axis) return;
  std::vector<bool> reduce(size_t(rank), false);
  reduce[size_t(*axis)] = true;
  const Window w = window_of(io->xs, reduce);
  const int64_t outs = numel(w.kept_dims);
  if (numel(io->os) != outs) return;
  for (int64_t y = top.begin(); y < top.end(); ++y) offer_window(top, y, io->x, window_base(w, y), w.offsets, 1.f);
}

// Outputs shaped like the input; output y belongs to set `group(y)` whose elements are
// base(group) + offsets; weight(y) multiplies every candidate of y. Sets are cached by id.
template <class Group, class Base, class Weight>
void offer_shared(TopK& top, const float* X, const Dims& offsets, Group group, Base base, Weight weight) {
  constexpr size_t kSlots = 64;
  bool contiguous = true;
  for (size_t j = 0; j < offsets.size() && contiguous; ++j) contiguous = offsets[j] == int64_t(j);
  std::vector<Best> cache(kSlots, Best(top.k()));
  std::vector<int64_t> ids(kSlots, -1);
  for (int64_t y = top.begin(); y < top.end(); ++y) {
    if (!top.wanted(y)) {
      top.count(offsets.size());
      continue;
    }
    const int64_t g = group(y);
    const size_t slot = size_t(g) % kSlots;
    Best& b = cache[slot];
    if (ids[slot] != g) {
      b.clear();
      const int64_t b0 = base(g);
      b.add_all(X, b0, offsets, contiguous);
      ids[slot] = g;
    }
    b.give(top, y, 0, weight(y), offsets.size());
  }
}

// Lines along an axis: [outer, n, inner] view, y -> line (o, i).
void offer_lines(TopK& top, const float* X, int64_t n, int64_t inner) {
  Dims offsets(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j) offsets[size_t(j)] = j * inner;
  offer_shared(
      top, X, offsets, [&](int64_t y) { return (y / (n * inner)) * inner + y % inner; },
      [&](int64_t g) { return (g / inner) * n * inner + g % inner; }, [](int64_t) { return 1.f; });
}

void connect_softmax(const NodeValues& v, uint32_t output, TopK& top) {
  auto io = source_io(v, output, top);
  if (!io || io->os != io->xs) return;
  // Softmax, LogSoftmax, Hardmax: a logit counts as much as the share of the line's mass it holds
  // (the Softmax of its line, which Softmax's output is): contribution a·p. A masked logit
  // (BERT's scores plus -10000) holds none, and with contribution a it was the strongest line of
  // every attention row and set the scene's scale, leaving the rest of the network's lines unseen.
  if (v.node.op_type == "Softmax" && output < v.outputs.size() && v.outputs[output].data.size() == size_t(numel(io->xs))) {
    const float* p = v.outputs[output].data.data();
    NodeMemo& memo = *v.memo;
    std::call_once(memo.once, [&] {
      memo.data.resize(v.outputs[output].data.size());
      for (size_t e = 0; e < memo.data.size(); ++e) memo.data[e] = io->x[e] * p[e];
    });
    io->x = memo.data.data();
  }
  const int64_t rank = int64_t(io->xs.size());
  if (rank == 0) {
    for (int64_t y = top.begin(); y < top.end(); ++y) top.offer(y, 0, 0, std::fabs(io->x[0]), io->x[0]);
    return;
  }
  const bool legacy = v.node.opset < 13;
  const auto axis = axis_attr(v, legacy ? 1 : -1, rank);
  if (!axis) return;
  const auto d = std::span<const int64_t>(io->xs);
  if (legacy) offer_lines(top, io->x, numel(d.subspan(size_t(*axis))), 1);
  else offer_lines(top, io->x, d[size_t(*axis)], numel(d.subspan(size_t(*axis) + 1)));
}

void connect_lp_norm(const NodeValues& v, uint32_t output, TopK& top) {
  const auto io = source_io(v, output, top);
  if (!io || io->os != io->xs || io->xs.empty()) return;
  const auto axis = axis_attr(v, -1, int64_t(io->xs.size()));
  if (!axis) return;
  const auto d = std::span<const int64_t>(io->xs);
  offer_lines(top, io->x, d[size_t(*axis)], numel(d.subspan(size_t(*axis) + 1)));
}

void connect_layer_norm(const NodeValues& v, uint32_t output, TopK& top) {
  const auto io = source_io(v, output, top);
  if (!io || io->os != io->xs || io->xs.empty()) return;
  const auto axis = axis_attr(v, -1, int64_t(io->xs.size()));
  if (!axis) return;
  const Dims norm(io->xs.begin() + *axis, io->xs.end());
  const int64_t n = numel(norm);
  std::vector<float> scale(size_t(n), 1.f);
  if (const TensorValue* s = float_input(v, 1)) {
    const auto st = connect::broadcast_strides(s->shape, norm);
    if (!st) return;
    for_each_mapped(norm, *st, 0, 0, n, [&](int64_t i, int64_t src) { scale[size_t(i)] = s->data[size_t(src)]; });
  }
  Dims offsets(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j) offsets[size_t(j)] = j;
  offer_shared(
      top, io->x, offsets, [&](int64_t y) { return y / n; }, [&](int64_t g) { return g * n; },
      [&](int64_t y) { return scale[size_t(y % n)]; });
}

void connect_instance_norm(const NodeValues& v, uint32_t output, TopK& top) {
  const auto io = source_io(v, output, top);
  if (!io || io->os != io->xs || io->xs.size() < 3) return;
  const int64_t C = io->xs[1], S = numel(std::span<const int64_t>(io->xs).subspan(2));
  const TensorValue* s = float_input(v, 1);
  if (S == 0 || (s && int64_t(s->data.size()) != C)) return;
  Dims offsets(static_cast<size_t>(S));
  for (int64_t j = 0; j < S; ++j) offsets[size_t(j)] = j;
  offer_shared(
      top, io->x, offsets, [&](int64_t y) { return y / S; }, [&](int64_t g) { return g * S; },
      [&](int64_t y) { return s ? s->data[size_t((y / S) % C)] : 1.f; });
}

void connect_mvn(const NodeValues& v, uint32_t output, TopK& top) {
  const auto io = source_io(v, output, top);
  if (!io || io->os != io->xs) return;
  const int64_t rank = int64_t(io->xs.size());
  std::vector<bool> reduce(size_t(rank), false);
  for (int64_t a : v.node.attributes.get_ints("axes", {0, 2, 3})) {
    if (a < -rank || a >= rank) return;
    reduce[size_t(a < 0 ? a + rank : a)] = true;
  }
  const Window w = window_of(io->xs, reduce);
  // Group id = index over the kept dims.
  Dims kept_of_full(size_t(rank), 0);  // per full dim: stride in the kept index (0 when reduced)
  {
    int64_t acc = 1;
    for (int64_t d = rank; d-- > 0;)
      if (!reduce[size_t(d)]) {
        kept_of_full[size_t(d)] = acc;
        acc *= io->xs[size_t(d)];
      }
  }
  offer_shared(
      top, io->x, w.offsets,
      [&](int64_t y) {
        int64_t rem = y, g = 0;
        for (int64_t d = rank; d-- > 0;) {
          g += (rem % io->xs[size_t(d)]) * kept_of_full[size_t(d)];
          rem /= io->xs[size_t(d)];
        }
        return g;
      },
      [&](int64_t g) { return window_base(w, g); }, [](int64_t) { return 1.f; });
}

void connect_lrn(const NodeValues& v, uint32_t output, TopK& top) {
  const auto io = source_io(v, output, top);
  if (!io || io->os != io->xs || io->xs.size() < 2) return;
  const int64_t size = v.node.attributes.get_int("size", 0);
  if (size < 1) return;
  const int64_t C = io->xs[1], S = numel(std::span<const int64_t>(io->xs).subspan(2));
  const int64_t lo_off = (size - 1) / 2, hi_off = size / 2;
  for (int64_t y = top.begin(); y < top.end(); ++y) {
    const int64_t n = y / (C * S), c = (y / S) % C, i = y % S;
    for (int64_t k = std::max<int64_t>(0, c - lo_off); k <= std::min<int64_t>(C - 1, c + hi_off); ++k) {
      const int64_t src = (n * C + k) * S + i;
      top.offer(y, 0, src, std::fabs(io->x[src]), io->x[src]);
    }
  }
}

// CumSum: output at position p along the axis sums positions [0, p] (exclusive: [0, p);
// reverse: [p, n) or (p, n)). Forward lines keep a running best set.
void connect_cumsum(const NodeValues& v, uint32_t output, TopK& top) {
  const auto io = source_io(v, output, top);
  if (!io || io->os != io->xs || io->xs.empty()) return;
  const auto ax = input_ints(v, 1);
  const int64_t rank = int64_t(io->xs.size());
  if (!ax || ax->size() != 1 || (*ax)[0] < -rank || (*ax)[0] >= rank) return;
  const int64_t axis = (*ax)[0] < 0 ? (*ax)[0] + rank : (*ax)[0];
  const bool exclusive = v.node.attributes.get_int("exclusive", 0) != 0, reverse = v.node.attributes.get_int("reverse", 0) != 0;
  const auto d = std::span<const int64_t>(io->xs);
  const int64_t n = d[size_t(axis)], inner = numel(d.subspan(size_t(axis) + 1));
  struct Run {
    int64_t line = -1, next = 0;  // positions [0, next) added
    Best best;
  };
  constexpr size_t kSlots = 64;
  std::vector<Run> runs(kSlots, Run{-1, 0, Best(top.k())});
  for (int64_t y = top.begin(); y < top.end(); ++y) {
    const int64_t o = y / (n * inner), p = (y / inner) % n, i = y % inner, line = o * inner + i;
    auto at = [&](int64_t j) { return (o * n + j) * inner + i; };
    if (reverse) {
      Best b(top.k());
      const int64_t from = exclusive ? p + 1 : p;
      for (int64_t j = from; j < n; ++j) b.add(at(j), io->x[at(j)]);
      b.give(top, y, 0, 1.f, uint64_t(n - from));
      continue;
    }
    Run& r = runs[size_t(line) % kSlots];
    const int64_t upto = exclusive ? p : p + 1;
    if (r.line != line || r.next > upto) {
      r.line = line;
      r.next = 0;
      r.best.clear();
    }
    for (; r.next < upto; ++r.next) r.best.add(at(r.next), io->x[at(r.next)]);
    r.best.give(top, y, 0, 1.f, uint64_t(upto));
  }
}

constexpr Entry kEntries[] = {
    {"ReduceSum", connect_reduce<false>},
    {"ReduceMean", connect_reduce<true>},
    {"ReduceMax", connect_reduce<false>},
    {"ReduceMin", connect_reduce<false>},
    {"ReduceProd", connect_reduce<false>},
    {"ReduceL1", connect_reduce<false>},
    {"ReduceL2", connect_reduce<false>},
    {"ReduceLogSum", connect_reduce<false>},
    {"ReduceLogSumExp", connect_reduce<false>},
    {"ReduceSumSquare", connect_reduce<false>},
    {"ArgMax", connect_arg},
    {"ArgMin", connect_arg},
    {"Softmax", connect_softmax},
    {"LogSoftmax", connect_softmax},
    {"Hardmax", connect_softmax},
    {"LpNormalization", connect_lp_norm},
    {"LayerNormalization", connect_layer_norm},
    {"InstanceNormalization", connect_instance_norm},
    {"MeanVarianceNormalization", connect_mvn},
    {"LRN", connect_lrn},
    {"CumSum", connect_cumsum},
};

}  // namespace

std::span<const Entry> reduce_connectors() { return kEntries; }

}  // namespace nnxr::scene::connect
