// MaxPool (with Indices), AveragePool, LpPool, GlobalAveragePool, GlobalMaxPool, GlobalLpPool.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "model/half.h"
#include "model/runtime/avx2.h"
#include "model/runtime/avx512.h"
#include "model/runtime/compute.h"
#include "model/runtime/kernel.h"
#include "model/runtime/spatial.h"

namespace nnxr::runtime {
namespace {

enum class PoolKind { Max, Avg, Lp };

struct PoolGeom {
  std::vector<int64_t> in, k, out, stride, dil, pb, pe;
};

// Visits every output position of one plane: fn(out_index, window) where window lists the input
// offsets inside the input (padding excluded), and `padded_count` counts window positions inside
// the padded input (for count_include_pad).
template <class Fn>
void for_each_window(const PoolGeom& g, Fn fn) {
  const size_t S = g.in.size();
  const int64_t P = product(g.out);
  std::vector<int64_t> o(S, 0);
  std::vector<int64_t> window;
  std::vector<std::vector<int64_t>> axis_pos(S);
  for (int64_t p = 0; p < P; ++p) {
    int64_t rem = p;
    for (size_t d = S; d-- > 0;) {
      o[d] = rem % g.out[d];
      rem /= g.out[d];
    }
    int64_t padded_count = 1;
    for (size_t d = 0; d < S; ++d) {
      axis_pos[d].clear();
      const int64_t start = o[d] * g.stride[d] - g.pb[d];
      const int64_t limit = g.in[d] + g.pe[d];
      int64_t cnt = 0;
      for (int64_t j = 0; j < g.k[d]; ++j) {
        const int64_t i = start + j * g.dil[d];
        if (i >= limit) break;
        ++cnt;
        if (i >= 0 && i < g.in[d]) axis_pos[d].push_back(i);
      }
      padded_count *= cnt;
    }
    window.assign(1, 0);
    for (size_t d = 0; d < S; ++d) {
      std::vector<int64_t> next;
      next.reserve(window.size() * axis_pos[d].size());
      for (int64_t w : window)
        for (int64_t i : axis_pos[d]) next.push_back(w * g.in[d] + i);
      window.swap(next);
    }
    fn(p, window, padded_count);
  }
}

// The 2x2 stride-2 max pool fetches both of its input rows this many elements ahead of the step
// (prefetcht0): on Zen 4, YuNet's 2x2 pool of 16x160x160 took 0.11-0.14 ms without and
// 0.07-0.08 ms with, on the AVX2 and the AVX-512 kernels alike; the hardware's own prefetch does
// not keep up with two interleaved rows of a plane that has left the cache. (The 3x3 one does
// not: SqueezeNet's pools on 111- and 55-wide rows took 15-20% longer with it.)
constexpr int64_t kPoolAhead = 96;

// For a K x K pool (K = 2 only, see above), fetches the lines kPoolAhead elements past column c
// of the K input rows from r (row stride W): an address only, since it may lie past x's end, and
// a prefetch never faults.
template <int K, class T>
[[gnu::always_inline]] inline void fetch_rows_ahead(const T* r, int64_t W, int64_t c) {
  if constexpr (K == 2)
    for (int i = 0; i < K; ++i)
      __builtin_prefetch(reinterpret_cast<const void*>(reinterpret_cast<uintptr_t>(r + i * W + c) + kPoolAhead * sizeof(T)), 0, 3);
}

// max(a, b) as the pooling loops take it: b when it is greater or NaN (NaN wins), else a.
inline float max_nan(float a, float b) { return (b > a || b != b) ? b : a; }

#if defined(__x86_64__) || defined(__i386__)
// max_nan() on 8 lanes.
__attribute__((target("avx2,fma"), always_inline)) inline __m256 max_nan(__m256 a, __m256 b) {
  const __m256 take = _mm256_or_ps(_mm256_cmp_ps(b, a, _CMP_GT_OQ), _mm256_cmp_ps(b, b, _CMP_UNORD_Q));
  return _mm256_blendv_ps(a, b, take);
}

// 8 elements at p as floats (float16 widened in the register), and back.
__attribute__((target("avx2,fma,f16c"), always_inline)) inline __m256 load8(const float* p) { return _mm256_loadu_ps(p); }
__attribute__((target("avx2,fma,f16c"), always_inline)) inline __m256 load8(const uint16_t* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}
__attribute__((target("avx2,fma,f16c"), always_inline)) inline void store8(float* p, __m256 v) { _mm256_storeu_ps(p, v); }
__attribute__((target("avx2,fma,f16c"), always_inline)) inline void store8(uint16_t* p, __m256 v) {
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}
inline float to_float(float v) { return v; }
inline float to_float(uint16_t v) { return model::half_to_float(v); }
inline void put(float* p, float v) { *p = v; }
inline void put(uint16_t* p, float v) { *p = model::float_to_half(v); }

// The max over K rows (stride W) of the 8 columns at r + at.
template <int K, class T>
__attribute__((target("avx2,fma,f16c"), always_inline)) inline __m256 rows_max(const T* r, int64_t W, int64_t at) {
  __m256 v = load8(r + at);
  for (int i = 1; i < K; ++i) v = max_nan(v, load8(r + i * W + at));
  return v;
}

// Outputs ow .. ow + 7 of one output row (r: its first input row).
template <int K, class T>
__attribute__((target("avx2,fma,f16c"), always_inline)) inline void max_pool_s2_eight(const T* r, int64_t W, T* yr, int64_t ow) {
  fetch_rows_ahead<K>(r, W, 2 * ow);
  const __m256 a = rows_max<K>(r, W, 2 * ow), c = rows_max<K>(r, W, 2 * ow + 8);
  __m256 m = max_nan(avx2::even_lanes(a, c), avx2::odd_lanes(a, c));
  // K = 3: columns 2 ow + 2, .., 2 ow + 16 as the odd lanes of the 16 from 2 ow + 1 (reading no
  // further than column 2 ow + 16, which the window of output ow + 7 includes).
  if constexpr (K == 3) m = max_nan(m, avx2::odd_lanes(rows_max<K>(r, W, 2 * ow + 1), rows_max<K>(r, W, 2 * ow + 9)));
  store8(yr + ow, m);
}

// The 8 floats (e[1], .., e[7], n[0]): e moved down one lane, n's first lane in at the top.
__attribute__((target("avx2,fma"), always_inline)) inline __m256 shift_in(__m256 e, __m256 n) {
  const __m256i t = _mm256_castps_si256(_mm256_permute2f128_ps(e, n, 0x21));  // e's upper half, n's lower
  return _mm256_castsi256_ps(_mm256_alignr_epi8(t, _mm256_castps_si256(e), 4));
}

// One plane of a K x K (K = 2 or 3), stride-2 max pool whose windows lie inside x: y[oh][ow] =
// the max of rows 2oh .. 2oh + K - 1 and columns 2ow .. 2ow + K - 1. Eight outputs at a time: the
// rows' max over 16 columns, then its even and odd columns (K = 3: and the even columns one on,
// which are the next eight's first, carried: half the loads and 6 max_nan()s instead of 10 of
// max_pool_s2_eight, which takes the eight outputs whose next columns would pass the row's end).
// The same max_nan()s of the same elements in the same order either way, so the same bits.
// T: float, or float16 (widened as loaded, rounded as stored: exact, the max is one of the inputs).
template <int K, class T>
__attribute__((target("avx2,fma,f16c"))) void max_pool_s2(const T* x, int64_t W, T* y, int64_t OH, int64_t OW) {
  for (int64_t oh = 0; oh < OH; ++oh) {
    const T* r = x + 2 * oh * W;
    T* yr = y + oh * OW;
    int64_t ow = 0;
    if constexpr (K == 3)
      if (24 <= W && 8 <= OW) {
        __m256 a = rows_max<K>(r, W, 0);
        for (; 2 * ow + 24 <= W && ow + 8 <= OW; ow += 8) {
          const __m256 c = rows_max<K>(r, W, 2 * ow + 8), n = rows_max<K>(r, W, 2 * ow + 16);
          const __m256 e = avx2::even_lanes(a, c);
          store8(yr + ow, max_nan(max_nan(e, avx2::odd_lanes(a, c)), shift_in(e, n)));
          a = n;
        }
      }
    for (; 2 * ow + 16 + (K - 2) <= W && ow + 8 <= OW; ow += 8) max_pool_s2_eight<K>(r, W, yr, ow);
    // The last outputs as the eight ending at OW (overlapping ones already written): it reads up
    // to column 2 OW + K - 3 < W, since the last window 2 (OW - 1) .. 2 (OW - 1) + K - 1 is inside.
    if (ow < OW && OW >= 8) {
      max_pool_s2_eight<K>(r, W, yr, OW - 8);
      ow = OW;
    }
    for (; ow < OW; ++ow) {
      float v = to_float(r[2 * ow]);
      for (int i = 0; i < K; ++i)
        for (int j = 0; j < K; ++j) v = max_nan(v, to_float(r[i * W + 2 * ow + j]));
      put(yr + ow, v);
    }
  }
}

// max_nan() on 16 lanes.
NNXR_AVX512 inline __m512 max_nan(__m512 a, __m512 b) {
  return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(b, a, _CMP_GT_OQ) | _mm512_cmp_ps_mask(b, b, _CMP_UNORD_Q), a, b);
}

// The max over K rows (stride W) of the 16 columns at r + at, those past column W - 1 zero.
template <int K>
NNXR_AVX512 inline __m512 rows_max16(const float* r, int64_t W, int64_t at) {
  const __mmask16 k = avx512::lanes(W - at);
  __m512 v = _mm512_maskz_loadu_ps(k, r + at);
#pragma GCC unroll 2
  for (int i = 1; i < K; ++i) v = max_nan(v, _mm512_maskz_loadu_ps(k, r + i * W + at));
  return v;
}

// max_pool_s2 on AVX-512, sixteen outputs a step: the rows' max over columns 2 ow .. 2 ow + 31 as
// two vectors, their even and odd columns by vpermt2ps; for K = 3 the third column of each window
// (the even columns one on) by valignd with the next step's first vector, which that step reuses.
// The same max_nan()s in the same order as max_pool_s2 (NaN wins; the same zero of -0 and +0).
// Loads past column W - 1 are masked (zeros that no stored output reads: every window is inside).
template <int K>
NNXR_AVX512 void max_pool_s2_avx512(const float* x, int64_t W, float* y, int64_t OH, int64_t OW) {
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
  for (int64_t oh = 0; oh < OH; ++oh) {
    const float* r = x + 2 * oh * W;
    float* yr = y + oh * OW;
    __m512 a = rows_max16<K>(r, W, 0);
    for (int64_t ow = 0; ow < OW; ow += 16) {
      fetch_rows_ahead<K>(r, W, 2 * ow);
      const __m512 c = rows_max16<K>(r, W, 2 * ow + 16);
      const __m512 e = _mm512_permutex2var_ps(a, even, c);
      __m512 m = max_nan(e, _mm512_permutex2var_ps(a, odd, c));
      if (K == 3 || ow + 16 < OW) a = rows_max16<K>(r, W, 2 * ow + 32);
      if constexpr (K == 3) m = max_nan(m, _mm512_castsi512_ps(_mm512_alignr_epi32(_mm512_castps_si512(a), _mm512_castps_si512(e), 1)));
      _mm512_mask_storeu_ps(yr + ow, avx512::lanes(OW - ow), m);
    }
  }
}

template <class T>
void max_pool_s2_planes(const T* x, int64_t k, int64_t W, T* y, int64_t OH, int64_t OW) {
  if constexpr (std::is_same_v<T, float>)
    if (cpu_has_avx512()) {
      if (k == 2) max_pool_s2_avx512<2>(x, W, y, OH, OW);
      else max_pool_s2_avx512<3>(x, W, y, OH, OW);
      return;
    }
  if (k == 2) max_pool_s2<2>(x, W, y, OH, OW);
  else max_pool_s2<3>(x, W, y, OH, OW);
}
#else
template <class T>
void max_pool_s2_planes(const T*, int64_t, int64_t, T*, int64_t, int64_t) {}  // never called: not available
#endif

// a[i] = max_nan(a[i], b[i]) for i < n: in 16 lanes, 8 lanes, one at a time.
struct MaxNanScalar {
  static void run(float* a, const float* b, int64_t n) {
    for (int64_t i = 0; i < n; ++i) a[i] = max_nan(a[i], b[i]);
  }
};
#if defined(__x86_64__) || defined(__i386__)
struct MaxNanAvx2 {
  __attribute__((target("avx2,fma"), noinline)) static void run(float* a, const float* b, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(a + i, max_nan(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i)));
    for (; i < n; ++i) a[i] = max_nan(a[i], b[i]);
  }
};
struct MaxNanAvx512 {
  NNXR_AVX512 __attribute__((noinline)) static void run(float* a, const float* b, int64_t n) {
    for (int64_t i = 0; i < n; i += 16) {
      const __mmask16 k = avx512::lanes(n - i);
      const __m512 x = _mm512_maskz_loadu_ps(k, a + i), y = _mm512_maskz_loadu_ps(k, b + i);
      const __mmask16 take = _mm512_cmp_ps_mask(y, x, _CMP_GT_OQ) | _mm512_cmp_ps_mask(y, y, _CMP_UNORD_Q);
      _mm512_mask_storeu_ps(a + i, k, _mm512_mask_blend_ps(take, x, y));
    }
  }
};
#endif

