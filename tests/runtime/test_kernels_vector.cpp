// The vector kernels of the depthwise convolutions, the sigmoid, the global pools and the float
// and float16 element-wise arithmetic and activations, once per instruction set the CPU has
// (Portable, Avx2, Avx512 in the test names; a set the CPU lacks is skipped with a message),
// against naive references; and stream_span, AVX2's and AVX-512's helper that writes staged
// outputs past the cache.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>

#include "model/half.h"
#if defined(__x86_64__) || defined(__i386__)
#include "model/runtime/avx512.h"
#endif
#include "model/runtime/compute.h"
#include "model/runtime/half_lanes.h"
#include "model/runtime/kernel.h"
#include "model/runtime/runtime.h"
#include "model/runtime/value.h"
#include "kernel_support.h"
#include "support.h"

using namespace nnxr::runtime;

namespace {

class RuntimeVectorKernels : public test::PerIsa {};
NNXR_INSTANTIATE_PER_ISA(RuntimeVectorKernels);

using Aligned = std::vector<float, CacheAligned<float>>;

// |a - b| <= 1e-4 sqrt(K) (1 + |b|) for every element (K: the reduction length).
void expect_close(const float* a, const float* b, size_t n, int64_t K, const std::string& what) {
  const double tol = 1e-4 * std::sqrt(static_cast<double>(K));
  size_t bad = 0;
  for (size_t i = 0; i < n; ++i)
    if (!(std::fabs(a[i] - b[i]) <= tol * (1 + std::fabs(b[i]))) && ++bad <= 3)
      ADD_FAILURE() << what << ": element " << i << " optimised " << a[i] << " reference " << b[i];
  EXPECT_EQ(bad, 0u) << what;
}

ConvGeom depthwise_geom(int64_t N, int64_t C, int64_t K, int64_t s, int64_t ph, int64_t pw, int64_t qh, int64_t qw, int64_t H, int64_t W) {
  ConvGeom g;
  g.N = N;
  g.C = g.M = g.group = C;
  g.in = {H, W};
  g.kernel = {K, K};
  g.stride = {s, s};
  g.dilation = {1, 1};
  g.pad_begin = {ph, pw};
  g.pad_end = {qh, qw};
  for (size_t d = 0; d < 2; ++d) g.out.push_back(conv_out_dim(g.in[d], K, s, 1, g.pad_begin[d] + g.pad_end[d]));
  return g;
}

std::string geom_str(const ConvGeom& g) {
  return "N" + std::to_string(g.N) + " C" + std::to_string(g.C) + " k" + std::to_string(g.kernel[0]) + " s" + std::to_string(g.stride[0]) + " in" +
         shape_str(g.in) + " p" + shape_str(g.pad_begin) + shape_str(g.pad_end);
}

std::string dims_str(const std::vector<int64_t>& d) {
  std::string t = "[";
  for (size_t i = 0; i < d.size(); ++i) t += (i ? "," : "") + std::to_string(d[i]);
  return t + "]";
}

// The multidirectional broadcast of shapes a and b by index arithmetic (the arithmetic tests'
// reference): the output's shape and, for each of its elements, the flat indices read in a and b.
struct Broadcast {
  Broadcast(const std::vector<int64_t>& a, const std::vector<int64_t>& b)
      : out(std::max(a.size(), b.size())), pa(out.size(), 1), pb(out.size(), 1) {
    const size_t rank = out.size();
    for (size_t i = 0; i < a.size(); ++i) pa[rank - a.size() + i] = a[i];
    for (size_t i = 0; i < b.size(); ++i) pb[rank - b.size() + i] = b[i];
    for (size_t i = 0; i < rank; ++i) elements *= static_cast<size_t>(out[i] = std::max(pa[i], pb[i]));
  }
  std::pair<size_t, size_t> sources(size_t flat) const {
    size_t rem = flat, ia = 0, ib = 0, sta = 1, stb = 1;
    for (size_t d = out.size(); d-- > 0;) {
      const size_t idx = rem % static_cast<size_t>(out[d]);
      rem /= static_cast<size_t>(out[d]);
      if (pa[d] > 1) ia += idx * sta;
      if (pb[d] > 1) ib += idx * stb;
      sta *= static_cast<size_t>(pa[d]);
      stb *= static_cast<size_t>(pb[d]);
    }
    return {ia, ib};
  }
  std::vector<int64_t> out, pa, pb;
  size_t elements = 1;
};

}  // namespace

