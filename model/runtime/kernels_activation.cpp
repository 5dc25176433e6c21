// Activations: Relu, Sigmoid, Tanh, LeakyRelu, PRelu, Elu, Selu, Celu, HardSigmoid, HardSwish,
// Softplus, Softsign, ThresholdedRelu, Mish, Gelu, Shrink, Clip.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <limits>
#include <type_traits>
#include <utility>

#include "model/runtime/avx512.h"
#include "model/runtime/broadcast.h"
#include "model/runtime/compute.h"
#include "model/runtime/exp_lanes.h"
#include "model/runtime/half_lanes.h"
#include "model/runtime/kernel.h"

namespace nnxr::runtime {
namespace {


// A float activation with attributes a, b read at plan time.
template <class Fn>
KernelFactory act(const char* a_name, float a_def, const char* b_name, float b_def, Fn fn) {
  return [=](const KernelInit& init) {
    const double a = init.attrs().get_float(a_name, a_def);
    const double b = b_name ? init.attrs().get_float(b_name, b_def) : 0.0;
    return make_kernel([=](KernelContext& ctx) {
      dispatch_float(ctx, ctx.in(0).dtype(), [&](auto tag) {
        using T = decltype(tag);
        const T ta = static_cast<T>(a), tb = static_cast<T>(b);
        unary_loop<T>(ctx, ctx.in(0), ctx.out(0), [=](T x) { return static_cast<T>(fn(x, ta, tb)); });
      });
    });
  };
}

// Float Relu, Clip, HardSigmoid and HardSwish W lanes at a time (GCC vectors: the same
// comparisons and operations as the scalar expressions of the generic kernels, so the same
// results, NaN included), in place.
enum class Piecewise { Relu, Clip, HardSigmoid, HardSwish, LeakyRelu };

template <Piecewise K, class V>
[[gnu::always_inline]] inline void piecewise(V& x, float a, float b) {
  const V zero = V{} + 0.f, one = V{} + 1.f;
  if constexpr (K == Piecewise::Relu) {
    x = x > zero ? x : zero;
  } else if constexpr (K == Piecewise::Clip) {  // a = lo, b = hi
    const V lo = a - V{}, hi = b - V{};  // (x - +0 is x, -0 included)
    x = x < lo ? lo : (x > hi ? hi : x);
  } else if constexpr (K == Piecewise::LeakyRelu) {  // a = alpha
    x = x >= zero ? x : x * a;
  } else {
    // The product or quotient rounded before the sum, as in the scalar kernels (the build
    // contracts a * x + b into a fused multiply-add where the target has FMA; the empty asm
    // keeps the two steps apart).
    V t = K == Piecewise::HardSigmoid ? x * a : x / 6.f;
    asm("" : "+v"(t));
    t = t + (K == Piecewise::HardSigmoid ? b : 0.5f);
    t = t < one ? t : one;   // std::min(1, t)
    t = zero < t ? t : zero;  // std::max(0, t)
    x = K == Piecewise::HardSigmoid ? t : x * t;
  }
}

// Lanes<W>::F read and written at any float's address (as _mm256_loadu_ps's __m256_u).
template <int W>
struct Unaligned;
template <>
struct Unaligned<4> {
  using F = float __attribute__((vector_size(16), __may_alias__, aligned(4)));
};
template <>
struct Unaligned<8> {
  using F = float __attribute__((vector_size(32), __may_alias__, aligned(4)));
};
template <>
struct Unaligned<16> {
  using F = float __attribute__((vector_size(64), __may_alias__, aligned(4)));
};

template <int W, Piecewise K>
[[gnu::always_inline]] inline void piecewise_body(const float* x, float* y, int64_t n, float a, float b) {
  using V = typename Lanes<W>::F;
  // Whole-vector unaligned loads and stores (as _mm256_loadu_ps's type). A memcpy of the two
  // vectors was expanded, under the generic tuning's split 256-bit moves, into 128-bit halves
  // through the stack, each vector then read back whole: a failed store forwarding on every
  // vector, 5x slower than the AVX-512 body on the AVX2 path (ResNet-50's Relu after each
  // residual Add: 1.0 ms against 0.2 ms on 56x56x256).
  using U = typename Unaligned<W>::F;
  int64_t i = 0;
  for (; i + 2 * W <= n; i += 2 * W) {
    V v0 = *reinterpret_cast<const U*>(x + i), v1 = *reinterpret_cast<const U*>(x + i + W);
    piecewise<K>(v0, a, b);
    piecewise<K>(v1, a, b);
    *reinterpret_cast<U*>(y + i) = v0;
    *reinterpret_cast<U*>(y + i + W) = v1;
  }
  for (; i < n; ++i) {
    float v = x[i];
    piecewise<K>(v, a, b);
    y[i] = v;
  }
}
template <Piecewise K>
__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma"))) void piecewise_avx512(const float* x, float* y, int64_t n, float a, float b) {
  piecewise_body<16, K>(x, y, n, a, b);
}
template <Piecewise K>
__attribute__((target("avx2,fma"))) void piecewise_avx2(const float* x, float* y, int64_t n, float a, float b) {
  piecewise_body<8, K>(x, y, n, a, b);
}
template <Piecewise K>
void piecewise_sse(const float* x, float* y, int64_t n, float a, float b) {
  piecewise_body<4, K>(x, y, n, a, b);
}

// y = K(x) on a float tensor, split over the pool as unary_loop does.
template <Piecewise K>
void piecewise_f32(KernelContext& ctx, const Value& x, Value& y, float a, float b) {
  y.reset(DType::Float, x.dims());
  const float* px = x.as<float>().data();
  float* py = y.mutable_as<float>().data();
  const auto f = cpu_has_avx512() ? piecewise_avx512<K> : cpu_has_avx2_fma() ? piecewise_avx2<K> : piecewise_sse<K>;
  const int64_t n = x.elements();
  if (n >= (1 << 16)) ctx.pool().parallel_for(n, 1 << 14, [&](int64_t b0, int64_t e0) { f(px + b0, py + b0, e0 - b0, a, b); });
  else f(px, py, n, a, b);
}

// Float16 activations read and written as float16 (no float copy of the tensor): the rows of
// half_lanes.h's policy for the active set, each value widened in registers, the float kernel's
// lane arithmetic (piecewise, or the Sigmoid kernel's), one rounding to float16.
template <Piecewise K>
struct HalfPiecewise {
  static constexpr bool kSigmoid = false;
  float a = 0, b = 0;
  template <class V>
  [[gnu::always_inline]] void apply(V& v) const {
    piecewise<K>(v, a, b);
  }
};
struct HalfSigmoid {
  static constexpr bool kSigmoid = true;
};

// y = f(x) on a float16 tensor, split over the pool as piecewise_f32 does.
template <class F>
void half_unary(KernelContext& ctx, const Value& x, Value& y, const F& f) {
  y.reset(DType::Float16, x.dims());
  const uint16_t* px = x.as<uint16_t>().data();
  uint16_t* py = y.mutable_as<uint16_t>().data();
  const auto row = cpu_has_avx512() ? &HalfAvx512::map<F> : cpu_has_avx2_fma() ? &HalfAvx2::map<F> : &HalfPortable::map<F>;
  const int64_t n = x.elements();
  if (n >= (1 << 16)) ctx.pool().parallel_for(n, 1 << 14, [&](int64_t b0, int64_t e0) { row(px + b0, py + b0, e0 - b0, f); });
  else row(px, py, n, f);
}

inline float exp_vec(float x) {
  exp_lanes<float, int32_t>(x);
  return x;
}

using F4 = float __attribute__((vector_size(16)));
using I4 = int32_t __attribute__((vector_size(16)));

template <class T>
T sigmoid(T x) {
  if constexpr (std::is_same_v<T, float>) return 1.f / (1.f + exp_vec(-x));
  // Stable for large |x|.
  if (x >= 0) return T(1) / (T(1) + std::exp(-x));
  const T e = std::exp(x);
  return e / (T(1) + e);
}

}  // namespace

