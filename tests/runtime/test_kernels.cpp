// Optimised kernels against their naive references on random shapes.
// Tolerance: |opt - ref| <= 1e-4 * (1 + |ref|) * sqrt(K) where K is the reduction length
// (float32 sums in a different order; the naive references accumulate in double).
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <bit>
#include <iostream>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "model/half.h"
#include "model/runtime/compute.h"
#include "model/runtime/gemm_packed.h"
#include "model/runtime/kernel.h"
#include "model/runtime/runtime.h"
#include "model/runtime/value.h"
#include "kernel_support.h"
#include "support.h"

using namespace nnxr::runtime;

namespace {

void expect_close(const std::vector<float>& a, const std::vector<float>& b, int64_t K, const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  const double tol_k = 1e-4 * std::sqrt(static_cast<double>(std::max<int64_t>(1, K)));
  size_t bad = 0;
  for (size_t i = 0; i < a.size(); ++i)
    if (!(std::fabs(a[i] - b[i]) <= tol_k * (1 + std::fabs(b[i])))) {
      if (++bad <= 3) ADD_FAILURE() << what << ": element " << i << " optimised " << a[i] << " reference " << b[i];
    }
  EXPECT_EQ(bad, 0u) << what;
}

std::string geom_str(const ConvGeom& g) {
  return "N" + std::to_string(g.N) + " C" + std::to_string(g.C) + " M" + std::to_string(g.M) + " group" + std::to_string(g.group) + " in" +
         shape_str(g.in) + " k" + shape_str(g.kernel) + " s" + shape_str(g.stride) + " d" + shape_str(g.dilation) + " p" + shape_str(g.pad_begin) +
         shape_str(g.pad_end);
}

ConvGeom random_geom(std::mt19937& rng, int spatial, bool depthwise) {
  auto r = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  ConvGeom g;
  g.N = r(1, 2);
  g.group = depthwise ? r(2, 6) : r(1, 3);
  g.C = depthwise ? g.group : g.group * r(1, 4);
  g.M = depthwise ? g.C : g.group * r(1, 4);
  for (int d = 0; d < spatial; ++d) {
    g.kernel.push_back(r(1, 4));
    g.stride.push_back(r(1, 3));
    g.dilation.push_back(r(1, 2));
    g.pad_begin.push_back(r(0, 2));
    g.pad_end.push_back(r(0, 2));
    const int64_t ek = (g.kernel.back() - 1) * g.dilation.back() + 1;
    g.in.push_back(std::max<int64_t>(ek, r(1, 12)));
    g.out.push_back(conv_out_dim(g.in.back(), g.kernel.back(), g.stride.back(), g.dilation.back(), g.pad_begin.back() + g.pad_end.back()));
  }
  return g;
}

}  // namespace

// The kernels' tests run once per instruction set (Portable, Avx2, Avx512 in their names): each
// path the CPU has against the naive references. A set the CPU lacks is skipped with a message.
class RuntimeKernels : public test::PerIsa {};
NNXR_INSTANTIATE_PER_ISA(RuntimeKernels);

TEST(RuntimeIsa, ActiveSetIsOneTheCpuHas) {
  EXPECT_LE(active_isa(), cpu_isa());
  EXPECT_FALSE(set_active_isa(static_cast<Isa>(static_cast<int>(Isa::Avx512) + 1)));
  const Isa before = active_isa();
  EXPECT_TRUE(set_active_isa(Isa::Portable));
  EXPECT_EQ(active_isa(), Isa::Portable);
  EXPECT_FALSE(gemm_packed_available());
  EXPECT_TRUE(set_active_isa(before));
  EXPECT_STREQ(isa_name(Isa::Avx512), "avx512");
}

TEST_P(RuntimeKernels, ConvIm2colMatchesNaive) {
  std::mt19937 rng(42);
  ThreadPool pool(2);
  for (int iter = 0; iter < 60; ++iter) {
    const int spatial = iter % 3 == 0 ? 1 : 2;
    const ConvGeom g = random_geom(rng, spatial, false);
    const auto x = test::random_floats(static_cast<size_t>(g.N * g.C * product(g.in)), 1 + iter);
    const auto w = test::random_floats(static_cast<size_t>(g.M * (g.C / g.group) * product(g.kernel)), 100 + iter);
    const auto b = test::random_floats(static_cast<size_t>(g.M), 200 + iter);
    const size_t n = static_cast<size_t>(g.N * g.M * product(g.out));
    std::vector<float> ref(n), opt(n, 123.f);
    conv_naive(g, x.data(), w.data(), iter % 2 ? b.data() : nullptr, ref.data());
    conv_im2col(g, x.data(), w.data(), iter % 2 ? b.data() : nullptr, opt.data(), pool);
    expect_close(opt, ref, (g.C / g.group) * product(g.kernel), "im2col " + geom_str(g));
  }
}

TEST_P(RuntimeKernels, ConvDepthwiseMatchesNaive) {
  std::mt19937 rng(7);
  ThreadPool pool(2);
  for (int iter = 0; iter < 60; ++iter) {
    const ConvGeom g = random_geom(rng, iter % 4 == 0 ? 1 : 2, true);
    const auto x = test::random_floats(static_cast<size_t>(g.N * g.C * product(g.in)), 11 + iter);
    const auto w = test::random_floats(static_cast<size_t>(g.M * product(g.kernel)), 300 + iter);
    const auto b = test::random_floats(static_cast<size_t>(g.M), 400 + iter);
    const size_t n = static_cast<size_t>(g.N * g.M * product(g.out));
    std::vector<float> ref(n), opt(n, 123.f);
    conv_naive(g, x.data(), w.data(), b.data(), ref.data());
    conv_depthwise(g, x.data(), w.data(), b.data(), opt.data(), pool);
    expect_close(opt, ref, product(g.kernel), "depthwise " + geom_str(g));
  }
}

TEST_P(RuntimeKernels, ConvTransposeGemmMatchesNaive) {
  std::mt19937 rng(9);
  ThreadPool pool(2);
  for (int iter = 0; iter < 40; ++iter) {
    ConvGeom g = random_geom(rng, iter % 3 == 0 ? 1 : 2, false);
    // Transposed geometry: out = stride*(in-1) + (k-1)*d + 1 - pads.
    for (size_t d = 0; d < g.in.size(); ++d) {
      g.out[d] = g.stride[d] * (g.in[d] - 1) + (g.kernel[d] - 1) * g.dilation[d] + 1 - g.pad_begin[d] - g.pad_end[d];
      if (g.out[d] < 1) {
        g.pad_begin[d] = g.pad_end[d] = 0;
        g.out[d] = g.stride[d] * (g.in[d] - 1) + (g.kernel[d] - 1) * g.dilation[d] + 1;
      }
    }
    const auto x = test::random_floats(static_cast<size_t>(g.N * g.C * product(g.in)), 21 + iter);
    const auto w = test::random_floats(static_cast<size_t>(g.C * (g.M / g.group) * product(g.kernel)), 500 + iter);
    const auto b = test::random_floats(static_cast<size_t>(g.M), 600 + iter);
    const size_t n = static_cast<size_t>(g.N * g.M * product(g.out));
    std::vector<float> ref(n), opt(n, 123.f);
    conv_transpose_naive(g, x.data(), w.data(), b.data(), ref.data());
    conv_transpose_gemm(g, x.data(), w.data(), b.data(), opt.data(), pool);
    expect_close(opt, ref, g.C * product(g.kernel), "conv transpose " + geom_str(g));
  }
}

// InstanceNormalization's statistics against a two-pass sum in long double: planes with a tail
// of every length, a mean far above the spread (fns-candy's channels), first values far from the
// mean (the second pass), and a constant plane (variance 0).
TEST_P(RuntimeKernels, PlaneMomentsMatchTwoPassLongDouble) {
  std::mt19937 rng(31);
  for (int iter = 0; iter < 60; ++iter) {
    const int64_t n = iter < 40 ? iter + 1 : std::uniform_int_distribution<int64_t>(100, 70000)(rng);
    std::normal_distribution<float> spread(0.f, 1.f);
    const float offset = iter % 3 == 0 ? 2035.f : iter % 3 == 1 ? -0.5f : 1e5f;
    const float sigma = iter % 3 == 2 ? 0.01f : 60.f;
    std::vector<float> x(static_cast<size_t>(n));
    for (auto& v : x) v = offset + sigma * spread(rng);
    if (iter % 5 == 4) x[0] = offset + 1e4f * sigma;  // an outlier first: the shift is far off
    if (iter == 45) std::fill(x.begin(), x.end(), 3.25f);
    long double m = 0, v = 0;
    for (float f : x) m += f;
    m /= static_cast<long double>(n);
    for (float f : x) v += (f - m) * (f - m);
    v /= static_cast<long double>(n);
    double mean = 0, var = 0;
    plane_moments(x.data(), n, mean, var);
    EXPECT_NEAR(mean, static_cast<double>(m), 1e-12 * (std::fabs(static_cast<double>(m)) + 1)) << "n " << n << " iter " << iter;
    EXPECT_NEAR(var, static_cast<double>(v), 1e-9 * static_cast<double>(v) + 1e-30) << "n " << n << " iter " << iter;
  }
}

// The scale-and-shift pass with each fused activation, on lengths with every tail, at offsets
// that put y on and off a cache line (where y is streamed).
TEST_P(RuntimeKernels, ScaleShiftMatchesNaive) {
  for (int iter = 0; iter < 72; ++iter) {
    const int64_t n = iter < 36 ? iter + 1 : 1000 + 37 * iter, at = iter % 3 == 0 ? 0 : iter % 7;
    const Epilogue e = test::epilogue_in_turn(iter / 2);
    const bool fused = iter % 2 == 1;
    const auto x = test::random_floats(static_cast<size_t>(n + at), 40 + iter);
    const auto addend = test::random_floats(static_cast<size_t>(n + at), 80 + iter);
    const float a = 0.75f, b = -0.125f;
    std::vector<float> ref(static_cast<size_t>(n)), ref1(ref.size()), ref2(ref.size());
    for (int64_t i = 0; i < n; ++i) ref[static_cast<size_t>(i)] = static_cast<float>(static_cast<double>(x[static_cast<size_t>(at + i)]) * a + b);
    epilogue_naive(e, ref.data(), ref1.data(), ref2.data(), n, addend.data() + at);
    std::vector<float> y(static_cast<size_t>(n + at), 123.f), z1(y.size(), 123.f), z2(y.size(), 123.f);
    const EpilogueOut act = fused ? EpilogueOut{&e, z1.data(), z2.data(), addend.data()} : EpilogueOut{};
    scale_shift(x.data() + at, y.data() + at, n, a, b, act, at);
    const std::string what = "n " + std::to_string(n) + " at " + std::to_string(at) + " epilogue " + std::to_string(static_cast<int>(e.kind));
    expect_close(std::vector<float>(y.begin() + at, y.end()), ref, 1, what);
    for (int64_t i = 0; i < at; ++i) ASSERT_EQ(y[static_cast<size_t>(i)], 123.f) << what;
    if (!fused) {
      EXPECT_EQ(z1, std::vector<float>(y.size(), 123.f)) << what;
      continue;
    }
    expect_close(std::vector<float>(z1.begin() + at, z1.end()), ref1, 1, what);
    if (e.kind == Epilogue::Kind::SiLU) expect_close(std::vector<float>(z2.begin() + at, z2.end()), ref2, 1, what);
    for (int64_t i = 0; i < at; ++i) ASSERT_EQ(z1[static_cast<size_t>(i)], 123.f) << what;
  }
}

// Stride-2 ConvTranspose as fns-candy's (3x3, output_shape one past the full size: pad_end -1)
// and its neighbours: rows wide enough for the vector kernels, pads that cut into the row at
// either end, negative pads, 2x2 and 4x4 kernels, groups, and products wide enough that the
// input rows are split into bands (two rows each here) run on two threads.
TEST_P(RuntimeKernels, ConvTransposeStride2MatchesNaive) {
  ThreadPool pool(2);
  struct Case {
    int64_t N, C, M, group, H, W, k, pb0, pb1, pe0, pe1;
  };
  const Case cases[] = {
      {1, 3, 2, 1, 5, 40, 3, 0, 0, -1, -1}, {2, 4, 6, 2, 4, 37, 3, 1, 1, 1, 0},   {1, 2, 3, 1, 3, 17, 3, 0, 2, 0, 2},
      {1, 2, 2, 1, 2, 16, 3, 0, 3, 0, 3},   {1, 3, 4, 1, 6, 33, 2, 0, 0, 0, 0},   {1, 2, 3, 1, 3, 29, 4, 1, 1, 1, 1},
      {1, 2, 2, 1, 3, 21, 3, 0, -1, 0, -2}, {1, 4, 32, 1, 9, 230, 3, 0, 0, -1, -1}, {1, 1, 1, 1, 1, 1, 3, 0, 0, 0, 0},
  };
  for (const Case& c : cases) {
    ConvGeom g;
    g.N = c.N;
    g.C = c.C;
    g.M = c.M;
    g.group = c.group;
    g.in = {c.H, c.W};
    g.kernel = {c.k, c.k};
    g.stride = {2, 2};
    g.dilation = {1, 1};
    g.pad_begin = {c.pb0, c.pb1};
    g.pad_end = {c.pe0, c.pe1};
    for (size_t d = 0; d < 2; ++d) g.out.push_back(2 * (g.in[d] - 1) + c.k - g.pad_begin[d] - g.pad_end[d]);
    const auto x = test::random_floats(static_cast<size_t>(g.N * g.C * product(g.in)), 31);
    const auto w = test::random_floats(static_cast<size_t>(g.C * (g.M / g.group) * c.k * c.k), 32);
    const auto b = test::random_floats(static_cast<size_t>(g.M), 33);
    const size_t n = static_cast<size_t>(g.N * g.M * product(g.out));
    std::vector<float> ref(n), opt(n, 123.f);
    conv_transpose_naive(g, x.data(), w.data(), b.data(), ref.data());
    conv_transpose_gemm(g, x.data(), w.data(), b.data(), opt.data(), pool);
    expect_close(opt, ref, g.C * c.k * c.k, "conv transpose " + geom_str(g));
  }
}

TEST_P(RuntimeKernels, GemmBlasMatchesNaive) {
  std::mt19937 rng(3);
  for (int iter = 0; iter < 40; ++iter) {
    auto r = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
    const bool ta = iter & 1, tb = iter & 2;
    const int64_t M = r(1, 40), N = r(1, 40), K = r(1, 70);
    const auto a = test::random_floats(static_cast<size_t>(M * K), 31 + iter);
    const auto b = test::random_floats(static_cast<size_t>(K * N), 41 + iter);
    auto c0 = test::random_floats(static_cast<size_t>(M * N), 51 + iter);
    auto ref = c0, opt = c0;
    const float alpha = 0.5f + static_cast<float>(iter % 3), beta = iter % 4 ? 0.25f : 0.f;
    gemm_naive(ta, tb, M, N, K, alpha, a.data(), ta ? M : K, b.data(), tb ? K : N, beta, ref.data(), N);
    gemm_blas(ta, tb, M, N, K, alpha, a.data(), ta ? M : K, b.data(), tb ? K : N, beta, opt.data(), N);
    expect_close(opt, ref, K, "gemm M" + std::to_string(M) + " N" + std::to_string(N) + " K" + std::to_string(K));
  }
}

// Products large enough to be split over the pool, by rows and by columns, every transpose.
TEST_P(RuntimeKernels, GemmSplitOverThePoolMatchesNaive) {
  ThreadPool pool(2);
  const GemmPool use(pool);
  struct Case {
    int64_t M, N, K;
  };
  int iter = 0;
  for (const Case c : {Case{200, 90, 300}, Case{37, 1000, 200}, Case{8, 3001, 257}, Case{130, 129, 500}, Case{1, 1000, 1280}, Case{700, 1, 600}, Case{1, 5, 3}})
    for (int t = 0; t < 4; ++t, ++iter) {
      const bool ta = t & 1, tb = t & 2;
      const auto a = test::random_floats(static_cast<size_t>(c.M * c.K), 61 + iter);
      const auto b = test::random_floats(static_cast<size_t>(c.K * c.N), 71 + iter);
      const auto c0 = test::random_floats(static_cast<size_t>(c.M * c.N), 81 + iter);
      auto ref = c0, opt = c0;
      gemm_naive(ta, tb, c.M, c.N, c.K, 1.5f, a.data(), ta ? c.M : c.K, b.data(), tb ? c.K : c.N, 0.5f, ref.data(), c.N);
      gemm_blas(ta, tb, c.M, c.N, c.K, 1.5f, a.data(), ta ? c.M : c.K, b.data(), tb ? c.K : c.N, 0.5f, opt.data(), c.N);
      expect_close(opt, ref, c.K, "split gemm M" + std::to_string(c.M) + " N" + std::to_string(c.N) + " K" + std::to_string(c.K) + " ta" +
                                      std::to_string(ta) + " tb" + std::to_string(tb));
    }
}

TEST_P(RuntimeKernels, BatchedBroadcastingMatMulMatchesNaive) {
  std::mt19937 rng(5);
  for (int iter = 0; iter < 60; ++iter) {
    auto r = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
    const int64_t M = r(1, 9), N = r(1, 9), K = r(1, 17);
    // Batch dims of random rank with 1s to broadcast on either side; sometimes 1-D operands.
    std::vector<int64_t> ab, bb;
    const int ra = r(0, 3), rb = r(0, 3);
    for (int i = 0; i < ra; ++i) ab.push_back(r(1, 3));
    for (int i = 0; i < rb; ++i) bb.push_back(r(1, 3));
    // Make broadcastable: where both exist and differ and neither is 1, set one to 1.
    for (int i = 1; i <= std::min(ra, rb); ++i) {
      int64_t& x = ab[static_cast<size_t>(ra - i)];
      int64_t& y = bb[static_cast<size_t>(rb - i)];
      if (x != y && x != 1 && y != 1) (r(0, 1) ? x : y) = 1;
    }
    std::vector<int64_t> as = ab, bs = bb;
    if (iter % 10 == 3) as = {K};
    else {
      as.push_back(M);
      as.push_back(K);
    }
    if (iter % 10 == 7) bs = {K};
    else {
      bs.push_back(K);
      bs.push_back(N);
    }
    const auto os = matmul_shape(as, bs);
    const auto a = test::random_floats(static_cast<size_t>(product(as)), 61 + iter);
    const auto b = test::random_floats(static_cast<size_t>(product(bs)), 71 + iter);
    std::vector<float> ref(static_cast<size_t>(product(os))), opt(ref.size(), 123.f);
    matmul_naive(as, a.data(), bs, b.data(), ref.data());
    matmul_blas(as, a.data(), bs, b.data(), opt.data());
    expect_close(opt, ref, K, "matmul " + shape_str(as) + " x " + shape_str(bs));
  }
}

namespace {

// matmul_blas of as x bs (random operands from `seed`) against matmul_naive, and nothing written
// past the output.
void expect_matmul_matches_naive(const std::vector<int64_t>& as, const std::vector<int64_t>& bs, int seed, const std::string& what) {
  const auto os = matmul_shape(as, bs);
  const auto a = test::random_floats(static_cast<size_t>(product(as)), seed);
  const auto b = test::random_floats(static_cast<size_t>(product(bs)), seed + 10);
  std::vector<float> ref(static_cast<size_t>(product(os))), opt(ref.size() + 16, 123.f);
  matmul_naive(as, a.data(), bs, b.data(), ref.data());
  matmul_blas(as, a.data(), bs, b.data(), opt.data());
  for (size_t i = ref.size(); i < opt.size(); ++i) EXPECT_EQ(opt[i], 123.f) << what << ": written past the end at " << i;
  opt.resize(ref.size());
  expect_close(opt, ref, as.back(), what + ": matmul " + shape_str(as) + " x " + shape_str(bs));
}

}  // namespace