// 3x3 and 5x5 depthwise convolutions, strides 1 and 2, paddings up to K - 1 on each side, rows
// narrower than a vector, of whole vectors, of whole and partial steps of 32 (7, 14, 28, 56, 112:
// the planes of mobile networks), each epilogue and none, through conv_auto (the AVX-512 kernels
// take the 5x5 and the stride-1 3x3, the AVX2 one the other 3x3 and without AVX-512 the 5x5, the
// rest the general depthwise kernel), against the naive Conv and activation. The fused sigmoid equals the Sigmoid kernel's
// bit for bit (within 1e-6 where the stride-2 3x3 kernel's AVX2 arithmetic runs on an AVX-512
// CPU).
TEST_P(RuntimeVectorKernels, DepthwiseMatchesNaive) {
  const bool has = GetParam() >= Isa::Avx2;
  EXPECT_EQ(conv_depthwise3x3_applies(depthwise_geom(1, 2, 3, 1, 1, 1, 1, 1, 8, 8)), has);
  EXPECT_EQ(conv_depthwise3x3_applies(depthwise_geom(1, 2, 5, 2, 2, 2, 2, 2, 8, 8)), has);
  EXPECT_FALSE(conv_depthwise3x3_applies(depthwise_geom(1, 2, 7, 1, 3, 3, 3, 3, 8, 8)));
  std::mt19937 rng(29);
  auto r = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  ThreadPool pool(2);
  int iter = 0;
  auto check = [&](const ConvGeom& g) {
    const Epilogue e = test::epilogue_in_turn(iter);
    const bool with_act = iter % 7 != 6;
    const int64_t K = g.kernel[0];
    const auto x = test::random_floats(static_cast<size_t>(g.N * g.C * product(g.in)), 100 + iter, -2.f, 2.f);
    const auto w = test::random_floats(static_cast<size_t>(g.C * K * K), 200 + iter);
    const auto b = test::random_floats(static_cast<size_t>(g.C), 300 + iter);
    const float* bias = iter % 3 ? b.data() : nullptr;
    const size_t n = static_cast<size_t>(g.N * g.C * product(g.out));
    const auto addend = test::random_floats(n, 400 + iter);
    std::vector<float> ref(n), ref1(n), ref2(n);
    Aligned y(n, 123.f), z1(n, 123.f), z2(n, 123.f);
    conv_naive(g, x.data(), w.data(), bias, ref.data());
    epilogue_naive(e, ref.data(), ref1.data(), ref2.data(), static_cast<int64_t>(n), addend.data());
    conv_auto(g, x.data(), w.data(), bias, y.data(), pool, with_act ? EpilogueOut{&e, z1.data(), z2.data(), addend.data()} : EpilogueOut{});
    const std::string what = geom_str(g) + " epilogue " + (with_act ? std::to_string(static_cast<int>(e.kind)) : "none");
    expect_close(y.data(), ref.data(), n, K * K, what);
    ++iter;
    if (!with_act) return;
    expect_close(z1.data(), ref1.data(), n, K * K, what + " z1");
    if (e.kind == Epilogue::Kind::SiLU) expect_close(z2.data(), ref2.data(), n, K * K, what + " z2");
    if (e.kind == Epilogue::Kind::Sigmoid || e.kind == Epilogue::Kind::SiLU) {
      // Bit for bit where the kernel runs the active set's arithmetic; the stride-2 3x3 kernel
      // runs AVX2's on an AVX-512 CPU (its sigmoid divides where sigmoid_f32 takes vrcp14ps and
      // a Newton step): within 1e-6 there, as the session's fused-versus-separate test requires.
      const bool same_set = !(GetParam() == Isa::Avx512 && K == 3 && g.stride[0] == 2);
      std::vector<float> s(n);
      sigmoid_f32(y.data(), s.data(), static_cast<int64_t>(n));
      size_t differ = 0;
      for (size_t i = 0; i < n; ++i)
        differ += same_set ? std::memcmp(&s[i], &z1[i], sizeof(float)) != 0 : !(std::fabs(s[i] - z1[i]) <= 1e-6f * std::fabs(s[i]));
      EXPECT_EQ(differ, 0u) << what << ": the fused sigmoid differs from sigmoid_f32";
    }
  };
  for (int64_t K : {3, 5})
    for (int64_t s : {1, 2})
      for (int64_t W : {1, 2, 5, 7, 14, 15, 16, 17, 28, 31, 32, 33, 47, 56, 63, 64, 65, 112}) {
        const int64_t H = r(1, 9);
        const int64_t ph = r(0, static_cast<int>(K - 1)), pw = r(0, static_cast<int>(K - 1)), qh = r(0, static_cast<int>(K - 1)),
                      qw = r(0, static_cast<int>(K - 1));
        if (H + ph + qh < K || W + pw + qw < K) continue;
        check(depthwise_geom(r(1, 2), r(2, 5), K, s, ph, pw, qh, qw, H, W));
      }
  // The planes of MobileNet and EfficientNet with their "same" paddings (rows of whole vectors:
  // y streamed when the plane is whole cache lines).
  // Each geometry meets every epilogue kind (seven in a row: the six kinds and none).
  for (const ConvGeom& g : {depthwise_geom(1, 3, 3, 1, 1, 1, 1, 1, 56, 56), depthwise_geom(1, 2, 3, 2, 0, 0, 1, 1, 112, 112),
                            depthwise_geom(1, 3, 5, 1, 2, 2, 2, 2, 14, 14), depthwise_geom(1, 2, 5, 2, 1, 1, 2, 2, 56, 56),
                            depthwise_geom(1, 3, 5, 1, 2, 2, 2, 2, 16, 16), depthwise_geom(1, 4, 3, 1, 1, 1, 1, 1, 7, 7),
                            depthwise_geom(1, 2, 3, 1, 1, 1, 1, 1, 16, 48), depthwise_geom(1, 2, 3, 1, 1, 1, 1, 1, 8, 24)}) {
    iter = (iter + 6) / 7 * 7;
    for (int k = 0; k < 7; ++k) check(g);
  }
}

