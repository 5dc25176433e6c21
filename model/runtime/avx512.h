// Internal: helpers on 16-float AVX-512 registers for the kernels built for AVX-512 F/BW/VL/DQ
// (functions marked NNXR_AVX512; callers check cpu_has_avx512()), the counterparts of avx2.h:
// the epilogues computed in registers, and lanes [0, n) as a mask for partial loads and stores
// (masked lanes are neither read nor written, so a partial load past an array's end is safe).
#pragma once

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

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

// The activation of v, as avx2::activate (the sigmoid kinds through its two 8-float halves: the
// same operations, so a fused sigmoid equals the separate kernel's on either path).
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
    const __m256 lo = avx2::activate<Act>(_mm512_castps512_ps256(v), p);
    const __m256 hi = avx2::activate<Act>(_mm512_extractf32x8_ps(v, 1), p);
    return _mm512_insertf32x8(_mm512_castps256_ps512(lo), hi, 1);
  } else {
    return v;
  }
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
  if constexpr (Act == InReg::None) return;
  __m512 a = activate<Act>(v, p);
  if constexpr (Act == InReg::Add) a = _mm512_add_ps(v, _mm512_maskz_loadu_ps(k, addend));
  _mm512_mask_storeu_ps(z1, k, a);
  if constexpr (Act == InReg::SiLU) _mm512_mask_storeu_ps(z2, k, _mm512_mul_ps(v, a));  // as the Mul kernel
}

}  // namespace nnxr::runtime::avx512
#endif
