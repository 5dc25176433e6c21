// Internal: helpers on 8-float AVX2 registers for the kernels built for AVX2 + FMA (functions
// with target("avx2,fma"); callers check cpu_has_avx2_fma()): the piecewise-linear epilogues for
// kernels that apply the activation while their output is still in registers (gemm_packed, the
// 3x3 depthwise kernel), partial stores and loads, even and odd columns (im2col, depthwise and
// pooling with stride 2), and input rows copied into zero-padded rows (the depthwise and the
// few-channel direct convolutions).
#pragma once

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <initializer_list>

#include "model/runtime/compute.h"
#include "model/runtime/exp_lanes.h"

namespace nnxr::runtime::avx2 {

// The activation computed in registers: the same results as the Relu, Clip, LeakyRelu, Sigmoid
// and Add kernels, NaN included. SiLU: activate gives the sigmoid s; the second output is v * s.
// Add: v plus the addend at the same place (store_act reads it; activate returns v).
enum class InReg { None, Relu, Clip, LeakyRelu, Sigmoid, SiLU, Add };

struct ActParams {
  float lo = 0, hi = 0, alpha = 0;
};

inline ActParams act_params(const Epilogue* e) { return e ? ActParams{e->lo, e->hi, e->alpha} : ActParams{}; }

// 1 / (1 + exp(-v)) in 8 lanes (the Sigmoid kernel's AVX2 path and every fused sigmoid of the
// AVX2 kernels: the same results). exp(-v) by exp_lanes' Cephes polynomial with fused
// multiply-adds, written for v itself as avx512::sigmoid16 (the clamp on v, s = -r, the
// polynomial by fnmadd), and 2^n's bits from n + 1.5 * 2^23 + 127 shifted left 23 (the sum's low
// mantissa bits are n + 127) instead of cvt and an integer add: the same floats for every input
// (all 2^32 checked), 18 vector operations where there were 20.
__attribute__((target("avx2,fma"), always_inline)) inline __m256 sigmoid8(__m256 v) {
  const __m256 one = _mm256_set1_ps(1.f);
  const __m256 c = _mm256_max_ps(_mm256_set1_ps(-88.f), _mm256_min_ps(_mm256_set1_ps(87.f), v));  // (a NaN v is the second operand: kept)
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(c, _mm256_set1_ps(-1.44269504088896341f)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 s = _mm256_fmadd_ps(n, _mm256_set1_ps(0.693359375f), c);
  s = _mm256_fmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), s);
  __m256 p = _mm256_set1_ps(1.9875691500E-4f);
  p = _mm256_fnmadd_ps(p, s, _mm256_set1_ps(1.3981999507E-3f));
  p = _mm256_fnmadd_ps(p, s, _mm256_set1_ps(8.3334519073E-3f));
  p = _mm256_fnmadd_ps(p, s, _mm256_set1_ps(4.1665795894E-2f));
  p = _mm256_fnmadd_ps(p, s, _mm256_set1_ps(1.6666665459E-1f));
  p = _mm256_fnmadd_ps(p, s, _mm256_set1_ps(5.0000001201E-1f));
  const __m256 y = _mm256_add_ps(_mm256_fmsub_ps(_mm256_mul_ps(p, s), s, s), one);  // exp(r) / 2^n
  const __m256i bits = _mm256_slli_epi32(_mm256_castps_si256(_mm256_add_ps(n, _mm256_set1_ps(12583039.f))), 23);
  return _mm256_div_ps(one, _mm256_add_ps(one, _mm256_mul_ps(y, _mm256_castsi256_ps(bits))));
}

template <InReg Act>
__attribute__((target("avx2,fma"), always_inline)) inline __m256 activate(__m256 v, const ActParams& p) {
  if constexpr (Act == InReg::Relu) {
    return _mm256_max_ps(v, _mm256_setzero_ps());  // v > 0 ? v : 0 (NaN -> 0)
  } else if constexpr (Act == InReg::Clip) {
    const __m256 t = _mm256_min_ps(_mm256_set1_ps(p.hi), v);  // v > hi ? hi : v (NaN stays)
    return _mm256_max_ps(_mm256_set1_ps(p.lo), t);            // v < lo ? lo : t
  } else if constexpr (Act == InReg::LeakyRelu) {
    const __m256 ge = _mm256_cmp_ps(v, _mm256_setzero_ps(), _CMP_GE_OQ);
    return _mm256_blendv_ps(_mm256_mul_ps(v, _mm256_set1_ps(p.alpha)), v, ge);
  } else if constexpr (Act == InReg::Sigmoid || Act == InReg::SiLU) {
    return sigmoid8(v);  // as sigmoid_f32
  } else {
    return v;
  }
}

