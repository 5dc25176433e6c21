// The statistics and the scale-and-shift pass of InstanceNormalization and LayerNormalization
// (compute.h: plane_moments, scale_shift), on AVX-512, AVX2 + FMA or portable code.
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "model/runtime/compute.h"

#if defined(__x86_64__) || defined(__i386__)
#include "model/runtime/avx2.h"
#include "model/runtime/avx512.h"
#define NNXR_NORM_LANES 1
#endif

namespace nnxr::runtime {
namespace {

// Sums of d = x[i] - k and of d * d over x[0, n), in double. x and k are floats, so d and d * d
// are exact in double: only the additions round.
struct Sums {
  double s = 0, q = 0;
};

Sums sums_portable(const float* x, int64_t n, float k) {
  double s[4] = {0, 0, 0, 0}, q[4] = {0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 4 <= n; i += 4)
    for (int j = 0; j < 4; ++j) {
      const double d = static_cast<double>(x[i + j]) - k;
      s[j] += d;
      q[j] += d * d;
    }
  for (; i < n; ++i) {
    const double d = static_cast<double>(x[i]) - k;
    s[0] += d;
    q[0] += d * d;
  }
  return {(s[0] + s[1]) + (s[2] + s[3]), (q[0] + q[1]) + (q[2] + q[3])};
}

#ifdef NNXR_NORM_LANES
// 32 floats a step in four sets of 8 double lanes (the additions' latency hidden).
NNXR_AVX512 Sums sums_avx512(const float* x, int64_t n, float k) {
  const __m512d kk = _mm512_set1_pd(k);
  __m512d s0 = _mm512_setzero_pd(), s1 = s0, s2 = s0, s3 = s0, q0 = s0, q1 = s0, q2 = s0, q3 = s0;
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m512d d0 = _mm512_sub_pd(_mm512_cvtps_pd(_mm256_loadu_ps(x + i)), kk);
    const __m512d d1 = _mm512_sub_pd(_mm512_cvtps_pd(_mm256_loadu_ps(x + i + 8)), kk);
    const __m512d d2 = _mm512_sub_pd(_mm512_cvtps_pd(_mm256_loadu_ps(x + i + 16)), kk);
    const __m512d d3 = _mm512_sub_pd(_mm512_cvtps_pd(_mm256_loadu_ps(x + i + 24)), kk);
    s0 = _mm512_add_pd(s0, d0);
    s1 = _mm512_add_pd(s1, d1);
    s2 = _mm512_add_pd(s2, d2);
    s3 = _mm512_add_pd(s3, d3);
    q0 = _mm512_fmadd_pd(d0, d0, q0);
    q1 = _mm512_fmadd_pd(d1, d1, q1);
    q2 = _mm512_fmadd_pd(d2, d2, q2);
    q3 = _mm512_fmadd_pd(d3, d3, q3);
  }
  for (; i < n; i += 8) {  // the rest, 8 lanes at a time (masked lanes read nothing and add 0)
    const __mmask8 m = static_cast<__mmask8>(n - i >= 8 ? 0xff : (1u << (n - i)) - 1u);
    const __m512d d = _mm512_maskz_sub_pd(m, _mm512_cvtps_pd(_mm256_maskz_loadu_ps(m, x + i)), kk);
    s0 = _mm512_add_pd(s0, d);
    q0 = _mm512_fmadd_pd(d, d, q0);
  }
  const __m512d s = _mm512_add_pd(_mm512_add_pd(s0, s1), _mm512_add_pd(s2, s3)), q = _mm512_add_pd(_mm512_add_pd(q0, q1), _mm512_add_pd(q2, q3));
  alignas(64) double ts[8], tq[8];
  _mm512_store_pd(ts, s);
  _mm512_store_pd(tq, q);
  return {((ts[0] + ts[1]) + (ts[2] + ts[3])) + ((ts[4] + ts[5]) + (ts[6] + ts[7])), ((tq[0] + tq[1]) + (tq[2] + tq[3])) + ((tq[4] + tq[5]) + (tq[6] + tq[7]))};
}

__attribute__((target("avx2,fma"))) double sum4(__m256d v) {
  const __m128d h = _mm_add_pd(_mm256_castpd256_pd128(v), _mm256_extractf128_pd(v, 1));
  return _mm_cvtsd_f64(_mm_add_sd(h, _mm_unpackhi_pd(h, h)));
}

// 16 floats a step in four sets of 4 double lanes.
__attribute__((target("avx2,fma"))) Sums sums_avx2(const float* x, int64_t n, float k) {
  const __m256d kk = _mm256_set1_pd(k);
  __m256d s0 = _mm256_setzero_pd(), s1 = s0, s2 = s0, s3 = s0, q0 = s0, q1 = s0, q2 = s0, q3 = s0;
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256d d0 = _mm256_sub_pd(_mm256_cvtps_pd(_mm_loadu_ps(x + i)), kk);
    const __m256d d1 = _mm256_sub_pd(_mm256_cvtps_pd(_mm_loadu_ps(x + i + 4)), kk);
    const __m256d d2 = _mm256_sub_pd(_mm256_cvtps_pd(_mm_loadu_ps(x + i + 8)), kk);
    const __m256d d3 = _mm256_sub_pd(_mm256_cvtps_pd(_mm_loadu_ps(x + i + 12)), kk);
    s0 = _mm256_add_pd(s0, d0);
    s1 = _mm256_add_pd(s1, d1);
    s2 = _mm256_add_pd(s2, d2);
    s3 = _mm256_add_pd(s3, d3);
    q0 = _mm256_fmadd_pd(d0, d0, q0);
    q1 = _mm256_fmadd_pd(d1, d1, q1);
    q2 = _mm256_fmadd_pd(d2, d2, q2);
    q3 = _mm256_fmadd_pd(d3, d3, q3);
  }
  for (; i + 4 <= n; i += 4) {
    const __m256d d = _mm256_sub_pd(_mm256_cvtps_pd(_mm_loadu_ps(x + i)), kk);
    s0 = _mm256_add_pd(s0, d);
    q0 = _mm256_fmadd_pd(d, d, q0);
  }
  Sums r{sum4(_mm256_add_pd(_mm256_add_pd(s0, s1), _mm256_add_pd(s2, s3))), sum4(_mm256_add_pd(_mm256_add_pd(q0, q1), _mm256_add_pd(q2, q3)))};
  for (; i < n; ++i) {
    const double d = static_cast<double>(x[i]) - k;
    r.s += d;
    r.q += d * d;
  }
  return r;
}