// A batch of products too small to split (an attention's per-head products) runs its products
// over a pool of two threads, each product on one: the same as the naive product, with and
// without a broadcast batch dimension, and nothing written outside the output.
TEST_P(RuntimeKernels, MatMulBatchOverThePoolMatchesNaive) {
  ThreadPool pool(2);
  const GemmPool on(pool);
  const std::vector<std::vector<int64_t>> shapes[] = {{{6, 37, 64}, {6, 64, 37}}, {{6, 37, 37}, {6, 37, 64}}, {{3, 1, 40, 33}, {1, 4, 33, 50}},
                                                       {{5, 20, 30}, {5, 30, 1}}, {{2, 3, 9, 16}, {2, 3, 16, 9}}};
  int seed = 81;
  for (const auto& ab : shapes) expect_matmul_matches_naive(ab[0], ab[1], seed++, "batch over the pool");
}

// Products with 6 rows or more and 32 columns or more run through gemm_packed on AVX-512 (the left
// operand packed per product), through sgemm on the other sets: ragged rows and columns (197 rows,
// 100 and 33 columns), a batch of left operands flattened into rows, 7 rows, and 5 rows (sgemm
// still), at one thread and split by columns over two. The same as the naive product, and
// nothing written past the output.
TEST_P(RuntimeKernels, MatMulSharedWeightsMatchesNaive) {
  const std::vector<std::vector<int64_t>> shapes[] = {
      {{1, 197, 70}, {70, 100}}, {{2, 13, 40}, {40, 33}}, {{7, 5}, {5, 64}}, {{5, 64}, {64, 40}}, {{1, 30, 256}, {256, 1100}}};
  for (int threads : {1, 2}) {
    ThreadPool pool(threads);
    const GemmPool on(pool);
    int seed = 181;
    for (const auto& ab : shapes) expect_matmul_matches_naive(ab[0], ab[1], seed++, std::to_string(threads) + " threads");
  }
}

// pack_a's panels (by the AVX-512 transpose where it runs, element by element otherwise) hold
// row r of panel p at column k at data[(p K + k) 6 + r], zero for rows past M: every row count
// around the panel height, depths around the transpose's 16 columns, rows wider than K.
TEST_P(RuntimeKernels, PackedPanelsHoldTheRows) {
  for (int64_t M : {1, 5, 6, 7, 12, 13, 197})
    for (int64_t K : {1, 15, 16, 17, 33, 384}) {
      const int64_t lda = K + 3;
      const auto a = test::random_floats(static_cast<size_t>(M * lda), static_cast<uint32_t>(M * 1000 + K));
      const PackedA p = pack_a(a.data(), M, K, lda);
      ASSERT_EQ(p.data.size(), static_cast<size_t>(p.panels() * K * kPanelRows)) << M << "x" << K;
      size_t wrong = 0;
      for (int64_t q = 0; q < p.panels(); ++q)
        for (int64_t k = 0; k < K; ++k)
          for (int64_t r = 0; r < kPanelRows; ++r) {
            const int64_t m = q * kPanelRows + r;
            const float want = m < M ? a[static_cast<size_t>(m * lda + k)] : 0.f;
            wrong += std::memcmp(&p.data[static_cast<size_t>((q * K + k) * kPanelRows + r)], &want, sizeof want) != 0;
          }
      EXPECT_EQ(wrong, 0u) << M << " rows x " << K;
    }
}

// A constant right operand packed once (pack_b, AVX-512 only): the products that read its strips
// equal, bit for bit, those that read it in place or copy its columns (the same products in the
// same order), whole and in blocks of columns for a chain, over the pool by columns at two
// threads; ragged columns (33, 100, 1100), depths from 1 to 300 and 6 to 197 rows. Against the
// naive product too, and nothing written past the output.
TEST_P(RuntimeKernels, MatMulPackedWeightsMatchInPlace) {
  struct Case {
    std::vector<int64_t> a, b;
  };
  const Case cases[] = {{{1, 197, 70}, {70, 100}}, {{2, 13, 40}, {40, 33}}, {{7, 5}, {5, 64}}, {{1, 30, 256}, {256, 1100}},
                        {{6, 1}, {1, 32}},          {{197, 300}, {300, 384}}, {{1, 50, 64}, {64, 1536}}};
  if (!pack_b(std::vector<float>(32, 1.f).data(), 1, 32)) {
    EXPECT_NE(GetParam(), Isa::Avx512);
    GTEST_SKIP() << "B is packed for gemm_packed's AVX-512 body only; this set reads it in place";
  }
  int seed = 281;
  for (int threads : {1, 2}) {
    ThreadPool pool(threads);
    const GemmPool on(pool);
    for (const Case& c : cases) {
      const std::string what = shape_str(c.a) + " x " + shape_str(c.b) + " at " + std::to_string(threads) + " threads";
      const auto os = matmul_shape(c.a, c.b);
      const auto a = test::random_floats(static_cast<size_t>(product(c.a)), seed), b = test::random_floats(static_cast<size_t>(product(c.b)), seed + 1);
      ++seed;
      const auto pb = pack_b(b.data(), c.b[0], c.b[1]);
      ASSERT_TRUE(pb) << what;
      const size_t n = static_cast<size_t>(product(os));
      std::vector<float> ref(n), in_place(n + 16, 123.f), packed(n + 16, 123.f);
      matmul_naive(c.a, a.data(), c.b, b.data(), ref.data());
      matmul_blas(c.a, a.data(), c.b, b.data(), in_place.data());
      matmul_blas(c.a, a.data(), c.b, b.data(), packed.data(), pb.get());
      for (size_t i = n; i < packed.size(); ++i) ASSERT_EQ(packed[i], 123.f) << what << ": written past the end at " << i;
      EXPECT_EQ(std::memcmp(packed.data(), in_place.data(), n * sizeof(float)), 0) << what;
      packed.resize(n);
      expect_close(packed, ref, c.a.back(), what);
      // In blocks of columns, each handed to `done` as it is finished, as for a chain.
      for (bool columns : {false, true}) {
        std::vector<float> blocks(n, 123.f), again(n, 123.f);
        std::vector<uint8_t> seen(n, 0);
        const int64_t N = os.back();
        matmul_blas_done(c.a, a.data(), c.b, b.data(), blocks.data(), [](int64_t, int64_t, int64_t, int64_t) {}, columns);
        matmul_blas_done(
            c.a, a.data(), c.b, b.data(), again.data(),
            [&](int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
              for (int64_t r = r0; r < r1; ++r)
                for (int64_t j = c0; j < c1; ++j) seen[static_cast<size_t>(r * N + j)] = 1;
            },
            columns, pb.get());
        EXPECT_EQ(std::memcmp(again.data(), blocks.data(), n * sizeof(float)), 0) << what << (columns ? " by columns" : " by rows");
        EXPECT_EQ(std::count(seen.begin(), seen.end(), 1), static_cast<std::ptrdiff_t>(n)) << what << ": an element not handed to done";
      }
    }
  }
}

TEST_P(RuntimeKernels, MatMulShapeRules) {
  EXPECT_EQ(matmul_shape({2, 3, 4}, {4, 5}), (std::vector<int64_t>{2, 3, 5}));
  EXPECT_EQ(matmul_shape({4}, {4}), (std::vector<int64_t>{}));
  EXPECT_EQ(matmul_shape({4}, {2, 4, 5}), (std::vector<int64_t>{2, 5}));
  EXPECT_EQ(matmul_shape({2, 1, 3, 4}, {5, 4, 6}), (std::vector<int64_t>{2, 5, 3, 6}));
  EXPECT_THROW(matmul_shape({3, 4}, {5, 6}), std::invalid_argument);
  EXPECT_THROW(matmul_shape({2, 3, 4}, {3, 4, 5}), std::invalid_argument);
}

TEST_P(RuntimeKernels, HalfConversionRoundTrips) {
  for (float f : {0.f, -0.f, 1.f, -2.5f, 65504.f, 6.1035156e-05f, 5.9604645e-08f, 0.333251953125f})
    EXPECT_EQ(half_to_float(float_to_half(f)), f) << f;
  EXPECT_TRUE(std::isinf(half_to_float(float_to_half(1e6f))));
  EXPECT_TRUE(std::isnan(half_to_float(float_to_half(std::nanf("")))));
  EXPECT_EQ(float_to_half(1.f), 0x3c00);
}

TEST_P(RuntimeKernels, BulkHalfConversionMatchesScalar) {
  // Every half value to float, and floats around every rounding case (ties, subnormals,
  // overflow, NaN) back; groups of 8 plus the tail (a padded group of 8 on F16C).
  std::vector<uint16_t> all(65536 + 3);
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<uint16_t>(i);
  std::vector<float> f(all.size());
  nnxr::model::half_to_float(all.data(), f.data(), all.size());
  for (size_t i = 0; i < all.size(); ++i) {
    const float want = half_to_float(all[i]);
    EXPECT_TRUE(std::bit_cast<uint32_t>(f[i]) == std::bit_cast<uint32_t>(want) || (std::isnan(f[i]) && std::isnan(want))) << i;
  }
  std::mt19937 rng(3);
  std::vector<float> x;
  for (float v : f)
    if (!std::isnan(v)) x.push_back(v), x.push_back(std::nextafter(v, 0.f)), x.push_back(v * 1.0004882f);
  for (int i = 0; i < 10000; ++i) x.push_back(std::bit_cast<float>(static_cast<uint32_t>(rng())));
  std::vector<uint16_t> h(x.size());
  nnxr::model::float_to_half(x.data(), h.data(), x.size());
  size_t bad = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const uint16_t want = float_to_half(x[i]);
    const bool both_nan = std::isnan(x[i]) && (h[i] & 0x7c00) == 0x7c00 && (h[i] & 0x3ff) != 0;
    if (h[i] != want && !both_nan && ++bad <= 5) ADD_FAILURE() << x[i] << ": bulk " << h[i] << ", scalar " << want;
  }
  EXPECT_EQ(bad, 0u);
  // Every length from 1 to 17 (a tail of 1-7 values after the groups of 8), from 1.5 up: the same
  // values as one by one, and nothing written past the end.
  for (size_t n = 1; n <= 17; ++n) {
    std::vector<float> g(n + 1, 7.f);
    nnxr::model::half_to_float(all.data() + 0x3e00, g.data(), n);
    std::vector<uint16_t> back(n + 1, 0x1234);
    nnxr::model::float_to_half(g.data(), back.data(), n);
    for (size_t i = 0; i < n; ++i) {
      EXPECT_EQ(g[i], half_to_float(all[0x3e00 + i])) << "length " << n << " value " << i;
      EXPECT_EQ(back[i], all[0x3e00 + i]) << "length " << n << " value " << i;
    }
    EXPECT_EQ(g[n], 7.f) << "length " << n;
    EXPECT_EQ(back[n], 0x1234) << "length " << n;
  }
}

// Planes wider than the depthwise kernel's 16-output blocks, with the strides and pads of
// MobileNet-style layers.
TEST_P(RuntimeKernels, ConvDepthwiseLargePlanesMatchNaive) {
  std::mt19937 rng(11);
  ThreadPool pool(2);
  auto r = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  for (int iter = 0; iter < 24; ++iter) {
    ConvGeom g;
    g.N = 1;
    g.C = g.M = g.group = r(2, 5);
    const int k = iter % 3 == 0 ? 5 : 3;
    for (int d = 0; d < 2; ++d) {
      g.kernel.push_back(k);
      g.stride.push_back(r(1, 2));
      g.dilation.push_back(iter % 5 == 0 ? 2 : 1);
      g.pad_begin.push_back(r(0, k / 2 + 1));
      g.pad_end.push_back(r(0, k / 2));
      g.in.push_back(r(17, 140));  // (wide rows: the per-row stride-1 path)
      g.out.push_back(conv_out_dim(g.in.back(), k, g.stride.back(), g.dilation.back(), g.pad_begin.back() + g.pad_end.back()));
    }
    const auto x = test::random_floats(static_cast<size_t>(g.C * product(g.in)), 500 + iter);
    const auto w = test::random_floats(static_cast<size_t>(g.M * product(g.kernel)), 600 + iter);
    const auto b = test::random_floats(static_cast<size_t>(g.M), 700 + iter);
    const size_t n = static_cast<size_t>(g.M * product(g.out));
    std::vector<float> ref(n), opt(n, 123.f);
    conv_naive(g, x.data(), w.data(), iter % 2 ? b.data() : nullptr, ref.data());
    conv_depthwise(g, x.data(), w.data(), iter % 2 ? b.data() : nullptr, opt.data(), pool);
    expect_close(opt, ref, product(g.kernel), "depthwise " + geom_str(g));
  }
}

TEST_P(RuntimeKernels, SigmoidMatchesNaive) {
  std::mt19937 rng(13);
  for (int64_t n : {0, 1, 3, 4, 7, 64, 1001}) {
    std::vector<float> x(static_cast<size_t>(n));
    std::uniform_real_distribution<float> d(-30.f, 30.f);
    for (auto& v : x) v = d(rng);
    if (n > 4) {  // the ends of the range, where exp is clamped
      x[0] = -100.f;
      x[1] = 100.f;
      x[2] = 0.f;
    }
    std::vector<float> ref(x.size()), opt(x.size(), 123.f);
    sigmoid_naive(x.data(), ref.data(), n);
    sigmoid_f32(x.data(), opt.data(), n);
    for (size_t i = 0; i < x.size(); ++i)
      EXPECT_NEAR(opt[i], ref[i], 4e-7 * std::fabs(ref[i]) + 1e-37) << "x=" << x[i] << " n=" << n;
  }
}

// Conv with a fused epilogue (bias and activation in the output pass, every path: blocked
// im2col, pointwise, few columns, depthwise flat and strided) against the naive Conv followed by
// the naive activation.
TEST_P(RuntimeKernels, ConvEpilogueMatchesNaive) {
  std::mt19937 rng(11);
  ThreadPool pool(2);
  const GemmPool use(pool);
  for (int iter = 0; iter < 80; ++iter) {
    auto r = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
    ConvGeom g = random_geom(rng, iter % 5 == 0 ? 1 : 2, iter % 3 == 0);
    if (iter % 4 == 1) {  // pointwise, sometimes with many columns (blocked over the pool)
      g.kernel.assign(g.spatial(), 1);
      g.stride.assign(g.spatial(), 1);
      g.pad_begin.assign(g.spatial(), 0);
      g.pad_end.assign(g.spatial(), 0);
      for (auto& d : g.in) d = r(1, 60);
      g.out = g.in;
    } else if (iter % 4 == 2) {  // large planes
      for (size_t d = 0; d < g.in.size(); ++d) {
        g.in[d] = r(20, 70);
        g.out[d] = conv_out_dim(g.in[d], g.kernel[d], g.stride[d], g.dilation[d], g.pad_begin[d] + g.pad_end[d]);
      }
    }
    const Epilogue e = test::epilogue_in_turn(iter);
    const auto x = test::random_floats(static_cast<size_t>(g.N * g.C * product(g.in)), 500 + iter);
    const auto w = test::random_floats(static_cast<size_t>(g.M * (g.C / g.group) * product(g.kernel)), 600 + iter);
    const auto b = test::random_floats(static_cast<size_t>(g.M), 700 + iter);
    const float* bias = iter % 2 ? b.data() : nullptr;
    const size_t n = static_cast<size_t>(g.N * g.M * product(g.out));
    std::vector<float> ref(n), ref1(n), ref2(n), opt(n, 123.f), z1(n, 123.f), z2(n, 123.f);
    const auto addend = test::random_floats(n, 750 + iter);
    conv_naive(g, x.data(), w.data(), bias, ref.data());
    epilogue_naive(e, ref.data(), ref1.data(), ref2.data(), static_cast<int64_t>(n), addend.data());
    conv_auto(g, x.data(), w.data(), bias, opt.data(), pool, {&e, z1.data(), z2.data(), addend.data()});
    const int64_t K = (g.C / g.group) * product(g.kernel);
    expect_close(opt, ref, K, "conv " + geom_str(g));
    expect_close(z1, ref1, K, "epilogue " + std::to_string(static_cast<int>(e.kind)) + " " + geom_str(g));
    if (e.kind == Epilogue::Kind::SiLU) expect_close(z2, ref2, K, "silu " + geom_str(g));
  }
}

// Pointwise convolutions on small planes, which two threads share by panels of output channels
// (a partial last panel, two groups, batch 2) rather than by columns, with each epilogue.
TEST_P(RuntimeKernels, ConvPointwiseSmallPlaneMatchesNaive) {
  ThreadPool pool(2);
  const GemmPool use(pool);
  int iter = 0;
  for (const int64_t side : {14, 20, 28, 31})
    for (const int64_t group : {1, 2}) {
      ConvGeom g{2, 24 * group, 64 * group, group, {side, side}, {1, 1}, {side, side}, {1, 1}, {1, 1}, {0, 0}, {0, 0}};
      const Epilogue e = test::epilogue_in_turn(iter);
      const auto x = test::random_floats(static_cast<size_t>(g.N * g.C * side * side), 800 + iter);
      const auto w = test::random_floats(static_cast<size_t>(g.M * 24), 900 + iter);
      const auto b = test::random_floats(static_cast<size_t>(g.M), 1000 + iter);
      const size_t n = static_cast<size_t>(g.N * g.M * side * side);
      std::vector<float> ref(n), ref1(n), ref2(n), opt(n, 123.f), z1(n, 123.f), z2(n, 123.f);
      const auto addend = test::random_floats(n, 1050 + iter);
      conv_naive(g, x.data(), w.data(), b.data(), ref.data());
      epilogue_naive(e, ref.data(), ref1.data(), ref2.data(), static_cast<int64_t>(n), addend.data());
      conv_auto(g, x.data(), w.data(), b.data(), opt.data(), pool, {&e, z1.data(), z2.data(), addend.data()});
      expect_close(opt, ref, 24, "conv " + geom_str(g));
      expect_close(z1, ref1, 24, "epilogue " + geom_str(g));
      if (e.kind == Epilogue::Kind::SiLU) expect_close(z2, ref2, 24, "silu " + geom_str(g));
      ++iter;
    }
}

// A 3x3 convolution onto a 10x10 plane (100 columns) with K + M over 1300: its whole blocks of
// columns would be 64 and 36 (4 and 3 vectors), so two threads share it by panels of output
// channels instead (4 each). Each epilogue, batch 2, against the naive Conv; two threads give the
// bits of one.
TEST_P(RuntimeKernels, ConvUnevenBlocksSplitByPanelsMatchesNaive) {
  ThreadPool pool(2), one(1);
  for (int iter = 0; iter < 7; ++iter) {
    ConvGeom g{2, 146, 48, 1, {10, 10}, {3, 3}, {10, 10}, {1, 1}, {1, 1}, {1, 1}, {1, 1}};
    const Epilogue e = test::epilogue_in_turn(iter);
    const bool with_act = iter < 6;
    const auto x = test::random_floats(static_cast<size_t>(2 * 146 * 100), 1200 + iter);
    const auto w = test::random_floats(static_cast<size_t>(48 * 146 * 9), 1300 + iter);
    const auto b = test::random_floats(48, 1400 + iter);
    const size_t n = static_cast<size_t>(2 * 48 * 100);
    const auto addend = test::random_floats(n, 1500 + iter);
    std::vector<float> ref(n), ref1(n), ref2(n);
    conv_naive(g, x.data(), w.data(), b.data(), ref.data());
    epilogue_naive(e, ref.data(), ref1.data(), ref2.data(), static_cast<int64_t>(n), addend.data());
    std::vector<float> y[2], z1[2], z2[2];
    for (int t = 0; t < 2; ++t) {
      ThreadPool& p = t == 0 ? one : pool;
      const GemmPool use(p);
      y[t].assign(n, 123.f);
      z1[t].assign(n, 123.f);
      z2[t].assign(n, 123.f);
      conv_auto(g, x.data(), w.data(), b.data(), y[t].data(), p, with_act ? EpilogueOut{&e, z1[t].data(), z2[t].data(), addend.data()} : EpilogueOut{});
      const std::string what = geom_str(g) + (t == 0 ? " 1 thread" : " 2 threads");
      expect_close(y[t], ref, 146 * 9, "conv " + what);
      if (with_act) expect_close(z1[t], ref1, 146 * 9, "epilogue " + what);
      if (with_act && e.kind == Epilogue::Kind::SiLU) expect_close(z2[t], ref2, 146 * 9, "silu " + what);
    }
    EXPECT_EQ(y[0], y[1]) << "iteration " << iter;
    if (with_act) {
      EXPECT_EQ(z1[0], z1[1]) << "iteration " << iter;
    }
  }
}