// The max of k values s apart, a[i] = max(a[i], a[i + s], .., a[i + (k - 1) s]), in place for
// i < n - (k - 1) s: windows of 2, 4, 8, .. by doubling, then the window of k as two windows of
// the largest power of two p <= k that overlap (log2 k + 1 passes instead of k - 1).
template <class Into>
[[gnu::always_inline]] inline void window_max(float* a, int64_t n, int64_t k, int64_t s) {
  int64_t p = 1;
  for (; 2 * p <= k; p *= 2) {
    Into::run(a, a + p * s, n - p * s);
    n -= p * s;
  }
  if (p < k) Into::run(a, a + (k - p) * s, n - (k - p) * s);
}

// One plane of a stride-1, undilated max pool (YOLOX's SPP: 5x5, 9x9 and 13x13 windows padded to
// the same size on 13x13 planes), by passes along the whole plane instead of rows of a few
// outputs: the input in a buffer of Hp = OH + kh - 1 rows of Wp = OW + kw - 1 columns padded
// with -inf, the window max along the flattened rows (positions past a row's OW outputs mix two
// rows and are never read), then down the columns (step Wp), then each row's OW outputs.
// NaN wins, as max_nan.
template <class Into>
[[gnu::always_inline]] inline void max_pool_s1_plane_body(const float* x, int64_t H, int64_t W, int64_t kh, int64_t kw, int64_t ph, int64_t pw,
                                                         int64_t OH, int64_t OW, float* y, float* buf) {
  const int64_t Wp = OW + kw - 1, Hp = OH + kh - 1, right = Wp - pw - W;
  const float lowest = -std::numeric_limits<float>::infinity();
  std::fill(buf, buf + ph * Wp, lowest);
  for (int64_t r = 0; r < H; ++r) {
    float* pr = buf + (ph + r) * Wp;
    for (int64_t c = 0; c < pw; ++c) pr[c] = lowest;
    std::memcpy(pr + pw, x + r * W, static_cast<size_t>(W) * sizeof(float));
    for (int64_t c = 0; c < right; ++c) pr[pw + W + c] = lowest;
  }
  std::fill(buf + (ph + H) * Wp, buf + Hp * Wp, lowest);
  window_max<Into>(buf + ph * Wp, H * Wp, kw, 1);
  window_max<Into>(buf, Hp * Wp, kh, Wp);
  for (int64_t oh = 0; oh < OH; ++oh) std::memcpy(y + oh * OW, buf + oh * Wp, static_cast<size_t>(OW) * sizeof(float));
}