// y = x * a + b (one rounding: FMA) and the epilogue of y, 32 floats a step. y is streamed past
// the cache when an epilogue reads it here (nothing reads it next) and it sits on a cache line.
template <avx2::InReg Act>
NNXR_AVX512 void scale_shift_avx512(const float* x, float* y, int64_t n, float a, float b, const EpilogueOut& act, int64_t offset) {
  const __m512 va = _mm512_set1_ps(a), vb = _mm512_set1_ps(b);
  const avx2::ActParams p = avx2::act_params(act.epi);
  float* z1 = act.z1 ? act.z1 + offset : nullptr;
  float* z2 = act.z2 ? act.z2 + offset : nullptr;
  const float* ad = act.addend ? act.addend + offset : nullptr;
  const bool stream = Act != avx2::InReg::None && reinterpret_cast<uintptr_t>(y) % 64 == 0;
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m512 v0 = _mm512_fmadd_ps(_mm512_loadu_ps(x + i), va, vb), v1 = _mm512_fmadd_ps(_mm512_loadu_ps(x + i + 16), va, vb);
    avx512::store<Act>(y + i, z1 ? z1 + i : nullptr, z2 ? z2 + i : nullptr, ad ? ad + i : nullptr, v0, 0xffff, stream, p);
    avx512::store<Act>(y + i + 16, z1 ? z1 + i + 16 : nullptr, z2 ? z2 + i + 16 : nullptr, ad ? ad + i + 16 : nullptr, v1, 0xffff, stream, p);
  }
  for (; i < n; i += 16) {
    const __mmask16 m = avx512::lanes(n - i);
    const __m512 v = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, x + i), va, vb);
    avx512::store<Act>(y + i, z1 ? z1 + i : nullptr, z2 ? z2 + i : nullptr, ad ? ad + i : nullptr, v, m, false, p);
  }
  if (stream) _mm_sfence();  // the streamed y visible before the task completes
}

