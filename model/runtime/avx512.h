// Internal: helpers on 16-float AVX-512 registers for the kernels built for AVX-512 F/BW/VL/DQ
// (functions marked NNXR_AVX512; callers check cpu_has_avx512()), the counterparts of avx2.h:
// the epilogues computed in registers, and lanes [0, n) as a mask for partial loads and stores
// (masked lanes are neither read nor written, so a partial load past an array's end is safe).
#pragma once

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "model/runtime/avx2.h"

#define NNXR_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c")))

namespace nnxr::runtime::avx512 {

using avx2::ActParams;
using avx2::InReg;

// Lanes [0, n) (n clamped to [0, 16]).
NNXR_AVX512 inline __mmask16 lanes(int64_t n) {
  return n >= 16 ? __mmask16(0xffff) : n <= 0 ? __mmask16(0) : static_cast<__mmask16>((1u << n) - 1u);
}

// Input row x (W floats) into dst, the data columns of a zero-padded row, in whole vectors: the
// floats past W up to the next multiple of 16 are written as 0 (the caller's padding).
NNXR_AVX512 inline void copy_row(const float* x, int64_t W, float* dst) {
  int64_t i = 0;
  for (; i + 16 <= W; i += 16) _mm512_storeu_ps(dst + i, _mm512_loadu_ps(x + i));
  if (i < W) _mm512_storeu_ps(dst + i, _mm512_maskz_loadu_ps(lanes(W - i), x + i));
}

// n floats from src to dst, the whole cache lines of dst streamed past the cache (no read for
// ownership of lines that are wholly overwritten) and the partial lines at either end stored as
// usual: another task may write the rest of them. For outputs no node reads during the run (a
// convolution's y when its activation is fused): the caller fences (_mm_sfence) before its task
// completes.
NNXR_AVX512 inline void stream_span(float* dst, const float* src, int64_t n) {
  const int64_t head = std::min<int64_t>(n, static_cast<int64_t>((64 - reinterpret_cast<uintptr_t>(dst) % 64) % 64 / sizeof(float)));
  if (head > 0) _mm512_mask_storeu_ps(dst, lanes(head), _mm512_maskz_loadu_ps(lanes(head), src));
  int64_t i = head;
  if (reinterpret_cast<uintptr_t>(dst + i) % 64 == 0)
    for (; i + 16 <= n; i += 16) _mm512_stream_ps(dst + i, _mm512_loadu_ps(src + i));
  for (; i < n; i += 16) _mm512_mask_storeu_ps(dst + i, lanes(n - i), _mm512_maskz_loadu_ps(lanes(n - i), src + i));
}

// Input row x (W floats) split into the even and odd columns of its zero-padded row p[c] =
// x[c - pw]; only data columns are written.
NNXR_AVX512 inline void split_row(const float* x, int64_t W, int64_t pw, float* even, float* odd) {
  float* to_even_x = (pw % 2 == 0 ? even : odd) + pw / 2;
  float* to_odd_x = (pw % 2 == 0 ? odd : even) + (pw + 1) / 2;
  const __m512i ie = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i io = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
  int64_t i = 0;  // pairs done: x[0, 2 i)
  for (; 2 * i + 32 <= W; i += 16) {
    const __m512 a = _mm512_loadu_ps(x + 2 * i), b = _mm512_loadu_ps(x + 2 * i + 16);
    _mm512_storeu_ps(to_even_x + i, _mm512_permutex2var_ps(a, ie, b));
    _mm512_storeu_ps(to_odd_x + i, _mm512_permutex2var_ps(a, io, b));
  }
  if (2 * i < W) {  // the rest: W - 2 i in [1, 31] floats, masked
    const int64_t r = W - 2 * i;
    const __m512 a = _mm512_maskz_loadu_ps(lanes(r), x + 2 * i), b = _mm512_maskz_loadu_ps(lanes(r - 16), x + 2 * i + 16);
    _mm512_mask_storeu_ps(to_even_x + i, lanes((r + 1) / 2), _mm512_permutex2var_ps(a, ie, b));
    _mm512_mask_storeu_ps(to_odd_x + i, lanes(r / 2), _mm512_permutex2var_ps(a, io, b));
  }
}

// Lanes [s, s + 16) of the 32 floats (lo, hi), s in [1, 4] (a constant once inlined): the taps of
// a row that start s columns past an aligned load, without a 64-byte load that spans two cache
// lines.
[[gnu::always_inline]] NNXR_AVX512 inline __m512 shifted(__m512 lo, __m512 hi, int s) {
  const __m512i l = _mm512_castps_si512(lo), h = _mm512_castps_si512(hi);
  switch (s) {
    case 1: return _mm512_castsi512_ps(_mm512_alignr_epi32(h, l, 1));
    case 2: return _mm512_castsi512_ps(_mm512_alignr_epi32(h, l, 2));
    case 3: return _mm512_castsi512_ps(_mm512_alignr_epi32(h, l, 3));
    default: return _mm512_castsi512_ps(_mm512_alignr_epi32(h, l, 4));
  }
}

// 1 / (1 + exp(-v)) in 16 lanes (the Sigmoid kernel's AVX-512 path and every fused sigmoid of
// the AVX-512 kernels: the same results). exp(-v) by exp_lanes' Cephes polynomial with fused
// multiply-adds, written for v itself: the clamp of -v to [-87, 88] is one of v to [-88, 87]
// (a NaN v is min's second operand: kept), n = round(v * -log2 e), s = v + n ln2 (= -r, in the
// same two steps), the polynomial in r = -s by fnmadd (each step the negation of exp_lanes',
// rounded alike), and 2^n by vscalefps instead of building its bits (cvt, add, shift, mul): the
// same floats for every input (all 2^32 checked), 19 vector operations where there were 22. The
// reciprocal by vrcp14ps and one Newton step (relative error 2^-28 before rounding) instead of a
// division, whose latency the SiLU product waits for.
[[gnu::always_inline]] NNXR_AVX512 inline __m512 sigmoid16(__m512 v) {
  const __m512 one = _mm512_set1_ps(1.f);
  const __m512 c = _mm512_max_ps(_mm512_set1_ps(-88.f), _mm512_min_ps(_mm512_set1_ps(87.f), v));
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(c, _mm512_set1_ps(-1.44269504088896341f)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 s = _mm512_fmadd_ps(n, _mm512_set1_ps(0.693359375f), c);
  s = _mm512_fmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), s);
  __m512 p = _mm512_set1_ps(1.9875691500E-4f);
  p = _mm512_fnmadd_ps(p, s, _mm512_set1_ps(1.3981999507E-3f));
  p = _mm512_fnmadd_ps(p, s, _mm512_set1_ps(8.3334519073E-3f));
  p = _mm512_fnmadd_ps(p, s, _mm512_set1_ps(4.1665795894E-2f));
  p = _mm512_fnmadd_ps(p, s, _mm512_set1_ps(1.6666665459E-1f));
  p = _mm512_fnmadd_ps(p, s, _mm512_set1_ps(5.0000001201E-1f));
  const __m512 y = _mm512_add_ps(_mm512_fmsub_ps(_mm512_mul_ps(p, s), s, s), one);  // exp(r) / 2^n
  const __m512 d = _mm512_add_ps(one, _mm512_scalef_ps(y, n));
  const __m512 r = _mm512_rcp14_ps(d);
  return _mm512_fmadd_ps(r, _mm512_fnmadd_ps(d, r, one), r);
}