#if defined(__x86_64__) || defined(__i386__)
__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma"))) void max_pool_s1_plane_avx512(const float* x, int64_t H, int64_t W, int64_t kh,
                                                                                                    int64_t kw, int64_t ph, int64_t pw, int64_t OH,
                                                                                                    int64_t OW, float* y, float* buf) {
  max_pool_s1_plane_body<MaxNanAvx512>(x, H, W, kh, kw, ph, pw, OH, OW, y, buf);
}
__attribute__((target("avx2,fma"))) void max_pool_s1_plane_avx2(const float* x, int64_t H, int64_t W, int64_t kh, int64_t kw, int64_t ph, int64_t pw,
                                                               int64_t OH, int64_t OW, float* y, float* buf) {
  max_pool_s1_plane_body<MaxNanAvx2>(x, H, W, kh, kw, ph, pw, OH, OW, y, buf);
}
#endif
void max_pool_s1_plane_portable(const float* x, int64_t H, int64_t W, int64_t kh, int64_t kw, int64_t ph, int64_t pw, int64_t OH, int64_t OW, float* y,
                                float* buf) {
  max_pool_s1_plane_body<MaxNanScalar>(x, H, W, kh, kw, ph, pw, OH, OW, y, buf);
}

// Whether the vectorised 2x2 / 3x3 stride-2 max pool takes a 2-D pool of this geometry: every
// window inside the input, no padding or dilation, on a CPU with AVX2.
bool max_pool_s2_applies(const std::vector<int64_t>& in, const std::vector<int64_t>& k, const std::vector<int64_t>& out,
                         const std::vector<int64_t>& stride, const std::vector<int64_t>& dil, const std::vector<int64_t>& pb) {
  return in.size() == 2 && (k[0] == 2 || k[0] == 3) && k[1] == k[0] && stride[0] == 2 && stride[1] == 2 && dil[0] == 1 && dil[1] == 1 &&
         pb[0] == 0 && pb[1] == 0 && 2 * (out[0] - 1) + k[0] <= in[0] && 2 * (out[1] - 1) + k[1] <= in[1] && cpu_has_avx2_fma();
}

