// Gemm and MatMul: output (i, j) connects to A'[i, k] and/or B'[k, j] for every k.
//   - One side a weight (is_weight()): the other side's elements are the sources, the weight side
//     their weights: score |alpha·b·a|, contribution alpha·b·a.
//   - Both activations: both A'[i, k] and B'[k, j] are sources, each with score |alpha·a·b|.
//   - Both weights: no sources.
// Gemm's C (bias) is never a source. MatMul broadcasts batch dims and promotes 1-D operands as
// numpy does.
#include <algorithm>

#include "model/scene/connect_ops.h"
#include "model/scene/connect_scan.h"

namespace nnxr::scene::connect {
namespace {

// One [M, K] x [K, N] product with element (r, c) of A' at a[r * ars + c * acs] and of B' at
// b[r * brs + c * bcs]; a_src/b_src are the flat indices of a[0]/b[0] in their inputs.
struct Product {
  const float* a;
  int64_t ars, acs, a_src;
  const float* b;
  int64_t brs, bcs, b_src;
  int64_t M, N, K;
  float alpha;
  bool a_source, b_source;
};

// Outputs [o0, o1) of one product, whose element (i, j) has output index out_base + i * N + j.
void score_product(const Product& p, int64_t out_base, int64_t o0, int64_t o1, TopK& top, std::vector<float>& th, std::vector<float>& col) {
  const bool both = p.a_source && p.b_source;
  const int64_t per = both ? 2 : 1;
  top.count(uint64_t(o1 - o0) * uint64_t(p.K) * uint64_t(per));
  for (int64_t o = o0; o < o1;) {
    const int64_t i = o / p.N, j0 = o % p.N, j1 = std::min(p.N, j0 + (o1 - o));
    const int64_t out0 = out_base + i * p.N;
    const float* arow = p.a + i * p.ars;
    if (p.a_source && !both && p.bcs == 1 && !top.sparse()) {
      // k outer, j inner over a contiguous row of B'.
      th.resize(size_t(j1 - j0));
      for (int64_t j = j0; j < j1; ++j) th[size_t(j - j0)] = top.threshold(out0 + j);
      for (int64_t k = 0; k < p.K; ++k) {
        const float a = arow[k * p.acs];
        const float* brow = p.b + k * p.brs + j0;
        float* t = th.data();
        const int64_t src = p.a_src + i * p.ars + k * p.acs;
        for (int64_t j = 0; j < j1 - j0; ++j) {
          const float c = (p.alpha * brow[j]) * a;
          const float s = std::fabs(c);
          if (s > t[j]) {
            top.insert(out0 + j0 + j, 0, src, s, c);
            t[j] = top.threshold(out0 + j0 + j);
          }
        }
      }
    } else {
      // j outer, k inner (also when few outputs are resident: only theirs are scored); A' row
      // made contiguous once.
      const bool a_contig = p.acs == 1;
      if (!a_contig) {
        col.resize(size_t(p.K));
        for (int64_t k = 0; k < p.K; ++k) col[size_t(k)] = arow[k * p.acs];
      }
      const Operand arow_op{a_contig ? arow : col.data(), 1, p.a_src + i * p.ars, p.acs, 0};
      for (int64_t j = j0; j < j1; ++j) {
        if (!top.wanted(out0 + j)) continue;
        const Operand bcol_op{p.b + j * p.bcs, p.brs, p.b_src + j * p.bcs, p.brs, 1};
        if (p.a_source) scan_candidates(top, out0 + j, arow_op, bcol_op, p.alpha, p.K, both);
        else scan_candidates(top, out0 + j, bcol_op, arow_op, p.alpha, p.K);
      }
    }
    o = out0 + j1 - out_base;
  }
}

void connect_gemm(const NodeValues& v, uint32_t output, TopK& top) {
  const auto os = output_shape(v, output, top);
  const TensorValue *a = float_input(v, 0), *b = float_input(v, 1);
  if (output != 0 || !os || !a || !b || a->shape.size() != 2 || b->shape.size() != 2) return;
  const bool ta = v.node.attributes.get_int("transA", 0) != 0, tb = v.node.attributes.get_int("transB", 0) != 0;
  const float alpha = v.node.attributes.get_float("alpha", 1.f);
  const int64_t M = ta ? a->shape[1] : a->shape[0], K = ta ? a->shape[0] : a->shape[1];
  const int64_t Kb = tb ? b->shape[1] : b->shape[0], N = tb ? b->shape[0] : b->shape[1];
  if (K != Kb || *os != Dims{M, N}) return;
  Product p{a->data.data(), ta ? 1 : K, ta ? M : 1, 0, b->data.data(), tb ? 1 : N, tb ? K : 1, 0, M, N, K, alpha,
            !input_is_weight(v, 0), !input_is_weight(v, 1)};
  if (!p.a_source && !p.b_source) return;
  std::vector<float> th, col;
  score_product(p, 0, top.begin(), top.end(), top, th, col);
}

void connect_matmul(const NodeValues& v, uint32_t output, TopK& top) {
  const auto os = output_shape(v, output, top);
  const TensorValue *av = float_input(v, 0), *bv = float_input(v, 1);
  if (output != 0 || !os || !av || !bv || av->shape.empty() || bv->shape.empty()) return;
  // 1-D operands promoted: [K] -> [1, K] for A, [K] -> [K, 1] for B.
  Dims as(av->shape.size() == 1 ? 2 : av->shape.size(), 1), bs(bv->shape.size() == 1 ? 2 : bv->shape.size(), 1);
  std::copy(av->shape.begin(), av->shape.end(), as.end() - int64_t(av->shape.size()));
  std::copy(bv->shape.begin(), bv->shape.end(), bs.begin());
  const int64_t M = as[as.size() - 2], K = as.back(), N = bs.back();
  if (bs[bs.size() - 2] != K) return;
  const Dims abatch(as.begin(), as.end() - 2), bbatch(bs.begin(), bs.end() - 2);
  const size_t r = std::max(abatch.size(), bbatch.size());
  Dims batch(r, 1);
  for (size_t i = 0; i < r; ++i) {
    const int64_t da = i + abatch.size() >= r ? abatch[i + abatch.size() - r] : 1;
    const int64_t db = i + bbatch.size() >= r ? bbatch[i + bbatch.size() - r] : 1;
    if (da != db && da != 1 && db != 1) return;
    batch[i] = da == 1 ? db : da;
  }
  if (numel(*os) != numel(batch) * M * N) return;
  const auto sa = broadcast_strides(abatch, batch), sb = broadcast_strides(bbatch, batch);
  if (!sa || !sb || M * N == 0) return;
  Product p{av->data.data(), K, 1, 0, bv->data.data(), N, 1, 0, M, N, K, 1.f, !input_is_weight(v, 0), !input_is_weight(v, 1)};
  if (!p.a_source && !p.b_source) return;
  const float* a0 = p.a;
  const float* b0 = p.b;
  std::vector<float> th, col;
  const int64_t MN = M * N;
  for (int64_t out = top.begin(); out < top.end();) {
    const int64_t bi = out / MN, o0 = out % MN, o1 = std::min(MN, o0 + (top.end() - out));
    int64_t rem = bi, oa = 0, ob = 0;
    for (size_t d = r; d-- > 0;) {
      const int64_t idx = rem % batch[d];
      rem /= batch[d];
      oa += idx * (*sa)[d];
      ob += idx * (*sb)[d];
    }
    p.a = a0 + oa * M * K;
    p.a_src = oa * M * K;
    p.b = b0 + ob * K * N;
    p.b_src = ob * K * N;
    score_product(p, bi * MN, o0, o1, top, th, col);
    out = bi * MN + o1;
  }
}

constexpr Entry kEntries[] = {{"Gemm", connect_gemm}, {"MatMul", connect_matmul}};

}  // namespace

std::span<const Entry> matmul_connectors() { return kEntries; }

}  // namespace nnxr::scene::connect