// sigmoid_f32 at every length up to 70 (every tail), at the ends of the range and on NaN and the
// infinities.
TEST_P(RuntimeVectorKernels, SigmoidTailsAndSpecialValues) {
  constexpr float kInf = std::numeric_limits<float>::infinity(), kNaN = std::numeric_limits<float>::quiet_NaN();
  for (int64_t n = 0; n <= 70; ++n) {
    auto x = test::random_floats(static_cast<size_t>(n), 50 + static_cast<uint32_t>(n), -20.f, 20.f);
    const float special[] = {-kInf, kInf, kNaN, -87.5f, 88.5f, -100.f, 100.f, 0.f, -0.f, 1e-30f};
    for (size_t i = 0; i < x.size() && i < std::size(special); ++i) x[(i * 7) % x.size()] = special[i];
    std::vector<float> ref(x.size()), opt(x.size() + 1, 123.f);
    sigmoid_naive(x.data(), ref.data(), n);
    sigmoid_f32(x.data(), opt.data(), n);
    EXPECT_EQ(opt[static_cast<size_t>(n)], 123.f) << "wrote past n = " << n;
    for (size_t i = 0; i < x.size(); ++i) {
      if (std::isnan(x[i])) {
        EXPECT_TRUE(std::isnan(opt[i])) << "n=" << n;
        continue;
      }
      EXPECT_NEAR(opt[i], ref[i], 4e-7 * std::fabs(ref[i]) + 1e-37) << "x=" << x[i] << " n=" << n;
    }
  }
}

// GlobalAveragePool and GlobalMaxPool over planes of every size around the vector and block
// lengths, at one and two threads, against sums and maxima in double; a NaN anywhere in a plane
// gives NaN for its maximum, and a plane of -inf gives -inf.
TEST_P(RuntimeVectorKernels, GlobalPoolsMatchNaive) {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  for (int64_t HW : {1, 7, 15, 16, 17, 49, 63, 64, 65, 196, 511, 512, 513, 1000, 3136, 12544})
    for (int threads : {1, 2}) {
      const int64_t N = 2, C = 3, planes = N * C;
      auto x = test::random_floats(static_cast<size_t>(planes * HW), 7 + static_cast<uint32_t>(HW), -3.f, 5.f);
      x[static_cast<size_t>(HW / 2)] = std::numeric_limits<float>::quiet_NaN();      // plane 0
      for (int64_t i = 0; i < HW; ++i) x[static_cast<size_t>(2 * HW + i)] = -kInf;  // plane 2
      x[static_cast<size_t>(4 * HW + HW - 1)] = 9.f;                                // plane 4: its last value the largest
      const std::string shape = "[2,3," + std::to_string(HW) + ",1]";
      Session s(test::plan_from_text("<ir_version: 8, opset_import: [\"\" : 13]> g (float" + shape + " X) => (float[2,3,1,1] A, float[2,3,1,1] M) {\n" +
                                     "  A = GlobalAveragePool(X)\n  M = GlobalMaxPool(X) }"),
                {.threads = threads});
      test::feed_f(s, "X", {N, C, HW, 1}, x);
      s.run();
      const auto a = test::values<float>(s, "A"), m = test::values<float>(s, "M");
      ASSERT_EQ(a.size(), static_cast<size_t>(planes));
      ASSERT_EQ(m.size(), static_cast<size_t>(planes));
      for (int64_t p = 0; p < planes; ++p) {
        double sum = 0, mx = -kInf;
        bool nan = false;
        for (int64_t i = 0; i < HW; ++i) {
          const float v = x[static_cast<size_t>(p * HW + i)];
          nan = nan || std::isnan(v);
          sum += v;
          mx = v > mx ? v : mx;
        }
        const std::string what = "HW " + std::to_string(HW) + " plane " + std::to_string(p) + " threads " + std::to_string(threads);
        if (nan) {
          EXPECT_TRUE(std::isnan(a[static_cast<size_t>(p)])) << what;
          EXPECT_TRUE(std::isnan(m[static_cast<size_t>(p)])) << what;
          continue;
        }
        EXPECT_EQ(m[static_cast<size_t>(p)], static_cast<float>(mx)) << what;
        if (std::isinf(sum)) EXPECT_EQ(a[static_cast<size_t>(p)], static_cast<float>(sum / static_cast<double>(HW))) << what;
        else EXPECT_NEAR(a[static_cast<size_t>(p)], sum / static_cast<double>(HW), 1e-6 * (1 + std::fabs(sum / static_cast<double>(HW)))) << what;
      }
    }
}