// A float16 MaxPool without indices that max_pool_s2_applies to, read and written in float16;
// false (nothing done) otherwise.
bool max_pool_half(KernelContext& ctx, const SpatialAttrs& at) {
  const Value& x = ctx.in(0);
  if (x.rank() != 4 || at.kernel.size() != 2 || (ctx.output_count() > 1 && ctx.has_output(1))) return false;
  std::vector<int64_t> in(x.dims().begin() + 2, x.dims().end()), k = at.kernel, out, stride, dil, pb, pe;
  at.resolve(ctx, in, k, stride, dil, pb, pe, out);
  if (out[0] <= 0 || out[1] <= 0 || !max_pool_s2_applies(in, k, out, stride, dil, pb)) return false;
  const int64_t planes = x.dims()[0] * x.dims()[1], IS = in[0] * in[1], P = out[0] * out[1];
  Value& y = ctx.out(0);
  y.reset(DType::Float16, {x.dims()[0], x.dims()[1], out[0], out[1]});
  const uint16_t* px = x.as<uint16_t>().data();
  uint16_t* py = y.mutable_as<uint16_t>().data();
  ctx.pool().parallel_for(planes, std::max<int64_t>(1, 8192 / std::max<int64_t>(1, P)), [&](int64_t b, int64_t e) {
    for (int64_t plane = b; plane < e; ++plane) max_pool_s2_planes(px + plane * IS, k[0], in[1], py + plane * P, out[0], out[1]);
  });
  return true;
}