// Lanes [0, n) of a mask for maskload/maskstore (n in [0, 8]).
__attribute__((target("avx2,fma"), always_inline)) inline __m256i tail_mask(int64_t n) {
  alignas(32) static constexpr int32_t kLanes[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(kLanes + 8 - n));
}

// Stores lanes [0, n) of the 16 floats (v0, v1) at p (n in [0, 16]); nothing past them is
// touched. Plain stores of 8, 4, 2 and 1 floats (masked stores are slow on some CPUs).
__attribute__((target("avx2,fma"), always_inline)) inline void store_first(float* p, __m256 v0, __m256 v1, int64_t n) {
  __m256 v = v0;
  if (n >= 8) {
    _mm256_storeu_ps(p, v0);
    p += 8;
    n -= 8;
    v = v1;
    if (n == 8) return _mm256_storeu_ps(p, v1);
  }
  __m128 h = _mm256_castps256_ps128(v);
  if (n >= 4) {
    _mm_storeu_ps(p, h);
    p += 4;
    n -= 4;
    h = _mm256_extractf128_ps(v, 1);
  }
  if (n >= 2) {
    _mm_storel_pi(reinterpret_cast<__m64*>(p), h);
    p += 2;
    n -= 2;
    h = _mm_movehl_ps(h, h);
  }
  if (n >= 1) _mm_store_ss(p, h);
}

// The 16 floats (v0, v1) at p; streamed (p on a cache line: the line bypasses the cache) when
// `stream`.
__attribute__((target("avx2,fma"), always_inline)) inline void store16(float* p, __m256 v0, __m256 v1, bool stream) {
  if (stream) {
    _mm256_stream_ps(p, v0);
    _mm256_stream_ps(p + 8, v1);
  } else {
    _mm256_storeu_ps(p, v0);
    _mm256_storeu_ps(p + 8, v1);
  }
}

// Lanes 0, 2, .., 14 (even_lanes) or 1, 3, .., 15 (odd_lanes) of the 16 floats (a, c), in
// order. shuffle_ps works within 128-bit lanes ([0 2 8 10 | 4 6 12 14]); the permute restores
// the order.
__attribute__((target("avx2,fma"), always_inline)) inline __m256 even_lanes(__m256 a, __m256 c) {
  const __m256 t = _mm256_shuffle_ps(a, c, _MM_SHUFFLE(2, 0, 2, 0));
  return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(t), _MM_SHUFFLE(3, 1, 2, 0)));
}
__attribute__((target("avx2,fma"), always_inline)) inline __m256 odd_lanes(__m256 a, __m256 c) {
  const __m256 t = _mm256_shuffle_ps(a, c, _MM_SHUFFLE(3, 1, 3, 1));
  return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(t), _MM_SHUFFLE(3, 1, 2, 0)));
}

// even[i] = p[2i] and odd[i] = p[2i + 1] for i < n, n a multiple of 8 (reads p[0, 2n)).
__attribute__((target("avx2,fma"), always_inline)) inline void split_even_odd(const float* p, int64_t n, float* even, float* odd) {
  for (int64_t i = 0; i < n; i += 8) {
    const __m256 v0 = _mm256_loadu_ps(p + 2 * i), v1 = _mm256_loadu_ps(p + 2 * i + 8);
    if (even) _mm256_storeu_ps(even + i, even_lanes(v0, v1));
    if (odd) _mm256_storeu_ps(odd + i, odd_lanes(v0, v1));
  }
}

// n floats from src to dst, the whole cache lines of dst streamed past the cache and the partial
// lines at either end stored as usual (another task may write the rest of them); as
// avx512::stream_span, for the outputs no node reads during the run. The caller fences.
__attribute__((target("avx2,fma"))) inline void stream_span(float* dst, const float* src, int64_t n) {
  const int64_t head = std::min<int64_t>(n, static_cast<int64_t>((64 - reinterpret_cast<uintptr_t>(dst) % 64) % 64 / sizeof(float)));
  std::memcpy(dst, src, static_cast<size_t>(head) * sizeof(float));
  int64_t i = head;
  if (reinterpret_cast<uintptr_t>(dst + i) % 64 == 0)
    for (; i + 16 <= n; i += 16) {
      _mm256_stream_ps(dst + i, _mm256_loadu_ps(src + i));
      _mm256_stream_ps(dst + i + 8, _mm256_loadu_ps(src + i + 8));
    }
  std::memcpy(dst + i, src + i, static_cast<size_t>(n - i) * sizeof(float));
}