// ReduceSum, ReduceMean and ReduceMax of X [5, 2, n] over the innermost axis and the innermost
// two (windows of contiguous floats: the vector path) and over the first (strided windows), for
// runs of every length around the vector and block sizes, at one and two threads, against sums
// and maxima in double; a NaN in a window gives NaN for its maximum.
TEST_P(RuntimeVectorKernels, InnermostReductionsMatchNaive) {
  struct Axes {
    const char* list;   // as the attribute and the Constant's values
    int64_t count;      // the axes' number
    bool first;         // axis 0 (else the innermost `count`)
  };
  const Axes cases[] = {{"-1", 1, false}, {"1, 2", 2, false}, {"0", 1, true}};
  for (int64_t n : {1, 7, 15, 16, 17, 63, 64, 65, 384, 511, 512, 513, 1000})
    for (const Axes& ax : cases)
      for (int threads : {1, 2}) {
        const int64_t D0 = 5, D1 = 2;
        auto x = test::random_floats(static_cast<size_t>(D0 * D1 * n), 5 + static_cast<uint32_t>(n), -3.f, 5.f);
        x[static_cast<size_t>(D1 * n + n / 2)] = std::numeric_limits<float>::quiet_NaN();  // X[1, 0, n / 2]
        const std::string list(ax.list), out = ax.first ? "[2," + std::to_string(n) + "]" : ax.count == 2 ? "[5]" : "[5,2]";
        Session s(test::plan_from_text("<ir_version: 8, opset_import: [\"\" : 13]> g (float[5,2," + std::to_string(n) + "] X) => (float" + out +
                                           " S, float" + out + " M, float" + out + " Mx) {\n  a = Constant <value = int64[" +
                                           std::to_string(ax.count) + "] {" + list + "}> ()\n  S = ReduceSum <keepdims = 0> (X, a)\n" +
                                           "  M = ReduceMean <keepdims = 0, axes = [" + list + "]> (X)\n  Mx = ReduceMax <keepdims = 0, axes = [" +
                                           list + "]> (X) }"),
                  {.threads = threads});
        test::feed_f(s, "X", {D0, D1, n}, x);
        s.run();
        // Output o's window: X[o / (D1 n)...] as the axes say.
        const int64_t outputs = ax.first ? D1 * n : ax.count == 2 ? D0 : D0 * D1, window = D0 * D1 * n / outputs;
        const auto sum = test::values<float>(s, "S"), mean = test::values<float>(s, "M"), mx = test::values<float>(s, "Mx");
        ASSERT_EQ(sum.size(), static_cast<size_t>(outputs));
        ASSERT_EQ(mean.size(), static_cast<size_t>(outputs));
        ASSERT_EQ(mx.size(), static_cast<size_t>(outputs));
        for (int64_t o = 0; o < outputs; ++o) {
          double total = 0, top = -std::numeric_limits<double>::infinity();
          bool nan = false;
          for (int64_t w = 0; w < window; ++w) {
            const float v = x[static_cast<size_t>(ax.first ? w * D1 * n + o : o * window + w)];
            nan = nan || std::isnan(v);
            total += v;
            top = v > top ? v : top;
          }
          const std::string what = "n " + std::to_string(n) + " axes " + list + " output " + std::to_string(o) + " threads " + std::to_string(threads);
          if (nan) {
            EXPECT_TRUE(std::isnan(sum[static_cast<size_t>(o)])) << what;
            EXPECT_TRUE(std::isnan(mean[static_cast<size_t>(o)])) << what;
            EXPECT_TRUE(std::isnan(mx[static_cast<size_t>(o)])) << what;
            continue;
          }
          EXPECT_NEAR(sum[static_cast<size_t>(o)], total, 1e-6 * (1 + std::fabs(total))) << what;
          EXPECT_NEAR(mean[static_cast<size_t>(o)], total / static_cast<double>(window), 1e-6 * (1 + std::fabs(total / static_cast<double>(window)))) << what;
          EXPECT_EQ(mx[static_cast<size_t>(o)], static_cast<float>(top)) << what;
        }
      }
}

