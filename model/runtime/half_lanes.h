// Internal: float16 rows computed in float registers, for the element-wise and activation kernels
// that read and write float16 tensors without widening them whole. Each policy gives W float
// lanes of type V (a GCC vector type, so the float kernels' lane expressions apply unchanged):
//   load(p)         W float16 at p widened to float (exact);
//   load_n(p, n)    lanes [0, n) (n in [1, W]); nothing past them is read, the other lanes are 0;
//   store(p, v)     W floats narrowed to float16 at p, rounded to nearest even (as
//                   model::float_to_half; infinities kept, NaN stays NaN);
//   store_n(p,v,n)  lanes [0, n) of that; nothing past them is written;
//   splat(h)        one float16 widened into every lane;
//   sigmoid(v)      the Sigmoid kernel's float arithmetic on this instruction set.
// HalfAvx512: vcvtph2ps / vcvtps2ph on 16 lanes (AVX-512 F), the tails masked (BW/VL); HalfAvx2:
// F16C on 8 lanes, the tails through a small buffer; HalfPortable: 4 lanes converted one element
// at a time by model::half_to_float / float_to_half (no F16C).
#pragma once

#include <cstdint>
#include <cstring>

#include "model/half.h"
#include "model/runtime/compute.h"
#include "model/runtime/exp_lanes.h"
#include "model/runtime/thread_pool.h"

#if defined(__x86_64__) || defined(__i386__)
#include "model/runtime/avx512.h"
#endif