// Input row x (W floats) into dst: the columns of a zero-padded row that hold data. The vector
// past the last full one is read with a mask and stored whole (zeros past W: the padding stays 0).
__attribute__((target("avx2,fma"))) inline void copy_row(const float* x, int64_t W, float* dst) {
  int64_t i = 0;
  for (; i + 8 <= W; i += 8) _mm256_storeu_ps(dst + i, _mm256_loadu_ps(x + i));
  if (i < W) _mm256_storeu_ps(dst + i, _mm256_maskload_ps(x + i, avx2::tail_mask(W - i)));
}

// Input row x (W floats) split straight into the even and odd columns of its zero-padded row
// p[c] = x[c - pw] (no padded copy in between: loads spanning two recent stores of that copy
// stall). Only data columns are written; the padding stays 0.
__attribute__((target("avx2,fma"))) inline void split_row(const float* x, int64_t W, int64_t pw, float* even, float* odd) {
  // x[2i] is padded column 2i + pw, x[2i + 1] column 2i + 1 + pw.
  float* to_even_x = (pw % 2 == 0 ? even : odd) + pw / 2;
  float* to_odd_x = (pw % 2 == 0 ? odd : even) + (pw + 1) / 2;
  const int64_t whole = W / 16 * 8;  // pairs split with vectors (reading x[0, 2 whole))
  avx2::split_even_odd(x, whole, to_even_x, to_odd_x);
  for (int64_t i = whole; 2 * i < W; ++i) {
    to_even_x[i] = x[2 * i];
    if (2 * i + 1 < W) to_odd_x[i] = x[2 * i + 1];
  }
}

// Calls f.template operator()<Act>() with the InReg kind of e (None for no epilogue).
template <class F>
decltype(auto) with_in_reg(const Epilogue* e, F&& f) {
  if (e) switch (e->kind) {
      case Epilogue::Kind::Relu: return f.template operator()<InReg::Relu>();
      case Epilogue::Kind::Clip: return f.template operator()<InReg::Clip>();
      case Epilogue::Kind::LeakyRelu: return f.template operator()<InReg::LeakyRelu>();
      case Epilogue::Kind::Sigmoid: return f.template operator()<InReg::Sigmoid>();
      case Epilogue::Kind::SiLU: return f.template operator()<InReg::SiLU>();
      case Epilogue::Kind::Add: return f.template operator()<InReg::Add>();
    }
  return f.template operator()<InReg::None>();
}

// Stores the epilogue's outputs of v (already stored as y) at z1 and z2 (SiLU: v * sigmoid; Add:
// z1 = v + addend, lanes read from `addend`): lanes [0, n) of (v0, v1), n in [0, 16]; all 16
// with n = 16. SiLU's sigmoid, which only the fused product reads, is streamed past the cache
// when `stream` and n = 16 (z1 32-byte aligned); the product, which the next layer reads, is not.
template <InReg Act>
__attribute__((target("avx2,fma"), always_inline)) inline void store_act(float* z1, float* z2, const float* addend, __m256 v0, __m256 v1,
                                                                         const ActParams& p, int64_t n, bool stream = false) {
  if constexpr (Act == InReg::None) return;
  __m256 a0 = activate<Act>(v0, p), a1 = activate<Act>(v1, p);
  if constexpr (Act == InReg::Add) {
    const bool all = n == 16;
    a0 = _mm256_add_ps(v0, all ? _mm256_loadu_ps(addend) : _mm256_maskload_ps(addend, tail_mask(n < 8 ? n : 8)));
    a1 = _mm256_add_ps(v1, all ? _mm256_loadu_ps(addend + 8) : _mm256_maskload_ps(addend + 8, tail_mask(n > 8 ? n - 8 : 0)));
  }
  if (Act == InReg::SiLU && stream && n == 16) store16(z1, a0, a1, true);
  else store_first(z1, a0, a1, n);
  if constexpr (Act == InReg::SiLU) store_first(z2, _mm256_mul_ps(v0, a0), _mm256_mul_ps(v1, a1), n);  // as the Mul kernel
}