namespace {

// sigmoid_f32 without AVX2 (the portable path): 8 floats at a time in two SSE registers,
// exp_vec's operations on each lane, two vectors per step.
template <int W = 8>
[[gnu::always_inline]] inline void sigmoid_body(const float* x, float* y, int64_t n) {
  using V = typename Lanes<W>::F;
  using VI = typename Lanes<W>::I;
  int64_t i = 0;
  for (; i + 2 * W <= n; i += 2 * W) {
    V out[2];
    for (int u = 0; u < 2; ++u) {  // two independent chains
      V t;
      std::memcpy(&t, x + i + W * u, sizeof t);
      t = -t;
      exp_lanes<V, VI>(t);
      out[u] = 1.f / (1.f + t);
    }
    std::memcpy(y + i, out, sizeof out);
  }
  for (; i + 4 <= n; i += 4) {
    F4 v;
    std::memcpy(&v, x + i, sizeof v);
    v = -v;
    exp_lanes<F4, I4>(v);
    const F4 out = 1.f / (1.f + v);
    std::memcpy(y + i, &out, sizeof out);
  }
  for (; i < n; ++i) y[i] = sigmoid(x[i]);
}

// AVX-512: avx512::sigmoid16 (fused multiply-adds), two vectors a step, the tail masked.
NNXR_AVX512 void sigmoid_avx512(const float* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m512 a = avx512::sigmoid16(_mm512_loadu_ps(x + i)), b = avx512::sigmoid16(_mm512_loadu_ps(x + i + 16));
    _mm512_storeu_ps(y + i, a);
    _mm512_storeu_ps(y + i + 16, b);
  }
  for (; i < n; i += 16) {
    const __mmask16 k = avx512::lanes(n - i);
    _mm512_mask_storeu_ps(y + i, k, avx512::sigmoid16(_mm512_maskz_loadu_ps(k, x + i)));
  }
}
// AVX2: avx2::sigmoid8 (fused multiply-adds), two vectors a step, the tail through a buffer.
__attribute__((target("avx2,fma"))) void sigmoid_avx2(const float* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256 a = avx2::sigmoid8(_mm256_loadu_ps(x + i)), b = avx2::sigmoid8(_mm256_loadu_ps(x + i + 8));
    _mm256_storeu_ps(y + i, a);
    _mm256_storeu_ps(y + i + 8, b);
  }
  for (; i < n; i += 8) {
    const int64_t m = std::min<int64_t>(8, n - i);
    const __m256i k = avx2::tail_mask(m);
    _mm256_maskstore_ps(y + i, k, avx2::sigmoid8(_mm256_maskload_ps(x + i, k)));
  }
}
void sigmoid_sse(const float* x, float* y, int64_t n) { sigmoid_body(x, y, n); }