// The activation of v, as avx2::activate (the sigmoid kinds by sigmoid16, as the Sigmoid
// kernel's AVX-512 path).
template <InReg Act>
[[gnu::always_inline]] NNXR_AVX512 inline __m512 activate(__m512 v, const ActParams& p) {
  if constexpr (Act == InReg::Relu) {
    return _mm512_max_ps(v, _mm512_setzero_ps());
  } else if constexpr (Act == InReg::Clip) {
    const __m512 t = _mm512_min_ps(_mm512_set1_ps(p.hi), v);
    return _mm512_max_ps(_mm512_set1_ps(p.lo), t);
  } else if constexpr (Act == InReg::LeakyRelu) {
    const __mmask16 ge = _mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_GE_OQ);
    return _mm512_mask_blend_ps(ge, _mm512_mul_ps(v, _mm512_set1_ps(p.alpha)), v);
  } else if constexpr (Act == InReg::Sigmoid || Act == InReg::SiLU) {
    return sigmoid16(v);
  } else {
    return v;
  }
}

// The epilogue's outputs of v (lanes k) at z1 / z2 (Add: z1 = v + addend, lanes k of addend read;
// SiLU: z1 the sigmoid, z2 = v times it). SiLU's sigmoid, which only the fused product reads, is
// streamed past the cache with y (`stream`: all 16 lanes, z1 on a cache line); z2, which the next
// layer reads, is not.
template <InReg Act>
[[gnu::always_inline]] NNXR_AVX512 inline void store_epilogue(float* z1, float* z2, const float* addend, __m512 v, __mmask16 k, const ActParams& p,
                                                              bool stream = false) {
  if constexpr (Act == InReg::None) return;
  __m512 a = activate<Act>(v, p);
  if constexpr (Act == InReg::Add) a = _mm512_add_ps(v, _mm512_maskz_loadu_ps(k, addend));
  if (Act == InReg::SiLU && stream) _mm512_stream_ps(z1, a);
  else if (k == 0xffff) _mm512_storeu_ps(z1, a);
  else _mm512_mask_storeu_ps(z1, k, a);
  if constexpr (Act == InReg::SiLU) _mm512_mask_storeu_ps(z2, k, _mm512_mul_ps(v, a));  // as the Mul kernel
}

// Stores lanes k of v at y (streamed when `stream` and all 16 lanes: p on a cache line), and the
// epilogue's outputs at z1 / z2 (Add: z1 = v + addend, lanes k of addend read).
template <InReg Act>
[[gnu::always_inline]] NNXR_AVX512 inline void store(float* y, float* z1, float* z2, const float* addend, __m512 v, __mmask16 k, bool stream,
                                                     const ActParams& p) {
  if (k == 0xffff) {
    if (stream) _mm512_stream_ps(y, v);
    else _mm512_storeu_ps(y, v);
  } else {
    _mm512_mask_storeu_ps(y, k, v);
  }
  store_epilogue<Act>(z1, z2, addend, v, k, p, stream && k == 0xffff && reinterpret_cast<uintptr_t>(z1) % 64 == 0);
}

}  // namespace nnxr::runtime::avx512
#endif