std::unique_ptr<Kernel> pool_factory(const KernelInit& init, PoolKind kind) {
  SpatialAttrs at = SpatialAttrs::decode(init);
  if (at.kernel.empty()) init.fail("kernel_shape is required");
  const bool include_pad = init.attrs().get_int("count_include_pad", 0) != 0;
  const int64_t storage_order = init.attrs().get_int("storage_order", 0);
  const double p_norm = static_cast<double>(init.attrs().get_int("p", 2));
  return make_kernel([=](KernelContext& ctx) {
    ctx.expect_dtype(0, {DType::Float});
    const Value& x = ctx.in(0);
    if (x.rank() != at.kernel.size() + 2)
      ctx.fail("input " + ctx.input_name(0) + " has shape " + shape_str(x.shape()) + ", which does not match kernel_shape " + shape_str(at.kernel));
    PoolGeom g;
    g.in.assign(x.dims().begin() + 2, x.dims().end());
    g.k = at.kernel;
    at.resolve(ctx, g.in, g.k, g.stride, g.dil, g.pb, g.pe, g.out);
    for (int64_t o : g.out)
      if (o <= 0) ctx.fail("output would be empty for input " + shape_str(x.shape()));
    const int64_t planes = x.dims()[0] * x.dims()[1], IS = product(g.in), P = product(g.out);
    Shape os{x.dims()[0], x.dims()[1]};
    os.insert(os.end(), g.out.begin(), g.out.end());
    Value& y = ctx.out(0);
    y.reset(DType::Float, os);
    int64_t* idx = nullptr;
    if (kind == PoolKind::Max && ctx.has_output(1)) {
      ctx.out(1).reset(DType::Int64, os);
      idx = ctx.out(1).mutable_as<int64_t>().data();
    }
    const float* px = x.as<float>().data();
    float* py = y.mutable_as<float>().data();
    // Fast path: 1-D/2-D max and average pooling without indices, direct loops.
    if (g.in.size() <= 2 && kind != PoolKind::Lp && !idx) {
      // A 2-D pool of planes one column wide, windows one column wide ([N, C, H, 1]: a 1-D model
      // exported as 2-D, HAR-CNN's [2, 1] windows) is the 1-D pool of each column as a row: the
      // row pass below would otherwise run once for every one-element row (HAR-CNN's MaxPools
      // took 18 us each on 18 x 128 of them, three quarters of the model's run).
      const bool column = g.in.size() == 2 && g.in[1] == 1 && g.out[1] == 1 && g.k[1] == 1 && g.stride[1] == 1 && g.pb[1] == 0 && g.pe[1] == 0;
      const bool two = g.in.size() == 2 && !column;
      const size_t a = column ? 0 : g.in.size() - 1;  // the axis along a row
      const int64_t H = two ? g.in[0] : 1, W = g.in[a], OH = two ? g.out[0] : 1, OW = g.out[a];
      const int64_t kh = two ? g.k[0] : 1, kw = g.k[a], sh = two ? g.stride[0] : 1, sw = g.stride[a];
      const int64_t dh = two ? g.dil[0] : 1, dw = g.dil[a], ph = two ? g.pb[0] : 0, pw = g.pb[a];
      const int64_t peh = two ? g.pe[0] : 0, pew = g.pe[a];
      if (kind == PoolKind::Max && max_pool_s2_applies(g.in, g.k, g.out, g.stride, g.dil, g.pb)) {
        // The 2x2 and 3x3 stride-2 pooling of vision networks with every window inside the
        // input, vectorised.
        ctx.pool().parallel_for(planes, std::max<int64_t>(1, 8192 / std::max<int64_t>(1, P)), [&](int64_t b, int64_t e) {
          for (int64_t plane = b; plane < e; ++plane) max_pool_s2_planes(px + plane * IS, kh, W, py + plane * P, OH, OW);
        });
        return;
      }
      // The same pools with padding (ResNet's 3x3 stride 2 with pads of 1 on 112x112): each plane
      // copied into a buffer whose padding is -inf, which a window's max never takes over an input
      // (a NaN wins; a window of padding alone is -inf, as below), then pooled as above. The
      // separable pass below took 0.84 ms for ResNet-50's (Intel Xeon, 1 thread). The padding is
      // written once a task: only the rows of the input change from plane to plane.
      if (kind == PoolKind::Max && two && (kh == 2 || kh == 3) && kw == kh && sh == 2 && sw == 2 && dh == 1 && dw == 1 && ph < kh && pw < kw &&
          cpu_has_avx2_fma()) {
        const int64_t Hp = std::max(H + ph, 2 * (OH - 1) + kh), Wp = std::max(W + pw, 2 * (OW - 1) + kw);  // every window inside
        ctx.pool().parallel_for(planes, std::max<int64_t>(1, 8192 / std::max<int64_t>(1, P)), [&](int64_t b, int64_t e) {
          thread_local std::vector<float> buf;  // each thread's own, kept between calls
          if (buf.size() < static_cast<size_t>(Hp * Wp)) buf.resize(static_cast<size_t>(Hp * Wp));
          float* const pad = buf.data();
          std::fill(pad, pad + Hp * Wp, -std::numeric_limits<float>::infinity());
          for (int64_t plane = b; plane < e; ++plane) {
            const float* xp = px + plane * IS;
            for (int64_t r = 0; r < H; ++r) std::memcpy(pad + (ph + r) * Wp + pw, xp + r * W, static_cast<size_t>(W) * sizeof(float));
            max_pool_s2_planes(pad, kh, Wp, py + plane * P, OH, OW);
          }
        });
        return;
      }
      if (kind == PoolKind::Max && two && sh == 1 && sw == 1 && dh == 1 && dw == 1 && kw > 1 && OW + kw - 1 >= W + pw && OH + kh - 1 >= H + ph) {
        using PlaneFn = void (*)(const float*, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, float*, float*);
        PlaneFn plane_fn = max_pool_s1_plane_portable;
#if defined(__x86_64__) || defined(__i386__)
        if (cpu_has_avx512()) plane_fn = max_pool_s1_plane_avx512;
        else if (cpu_has_avx2_fma()) plane_fn = max_pool_s1_plane_avx2;
#endif
        const auto buf_size = static_cast<size_t>((OH + kh - 1) * (OW + kw - 1));
        ctx.pool().parallel_for(planes, std::max<int64_t>(1, 8192 / std::max<int64_t>(1, P)), [&](int64_t b, int64_t e) {
          thread_local std::vector<float> buf;  // each thread's own, kept between calls
          if (buf.size() < buf_size) buf.resize(buf_size);
          for (int64_t plane = b; plane < e; ++plane)
            plane_fn(px + plane * IS, H, W, kh, kw, ph, pw, OH, OW, py + plane * P, buf.data());
        });
        return;
      }
      if (kind == PoolKind::Max) {
        // Max is separable: the max over each row's windows first, then over the rows of each
        // window (kh + kw comparisons per output instead of kh x kw). NaN wins, as below.
        ctx.pool().parallel_for(planes, 1, [&](int64_t b, int64_t e) {
          // Each thread's own buffers, kept between calls (every element read is written first).
          thread_local std::vector<float> rows, halves;  // halves, stride 2: even columns, then odd ones
          if (rows.size() < static_cast<size_t>(H * OW)) rows.resize(static_cast<size_t>(H * OW));
          if (sw == 2 && halves.size() < static_cast<size_t>(W + 1)) halves.resize(static_cast<size_t>(W + 1));
          const int64_t n_even = (W + 1) / 2;
          for (int64_t plane = b; plane < e; ++plane) {
            const float* xp = px + plane * IS;
            float* yp = py + plane * P;
            // Row pass, one kernel column at a time over every output column it reaches
            // (0 <= ow * sw + off < W), so that the inner loop runs along contiguous outputs.
            // With stride 2 the row is first split into its even and odd columns, so that each
            // kernel column reads a contiguous run too.
            for (int64_t r = 0; r < H; ++r) {
              const float* row = xp + r * W;
              if (sw == 2) {
                copy_every_other(row, halves.data(), n_even);
                copy_every_other(row + 1, halves.data() + n_even, W / 2);
              }
              float* out = rows.data() + r * OW;
              std::fill(out, out + OW, -std::numeric_limits<float>::infinity());
              for (int64_t j = 0; j < kw; ++j) {
                const int64_t off = j * dw - pw;
                const int64_t lo = off >= 0 ? 0 : (-off + sw - 1) / sw;
                const int64_t hi = std::min(OW, W - off <= 0 ? 0 : (W - off + sw - 1) / sw);
                // Column ow * sw + off is src[ow + shift] (stride 2: in the half of its parity).
                auto take = [out](const float* src, int64_t step, int64_t shift, int64_t from, int64_t to) {
                  for (int64_t ow = from; ow < to; ++ow) out[ow] = max_nan(out[ow], src[ow * step + shift]);
                };
                if (sw == 2) {
                  const int64_t odd = off & 1;
                  take(halves.data() + (odd ? n_even : 0), 1, (off - odd) / 2, lo, hi);
                } else {
                  take(row, sw, off, lo, hi);
                }
              }
            }
            for (int64_t oh = 0; oh < OH; ++oh) {
              const int64_t h0 = oh * sh - ph;
              const int64_t i0 = h0 >= 0 ? 0 : (-h0 + dh - 1) / dh;
              const int64_t i1 = std::min(kh, H - h0 <= 0 ? 0 : (H - h0 + dh - 1) / dh);
              float* yr = yp + oh * OW;
              std::fill(yr, yr + OW, -std::numeric_limits<float>::infinity());
              for (int64_t i = i0; i < i1; ++i) {
                const float* src = rows.data() + (h0 + i * dh) * OW;
                for (int64_t ow = 0; ow < OW; ++ow) yr[ow] = max_nan(yr[ow], src[ow]);
              }
            }
          }
        });
        return;
      }
      ctx.pool().parallel_for(planes, 1, [&](int64_t b, int64_t e) {
        for (int64_t plane = b; plane < e; ++plane) {
          const float* xp = px + plane * IS;
          float* yp = py + plane * P;
          for (int64_t oh = 0; oh < OH; ++oh) {
            const int64_t h0 = oh * sh - ph;
            int64_t kh0 = 0, kh1 = 0, pad_h = 0;  // valid kernel rows [kh0, kh1), rows inside the padded input
            for (int64_t i = 0; i < kh; ++i) {
              const int64_t r = h0 + i * dh;
              if (r >= H + peh) break;
              ++pad_h;
              if (r < 0) kh0 = i + 1;
              else if (r < H) kh1 = i + 1;
            }
            for (int64_t ow = 0; ow < OW; ++ow) {
              const int64_t w0 = ow * sw - pw;
              int64_t kw0 = 0, kw1 = 0, pad_w = 0;
              for (int64_t j = 0; j < kw; ++j) {
                const int64_t c = w0 + j * dw;
                if (c >= W + pew) break;
                ++pad_w;
                if (c < 0) kw0 = j + 1;
                else if (c < W) kw1 = j + 1;
              }
              if (kind == PoolKind::Max) {
                float m = -std::numeric_limits<float>::infinity();
                for (int64_t i = kh0; i < kh1; ++i) {
                  const float* row = xp + (h0 + i * dh) * W + w0;
                  for (int64_t j = kw0; j < kw1; ++j) {
                    const float v = row[j * dw];
                    m = (v > m || std::isnan(v)) ? v : m;
                  }
                }
                yp[oh * OW + ow] = m;
              } else {
                double acc = 0;
                for (int64_t i = kh0; i < kh1; ++i) {
                  const float* row = xp + (h0 + i * dh) * W + w0;
                  for (int64_t j = kw0; j < kw1; ++j) acc += row[j * dw];
                }
                const int64_t cnt = include_pad ? pad_h * pad_w : std::max<int64_t>(0, kh1 - kh0) * std::max<int64_t>(0, kw1 - kw0);
                yp[oh * OW + ow] = cnt > 0 ? static_cast<float>(acc / static_cast<double>(cnt)) : 0.f;
              }
            }
          }
        }
      });
      return;
    }
    ctx.pool().parallel_for(planes, 1, [&](int64_t b, int64_t e) {
      for (int64_t plane = b; plane < e; ++plane) {
        const float* xp = px + plane * IS;
        float* yp = py + plane * P;
        for_each_window(g, [&](int64_t p, const std::vector<int64_t>& win, int64_t padded_count) {
          if (kind == PoolKind::Max) {
            float m = -std::numeric_limits<float>::infinity();
            int64_t arg = win.empty() ? 0 : win[0];
            for (int64_t w : win)
              if (xp[w] > m || std::isnan(xp[w])) {
                m = xp[w];
                arg = w;
                if (std::isnan(m)) break;
              }
            yp[p] = m;
            if (idx) {
              int64_t flat = plane * IS + arg;
              if (storage_order == 1 && g.in.size() == 2) {
                const int64_t h = arg / g.in[1], w = arg % g.in[1];
                flat = plane * IS + w * g.in[0] + h;
              }
              idx[plane * P + p] = flat;
            }
          } else if (kind == PoolKind::Avg) {
            double s = 0;
            for (int64_t w : win) s += xp[w];
            const int64_t cnt = include_pad ? padded_count : static_cast<int64_t>(win.size());
            yp[p] = cnt > 0 ? static_cast<float>(s / static_cast<double>(cnt)) : 0.f;
          } else {
            double s = 0;
            for (int64_t w : win) s += std::pow(std::fabs(static_cast<double>(xp[w])), p_norm);
            yp[p] = static_cast<float>(std::pow(s, 1.0 / p_norm));
          }
        });
      }
    });
  });
}