// softmax_row_f32 on W floats at a time: the row's maximum (NaN ignored, as the scalar
// comparison does), exp_lanes of x - max into y (0 below -87, where exp_lanes clamps) with a sum in W float lanes, then y times
// 1 / sum (the sum of the lanes taken in double, then the last partial vector's values). The last
// n % W values in one vector too (one at a time before: an attention's 6 heads of [197, 197]
// scores with their Softmax 0.427 -> 0.408 ms, Intel Xeon, 1 thread, medians of 4 alternating runs).
template <int W>
[[gnu::always_inline]] inline void softmax_row_body(const float* x, float* y, int64_t n) {
  using V = typename Lanes<W>::F;
  using VI = typename Lanes<W>::I;
  constexpr float kInf = std::numeric_limits<float>::infinity();
  V mv = V{} - kInf;
  int64_t k = 0;
  for (; k + W <= n; k += W) {
    V v;
    std::memcpy(&v, x + k, sizeof v);
    mv = v > mv ? v : mv;
  }
  float lanes[W];
  std::memcpy(lanes, &mv, sizeof mv);
  float m = -kInf;
  for (int i = 0; i < W; ++i) m = lanes[i] > m ? lanes[i] : m;
  for (; k < n; ++k) m = x[k] > m ? x[k] : m;
  // exp(t - m) of the W floats at t into e: 0 below exp_lanes' clamp (-inf: a masked position).
  const auto exp_shifted = [m](const float* t, V& e) __attribute__((always_inline)) {
    V d;
    std::memcpy(&d, t, sizeof d);
    d = d - m;
    e = d;
    exp_lanes<V, VI>(e);
    e = d < -87.f ? V{} : e;
  };
  V sv = V{};
  for (k = 0; k + W <= n; k += W) {
    V t;
    exp_shifted(x + k, t);
    std::memcpy(y + k, &t, sizeof t);
    sv += t;
  }
  std::memcpy(lanes, &sv, sizeof sv);
  double s = 0;
  for (int i = 0; i < W; ++i) s += lanes[i];
  if (k < n) {  // the last n - k (< W) in one vector, the lanes past n at -inf (exp: 0, dropped)
    const int64_t rem = n - k;
    float t[W];
    for (int i = 0; i < W; ++i) t[i] = i < rem ? x[k + i] : -kInf;
    V e;
    exp_shifted(t, e);
    std::memcpy(t, &e, sizeof e);
    for (int64_t i = 0; i < rem; ++i) {
      y[k + i] = t[i];
      s += t[i];
    }
  }
  const float inv = static_cast<float>(1.0 / s);
  for (k = 0; k < n; ++k) y[k] *= inv;
}
// softmax_rows_f32 for short rows (n <= kShortSoftmax): W rows at a time, one row per lane. The
// rows are transposed into t[k] (lane j holds x[(r + j) * n + k]); then the same steps as
// softmax_row_body per lane (the maximum with NaN ignored, exp_lanes of x - max, 0 below -87),
// the sum in float and y times 1 / sum. The rows left over take softmax_row_body.
constexpr int64_t kShortSoftmax = 8;
template <int W>
[[gnu::always_inline]] inline void softmax_rows_body(const float* x, float* y, int64_t rows, int64_t n) {
  using V = typename Lanes<W>::F;
  using VI = typename Lanes<W>::I;
  constexpr float kInf = std::numeric_limits<float>::infinity();
  int64_t r = 0;
  if (n <= kShortSoftmax) {
    float t[kShortSoftmax][W];
    for (; r + W <= rows; r += W) {
      const float* xr = x + r * n;
      for (int j = 0; j < W; ++j)
        for (int64_t k = 0; k < n; ++k) t[k][j] = xr[j * n + k];
      V m = V{} - kInf;
      for (int64_t k = 0; k < n; ++k) {
        V v;
        std::memcpy(&v, t[k], sizeof v);
        m = v > m ? v : m;
      }
      V s = V{};
      for (int64_t k = 0; k < n; ++k) {
        V d;
        std::memcpy(&d, t[k], sizeof d);
        d = d - m;
        V e = d;
        exp_lanes<V, VI>(e);
        e = d < -87.f ? V{} : e;
        std::memcpy(t[k], &e, sizeof e);
        s += e;
      }
      const V inv = 1.f / s;
      for (int64_t k = 0; k < n; ++k) {
        V e;
        std::memcpy(&e, t[k], sizeof e);
        e = e * inv;
        std::memcpy(t[k], &e, sizeof e);
      }
      float* yr = y + r * n;
      for (int j = 0; j < W; ++j)
        for (int64_t k = 0; k < n; ++k) yr[j * n + k] = t[k][j];
    }
  }
  for (; r < rows; ++r) softmax_row_body<W>(x + r * n, y + r * n, n);
}
__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma"))) void softmax_row_avx512(const float* x, float* y, int64_t n) {
  softmax_row_body<16>(x, y, n);
}
__attribute__((target("avx2,fma"))) void softmax_row_avx2(const float* x, float* y, int64_t n) { softmax_row_body<8>(x, y, n); }
void softmax_row_sse(const float* x, float* y, int64_t n) { softmax_row_body<4>(x, y, n); }
__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma"))) void softmax_rows_avx512(const float* x, float* y, int64_t rows, int64_t n) {
  softmax_rows_body<16>(x, y, rows, n);
}
__attribute__((target("avx2,fma"))) void softmax_rows_avx2(const float* x, float* y, int64_t rows, int64_t n) {
  softmax_rows_body<8>(x, y, rows, n);
}
void softmax_rows_sse(const float* x, float* y, int64_t rows, int64_t n) { softmax_rows_body<4>(x, y, rows, n); }