// Convolutions onto 7x7 and 10x10 planes, which gemm_lanes (AVX-512) and gemm_lanes_avx2 take
// where they win: 1x1, 3x3 and 3x3 stride 2 (im2col), output channels in whole and partial row
// blocks, batch 2, on one thread (whole column blocks) and two (row blocks split between them),
// with each epilogue, against the naive Conv and activation.
TEST_P(RuntimeKernels, ConvSmallPlanesMatchNaive) {
  int iter = 0;
  for (const int threads : {1, 2}) {
    ThreadPool pool(threads);
    const GemmPool use(pool);
    for (const int64_t out : {7, 10})
      for (const int64_t k : {1, 3})
        for (const int64_t stride : {1, 2}) {
          if (k == 1 && stride == 2) continue;
          const int64_t M = iter % 2 ? 160 : 40, C = 48, pad = k / 2, in = (out - 1) * stride + 1 + 2 * pad - k + 1 + (stride - 1);
          ConvGeom g{2, C, M, 1, {in, in}, {k, k}, {out, out}, {stride, stride}, {1, 1}, {pad, pad}, {pad, pad}};
          ASSERT_EQ((in + 2 * pad - k) / stride + 1, out);
          const Epilogue e = test::epilogue_in_turn(iter);
          const int64_t Kdim = C * k * k;
          const auto x = test::random_floats(static_cast<size_t>(g.N * C * in * in), 5100 + iter);
          const auto w = test::random_floats(static_cast<size_t>(M * Kdim), 5200 + iter);
          const auto b = test::random_floats(static_cast<size_t>(M), 5300 + iter);
          const size_t n = static_cast<size_t>(g.N * M * out * out);
          std::vector<float> ref(n), ref1(n), ref2(n), opt(n, 123.f), z1(n, 123.f), z2(n, 123.f);
          const auto addend = test::random_floats(n, 5400 + iter);
          conv_naive(g, x.data(), w.data(), b.data(), ref.data());
          epilogue_naive(e, ref.data(), ref1.data(), ref2.data(), static_cast<int64_t>(n), addend.data());
          conv_auto(g, x.data(), w.data(), b.data(), opt.data(), pool, {&e, z1.data(), z2.data(), addend.data()});
          const std::string what = geom_str(g) + " threads " + std::to_string(threads);
          expect_close(opt, ref, Kdim, "conv " + what);
          expect_close(z1, ref1, Kdim, "epilogue " + what);
          if (e.kind == Epilogue::Kind::SiLU) expect_close(z2, ref2, Kdim, "silu " + what);
          ++iter;
        }
  }
}

// The 3x3 and 5x5 depthwise kernels (strides 1 and 2, every padding they take, planes narrower
// and wider than a step of 16 outputs) with each epilogue, against the naive Conv and activation.
// Outputs are cache-line aligned, as a session's are, so that planes of whole vectors
// (mobilenet's 56x56) take the streamed stores.
TEST_P(RuntimeKernels, ConvDepthwise3x3MatchesNaive) {
  if (!conv_depthwise3x3_applies(ConvGeom{1, 2, 2, 2, {5, 5}, {3, 3}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}})) GTEST_SKIP() << "needs AVX2 + FMA: the " << isa_name(GetParam()) << " path runs the general kernels";
  std::mt19937 rng(17);
  ThreadPool pool(2);
  auto r = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  using Aligned = std::vector<float, CacheAligned<float>>;
  auto check = [&](const ConvGeom& g, int iter) {
    ASSERT_TRUE(conv_depthwise3x3_applies(g)) << geom_str(g);
    const Epilogue e = test::epilogue_in_turn(iter);
    const bool with_act = iter % 7 != 6;  // (7: each epilogue kind in turn meets both cases)
    const auto x = test::random_floats(static_cast<size_t>(g.N * g.C * product(g.in)), 800 + iter);
    const int64_t taps = product(g.kernel);
    const auto w = test::random_floats(static_cast<size_t>(g.M * taps), 900 + iter);
    const auto b = test::random_floats(static_cast<size_t>(g.M), 1000 + iter);
    const float* bias = iter % 4 < 2 ? b.data() : nullptr;
    const size_t n = static_cast<size_t>(g.N * g.M * product(g.out));
    std::vector<float> ref(n), ref1(n), ref2(n);
    Aligned opt(n, 123.f), z1(n, 123.f), z2(n, 123.f);
    const auto addend = test::random_floats(n, 1100 + iter);
    conv_naive(g, x.data(), w.data(), bias, ref.data());
    epilogue_naive(e, ref.data(), ref1.data(), ref2.data(), static_cast<int64_t>(n), addend.data());
    conv_depthwise3x3(g, x.data(), w.data(), bias, opt.data(), pool, with_act ? EpilogueOut{&e, z1.data(), z2.data(), addend.data()} : EpilogueOut{});
    auto plain = [](const Aligned& v) { return std::vector<float>(v.begin(), v.end()); };
    expect_close(plain(opt), ref, taps, "depthwise3x3 " + geom_str(g));
    if (!with_act) return;
    expect_close(plain(z1), ref1, taps, "depthwise3x3 epilogue " + std::to_string(static_cast<int>(e.kind)) + " " + geom_str(g));
    if (e.kind == Epilogue::Kind::SiLU) expect_close(plain(z2), ref2, taps, "depthwise3x3 silu " + geom_str(g));
  };
  auto geom = [](int64_t N, int64_t C, int64_t s, std::vector<int64_t> pb, std::vector<int64_t> pe, std::vector<int64_t> in, int64_t k = 3) {
    ConvGeom g;
    g.N = N;
    g.C = g.M = g.group = C;
    g.in = in;
    g.pad_begin = pb;
    g.pad_end = pe;
    for (size_t d = 0; d < 2; ++d) {
      g.kernel.push_back(k);
      g.stride.push_back(s);
      g.dilation.push_back(1);
      g.out.push_back(conv_out_dim(in[d], k, s, 1, pb[d] + pe[d]));
    }
    return g;
  };
  for (int iter = 0; iter < 90; ++iter) {
    const int64_t N = r(1, 2), C = r(2, 7);
    std::vector<int64_t> pb, pe, in;
    for (int d = 0; d < 2; ++d) {
      pb.push_back(r(0, 2));
      pe.push_back(r(0, 2));
      in.push_back(iter % 3 == 0 ? r(3, 9) : r(3, 75));
    }
    check(geom(N, C, iter % 2 + 1, pb, pe, in), iter);
  }
  // Rows of whole vectors, not of whole steps of 16 (the streamed tail), planes of whole lines.
  int iter = 90;
  const std::vector<int64_t> one{1, 1};
  for (const ConvGeom& g : {geom(1, 3, 1, one, one, {56, 56}), geom(1, 2, 2, one, one, {112, 112}), geom(1, 3, 1, one, one, {24, 24}),
                            geom(1, 4, 1, one, one, {2, 8}), geom(1, 2, 2, one, one, {16, 48}), geom(1, 2, 2, one, one, {120, 160}),
                            geom(1, 3, 2, one, one, {56, 56}), geom(1, 2, 1, one, one, {7, 7}), geom(1, 2, 2, one, one, {15, 33})})
    for (int k = 0; k < 5; ++k) check(g, iter++);
  // Stride 1 with "same" padding (AVX-512: the plane as one run of H W outputs): rows narrower
  // and wider than a vector, not whole vectors, a plane of one row or one column, planes whose
  // run ends in a partial vector; the taps off the row's ends masked, the rows above and below 0.
  auto same_planes = [&](int64_t k) {
    const std::vector<int64_t> p{k / 2, k / 2};
    for (int64_t w : {1, 2, 3, 5, 7, 8, 13, 14, 16, 17, 20, 28, 31, 33, 56})
      for (int64_t h : {1, 2, 3, 7, 9}) check(geom(1 + (w + h) % 2, 2, 1, p, p, {h, w}, k), iter++);
  };
  same_planes(3);
  // 5x5: every padding up to 4, and EfficientNet's planes with its padding of 2.
  for (int i = 0; i < 60; ++i, ++iter) {
    const int64_t N = r(1, 2), C = r(2, 5);
    std::vector<int64_t> pb, pe, in;
    for (int d = 0; d < 2; ++d) {
      pb.push_back(i % 2 ? 2 : r(0, 4));
      pe.push_back(r(0, 4));
      in.push_back(i % 3 == 0 ? r(5, 12) : r(5, 75));
    }
    check(geom(N, C, i % 4 < 2 ? 1 : 2, pb, pe, in, 5), iter);
  }
  const std::vector<int64_t> two{2, 2};
  for (const ConvGeom& g : {geom(1, 2, 2, two, two, {112, 112}, 5), geom(1, 3, 1, two, two, {28, 28}, 5), geom(1, 2, 2, two, two, {56, 56}, 5),
                            geom(1, 2, 1, two, two, {14, 14}, 5), geom(1, 2, 1, two, two, {7, 7}, 5), geom(1, 2, 2, two, two, {29, 31}, 5)})
    for (int k = 0; k < 5; ++k) check(g, iter++);
  same_planes(5);
  // AVX2: stride 1 with "same" padding as one run on planes of up to 1024 outputs (5x5: 256), the
  // planes at and past those bounds; the stride-2 3x3 straight from rows of 96 to 191 (the steps
  // at a row's ends masked), every padding, odd and even widths, and the rows past that bound.
  for (const auto& [h, w] : {std::pair<int64_t, int64_t>{32, 32}, {31, 33}, {33, 32}, {16, 16}, {15, 17}, {17, 16}, {4, 256}, {1, 1025}})
    for (int64_t k : {3, 5}) {
      const std::vector<int64_t> p{k / 2, k / 2};
      check(geom(1, 2, 1, p, p, {h, w}, k), iter++);
    }
  for (int64_t w : {96, 97, 99, 112, 113, 127, 160, 191, 192, 208})
    for (int i = 0; i < 7; ++i) {
      const std::vector<int64_t> pb{r(0, 2), r(0, 2)}, pe{r(0, 2), r(0, 2)};
      check(geom(1 + i % 2, 2, 2, pb, pe, {r(3, 7), w}), iter++);
    }
}

// gemm_packed on its own: row counts that are not a multiple of the panel, column tails, a
// column range inside a wider C, a range of panels (rows outside it untouched: AVX-512 stages y
// and streams it out a pair of panels at a time), several column blocks, bias and each in-register
// epilogue.
TEST_P(RuntimeKernels, GemmPackedMatchesNaive) {
  if (!gemm_packed_available()) GTEST_SKIP() << "needs AVX2 + FMA: the " << isa_name(GetParam()) << " path runs the general kernels";
  std::mt19937 rng(19);
  auto r = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  for (int iter = 0; iter < 66; ++iter) {
    // The last iterations: a K and N whose B takes several of AVX2's column blocks (256 KB each).
    const bool blocks = iter >= 60;
    const int64_t M = r(1, 40), K = blocks ? r(600, 900) : r(1, 70), N = blocks ? r(120, 300) : r(1, 90), ldb = N + r(0, 5), ldc = N + r(0, 5);
    const int64_t n0 = r(0, static_cast<int>(N) - 1), n1 = r(static_cast<int>(n0) + 1, static_cast<int>(N));
    const int64_t panels = (M + kPanelRows - 1) / kPanelRows, q0 = iter % 3 == 0 ? r(0, static_cast<int>(panels) - 1) : 0;
    const int64_t q1 = iter % 3 == 0 ? r(static_cast<int>(q0) + 1, static_cast<int>(panels)) : panels;
    const auto a = test::random_floats(static_cast<size_t>(M * K), 1100 + iter);
    const auto bm = test::random_floats(static_cast<size_t>(K * ldb), 1200 + iter);
    const auto bias = test::random_floats(static_cast<size_t>(M), 1300 + iter);
    const Epilogue e = test::epilogue_in_turn(iter);
    std::vector<float> c(static_cast<size_t>(M * ldc), 123.f), z(c.size(), 123.f), zz(c.size(), 123.f);
    const auto addend = test::random_floats(c.size(), 1400 + iter);
    const EpilogueOut act{&e, z.data(), zz.data(), addend.data()};
    const PackedA pa = pack_a(a.data(), M, K, K);
    ASSERT_EQ(pa.panels(), panels);
    gemm_packed(pa, q0, q1, bm.data(), ldb, n0, n1, GemmOut{c.data(), ldc, iter % 2 ? bias.data() : nullptr, &act, 0});
    std::vector<float> ref(static_cast<size_t>(M * ldc), 123.f), refz(ref.size(), 123.f), refzz(ref.size(), 123.f);
    gemm_naive(false, false, M, N, K, 1.f, a.data(), K, bm.data(), ldb, 0.f, ref.data(), ldc);
    for (int64_t m = 0; m < M; ++m)
      for (int64_t j = 0; j < ldc; ++j) {
        const size_t i = static_cast<size_t>(m * ldc + j);
        if (j < n0 || j >= n1 || m < q0 * kPanelRows || m >= q1 * kPanelRows) {  // outside the range: untouched
          ref[i] = 123.f;
          continue;
        }
        if (iter % 2) ref[i] += bias[static_cast<size_t>(m)];
        epilogue_naive(e, &ref[i], &refz[i], &refzz[i], 1, &addend[i]);
      }
    expect_close(c, ref, K, "gemm_packed M" + std::to_string(M) + " K" + std::to_string(K) + " N" + std::to_string(N) + " panels [" + std::to_string(q0) + ", " + std::to_string(q1) + ")");
    expect_close(z, refz, K, "gemm_packed epilogue " + std::to_string(static_cast<int>(e.kind)));
    if (e.kind == Epilogue::Kind::SiLU) expect_close(zz, refzz, K, "gemm_packed silu");
  }
}

// gemm_lanes (rows in the vector lanes, transposed stores): partial row blocks, column tails, a
// column range inside a wider C, a range of row blocks, bias and each epilogue.
TEST_P(RuntimeKernels, GemmLanesMatchesNaive) {
  if (!gemm_lanes_wins(64, 49, 512)) GTEST_SKIP() << "needs AVX-512: the " << isa_name(GetParam()) << " path runs gemm_packed";
  std::mt19937 rng(31);
  auto r = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  for (int iter = 0; iter < 60; ++iter) {
    const int64_t M = r(1, 100), K = r(1, 70), N = r(1, 80), ldb = N + r(0, 5), ldc = N + r(0, 5);
    const int64_t n0 = r(0, static_cast<int>(N) - 1), n1 = r(static_cast<int>(n0) + 1, static_cast<int>(N));
    const int64_t blocks = lane_blocks(M), b0 = iter % 3 == 0 ? r(0, static_cast<int>(blocks) - 1) : 0;
    const int64_t b1 = iter % 3 == 0 ? r(static_cast<int>(b0) + 1, static_cast<int>(blocks)) : blocks;
    const auto a = test::random_floats(static_cast<size_t>(M * K), 2300 + iter);
    const auto bm = test::random_floats(static_cast<size_t>(K * ldb), 2400 + iter);
    const auto bias = test::random_floats(static_cast<size_t>(M), 2500 + iter);
    const Epilogue e = test::epilogue_in_turn(iter);
    std::vector<float> c(static_cast<size_t>(M * ldc), 123.f), z(c.size(), 123.f), zz(c.size(), 123.f);
    const auto addend = test::random_floats(c.size(), 2600 + iter);
    const EpilogueOut act{&e, z.data(), zz.data(), addend.data()};
    const PackedA pa = pack_a(a.data(), M, K, K);
    gemm_lanes(pa, b0, b1, bm.data(), ldb, n0, n1, GemmOut{c.data(), ldc, iter % 2 ? bias.data() : nullptr, &act, 0});
    std::vector<float> ref(static_cast<size_t>(M * ldc), 123.f), refz(ref.size(), 123.f), refzz(ref.size(), 123.f);
    gemm_naive(false, false, M, N, K, 1.f, a.data(), K, bm.data(), ldb, 0.f, ref.data(), ldc);
    for (int64_t m = 0; m < M; ++m)
      for (int64_t j = 0; j < ldc; ++j) {
        const size_t i = static_cast<size_t>(m * ldc + j);
        if (j < n0 || j >= n1 || m < b0 * kLaneRows || m >= b1 * kLaneRows) {  // outside the range: untouched
          ref[i] = 123.f;
          continue;
        }
        if (iter % 2) ref[i] += bias[static_cast<size_t>(m)];
        epilogue_naive(e, &ref[i], &refz[i], &refzz[i], 1, &addend[i]);
      }
    const std::string what = "gemm_lanes M" + std::to_string(M) + " K" + std::to_string(K) + " N" + std::to_string(N);
    expect_close(c, ref, K, what);
    expect_close(z, refz, K, what + " epilogue " + std::to_string(static_cast<int>(e.kind)));
    if (e.kind == Epilogue::Kind::SiLU) expect_close(zz, refzz, K, what + " silu");
  }
}

// gemm_lanes on the planes it is for and ragged ones: 7, 14, 49 and 196 columns and odd counts
// (tiles of 14, of 7 and the 1-6 column tails), rows in partial blocks of 32 (under 16, 16-31 and
// past a whole block), with no epilogue, Relu, Clip, SiLU and Add: every element of y and of the
// epilogue's outputs against the naive product, and nothing written outside [M, N).
TEST_P(RuntimeKernels, GemmLanesPlanesAndEpilogues) {
  if (!gemm_lanes_wins(64, 49, 512)) GTEST_SKIP() << "needs AVX-512: the " << isa_name(GetParam()) << " path runs gemm_packed";
  const Epilogue::Kind kinds[] = {Epilogue::Kind::Relu, Epilogue::Kind::Clip, Epilogue::Kind::SiLU, Epilogue::Kind::Add};
  int seed = 0;
  for (const int64_t N : {7, 14, 49, 196, 1, 5, 13, 23, 33})
    for (const int64_t M : {9, 16, 32, 45, 100})
      for (int kind = -1; kind < 4; ++kind) {
        const int64_t K = 17 + 11 * (seed % 5), ldc = N + (seed % 3 == 0 ? 3 : 0);
        ++seed;
        const auto a = test::random_floats(static_cast<size_t>(M * K), 3300 + seed);
        const auto bm = test::random_floats(static_cast<size_t>(K * N), 3400 + seed);
        const auto bias = test::random_floats(static_cast<size_t>(M), 3500 + seed);
        Epilogue e;
        if (kind >= 0) e.kind = kinds[kind];
        e.lo = 0.f;
        e.hi = 0.5f;
        std::vector<float> c(static_cast<size_t>(M * ldc + 20), 123.f), z(c.size(), 123.f), zz(c.size(), 123.f);
        const auto addend = test::random_floats(c.size(), 3600 + seed);
        const EpilogueOut act{kind >= 0 ? &e : nullptr, kind >= 0 ? z.data() : nullptr, e.kind == Epilogue::Kind::SiLU && kind >= 0 ? zz.data() : nullptr,
                              addend.data()};
        const PackedA pa = pack_a(a.data(), M, K, K);
        gemm_lanes(pa, 0, lane_blocks(M), bm.data(), N, 0, N, GemmOut{c.data(), ldc, bias.data(), &act, 0});
        std::vector<float> ref(c.size(), 123.f), refz(c.size(), 123.f), refzz(c.size(), 123.f);
        gemm_naive(false, false, M, N, K, 1.f, a.data(), K, bm.data(), N, 0.f, ref.data(), ldc);
        for (size_t i = 0; i < ref.size(); ++i) {
          const int64_t m = static_cast<int64_t>(i) / ldc, j = static_cast<int64_t>(i) % ldc;
          if (m >= M || j >= N) {
            ref[i] = 123.f;
            continue;
          }
          ref[i] += bias[static_cast<size_t>(m)];
          if (kind >= 0) epilogue_naive(e, &ref[i], &refz[i], &refzz[i], 1, &addend[i]);
        }
        const std::string what = "gemm_lanes M" + std::to_string(M) + " N" + std::to_string(N) + " K" + std::to_string(K) + " epilogue " + std::to_string(kind);
        expect_close(c, ref, K, what);
        expect_close(z, refz, K, what + " z1");
        expect_close(zz, refzz, K, what + " z2");
      }
}