std::unique_ptr<Kernel> global_pool_factory(const KernelInit& init, PoolKind kind) {
  const double p_norm = static_cast<double>(init.attrs().get_int("p", 2));
  return make_kernel([=](KernelContext& ctx) {
    ctx.expect_dtype(0, {DType::Float, DType::Float16});
    ctx.expect_min_rank(0, 2);
    const Value& x = ctx.in(0);
    const bool half = x.dtype() == DType::Float16;
    const int64_t planes = x.dims()[0] * x.dims()[1];
    const int64_t IS = product(std::span<const int64_t>(x.dims()).subspan(2));
    Shape os(x.rank(), 1);
    os[0] = x.dims()[0];
    os[1] = x.dims()[1];
    Value& y = ctx.out(0);
    y.reset(x.dtype(), os);
    // Planes split across the threads. float16: each plane widened into a buffer that stays in
    // cache, the result rounded once.
    const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 14) / std::max<int64_t>(1, IS));
    ctx.pool().parallel_for(planes, grain, [&](int64_t p0, int64_t p1) {
      std::vector<float> widened(half ? static_cast<size_t>(IS) : 0);
      for (int64_t plane = p0; plane < p1; ++plane) {
        const float* xp = half ? widened.data() : x.as<float>().data() + plane * IS;
        if (half) model::half_to_float(x.as<uint16_t>().data() + plane * IS, widened.data(), widened.size());
        double acc = 0;
        if (kind == PoolKind::Max) {
          acc = plane_max(xp, IS);
        } else if (kind == PoolKind::Avg) {
          acc = IS > 0 ? plane_sum(xp, IS) / static_cast<double>(IS) : 0.0;
        } else {
          for (int64_t i = 0; i < IS; ++i) acc += std::pow(std::fabs(static_cast<double>(xp[i])), p_norm);
          acc = std::pow(acc, 1.0 / p_norm);
        }
        if (half) y.mutable_as<uint16_t>()[static_cast<size_t>(plane)] = model::float_to_half(static_cast<float>(acc));
        else y.mutable_as<float>()[static_cast<size_t>(plane)] = static_cast<float>(acc);
      }
    });
  });
}

}  // namespace