// The epilogue's element loops (vectorised by the compiler; AVX2 where available).
// One pass: y[i] += bias (when bias_add), z[i] = f(y[i]).
template <class F>
[[gnu::always_inline]] inline void bias_then(float* y, float* z, int64_t n, bool bias_add, float bias, F f) {
  if (bias_add) {
    for (int64_t i = 0; i < n; ++i) {
      const float v = y[i] + bias;
      y[i] = v;
      z[i] = f(v);
    }
  } else {
    for (int64_t i = 0; i < n; ++i) z[i] = f(y[i]);
  }
}

// addend: Add's, at the same offset as y and z.
[[gnu::always_inline]] inline void epilogue_body(const Epilogue& e, float* y, float* z, const float* addend, int64_t n, bool bias_add, float bias) {
  // The same expressions as the Relu, Clip, LeakyRelu and Add kernels.
  switch (e.kind) {
    case Epilogue::Kind::Relu: bias_then(y, z, n, bias_add, bias, [](float v) { return v > 0.f ? v : 0.f; }); break;
    case Epilogue::Kind::Clip: {
      const float lo = e.lo, hi = e.hi;
      bias_then(y, z, n, bias_add, bias, [lo, hi](float v) { return v < lo ? lo : v > hi ? hi : v; });
      break;
    }
    case Epilogue::Kind::LeakyRelu: {
      const float a = e.alpha;
      bias_then(y, z, n, bias_add, bias, [a](float v) { return v >= 0.f ? v : a * v; });
      break;
    }
    case Epilogue::Kind::Add:
      if (bias_add) {
        for (int64_t i = 0; i < n; ++i) {
          const float v = y[i] + bias;
          y[i] = v;
          z[i] = v + addend[i];
        }
      } else {
        for (int64_t i = 0; i < n; ++i) z[i] = y[i] + addend[i];
      }
      break;
    default:  // bias only
      if (bias_add)
        for (int64_t i = 0; i < n; ++i) y[i] += bias;
      break;
  }
}
__attribute__((target("avx2,fma"))) void epilogue_avx2(const Epilogue& e, float* y, float* z, const float* addend, int64_t n, bool bias_add,
                                                        float bias) {
  epilogue_body(e, y, z, addend, n, bias_add, bias);
}
// 16 floats a step where the CPU has AVX-512.
__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,prefer-vector-width=512"))) void epilogue_avx512(
    const Epilogue& e, float* y, float* z, const float* addend, int64_t n, bool bias_add, float bias) {
  epilogue_body(e, y, z, addend, n, bias_add, bias);
}
void epilogue_sse(const Epilogue& e, float* y, float* z, const float* addend, int64_t n, bool bias_add, float bias) {
  epilogue_body(e, y, z, addend, n, bias_add, bias);
}

}  // namespace