// Float Add, Sub, Mul and Div with the broadcasts of real networks (a squeeze-excitation scale
// [N, C, 1, 1], a scalar on either side, equal shapes, a last-axis vector, a middle axis), at
// lengths around the vector widths and large enough to be split across threads: bit for bit the
// scalar IEEE operation.
TEST_P(RuntimeVectorKernels, FloatArithmeticMatchesScalar) {
  struct Case {
    std::vector<int64_t> a, b;
  };
  const std::vector<Case> cases = {
      {{1, 5, 7, 7}, {1, 5, 1, 1}}, {{2, 3, 33, 65}, {1, 3, 1, 1}}, {{1, 1}, {3, 37}},      {{4, 31}, {1}},
      {{2, 64, 32, 33}, {2, 64, 32, 33}}, {{3, 17}, {17}},            {{2, 5, 3}, {5, 1}}, {{1, 96, 56, 56}, {1, 96, 1, 1}}};
  const char* ops[] = {"Add", "Sub", "Mul", "Div"};
  for (const Case& c : cases)
    for (int o = 0; o < 4; ++o)
      for (bool swap : {false, true}) {
        const auto& sa = swap ? c.b : c.a;
        const auto& sb = swap ? c.a : c.b;
        size_t na = 1, nb = 1;
        for (int64_t d : sa) na *= static_cast<size_t>(d);
        for (int64_t d : sb) nb *= static_cast<size_t>(d);
        auto a = test::random_floats(na, 11 + static_cast<uint32_t>(o), -4.f, 4.f), b = test::random_floats(nb, 13 + static_cast<uint32_t>(o), 0.5f, 3.f);
        a[0] = std::numeric_limits<float>::infinity();
        b[nb - 1] = -0.f;  // x / -0, inf - inf, a product of -0 (a single value keeps its sign), ...
        // The reference: the broadcast by index arithmetic.
        const Broadcast bc(sa, sb);
        const std::vector<int64_t>& os = bc.out;
        const size_t n = bc.elements;
        Session s(test::plan_from_text(std::string("<ir_version: 8, opset_import: [\"\" : 13]> g (float") + dims_str(sa) + " A, float" + dims_str(sb) +
                                       " B) => (float" + dims_str(os) + " Y) { Y = " + ops[o] + "(A, B) }"),
                  {.threads = 2});
        test::feed_f(s, "A", sa, a);
        test::feed_f(s, "B", sb, b);
        s.run();
        const auto y = test::values<float>(s, "Y");
        ASSERT_EQ(y.size(), n) << ops[o];
        size_t bad = 0;
        for (size_t flat = 0; flat < n; ++flat) {
          const auto [ia, ib] = bc.sources(flat);
          const float u = a[ia], v = b[ib];
          const float want = o == 0 ? u + v : o == 1 ? u - v : o == 2 ? u * v : u / v;
          if (std::memcmp(&want, &y[flat], sizeof want) != 0 && !(std::isnan(want) && std::isnan(y[flat])) && ++bad <= 3)
            ADD_FAILURE() << ops[o] << " " << dims_str(sa) << " " << dims_str(sb) << " element " << flat << ": " << y[flat] << " want " << want;
        }
        EXPECT_EQ(bad, 0u) << ops[o] << " " << dims_str(sa) << " " << dims_str(sb);
      }
}

// Float Relu, Clip, HardSigmoid and HardSwish on every tail length and on a tensor split across
// threads, with NaN, the infinities, signed zeros and the bends of each function: bit for bit the
// scalar expressions of the generic kernels.
TEST_P(RuntimeVectorKernels, PiecewiseActivationsMatchScalar) {
  constexpr float kInf = std::numeric_limits<float>::infinity(), kNaN = std::numeric_limits<float>::quiet_NaN();
  const float lo = -0.75f, hi = 2.5f, alpha = 0.3f, beta = 0.4f;
  auto relu = [](float x) { return x > 0.f ? x : 0.f; };
  auto clip = [&](float x) { return x < lo ? lo : x > hi ? hi : x; };
  auto hsig = [&](float x) { return std::max(0.f, std::min(1.f, alpha * x + beta)); };
  auto hswish = [](float x) { return x * std::max(0.f, std::min(1.f, x / 6.f + 0.5f)); };
  for (int64_t n : {1, 2, 15, 16, 17, 31, 32, 33, 47, 100, 70001}) {
    auto x = test::random_floats(static_cast<size_t>(n), 3 + static_cast<uint32_t>(n), -6.f, 6.f);
    const float special[] = {kNaN, kInf, -kInf, 0.f, -0.f, -3.f, 3.f, lo, hi, -beta / alpha, (1 - beta) / alpha};
    for (size_t i = 0; i < std::size(special); ++i) x[(i * 5) % x.size()] = special[i];
    const std::string shape = "[" + std::to_string(n) + "]";
    Session s(test::plan_from_text("<ir_version: 8, opset_import: [\"\" : 14]> g (float" + shape + " X) => (float" + shape + " R, float" + shape +
                                   " C, float" + shape + " S, float" + shape + " W) {\n" +
                                   "  lo = Constant <value = float {-0.75}> ()\n  hi = Constant <value = float {2.5}> ()\n"
                                   "  R = Relu(X)\n  C = Clip(X, lo, hi)\n  S = HardSigmoid <alpha = 0.3, beta = 0.4> (X)\n  W = HardSwish(X) }"),
              {.threads = 2});
    test::feed_f(s, "X", {n}, x);
    s.run();
    const std::pair<const char*, std::function<float(float)>> fns[] = {{"R", relu}, {"C", clip}, {"S", hsig}, {"W", hswish}};
    for (const auto& [name, f] : fns) {
      const auto y = test::values<float>(s, name);
      ASSERT_EQ(y.size(), x.size()) << name;
      size_t bad = 0;
      for (size_t i = 0; i < x.size(); ++i) {
        const float want = f(x[i]);
        if (std::memcmp(&want, &y[i], sizeof want) != 0 && !(std::isnan(want) && std::isnan(y[i])) && ++bad <= 3)
          ADD_FAILURE() << name << " n=" << n << " x=" << x[i] << ": " << y[i] << " want " << want;
      }
      EXPECT_EQ(bad, 0u) << name << " n=" << n;
    }
  }
}