// gemm_lanes with K taken in chunks (256 rows, the sums kept between them) and its column tiles,
// copied, taken in groups when they pass 4 MB (every row block over one group's chunks, then the
// next group): 196 columns (14 tiles of 14) at K = 1500, 5 chunks and a partial one; 49 columns
// (14 + 14 + 14 + 7) at K = 4608, ResNet-50's last 3x3, 18 chunks; 196 columns at K = 4800, two
// groups of 7 (14 tiles of 4800 x 16 floats pass 4 MB; at K = 4608 they fit in one); 49 at
// K = 200, one chunk; a column range and a range of row blocks inside them.
// Every element against the naive product, with Relu, and nothing written outside the range.
TEST_P(RuntimeKernels, GemmLanesGroupsOfColumnTiles) {
  if (!gemm_lanes_wins(64, 49, 512)) GTEST_SKIP() << "needs AVX-512: the " << isa_name(GetParam()) << " path runs gemm_packed";
  struct Case {
    int64_t M, N, K, n0, n1, b0, b1;
  };
  int seed = 0;
  for (const Case& t : {Case{45, 196, 1500, 0, 196, 0, 2}, Case{70, 49, 4608, 0, 49, 0, 3}, Case{40, 196, 4800, 0, 196, 0, 2}, Case{64, 49, 200, 0, 49, 0, 2},
                        Case{100, 196, 1500, 9, 187, 1, 3}}) {
    ++seed;
    const auto a = test::random_floats(static_cast<size_t>(t.M * t.K), 4300 + seed);
    const auto bm = test::random_floats(static_cast<size_t>(t.K * t.N), 4400 + seed);
    const auto bias = test::random_floats(static_cast<size_t>(t.M), 4500 + seed);
    const Epilogue e{Epilogue::Kind::Relu};
    std::vector<float> c(static_cast<size_t>(t.M * t.N), 123.f), z(c.size(), 123.f);
    const EpilogueOut act{&e, z.data(), nullptr, nullptr};
    const PackedA pa = pack_a(a.data(), t.M, t.K, t.K);
    gemm_lanes(pa, t.b0, t.b1, bm.data(), t.N, t.n0, t.n1, GemmOut{c.data(), t.N, bias.data(), &act, 0});
    std::vector<float> ref(c.size(), 123.f), refz(c.size(), 123.f);
    gemm_naive(false, false, t.M, t.N, t.K, 1.f, a.data(), t.K, bm.data(), t.N, 0.f, ref.data(), t.N);
    for (size_t i = 0; i < ref.size(); ++i) {
      const int64_t m = static_cast<int64_t>(i) / t.N, j = static_cast<int64_t>(i) % t.N;
      if (j < t.n0 || j >= t.n1 || m < t.b0 * kLaneRows || m >= std::min(t.M, t.b1 * kLaneRows)) {
        ref[i] = 123.f;
        continue;
      }
      ref[i] += bias[static_cast<size_t>(m)];
      refz[i] = std::max(ref[i], 0.f);
    }
    const std::string what = "gemm_lanes M" + std::to_string(t.M) + " N" + std::to_string(t.N) + " K" + std::to_string(t.K);
    expect_close(c, ref, t.K, what);
    expect_close(z, refz, t.K, what + " relu");
  }
}

// gemm_lanes_avx2 (16 rows in the lanes x 4-6 columns, K in chunks of 64 kept between passes):
// the planes it is for and ragged ones (N from 1, rows under 16, in partial blocks of 16 and whole
// ones, K under, at and past a chunk), column ranges inside a wider C and ranges of row blocks, with
// no epilogue, Relu, Clip, SiLU and Add. Every element of y and of the epilogue's outputs against
// the naive product, nothing written outside the range, and the same bits as gemm_packed (each
// sum taken in the same order).
TEST_P(RuntimeKernels, GemmLanesAvx2MatchesNaiveAndGemmPacked) {
  if (!gemm_lanes_avx2_wins(64, 49, 512)) GTEST_SKIP() << "the AVX2 path only: the " << isa_name(GetParam()) << " path runs gemm_packed or gemm_lanes";
  const Epilogue::Kind kinds[] = {Epilogue::Kind::Relu, Epilogue::Kind::Clip, Epilogue::Kind::SiLU, Epilogue::Kind::Add};
  std::mt19937 rng(43);
  auto r = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  int seed = 0;
  for (const int64_t N : {49, 196, 7, 1, 5, 13, 23, 100})
    for (const int64_t M : {9, 16, 32, 45, 100})
      for (int kind = -1; kind < 4; ++kind) {
        const int64_t Ks[] = {17, 64, 65, 150, 300};
        const int64_t K = Ks[seed % 5], ldb = N + (seed % 4 == 1 ? 2 : 0), ldc = N + (seed % 3 == 0 ? 3 : 0);
        // Every third case a column range and a range of row blocks; the others whole.
        const bool part = seed % 3 == 2;
        const int64_t n0 = part ? r(0, static_cast<int>(N) - 1) : 0, n1 = part ? r(static_cast<int>(n0) + 1, static_cast<int>(N)) : N;
        const int64_t blocks = (M + kLaneRowsAvx2 - 1) / kLaneRowsAvx2, b0 = part ? r(0, static_cast<int>(blocks) - 1) : 0;
        const int64_t b1 = part ? r(static_cast<int>(b0) + 1, static_cast<int>(blocks)) : blocks;
        ++seed;
        const auto a = test::random_floats(static_cast<size_t>(M * K), 4300 + seed);
        const auto bm = test::random_floats(static_cast<size_t>(K * ldb), 4400 + seed);
        const auto bias = test::random_floats(static_cast<size_t>(M), 4500 + seed);
        Epilogue e;
        if (kind >= 0) e.kind = kinds[kind];
        e.lo = 0.f;
        e.hi = 0.5f;
        const size_t size = static_cast<size_t>(M * ldc + 20);
        const auto addend = test::random_floats(size, 4600 + seed);
        const PackedA pa = pack_a(a.data(), M, K, K);
        // y, z1, z2 from gemm_lanes_avx2 (lanes) or gemm_packed over the same rows and columns.
        auto run = [&](bool lanes) {
          std::vector<float> c(size, 123.f), z(size, 123.f), zz(size, 123.f);
          const EpilogueOut act{kind >= 0 ? &e : nullptr, kind >= 0 ? z.data() : nullptr, e.kind == Epilogue::Kind::SiLU && kind >= 0 ? zz.data() : nullptr,
                                addend.data()};
          const GemmOut out{c.data(), ldc, seed % 2 ? bias.data() : nullptr, &act, 0};
          if (lanes) gemm_lanes_avx2(pa, b0, b1, bm.data(), ldb, n0, n1, out);
          else
            for (int64_t p = 0; p < pa.panels(); ++p)  // the panels that meet rows [16 b0, 16 b1)
              if (p * kPanelRows < b1 * kLaneRowsAvx2 && (p + 1) * kPanelRows > b0 * kLaneRowsAvx2) {
                // Run over a copy, and keep only the panel's rows inside the range (a panel may
                // straddle a block's edge: 16 is not a multiple of 6).
                std::vector<float> c2 = c, z2 = z, zz2 = zz;
                const EpilogueOut act2{act.epi, act.z1 ? z2.data() : nullptr, act.z2 ? zz2.data() : nullptr, addend.data()};
                gemm_packed(pa, p, p + 1, bm.data(), ldb, n0, n1, GemmOut{c2.data(), ldc, out.bias, &act2, 0});
                for (int64_t m = std::max(p * kPanelRows, b0 * kLaneRowsAvx2); m < std::min({M, (p + 1) * kPanelRows, b1 * kLaneRowsAvx2}); ++m)
                  for (int64_t j = 0; j < ldc; ++j) {
                    const size_t i = static_cast<size_t>(m * ldc + j);
                    c[i] = c2[i];
                    z[i] = z2[i];
                    zz[i] = zz2[i];
                  }
              }
          return std::array<std::vector<float>, 3>{c, z, zz};
        };
        const auto got = run(true), packed = run(false);
        std::vector<float> ref(size, 123.f), refz(size, 123.f), refzz(size, 123.f);
        gemm_naive(false, false, M, N, K, 1.f, a.data(), K, bm.data(), ldb, 0.f, ref.data(), ldc);
        for (size_t i = 0; i < ref.size(); ++i) {
          const int64_t m = static_cast<int64_t>(i) / ldc, j = static_cast<int64_t>(i) % ldc;
          if (m >= M || j < n0 || j >= n1 || m < b0 * kLaneRowsAvx2 || m >= b1 * kLaneRowsAvx2) {  // outside the range: untouched
            ref[i] = 123.f;
            continue;
          }
          if (seed % 2) ref[i] += bias[static_cast<size_t>(m)];
          if (kind >= 0) epilogue_naive(e, &ref[i], &refz[i], &refzz[i], 1, &addend[i]);
        }
        const std::string what = "gemm_lanes_avx2 M" + std::to_string(M) + " N" + std::to_string(N) + " [" + std::to_string(n0) + ", " +
                                 std::to_string(n1) + ") blocks [" + std::to_string(b0) + ", " + std::to_string(b1) + ") K" + std::to_string(K) +
                                 " epilogue " + std::to_string(kind);
        expect_close(got[0], ref, K, what);
        expect_close(got[1], refz, K, what + " z1");
        expect_close(got[2], refzz, K, what + " z2");
        for (int o = 0; o < 3; ++o) {
          size_t differ = 0;
          for (size_t i = 0; i < size; ++i) differ += std::bit_cast<uint32_t>(got[o][i]) != std::bit_cast<uint32_t>(packed[o][i]);
          EXPECT_EQ(differ, 0u) << what << ": output " << o << " differs from gemm_packed's";
        }
      }
}

namespace {

std::vector<uint16_t> to_halves(const std::vector<float>& f) {
  std::vector<uint16_t> h(f.size());
  nnxr::model::float_to_half(f.data(), h.data(), f.size());
  return h;
}
std::vector<float> to_floats(const uint16_t* h, size_t n) {
  std::vector<float> f(n);
  nnxr::model::half_to_float(h, f.data(), n);
  return f;
}
// Float16 results that are exactly the float ones rounded once (to nearest even).
void expect_rounded(const std::vector<uint16_t>& h, const std::vector<float>& f, const std::string& what) {
  ASSERT_EQ(h.size(), f.size()) << what;
  size_t bad = 0;
  for (size_t i = 0; i < h.size(); ++i)
    if (h[i] != nnxr::model::float_to_half(f[i]) && ++bad <= 3)
      ADD_FAILURE() << what << ": element " << i << " float16 " << nnxr::model::half_to_float(h[i]) << " float " << f[i];
  EXPECT_EQ(bad, 0u) << what;
}

}  // namespace

// gemm_packed_f16 (B and C in float16, converted in registers) is gemm_packed on B widened, each
// output and its Relu rounded once; columns outside [n0, n1) untouched. Values in [-8, 8] so that
// sums reach the float16 range's coarser steps.
TEST_P(RuntimeKernels, GemmPackedF16MatchesFloat) {
  if (!gemm_packed_available()) GTEST_SKIP() << "needs AVX2 + FMA + F16C: the " << isa_name(GetParam()) << " path widens to float";
  std::mt19937 rng(23);
  auto r = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  for (int iter = 0; iter < 80; ++iter) {
    // Many panels with few columns too (the copied-tile branch).
    const int64_t M = iter % 4 == 3 ? r(40, 120) : r(1, 40), K = r(1, 70), N = iter % 4 == 3 ? r(1, 20) : r(1, 130);
    const int64_t ldb = N + r(0, 5), ldc = N + r(0, 5);
    const int64_t n0 = r(0, static_cast<int>(N) - 1), n1 = r(static_cast<int>(n0) + 1, static_cast<int>(N));
    const auto a = test::random_floats(static_cast<size_t>(M * K), 1600 + iter);
    const auto bh = to_halves(test::random_floats(static_cast<size_t>(K * ldb), 1700 + iter, -8.f, 8.f));
    const auto bf = to_floats(bh.data(), bh.size());
    const auto bias = test::random_floats(static_cast<size_t>(M), 1800 + iter);
    const bool relu = iter % 3 != 0;
    const float* pbias = iter % 2 ? bias.data() : nullptr;
    const PackedA pa = pack_a(a.data(), M, K, K);
    std::vector<uint16_t> c(static_cast<size_t>(M * ldc), 0x7777), z(c.size(), 0x7777);
    gemm_packed_f16(pa, 0, pa.panels(), bh.data(), ldb, n0, n1, GemmOutF16{c.data(), ldc, pbias, relu ? z.data() : nullptr});
    const Epilogue e{Epilogue::Kind::Relu};
    std::vector<float> cf(c.size(), 123.f), zf(c.size(), 123.f);
    const EpilogueOut act{&e, zf.data(), nullptr, nullptr};
    gemm_packed(pa, 0, pa.panels(), bf.data(), ldb, n0, n1, GemmOut{cf.data(), ldc, pbias, &act, 0});
    std::vector<uint16_t> c_in, z_in;
    std::vector<float> cf_in, zf_in;
    for (int64_t m = 0; m < M; ++m)
      for (int64_t j = 0; j < ldc; ++j) {
        const size_t i = static_cast<size_t>(m * ldc + j);
        if (j < n0 || j >= n1) {
          EXPECT_EQ(c[i], 0x7777) << "written outside the columns at " << m << "," << j;
          EXPECT_EQ(z[i], 0x7777) << "relu written outside the columns at " << m << "," << j;
          continue;
        }
        c_in.push_back(c[i]);
        cf_in.push_back(cf[i]);
        z_in.push_back(z[i]);
        zf_in.push_back(zf[i]);
      }
    const std::string what = "gemm_packed_f16 M" + std::to_string(M) + " K" + std::to_string(K) + " N" + std::to_string(N);
    expect_rounded(c_in, cf_in, what);
    if (relu) expect_rounded(z_in, zf_in, what + " relu");
  }
}

// conv_im2col on wide planes (rows of up to 70 columns: several 16-output chunks per row, and
// blocks of columns that start and end inside a row), widths 1 to 7 with stride 1 or 2 along the
// row and paddings up to 3 (taps that fall wholly outside the row), against the naive reference.
// With AVX-512 this is the masked-load im2col (im2col_wide_avx512).
TEST_P(RuntimeKernels, ConvIm2colWidePlanesMatchNaive) {
  std::mt19937 rng(2024);
  auto r = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  ThreadPool pool(2), one(1);
  for (int iter = 0; iter < 40; ++iter) {
    ConvGeom g;
    g.N = 1;
    g.group = r(1, 2);
    g.C = g.group * r(1, 3);
    g.M = g.group * r(1, 5);
    const int64_t kw = r(1, 7), kh = r(1, 3), sw = r(1, 2), sh = r(1, 3), dh = r(1, 2);
    const int64_t pw0 = r(0, 3), pw1 = r(0, 3), ph0 = r(0, 2), ph1 = r(0, 2);
    const int64_t W = std::max<int64_t>(kw, r(1, 70)), H = std::max<int64_t>((kh - 1) * dh + 1, r(1, 24));
    g.in = {H, W};
    g.kernel = {kh, kw};
    g.stride = {sh, sw};
    g.dilation = {dh, 1};
    g.pad_begin = {ph0, pw0};
    g.pad_end = {ph1, pw1};
    g.out = {conv_out_dim(H, kh, sh, dh, ph0 + ph1), conv_out_dim(W, kw, sw, 1, pw0 + pw1)};
    const auto x = test::random_floats(static_cast<size_t>(g.N * g.C * product(g.in)), 500 + iter);
    const auto w = test::random_floats(static_cast<size_t>(g.M * (g.C / g.group) * product(g.kernel)), 600 + iter);
    const auto b = test::random_floats(static_cast<size_t>(g.M), 700 + iter);
    const size_t n = static_cast<size_t>(g.N * g.M * product(g.out));
    std::vector<float> ref(n), opt(n, 123.f);
    conv_naive(g, x.data(), w.data(), b.data(), ref.data());
    // One thread: every block of columns goes through the whole-block im2col.
    conv_im2col(g, x.data(), w.data(), b.data(), opt.data(), iter % 2 ? pool : one);
    expect_close(opt, ref, (g.C / g.group) * product(g.kernel), "wide im2col " + geom_str(g));
  }
}

namespace {

// A dense (group 1), stride-1 K x K convolution of one image of C channels into M, padded to keep
// the plane `in` (K odd).
ConvGeom dense_geom(int64_t C, int64_t M, std::vector<int64_t> in, int64_t K) {
  ConvGeom g;
  g.N = 1;
  g.group = 1;
  g.C = C;
  g.M = M;
  g.in = in;
  g.kernel = {K, K};
  g.stride = {1, 1};
  g.dilation = {1, 1};
  g.pad_begin = g.pad_end = {K / 2, K / 2};
  g.out = std::move(in);
  return g;
}

// conv_auto of the dense (group 1) convolution g against the naive Conv and activation, on random
// data seeded from seed_base + iter: with a bias two times in three, with the epilogue of this
// iteration in turn (none every seventh), its y, z1 and (SiLU) z2 each compared.
void expect_conv_auto_matches_naive(const ConvGeom& g, int iter, uint32_t seed_base, ThreadPool& pool, const std::string& name) {
  const int64_t taps = product(g.kernel);
  const bool with_act = iter % 7 != 6;
  const Epilogue e = test::epilogue_in_turn(iter);
  const uint32_t seed = seed_base + static_cast<uint32_t>(iter);
  const auto x = test::random_floats(static_cast<size_t>(g.N * g.C * product(g.in)), seed);
  const auto w = test::random_floats(static_cast<size_t>(g.M * g.C * taps), seed + 100);
  const auto b = test::random_floats(static_cast<size_t>(g.M), seed + 200);
  const float* bias = iter % 3 ? b.data() : nullptr;
  const size_t n = static_cast<size_t>(g.N * g.M * product(g.out));
  std::vector<float> ref(n), ref1(n), ref2(n), opt(n, 123.f), z1(n, 123.f), z2(n, 123.f);
  const auto addend = test::random_floats(n, seed + 300);
  conv_naive(g, x.data(), w.data(), bias, ref.data());
  epilogue_naive(e, ref.data(), ref1.data(), ref2.data(), static_cast<int64_t>(n), addend.data());
  conv_auto(g, x.data(), w.data(), bias, opt.data(), pool,
            with_act ? EpilogueOut{&e, z1.data(), z2.data(), addend.data()} : EpilogueOut{});
  const std::string what = name + " " + geom_str(g) + " epilogue " + (with_act ? std::to_string(static_cast<int>(e.kind)) : "none");
  expect_close(opt, ref, g.C * taps, what);
  if (!with_act) return;
  expect_close(z1, ref1, g.C * taps, what + " z1");
  if (e.kind == Epilogue::Kind::SiLU) expect_close(z2, ref2, g.C * taps, what + " z2");
}

}  // namespace