namespace nnxr::runtime {

// The loops of every policy, built for its instruction set (inside each policy, so that its
// conversions inline into them):
//   map(x, z, n, f): z[i] = f(x[i]) for n float16 (z may be x): f.apply(v) on the lanes, or the
//     policy's sigmoid when F::kSigmoid; two vectors a step, then the tail by load_n / store_n.
//   zip(x, sx, y, sy, z, n, f): z[i] = f(x[i sx], y[i sy]) (f.apply(a, b) leaves the result in
//     a; z may be x or y where that one's stride is 1): vectors where both strides are 0 or 1 (a
//     single value splat once), one float at a time otherwise.
// Every float16 value is widened exactly and every result rounded once, so each result equals
// the float kernel's on the widened inputs, rounded to float16.
#define NNXR_HALF_LOOPS(ATTR)                                                                                         \
  template <class F>                                                                                                  \
  ATTR static void map(const uint16_t* x, uint16_t* z, int64_t n, const F& f) {                                       \
    int64_t i = 0;                                                                                                    \
    for (; i + 2 * W <= n; i += 2 * W) {                                                                              \
      V a = load(x + i), b = load(x + i + W);                                                                         \
      if constexpr (F::kSigmoid) {                                                                                    \
        a = sigmoid(a);                                                                                               \
        b = sigmoid(b);                                                                                               \
      } else {                                                                                                        \
        f.apply(a);                                                                                                   \
        f.apply(b);                                                                                                   \
      }                                                                                                               \
      store(z + i, a);                                                                                                \
      store(z + i + W, b);                                                                                            \
    }                                                                                                                 \
    for (; i < n; i += W) {                                                                                           \
      const int64_t m = n - i < W ? n - i : W;                                                                        \
      V a = load_n(x + i, m);                                                                                         \
      if constexpr (F::kSigmoid) a = sigmoid(a);                                                                      \
      else f.apply(a);                                                                                                \
      store_n(z + i, a, m);                                                                                           \
    }                                                                                                                 \
  }                                                                                                                   \
  template <class F>                                                                                                  \
  ATTR static void zip(const uint16_t* x, int64_t sx, const uint16_t* y, int64_t sy, uint16_t* z, int64_t n, const F& f) { \
    if ((sx != 0 && sx != 1) || (sy != 0 && sy != 1)) {                                                               \
      for (int64_t i = 0; i < n; ++i) {                                                                               \
        float a = model::half_to_float(x[i * sx]);                                                                    \
        f.apply(a, model::half_to_float(y[i * sy]));                                                                  \
        z[i] = model::float_to_half(a);                                                                               \
      }                                                                                                               \
      return;                                                                                                         \
    }                                                                                                                 \
    const V xs = splat(x[0]), ys = splat(y[0]);                                                                       \
    int64_t i = 0;                                                                                                    \
    for (; i + 2 * W <= n; i += 2 * W) {                                                                              \
      V a0 = sx ? load(x + i) : xs, a1 = sx ? load(x + i + W) : xs;                                                   \
      const V b0 = sy ? load(y + i) : ys, b1 = sy ? load(y + i + W) : ys;                                             \
      f.apply(a0, b0);                                                                                                \
      f.apply(a1, b1);                                                                                                \
      store(z + i, a0);                                                                                               \
      store(z + i + W, a1);                                                                                           \
    }                                                                                                                 \
    for (; i < n; i += W) {                                                                                           \
      const int64_t m = n - i < W ? n - i : W;                                                                        \
      V a = sx ? load_n(x + i, m) : xs;                                                                               \
      f.apply(a, sy ? load_n(y + i, m) : ys);                                                                         \
      store_n(z + i, a, m);                                                                                           \
    }                                                                                                                 \
  }

struct HalfPortable {
  static constexpr int W = 4;
  using V = Lanes<4>::F;
  using VI = Lanes<4>::I;
  [[gnu::always_inline]] static V load(const uint16_t* p) { return load_n(p, W); }
  [[gnu::always_inline]] static V load_n(const uint16_t* p, int64_t n) {
    float t[W] = {};
    for (int64_t k = 0; k < n; ++k) t[k] = model::half_to_float(p[k]);
    V v;
    std::memcpy(&v, t, sizeof v);
    return v;
  }
  [[gnu::always_inline]] static void store(uint16_t* p, V v) { store_n(p, v, W); }
  [[gnu::always_inline]] static void store_n(uint16_t* p, V v, int64_t n) {
    float t[W];
    std::memcpy(t, &v, sizeof v);
    for (int64_t k = 0; k < n; ++k) p[k] = model::float_to_half(t[k]);
  }
  [[gnu::always_inline]] static V splat(uint16_t h) { return model::half_to_float(h) - V{}; }  // (x - +0 is x, -0 included)
  // sigmoid_f32's portable lanes: exp_lanes of -v, then 1 / (1 + e).
  [[gnu::always_inline]] static V sigmoid(V v) {
    V t = -v;
    exp_lanes<V, VI>(t);
    return 1.f / (1.f + t);
  }
  NNXR_HALF_LOOPS()
};

#if defined(__x86_64__) || defined(__i386__)
#define NNXR_AVX2_F16C_LANES __attribute__((target("avx2,fma,f16c"), always_inline))

struct HalfAvx2 {
  static constexpr int W = 8;
  using V = __m256;
  NNXR_AVX2_F16C_LANES static V load(const uint16_t* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
  NNXR_AVX2_F16C_LANES static V load_n(const uint16_t* p, int64_t n) {
    alignas(16) uint16_t t[W] = {};
    std::memcpy(t, p, static_cast<size_t>(n) * sizeof *p);
    return _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(t)));
  }
  NNXR_AVX2_F16C_LANES static void store(uint16_t* p, V v) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
  NNXR_AVX2_F16C_LANES static void store_n(uint16_t* p, V v, int64_t n) {
    alignas(16) uint16_t t[W];
    _mm_store_si128(reinterpret_cast<__m128i*>(t), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    std::memcpy(p, t, static_cast<size_t>(n) * sizeof *p);
  }
  NNXR_AVX2_F16C_LANES static V splat(uint16_t h) { return _mm256_cvtph_ps(_mm_set1_epi16(static_cast<short>(h))); }
  NNXR_AVX2_F16C_LANES static V sigmoid(V v) { return avx2::sigmoid8(v); }
  NNXR_HALF_LOOPS(__attribute__((target("avx2,fma,f16c"))))
};

struct HalfAvx512 {
  static constexpr int W = 16;
  using V = __m512;
  // (The zero-masked conversions with every lane set: the plain forms start from an undefined
  // register, which GCC 12 reports as uninitialised once inlined.)
  [[gnu::always_inline]] NNXR_AVX512 static V widen(__m256i h) { return _mm512_maskz_cvtph_ps(0xffff, h); }
  [[gnu::always_inline]] NNXR_AVX512 static __m256i narrow(V v) { return _mm512_maskz_cvtps_ph(0xffff, v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  [[gnu::always_inline]] NNXR_AVX512 static V load(const uint16_t* p) { return widen(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))); }
  [[gnu::always_inline]] NNXR_AVX512 static V load_n(const uint16_t* p, int64_t n) { return widen(_mm256_maskz_loadu_epi16(avx512::lanes(n), p)); }
  [[gnu::always_inline]] NNXR_AVX512 static void store(uint16_t* p, V v) { _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), narrow(v)); }
  [[gnu::always_inline]] NNXR_AVX512 static void store_n(uint16_t* p, V v, int64_t n) { _mm256_mask_storeu_epi16(p, avx512::lanes(n), narrow(v)); }
  [[gnu::always_inline]] NNXR_AVX512 static V splat(uint16_t h) { return widen(_mm256_set1_epi16(static_cast<short>(h))); }
  [[gnu::always_inline]] NNXR_AVX512 static V sigmoid(V v) { return avx512::sigmoid16(v); }
  NNXR_HALF_LOOPS(NNXR_AVX512)
};
#endif

