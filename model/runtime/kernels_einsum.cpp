// Einsum (opset 12+): any number of operands, explicit ("ij,jk->ik") or implicit ("ij,jk")
// output, repeated labels within an operand (diagonals, traces), labels summed away, and "..."
// for broadcast leading dims (numpy rules: the ellipsis dims of all operands broadcast together,
// right-aligned; in implicit mode they lead the output, followed by the letters that occur once,
// in alphabetical order).
//
// Evaluation: every label gets one size and, per operand, one stride (the sum of the strides of
// the positions it labels, so a repeated label walks the diagonal; 0 where the operand lacks the
// label or broadcasts it). The output is walked element by element; for each, the summed labels
// are walked with an odometer and the product of the operands accumulated (in double for floats,
// in wrapping 64-bit arithmetic for integers). Two float32 operands whose labels split cleanly
// into batch, row, column and summed sets go through gemm_blas instead.
#include <algorithm>
#include <array>
#include <functional>
#include <map>
#include <type_traits>

#include "model/runtime/compute.h"
#include "model/runtime/kernel.h"
#include "model/runtime/kernels_more.h"

namespace nnxr::runtime {
namespace {

// The parsed equation: per operand a list of labels (letters as their char, kEllipsis for "...")
// and the output's list (explicit or derived).
struct EinsumTerms {
  static constexpr int kEllipsis = -1;
  std::vector<std::vector<int>> inputs;
  std::vector<int> output;
  bool explicit_output = false;
};

EinsumTerms parse_einsum(const std::string& equation, const std::function<void(const std::string&)>& fail) {
  std::string eq;
  for (char c : equation)
    if (c != ' ' && c != '\t' && c != '\n') eq += c;
  EinsumTerms t;
  std::string lhs = eq, rhs;
  if (const size_t arrow = eq.find("->"); arrow != std::string::npos) {
    lhs = eq.substr(0, arrow);
    rhs = eq.substr(arrow + 2);
    t.explicit_output = true;
    if (rhs.find("->") != std::string::npos) fail("equation " + quoted(equation) + " has more than one '->'");
  }
  auto parse_term = [&](const std::string& s) {
    std::vector<int> labels;
    for (size_t i = 0; i < s.size();) {
      if (s.compare(i, 3, "...") == 0) {
        if (std::count(labels.begin(), labels.end(), EinsumTerms::kEllipsis))
          fail("equation " + quoted(equation) + ": a term has more than one '...'");
        labels.push_back(EinsumTerms::kEllipsis);
        i += 3;
        continue;
      }
      const char c = s[i];
      if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')))
        fail("equation " + quoted(equation) + ": unexpected character " + quoted(std::string(1, c)));
      labels.push_back(c);
      ++i;
    }
    return labels;
  };
  size_t begin = 0;
  while (true) {
    const size_t comma = lhs.find(',', begin);
    t.inputs.push_back(parse_term(lhs.substr(begin, comma == std::string::npos ? std::string::npos : comma - begin)));
    if (comma == std::string::npos) break;
    begin = comma + 1;
  }
  if (t.explicit_output) {
    t.output = parse_term(rhs);
    for (size_t i = 0; i < t.output.size(); ++i) {
      const int l = t.output[i];
      if (std::count(t.output.begin(), t.output.end(), l) > 1)
        fail("equation " + quoted(equation) + ": output label " + (l == EinsumTerms::kEllipsis ? std::string("...") : std::string(1, char(l))) +
             " is repeated");
      if (l == EinsumTerms::kEllipsis) continue;
      const bool found = std::any_of(t.inputs.begin(), t.inputs.end(), [&](const auto& in) { return std::count(in.begin(), in.end(), l) > 0; });
      if (!found) fail("equation " + quoted(equation) + ": output label " + std::string(1, char(l)) + " does not occur in any input");
    }
  } else {
    std::map<int, int> counts;
    bool ellipsis = false;
    for (const auto& in : t.inputs)
      for (int l : in) {
        if (l == EinsumTerms::kEllipsis) ellipsis = true;
        else ++counts[l];
      }
    if (ellipsis) t.output.push_back(EinsumTerms::kEllipsis);
    for (const auto& [l, n] : counts)  // std::map: ASCII order, as numpy
      if (n == 1) t.output.push_back(l);
  }
  return t;
}

// Label ids after ellipsis expansion: letters keep their char code (65..122); the k-th of the E
// broadcast dims (right-aligned, k = 0 is the leading one) is 128 + k.
constexpr int kEllipsisBase = 128;

struct EinsumPlan {
  std::vector<int64_t> out_shape;
  std::vector<int64_t> out_size;                  // per output label
  std::vector<int64_t> sum_size;                  // per summed label
  std::vector<std::vector<int64_t>> out_stride;   // [operand][output label]
  std::vector<std::vector<int64_t>> sum_stride;   // [operand][summed label]
  std::vector<int> out_labels, sum_labels;
};

std::string label_name(int l) {
  if (l >= kEllipsisBase) return "...[" + std::to_string(l - kEllipsisBase) + "]";
  return std::string(1, static_cast<char>(l));
}

EinsumPlan plan_einsum(const KernelContext& ctx, const EinsumTerms& terms, const std::string& equation) {
  const size_t n = ctx.input_count();
  if (terms.inputs.size() != n)
    ctx.fail("equation " + quoted(equation) + " has " + std::to_string(terms.inputs.size()) + " operand terms for " + std::to_string(n) + " inputs");
  // Ellipsis rank of each operand and the broadcast ellipsis rank.
  size_t E = 0;
  std::vector<size_t> erank(n, 0);
  for (size_t k = 0; k < n; ++k) {
    const auto& term = terms.inputs[k];
    const size_t letters = static_cast<size_t>(std::count_if(term.begin(), term.end(), [](int l) { return l != EinsumTerms::kEllipsis; }));
    const bool has_e = letters != term.size();
    const size_t rank = ctx.in(k).rank();
    if (has_e ? rank < letters : rank != letters)
      ctx.fail("input " + ctx.input_name(k) + " has shape " + shape_str(ctx.in(k).shape()) + ", which does not match its term in " + quoted(equation));
    erank[k] = rank - letters;
    E = std::max(E, erank[k]);
  }
  // Expand each operand's labels to one per axis.
  std::vector<std::vector<int>> axes(n);
  for (size_t k = 0; k < n; ++k)
    for (int l : terms.inputs[k]) {
      if (l != EinsumTerms::kEllipsis) {
        axes[k].push_back(l);
        continue;
      }
      for (size_t j = 0; j < erank[k]; ++j) axes[k].push_back(kEllipsisBase + static_cast<int>(E - erank[k] + j));
    }
  // Sizes: equal, or 1 (broadcast).
  std::map<int, int64_t> size;
  for (size_t k = 0; k < n; ++k)
    for (size_t a = 0; a < axes[k].size(); ++a) {
      const int64_t d = ctx.in(k).dims()[a];
      auto [it, fresh] = size.emplace(axes[k][a], d);
      if (fresh || it->second == d || d == 1) continue;
      if (it->second == 1) {
        it->second = d;
        continue;
      }
      ctx.fail("label " + label_name(axes[k][a]) + " has size " + std::to_string(it->second) + " and " + std::to_string(d) +
               " (input " + ctx.input_name(k) + " " + shape_str(ctx.in(k).shape()) + ")");
    }
  // Repeated labels within one operand must agree exactly (a diagonal of a size-1 axis is fine).
  for (size_t k = 0; k < n; ++k)
    for (size_t a = 0; a < axes[k].size(); ++a)
      for (size_t b = a + 1; b < axes[k].size(); ++b)
        if (axes[k][a] == axes[k][b] && ctx.in(k).dims()[a] != ctx.in(k).dims()[b])
          ctx.fail("input " + ctx.input_name(k) + " " + shape_str(ctx.in(k).shape()) + " repeats label " + label_name(axes[k][a]) +
                   " on axes of different sizes");
  EinsumPlan p;
  for (int l : terms.output) {
    if (l != EinsumTerms::kEllipsis) {
      p.out_labels.push_back(l);
      continue;
    }
    for (size_t j = 0; j < E; ++j) p.out_labels.push_back(kEllipsisBase + static_cast<int>(j));
  }
  // Without "..." in an explicit output, the ellipsis dims are summed (numpy does the same).
  for (const auto& [l, s] : size)
    if (std::find(p.out_labels.begin(), p.out_labels.end(), l) == p.out_labels.end()) p.sum_labels.push_back(l);
  for (int l : p.out_labels) {
    p.out_size.push_back(size[l]);
    p.out_shape.push_back(size[l]);
  }
  for (int l : p.sum_labels) p.sum_size.push_back(size[l]);
  // The loop visits every combination of the labels' values: bound it (and keep its products
  // within int64).
  double work = 1;
  for (const auto& [l, s] : size) work *= static_cast<double>(s);
  if (work > 1e15) ctx.fail("equation " + quoted(equation) + " on these shapes needs more than 1e15 steps");
  p.out_stride.assign(n, std::vector<int64_t>(p.out_labels.size(), 0));
  p.sum_stride.assign(n, std::vector<int64_t>(p.sum_labels.size(), 0));
  for (size_t k = 0; k < n; ++k) {
    const auto st = strides_of(ctx.in(k).dims());
    for (size_t a = 0; a < axes[k].size(); ++a) {
      if (ctx.in(k).dims()[a] == 1) continue;  // broadcast (or a size-1 diagonal): stride 0
      const int l = axes[k][a];
      if (auto it = std::find(p.out_labels.begin(), p.out_labels.end(), l); it != p.out_labels.end())
        p.out_stride[k][static_cast<size_t>(it - p.out_labels.begin())] += st[a];
      else
        p.sum_stride[k][static_cast<size_t>(std::find(p.sum_labels.begin(), p.sum_labels.end(), l) - p.sum_labels.begin())] += st[a];
    }
  }
  return p;
}

template <class T>
void einsum_loop(KernelContext& ctx, const EinsumPlan& p, Value& out) {
  using Acc = std::conditional_t<std::is_floating_point_v<T>, double, uint64_t>;
  const size_t n = ctx.input_count();
  std::vector<const T*> data(n);
  for (size_t k = 0; k < n; ++k) data[k] = reinterpret_cast<const T*>(ctx.in(k).data());
  T* y = out.mutable_as<T>().data();
  const int64_t total = out.elements();
  const int64_t inner = product(p.sum_size);
  const size_t no = p.out_size.size(), ns = p.sum_size.size();
  auto body = [&](int64_t b, int64_t e) {
    std::vector<int64_t> base(n), off(n), idx(ns);
    for (int64_t o = b; o < e; ++o) {
      std::fill(base.begin(), base.end(), 0);
      int64_t rem = o;
      for (size_t d = no; d-- > 0;) {
        const int64_t i = rem % p.out_size[d];
        rem /= p.out_size[d];
        for (size_t k = 0; k < n; ++k) base[k] += i * p.out_stride[k][d];
      }
      Acc acc = 0;
      off = base;
      std::fill(idx.begin(), idx.end(), 0);
      for (int64_t s = 0; s < inner; ++s) {
        Acc prod = 1;
        for (size_t k = 0; k < n; ++k) {
          if constexpr (std::is_floating_point_v<T>) prod *= static_cast<double>(data[k][off[k]]);
          else prod *= static_cast<uint64_t>(static_cast<int64_t>(data[k][off[k]]));
        }
        acc += prod;
        for (size_t d = ns; d-- > 0;) {  // odometer step
          for (size_t k = 0; k < n; ++k) off[k] += p.sum_stride[k][d];
          if (++idx[d] < p.sum_size[d]) break;
          for (size_t k = 0; k < n; ++k) off[k] -= p.sum_stride[k][d] * p.sum_size[d];
          idx[d] = 0;
        }
      }
      y[o] = static_cast<T>(acc);
    }
  };
  const int64_t work = total * std::max<int64_t>(1, inner);
  if (work >= (1 << 16) && total > 1)
    ctx.pool().parallel_for(total, std::max<int64_t>(1, (1 << 14) / std::max<int64_t>(1, inner)), body);
  else
    body(0, total);
}

// Two float32 operands, every label of each operand on its own axis (no diagonal, no broadcast
// size-1 mismatch), every summed label in both operands: batch x [M,K] x [K,N] through gemm_blas.
bool einsum_gemm(KernelContext& ctx, const EinsumTerms& terms, const EinsumPlan& p, Value& out) {
  if (ctx.input_count() != 2 || ctx.in(0).dtype() != DType::Float) return false;
  const Value &a = ctx.in(0), &b = ctx.in(1);
  // Classify labels: batch (a, b, out), m (a, out), n (b, out), k (a, b, summed).
  std::vector<int64_t> bsz, msz, nsz, ksz;
  std::vector<size_t> bl, ml, nl, kl;  // label positions in out (b, m, n) or sum (k)
  for (size_t i = 0; i < p.out_labels.size(); ++i) {
    const bool in_a = p.out_stride[0][i] != 0, in_b = p.out_stride[1][i] != 0;
    if (p.out_size[i] == 1) continue;
    if (in_a && in_b) bl.push_back(i);
    else if (in_a) ml.push_back(i);
    else if (in_b) nl.push_back(i);
    else return false;
  }
  for (size_t i = 0; i < p.sum_labels.size(); ++i) {
    if (p.sum_size[i] == 1) continue;
    if (p.sum_stride[0][i] == 0 || p.sum_stride[1][i] == 0) return false;
    kl.push_back(i);
  }
  (void)terms;
  // Each operand must be a plain permutation of its labels: the stride of each label must be a
  // stride of one axis (checked by matching the dense strides of the permuted layout).
  auto dense = [](const Value& v, const std::vector<std::pair<int64_t, int64_t>>& parts) {
    // parts: (stride, size) in the order they must be contiguous (outer to inner): checks that
    // strides equal those of a dense tensor laid out in this order.
    int64_t expect = 1;
    for (size_t i = parts.size(); i-- > 0;) {
      if (parts[i].first != expect) return false;
      expect *= parts[i].second;
    }
    return expect == v.elements();
  };
  auto ost = [&](size_t op, const std::vector<size_t>& labs) {
    std::vector<std::pair<int64_t, int64_t>> v;
    for (size_t i : labs) v.push_back({p.out_stride[op][i], p.out_size[i]});
    return v;
  };
  auto sst = [&](size_t op, const std::vector<size_t>& labs) {
    std::vector<std::pair<int64_t, int64_t>> v;
    for (size_t i : labs) v.push_back({p.sum_stride[op][i], p.sum_size[i]});
    return v;
  };
  // A: batch, then (m, k) or (k, m); B: batch, then (k, n) or (n, k).
  auto cat = [](std::vector<std::pair<int64_t, int64_t>> x, const std::vector<std::pair<int64_t, int64_t>>& y) {
    x.insert(x.end(), y.begin(), y.end());
    return x;
  };
  const auto ab = ost(0, bl), bb = ost(1, bl), am = ost(0, ml), bn = ost(1, nl), ak = sst(0, kl), bk = sst(1, kl);
  bool ta = false, tb = false;
  if (dense(a, cat(cat(ab, am), ak))) ta = false;
  else if (dense(a, cat(cat(ab, ak), am))) ta = true;
  else return false;
  if (dense(b, cat(cat(bb, bk), bn))) tb = false;
  else if (dense(b, cat(cat(bb, bn), bk))) tb = true;
  else return false;
  // Output laid out batch, m, n densely in the output's own label order?
  std::vector<std::pair<int64_t, int64_t>> outl;
  const auto ost_out = strides_of(p.out_shape);
  for (size_t i : bl) outl.push_back({ost_out[i], p.out_size[i]});
  for (size_t i : ml) outl.push_back({ost_out[i], p.out_size[i]});
  for (size_t i : nl) outl.push_back({ost_out[i], p.out_size[i]});
  if (!dense(out, outl)) return false;
  int64_t B = 1, M = 1, N = 1, K = 1;
  for (size_t i : bl) B *= p.out_size[i];
  for (size_t i : ml) M *= p.out_size[i];
  for (size_t i : nl) N *= p.out_size[i];
  for (size_t i : kl) K *= p.sum_size[i];
  const float* pa = a.as<float>().data();
  const float* pb = b.as<float>().data();
  float* py = out.mutable_as<float>().data();
  for (int64_t i = 0; i < B; ++i)
    gemm_blas(ta, tb, M, N, K, 1.f, pa + i * M * K, ta ? M : K, pb + i * K * N, tb ? K : N, 0.f, py + i * M * N, N);
  return true;
}

void einsum_run(KernelContext& ctx, const EinsumTerms& terms, const std::string& equation) {
  const size_t n = ctx.input_count();
  if (n == 0) ctx.fail("needs at least one input");
  const DType t = ctx.in(0).dtype();
  for (size_t k = 1; k < n; ++k)
    if (ctx.in(k).dtype() != t)
      ctx.fail("inputs " + ctx.input_name(0) + " and " + ctx.input_name(k) + " have different element types");
  const EinsumPlan p = plan_einsum(ctx, terms, equation);
  Value& out = ctx.out(0);
  out.reset(t, p.out_shape);
  if (out.elements() == 0) return;
  if (product(p.sum_size) == 0) {
    out.fill_zero();
    return;
  }
  if (einsum_gemm(ctx, terms, p, out)) return;
  auto run = [&](auto tag) { einsum_loop<decltype(tag)>(ctx, p, out); };
  switch (t) {
    case DType::Float: return run(float{});
    case DType::Double: return run(double{});
    case DType::Int64: return run(int64_t{});
    case DType::Int32: return run(int32_t{});
    case DType::Int16: return run(int16_t{});
    case DType::Int8: return run(int8_t{});
    case DType::UInt64: return run(uint64_t{});
    case DType::UInt32: return run(uint32_t{});
    case DType::UInt16: return run(uint16_t{});
    case DType::UInt8: return run(uint8_t{});
    default: ctx.fail("element type " + std::string(model::dtype_name(t)) + " is not supported by Einsum");
  }
}

}  // namespace

void register_einsum(Registry& r) {
  r.add("Einsum", [](const KernelInit& init) {
    const auto* eq = init.attrs().find("equation");
    if (!eq || eq->kind != model::Attribute::Kind::String) init.fail("attribute 'equation' (string) is required");
    const std::string equation = eq->s;
    const EinsumTerms terms = parse_einsum(equation, [&](const std::string& m) { init.fail(m); });
    if (terms.inputs.size() != init.input_count())
      init.fail("equation " + quoted(equation) + " has " + std::to_string(terms.inputs.size()) + " operand terms for " +
                std::to_string(init.input_count()) + " inputs");
    return make_kernel([terms, equation](KernelContext& ctx) { einsum_run(ctx, terms, equation); });
  });
}

}  // namespace nnxr::runtime