// The direct few-channel 3x3 convolution (conv_direct: RGB stems): C 1-4, output channels around
// the blocks (1, 2, 3, 16, 17, 32, 40: AVX-512's blocks of 16, AVX2's of 1-6), rows of 8-70
// outputs (partial last steps), paddings 0-2 on each side (rows and columns wholly in the
// padding), strides 1 and 2, batch 1-2, 1 and 2 threads, each epilogue and none, through conv_auto
// against the naive Conv and activation. It applies with AVX-512 and AVX2; on the portable set
// conv_auto takes im2col, checked the same way.
TEST_P(RuntimeKernels, ConvDirectFewChannelsMatchesNaive) {
  std::mt19937 rng(77);
  auto r = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  ThreadPool pool(2), one(1);
  const int64_t Ms[] = {1, 2, 3, 16, 17, 32, 40};
  for (int iter = 0; iter < 56; ++iter) {
    ConvGeom g;
    g.N = r(1, 2);
    g.group = 1;
    g.C = r(1, 4);
    g.M = Ms[iter % 7];
    const int64_t s = 1 + iter % 2;
    const int64_t ph0 = r(0, 2), pw0 = r(0, 2), ph1 = r(0, 2), pw1 = r(0, 2);
    const int64_t H = r(1, 20), W = r(s * 8 + 2, 2 * 70);
    g.in = {H, W};
    g.kernel = {3, 3};
    g.stride = {s, s};
    g.dilation = {1, 1};
    g.pad_begin = {ph0, pw0};
    g.pad_end = {ph1, pw1};
    g.out = {conv_out_dim(H, 3, s, 1, ph0 + ph1), conv_out_dim(W, 3, s, 1, pw0 + pw1)};
    if (g.out[0] <= 0 || g.out[1] < 8) continue;
    EXPECT_EQ(conv_direct_applies(g), GetParam() >= Isa::Avx2) << geom_str(g);
    expect_conv_auto_matches_naive(g, iter, 800, iter % 4 < 2 ? pool : one, "direct");
  }
  // Not taken: 5 input channels, a 5x5 kernel.
  ConvGeom g5 = dense_geom(5, 16, {16, 32}, 3);
  EXPECT_FALSE(conv_direct_applies(g5));
  g5.C = 3;
  g5.kernel = {5, 5};
  EXPECT_FALSE(conv_direct_applies(g5));
}

// The thin pointwise convolution (conv_pointwise_thin: 1x1 with C <= 32): C 1-32, output channels
// around the blocks of 16 (8, 15, 16, 17, 32, 40, 64), planes of 256-700 (1-D and 2-D, partial
// last steps and chunks), batch 1-2, 1 and 2 threads, each epilogue and none, through conv_auto
// against the naive Conv and activation. It applies with AVX-512 and AVX2 (x's last partial step
// copied there); on the portable set conv_auto takes the GEMM path, checked the same way.
TEST_P(RuntimeKernels, ConvPointwiseThinMatchesNaive) {
  std::mt19937 rng(78);
  auto r = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  ThreadPool pool(2), one(1);
  const int64_t Ms[] = {8, 15, 16, 17, 32, 40, 64};
  for (int iter = 0; iter < 42; ++iter) {
    ConvGeom g;
    g.N = r(1, 2);
    g.group = 1;
    g.C = iter % 5 == 0 ? 32 : r(1, 32);
    g.M = Ms[iter % 7];
    if (iter % 3 == 0) {
      g.in = {r(256, 700)};
    } else {
      g.in = {r(16, 28), r(16, 25)};
    }
    const size_t S = g.in.size();
    g.kernel.assign(S, 1);
    g.stride.assign(S, 1);
    g.dilation.assign(S, 1);
    g.pad_begin.assign(S, 0);
    g.pad_end.assign(S, 0);
    g.out = g.in;
    EXPECT_EQ(conv_pointwise_thin_applies(g), GetParam() >= Isa::Avx2) << geom_str(g);
    expect_conv_auto_matches_naive(g, iter, 1200, iter % 4 < 2 ? pool : one, "thin pointwise");
  }
  // Not taken: 33 input channels, a plane of 255, a padded or strided 1x1, fewer than 8 outputs.
  ConvGeom g = dense_geom(33, 16, {16, 32}, 1);
  EXPECT_FALSE(conv_pointwise_thin_applies(g));
  g.C = 32;
  g.in = g.out = {15, 17};
  EXPECT_FALSE(conv_pointwise_thin_applies(g));
  g.in = g.out = {16, 16};
  EXPECT_EQ(conv_pointwise_thin_applies(g), GetParam() >= Isa::Avx2);
  g.stride = {2, 2};
  g.out = {8, 8};
  EXPECT_FALSE(conv_pointwise_thin_applies(g));
  g.stride = {1, 1};
  g.out = g.in;
  g.M = 7;
  EXPECT_FALSE(conv_pointwise_thin_applies(g));
}

// The stride-1 convolution from padded row bands (conv_rows): C 1-128 (up to K = 1152, bands of
// 2 rows up to whole planes), output channels around each panel height (1, 4, 6, 8, 9, 12, 13,
// 17, 32, 64), kernels 1x2 to 9x9 (square and not), paddings 0 to kernel - 1 on each side, rows
// of 56-224 outputs (whole and partial last tiles), batch 1-2, 1 and 2 threads, each epilogue and
// none, through conv_auto against the naive Conv and activation. It applies with AVX-512 (panels
// of 4-12 x 32 columns, 8 x 48) and AVX2 + FMA (blocks of 1-6 x 16 columns: M of 2 and 3 for the
// sizes the others do not make); on the portable set conv_auto takes im2col, checked the same way.
TEST_P(RuntimeKernels, ConvRowsMatchesNaive) {
  std::mt19937 rng(79);
  auto r = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  ThreadPool pool(2), one(1);
  const int64_t Ms[] = {1, 2, 3, 4, 6, 8, 9, 12, 13, 17, 32, 64};
  const int64_t OWs[] = {56, 60, 64, 90, 124, 128, 224};
  for (int iter = 0; iter < 48; ++iter) {
    ConvGeom g;
    g.N = r(1, 2);
    g.group = 1;
    g.M = Ms[iter % 12];
    const bool wide = iter % 8 == 7;  // K = 1152 (kernels at least 2 wide, to fit the band)
    const int64_t kh = iter % 5 == 4 ? 1 : r(1, 7), kw = iter % 5 == 4 ? 2 : r(kh == 1 || wide ? 2 : 1, 7);
    g.C = wide ? 1152 / (kh * kw) : r(1, 24);
    const int64_t ph0 = r(0, int(kh) - 1), ph1 = r(0, int(kh) - 1), pw0 = r(0, int(kw) - 1), pw1 = r(0, int(kw) - 1);
    const int64_t OH = wide ? r(1, 4) : r(1, 12), OW = OWs[iter % 7];
    g.in = {OH + kh - 1 - ph0 - ph1, OW + kw - 1 - pw0 - pw1};
    if (g.in[0] < 1) g.in[0] = 1;
    g.kernel = {kh, kw};
    g.stride = {1, 1};
    g.dilation = {1, 1};
    g.pad_begin = {ph0, pw0};
    g.pad_end = {ph1, pw1};
    g.out = {conv_out_dim(g.in[0], kh, 1, 1, ph0 + ph1), conv_out_dim(g.in[1], kw, 1, 1, pw0 + pw1)};
    if (g.out[0] <= 0) continue;
    const bool direct = conv_direct_applies(g);  // 3x3 with C <= 4 goes there first
    EXPECT_EQ(conv_rows_applies(g), GetParam() >= Isa::Avx2) << geom_str(g);
    expect_conv_auto_matches_naive(g, iter, 1600, iter % 4 < 2 ? pool : one, direct ? "direct" : "rows");
  }
  // Also narrow rows (16-55 outputs: on AVX-512 tiles of 32 and a last one of 1-16 or 17-32
  // columns, on AVX2 tiles of 16 and a last one of 1-8 or 9-16) and dilations 1-5, as
  // UltraFace's 30x40 heads (8 -> 16, 12 -> 16, dilated 16 -> 16).
  const int64_t narrow[] = {16, 24, 28, 30, 40, 48, 55};
  for (int iter = 0; iter < 28; ++iter) {
    ConvGeom g;
    g.N = r(1, 2);
    g.group = 1;
    g.M = Ms[iter % 12];
    const int64_t kh = r(1, 5), kw = r(kh == 1 ? 2 : 1, 5), dh = r(1, 5), dw = r(1, 5);
    g.C = r(1, 20);
    const int64_t sh = (kh - 1) * dh + 1, sw = (kw - 1) * dw + 1;
    const int64_t ph0 = r(0, int(sh) - 1), ph1 = r(0, int(sh) - 1), pw0 = r(0, int(sw) - 1), pw1 = r(0, int(sw) - 1);
    const int64_t OH = r(4, 20), OW = narrow[iter % 7];
    g.in = {std::max<int64_t>(1, OH + sh - 1 - ph0 - ph1), OW + sw - 1 - pw0 - pw1};
    if (g.in[1] < 1) continue;
    g.kernel = {kh, kw};
    g.stride = {1, 1};
    g.dilation = {dh, dw};
    g.pad_begin = {ph0, pw0};
    g.pad_end = {ph1, pw1};
    g.out = {conv_out_dim(g.in[0], kh, 1, dh, ph0 + ph1), conv_out_dim(g.in[1], kw, 1, dw, pw0 + pw1)};
    if (g.out[0] <= 0 || g.out[1] != OW) continue;
    const bool direct = conv_direct_applies(g);
    EXPECT_EQ(conv_rows_applies(g), GetParam() >= Isa::Avx2 && g.out[0] * OW >= 256) << geom_str(g);
    expect_conv_auto_matches_naive(g, iter, 1700, iter % 4 < 2 ? pool : one, direct ? "direct" : "rows narrow");
  }
  // Also kernels of 8 and 9 (fns-candy's 9x9 3 -> 16 and 16 -> 3, pad 4) and, for 3 output
  // channels or fewer, K up to 2592 (32 x 9 x 9) in tiles of all of them x 80 or 96 columns on
  // AVX-512 (1 x 64, 2 x 48, 3 x 32 on AVX2): rows of 60-720 (whole and partial last tiles).
  const int64_t big_OWs[] = {60, 90, 124, 160, 224, 720};
  const int64_t big_Ms[] = {1, 2, 3, 3, 4, 16};
  for (int iter = 0; iter < 24; ++iter) {
    ConvGeom g;
    g.N = r(1, 2);
    g.group = 1;
    g.M = big_Ms[iter % 6];
    const int64_t kh = iter % 3 == 0 ? 9 : r(2, 9), kw = iter % 3 == 0 ? 9 : r(8, 9);
    const bool wide = g.M <= 3 && iter % 4 == 3;  // K of 2592 at most
    g.C = wide ? 2592 / (kh * kw) : r(1, int(std::min<int64_t>(16, 1152 / (kh * kw))));
    const int64_t ph0 = r(0, int(kh) - 1), ph1 = r(0, int(kh) - 1), pw0 = r(0, int(kw) - 1), pw1 = r(0, int(kw) - 1);
    const int64_t OW = big_OWs[iter % 6], OH = OW == 720 ? r(1, 2) : r(1, 6);
    g.in = {std::max<int64_t>(1, OH + kh - 1 - ph0 - ph1), OW + kw - 1 - pw0 - pw1};
    g.kernel = {kh, kw};
    g.stride = {1, 1};
    g.dilation = {1, 1};
    g.pad_begin = {ph0, pw0};
    g.pad_end = {ph1, pw1};
    g.out = {conv_out_dim(g.in[0], kh, 1, 1, ph0 + ph1), conv_out_dim(g.in[1], kw, 1, 1, pw0 + pw1)};
    if (g.out[0] <= 0) continue;
    EXPECT_EQ(conv_rows_applies(g), GetParam() >= Isa::Avx2) << geom_str(g);
    expect_conv_auto_matches_naive(g, iter, 1800, iter % 4 < 2 ? pool : one, "rows 9x9");
  }
  {
    ConvGeom g9 = dense_geom(32, 3, {4, 224}, 9);  // K = 2592, 3 output channels
    EXPECT_EQ(conv_rows_applies(g9), GetParam() >= Isa::Avx2);
    g9.C = 33;  // K over 2592
    EXPECT_FALSE(conv_rows_applies(g9));
    g9 = dense_geom(15, 4, {4, 720}, 9);  // K = 1215 over 1152 for 4 output channels
    EXPECT_FALSE(conv_rows_applies(g9));
    g9 = dense_geom(4, 4, {4, 720}, 11);  // an 11x11 kernel
    EXPECT_FALSE(conv_rows_applies(g9));
  }
  // Also stride 2 with K up to 144 (fns-candy's 3x3 16 -> 32, pad 1): kernels 1x2 to 9x9, the
  // taps of even columns read first from each row's even half, then the odd ones.
  for (int iter = 0; iter < 24; ++iter) {
    ConvGeom g;
    g.N = r(1, 2);
    g.group = 1;
    g.M = Ms[iter % 12];
    const int64_t kh = iter % 3 == 0 ? 3 : r(1, 9), kw = iter % 3 == 0 ? 3 : r(kh == 1 ? 2 : 1, 9);
    g.C = iter % 3 == 0 ? 16 : r(1, int(std::max<int64_t>(1, 144 / (kh * kw))));
    const int64_t ph0 = r(0, int(kh) - 1), ph1 = r(0, int(kh) - 1), pw0 = r(0, int(kw) - 1), pw1 = r(0, int(kw) - 1);
    const int64_t OW = OWs[iter % 7], OH = r(1, 6);
    g.in = {std::max<int64_t>(1, 2 * (OH - 1) + kh - ph0 - ph1 + r(0, 1)), 2 * (OW - 1) + kw - pw0 - pw1 + r(0, 1)};
    g.kernel = {kh, kw};
    g.stride = {2, 2};
    g.dilation = {1, 1};
    g.pad_begin = {ph0, pw0};
    g.pad_end = {ph1, pw1};
    g.out = {conv_out_dim(g.in[0], kh, 2, 1, ph0 + ph1), conv_out_dim(g.in[1], kw, 2, 1, pw0 + pw1)};
    if (g.out[0] <= 0 || g.out[1] != OW) continue;
    const bool direct = conv_direct_applies(g);
    EXPECT_EQ(conv_rows_applies(g), GetParam() >= Isa::Avx2) << geom_str(g);
    expect_conv_auto_matches_naive(g, iter, 1900, iter % 4 < 2 ? pool : one, direct ? "direct" : "rows stride 2");
  }
  // Also SqueezeNet 1.1's 3x3 expands (16 -> 64 on 55x55, 32 -> 128 on 27x27), which AVX-512 runs
  // along each band's rows end to end (a vector ending one row and starting the next), bands cut
  // at other rows (128 channels of 27 and 40 columns: 33 and 24 output rows a band; a 2-thread
  // task's rows), 3 output channels in 80-column tiles over rows of 40 and 42, 4 channels on 24, 9 on 40,
  // a 5x5 kernel and dilation 2, 2 images; each epilogue in turn, 1 and 2 threads.
  const std::vector<int64_t> flat[] = {{16, 64, 55, 55, 3, 1, 1}, {32, 128, 27, 27, 3, 1, 2}, {128, 16, 70, 27, 3, 1, 1}, {128, 9, 50, 40, 3, 1, 1},
                                       {8, 3, 20, 40, 3, 1, 2},   {5, 3, 12, 42, 5, 2, 1},    {20, 4, 16, 24, 3, 1, 2},   {24, 12, 31, 30, 5, 1, 1}};
  for (int iter = 0; iter < 16; ++iter) {
    const std::vector<int64_t>& f = flat[iter % 8];
    ConvGeom g = dense_geom(f[0], f[1], {f[2], f[3]}, f[4]);
    g.N = f[6];
    g.dilation = {f[5], f[5]};
    g.pad_begin = g.pad_end = {f[5] * (f[4] / 2), f[5] * (f[4] / 2)};
    if (GetParam() >= Isa::Avx512) {
      EXPECT_TRUE(conv_rows_applies(g)) << geom_str(g);  // (AVX2 leaves some of them to im2col)
    }
    expect_conv_auto_matches_naive(g, iter, 2000, iter < 8 ? pool : one, "rows flat");
  }
  // Also 3x3 kernels, whose taps AVX-512 reads three a step, in tiles of 8 x 48 (M of 8, 13, 16 and
  // 64) along rows of 64 and 224 (48-column tiles and a last one of 16 and 32) and of 100 and 55
  // (end to end: 102 and 57 lanes a row instead of 112 and 64), with and without padding.
  const int64_t three_Ms[] = {8, 13, 16, 64}, three_OWs[] = {64, 100, 224, 55};
  for (int iter = 0; iter < 8; ++iter) {
    ConvGeom g = dense_geom(r(5, 20), three_Ms[iter % 4], {r(5, 8), three_OWs[iter % 4]}, 3);
    if (iter >= 4) g.in = {g.out[0] + 2, g.out[1] + 2}, g.pad_begin = g.pad_end = {0, 0};
    if (GetParam() >= Isa::Avx512) {
      EXPECT_TRUE(conv_rows_applies(g)) << geom_str(g);  // (AVX2 leaves rows of 100 to im2col)
    }
    expect_conv_auto_matches_naive(g, iter, 2050, iter % 2 ? pool : one, "rows 3x3");
  }
  // Not taken: 1x1, stride 2 with dilation or K over 160, stride 3, rows of 15, of 16-column vectors under 3/4 full or under 56 in a
  // plane under 256 outputs, rows of 56 or more in 32-column tiles under 7/8 full and rows under
  // 56 in 8-column vectors under 7/8 full (AVX2), K over 1152.
  ConvGeom g = dense_geom(16, 16, {4, 64}, 1);
  EXPECT_FALSE(conv_rows_applies(g));
  g = dense_geom(16, 16, {4, 64}, 3);
  EXPECT_EQ(conv_rows_applies(g), GetParam() >= Isa::Avx2);
  g.stride = {2, 2};
  g.out = {2, 32};
  g.dilation = {2, 2};
  EXPECT_FALSE(conv_rows_applies(g));
  g.dilation = {1, 1};
  g.stride = {3, 3};
  g.out = {2, 22};
  EXPECT_FALSE(conv_rows_applies(g));
  g = dense_geom(16, 32, {800, 800}, 3);  // fns-candy's stride-2 layers: K = 144 taken, 288 not
  g.stride = {2, 2};
  g.out = {400, 400};
  EXPECT_EQ(conv_rows_applies(g), GetParam() >= Isa::Avx2);
  g = dense_geom(32, 64, {400, 400}, 3);
  g.stride = {2, 2};
  g.out = {200, 200};
  EXPECT_FALSE(conv_rows_applies(g));
  g = dense_geom(3, 64, {224, 224}, 7);  // ResNet's stem: K = 147 taken (up to 160), 4 channels (196) not
  g.stride = {2, 2};
  g.out = {112, 112};
  EXPECT_EQ(conv_rows_applies(g), GetParam() >= Isa::Avx2);
  g.C = 4;
  EXPECT_FALSE(conv_rows_applies(g));
  g = dense_geom(3, 13, {16, 128}, 7);  // a small one of the stem's kind, against the naive sum
  g.stride = {2, 2};
  g.out = {8, 64};
  EXPECT_EQ(conv_rows_applies(g), GetParam() >= Isa::Avx2);
  expect_conv_auto_matches_naive(g, 1, 2100, pool, "rows 7x7 stride 2");
  g = dense_geom(16, 16, {4, 64}, 3);
  g.dilation = {2, 2};
  g.out = {2, 62};
  EXPECT_EQ(conv_rows_applies(g), GetParam() >= Isa::Avx2);
  g = dense_geom(16, 16, {5, 55}, 3);
  EXPECT_EQ(conv_rows_applies(g), GetParam() >= Isa::Avx2);
  g = dense_geom(16, 16, {4, 100}, 3);
  EXPECT_EQ(conv_rows_applies(g), GetParam() >= Isa::Avx2);
  // (3x3 at stride 1 with 16 input channels or more and 16 output channels or more, 8 on AVX2:
  // the lane tiles take any row width.)
  g = dense_geom(16, 16, {4, 15}, 3);
  EXPECT_EQ(conv_rows_applies(g), GetParam() >= Isa::Avx2);
  g.M = 8;
  EXPECT_EQ(conv_rows_applies(g), GetParam() == Isa::Avx2);
  g = dense_geom(12, 8, {4, 33}, 3);  // 33 of 48 lanes
  EXPECT_FALSE(conv_rows_applies(g));
  g = dense_geom(12, 8, {4, 40}, 3);  // 160 outputs
  EXPECT_FALSE(conv_rows_applies(g));
  g = dense_geom(32, 128, {27, 27}, 3);  // SqueezeNet 1.1's (27 of 32 lanes for AVX2's other tiles)
  EXPECT_EQ(conv_rows_applies(g), GetParam() >= Isa::Avx2);
  g = dense_geom(16, 16, {30, 40}, 3);  // UltraFace's heads
  EXPECT_EQ(conv_rows_applies(g), GetParam() >= Isa::Avx2);
  g.dilation = {5, 5};
  EXPECT_EQ(conv_rows_applies(g), GetParam() >= Isa::Avx2);
  g = dense_geom(129, 16, {4, 64}, 3);  // K = 1161: AVX-512's lane tiles only
  EXPECT_EQ(conv_rows_applies(g), GetParam() >= Isa::Avx512);
  g.M = 12;
  EXPECT_FALSE(conv_rows_applies(g));
  g = dense_geom(128, 12, {4, 64}, 3);  // K = 1152, 12 of 16 lanes: AVX2's lane tiles (blocks of 8)
  EXPECT_EQ(lane_tiles_apply(g), GetParam() == Isa::Avx2);
  EXPECT_EQ(conv_rows_applies(g), GetParam() >= Isa::Avx2);
  g.M = 11;
  EXPECT_FALSE(lane_tiles_apply(g));
}