// A float function applied lane by lane, as the float kernel applies it to each element (libm's
// std::tanh, std::exp, ... on a float): map() of every policy takes it, so each float16 is widened
// in registers, fn computed in float and the result rounded once.
template <class Fn>
struct HalfScalar {
  static constexpr bool kSigmoid = false;
  Fn fn;
  template <class V>
  [[gnu::always_inline]] void apply(V& v) const {
    constexpr size_t W = sizeof(V) / sizeof(float);
    float t[W];
    std::memcpy(t, &v, sizeof v);
    for (size_t k = 0; k < W; ++k) t[k] = fn(t[k]);
    std::memcpy(&v, t, sizeof v);
  }
};
template <class Fn>
HalfScalar<Fn> half_scalar(Fn fn) {
  return HalfScalar<Fn>{fn};
}
// A float kernel over a span (erf_f32, tanh_f32: the float Erf and Tanh kernels') on the lanes.
template <void (*Kernel)(const float*, float*, int64_t)>
struct HalfVectorKernel {
  static constexpr bool kSigmoid = false;
  template <class V>
  [[gnu::always_inline]] void apply(V& v) const {
    constexpr int64_t W = sizeof(V) / sizeof(float);
    float t[W];
    std::memcpy(t, &v, sizeof v);
    Kernel(t, t, W);
    std::memcpy(&v, t, sizeof v);
  }
};
using HalfErf = HalfVectorKernel<erf_f32>;
using HalfTanh = HalfVectorKernel<tanh_f32>;

// y[i] = f(x[i]) for n float16 by the map() of the active set's policy (y may be x), split over
// `pool` (null: this thread) in blocks of 16K from 64K elements, as the float kernels split.
template <class F>
void half_map(ThreadPool* pool, const uint16_t* x, uint16_t* y, int64_t n, const F& f) {
#if defined(__x86_64__) || defined(__i386__)
  const auto row = cpu_has_avx512() ? &HalfAvx512::map<F> : cpu_has_avx2_fma() ? &HalfAvx2::map<F> : &HalfPortable::map<F>;
#else
  const auto row = &HalfPortable::map<F>;
#endif
  if (pool && pool->threads() > 1 && n >= (1 << 16)) pool->parallel_for(n, 1 << 14, [&](int64_t b, int64_t e) { row(x + b, y + b, e - b, f); });
  else row(x, y, n, f);
}

}  // namespace nnxr::runtime