void sigmoid_f32(const float* x, float* y, int64_t n) {
  (cpu_has_avx512() ? sigmoid_avx512 : cpu_has_avx2_fma() ? sigmoid_avx2 : sigmoid_sse)(x, y, n);
}

void softmax_row_f32(const float* x, float* y, int64_t n) {
  (cpu_has_avx512() ? softmax_row_avx512 : cpu_has_avx2_fma() ? softmax_row_avx2 : softmax_row_sse)(x, y, n);
}

void softmax_rows_f32(const float* x, float* y, int64_t rows, int64_t n) {
  (cpu_has_avx512() ? softmax_rows_avx512 : cpu_has_avx2_fma() ? softmax_rows_avx2 : softmax_rows_sse)(x, y, rows, n);
}

void softmax_row_naive(const float* x, float* y, int64_t n) {
  double m = -std::numeric_limits<double>::infinity(), s = 0;
  for (int64_t k = 0; k < n; ++k) m = x[k] > m ? x[k] : m;
  for (int64_t k = 0; k < n; ++k) s += std::exp(x[k] - m);
  for (int64_t k = 0; k < n; ++k) y[k] = static_cast<float>(std::exp(x[k] - m) / s);
}

void tanh_f32(const float* x, float* y, int64_t n) {
  constexpr int64_t kChunk = 256;
  float s[kChunk];
  for (int64_t i0 = 0; i0 < n; i0 += kChunk) {
    const int64_t m = std::min(kChunk, n - i0);
    for (int64_t k = 0; k < m; ++k) s[k] = 2.f * x[i0 + k];
    sigmoid_f32(s, s, m);
    for (int64_t k = 0; k < m; ++k) {
      const float v = x[i0 + k], z = v * v;
      const float near0 = v + v * z * ((((-5.70498872745E-3f * z + 2.06390887954E-2f) * z - 5.37397155531E-2f) * z + 1.33314422036E-1f) * z - 3.33332819422E-1f);
      y[i0 + k] = std::fabs(v) < 0.625f ? near0 : 2.f * s[k] - 1.f;
    }
  }
}

void sigmoid_naive(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = static_cast<float>(1.0 / (1.0 + std::exp(-static_cast<double>(x[i]))));
}

void epilogue_apply(const EpilogueOut& out, float* y, int64_t offset, int64_t n, bool bias_add, float bias) {
  const Epilogue* e = out.epi;
  const bool sig = e && (e->kind == Epilogue::Kind::Sigmoid || e->kind == Epilogue::Kind::SiLU);
  // The bias and the piecewise-linear activations (and Add) in one pass (the pass skips the
  // sigmoid kinds).
  static constexpr Epilogue kBiasOnly{Epilogue::Kind::Sigmoid};
  const float* addend = out.addend ? out.addend + offset : nullptr;
  if (bias_add || (e && !sig))
    (cpu_has_avx512() ? epilogue_avx512 : cpu_has_avx2_fma() ? epilogue_avx2 : epilogue_sse)(e && !sig ? *e : kBiasOnly, y, e ? out.z1 + offset : nullptr, addend, n, bias_add, bias);
  if (!sig) return;
  float* z = out.z1 + offset;
  sigmoid_f32(y, z, n);  // as the Sigmoid kernel
  if (e->kind == Epilogue::Kind::SiLU) {
    float* z2 = out.z2 + offset;
    for (int64_t i = 0; i < n; ++i) z2[i] = y[i] * z[i];  // as the Mul kernel
  }
}