namespace {

using nnxr::model::DType;

// n float16 values: random in [lo, hi] rounded, with NaN, the infinities, signed zeros, the
// largest finite and a subnormal among them.
std::vector<uint16_t> random_halves(size_t n, uint32_t seed, float lo, float hi) {
  const auto f = test::random_floats(n, seed, lo, hi);
  std::vector<uint16_t> h(n);
  nnxr::model::float_to_half(f.data(), h.data(), n);
  const uint16_t special[] = {0x7e00, 0x7c00, 0xfc00, 0x0000, 0x8000, 0x7bff, 0x0003, 0xbc00};
  for (size_t i = 0; i < std::size(special) && i < n; ++i) h[(i * 7) % n] = special[i];
  return h;
}

bool same_half(uint16_t a, uint16_t b) {
  const bool nan_a = (a & 0x7fff) > 0x7c00, nan_b = (b & 0x7fff) > 0x7c00;
  return nan_a || nan_b ? nan_a == nan_b : a == b;
}

// Row functors for the float16 rows: a + b, and a + a.
struct HalfAdd {
  static constexpr bool kSigmoid = false;
  template <class V>
  [[gnu::always_inline]] void apply(V& a, const V& b) const {
    a = a + b;
  }
};
struct HalfTwice {
  static constexpr bool kSigmoid = false;
  template <class V>
  [[gnu::always_inline]] void apply(V& a) const {
    a = a + a;
  }
};

}  // namespace

// Float16 Add, Sub, Mul and Div read and write float16 (no float copy): with the broadcasts of
// FloatArithmeticMatchesScalar and rows shorter than, equal to and past each vector width, bit for
// bit the scalar float operation on the widened values, rounded once to float16 (NaN as NaN).
TEST_P(RuntimeVectorKernels, Float16ArithmeticMatchesRoundedFloat) {
  struct Case {
    std::vector<int64_t> a, b;
  };
  const std::vector<Case> cases = {{{1, 5, 7, 7}, {1, 5, 1, 1}}, {{2, 3, 33, 65}, {1, 3, 1, 1}}, {{1, 1}, {3, 37}}, {{4, 31}, {1}},
                                   {{2, 64, 32, 33}, {2, 64, 32, 33}}, {{3, 17}, {17}}, {{2, 5, 3}, {5, 1}}, {{1}, {1}},
                                   {{15}, {15}}, {{16}, {16}}, {{47}, {1}}, {{2, 3, 4}, {2, 1, 4}}};
  const char* ops[] = {"Add", "Sub", "Mul", "Div"};
  for (const Case& c : cases)
    for (int o = 0; o < 4; ++o)
      for (bool swap : {false, true}) {
        const auto& sa = swap ? c.b : c.a;
        const auto& sb = swap ? c.a : c.b;
        size_t na = 1, nb = 1;
        for (int64_t d : sa) na *= static_cast<size_t>(d);
        for (int64_t d : sb) nb *= static_cast<size_t>(d);
        const auto a = random_halves(na, 21 + static_cast<uint32_t>(o), -4.f, 4.f), b = random_halves(nb, 23 + static_cast<uint32_t>(o), -3.f, 3.f);
        const Broadcast bc(sa, sb);
        const std::vector<int64_t>& os = bc.out;
        const size_t n = bc.elements;
        Session s(test::plan_from_text(std::string("<ir_version: 8, opset_import: [\"\" : 13]> g (float16") + dims_str(sa) + " A, float16" +
                                       dims_str(sb) + " B) => (float16" + dims_str(os) + " Y) { Y = " + ops[o] + "(A, B) }"),
                  {.threads = 2});
        test::feed(s, "A", DType::Float16, sa, a);
        test::feed(s, "B", DType::Float16, sb, b);
        s.run();
        ASSERT_EQ(s.find("Y")->dtype(), DType::Float16);
        const auto y = test::values<uint16_t>(s, "Y");
        ASSERT_EQ(y.size(), n) << ops[o];
        size_t bad = 0;
        for (size_t flat = 0; flat < n; ++flat) {
          const auto [ia, ib] = bc.sources(flat);
          const float u = nnxr::model::half_to_float(a[ia]), v = nnxr::model::half_to_float(b[ib]);
          const uint16_t want = nnxr::model::float_to_half(o == 0 ? u + v : o == 1 ? u - v : o == 2 ? u * v : u / v);
          if (!same_half(y[flat], want) && ++bad <= 3)
            ADD_FAILURE() << ops[o] << " " << dims_str(sa) << " " << dims_str(sb) << " element " << flat << ": " << std::hex << y[flat] << " want " << want;
        }
        EXPECT_EQ(bad, 0u) << ops[o] << " " << dims_str(sa) << " " << dims_str(sb);
      }
}