// The 8 x 8 transpose: in[j] lane r -> out[r] lane j (gemm_lanes and conv_rows' lane tiles store
// their tiles, 8 output rows in the lanes, through it).
__attribute__((target("avx2,fma"), always_inline)) inline void transpose8(const __m256 (&in)[8], __m256 (&out)[8]) {
  __m256 t[8], u[8];
  for (int i = 0; i < 4; ++i) {
    t[2 * i] = _mm256_unpacklo_ps(in[2 * i], in[2 * i + 1]);
    t[2 * i + 1] = _mm256_unpackhi_ps(in[2 * i], in[2 * i + 1]);
  }
  for (int i = 0; i < 2; ++i) {
    u[4 * i] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], _MM_SHUFFLE(1, 0, 1, 0));
    u[4 * i + 1] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], _MM_SHUFFLE(3, 2, 3, 2));
    u[4 * i + 2] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], _MM_SHUFFLE(1, 0, 1, 0));
    u[4 * i + 3] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], _MM_SHUFFLE(3, 2, 3, 2));
  }
  for (int i = 0; i < 4; ++i) {
    out[i] = _mm256_permute2f128_ps(u[i], u[4 + i], 0x20);
    out[4 + i] = _mm256_permute2f128_ps(u[i], u[4 + i], 0x31);
  }
}

// Whether the CPU has PREFETCHW (cpuid 0x80000001, ECX bit 8: every AMD CPU with AVX2, Intel's
// from Broadwell on; not Haswell).
inline const bool kHasPrefetchW = [] {
  unsigned a = 0, b = 0, c = 0, d = 0;
  return __get_cpuid(0x80000001u, &a, &b, &c, &d) != 0 && (c & bit_PRFCHW) != 0;
}();

// One cache line fetched for a store: owned, into L1 (PREFETCHW; PREFETCHT0 where the CPU
// lacks it). In a model each kept output is written where nothing has been since the last run,
// out of the cache, and each store would first wait on a read for ownership from memory. An
// address past the tensor is only a hint: a prefetch never faults.
[[gnu::always_inline]] inline void fetch_owned(const void* line) {
  const char* const q = static_cast<const char*>(line);
  if (kHasPrefetchW) __asm__ volatile("prefetchw %0" : : "m"(*q));
  else _mm_prefetch(q, _MM_HINT_T0);
}

// Asks for the cache lines an epilogue's stores into its output the next layer reads will write:
// `lines` lines from offset `at` in each of `planes` planes `plane` floats apart, of the
// activation's output z1 (SiLU: its product, z2; in these kernels y itself is streamed or staged
// past the cache where there is an epilogue, and nothing is asked for without one).
template <InReg Act>
[[gnu::always_inline]] inline void fetch_for_store(const float* z1, const float* z2, int64_t at, int64_t plane, int planes, int lines) {
  if constexpr (Act != InReg::None) {
    const char* const p = reinterpret_cast<const char*>((Act == InReg::SiLU ? z2 : z1) + at);
    for (int r = 0; r < planes; ++r)
      for (int l = 0; l < lines; ++l) fetch_owned(p + r * plane * int64_t{sizeof(float)} + 64 * l);
  }
}

// The lines of rows [r0, r1) of a tile's outputs (ld elements a row) at columns [c, c + w),
// w * sizeof(T) <= 64 bytes (two lines a row at most), fetched for the stores of the tile that
// writes them, a tile ahead: of y (null where it is streamed or staged past the cache) and of the
// epilogue's z1 and z2 (null where there are none). The tiles of the packed products
// (gemm_packed's 6 x 16, float or float16; the lanes kernel's 16 x 4-6) and conv_rows' lane tiles
// (8 x up to 10) write a few columns of each of their rows, rows a plane apart, and go down the
// columns (the few-columns path) or along rows: no hardware prefetcher follows either. On AMD EPYC
// Zen 3 (AVX2), one binary with the fetch switched run by run (medians of 80 runs, 30 for
// ResNet-50; after / before): mobilenet_v2 0.90x the time at 1 thread and 0.93x at 2, yolox_nano
// 0.91x / 0.93x, SqueezeNet_fp16 0.93x / 0.90x, ResNet-50 0.94x / 0.95x, the SqueezeNet 1.1
// models 0.95-0.97x, efficientnet_b0 0.96x at 2 threads; ultraface, yunet, super-resolution,
// the transformers and mnist-cnn 0.97-1.05x (the slowest, super-resolution at 2 threads, 1.05x
// by the median and 0.99x by the minimum), no loss beyond the host's noise. MobileNet's 1x1
// 96 -> 576 on 14x14 alone, after 96 MB of other stores, 0.81x.
template <class T>
[[gnu::always_inline]] inline void fetch_rows_for_store(const T* y, const T* z1, const T* z2, int64_t ld, int64_t r0, int64_t r1, int64_t c,
                                                        int64_t w) {
  for (const T* out : {y, z1, z2})
    if (out)
      for (int64_t r = r0; r < r1; ++r) {
        const T* const first = out + r * ld + c;
        fetch_owned(first);
        fetch_owned(first + w - 1);
      }
}

}  // namespace nnxr::runtime::avx2
#endif