void epilogue_naive(const Epilogue& e, const float* y, float* z1, float* z2, int64_t n, const float* addend) {
  for (int64_t i = 0; i < n; ++i) {
    const double v = y[i];
    double r = 0;
    switch (e.kind) {
      case Epilogue::Kind::Relu: r = v > 0 ? v : 0; break;
      case Epilogue::Kind::Clip: r = v < e.lo ? e.lo : v > e.hi ? e.hi : v; break;
      case Epilogue::Kind::LeakyRelu: r = v >= 0 ? v : e.alpha * v; break;
      case Epilogue::Kind::Sigmoid:
      case Epilogue::Kind::SiLU: r = 1.0 / (1.0 + std::exp(-v)); break;
      case Epilogue::Kind::Add: r = v + addend[i]; break;
    }
    z1[i] = static_cast<float>(r);
    if (e.kind == Epilogue::Kind::SiLU) z2[i] = static_cast<float>(v * r);
  }
}

void register_activation(Registry& r) {
  r.add("Relu", [](const KernelInit&) {
    return make_kernel([](KernelContext& ctx) {
      if (ctx.in(0).dtype() == DType::Float16) {
        // On the bits: x > 0 (positive, not zero, not NaN: 0x0001..0x7c00) stays, the rest is +0,
        // as the float kernel gives.
        return unary_loop<uint16_t>(ctx, ctx.in(0), ctx.out(0), [](uint16_t h) { return h - 1u < 0x7c00u ? h : uint16_t{0}; });
      }
      if (ctx.in(0).dtype() == DType::Float) return piecewise_f32<Piecewise::Relu>(ctx, ctx.in(0), ctx.out(0), 0.f, 0.f);
      dispatch_numeric(ctx, ctx.in(0).dtype(), [&](auto tag) {
        using T = decltype(tag);
        unary_loop<T>(ctx, ctx.in(0), ctx.out(0), [](T x) { return x > T(0) ? x : T(0); });
      });
    });
  }, false);  // float16 on its bits
  r.add("Sigmoid", [](const KernelInit& init) {
    auto generic = act("", 0, nullptr, 0, [](auto x, auto, auto) { return sigmoid(x); })(init);
    return make_kernel([generic = std::shared_ptr<Kernel>(std::move(generic))](KernelContext& ctx) {
      const Value& x = ctx.in(0);
      if (x.dtype() == DType::Float16) return half_unary(ctx, x, ctx.out(0), HalfSigmoid{});
      if (x.dtype() != DType::Float) return generic->run(ctx);
      Value& y = ctx.out(0);
      y.reset(DType::Float, x.dims());
      const float* px = x.as<float>().data();
      float* py = y.mutable_as<float>().data();
      ctx.pool().parallel_for(x.elements(), 1 << 14, [&](int64_t b, int64_t e) { sigmoid_f32(px + b, py + b, e - b); });
    });
  }, false);  // float16 by half_unary
  r.add("Tanh", [](const KernelInit&) {
    return make_kernel([](KernelContext& ctx) {
      const Value& x = ctx.in(0);
      Value& y = ctx.out(0);
      if (x.dtype() == DType::Float16) {  // tanh_f32 on each widened value, in registers
        y.reset(DType::Float16, x.dims());
        return half_map(&ctx.pool(), x.as<uint16_t>().data(), y.mutable_as<uint16_t>().data(), x.elements(), HalfTanh{});
      }
      if (x.dtype() == DType::Float) {  // tanh_f32 (a few ulp), in blocks of 16K over the pool
        y.reset(DType::Float, x.dims());
        const float* px = x.as<float>().data();
        float* py = y.mutable_as<float>().data();
        const int64_t n = x.elements(), block = int64_t{1} << 14;
        if (n < (int64_t{1} << 16)) return tanh_f32(px, py, n);
        return ctx.pool().parallel_for((n + block - 1) / block, 1, [&](int64_t b, int64_t e) {
          tanh_f32(px + b * block, py + b * block, std::min(n, e * block) - b * block);
        });
      }
      dispatch_float(ctx, x.dtype(), [&](auto tag) {
        using T = decltype(tag);
        unary_loop<T>(ctx, x, ctx.out(0), [](T v) { return std::tanh(v); });
      });
    });
  }, false);  // float16 by half_map
  r.add("LeakyRelu", [](const KernelInit& init) {
    const float alpha = static_cast<float>(init.attrs().get_float("alpha", 0.01f));
    auto generic = act("alpha", 0.01f, nullptr, 0, [](auto x, auto a, auto) { return x >= 0 ? x : a * x; })(init);
    return make_kernel([alpha, generic = std::shared_ptr<Kernel>(std::move(generic))](KernelContext& ctx) {
      if (ctx.in(0).dtype() != DType::Float16) return generic->run(ctx);
      half_unary(ctx, ctx.in(0), ctx.out(0), HalfPiecewise<Piecewise::LeakyRelu>{alpha, 0.f});
    });
  }, false);  // float16 by half_unary
  r.add("Elu", act("alpha", 1.0f, nullptr, 0, [](auto x, auto a, auto) { return x >= 0 ? x : a * (std::exp(x) - 1); }));
  r.add("Selu", act("alpha", 1.67326319217681884765625f, "gamma", 1.05070102214813232421875f,
                    [](auto x, auto a, auto g) { return x > 0 ? g * x : g * (a * std::exp(x) - a); }));
  r.add("Celu", act("alpha", 1.0f, nullptr, 0, [](auto x, auto a, auto) {
          using T = decltype(x);
          return std::max(T(0), x) + std::min(T(0), a * (std::exp(x / a) - 1));
        }));
  r.add("HardSigmoid", [](const KernelInit& init) {
    const float a = static_cast<float>(init.attrs().get_float("alpha", 0.2f)), b = static_cast<float>(init.attrs().get_float("beta", 0.5f));
    auto generic = act("alpha", 0.2f, "beta", 0.5f, [](auto x, auto a, auto b) {
      using T = decltype(x);
      return std::max(T(0), std::min(T(1), a * x + b));
    })(init);
    return make_kernel([a, b, generic = std::shared_ptr<Kernel>(std::move(generic))](KernelContext& ctx) {
      if (ctx.in(0).dtype() == DType::Float16) return half_unary(ctx, ctx.in(0), ctx.out(0), HalfPiecewise<Piecewise::HardSigmoid>{a, b});
      if (ctx.in(0).dtype() != DType::Float) return generic->run(ctx);
      piecewise_f32<Piecewise::HardSigmoid>(ctx, ctx.in(0), ctx.out(0), a, b);
    });
  }, false);  // float16 by half_unary
  r.add("HardSwish", [](const KernelInit& init) {
    auto generic = act("", 0, nullptr, 0, [](auto x, auto, auto) {
      using T = decltype(x);
      return x * std::max(T(0), std::min(T(1), x / T(6) + T(0.5)));
    })(init);
    return make_kernel([generic = std::shared_ptr<Kernel>(std::move(generic))](KernelContext& ctx) {
      if (ctx.in(0).dtype() == DType::Float16) return half_unary(ctx, ctx.in(0), ctx.out(0), HalfPiecewise<Piecewise::HardSwish>{});
      if (ctx.in(0).dtype() != DType::Float) return generic->run(ctx);
      piecewise_f32<Piecewise::HardSwish>(ctx, ctx.in(0), ctx.out(0), 0.f, 0.f);
    });
  }, false);  // float16 by half_unary
  r.add("Softplus", act("", 0, nullptr, 0, [](auto x, auto, auto) {
          using T = decltype(x);
          return x > T(20) ? x : std::log1p(std::exp(x));
        }));
  r.add("Softsign", act("", 0, nullptr, 0, [](auto x, auto, auto) { return x / (1 + std::fabs(x)); }));
  r.add("ThresholdedRelu", act("alpha", 1.0f, nullptr, 0, [](auto x, auto a, auto) {
          using T = decltype(x);
          return x > a ? x : T(0);
        }));
  r.add("Mish", act("", 0, nullptr, 0, [](auto x, auto, auto) {
          using T = decltype(x);
          return x * std::tanh(x > T(20) ? x : std::log1p(std::exp(x)));
        }));
  r.add("Shrink", act("lambd", 0.5f, "bias", 0.0f, [](auto x, auto l, auto b) {
          using T = decltype(x);
          return x < -l ? x + b : x > l ? x - b : T(0);
        }));
  r.add("Gelu", [](const KernelInit& init) {
    const bool tanh_approx = init.attrs().get_string("approximate", "none") == "tanh";
    return make_kernel([tanh_approx](KernelContext& ctx) {
      const auto gelu = [tanh_approx](auto x) {
        using T = decltype(x);
        if (tanh_approx) return static_cast<T>(0.5 * x * (1 + std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x))));
        return static_cast<T>(0.5 * x * (1 + std::erf(x * 0.7071067811865476)));
      };
      const Value& x = ctx.in(0);
      if (x.dtype() == DType::Float16) {  // the float expression on each widened value, in registers
        Value& y = ctx.out(0);
        y.reset(DType::Float16, x.dims());
        return half_map(&ctx.pool(), x.as<uint16_t>().data(), y.mutable_as<uint16_t>().data(), x.elements(),
                        half_scalar([gelu](float v) { return gelu(v); }));
      }
      dispatch_float(ctx, x.dtype(), [&](auto tag) {
        using T = decltype(tag);
        unary_loop<T>(ctx, x, ctx.out(0), [gelu](T v) { return gelu(v); });
      });
    });
  }, false);  // float16 by half_map

  // Clip: min/max attributes before opset 11, optional inputs from 11. Float16 by half_unary, the
  // bounds taken as the float kernel takes them from the widened inputs.
  r.add("Clip", [](const KernelInit& init) {
    const bool attr_form = init.opset < 11;
    const double amin = init.attrs().get_float("min", -std::numeric_limits<float>::max());
    const double amax = init.attrs().get_float("max", std::numeric_limits<float>::max());
    return make_kernel([=](KernelContext& ctx) {
      const Value& a = ctx.in(0);
      auto bounds = [&](auto tag) {
        using T = decltype(tag);
        T lo = std::numeric_limits<T>::lowest(), hi = std::numeric_limits<T>::max();
        if (attr_form) {
          lo = static_cast<T>(amin);
          hi = static_cast<T>(amax);
        } else {
          for (size_t i = 1; i < 3; ++i)
            if (ctx.has_input(i) && ctx.in(i).dtype() != a.dtype())
              ctx.fail("input " + ctx.input_name(i) + " must have the element type of " + ctx.input_name(0));
          if (ctx.has_input(1)) lo = static_cast<T>(read_scalar(ctx, 1));
          if (ctx.has_input(2)) hi = static_cast<T>(read_scalar(ctx, 2));
        }
        return std::pair{lo, hi};
      };
      if (a.dtype() == DType::Float16) {
        const auto [lo, hi] = bounds(float{});
        return half_unary(ctx, a, ctx.out(0), HalfPiecewise<Piecewise::Clip>{lo, hi});
      }
      dispatch_numeric(ctx, a.dtype(), [&](auto tag) {
        using T = decltype(tag);
        const auto [lo, hi] = bounds(T{});
        if constexpr (std::is_same_v<T, float>) piecewise_f32<Piecewise::Clip>(ctx, a, ctx.out(0), lo, hi);
        else unary_loop<T>(ctx, a, ctx.out(0), [lo, hi](T x) { return x < lo ? lo : x > hi ? hi : x; });
      });
    });
  }, false);

  // PRelu: slope broadcast unidirectionally to X.
  r.add("PRelu", [](const KernelInit&) {
    return make_kernel([](KernelContext& ctx) {
      const Value &x = ctx.in(0), &slope = ctx.in(1);
      if (x.dtype() != slope.dtype()) ctx.fail("slope " + ctx.input_name(1) + " must have the element type of " + ctx.input_name(0));
      dispatch_numeric(ctx, x.dtype(), [&](auto tag) {
        using T = decltype(tag);
        Shape xs = x.dims(), ss = slope.dims();
        // Opset < 7 allowed a [C] slope for [N, C, ...]; treat a 1-D slope of size C as [C, 1, ...].
        if (ss.size() == 1 && xs.size() >= 2 && ss[0] == xs[1] && ss[0] != xs.back()) ss.insert(ss.end(), xs.size() - 2, 1);
        const Shape shapes[2] = {xs, ss};
        Shape os = broadcast_shapes(ctx, shapes);
        if (os != xs) ctx.fail("slope " + ctx.input_name(1) + " " + shape_str(slope.shape()) + " does not broadcast to " + shape_str(xs));
        Value& out = ctx.out(0);
        out.reset(x.dtype(), xs);
        const T* px = x.as<T>().data();
        const T* ps = slope.as<T>().data();
        T* po = out.mutable_as<T>().data();
        std::array<std::vector<int64_t>, 2> st{strides_of(xs), broadcast_strides(ss, os)};
        for_each_broadcast<2>(os, st, &ctx.pool(), [&](const std::array<int64_t, 2>& off, const std::array<int64_t, 2>& is, int64_t o, int64_t len) {
          for (int64_t i = 0; i < len; ++i) {
            const T v = px[off[0] + i * is[0]];
            po[o + i] = v < T(0) ? static_cast<T>(v * ps[off[1] + i * is[1]]) : v;
          }
        });
      });
    });
  });
}

}  // namespace nnxr::runtime