// Float16 Sigmoid, Clip, HardSigmoid, HardSwish, LeakyRelu and Relu on every tail length and on a
// tensor split across threads: bit for bit the float kernels of the same instruction set on the
// widened input, rounded once (the piecewise ones: their scalar expressions), and the sigmoid
// within one float16 step of the exact value.
TEST_P(RuntimeVectorKernels, Float16ActivationsMatchRoundedFloat) {
  const char* body =
      "  G = Sigmoid(X)\n  C = Clip(X, LO, HI)\n  S = HardSigmoid <alpha = 0.3, beta = 0.4> (X)\n  W = HardSwish(X)\n"
      "  L = LeakyRelu <alpha = 0.2> (X)\n  R = Relu(X)\n  T = Tanh(X)\n  E = Exp(X)\n  F = Erf(X)\n  M = Softmax(X)\n  Q = Sqrt(X) }";
  const char* names[] = {"G", "C", "S", "W", "L", "R", "T", "E", "F", "M", "Q"};
  auto graph = [&](const std::string& t, int64_t n) {
    const std::string shape = t + "[" + std::to_string(n) + "]";
    std::string b = body;
    for (size_t p; (p = b.find("%T")) != std::string::npos;) b.replace(p, 2, t);
    std::string outs;
    for (const char* nm : names) outs += std::string(outs.empty() ? "" : ", ") + shape + " " + nm;
    return "<ir_version: 8, opset_import: [\"\" : 14]> g (" + shape + " X, " + t + " LO, " + t + " HI) => (" + outs + ") {\n" + b;
  };
  for (int64_t n : {1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 32, 33, 47, 100, 70001}) {
    const auto x = random_halves(static_cast<size_t>(n), 5 + static_cast<uint32_t>(n), -7.f, 7.f);
    std::vector<float> xf(x.size());
    nnxr::model::half_to_float(x.data(), xf.data(), x.size());
    Session sh(test::plan_from_text(graph("float16", n)), {.threads = 2});
    test::feed(sh, "X", DType::Float16, {n}, x);
    test::feed(sh, "LO", DType::Float16, {}, std::vector<uint16_t>{0xba00});  // -0.75
    test::feed(sh, "HI", DType::Float16, {}, std::vector<uint16_t>{0x4100});  // 2.5
    sh.run();
    Session sf(test::plan_from_text(graph("float", n)), {.threads = 2});
    test::feed_f(sf, "X", {n}, xf);
    test::feed_f(sf, "LO", {}, {-0.75f});
    test::feed_f(sf, "HI", {}, {2.5f});
    sf.run();
    for (const char* nm : names) {
      ASSERT_EQ(sh.find(nm)->dtype(), DType::Float16) << nm;
      const auto y = test::values<uint16_t>(sh, nm);
      const auto yf = test::values<float>(sf, nm);
      ASSERT_EQ(y.size(), x.size()) << nm;
      size_t bad = 0;
      for (size_t i = 0; i < x.size(); ++i) {
        const uint16_t want = nnxr::model::float_to_half(yf[i]);
        bool ok = same_half(y[i], want);
        if (ok && nm[0] == 'G' && !std::isnan(xf[i])) {  // and near the exact sigmoid
          const double exact = 1.0 / (1.0 + std::exp(-static_cast<double>(xf[i])));
          ok = std::fabs(nnxr::model::half_to_float(y[i]) - exact) <= std::ldexp(std::max(std::fabs(exact), 6.1e-5), -10);
        }
        if (!ok && ++bad <= 3) ADD_FAILURE() << nm << " n=" << n << " x=" << xf[i] << ": " << std::hex << y[i] << " want " << want;
      }
      EXPECT_EQ(bad, 0u) << nm << " n=" << n;
    }
  }
}

// Gelu (exact and tanh forms) and Softmax over rows of 3 and of 40 (rows of up to 8
// share vector lanes in the float kernel) on float16: the float kernel's result on the widened
// inputs rounded once, bit for bit, at one and two threads.
TEST_P(RuntimeVectorKernels, Float16GeluSoftmaxMatchRoundedFloat) {
  auto graph = [](const char* t, int64_t rows, int64_t n) {
    const std::string sh = std::string(t) + "[" + std::to_string(rows) + "," + std::to_string(n) + "]";
    return "<ir_version: 8, opset_import: [\"\" : 17]> g (" + sh + " X) => (" + sh + " A, " + sh + " B, " + sh + " S, " + sh +
           " L) {\n  A = Gelu(X)\n  B = Gelu <approximate = \"tanh\"> (X)\n  S = Softmax(X)\n  L = LogSoftmax(X) }";
  };
  for (const auto& [rows, n] : {std::pair<int64_t, int64_t>{1000, 3}, {37, 40}, {3, 3000}}) {
    const auto x = random_halves(static_cast<size_t>(rows * n), 77 + static_cast<uint32_t>(n), -6.f, 6.f);
    std::vector<float> xf(x.size());
    nnxr::model::half_to_float(x.data(), xf.data(), x.size());
    for (int threads : {1, 2}) {
      Session sh(test::plan_from_text(graph("float16", rows, n)), {.threads = threads});
      test::feed(sh, "X", DType::Float16, {rows, n}, x);
      sh.run();
      Session sf(test::plan_from_text(graph("float", rows, n)), {.threads = threads});
      test::feed_f(sf, "X", {rows, n}, xf);
      sf.run();
      for (const char* nm : {"A", "B", "S", "L"}) {
        ASSERT_EQ(sh.find(nm)->dtype(), DType::Float16) << nm;
        const auto y = test::values<uint16_t>(sh, nm);
        const auto yf = test::values<float>(sf, nm);
        ASSERT_EQ(y.size(), x.size()) << nm;
        size_t bad = 0;
        for (size_t i = 0; i < x.size(); ++i)
          if (!same_half(y[i], nnxr::model::float_to_half(yf[i])) && ++bad <= 3)
            ADD_FAILURE() << nm << " n=" << n << " x=" << xf[i] << ": " << std::hex << y[i] << " want " << nnxr::model::float_to_half(yf[i]);
        EXPECT_EQ(bad, 0u) << nm << " rows " << rows << " n=" << n << ", " << threads << " threads";
      }
    }
  }
}