// The lane tiles in conv_rows (3x3 at stride 1, 16 input channels or more, output channels in
// the lanes: on AVX-512 16 x 14 columns of a row, 32 x 7 on rows of 7 or fewer; on AVX2 8 x up to
// 10, a row cut into tiles of even widths): output channels around the blocks (16, 24, 31, 32, 48,
// 64, 100, 200: pairs of blocks and a single last one on rows of 7), on AVX-512 K past the other
// tiles' 1152 (C up to 300; AVX2 takes K up to 1152), rows of 1-57 outputs (AVX-512: tiles of 14
// and a last one of 1-13 columns, its taps reading on past the row), paddings 0-2 on each side,
// batch 1-2, 1 and 2 threads (split by rows, or by channel blocks where rows are few), each
// epilogue and none, through conv_auto against the naive Conv and activation. Layers the lane
// tiles do not take (and every layer without AVX2) go to the other kernels, checked the same way.
TEST_P(RuntimeKernels, ConvLaneTilesMatchNaive) {
  std::mt19937 rng(83);
  auto r = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  ThreadPool pool(2), one(1);
  const int64_t Ms[] = {16, 24, 31, 32, 48, 64, 100, 200};
  const int64_t OWs[] = {1, 3, 5, 7, 8, 13, 14, 15, 16, 27, 28, 29, 56, 57};
  int ran = 0;
  for (int iter = 0; iter < 56; ++iter) {
    ConvGeom g;
    g.N = r(1, 2);
    g.group = 1;
    g.M = Ms[iter % 8];
    const bool deep = iter % 9 == 8;  // K = 1800-2700
    g.C = deep ? r(200, 300) : r(16, 40);
    const int64_t ph0 = r(0, 2), ph1 = r(0, 2), pw0 = r(0, 2), pw1 = r(0, 2);
    const int64_t OH = deep ? r(1, 3) : r(1, 20), OW = OWs[iter % 14];
    g.in = {OH + 2 - ph0 - ph1, OW + 2 - pw0 - pw1};
    if (g.in[0] < 1 || g.in[1] < 1) continue;
    g.kernel = {3, 3};
    g.stride = {1, 1};
    g.dilation = {1, 1};
    g.pad_begin = {ph0, pw0};
    g.pad_end = {ph1, pw1};
    g.out = {conv_out_dim(g.in[0], 3, 1, 1, ph0 + ph1), conv_out_dim(g.in[1], 3, 1, 1, pw0 + pw1)};
    if (g.out[0] != OH || g.out[1] != OW) continue;
    if (GetParam() >= Isa::Avx2) {
      const bool taken = GetParam() >= Isa::Avx512 || g.C * 9 <= 1152;  // (AVX2: K up to 1152)
      EXPECT_EQ(lane_tiles_apply(g), taken) << geom_str(g);
      if (taken) {
        EXPECT_TRUE(conv_rows_applies(g)) << geom_str(g);
      }
    }
    expect_conv_auto_matches_naive(g, iter, 2200, iter % 4 < 2 ? pool : one, "lane tiles");
    ++ran;
  }
  EXPECT_GE(ran, 40);
  // Not taken: fewer than 16 input channels, blocks under 3/4 full (17 of 32 lanes, 17 of 24 on
  // AVX2), 11 output channels (fewer than 16; 11 of AVX2's 16 lanes), K over 1152 on AVX2,
  // dilation, a 5x5 kernel (on rows the other tiles do not take either).
  if (GetParam() >= Isa::Avx2) {
    ConvGeom g = dense_geom(64, 17, {4, 13}, 3);
    EXPECT_FALSE(conv_rows_applies(g)) << geom_str(g);
    g = dense_geom(12, 64, {14, 14}, 3);
    EXPECT_FALSE(conv_rows_applies(g)) << geom_str(g);
    g = dense_geom(64, 11, {4, 13}, 3);
    EXPECT_FALSE(conv_rows_applies(g)) << geom_str(g);
    g = dense_geom(128, 64, {14, 14}, 3);  // K = 1152
    EXPECT_TRUE(lane_tiles_apply(g)) << geom_str(g);
    g = dense_geom(200, 64, {14, 14}, 3);  // K = 1800: AVX-512 only
    EXPECT_EQ(lane_tiles_apply(g), GetParam() >= Isa::Avx512) << geom_str(g);
    g.dilation = {2, 2};
    g.pad_begin = g.pad_end = {2, 2};
    EXPECT_FALSE(conv_rows_applies(g)) << geom_str(g);  // (K = 1800: no other tile either)
    g = dense_geom(200, 64, {14, 14}, 5);
    EXPECT_FALSE(conv_rows_applies(g)) << geom_str(g);
  }
}

// conv_rows with a ConvRowsCache (as a Conv node with constant weights runs it): a call with the
// same weights (address) and bias values (at any address) reuses the packing (AVX-512, and AVX2's
// lane tiles; AVX2's other tiles pack per call and leave the cache as it was), and other weights,
// another bias (or none), the same weights at stride 2 (another tap order) or as fewer output
// channels (another tile height) are packed anew: every call against the naive Conv, at 1 and 2
// threads, with the Relu epilogue.
TEST_P(RuntimeKernels, ConvRowsCacheRepacksWhenWeightsOrLayoutChange) {
  ThreadPool pool(2), one(1);
  const Epilogue relu{Epilogue::Kind::Relu};
  const auto x = test::random_floats(16 * 55 * 55, 2101);
  const auto w1 = test::random_floats(32 * 16 * 9, 2102), w2 = test::random_floats(32 * 16 * 9, 2103);
  const auto b1 = test::random_floats(32, 2104), b2 = test::random_floats(32, 2105);
  const std::vector<float> b1_elsewhere = b1;
  struct Call {
    const std::vector<float>* w;
    const float* b;
    int64_t M, stride;
    bool reuse;  // of the previous call's packing
    const char* what;
  };
  const Call calls[] = {{&w1, b1.data(), 32, 1, false, "first"},
                        {&w1, b1.data(), 32, 1, true, "again"},
                        {&w1, b1_elsewhere.data(), 32, 1, true, "the same bias elsewhere"},
                        {&w2, b1.data(), 32, 1, false, "other weights"},
                        {&w2, b2.data(), 32, 1, false, "other bias"},
                        {&w2, nullptr, 32, 1, false, "no bias"},
                        {&w2, nullptr, 32, 1, true, "no bias again"},
                        {&w2, nullptr, 32, 2, false, "stride 2"},
                        {&w2, nullptr, 20, 2, false, "20 channels"},
                        {&w2, nullptr, 20, 1, false, "20, stride 1"},
                        {&w1, b1.data(), 32, 1, false, "first again"}};
  ConvRowsCache cache;
  std::shared_ptr<const ConvRowsWeights> previous;  // (held: a new packing cannot take its address)
  int i = 0;
  for (const Call& c : calls) {
    ConvGeom g = dense_geom(16, c.M, {55, 55}, 3);
    g.stride = {c.stride, c.stride};
    g.out = {conv_out_dim(55, 3, c.stride, 1, 2), conv_out_dim(55, 3, c.stride, 1, 2)};
    ASSERT_EQ(conv_rows_applies(g), GetParam() >= Isa::Avx2) << c.what;
    const size_t n = static_cast<size_t>(g.M * product(g.out));
    std::vector<float> ref(n), ref1(n), ref2(n), y(n, 123.f), z(n, 123.f);
    conv_naive(g, x.data(), c.w->data(), c.b, ref.data());
    epilogue_naive(relu, ref.data(), ref1.data(), ref2.data(), static_cast<int64_t>(n), nullptr);
    conv_auto(g, x.data(), c.w->data(), c.b, y.data(), i++ % 2 ? pool : one, EpilogueOut{&relu, z.data()}, nullptr, &cache);
    expect_close(y, ref, 16 * 9, c.what);
    expect_close(z, ref1, 16 * 9, std::string(c.what) + " relu");
    if (GetParam() != Isa::Avx512 && !lane_tiles_apply(g)) {
      EXPECT_EQ(cache.packed, previous) << c.what << ": packed by a path that packs per call";
      continue;
    }
    ASSERT_NE(cache.packed, nullptr) << c.what;
    if (c.reuse) {
      EXPECT_EQ(cache.packed, previous) << c.what << ": packed again";
    } else {
      EXPECT_NE(cache.packed, previous) << c.what << ": reused the previous packing";
    }
    previous = cache.packed;
  }
}

// conv_im2col_f16 on random geometries (pointwise, strided, padded, dilated, groups, 1-D and 2-D,
// planes of many columns): exactly conv_im2col on the widened input rounded once, and so within
// the tolerance of the naive reference plus float16's rounding.
TEST_P(RuntimeKernels, ConvIm2colF16MatchesFloat) {
  if (!gemm_packed_available()) GTEST_SKIP() << "needs AVX2 + FMA + F16C: the " << isa_name(GetParam()) << " path widens to float";
  std::mt19937 rng(29);
  ThreadPool pool(2);
  auto r = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  for (int iter = 0; iter < 60; ++iter) {
    ConvGeom g = random_geom(rng, iter % 5 == 0 ? 1 : 2, false);
    if (iter % 3 == 1) {  // pointwise
      g.kernel.assign(g.spatial(), 1);
      g.stride.assign(g.spatial(), 1);
      g.dilation.assign(g.spatial(), 1);
      g.pad_begin.assign(g.spatial(), 0);
      g.pad_end.assign(g.spatial(), 0);
      for (auto& d : g.in) d = r(1, 60);
      g.out = g.in;
    } else if (iter % 3 == 2) {  // large planes
      for (size_t d = 0; d < g.in.size(); ++d) {
        g.in[d] = r(20, 60);
        g.out[d] = conv_out_dim(g.in[d], g.kernel[d], g.stride[d], g.dilation[d], g.pad_begin[d] + g.pad_end[d]);
      }
    }
    if (!conv_f16_applies(g)) continue;
    const auto xh = to_halves(test::random_floats(static_cast<size_t>(g.N * g.C * product(g.in)), 1900 + iter, -4.f, 4.f));
    const auto wh = to_halves(test::random_floats(static_cast<size_t>(g.M * (g.C / g.group) * product(g.kernel)), 2000 + iter));
    const auto b = test::random_floats(static_cast<size_t>(g.M), 2100 + iter);
    const auto xf = to_floats(xh.data(), xh.size()), wf = to_floats(wh.data(), wh.size());
    const float* bias = iter % 2 ? b.data() : nullptr;
    const size_t n = static_cast<size_t>(g.N * g.M * product(g.out));
    const auto packed = pack_conv_weights(wf.data(), g.M, g.group, static_cast<int64_t>(wf.size()) / g.M);
    std::vector<uint16_t> y(n, 0x7777), z(n, 0x7777);
    conv_im2col_f16(g, xh.data(), packed, bias, y.data(), z.data(), pool);
    const Epilogue e{Epilogue::Kind::Relu};
    std::vector<float> yf(n), zf(n), ref(n);
    conv_im2col(g, xf.data(), wf.data(), bias, yf.data(), pool, {&e, zf.data(), nullptr, nullptr});
    expect_rounded(y, yf, "conv f16 " + geom_str(g));
    expect_rounded(z, zf, "conv f16 relu " + geom_str(g));
    conv_naive(g, xf.data(), wf.data(), bias, ref.data());
    const int64_t K = (g.C / g.group) * product(g.kernel);
    const auto yw = to_floats(y.data(), n);
    for (size_t i = 0; i < n; ++i)
      ASSERT_NEAR(yw[i], ref[i], 1e-4 * std::sqrt(static_cast<double>(K)) * (1 + std::fabs(ref[i])) + std::fabs(ref[i]) / 2048) << geom_str(g) << " element " << i;
  }
}

// Float16 graphs of the ops SqueezeNet_fp16 uses (Conv with a fused Relu, pointwise, strided and
// depthwise Conv, 3x3 and 2x2 MaxPool, GlobalAveragePool, Concat, a Relu on its own): every tensor bit for bit the
// float graph's on the same (float16) values, rounded once. Each node reads graph inputs, or
// tensors whose rounding commutes with it (Concat, MaxPool).
TEST_P(RuntimeKernels, Float16GraphMatchesFloatGraphRounded) {
  const std::string body = R"(
      c1 = Conv <pads = [1, 1, 1, 1]> (X, W1, B1)
      r1 = Relu(c1)
      c2 = Conv (X, W2, B2)
      r2 = Relu(c2)
      c3 = Conv <strides = [2, 2], kernel_shape = [3, 3]> (X, W3)
      c4 = Conv <group = 5, pads = [1, 1, 1, 1]> (X, W4)
      p1 = MaxPool <kernel_shape = [3, 3], strides = [2, 2]> (r1)
      p2 = MaxPool <kernel_shape = [2, 2], pads = [1, 1, 1, 1]> (X)
      p3 = MaxPool <kernel_shape = [3, 3], strides = [2, 2], pads = [1, 1, 1, 1]> (X)
      p4 = MaxPool <kernel_shape = [2, 2], strides = [2, 2]> (X)
      k = Concat <axis = 1> (r1, r2)
      Y = GlobalAveragePool(X)
      Z = GlobalMaxPool(X)
      i3 = Identity(c3)
      r3 = Relu(i3)
  )";
  auto graph = [&](const char* t) {
    std::string s = R"(<ir_version: 8, opset_import: ["" : 13]> g (T[1,5,23,29] X, T[8,5,3,3] W1, T[8] B1, T[8,5,1,1] W2, T[8] B2, T[6,5,3,3] W3, T[5,1,3,3] W4) => (T[1,5,1,1] Y, T[1,5,1,1] Z) {)" + body + "}";
    for (size_t at = s.find("T["); at != std::string::npos; at = s.find("T[", at + 1)) s.replace(at, 1, t);
    return s;
  };
  Session sh(test::plan_from_text(graph("float16"))), sf(test::plan_from_text(graph("float")));
  const std::vector<std::pair<std::string, std::vector<int64_t>>> inputs = {{"X", {1, 5, 23, 29}}, {"W1", {8, 5, 3, 3}}, {"B1", {8}},
                                                                             {"W2", {8, 5, 1, 1}}, {"B2", {8}}, {"W3", {6, 5, 3, 3}},
                                                                             {"W4", {5, 1, 3, 3}}};
  uint32_t seed = 2200;
  for (const auto& [name, shape] : inputs) {
    const auto h = to_halves(test::random_floats(static_cast<size_t>(product(shape)), seed++, -2.f, 2.f));
    test::feed(sh, name, nnxr::model::DType::Float16, shape, h);
    test::feed_f(sf, name, shape, to_floats(h.data(), h.size()));
  }
  sh.run();
  sf.run();
  for (const char* t : {"c1", "r1", "c2", "r2", "c3", "r3", "c4", "p1", "p2", "p3", "p4", "k", "Y", "Z"}) {
    const Value* h = sh.find(t);
    ASSERT_NE(h, nullptr) << t;
    ASSERT_EQ(h->dtype(), nnxr::model::DType::Float16) << t;
    ASSERT_EQ(h->dims(), test::shape_of(sf, t)) << t;
    expect_rounded({h->as<uint16_t>().begin(), h->as<uint16_t>().end()}, test::values<float>(sf, t), t);
  }
}

// Relu on float16 bits: +0 for zeros, negatives and NaN (as the float kernel: NaN > 0 is false);
// positives, the smallest subnormal and +inf kept.
TEST(RuntimeFloat16, ReluOnTheBitsMatchesFloat) {
  const std::vector<uint16_t> x = {0x0000, 0x8000, 0x0001, 0x8001, 0x3c00, 0xbc00, 0x7bff, 0xfbff, 0x7c00, 0xfc00, 0x7e00, 0xfe00, 0x7c01};
  Session s(test::plan_from_text(R"(<ir_version: 8, opset_import: ["" : 13]> g (float16[13] X) => (float16[13] Y) { Y = Relu(X) })"));
  test::feed(s, "X", nnxr::model::DType::Float16, {13}, x);
  s.run();
  const auto y = test::values<uint16_t>(s, "Y");
  const std::vector<uint16_t> want = {0, 0, 0x0001, 0, 0x3c00, 0, 0x7bff, 0, 0x7c00, 0, 0, 0, 0};
  EXPECT_EQ(y, want);
}

// Softmax rows of every length around the vector widths, with a large spread (tolerance 1e-5
// relative: x - max is rounded to float before exp, as in the scalar kernel, which costs up to
// |x - max| ulp on the smallest outputs), -inf (a masked position: exactly 0 out) and NaN (NaN
// out, as std::exp gives).
TEST_P(RuntimeKernels, SoftmaxRowMatchesNaive) {
  for (int64_t n = 1; n <= 70; ++n) {
    auto x = test::random_floats(static_cast<size_t>(n), 1500 + static_cast<uint32_t>(n));
    for (auto& v : x) v *= 30.f;
    if (n > 3) x[2] = -std::numeric_limits<float>::infinity();
    std::vector<float> y(x.size()), ref(x.size());
    softmax_row_f32(x.data(), y.data(), n);
    softmax_row_naive(x.data(), ref.data(), n);
    double sum = 0;
    for (int64_t i = 0; i < n; ++i) {
      EXPECT_NEAR(y[i], ref[i], 1e-5 * ref[i] + 1e-37) << "n=" << n << " i=" << i;
      sum += y[i];
    }
    EXPECT_NEAR(sum, 1.0, 1e-5) << "n=" << n;
    if (n > 3) {
      EXPECT_EQ(y[2], 0.f) << "n=" << n;
    }
    x[static_cast<size_t>(n - 1)] = std::nanf("");
    softmax_row_f32(x.data(), y.data(), n);
    EXPECT_TRUE(std::isnan(y[static_cast<size_t>(n - 1)])) << "n=" << n;
  }
}