namespace {

// The sum (in double) or the maximum of a plane of n floats: 64 float lanes a step, the sums of
// each block of 512 floats added into 8 double lanes (so that the error is that of float sums of
// 8 values, then double). The maximum is NaN when any value is (the scalar loop's rule; any NaN
// of the plane, found again by a scalar pass).

double plane_max_scalar(const float* x, int64_t n) {
  double acc = -std::numeric_limits<double>::infinity();
  for (int64_t i = 0; i < n; ++i) acc = std::isnan(x[i]) || x[i] > acc ? x[i] : acc;
  return acc;
}
double plane_sum_scalar(const float* x, int64_t n) {
  double acc = 0;
  for (int64_t i = 0; i < n; ++i) acc += x[i];
  return acc;
}

NNXR_AVX512 double plane_sum_avx512(const float* x, int64_t n) {
  __m512d d = _mm512_setzero_pd();
  int64_t i = 0;
  while (i < n) {
    const int64_t end = std::min(n, i + 512);
    __m512 a[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
    for (; i + 64 <= end; i += 64)
      for (int u = 0; u < 4; ++u) a[u] = _mm512_add_ps(a[u], _mm512_loadu_ps(x + i + 16 * u));
    for (; i < end; i += 16) a[0] = _mm512_add_ps(a[0], _mm512_maskz_loadu_ps(avx512::lanes(end - i), x + i));
    const __m512 s = _mm512_add_ps(_mm512_add_ps(a[0], a[1]), _mm512_add_ps(a[2], a[3]));
    d = _mm512_add_pd(d, _mm512_add_pd(_mm512_cvtps_pd(_mm512_castps512_ps256(s)), _mm512_cvtps_pd(_mm512_extractf32x8_ps(s, 1))));
  }
  alignas(64) double l[8];
  _mm512_store_pd(l, d);
  return ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]));
}
NNXR_AVX512 double plane_max_avx512(const float* x, int64_t n) {
  __m512 m[4];
  for (auto& v : m) v = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  __mmask16 nan = 0;
  int64_t i = 0;
  for (; i + 64 <= n; i += 64)
    for (int u = 0; u < 4; ++u) {
      const __m512 v = _mm512_loadu_ps(x + i + 16 * u);
      nan |= _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
      m[u] = _mm512_max_ps(m[u], v);
    }
  for (; i < n; i += 16) {
    const __mmask16 k = avx512::lanes(n - i);
    const __m512 v = _mm512_mask_loadu_ps(m[0], k, x + i);  // (lanes past n keep m)
    nan |= _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    m[0] = _mm512_max_ps(m[0], v);
  }
  if (nan) return plane_max_scalar(x, n);
  alignas(64) float l[16];
  _mm512_store_ps(l, _mm512_max_ps(_mm512_max_ps(m[0], m[1]), _mm512_max_ps(m[2], m[3])));
  float r = l[0];
  for (float v : l) r = v > r ? v : r;
  return r;
}

__attribute__((target("avx2,fma"))) double plane_sum_avx2(const float* x, int64_t n) {
  __m256d d = _mm256_setzero_pd();
  int64_t i = 0;
  while (i < n) {
    const int64_t end = std::min(n, i + 512);
    __m256 a[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
    for (; i + 32 <= end; i += 32)
      for (int u = 0; u < 4; ++u) a[u] = _mm256_add_ps(a[u], _mm256_loadu_ps(x + i + 8 * u));
    for (; i < end; i += 8) a[0] = _mm256_add_ps(a[0], _mm256_maskload_ps(x + i, avx2::tail_mask(std::min<int64_t>(8, end - i))));
    const __m256 s = _mm256_add_ps(_mm256_add_ps(a[0], a[1]), _mm256_add_ps(a[2], a[3]));
    d = _mm256_add_pd(d, _mm256_add_pd(_mm256_cvtps_pd(_mm256_castps256_ps128(s)), _mm256_cvtps_pd(_mm256_extractf128_ps(s, 1))));
  }
  alignas(32) double l[4];
  _mm256_store_pd(l, d);
  return (l[0] + l[1]) + (l[2] + l[3]);
}
__attribute__((target("avx2,fma"))) double plane_max_avx2(const float* x, int64_t n) {
  __m256 m[4];
  for (auto& v : m) v = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
  __m256 nan = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 32 <= n; i += 32)
    for (int u = 0; u < 4; ++u) {
      const __m256 v = _mm256_loadu_ps(x + i + 8 * u);
      nan = _mm256_or_ps(nan, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
      m[u] = _mm256_max_ps(m[u], v);
    }
  double acc = -std::numeric_limits<double>::infinity();
  for (; i < n; ++i) acc = std::isnan(x[i]) || x[i] > acc ? x[i] : acc;
  if (_mm256_movemask_ps(nan) || std::isnan(acc)) return plane_max_scalar(x, n);
  alignas(32) float l[8];
  _mm256_store_ps(l, _mm256_max_ps(_mm256_max_ps(m[0], m[1]), _mm256_max_ps(m[2], m[3])));
  for (float v : l) acc = v > acc ? v : acc;
  return acc;
}

}  // namespace