template <avx2::InReg Act>
__attribute__((target("avx2,fma"))) void scale_shift_avx2(const float* x, float* y, int64_t n, float a, float b, const EpilogueOut& act,
                                                          int64_t offset) {
  const __m256 va = _mm256_set1_ps(a), vb = _mm256_set1_ps(b);
  const avx2::ActParams p = avx2::act_params(act.epi);
  float* z1 = act.z1 ? act.z1 + offset : nullptr;
  float* z2 = act.z2 ? act.z2 + offset : nullptr;
  const float* ad = act.addend ? act.addend + offset : nullptr;
  const bool stream = Act != avx2::InReg::None && reinterpret_cast<uintptr_t>(y) % 64 == 0;
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256 v0 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i), va, vb), v1 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i + 8), va, vb);
    avx2::store16(y + i, v0, v1, stream);
    avx2::store_act<Act>(z1 ? z1 + i : nullptr, z2 ? z2 + i : nullptr, ad ? ad + i : nullptr, v0, v1, p, 16);
  }
  if (i < n) {
    const int64_t r = n - i;
    const __m256 v0 = _mm256_fmadd_ps(_mm256_maskload_ps(x + i, avx2::tail_mask(r < 8 ? r : 8)), va, vb);
    const __m256 v1 = _mm256_fmadd_ps(_mm256_maskload_ps(x + i + 8, avx2::tail_mask(r > 8 ? r - 8 : 0)), va, vb);
    avx2::store_first(y + i, v0, v1, r);
    avx2::store_act<Act>(z1 ? z1 + i : nullptr, z2 ? z2 + i : nullptr, ad ? ad + i : nullptr, v0, v1, p, r);
  }
  if (stream) _mm_sfence();
}
#endif

Sums sums(const float* x, int64_t n, float k) {
#ifdef NNXR_NORM_LANES
  if (cpu_has_avx512()) return sums_avx512(x, n, k);
  if (cpu_has_avx2_fma()) return sums_avx2(x, n, k);
#endif
  return sums_portable(x, n, k);
}

}  // namespace

void plane_moments(const float* x, int64_t n, double& mean, double& var) {
  mean = var = 0;
  if (n <= 0) return;
  // The sums are taken about k, a float near the mean (the mean of the first 64 values), so that
  // sum(d * d) - sum(d)^2 / n cancels little. When k is far from the mean after all (more than
  // 32 standard deviations: some 10 of double's 53 bits lost), a second pass takes them about
  // the mean found.
  const int64_t head = n < 64 ? n : 64;
  double h = 0;
  for (int64_t i = 0; i < head; ++i) h += x[i];
  float k = static_cast<float>(h / static_cast<double>(head));
  const double count = static_cast<double>(n);
  for (int pass = 0; pass < 2; ++pass) {
    const Sums r = sums(x, n, k);
    const double m = r.s / count;
    var = std::max(0.0, r.q / count - m * m);
    mean = k + m;
    if (!(m * m > 1024 * var) || !std::isfinite(mean)) break;
    k = static_cast<float>(mean);
  }
}

void scale_shift(const float* x, float* y, int64_t n, float a, float b, const EpilogueOut& act, int64_t offset) {
#ifdef NNXR_NORM_LANES
  if (cpu_has_avx512()) {
    avx2::with_in_reg(act.epi, [&]<avx2::InReg Act>() { scale_shift_avx512<Act>(x, y, n, a, b, act, offset); });
    return;
  }
  if (cpu_has_avx2_fma()) {
    avx2::with_in_reg(act.epi, [&]<avx2::InReg Act>() { scale_shift_avx2<Act>(x, y, n, a, b, act, offset); });
    return;
  }
#endif
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] * a + b;
  if (act.epi) epilogue_apply(act, y, offset, n, false, 0.f);
}

}  // namespace nnxr::runtime