// Softmax over many short rows (one row per lane up to 8 floats, then row by row): every row
// length 1-10 and row counts around the vector widths, against the naive row, with -inf (0 out),
// a whole row of -inf (NaN, as the row kernel gives), NaN (the row is NaN) and nothing written
// past the last row.
TEST_P(RuntimeKernels, SoftmaxRowsMatchesNaive) {
  for (int64_t n = 1; n <= 10; ++n) {
    for (int64_t rows : {0, 1, 3, 4, 7, 8, 15, 16, 17, 31, 33, 50}) {
      const size_t size = static_cast<size_t>(rows * n);
      auto x = test::random_floats(size, 2100 + static_cast<uint32_t>(n * 64 + rows));
      for (auto& v : x) v *= 30.f;
      if (rows > 5 && n > 1) x[static_cast<size_t>(5 * n + 1)] = -std::numeric_limits<float>::infinity();
      if (rows > 9)
        for (int64_t k = 0; k < n; ++k) x[static_cast<size_t>(9 * n + k)] = -std::numeric_limits<float>::infinity();
      if (rows > 12) x[static_cast<size_t>(12 * n)] = std::nanf("");
      std::vector<float> y(size + 5, 7.f), ref(n);
      softmax_rows_f32(x.data(), y.data(), rows, n);
      for (int64_t r = 0; r < rows; ++r) {
        softmax_row_naive(x.data() + r * n, ref.data(), n);
        for (int64_t k = 0; k < n; ++k) {
          const float got = y[static_cast<size_t>(r * n + k)], want = ref[static_cast<size_t>(k)];
          if (r == 9 || r == 12) {
            EXPECT_TRUE(std::isnan(got)) << "n=" << n << " rows=" << rows << " r=" << r << " k=" << k;
            continue;
          }
          EXPECT_NEAR(got, want, 1e-5 * want + 1e-37) << "n=" << n << " rows=" << rows << " r=" << r << " k=" << k;
        }
        if (r == 5 && n > 1) {
          EXPECT_EQ(y[static_cast<size_t>(5 * n + 1)], 0.f) << "n=" << n;
        }
      }
      for (size_t i = size; i < y.size(); ++i) EXPECT_EQ(y[i], 7.f) << "n=" << n << " rows=" << rows;
    }
  }
}

TEST_P(RuntimeKernels, TanhFastMatchesLibm) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> wide(-12.f, 12.f), narrow(-1.f, 1.f);
  std::vector<float> xs = {0.f, -0.f, 0.625f, -0.625f, 0.6249999f, 1e-30f, -1e-7f, 88.f, -100.f, INFINITY, -INFINITY};
  for (int i = 0; i < 20000; ++i) xs.push_back(i % 2 ? wide(rng) : narrow(rng) * std::pow(10.f, -static_cast<float>(i % 7)));
  for (float x : xs) {
    const double ref = std::tanh(static_cast<double>(x));
    EXPECT_NEAR(tanh_fast(x), ref, 4e-7 * std::fabs(ref) + 1e-38) << x;
  }
  EXPECT_TRUE(std::isnan(tanh_fast(NAN)));
}

TEST_P(RuntimeKernels, TanhArrayMatchesLibm) {
  std::vector<float> xs = {0.f, -0.f, 0.625f, -0.625f, 0.6249999f, 1e-30f, -1e-7f, 88.f, -100.f, INFINITY, -INFINITY};
  std::mt19937 rng(6);
  std::uniform_real_distribution<float> wide(-12.f, 12.f);
  for (int i = 0; i < 5001; ++i) xs.push_back(i % 2 ? wide(rng) : wide(rng) * std::pow(10.f, -static_cast<float>(i % 7)));
  std::vector<float> y(xs.size()), inplace = xs;
  tanh_f32(xs.data(), y.data(), static_cast<int64_t>(xs.size()));
  tanh_f32(inplace.data(), inplace.data(), static_cast<int64_t>(inplace.size()));
  for (size_t i = 0; i < xs.size(); ++i) {
    const double ref = std::tanh(static_cast<double>(xs[i]));
    EXPECT_NEAR(y[i], ref, 1e-6 * std::fabs(ref) + 1e-38) << xs[i];
    EXPECT_EQ(y[i], inplace[i]) << xs[i];
  }
}

// LSTM's recurrent product (R packed transposed and padded) against the plain sums, for hidden
// sizes that are and are not multiples of a vector, two directions, and ranges of units as the
// pool splits them (blocks of 16): every unit in the range exact to the tolerance, the rest of gh
// untouched past the range rounded up to 16.
TEST_P(RuntimeKernels, LstmRecurrentMatchesNaive) {
  for (const int64_t H : {1, 5, 16, 17, 40, 64, 100, 128}) {
    const int64_t dirs = 2, Hp = (H + 15) / 16 * 16;
    const auto R = test::random_floats(static_cast<size_t>(dirs * 4 * H * H), 900 + static_cast<uint32_t>(H));
    const auto h = test::random_floats(static_cast<size_t>(H), 1000 + static_cast<uint32_t>(H));
    const std::vector<float> rt = lstm_pack_recurrent(R.data(), dirs, H);
    ASSERT_EQ(rt.size(), static_cast<size_t>(dirs * H * 4 * Hp));
    for (int64_t d = 0; d < dirs; ++d)
      for (int64_t j0 = 0; j0 < H; j0 += 16)
        for (const int64_t j1 : {std::min(H, j0 + 16), H}) {
          std::vector<float> gh(static_cast<size_t>(4 * Hp), 123.f);
          lstm_recurrent(rt.data() + d * H * 4 * Hp, H, h.data(), j0, j1, gh.data());
          const int64_t end = std::min(Hp, (j1 + 15) / 16 * 16);
          for (int64_t k = 0; k < 4; ++k)
            for (int64_t j = 0; j < Hp; ++j) {
              const float got = gh[static_cast<size_t>(k * Hp + j)];
              if (j < j0 || j >= end) {
                EXPECT_EQ(got, 123.f) << "H " << H << " gate " << k << " unit " << j << " outside [" << j0 << ", " << j1 << ")";
                continue;
              }
              if (j >= H) continue;  // padding: written, never read
              double ref = 0;
              for (int64_t i = 0; i < H; ++i) ref += static_cast<double>(R[static_cast<size_t>(((d * 4 + k) * H + j) * H + i)]) * h[static_cast<size_t>(i)];
              EXPECT_NEAR(got, ref, 1e-4 * std::sqrt(static_cast<double>(H)) * (1 + std::fabs(ref))) << "H " << H << " dir " << d << " gate " << k << " unit " << j;
            }
        }
  }
}

// The vectorised erf (the Erf op on float, transformers' GELU) against std::erf: within 4e-7
// relative error (a few ulp) from the smallest subnormals through the clamp at +-4 and past it, odd
// lengths for the partial last vector, +-0, +-inf and NaN.
TEST_P(RuntimeKernels, ErfMatchesStd) {
  std::vector<float> x;
  for (float v = -7.f; v <= 7.f; v += 0.00137f) x.push_back(v);
  for (float v = 1e-38f; v < 1.f; v *= 1.37f) {
    x.push_back(v);
    x.push_back(-v);
  }
  const float inf = std::numeric_limits<float>::infinity();
  for (float v : {0.f, -0.f, inf, -inf, std::numeric_limits<float>::denorm_min(), 4.f, -4.f, 3.99f, 0.5f}) x.push_back(v);
  x.push_back(std::numeric_limits<float>::quiet_NaN());
  for (const size_t n : {x.size(), size_t{1}, size_t{7}, size_t{19}}) {
    std::vector<float> y(n, 123.f);
    erf_f32(x.data(), y.data(), static_cast<int64_t>(n));
    double worst = 0;
    for (size_t i = 0; i < n; ++i) {
      const float ref = std::erf(x[i]);
      if (std::isnan(ref)) {
        EXPECT_TRUE(std::isnan(y[i])) << "erf(" << x[i] << ")";
        continue;
      }
      // (relative to 1e-35 at least: x P(x^2) passes through subnormals below that)
      const double err = std::fabs(static_cast<double>(y[i]) - ref) / std::max(std::fabs(static_cast<double>(ref)), 1e-35);
      worst = std::max(worst, err);
      EXPECT_LE(err, 4e-7) << "erf(" << x[i] << ") = " << y[i] << ", std::erf " << ref;
      EXPECT_LE(std::fabs(y[i]), 1.f) << "erf(" << x[i] << ")";
    }
    if (n == x.size()) std::cout << "erf: worst relative error " << worst << "\n";
  }
}

// The Exp kernel (exp_lanes in the widest vectors, libm outside its clamp [-87, 88]) against
// std::exp: within 3e-7 relative (2 ulp) over [-87, 88], exact libm results past the clamp (inf
// from 88.73, subnormals and 0 below -87.3), +-inf, NaN and lengths around the vector widths.
TEST_P(RuntimeKernels, ExpMatchesStd) {
  std::vector<float> x;
  for (float v = -104.f; v <= 92.f; v += 0.0917f) x.push_back(v);
  const float inf = std::numeric_limits<float>::infinity();
  for (float v : {0.f, -0.f, inf, -inf, 88.f, -87.f, 88.5f, 88.72f, 88.73f, -87.5f, -103.f, -150.f, 1e-30f}) x.push_back(v);
  x.push_back(std::numeric_limits<float>::quiet_NaN());
  for (const size_t n : {x.size(), size_t{1}, size_t{7}, size_t{19}, size_t{33}}) {
    const int64_t len = static_cast<int64_t>(n);
    Session s(test::plan_from_text("<ir_version: 8, opset_import: [\"\" : 13]> g (float[" + std::to_string(n) + "] X) => (float[" +
                                   std::to_string(n) + "] Y) { Y = Exp(X) }"));
    const std::vector<float> in(x.end() - len, x.end());
    test::feed_f(s, "X", {len}, in);
    s.run();
    const auto y = test::values<float>(s, "Y");
    ASSERT_EQ(y.size(), n);
    for (size_t i = 0; i < n; ++i) {
      const float ref = std::exp(in[i]);
      if (std::isnan(ref)) {
        EXPECT_TRUE(std::isnan(y[i])) << "exp(" << in[i] << ")";
      } else if (!(in[i] >= -87.f && in[i] <= 88.f)) {
        EXPECT_EQ(y[i], ref) << "exp(" << in[i] << ")";
      } else {
        EXPECT_LE(std::fabs(static_cast<double>(y[i]) - ref), 3e-7 * ref) << "exp(" << in[i] << ") = " << y[i] << ", std::exp " << ref;
      }
    }
  }
}

namespace {

// The source index of output index o of an axis of n padded by pb in `mode`, or -1 (constant).
int64_t pad_source(const std::string& mode, int64_t o, int64_t pb, int64_t n) {
  int64_t i = o - pb;
  if (i >= 0 && i < n) return i;
  if (mode == "constant") return -1;
  if (mode == "edge") return std::clamp<int64_t>(i, 0, n - 1);
  if (mode == "wrap") return ((i % n) + n) % n;
  if (n == 1) return 0;
  while (i < 0 || i >= n) i = i < 0 ? -i : 2 * (n - 1) - i;  // reflect, one bounce at a time
  return i;
}

}  // namespace

// Pad in each mode on rank 1, 3 and 4 inputs against the index rule applied element by element:
// pads larger than the axis (several reflections, wraps), negative pads (a crop), and a plane
// large enough to be split over the pool.
TEST_P(RuntimeKernels, PadMatchesNaive) {
  struct Case {
    std::vector<int64_t> in, pads;
  };
  const std::vector<Case> cases = {{{7}, {3, 9}},
                                   {{2, 5, 6}, {0, 1, 2, 1, 0, 7}},
                                   {{1, 3, 4, 5}, {0, 0, 2, -1, 0, 0, -1, 6}},
                                   {{1, 3, 4, 1}, {0, 1, 3, 2, 0, 0, 1, 3}},
                                   {{1, 3, 180, 190}, {0, 0, 40, 40, 0, 0, 40, 40}}};
  uint32_t seed = 3100;
  for (const Case& c : cases)
    for (const std::string mode : {"constant", "reflect", "edge", "wrap"}) {
      const size_t rank = c.in.size();
      std::vector<int64_t> out(rank);
      bool ok = true;
      for (size_t d = 0; d < rank; ++d) {
        out[d] = c.in[d] + c.pads[d] + c.pads[d + rank];
        // (reflect needs pads below the axis only in ONNX's reference; the kernel takes any)
        ok = ok && (mode != "reflect" || c.in[d] > 1 || c.pads[d] <= 0);
      }
      if (!ok) continue;
      auto dims = [](const std::vector<int64_t>& v) {
        std::string s;
        for (int64_t d : v) s += (s.empty() ? "" : ",") + std::to_string(d);
        return s;
      };
      std::string pads;
      for (int64_t p : c.pads) pads += (pads.empty() ? "" : ", ") + std::to_string(p);
      const std::string text = "<ir_version: 8, opset_import: [\"\" : 13]> g (float[" + dims(c.in) + "] X) => (float[" + dims(out) +
                               "] Y) { p = Constant <value = int64[" + std::to_string(2 * rank) + "] {" + pads +
                               "}> ()\n v = Constant <value = float {2.5}> ()\n Y = Pad <mode = \"" + mode + "\"> (X, p, v) }";
      Session s(test::plan_from_text(text));
      const auto x = test::random_floats(static_cast<size_t>(product(c.in)), seed++);
      test::feed_f(s, "X", c.in, x);
      s.run();
      const auto y = test::values<float>(s, "Y");
      ASSERT_EQ(static_cast<int64_t>(y.size()), product(out)) << mode;
      const auto ist = strides_of(c.in);
      size_t bad = 0;
      std::vector<int64_t> idx(rank, 0);
      for (size_t o = 0; o < y.size(); ++o) {
        int64_t src = 0;
        for (size_t d = 0; d < rank && src >= 0; ++d) {
          const int64_t i = pad_source(mode, idx[d], c.pads[d], c.in[d]);
          src = i < 0 ? -1 : src + i * ist[d];
        }
        const float want = src < 0 ? 2.5f : x[static_cast<size_t>(src)];
        if (y[o] != want && ++bad <= 3) ADD_FAILURE() << mode << " pads [" << pads << "] element " << o << ": " << y[o] << ", want " << want;
        for (size_t d = rank; d-- > 0;)
          if (++idx[d] < out[d]) break;
          else idx[d] = 0;
      }
      EXPECT_EQ(bad, 0u) << mode << " [" << dims(c.in) << "] pads [" << pads << "]";
    }
}

// The box decoding tail of a detector on [1, N, 4] (UltraFace's: slices of 2 of the last axis,
// an element-wise chain with a scalar, Exp, concatenations of rows of 2), and slices and
// concatenations of rows of 1-9 elements, against the values computed element by element.
TEST_P(RuntimeKernels, BoxTailMatchesNaive) {
  for (const int64_t n : {int64_t{1}, int64_t{37}, int64_t{4420}}) {
    const std::string N = std::to_string(n);
    Session s(test::plan_from_text("<ir_version: 8, opset_import: [\"\" : 13]> g (float[1," + N + ",4] L, float[1," + N + ",4] P) => (float[1," + N +
                                   ",4] B) {\n"
                                   "  s0 = Constant <value = int64[1] {0}> ()\n  s2 = Constant <value = int64[1] {2}> ()\n"
                                   "  s4 = Constant <value = int64[1] {4}> ()\n  ax = Constant <value = int64[1] {2}> ()\n"
                                   "  c = Constant <value = float {0.1}> ()\n  v = Constant <value = float {0.2}> ()\n"
                                   "  l0 = Slice(L, s0, s2, ax)\n  l1 = Slice(L, s2, s4, ax)\n  p0 = Slice(P, s0, s2, ax)\n  p1 = Slice(P, s2, s4, ax)\n"
                                   "  a = Mul(l0, c)\n  b = Mul(a, p1)\n  xy = Add(b, p0)\n"
                                   "  e = Mul(l1, v)\n  f = Exp(e)\n  wh = Mul(f, p1)\n"
                                   "  B = Concat <axis = 2> (xy, wh) }"));
    const auto L = test::random_floats(static_cast<size_t>(4 * n), 3300 + static_cast<uint32_t>(n), -3.f, 3.f);
    const auto P = test::random_floats(static_cast<size_t>(4 * n), 3400 + static_cast<uint32_t>(n), 0.f, 1.f);
    test::feed_f(s, "L", {1, n, 4}, L);
    test::feed_f(s, "P", {1, n, 4}, P);
    s.run();
    const auto b = test::values<float>(s, "B");
    const auto xy = test::values<float>(s, "xy");
    const auto l1 = test::values<float>(s, "l1");
    ASSERT_EQ(static_cast<int64_t>(b.size()), 4 * n);
    ASSERT_EQ(static_cast<int64_t>(xy.size()), 2 * n);
    for (int64_t r = 0; r < n; ++r)
      for (int64_t k = 0; k < 2; ++k) {
        const auto i = static_cast<size_t>(4 * r + k), j = static_cast<size_t>(2 * r + k);
        EXPECT_EQ(l1[j], L[i + 2]) << "l1 row " << r;
        const float want_xy = L[i] * 0.1f * P[i + 2] + P[i];  // one IEEE operation per node
        EXPECT_EQ(xy[j], want_xy) << "xy row " << r;
        EXPECT_EQ(b[i], want_xy) << "B row " << r;
        const float want_wh = std::exp(L[i + 2] * 0.2f) * P[i + 2];
        EXPECT_NEAR(b[i + 2], want_wh, 4e-7 * std::fabs(want_wh)) << "B row " << r;
      }
  }
  // Slices of w of the 9 columns from column 1 and concatenations of w + 3 columns, rows of
  // 1-9 floats (the fixed-size row copies and the generic one).
  for (int64_t w = 1; w <= 8; ++w) {
    const std::string W = std::to_string(w), W3 = std::to_string(w + 3);
    Session s(test::plan_from_text("<ir_version: 8, opset_import: [\"\" : 13]> g (float[3,5,9] X, float[3,5,3] Z) => (float[3,5," + W + "] S, float[3,5," +
                                   W3 + "] C) {\n  a = Constant <value = int64[1] {1}> ()\n  e = Constant <value = int64[1] {" + std::to_string(1 + w) +
                                   "}> ()\n  ax = Constant <value = int64[1] {-1}> ()\n  S = Slice(X, a, e, ax)\n  C = Concat <axis = 2> (S, Z) }"));
    const auto X = test::random_floats(135, 3500 + static_cast<uint32_t>(w));
    const auto Z = test::random_floats(45, 3600 + static_cast<uint32_t>(w));
    test::feed_f(s, "X", {3, 5, 9}, X);
    test::feed_f(s, "Z", {3, 5, 3}, Z);
    s.run();
    const auto S = test::values<float>(s, "S"), C = test::values<float>(s, "C");
    ASSERT_EQ(static_cast<int64_t>(S.size()), 15 * w);
    ASSERT_EQ(static_cast<int64_t>(C.size()), 15 * (w + 3));
    for (int64_t r = 0; r < 15; ++r) {
      for (int64_t c = 0; c < w; ++c) {
        EXPECT_EQ(S[static_cast<size_t>(r * w + c)], X[static_cast<size_t>(r * 9 + 1 + c)]) << "w " << w << " row " << r;
        EXPECT_EQ(C[static_cast<size_t>(r * (w + 3) + c)], X[static_cast<size_t>(r * 9 + 1 + c)]) << "w " << w << " row " << r;
      }
      for (int64_t c = 0; c < 3; ++c) EXPECT_EQ(C[static_cast<size_t>(r * (w + 3) + w + c)], Z[static_cast<size_t>(r * 3 + c)]) << "w " << w << " row " << r;
    }
  }
}