double plane_sum(const float* x, int64_t n) {
  return (cpu_has_avx512() ? plane_sum_avx512 : cpu_has_avx2_fma() ? plane_sum_avx2 : plane_sum_scalar)(x, n);
}
double plane_max(const float* x, int64_t n) {
  return (cpu_has_avx512() ? plane_max_avx512 : cpu_has_avx2_fma() ? plane_max_avx2 : plane_max_scalar)(x, n);
}


void max_pool_s2_float(const float* x, int64_t planes, int64_t k, int64_t H, int64_t W, float* y, int64_t OH, int64_t OW) {
  for (int64_t p = 0; p < planes; ++p) max_pool_s2_planes(x + p * H * W, k, W, y + p * OH * OW, OH, OW);
}

void register_pool(Registry& r) {
  r.add("MaxPool", [](const KernelInit& i) {
    std::shared_ptr<const Kernel> inner = pool_factory(i, PoolKind::Max);
    const model::Graph* graph = &i.graph;  // owned by the Plan, which owns this kernel
    const SpatialAttrs at = SpatialAttrs::decode(i);
    return make_kernel([inner, graph, at](KernelContext& ctx) {
      const Value& x = ctx.in(0);
      const DType t = x.dtype();
      if (t == DType::Float16) {
        if (max_pool_half(ctx, at)) return;
        // Other geometries: widened to float, pooled, rounded back (exact: the max is an input).
        Value xf, yf, indices;
        xf.reset(DType::Float, x.dims());
        model::half_to_float(x.as<uint16_t>().data(), xf.mutable_as<float>().data(), static_cast<size_t>(x.elements()));
        std::vector<const Value*> ins{&xf};
        std::vector<Value*> outs{&yf, ctx.has_output(1) ? &indices : nullptr};
        KernelContext fctx(*graph, ctx.node(), ins, std::span<Value*>(outs.data(), std::min(outs.size(), ctx.output_count())), ctx.pool());
        inner->run(fctx);
        Value& y = ctx.out(0);
        y.reset(t, yf.dims());
        model::float_to_half(yf.as<float>().data(), y.mutable_as<uint16_t>().data(), static_cast<size_t>(yf.elements()));
        if (ctx.has_output(1)) ctx.out(1).assign(indices.dtype(), indices.dims(), {indices.data(), indices.byte_size()});
        return;
      }
      if (t != DType::UInt8 && t != DType::Int8) return inner->run(ctx);
      // 8-bit integers: pooled as float32 (exact for them), converted back.
      Value xf, yf, indices;
      xf.reset(DType::Float, x.dims());
      auto xs = xf.mutable_as<float>();
      for (size_t k = 0; k < xs.size(); ++k) xs[k] = t == DType::UInt8 ? x.as<uint8_t>()[k] : x.as<int8_t>()[k];
      std::vector<const Value*> ins{&xf};
      std::vector<Value*> outs{&yf, ctx.has_output(1) ? &indices : nullptr};
      KernelContext fctx(*graph, ctx.node(), ins, std::span<Value*>(outs.data(), std::min(outs.size(), ctx.output_count())), ctx.pool());
      inner->run(fctx);
      Value& y = ctx.out(0);
      y.reset(t, yf.dims());
      const auto ys = yf.as<float>();
      for (size_t k = 0; k < ys.size(); ++k) {  // a window wholly in the padding gives -inf: the type's minimum
        if (t == DType::UInt8) y.mutable_as<uint8_t>()[k] = static_cast<uint8_t>(std::clamp(ys[k], 0.f, 255.f));
        else y.mutable_as<int8_t>()[k] = static_cast<int8_t>(std::clamp(ys[k], -128.f, 127.f));
      }
      if (ctx.has_output(1)) ctx.out(1).assign(indices.dtype(), indices.dims(), {indices.data(), indices.byte_size()});
    });
  }, false);  // float16 read and written by max_pool_half (or widened above)
  r.add("AveragePool", [](const KernelInit& i) { return pool_factory(i, PoolKind::Avg); });
  r.add("LpPool", [](const KernelInit& i) { return pool_factory(i, PoolKind::Lp); });
  // The global pools read float16 themselves (a plane at a time).
  r.add("GlobalMaxPool", [](const KernelInit& i) { return global_pool_factory(i, PoolKind::Max); }, false);
  r.add("GlobalAveragePool", [](const KernelInit& i) { return global_pool_factory(i, PoolKind::Avg); }, false);
  r.add("GlobalLpPool", [](const KernelInit& i) { return global_pool_factory(i, PoolKind::Lp); }, false);
}

}  // namespace nnxr::runtime