// The float16 rows of each instruction set in place (z = x, and z = y under a broadcast x) at
// every length up to three vectors: the same bits as into a separate array.
TEST_P(RuntimeVectorKernels, Float16RowsInPlace) {
  for (int64_t n = 1; n <= 49; ++n) {
    const auto x = random_halves(static_cast<size_t>(n), 31 + static_cast<uint32_t>(n), -9.f, 9.f);
    const auto y = random_halves(static_cast<size_t>(n), 37 + static_cast<uint32_t>(n), -9.f, 9.f);
    std::vector<uint16_t> sum(x.size()), twice(x.size()), sum_in = x, twice_in = x, bsum(y.size()), bsum_in = y;
    auto run = [&](auto policy) {
      using L = decltype(policy);
      L::zip(x.data(), 1, y.data(), 1, sum.data(), n, HalfAdd{});
      L::zip(sum_in.data(), 1, y.data(), 1, sum_in.data(), n, HalfAdd{});
      L::map(x.data(), twice.data(), n, HalfTwice{});
      L::map(twice_in.data(), twice_in.data(), n, HalfTwice{});
      L::zip(x.data(), 0, y.data(), 1, bsum.data(), n, HalfAdd{});
      L::zip(x.data(), 0, bsum_in.data(), 1, bsum_in.data(), n, HalfAdd{});
    };
    switch (GetParam()) {
      case Isa::Avx512: run(HalfAvx512{}); break;
      case Isa::Avx2: run(HalfAvx2{}); break;
      case Isa::Portable: run(HalfPortable{}); break;
    }
    for (int64_t i = 0; i < n; ++i) {
      const float u = nnxr::model::half_to_float(x[static_cast<size_t>(i)]), v = nnxr::model::half_to_float(y[static_cast<size_t>(i)]);
      const size_t k = static_cast<size_t>(i);
      EXPECT_TRUE(same_half(sum[k], nnxr::model::float_to_half(u + v))) << "n=" << n << " i=" << i;
      EXPECT_TRUE(same_half(twice[k], nnxr::model::float_to_half(u + u))) << "n=" << n << " i=" << i;
      EXPECT_TRUE(same_half(bsum[k], nnxr::model::float_to_half(nnxr::model::half_to_float(x[0]) + v))) << "n=" << n << " i=" << i;
      EXPECT_EQ(sum_in[k], sum[k]) << "n=" << n << " i=" << i;
      EXPECT_EQ(twice_in[k], twice[k]) << "n=" << n << " i=" << i;
      EXPECT_EQ(bsum_in[k], bsum[k]) << "n=" << n << " i=" << i;
    }
  }
}

#if defined(__x86_64__) || defined(__i386__)
// stream_span (a convolution's y, staged, written out past the cache where its epilogue keeps its
// own output), AVX2's and AVX-512's, at every offset from a cache line and lengths 0-100: exactly
// the span is written, the whole lines streamed and the partial ones at either end stored,
// nothing around it.
void expect_stream_span_exact(void (*span)(float*, const float*, int64_t), const std::string& set) {
  Aligned src(128), dst(160);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<float>(i) + 0.5f;
  for (int64_t off = 0; off < 16; ++off)
    for (int64_t n = 0; n <= 100; ++n) {
      std::fill(dst.begin(), dst.end(), -1.f);
      span(dst.data() + 16 + off, src.data(), n);
      _mm_sfence();
      for (int64_t i = 0; i < static_cast<int64_t>(dst.size()); ++i) {
        const int64_t at = i - 16 - off;
        const float want = at >= 0 && at < n ? src[static_cast<size_t>(at)] : -1.f;
        if (dst[static_cast<size_t>(i)] != want) {
          ADD_FAILURE() << set << " offset " << off << " length " << n << ": element " << at << " is " << dst[static_cast<size_t>(i)] << ", not "
                        << want;
          break;
        }
      }
    }
}

TEST_P(RuntimeVectorKernels, StreamSpanWritesExactlyTheSpan) {
  switch (GetParam()) {
    case Isa::Avx512: return expect_stream_span_exact(avx512::stream_span, "avx512");
    case Isa::Avx2: return expect_stream_span_exact(avx2::stream_span, "avx2");
    default: GTEST_SKIP() << "no stream_span on the portable set (its kernels store as usual)";
  }
}
#endif