// Nearest Resize by 2 (a feature pyramid's upsampling: rows doubled, then copied) and by 3 and
// 1.5 (the column map), asymmetric floor, against the index rule; and a copy by Identity.
TEST_P(RuntimeKernels, ResizeNearestMatchesNaive) {
  for (const auto& [sh, sw] : std::vector<std::pair<float, float>>{{2.f, 2.f}, {3.f, 3.f}, {1.5f, 2.f}, {2.f, 1.5f}}) {
    const int64_t C = 5, H = 12, W = 14, OH = static_cast<int64_t>(std::floor(H * sh)), OW = static_cast<int64_t>(std::floor(W * sw));
    Session s(test::plan_from_text("<ir_version: 8, opset_import: [\"\" : 13]> g (float[1,5,12,14] X) => (float[1,5," + std::to_string(OH) + "," +
                                   std::to_string(OW) + "] Y, float[1,5,12,14] I) {\n  sc = Constant <value = float[4] {1.0, 1.0, " + std::to_string(sh) +
                                   ", " + std::to_string(sw) +
                                   "}> ()\n  Y = Resize <mode = \"nearest\", coordinate_transformation_mode = \"asymmetric\", nearest_mode = \"floor\"> (X, , sc)\n"
                                   "  I = Identity(X) }"));
    const auto x = test::random_floats(static_cast<size_t>(C * H * W), 3700);
    test::feed_f(s, "X", {1, C, H, W}, x);
    s.run();
    EXPECT_EQ(test::values<float>(s, "I"), x);
    const auto y = test::values<float>(s, "Y");
    ASSERT_EQ(static_cast<int64_t>(y.size()), C * OH * OW);
    size_t bad = 0;
    for (int64_t c = 0; c < C; ++c)
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          const auto ih = static_cast<int64_t>(std::floor(static_cast<double>(oh) / sh)), iw = static_cast<int64_t>(std::floor(static_cast<double>(ow) / sw));
          const float want = x[static_cast<size_t>((c * H + std::min(ih, H - 1)) * W + std::min(iw, W - 1))];
          if (y[static_cast<size_t>((c * OH + oh) * OW + ow)] != want && ++bad <= 3)
            ADD_FAILURE() << "scales " << sh << " x " << sw << " at " << c << "," << oh << "," << ow;
        }
    EXPECT_EQ(bad, 0u) << "scales " << sh << " x " << sw;
  }
}

// Transpose by every permutation of rank 3 and the last two axes of rank 4 split over the pool
// (the permutations that are a batch of matrix transposes, of sides 8 or more, in 8 x 8 blocks on
// AVX2, with partial blocks at the sides), and Slice with steps 2 and -2 on the last axis, against
// the index rule.
TEST_P(RuntimeKernels, TransposeAndStridedSliceMatchNaive) {
  const std::vector<std::vector<int64_t>> shapes = {{3, 17, 40}, {2, 85, 9}, {1, 8, 8}, {5, 33, 16}};
  const std::vector<std::vector<int64_t>> perms3 = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
  uint32_t seed = 3800;
  for (const auto& sh : shapes)
    for (const auto& perm : perms3) {
      std::vector<int64_t> os(3);
      for (size_t i = 0; i < 3; ++i) os[i] = sh[static_cast<size_t>(perm[i])];
      auto dims = [](const std::vector<int64_t>& v) { return std::to_string(v[0]) + "," + std::to_string(v[1]) + "," + std::to_string(v[2]); };
      Session s(test::plan_from_text("<ir_version: 8, opset_import: [\"\" : 13]> g (float[" + dims(sh) + "] X) => (float[" + dims(os) +
                                     "] Y) { Y = Transpose <perm = [" + std::to_string(perm[0]) + ", " + std::to_string(perm[1]) + ", " +
                                     std::to_string(perm[2]) + "]> (X) }"));
      const auto x = test::random_floats(static_cast<size_t>(product(sh)), seed++);
      test::feed_f(s, "X", sh, x);
      s.run();
      const auto y = test::values<float>(s, "Y");
      ASSERT_EQ(y.size(), x.size());
      const auto ist = strides_of(sh);
      size_t bad = 0;
      for (int64_t a = 0; a < os[0]; ++a)
        for (int64_t b = 0; b < os[1]; ++b)
          for (int64_t c = 0; c < os[2]; ++c) {
            const int64_t src = a * ist[static_cast<size_t>(perm[0])] + b * ist[static_cast<size_t>(perm[1])] + c * ist[static_cast<size_t>(perm[2])];
            if (y[static_cast<size_t>((a * os[1] + b) * os[2] + c)] != x[static_cast<size_t>(src)] && ++bad <= 3)
              ADD_FAILURE() << "perm " << perm[0] << perm[1] << perm[2] << " of [" << dims(sh) << "] at " << a << "," << b << "," << c;
          }
      EXPECT_EQ(bad, 0u);
    }
  {  // rank 4, [1, 85, 3549]-like with a batch: the last two swapped in each of 6 planes, split over the pool
    Session s(test::plan_from_text(R"(<ir_version: 8, opset_import: ["" : 13]> g (float[2,3,85,300] X) => (float[2,3,300,85] Y) { Y = Transpose <perm = [0, 1, 3, 2]> (X) })"));
    const auto x = test::random_floats(2 * 3 * 85 * 300, 3900);
    test::feed_f(s, "X", {2, 3, 85, 300}, x);
    s.run();
    const auto y = test::values<float>(s, "Y");
    ASSERT_EQ(y.size(), x.size());
    size_t bad = 0;
    for (int64_t p = 0; p < 6; ++p)
      for (int64_t r = 0; r < 300; ++r)
        for (int64_t c = 0; c < 85; ++c)
          if (y[static_cast<size_t>((p * 300 + r) * 85 + c)] != x[static_cast<size_t>((p * 85 + c) * 300 + r)] && ++bad <= 3) ADD_FAILURE() << p << "," << r << "," << c;
    EXPECT_EQ(bad, 0u);
  }
  for (const int64_t step : {int64_t{2}, int64_t{-2}}) {  // a Focus layer's slices of every other column
    Session s(test::plan_from_text("<ir_version: 8, opset_import: [\"\" : 13]> g (float[3,10,41] X) => (float[3,10,20] Y) {\n"
                                   "  a = Constant <value = int64[1] {" + std::string(step > 0 ? "1" : "-1") + "}> ()\n"
                                   "  e = Constant <value = int64[1] {" + std::string(step > 0 ? "41" : "-41") + "}> ()\n"
                                   "  ax = Constant <value = int64[1] {2}> ()\n  st = Constant <value = int64[1] {" + std::to_string(step) +
                                   "}> ()\n  Y = Slice(X, a, e, ax, st) }"));
    const auto x = test::random_floats(3 * 10 * 41, 4000);
    test::feed_f(s, "X", {3, 10, 41}, x);
    s.run();
    const auto y = test::values<float>(s, "Y");
    ASSERT_EQ(y.size(), size_t{600});
    for (int64_t r = 0; r < 30; ++r)
      for (int64_t c = 0; c < 20; ++c) {
        const int64_t col = step > 0 ? 1 + 2 * c : 40 - 2 * c;
        EXPECT_EQ(y[static_cast<size_t>(r * 20 + c)], x[static_cast<size_t>(r * 41 + col)]) << "step " << step << " row " << r << " col " << c;
      }
  }
}

namespace {

// The model Y = op <attrs> (X) of X [1, C, H, W] and Y [1, C, OH, OW].
std::string pool_model(const std::string& op, const std::string& attrs, int64_t C, int64_t H, int64_t W, int64_t OH, int64_t OW) {
  const std::string c = std::to_string(C);
  return "<ir_version: 8, opset_import: [\"\" : 13]> g (float[1," + c + "," + std::to_string(H) + "," + std::to_string(W) + "] X) => (float[1," + c + "," +
         std::to_string(OH) + "," + std::to_string(OW) + "] Y) { Y = " + op + " <" + attrs + "> (X) }";
}

// The pads (top, left, bottom, right) and ceil_mode attributes.
std::string pads_attr(int64_t pt, int64_t pl, int64_t pb, int64_t pr, bool ceil) {
  return "pads = [" + std::to_string(pt) + ", " + std::to_string(pl) + ", " + std::to_string(pb) + ", " + std::to_string(pr) +
         "], ceil_mode = " + (ceil ? "1" : "0");
}

// Runs the one-MaxPool model `text` on x ([1, C, H, W]) and compares each output with the max
// over its window (kh x kw, stride sh x sw, from row -pt and column -pl) of the input values
// inside the plane, a NaN among them winning. Reports the first three differences.
void expect_max_pool_naive(const std::string& text, const std::vector<float>& x, int64_t C, int64_t H, int64_t W, int64_t OH, int64_t OW,
                           int64_t kh, int64_t kw, int64_t sh, int64_t sw, int64_t pt, int64_t pl) {
  Session s(test::plan_from_text(text));
  test::feed_f(s, "X", {1, C, H, W}, x);
  s.run();
  const auto y = test::values<float>(s, "Y");
  ASSERT_EQ(static_cast<int64_t>(y.size()), C * OH * OW) << text;
  size_t bad = 0;
  for (int64_t p = 0; p < C; ++p)
    for (int64_t oh = 0; oh < OH; ++oh)
      for (int64_t ow = 0; ow < OW; ++ow) {
        float m = -std::numeric_limits<float>::infinity();
        bool is_nan = false;
        for (int64_t i = 0; i < kh; ++i)
          for (int64_t j = 0; j < kw; ++j) {
            const int64_t r = sh * oh - pt + i, col = sw * ow - pl + j;
            if (r < 0 || r >= H || col < 0 || col >= W) continue;
            const float v = x[static_cast<size_t>((p * H + r) * W + col)];
            is_nan = is_nan || std::isnan(v);
            m = std::max(m, v);
          }
        const float got = y[static_cast<size_t>((p * OH + oh) * OW + ow)];
        if (!(is_nan ? std::isnan(got) : got == m) && ++bad <= 3)
          ADD_FAILURE() << text << " at " << p << "," << oh << "," << ow << ": " << got << ", want " << (is_nan ? NAN : m);
      }
  EXPECT_EQ(bad, 0u) << text;
}

}  // namespace

// Stride-2 2x2 and 3x3 max pools with every window inside the plane (AVX-512 sixteen outputs a
// step, the window's third column from the next step's vector; AVX2 eight): SqueezeNet 1.1's
// 111, 55, 27 (ceil_mode) and 13, rows of 8-40 (a partial last step, one output), odd and even
// sizes, against the max over each window, with NaNs that win: in the first and last columns,
// at column 32 (the third column of output 15's window, from the next step), at column 16 (output
// 7's, from the next step on AVX2) and past the last window (read by no output).
TEST_P(RuntimeKernels, MaxPoolStride2MatchesNaive) {
  struct Case {
    int64_t H, W, k;
    bool ceil;
  };
  const std::vector<Case> cases = {{111, 111, 3, true}, {55, 55, 3, true}, {27, 27, 3, true}, {13, 13, 3, true}, {20, 17, 3, false},
                                   {9, 40, 3, false},   {34, 33, 3, false}, {8, 67, 3, false}, {40, 33, 2, false}, {6, 64, 2, false},
                                   {5, 3, 3, false},    {7, 35, 2, true}};
  uint32_t seed = 4200;
  for (const Case& c : cases) {
    const int64_t C = 3;
    const int64_t OH = (c.H - c.k + (c.ceil ? 1 : 0)) / 2 + 1, OW = (c.W - c.k + (c.ceil ? 1 : 0)) / 2 + 1;
    const std::string text = pool_model("MaxPool",
                                        "kernel_shape = [" + std::to_string(c.k) + ", " + std::to_string(c.k) + "], strides = [2, 2], ceil_mode = " +
                                            (c.ceil ? "1" : "0"),
                                        C, c.H, c.W, OH, OW);
    auto x = test::random_floats(static_cast<size_t>(C * c.H * c.W), seed++, -5.f, 5.f);
    const float nan = std::numeric_limits<float>::quiet_NaN();
    x[static_cast<size_t>(c.H * c.W + c.W + 1)] = nan;                                // plane 1, row 1, column 1
    x[static_cast<size_t>(2 * c.H * c.W + 2 * c.W - 1)] = nan;                          // plane 2, row 1, the last column
    if (c.W > 32) x[static_cast<size_t>(2 * c.H * c.W + 4 * c.W + 32)] = nan;            // plane 2, row 4, column 32
    if (c.W > 16 && c.H > 6) x[static_cast<size_t>(6 * c.W + 16)] = nan;                // plane 0, row 6, column 16
    x[static_cast<size_t>(c.H * c.W - 1)] = nan;                                      // plane 0's last element
    expect_max_pool_naive(text, x, C, c.H, c.W, OH, OW, c.k, c.k, 2, 2, 0, 0);
  }
}

// Pools of planes one column wide with windows one column wide ([1, C, H, 1], HAR-CNN's 1-D model
// exported as 2-D), which run as the 1-D pool of each column: max and average (without the
// padding in the count), strides 1-3, pads at either end, against the window's max (NaN winning)
// and mean.
TEST_P(RuntimeKernels, PoolsOverColumnsMatchNaive) {
  struct Case {
    int64_t H, k, s, pt, pb;
  };
  const std::vector<Case> cases = {{128, 2, 2, 0, 0}, {64, 2, 2, 0, 0}, {33, 3, 1, 1, 1}, {40, 5, 3, 2, 0}, {7, 4, 2, 0, 3}};
  uint32_t seed = 4300;
  for (const Case& c : cases) {
    const int64_t C = 5, OH = (c.H + c.pt + c.pb - c.k) / c.s + 1;
    const std::string attrs = "kernel_shape = [" + std::to_string(c.k) + ", 1], strides = [" + std::to_string(c.s) + ", 1], pads = [" +
                              std::to_string(c.pt) + ", 0, " + std::to_string(c.pb) + ", 0]";
    auto x = test::random_floats(static_cast<size_t>(C * c.H), seed++, -5.f, 5.f);
    x[static_cast<size_t>(c.H + 1)] = std::numeric_limits<float>::quiet_NaN();  // plane 1, row 1
    expect_max_pool_naive(pool_model("MaxPool", attrs, C, c.H, 1, OH, 1), x, C, c.H, 1, OH, 1, c.k, 1, c.s, 1, c.pt, 0);
    x[static_cast<size_t>(c.H + 1)] = 0.25f;
    Session s(test::plan_from_text(pool_model("AveragePool", attrs, C, c.H, 1, OH, 1)));
    test::feed_f(s, "X", {1, C, c.H, 1}, x);
    s.run();
    const auto y = test::values<float>(s, "Y");
    ASSERT_EQ(static_cast<int64_t>(y.size()), C * OH);
    for (int64_t p = 0; p < C; ++p)
      for (int64_t oh = 0; oh < OH; ++oh) {
        double sum = 0;
        int64_t n = 0;
        for (int64_t i = 0; i < c.k; ++i) {
          const int64_t r = c.s * oh - c.pt + i;
          if (r < 0 || r >= c.H) continue;
          sum += x[static_cast<size_t>(p * c.H + r)];
          ++n;
        }
        EXPECT_NEAR(y[static_cast<size_t>(p * OH + oh)], sum / static_cast<double>(n), 1e-5) << "H " << c.H << " plane " << p << " row " << oh;
      }
  }
}

// Stride-2 2x2 and 3x3 max pools with padding (ResNet-50's 3x3 with pads of 1 on 112x112), which
// pool a copy of each plane padded with -inf: pads at the start, the end or both, ceil_mode, with
// NaNs in the first and last rows and columns, against the max over each window inside the plane.
TEST_P(RuntimeKernels, MaxPoolStride2PaddedMatchesNaive) {
  struct Case {
    int64_t H, W, k, pt, pl, pb, pr;
    bool ceil;
  };
  const std::vector<Case> cases = {{112, 112, 3, 1, 1, 1, 1, false}, {15, 20, 2, 1, 1, 1, 1, false}, {9, 33, 3, 2, 2, 0, 0, true},
                                   {10, 17, 3, 0, 0, 1, 2, false},   {7, 41, 2, 1, 0, 0, 0, true},   {5, 3, 3, 1, 1, 1, 1, false}};
  uint32_t seed = 4400;
  for (const Case& c : cases) {
    const int64_t C = 3;
    auto out = [&](int64_t n, int64_t pad) { return (n + pad - c.k + (c.ceil ? 1 : 0)) / 2 + 1; };
    const int64_t OH = out(c.H, c.pt + c.pb), OW = out(c.W, c.pl + c.pr);
    const std::string text = pool_model("MaxPool",
                                        "kernel_shape = [" + std::to_string(c.k) + ", " + std::to_string(c.k) + "], strides = [2, 2], " +
                                            pads_attr(c.pt, c.pl, c.pb, c.pr, c.ceil),
                                        C, c.H, c.W, OH, OW);
    auto x = test::random_floats(static_cast<size_t>(C * c.H * c.W), seed++, -5.f, 5.f);
    const float nan = std::numeric_limits<float>::quiet_NaN();
    x[0] = nan;                                                   // plane 0, row 0, column 0
    x[static_cast<size_t>(c.H * c.W + c.W - 1)] = nan;            // plane 1, row 0, the last column
    x[static_cast<size_t>(3 * c.H * c.W - 1)] = nan;              // plane 2's last element
    expect_max_pool_naive(text, x, C, c.H, c.W, OH, OW, c.k, c.k, 2, 2, c.pt, c.pl);
  }
}

// Stride-1 max pools (the window max by doubling along the padded plane: YOLOX's SPP 5x5, 9x9
// and 13x13 padded to the same size; uneven windows and pads, ceil_mode, windows wider than the
// plane) against the max over each window inside the input, with NaN inputs winning.
TEST_P(RuntimeKernels, MaxPoolStride1MatchesNaive) {
  struct Case {
    int64_t H, W, kh, kw, pt, pl, pb, pr;
    bool ceil;
  };
  const std::vector<Case> cases = {{13, 13, 5, 5, 2, 2, 2, 2, false},  {13, 13, 9, 9, 4, 4, 4, 4, false}, {13, 13, 13, 13, 6, 6, 6, 6, false},
                                   {20, 17, 3, 2, 1, 0, 1, 1, false},  {7, 30, 2, 7, 0, 3, 1, 3, true},   {6, 5, 11, 9, 5, 4, 5, 4, false},
                                   {40, 41, 3, 3, 0, 0, 0, 0, false},  {9, 12, 1, 4, 0, 0, 0, 0, false}};
  uint32_t seed = 4100;
  for (const Case& c : cases) {
    const int64_t C = 3;
    const int64_t OH = c.H + c.pt + c.pb - c.kh + 1, OW = c.W + c.pl + c.pr - c.kw + 1;
    const std::string text = pool_model("MaxPool",
                                        "kernel_shape = [" + std::to_string(c.kh) + ", " + std::to_string(c.kw) + "], " +
                                            pads_attr(c.pt, c.pl, c.pb, c.pr, c.ceil),
                                        C, c.H, c.W, OH, OW);
    auto x = test::random_floats(static_cast<size_t>(C * c.H * c.W), seed++, -5.f, 5.f);
    x[static_cast<size_t>(c.H * c.W + c.W + 1)] = std::numeric_limits<float>::quiet_NaN();  // plane 1, row 1, column 1
    expect_max_pool_naive(text, x, C, c.H, c.W, OH, OW, c.kh, c.kw, 1, 1, c.pt, c.pl);
  }
}
