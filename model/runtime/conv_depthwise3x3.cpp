// The 3x3 depthwise convolution of mobile and detection networks (stride 1 or 2, dilation 1, any
// padding), and the 5x5 one (EfficientNet), one plane at a time; the bias and the
// activation are applied in registers and y and the activation are written once.
// - AVX-512 at stride 1 with "same" padding all round on rows that are not whole vectors (28, 14,
//   7 wide; 56 too without a SiLU; the 5x5 on rows of 8 or fewer): the plane as one run of H W
//   outputs (plane_flat), the taps off a row's ends masked: no partial vectors at the rows' ends.
// - AVX-512 with "same" column padding ((K - 1) / 2 on the left: every 3x3 and 5x5 layer of
//   MobileNet, EfficientNet, UltraFace and YuNet), except the stride-1 5x5: straight from the
//   input rows (plane_direct), steps of 16 outputs, the shifted taps by valignd of the vectors
//   of consecutive steps and stride 2's even and odd columns by vpermt2ps: no copy of the input.
// - AVX2 at stride 1 with "same" padding all round on planes of up to 1024 outputs (5x5: 256):
//   the plane as one run of H W outputs (plane_flat8), copied once between zeros, the taps off a
//   row's ends masked. AVX2 stride-2 3x3 on rows of 96 to 191: straight from the input rows
//   (plane_direct8), even and odd columns by shuffle_ps, masked loads at the rows' ends.
// - Otherwise each input row is copied once into a zero-padded row (stride 2: split into its even
//   and odd columns), so that the taps of a step of outputs are vector loads of those rows. AVX2
//   (3x3 and 5x5): steps of 16 outputs (two 8-float vectors). AVX-512 (the stride-1 5x5, and other paddings):
//   steps of 32 outputs (two 16-float vectors) from aligned loads of the rows, shifted by valignd;
//   the row's end one or two vectors with masked stores (a 7- or 14-wide plane is one vector a
//   row).
#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <vector>

#include "model/runtime/compute.h"
#include "model/runtime/avx2.h"
#include "model/runtime/avx512.h"
#include "model/runtime/value.h"

namespace nnxr::runtime {

bool conv_depthwise3x3_applies(const ConvGeom& g) {
  if (!cpu_has_avx2_fma() || g.spatial() != 2 || g.group <= 1 || g.group != g.C || g.M != g.C) return false;
  const int64_t s = g.stride[0], k = g.kernel[0];
  if (k != 3 && k != 5) return false;
  return g.kernel[1] == k && g.dilation[0] == 1 && g.dilation[1] == 1 && g.stride[1] == s && (s == 1 || s == 2) && g.pad_begin[0] < k &&
         g.pad_begin[1] < k;
}

#if defined(__x86_64__) || defined(__i386__)
namespace {

using avx2::ActParams;
using avx2::InReg;

constexpr int64_t kOut = 16;  // outputs per step: two 8-float vectors

struct Plane {
  int64_t H, W, OH, OW, stride, ph, pw;
  int64_t row_len;  // floats per prepared row (stride 2: per half, even or odd columns)
};

// The prepared rows of one thread's planes, shared by the AVX2 and AVX-512 kernels: H input rows
// of row_len floats (stride 2: an even and an odd half each), and one more zero row that the taps
// outside the input read. All zero at the start: the planes write only the data columns, so the
// padding columns stay 0. On a cache line, as the 64-byte loads of the AVX-512 kernel want.
struct Rows {
  float* rows;
  const float* zero;
};
inline Rows prepared_rows(const Plane& g) {
  thread_local std::vector<float, CacheAligned<float>> buf;
  const size_t rows_size = static_cast<size_t>(g.H * g.row_len * g.stride);
  buf.assign(rows_size + static_cast<size_t>(g.row_len * g.stride), 0.f);
  return {buf.data(), buf.data() + rows_size};
}

// The K prepared rows (stride 2: their even halves) that output row oh reads, into src.
template <int K, int Stride>
[[gnu::always_inline]] inline void tap_rows(const Plane& g, const Rows& r, int64_t oh, const float** src) {
  for (int ki = 0; ki < K; ++ki) {
    const int64_t ih = oh * Stride - g.ph + ki;
    src[ki] = ih < 0 || ih >= g.H ? r.zero : r.rows + ih * Stride * g.row_len;
  }
}

// Output row oh of y and of the epilogue's outputs (null where there is none).
struct OutRow {
  float* y;
  float* z;
  float* z2;
  const float* addend;
};
inline OutRow out_row(int64_t oh, int64_t OW, float* y, float* z, float* z2, const float* addend) {
  auto at = [&](auto* p) { return p ? p + oh * OW : nullptr; };
  return {y + oh * OW, at(z), at(z2), at(addend)};
}

// The planes [b, e) of X (C channels, the epilogue's planes at the same index), each by
// one_plane(g, x, w, bias, y, z, z2, addend, rows) with its weights (K x K a channel).
template <int K, class OnePlane>
[[gnu::always_inline]] inline void each_plane(const Plane& g, int64_t C, const float* X, const float* W, const float* B, float* Y,
                                             const EpilogueOut& act, avx2::InReg Act, int64_t b, int64_t e, OnePlane&& one_plane) {
  const int64_t P = g.OH * g.OW;
  const Rows rows = prepared_rows(g);
  for (int64_t p = b; p < e; ++p) {
    const int64_t c = p % C;
    one_plane(X + p * g.H * g.W, W + K * K * c, B ? B[c] : 0.f, Y + p * P, Act == avx2::InReg::None ? nullptr : act.z1 + p * P,
              Act == avx2::InReg::SiLU ? act.z2 + p * P : nullptr, Act == avx2::InReg::Add ? act.addend + p * P : nullptr, rows);
  }
}

// The row length (floats, whole vectors of `vec`) for steps of `step` outputs: the padded input
// row (`data_end`: its padding and data columns as the row copy writes them) and every column the
// last step reads (stride 2: per half).
inline int64_t row_length(const Plane& p, int64_t K, int64_t step, int64_t vec, int64_t data_end) {
  const int64_t steps = (p.OW + step - 1) / step * step;
  const int64_t need = p.stride == 1 ? std::max(data_end, steps + K - 1) : std::max((data_end + 1) / 2, steps + (K - 1) / 2);
  return (need + vec - 1) / vec * vec;
}

// Outputs [ow, ow + 8 V) of one output row into r[0, V): the bias plus the K x K taps of the K
// prepared input rows src (stride 2: their even halves, the odd ones L floats further).
template <int Stride, int K, int V>
__attribute__((target("avx2,fma"), always_inline)) inline void taps(const float* const* src, int64_t L, int64_t ow, const __m256* wv, __m256 bv,
                                                                    __m256* r) {
  __m256 acc[K][V];
#pragma GCC unroll 8
  for (int ki = 0; ki < K; ++ki)
#pragma GCC unroll 2
    for (int v = 0; v < V; ++v) {
      const float* p = src[ki] + ow + 8 * v;
      // Stride 1: output ow + j reads padded column ow + j + kj. Stride 2: padded column
      // 2 (ow + j) + kj, that is even[ow + j + kj / 2] for even kj, odd[ow + j + kj / 2] for odd.
      __m256 a = _mm256_mul_ps(wv[K * ki], _mm256_loadu_ps(p));
#pragma GCC unroll 8
      for (int kj = 1; kj < K; ++kj) a = _mm256_fmadd_ps(wv[K * ki + kj], _mm256_loadu_ps(Stride == 1 ? p + kj : p + (kj % 2) * L + kj / 2), a);
      acc[ki][v] = a;
    }
#pragma GCC unroll 2
  for (int v = 0; v < V; ++v) {
    __m256 t = _mm256_add_ps(bv, acc[0][v]);
#pragma GCC unroll 8
    for (int ki = 1; ki < K; ++ki) t = _mm256_add_ps(t, acc[ki][v]);
    r[v] = t;
  }
}

// One plane: x [H, W] -> y [OH, OW] (and z, the activation, when Act is not None; z2, SiLU's
// product; addend, Add's addend).
template <InReg Act, int Stride, int K>
__attribute__((target("avx2,fma"))) void plane(const Plane& g, const float* x, const float* w, float bias, float* y, float* z, float* z2,
                                               const float* addend, const ActParams& ap, const Rows& prepared) {
  const int64_t L = g.row_len;
  // Prepared input rows: stride 1, row r at rows + r * L; stride 2, its even half there and its
  // odd half L floats further.
  float* const rows = prepared.rows;
  for (int64_t r = 0; r < g.H; ++r) {
    if constexpr (Stride == 1) {
      avx2::copy_row(x + r * g.W, g.W, rows + r * L + g.pw);
    } else {
      avx2::split_row(x + r * g.W, g.W, g.pw, rows + 2 * r * L, rows + (2 * r + 1) * L);
    }
  }
  __m256 wv[K * K];
#pragma GCC unroll 32
  for (int t = 0; t < K * K; ++t) wv[t] = _mm256_set1_ps(w[t]);
  const __m256 bv = _mm256_set1_ps(bias);
  // Streaming stores only when every row is whole vectors and the plane whole cache lines: y is
  // then written front to back in aligned vectors, all streamed (a line written partly by
  // streaming and partly by ordinary stores is flushed piecemeal, several times slower).
  const bool stream = Act != InReg::None && g.OW % 8 == 0 && g.OH * g.OW % 16 == 0 && reinterpret_cast<uintptr_t>(y) % 64 == 0;
  for (int64_t oh = 0; oh < g.OH; ++oh) {
    const float* src[K];
    tap_rows<K, Stride>(g, prepared, oh, src);
    const auto [yr, zr, z2r, ar] = out_row(oh, g.OW, y, z, z2, addend);
    int64_t ow = 0;
    __m256 r[2];
    for (; ow + kOut <= g.OW; ow += kOut) {
      taps<Stride, K, 2>(src, L, ow, wv, bv, r);
      avx2::store16(yr + ow, r[0], r[1], stream);
      if constexpr (Act != InReg::None) avx2::store_act<Act>(zr + ow, z2r ? z2r + ow : nullptr, ar ? ar + ow : nullptr, r[0], r[1], ap, kOut);
    }
    // The rest of the row: one or two vectors (narrow planes such as 7x7 take one).
    const int64_t rest = g.OW - ow;
    if (rest > 0) {
      if (rest > 8) {
        taps<Stride, K, 2>(src, L, ow, wv, bv, r);
      } else {
        taps<Stride, K, 1>(src, L, ow, wv, bv, r);
        r[1] = r[0];  // (not stored)
      }
      if (stream && rest == 8) _mm256_stream_ps(yr + ow, r[0]);
      else avx2::store_first(yr + ow, r[0], r[1], rest);
      if constexpr (Act != InReg::None) avx2::store_act<Act>(zr + ow, z2r ? z2r + ow : nullptr, ar ? ar + ow : nullptr, r[0], r[1], ap, rest);
    }
  }
}

template <InReg Act, int Stride, int K>
__attribute__((target("avx2,fma"))) void planes(const Plane& g, int64_t C, const float* X, const float* W, const float* B, float* Y,
                                                const EpilogueOut& act, int64_t b, int64_t e) {
  const ActParams ap = avx2::act_params(act.epi);
  each_plane<K>(g, C, X, W, B, Y, act, Act, b, e, [&](const float* x, const float* w, float bias, float* y, float* z, float* z2, const float* addend, const Rows& rows) {
    plane<Act, Stride, K>(g, x, w, bias, y, z, z2, addend, ap, rows);
  });
  if constexpr (Act != InReg::None) _mm_sfence();  // streamed y visible before the task completes
}

// Runs run.template operator()<Act>(b, e) over ranges [b, e) of g's N C planes, shared by the
// pool's threads (at least 4096 outputs a task), Act being the epilogue's in-register kind: the
// driver of every plane kernel below.
template <class Run>
void over_planes(const ConvGeom& g, const Plane& p, ThreadPool& pool, const EpilogueOut& act, Run&& run) {
  const int64_t grain = std::max<int64_t>(1, 4096 / std::max<int64_t>(1, p.OH * p.OW));
  avx2::with_in_reg(act.epi, [&]<InReg Act>() { pool.parallel_for(g.N * g.C, grain, [&](int64_t b, int64_t e) { run.template operator()<Act>(b, e); }); });
}

// Stride 2 straight from the input rows (AVX2 and AVX-512): while output row oh is computed, the
// two input rows that row oh + kAhead reads first (its last two) are fetched, a step's columns at
// a time (each output row reads two input rows no row before it read, in a model mostly from
// memory: the layer before wrote them). On Zen 4 (AVX-512), UltraFace's 32x120x160 layer
// 80 -> 70 us (at stride 1 it gains nothing); on AMD EPYC Zen 3 (AVX2, `--profile` of the node,
// 40-60 runs a process, with and without alternated two to four times) MobileNet-V2's 96x112x112
// layer 0.80-0.92 -> 0.57-0.66 ms at 1 thread and 0.41-0.46 -> 0.33-0.36 at 2, EfficientNet-B0's
// 1.35-1.47 -> 1.21-1.27 and 0.67-0.70 -> 0.63-0.67, yolox_nano's 32x104x104 0.38 -> 0.35 and
// 0.19-0.20 -> 0.20-0.21; three or four rows ahead no better.
constexpr int kAhead = 2;

// The rows ahead of output row oh of a K x K stride-2 layer on x [H, W] (outside the input: zero).
template <int K>
[[gnu::always_inline]] inline std::array<const float*, 2> rows_ahead(const Plane& g, const float* x, const float* zero, int64_t oh) {
  std::array<const float*, 2> rows{};
  for (int s = 0; s < 2; ++s) {
    const int64_t ih = (oh + kAhead) * 2 - g.ph + K - 2 + s;
    rows[s] = ih < 0 || ih >= g.H ? zero : x + ih * g.W;
  }
  return rows;
}
// The `lines` 16-float lines of each row ahead from column 2 ow (the step at ow reads 32 per 16
// outputs), clamped to the row's last column.
[[gnu::always_inline]] inline void fetch_ahead(const std::array<const float*, 2>& rows, int64_t ow, int lines, int64_t W) {
  for (const float* row : rows)
    for (int l = 0; l < lines; ++l) _mm_prefetch(reinterpret_cast<const char*>(row + std::min(2 * ow + 16 * l, W - 1)), _MM_HINT_T0);
}

// ---- AVX2 at stride 2 straight from the input rows (any padding) ----

// The lanes l of [c, c + 8) with c + l in [0, n), as a mask for maskload.
__attribute__((target("avx2,fma"), always_inline)) inline __m256i lanes_in(int64_t c, int64_t n) {
  const __m256i i = _mm256_add_epi32(_mm256_set1_epi32(static_cast<int32_t>(c)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  return _mm256_andnot_si256(_mm256_cmpgt_epi32(_mm256_setzero_si256(), i), _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int32_t>(n)), i));
}

// The vector loads of one input row in a step of V vectors of direct_step8 (the same columns in
// each of the K rows): 16 raw columns for each pair of taps.
template <int K, int V>
constexpr int kRowLoads = V * 2 * ((K + 1) / 2);

// The lanes inside [0, W) of each load of an input row (in the order direct_step8 reads them) in
// the step at ow: set up once a step for its K rows.
template <int K, int V>
__attribute__((target("avx2,fma"), always_inline)) inline void edge_masks(int64_t ow, int64_t W, int64_t pw, __m256i* mk) {
  int j = 0;
  for (int v = 0; v < V; ++v)
    for (int m = 0; 2 * m < K; ++m) {
      const int64_t c = 2 * (ow + 8 * v) - pw + 2 * m;
      mk[j++] = lanes_in(c, W);
      mk[j++] = lanes_in(c + 8, W);
    }
}

// Row load j at column c of a step of direct_step8: whole, or (Edge) the lanes of mask mk[j].
template <bool Edge>
__attribute__((target("avx2,fma"), always_inline)) inline __m256 row_load(const __m256i* mk, const float* row, int64_t c, int j) {
  if constexpr (Edge) return _mm256_maskload_ps(row + c, mk[j]);
  else return _mm256_loadu_ps(row + c);
}

// One step: outputs [ow, ow + 8 V) of an output row into r[0, V), the taps read straight from the
// K input rows src (rows outside the input are a row of zeros): output ow + j, tap kj reads column
// 2 (ow + j) + kj - pw. The 16 raw columns from 2 ow - pw + 2 m give taps 2 m (their even lanes)
// and 2 m + 1 (odd lanes), split by shuffle_ps, which leaves the outputs in the order
// [0 1 4 5 2 3 6 7] for every tap alike: one permute of the sum restores it. Edge: some of the
// columns are outside the row (masked loads, mk from edge_masks).
template <int K, int V, bool Edge>
__attribute__((target("avx2,fma"), always_inline)) inline void direct_step8(const float* const* src, int64_t ow, int64_t pw, const __m256* wv, __m256 bv,
                                                                            __m256* r, const __m256i* mk = nullptr) {
  __m256 acc[K][V];
#pragma GCC unroll 8
  for (int ki = 0; ki < K; ++ki)
#pragma GCC unroll 2
    for (int v = 0; v < V; ++v) {
      const int64_t base = 2 * (ow + 8 * v) - pw;
      __m256 a = _mm256_setzero_ps();
#pragma GCC unroll 4
      for (int m = 0; 2 * m < K; ++m) {
        const int j = v * 2 * ((K + 1) / 2) + 2 * m;
        const __m256 lo = row_load<Edge>(mk, src[ki], base + 2 * m, j), hi = row_load<Edge>(mk, src[ki], base + 2 * m + 8, j + 1);
        a = _mm256_fmadd_ps(wv[K * ki + 2 * m], _mm256_shuffle_ps(lo, hi, _MM_SHUFFLE(2, 0, 2, 0)), a);
        if (2 * m + 1 < K) a = _mm256_fmadd_ps(wv[K * ki + 2 * m + 1], _mm256_shuffle_ps(lo, hi, _MM_SHUFFLE(3, 1, 3, 1)), a);
      }
      acc[ki][v] = a;
    }
#pragma GCC unroll 2
  for (int v = 0; v < V; ++v) {
    __m256 t = _mm256_add_ps(bv, acc[0][v]);
#pragma GCC unroll 8
    for (int ki = 1; ki < K; ++ki) t = _mm256_add_ps(t, acc[ki][v]);
    r[v] = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(t), _MM_SHUFFLE(3, 1, 2, 0)));
  }
}

// Outputs [o, o + n) (n in [1, 16]) of y from (r0, r1), and the epilogue's; streamed (y, and
// SiLU's sigmoid) when `stream` and n is 8 or 16 (o + y then on 32 bytes).
template <InReg Act>
__attribute__((target("avx2,fma"), always_inline)) inline void put8(bool stream, const ActParams& ap, float* y, float* z, float* z2, const float* addend,
                                                                    __m256 r0, __m256 r1, int64_t n) {
  if (stream && n == 16) avx2::store16(y, r0, r1, true);
  else if (stream && n == 8) _mm256_stream_ps(y, r0);
  else avx2::store_first(y, r0, r1, n);
  if constexpr (Act == InReg::SiLU) {
    if (stream && n == 8) {  // the sigmoid streamed as y (store_act streams 16 only): no line written both ways
      const __m256 s = avx2::activate<Act>(r0, ap);
      _mm256_stream_ps(z, s);
      return _mm256_storeu_ps(z2, _mm256_mul_ps(r0, s));
    }
  }
  if constexpr (Act != InReg::None) avx2::store_act<Act>(z, z2, addend, r0, r1, ap, n, stream);
}

// One plane: x [H, W] -> y [OH, OW] (and the epilogue's outputs), K x K taps at stride 2, any
// padding, read straight from x's rows with unaligned loads (masked in the steps that reach past
// a row's ends): no copy. Steps of 16 outputs (8 where a row's rest is 8 or fewer).
template <InReg Act, int K>
__attribute__((target("avx2,fma"))) void plane_direct8(const Plane& g, const float* x, const float* w, float bias, float* y, float* z, float* z2,
                                                       const float* addend, const ActParams& ap, const float* zero) {
  const int64_t W = g.W, pw = g.pw;
  __m256 wv[K * K];
#pragma GCC unroll 32
  for (int t = 0; t < K * K; ++t) wv[t] = _mm256_set1_ps(w[t]);
  const __m256 bv = _mm256_set1_ps(bias);
  // Streamed stores of y (and SiLU's sigmoid) only when every row is whole vectors and the plane
  // whole cache lines, y (and z) on a line: y is then written front to back, all of it streamed.
  const bool stream = Act != InReg::None && g.OW % 8 == 0 && g.OH * g.OW % 16 == 0 && reinterpret_cast<uintptr_t>(y) % 64 == 0 &&
                      (Act != InReg::SiLU || reinterpret_cast<uintptr_t>(z) % 64 == 0);
  // Whether the step of n outputs (8 or 16) at ow reads only columns inside the row: from
  // 2 ow - pw to the last of the 16 raw columns of its last vector's last pair of taps.
  auto inside = [&](int64_t ow, int64_t n) { return 2 * ow - pw >= 0 && 2 * (ow + n - 8) - pw + 2 * ((K - 1) / 2) + 15 < W; };
  auto at = [](auto* p, int64_t o) { return p ? p + o : nullptr; };
  for (int64_t oh = 0; oh < g.OH; ++oh) {
    const float* src[K];
#pragma GCC unroll 8
    for (int ki = 0; ki < K; ++ki) {
      const int64_t ih = oh * 2 - g.ph + ki;
      src[ki] = ih < 0 || ih >= g.H ? zero : x + ih * W;
    }
    const auto [yr, zr, z2r, ar] = out_row(oh, g.OW, y, z, z2, addend);
    const auto ahead = rows_ahead<K>(g, x, zero, oh);
    __m256 r[2];
    int64_t ow = 0;
    for (; ow + 8 < g.OW; ow += 16) {
      fetch_ahead(ahead, ow, 2, W);
      if (inside(ow, 16)) {
        direct_step8<K, 2, false>(src, ow, pw, wv, bv, r);
      } else {
        __m256i mk[kRowLoads<K, 2>];
        edge_masks<K, 2>(ow, W, pw, mk);
        direct_step8<K, 2, true>(src, ow, pw, wv, bv, r, mk);
      }
      put8<Act>(stream, ap, yr + ow, at(zr, ow), at(z2r, ow), at(ar, ow), r[0], r[1], std::min<int64_t>(16, g.OW - ow));
    }
    if (ow < g.OW) {
      if (inside(ow, 8)) {
        direct_step8<K, 1, false>(src, ow, pw, wv, bv, r);
      } else {
        __m256i mk[kRowLoads<K, 1>];
        edge_masks<K, 1>(ow, W, pw, mk);
        direct_step8<K, 1, true>(src, ow, pw, wv, bv, r, mk);
      }
      put8<Act>(stream, ap, yr + ow, at(zr, ow), at(z2r, ow), at(ar, ow), r[0], r[0], g.OW - ow);
    }
  }
}

template <InReg Act, int K>
__attribute__((target("avx2,fma"))) void planes_direct8(const Plane& g, int64_t C, const float* X, const float* W, const float* B, float* Y,
                                                        const EpilogueOut& act, int64_t b, int64_t e) {
  const ActParams ap = avx2::act_params(act.epi);
  thread_local std::vector<float, CacheAligned<float>> zero;
  if (zero.size() < static_cast<size_t>(g.W)) zero.assign(static_cast<size_t>(g.W), 0.f);
  const int64_t P = g.OH * g.OW;
  const bool none = Act == InReg::None;
  for (int64_t p = b; p < e; ++p) {
    const int64_t c = p % C;
    plane_direct8<Act, K>(g, X + p * g.H * g.W, W + K * K * c, B ? B[c] : 0.f, Y + p * P, none ? nullptr : act.z1 + p * P,
                          Act == InReg::SiLU ? act.z2 + p * P : nullptr, Act == InReg::Add ? act.addend + p * P : nullptr, ap, zero.data());
  }
  if constexpr (Act != InReg::None) _mm_sfence();
}

// ---- AVX2 stride 1 with "same" padding: the plane as one run of H W floats ----

// The columns of the 8 outputs of a vector (flat index mod W), advanced by 8 outputs (inc = 8 mod W).
__attribute__((target("avx2,fma"), always_inline)) inline __m256i next_cols8(__m256i col, __m256i inc, __m256i wlast, __m256i w) {
  const __m256i t = _mm256_add_epi32(col, inc);
  return _mm256_sub_epi32(t, _mm256_and_si256(_mm256_cmpgt_epi32(t, wlast), w));
}

// One step: outputs [i, i + 8 V) of the flat plane into r[0, V). Output j reads input
// j + (ki - R) W + (kj - R) (x: the plane between R W + R zeros before and after); the taps whose
// column falls off the row are zeroed by the column masks (they would read the end of the row
// before or the start of the next).
template <int K, int V>
__attribute__((target("avx2,fma"), always_inline)) inline void flat_step8(const float* x, int64_t W, int64_t i, const __m256* wv, __m256 bv,
                                                                          const __m256i* col, __m256i wlast, __m256* r) {
  constexpr int R = (K - 1) / 2;
  __m256 left[V][R + 1], right[V][R + 1];  // [v][d]: tap d columns left (right) of the output is in the row
#pragma GCC unroll 2
  for (int v = 0; v < V; ++v)
#pragma GCC unroll 2
    for (int d = 1; d <= R; ++d) {
      left[v][d] = _mm256_castsi256_ps(_mm256_cmpgt_epi32(col[v], _mm256_set1_epi32(d - 1)));
      right[v][d] = _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_sub_epi32(wlast, _mm256_set1_epi32(d - 1)), col[v]));
    }
  __m256 acc[K][V];
#pragma GCC unroll 8
  for (int ki = 0; ki < K; ++ki)
#pragma GCC unroll 2
    for (int v = 0; v < V; ++v) {
      const float* o = x + i + 8 * v + (ki - R) * W;
      __m256 a = _mm256_mul_ps(wv[K * ki + R], _mm256_loadu_ps(o));
#pragma GCC unroll 4
      for (int d = 1; d <= R; ++d) {
        a = _mm256_fmadd_ps(wv[K * ki + R - d], _mm256_and_ps(_mm256_loadu_ps(o - d), left[v][d]), a);
        a = _mm256_fmadd_ps(wv[K * ki + R + d], _mm256_and_ps(_mm256_loadu_ps(o + d), right[v][d]), a);
      }
      acc[ki][v] = a;
    }
#pragma GCC unroll 2
  for (int v = 0; v < V; ++v) {
    __m256 t = _mm256_add_ps(bv, acc[0][v]);
#pragma GCC unroll 8
    for (int ki = 1; ki < K; ++ki) t = _mm256_add_ps(t, acc[ki][v]);
    r[v] = t;
  }
}

// One plane at stride 1 with (K - 1) / 2 rows and columns of padding on each side (output plane =
// input plane): the H W outputs as one run in steps of 16, whatever W is (narrow rows fill whole
// vectors, rows that are not whole vectors cost no partial steps). x: the plane between zeros
// (flat_step8); first: the columns of the first 8 outputs (set up once a call).
template <InReg Act, int K>
__attribute__((target("avx2,fma"))) void plane_flat8(const Plane& g, const float* x, const float* w, float bias, float* y, float* z, float* z2,
                                                     const float* addend, const ActParams& ap, __m256i first) {
  const int64_t W = g.W, n = g.H * g.W;
  __m256 wv[K * K];
#pragma GCC unroll 32
  for (int t = 0; t < K * K; ++t) wv[t] = _mm256_set1_ps(w[t]);
  const __m256 bv = _mm256_set1_ps(bias);
  const bool stream = Act != InReg::None && n % 16 == 0 && reinterpret_cast<uintptr_t>(y) % 64 == 0 &&
                      (Act != InReg::SiLU || reinterpret_cast<uintptr_t>(z) % 64 == 0);
  const __m256i wvec = _mm256_set1_epi32(static_cast<int32_t>(W)), wlast = _mm256_set1_epi32(static_cast<int32_t>(W - 1)),
                inc = _mm256_set1_epi32(static_cast<int32_t>(8 % W));
  auto at = [](auto* p, int64_t o) { return p ? p + o : nullptr; };
  __m256i col[2];
  col[0] = first;
  __m256 r[2];
  int64_t i = 0;
  for (; i + 8 < n; i += 16) {
    col[1] = next_cols8(col[0], inc, wlast, wvec);
    flat_step8<K, 2>(x, W, i, wv, bv, col, wlast, r);
    put8<Act>(stream, ap, y + i, at(z, i), at(z2, i), at(addend, i), r[0], r[1], std::min<int64_t>(16, n - i));
    col[0] = next_cols8(col[1], inc, wlast, wvec);
  }
  if (i < n) {
    flat_step8<K, 1>(x, W, i, wv, bv, col, wlast, r);
    put8<Act>(false, ap, y + i, at(z, i), at(z2, i), at(addend, i), r[0], r[0], n - i);
  }
}

template <InReg Act, int K>
__attribute__((target("avx2,fma"))) void planes_flat8(const Plane& g, int64_t C, const float* X, const float* W, const float* B, float* Y,
                                                      const EpilogueOut& act, int64_t b, int64_t e) {
  const ActParams ap = avx2::act_params(act.epi);
  const int64_t P = g.OH * g.OW;
  const bool none = Act == InReg::None;
  alignas(32) int32_t cols[8];  // the columns of the first 8 outputs (once a call: a division each)
  for (int l = 0; l < 8; ++l) cols[l] = static_cast<int32_t>(l % g.W);
  const __m256i first = _mm256_load_si256(reinterpret_cast<const __m256i*>(cols));
  // Each plane copied between zeros (pad floats before it, pad + 8 after: a step reads up to
  // R W + R floats either side of its outputs, and a whole vector past the last), so that no step
  // needs masked loads. (Straight from the input with masked loads at the plane's first and last
  // rows measured 1.2-1.5x slower on Zen 4's 14x14 and 7x7 planes, where most steps are such.)
  const int64_t pad = ((K - 1) / 2 * (g.W + 1) + 7) / 8 * 8;
  thread_local std::vector<float, CacheAligned<float>> buf;
  buf.assign(static_cast<size_t>(P + 2 * pad + 8), 0.f);
  float* const x = buf.data() + pad;
  for (int64_t p = b; p < e; ++p) {
    const int64_t c = p % C;
    avx2::copy_row(X + p * P, P, x);  // (whole vectors: the zeros past P stay)
    plane_flat8<Act, K>(g, x, W + K * K * c, B ? B[c] : 0.f, Y + p * P, none ? nullptr : act.z1 + p * P, Act == InReg::SiLU ? act.z2 + p * P : nullptr,
                        Act == InReg::Add ? act.addend + p * P : nullptr, ap, first);
  }
  if constexpr (Act != InReg::None) _mm_sfence();
}

// AVX2 stride 1 with "same" padding on small planes: the plane as one run (planes_flat8).
void depthwise_flat_avx2(const ConvGeom& g, const Plane& p, const float* X, const float* W, const float* B, float* Y, ThreadPool& pool,
                         const EpilogueOut& act) {
  const int64_t K = g.kernel[0];
  over_planes(g, p, pool, act, [&]<InReg Act>(int64_t b, int64_t e) {
    if (K == 5) planes_flat8<Act, 5>(p, g.C, X, W, B, Y, act, b, e);
    else planes_flat8<Act, 3>(p, g.C, X, W, B, Y, act, b, e);
  });
}

// AVX2 stride-2 3x3 straight from the input rows (planes_direct8).
void depthwise_direct_avx2(const ConvGeom& g, const Plane& p, const float* X, const float* W, const float* B, float* Y, ThreadPool& pool,
                           const EpilogueOut& act) {
  over_planes(g, p, pool, act, [&]<InReg Act>(int64_t b, int64_t e) { planes_direct8<Act, 3>(p, g.C, X, W, B, Y, act, b, e); });
}

// ---- AVX-512: 5x5 and stride-1 3x3 (written for any odd K) ----

// Outputs [ow, ow + 16 V) of one output row into r[0, V): the bias plus the K x K taps of the
// prepared input rows src[0, K) (stride 2: their even halves, the odd ones L floats further).
template <int Stride, int K, int V>
[[gnu::always_inline]] NNXR_AVX512 inline void taps16(const float* const* src, int64_t L, int64_t ow, const __m512* wv, __m512 bv, __m512* r) {
  // Stride 1: output ow + j reads padded column ow + j + kj. Stride 2: padded column
  // 2 (ow + j) + kj, that is even[ow + j + kj / 2] for even kj, odd[ow + j + kj / 2] for odd.
  // src[ki] + ow (and the odd half, L floats further) is on a cache line (rows of whole lines, ow
  // a multiple of 16): one aligned load per 16 columns, and the taps that start past it shifted
  // out of two of them by valignd. A 64-byte load at an offset of 1-4 floats would span two
  // cache lines: with those loads this kernel was 1.3-1.5x slower than the AVX2 one on Zen 4.
  __m512 acc[K][V];
#pragma GCC unroll 8
  for (int ki = 0; ki < K; ++ki) {
    const float* p = src[ki] + ow;
    __m512 c[Stride][V + 1];
#pragma GCC unroll 2
    for (int h = 0; h < Stride; ++h)
#pragma GCC unroll 3
      for (int v = 0; v <= V; ++v) c[h][v] = _mm512_load_ps(p + h * L + 16 * v);
#pragma GCC unroll 2
    for (int v = 0; v < V; ++v) {
      __m512 a = _mm512_mul_ps(wv[K * ki], c[0][v]);
#pragma GCC unroll 8
      for (int kj = 1; kj < K; ++kj) {
        const int h = Stride == 1 ? 0 : kj % 2, by = Stride == 1 ? kj : kj / 2;
        a = _mm512_fmadd_ps(wv[K * ki + kj], by == 0 ? c[h][v] : avx512::shifted(c[h][v], c[h][v + 1], by), a);
      }
      acc[ki][v] = a;
    }
  }
#pragma GCC unroll 2
  for (int v = 0; v < V; ++v) {
    __m512 t = _mm512_add_ps(bv, acc[0][v]);
#pragma GCC unroll 8
    for (int ki = 1; ki < K; ++ki) t = _mm512_add_ps(t, acc[ki][v]);
    r[v] = t;
  }
}

// Lanes [0, n) of v (n in [1, 16]) at y, streamed when `stream` (n is then 8 or 16, y on 32
// bytes), and the epilogue's outputs.
template <InReg Act>
[[gnu::always_inline]] NNXR_AVX512 inline void put16(bool stream, const ActParams& ap, float* y, float* z, float* z2, const float* addend, __m512 v,
                                                     int64_t n) {
  const __mmask16 k = avx512::lanes(n);
  if (stream) {
    _mm256_stream_ps(y, _mm512_castps512_ps256(v));
    if (n == 16) _mm256_stream_ps(y + 8, _mm512_extractf32x8_ps(v, 1));
    if constexpr (Act == InReg::SiLU) {  // the sigmoid too, which only the fused product reads
      const __m512 s = avx512::activate<Act>(v, ap);
      _mm256_stream_ps(z, _mm512_castps512_ps256(s));
      if (n == 16) _mm256_stream_ps(z + 8, _mm512_extractf32x8_ps(s, 1));
      _mm512_mask_storeu_ps(z2, k, _mm512_mul_ps(v, s));  // as the Mul kernel
      return;
    }
  } else if (n == 16) {
    _mm512_storeu_ps(y, v);
  } else {
    _mm512_mask_storeu_ps(y, k, v);
  }
  avx512::store_epilogue<Act>(z, z2, addend, v, k, ap);
}

// One plane: x [H, W] -> y [OH, OW] (and the epilogue's outputs z, z2 (SiLU), addend (Add)).
template <InReg Act, int Stride, int K>
NNXR_AVX512 void plane16(const Plane& g, const float* x, const float* w, float bias, float* y, float* z, float* z2, const float* addend,
                         const ActParams& ap, const Rows& prepared) {
  const int64_t L = g.row_len;
  float* const rows = prepared.rows;
  for (int64_t r = 0; r < g.H; ++r) {
    if constexpr (Stride == 1) avx512::copy_row(x + r * g.W, g.W, rows + r * L + g.pw);
    else avx512::split_row(x + r * g.W, g.W, g.pw, rows + 2 * r * L, rows + (2 * r + 1) * L);
  }
  __m512 wv[K * K];
#pragma GCC unroll 32
  for (int t = 0; t < K * K; ++t) wv[t] = _mm512_set1_ps(w[t]);
  const __m512 bv = _mm512_set1_ps(bias);
  // Streamed stores of y (and SiLU's sigmoid) only when every row is whole 8-float halves and the
  // plane whole cache lines, y (and z) on a line: y is then written front to back, all of it
  // streamed (by 8-float halves, which rows of 8 k floats keep aligned).
  const bool stream = Act != InReg::None && g.OW % 8 == 0 && g.OH * g.OW % 16 == 0 && reinterpret_cast<uintptr_t>(y) % 64 == 0 &&
                      (Act != InReg::SiLU || reinterpret_cast<uintptr_t>(z) % 64 == 0);
  for (int64_t oh = 0; oh < g.OH; ++oh) {
    const float* src[K];
    tap_rows<K, Stride>(g, prepared, oh, src);
    const auto [yr, zr, z2r, ar] = out_row(oh, g.OW, y, z, z2, addend);
    auto at = [](auto* p, int64_t o) { return p ? p + o : nullptr; };
    int64_t ow = 0;
    __m512 r[2];
    for (; ow + 32 <= g.OW; ow += 32) {
      taps16<Stride, K, 2>(src, L, ow, wv, bv, r);
      put16<Act>(stream, ap, yr + ow, at(zr, ow), at(z2r, ow), at(ar, ow), r[0], 16);
      put16<Act>(stream, ap, yr + ow + 16, at(zr, ow + 16), at(z2r, ow + 16), at(ar, ow + 16), r[1], 16);
    }
    const int64_t rest = g.OW - ow;
    if (rest > 16) {
      taps16<Stride, K, 2>(src, L, ow, wv, bv, r);
      put16<Act>(stream, ap, yr + ow, at(zr, ow), at(z2r, ow), at(ar, ow), r[0], 16);
      put16<Act>(stream, ap, yr + ow + 16, at(zr, ow + 16), at(z2r, ow + 16), at(ar, ow + 16), r[1], rest - 16);
    } else if (rest > 0) {
      taps16<Stride, K, 1>(src, L, ow, wv, bv, r);
      put16<Act>(stream, ap, yr + ow, at(zr, ow), at(z2r, ow), at(ar, ow), r[0], rest);
    }
  }
}

template <InReg Act, int Stride, int K>
NNXR_AVX512 void planes16(const Plane& g, int64_t C, const float* X, const float* W, const float* B, float* Y, const EpilogueOut& act, int64_t b,
                          int64_t e) {
  const ActParams ap = avx2::act_params(act.epi);
  each_plane<K>(g, C, X, W, B, Y, act, Act, b, e, [&](const float* x, const float* w, float bias, float* y, float* z, float* z2, const float* addend, const Rows& rows) {
    plane16<Act, Stride, K>(g, x, w, bias, y, z, z2, addend, ap, rows);
  });
  if constexpr (Act != InReg::None) _mm_sfence();
}

// ---- AVX-512 straight from the input rows: 3x3 and 5x5, stride 1 and 2, "same" column padding ----

// x[col, col + 16) of an input row of W floats, the lanes at or past W zero (the right padding).
[[gnu::always_inline]] NNXR_AVX512 inline __m512 row16(const float* row, int64_t col, int64_t W) {
  if (col + 16 <= W) return _mm512_loadu_ps(row + col);
  return col >= W ? _mm512_setzero_ps() : _mm512_maskz_loadu_ps(avx512::lanes(W - col), row + col);
}

// Lanes {prev[16 - s, 16), cur[0, 16 - s)}: columns s before cur's (s in [1, 2]).
[[gnu::always_inline]] NNXR_AVX512 inline __m512 before(__m512 cur, __m512 prev, int s) {
  const __m512i c = _mm512_castps_si512(cur), p = _mm512_castps_si512(prev);
  return _mm512_castsi512_ps(s == 1 ? _mm512_alignr_epi32(c, p, 15) : _mm512_alignr_epi32(c, p, 14));
}

// The state of one input row across the steps of an output row: stride 1, the raw vectors at
// columns ow - 16 (pv) and ow (cv); stride 2, the even and odd columns of the 32 before 2 ow
// (pe, po) and the raw columns from 2 ow (cv).
struct RowState {
  __m512 pv, pe, po, cv;
};

// One step: outputs [ow, ow + 16 V) of an output row into r[0, V), from the K input rows src
// (their states st advanced past the step), weights wv, bias bv.
template <int Stride, int K, int V>
[[gnu::always_inline]] NNXR_AVX512 inline void direct_step(const float* const* src, RowState* st, int64_t ow, int64_t W, const __m512* wv, __m512 bv,
                                                           __m512* r) {
  constexpr int R = (K - 1) / 2;
  const __m512i ie = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i io = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
  __m512 acc[K][V];
#pragma GCC unroll 8
  for (int ki = 0; ki < K; ++ki) {
    RowState& t = st[ki];
    if constexpr (Stride == 1) {
      // c[0] the vector before, c[1, V] this step's, c[V + 1] the next.
      __m512 c[V + 2];
      c[0] = t.pv;
      c[1] = t.cv;
#pragma GCC unroll 2
      for (int v = 1; v <= V; ++v) c[v + 1] = row16(src[ki], ow + 16 * v, W);
#pragma GCC unroll 2
      for (int v = 0; v < V; ++v) {
        __m512 a = _mm512_mul_ps(wv[K * ki + R], c[v + 1]);
#pragma GCC unroll 4
        for (int d = 1; d <= R; ++d) {
          a = _mm512_fmadd_ps(wv[K * ki + R - d], before(c[v + 1], c[v], d), a);
          a = _mm512_fmadd_ps(wv[K * ki + R + d], avx512::shifted(c[v + 1], c[v + 2], d), a);
        }
        acc[ki][v] = a;
      }
      t.pv = c[V];
      t.cv = c[V + 1];
    } else {
      // Raw columns 2 ow + 16 i (a[0] carried), split into even and odd columns per 32; tap kj reads
      // column 2 (ow + j) + kj - R: kj = R is e, R + 1 is o, R - 1 is o one column left, and for
      // K = 5 R - 2 is e one left and R + 2 is e one right (its last lane the first raw column of
      // the next 32).
      __m512 a[2 * V + 1], e[V + 1], o[V + 1];
      a[0] = t.cv;
#pragma GCC unroll 4
      for (int i = 1; i <= 2 * V; ++i) a[i] = row16(src[ki], 2 * ow + 16 * i, W);
      e[0] = t.pe;
      o[0] = t.po;
#pragma GCC unroll 2
      for (int v = 0; v < V; ++v) {
        e[v + 1] = _mm512_permutex2var_ps(a[2 * v], ie, a[2 * v + 1]);
        o[v + 1] = _mm512_permutex2var_ps(a[2 * v], io, a[2 * v + 1]);
        __m512 m = _mm512_mul_ps(wv[K * ki + R], e[v + 1]);
        m = _mm512_fmadd_ps(wv[K * ki + R + 1], o[v + 1], m);
        m = _mm512_fmadd_ps(wv[K * ki + R - 1], before(o[v + 1], o[v], 1), m);
        if constexpr (K == 5) {
          m = _mm512_fmadd_ps(wv[K * ki + R - 2], before(e[v + 1], e[v], 1), m);
          m = _mm512_fmadd_ps(wv[K * ki + R + 2], avx512::shifted(e[v + 1], a[2 * v + 2], 1), m);
        }
        acc[ki][v] = m;
      }
      t.pe = e[V];
      t.po = o[V];
      t.cv = a[2 * V];
    }
  }
#pragma GCC unroll 2
  for (int v = 0; v < V; ++v) {
    __m512 sum = _mm512_add_ps(bv, acc[0][v]);
#pragma GCC unroll 8
    for (int ki = 1; ki < K; ++ki) sum = _mm512_add_ps(sum, acc[ki][v]);
    r[v] = sum;
  }
}

// One plane: x [H, W] -> y [OH, OW] (and the epilogue's outputs), K x K taps at stride 1 or 2
// with (K - 1) / 2 columns of padding on the left, read straight from x's rows: no copy. Steps of
// 16 V outputs of a row; per input row the vectors of the step before are kept, so that the taps
// left of a vector come from one valignd of it and the one before, and those right of it from it
// and the next (stride 1: raw columns; stride 2: the row's even and odd columns, split by
// vpermt2ps out of each 32 raw columns). Columns past W load as 0, rows outside the input read
// `zero` (W floats). V = 2 (the row's last 16 or fewer outputs: a step of one vector) gives the
// epilogue's long chains (SiLU's sigmoid) two vectors to overlap.
template <InReg Act, int Stride, int K, int V>
NNXR_AVX512 void plane_direct(const Plane& g, const float* x, const float* w, float bias, float* y, float* z, float* z2, const float* addend,
                              const ActParams& ap, const float* zero) {
  const int64_t W = g.W;
  __m512 wv[K * K];
#pragma GCC unroll 32
  for (int t = 0; t < K * K; ++t) wv[t] = _mm512_set1_ps(w[t]);
  const __m512 bv = _mm512_set1_ps(bias);
  const bool stream = Act != InReg::None && g.OW % 8 == 0 && g.OH * g.OW % 16 == 0 && reinterpret_cast<uintptr_t>(y) % 64 == 0 &&
                      (Act != InReg::SiLU || reinterpret_cast<uintptr_t>(z) % 64 == 0);
  auto at = [](auto* p, int64_t o) { return p ? p + o : nullptr; };
  for (int64_t oh = 0; oh < g.OH; ++oh) {
    const float* src[K];
    RowState st[K];
#pragma GCC unroll 8
    for (int ki = 0; ki < K; ++ki) {
      const int64_t ih = oh * Stride - g.ph + ki;
      src[ki] = ih < 0 || ih >= g.H ? zero : x + ih * W;
      st[ki].pv = st[ki].pe = st[ki].po = _mm512_setzero_ps();
      st[ki].cv = row16(src[ki], 0, W);
    }
    const auto ahead = Stride == 2 ? rows_ahead<K>(g, x, zero, oh) : std::array<const float*, 2>{zero, zero};  // (kAhead)
    const auto [yr, zr, z2r, ar] = out_row(oh, g.OW, y, z, z2, addend);
    __m512 r[V];
    int64_t ow = 0;
    for (; ow + 16 * (V - 1) < g.OW; ow += 16 * V) {
      if constexpr (Stride == 2) fetch_ahead(ahead, ow, 2 * V, W);
      direct_step<Stride, K, V>(src, st, ow, W, wv, bv, r);
      for (int v = 0; v < V; ++v)
        put16<Act>(stream, ap, yr + ow + 16 * v, at(zr, ow + 16 * v), at(z2r, ow + 16 * v), at(ar, ow + 16 * v), r[v],
                   std::min<int64_t>(16, g.OW - ow - 16 * v));
    }
    if (ow < g.OW) {
      direct_step<Stride, K, 1>(src, st, ow, W, wv, bv, r);
      put16<Act>(stream, ap, yr + ow, at(zr, ow), at(z2r, ow), at(ar, ow), r[0], g.OW - ow);
    }
  }
}

template <InReg Act, int Stride, int K>
NNXR_AVX512 void planes_direct(const Plane& g, int64_t C, const float* X, const float* W, const float* B, float* Y, const EpilogueOut& act,
                               int64_t b, int64_t e) {
  const ActParams ap = avx2::act_params(act.epi);
  thread_local std::vector<float, CacheAligned<float>> zero;
  if (zero.size() < static_cast<size_t>(g.W)) zero.assign(static_cast<size_t>(g.W), 0.f);
  const int64_t P = g.OH * g.OW;
  const bool none = Act == InReg::None;
  for (int64_t p = b; p < e; ++p) {
    const int64_t c = p % C;
    plane_direct<Act, Stride, K, K == 3 ? 2 : 1>(g, X + p * g.H * g.W, W + K * K * c, B ? B[c] : 0.f, Y + p * P, none ? nullptr : act.z1 + p * P,
                                                Act == InReg::SiLU ? act.z2 + p * P : nullptr, Act == InReg::Add ? act.addend + p * P : nullptr, ap,
                                                zero.data());
  }
  if constexpr (Act != InReg::None) _mm_sfence();
}

// ---- AVX-512 stride 1 with "same" padding: the plane as one run of H W floats ----

// x[j, j + 16) of a plane of n floats, the lanes outside [0, n) zero (the rows above and below).
[[gnu::always_inline]] NNXR_AVX512 inline __m512 flat16(const float* x, int64_t j, int64_t n) {
  if (j >= 0 && j + 16 <= n) return _mm512_loadu_ps(x + j);
  if (j + 16 <= 0 || j >= n) return _mm512_setzero_ps();
  const __mmask16 k = static_cast<__mmask16>(avx512::lanes(n - j) & ~avx512::lanes(-j));
  return _mm512_maskz_loadu_ps(k, x + j);
}

// The columns of the 16 outputs of a vector (flat index mod W), advanced by 16 outputs.
[[gnu::always_inline]] NNXR_AVX512 inline __m512i next_cols(__m512i col, __m512i inc, __m512i w) {
  const __m512i t = _mm512_add_epi32(col, inc);
  return _mm512_mask_sub_epi32(t, _mm512_cmpge_epi32_mask(t, w), t, w);
}

// One step: outputs [i, i + 16 V) of the flat plane into r[0, V). The taps of kernel row ki read
// the plane at flat offset (ki - R) W: st[ki] holds its vectors at i - 16 (pv) and i (cv),
// advanced past the step. col[v]: the columns of output vector v; a tap whose column falls off
// the row is masked off (it would read the end of the row before or the start of the next).
template <int K, int V>
[[gnu::always_inline]] NNXR_AVX512 inline void flat_step(const float* x, int64_t n, int64_t W, RowState* st, int64_t i, const __m512* wv, __m512 bv,
                                                         const __m512i* col, __m512i wlast, __m512* r) {
  constexpr int R = (K - 1) / 2;
  __mmask16 left[V][R + 1], right[V][R + 1];  // [v][d]: tap d columns left (right) of the output is in the row
#pragma GCC unroll 2
  for (int v = 0; v < V; ++v)
#pragma GCC unroll 2
    for (int d = 1; d <= R; ++d) {
      left[v][d] = _mm512_cmpge_epi32_mask(col[v], _mm512_set1_epi32(d));
      right[v][d] = _mm512_cmple_epi32_mask(col[v], _mm512_sub_epi32(wlast, _mm512_set1_epi32(d)));
    }
  __m512 acc[K][V];
#pragma GCC unroll 8
  for (int ki = 0; ki < K; ++ki) {
    RowState& t = st[ki];
    const int64_t off = (ki - R) * W;
    __m512 c[V + 2];
    c[0] = t.pv;
    c[1] = t.cv;
#pragma GCC unroll 2
    for (int v = 1; v <= V; ++v) c[v + 1] = flat16(x, i + off + 16 * v, n);
#pragma GCC unroll 2
    for (int v = 0; v < V; ++v) {
      __m512 a = _mm512_mul_ps(wv[K * ki + R], c[v + 1]);
#pragma GCC unroll 4
      for (int d = 1; d <= R; ++d) {
        a = _mm512_mask3_fmadd_ps(wv[K * ki + R - d], before(c[v + 1], c[v], d), a, left[v][d]);
        a = _mm512_mask3_fmadd_ps(wv[K * ki + R + d], avx512::shifted(c[v + 1], c[v + 2], d), a, right[v][d]);
      }
      acc[ki][v] = a;
    }
    t.pv = c[V];
    t.cv = c[V + 1];
  }
#pragma GCC unroll 2
  for (int v = 0; v < V; ++v) {
    __m512 sum = _mm512_add_ps(bv, acc[0][v]);
#pragma GCC unroll 8
    for (int ki = 1; ki < K; ++ki) sum = _mm512_add_ps(sum, acc[ki][v]);
    r[v] = sum;
  }
}

// One plane at stride 1 with (K - 1) / 2 rows and columns of padding on each side (output plane =
// input plane): the H W outputs as one run in steps of 16 V, whatever W is. Output j reads input
// j + (ki - R) W + (kj - R); the taps whose column falls off the row are masked off, and the
// vectors of the rows above and below the plane load as 0. No per-row steps: narrow rows (14, 7)
// fill whole vectors, rows that are not whole vectors (56, 28) cost no partial steps, and the
// stores are of whole vectors (streamed when the plane is whole cache lines on a line).
template <InReg Act, int K, int V>
NNXR_AVX512 void plane_flat(const Plane& g, const float* x, const float* w, float bias, float* y, float* z, float* z2, const float* addend,
                            const ActParams& ap, __m512i first) {
  constexpr int R = (K - 1) / 2;  // rows (and columns) of padding
  const int64_t W = g.W, n = g.H * g.W;
  __m512 wv[K * K];
#pragma GCC unroll 32
  for (int t = 0; t < K * K; ++t) wv[t] = _mm512_set1_ps(w[t]);
  const __m512 bv = _mm512_set1_ps(bias);
  const bool stream = Act != InReg::None && n % 16 == 0 && reinterpret_cast<uintptr_t>(y) % 64 == 0 &&
                      (Act != InReg::SiLU || reinterpret_cast<uintptr_t>(z) % 64 == 0);
  const __m512i wvec = _mm512_set1_epi32(static_cast<int32_t>(W)), wlast = _mm512_set1_epi32(static_cast<int32_t>(W - 1)),
                inc = _mm512_set1_epi32(static_cast<int32_t>(16 % W));
  __m512i col[V];
  col[0] = first;
  RowState st[K];
#pragma GCC unroll 8
  for (int ki = 0; ki < K; ++ki) {
    st[ki].pv = flat16(x, (ki - R) * W - 16, n);
    st[ki].cv = flat16(x, (ki - R) * W, n);
  }
  auto at = [](auto* p, int64_t o) { return p ? p + o : nullptr; };
  __m512 r[V];
  int64_t i = 0;
  for (; i + 16 * (V - 1) < n; i += 16 * V) {
#pragma GCC unroll 2
    for (int v = 1; v < V; ++v) col[v] = next_cols(col[v - 1], inc, wvec);
    flat_step<K, V>(x, n, W, st, i, wv, bv, col, wlast, r);
#pragma GCC unroll 2
    for (int v = 0; v < V; ++v) {
      const int64_t o = i + 16 * v;
      avx512::store<Act>(y + o, at(z, o), at(z2, o), at(addend, o), r[v], avx512::lanes(n - o), stream, ap);
    }
    col[0] = next_cols(col[V - 1], inc, wvec);
  }
  if (i < n) {
    flat_step<K, 1>(x, n, W, st, i, wv, bv, col, wlast, r);
    avx512::store<Act>(y + i, at(z, i), at(z2, i), at(addend, i), r[0], avx512::lanes(n - i), stream, ap);
  }
}

template <InReg Act, int K>
NNXR_AVX512 void planes_flat(const Plane& g, int64_t C, const float* X, const float* W, const float* B, float* Y, const EpilogueOut& act, int64_t b,
                             int64_t e) {
  const ActParams ap = avx2::act_params(act.epi);
  const int64_t P = g.OH * g.OW;
  const bool none = Act == InReg::None;
  alignas(64) int32_t cols[16];  // the columns of the first 16 outputs (once a call: a division each)
  for (int l = 0; l < 16; ++l) cols[l] = static_cast<int32_t>(l % g.W);
  const __m512i first = _mm512_load_si512(cols);
  for (int64_t p = b; p < e; ++p) {
    const int64_t c = p % C;
    plane_flat<Act, K, K == 3 ? 2 : 1>(g, X + p * P, W + K * K * c, B ? B[c] : 0.f, Y + p * P, none ? nullptr : act.z1 + p * P,
                                       Act == InReg::SiLU ? act.z2 + p * P : nullptr, Act == InReg::Add ? act.addend + p * P : nullptr, ap, first);
  }
  if constexpr (Act != InReg::None) _mm_sfence();
}

// The stride-1 3x3 and 5x5 whose output plane is the input plane ((K - 1) / 2 padding all round).
void depthwise_flat_avx512(const ConvGeom& g, const Plane& p, const float* X, const float* W, const float* B, float* Y, ThreadPool& pool,
                           const EpilogueOut& act) {
  const int64_t K = g.kernel[0];
  over_planes(g, p, pool, act, [&]<InReg Act>(int64_t b, int64_t e) {
    if (K == 5) planes_flat<Act, 5>(p, g.C, X, W, B, Y, act, b, e);
    else planes_flat<Act, 3>(p, g.C, X, W, B, Y, act, b, e);
  });
}

// The 3x3 at stride 1 or 2 and the 5x5 at stride 2, with (K - 1) / 2 columns of padding on the left.
void depthwise_direct_avx512(const ConvGeom& g, const Plane& p, const float* X, const float* W, const float* B, float* Y, ThreadPool& pool,
                             const EpilogueOut& act) {
  const int64_t K = g.kernel[0];
  over_planes(g, p, pool, act, [&]<InReg Act>(int64_t b, int64_t e) {
    if (K == 5) planes_direct<Act, 2, 5>(p, g.C, X, W, B, Y, act, b, e);
    else if (p.stride == 1) planes_direct<Act, 1, 3>(p, g.C, X, W, B, Y, act, b, e);
    else planes_direct<Act, 2, 3>(p, g.C, X, W, B, Y, act, b, e);
  });
}

void depthwise_avx512(const ConvGeom& g, Plane p, const float* X, const float* W, const float* B, float* Y, ThreadPool& pool,
                      const EpilogueOut& act) {
  const int64_t K = g.kernel[0];
  p.row_len = row_length(p, K, 16, 16, p.pw + (p.W + 15) / 16 * 16);  // (avx512::copy_row stores whole vectors)
  over_planes(g, p, pool, act, [&]<InReg Act>(int64_t b, int64_t e) {
    if (K == 3) {
      if (p.stride == 1) planes16<Act, 1, 3>(p, g.C, X, W, B, Y, act, b, e);
      else planes16<Act, 2, 3>(p, g.C, X, W, B, Y, act, b, e);
    } else {
      if (p.stride == 1) planes16<Act, 1, 5>(p, g.C, X, W, B, Y, act, b, e);
      else planes16<Act, 2, 5>(p, g.C, X, W, B, Y, act, b, e);
    }
  });
}

}  // namespace

void conv_depthwise3x3(const ConvGeom& g, const float* X, const float* W, const float* B, float* Y, ThreadPool& pool, const EpilogueOut& act) {
  Plane p{g.in[0], g.in[1], g.out[0], g.out[1], g.stride[0], g.pad_begin[0], g.pad_begin[1], 0};
  if (p.OH * p.OW == 0) return;
  // AVX-512: from the input rows where the padding is "same", except two cases that measured
  // slower that way than from copied rows on Zen 4: the stride-1 5x5 (5-10%: 25 weights and 10
  // carried vectors spill) and the stride-1 3x3 with a SiLU on rows wider than 16 that are not
  // whole cache lines (EfficientNet's 144x56x56 layer 1.1-1.25x: its loads split across lines).
  // Else 5x5 and stride-1 3x3 from copied rows. Stride-2 3x3 with other paddings: the AVX2 kernel
  // on either set (on Zen 4 the AVX-512 copied-row one measured 0.95-1.1x its time).
  const bool silu_split_rows = act.epi && act.epi->kind == Epilogue::Kind::SiLU && p.stride == 1 && p.W > 16 && p.W % 16 != 0;
  // Stride 1 with "same" padding all round, on AVX-512: the plane as one run (depthwise_flat_avx512)
  // where its rows are not whole vectors, the 3x3 except with a SiLU on rows wider than 16 and the
  // 5x5 on rows of 8 or fewer (on Zen 4 the 5x5 on 14-wide rows and EfficientNet's SiLU 3x3 on
  // 56-wide ones measured 1.1x slower that way; rows of whole vectors, 1.1-1.3x).
  const int64_t R = (g.kernel[0] - 1) / 2;
  const bool same = p.stride == 1 && p.ph == R && p.pw == R && p.OH == p.H && p.OW == p.W && p.W % 16 != 0;
  if (cpu_has_avx512() && same && (g.kernel[0] == 3 ? !silu_split_rows : p.W <= 8)) return depthwise_flat_avx512(g, p, X, W, B, Y, pool, act);
  if (cpu_has_avx512() && p.pw == (g.kernel[0] - 1) / 2 && (g.kernel[0] == 3 || p.stride == 2) && !silu_split_rows)
    return depthwise_direct_avx512(g, p, X, W, B, Y, pool, act);
  if (cpu_has_avx512() && (g.kernel[0] == 5 || p.stride == 1)) return depthwise_avx512(g, p, X, W, B, Y, pool, act);
  // AVX2 (a CPU without AVX-512, or NNXR_ISA=avx2): stride 1 with "same" padding all round on
  // planes of up to 1024 outputs (5x5: 256) as one run; the stride-2 3x3 on rows of 96 to 191
  // straight from the input rows. Else from copied rows, which on Zen 4 measured faster for the
  // larger stride-1 planes (EfficientNet's 56x56 and 112x112, the 5x5 on 28x28: 1.1-1.2x) and the
  // stride-2 planes on narrower rows and the 5x5 (their steps mostly at a row's ends: masked loads),
  // and on AMD EPYC Zen 3 for the stride-2 3x3 on rows of 192 or more: yolox_nano's 16 -> 16 on
  // 208x208 with its SiLU, alone, 0.57-0.62x the time warm and 0.79-0.85x after 96 MB of other
  // stores (64 channels: 0.46-0.61x); yolox_nano whole 0.97-0.99x at 1 and 2 threads (medians of
  // 100 runs, one binary switched run by run). On rows of 104 and 112 (yolox_nano's 32 x 104 x 104,
  // MobileNet's and EfficientNet's 112 x 112) the copied rows won warm (0.75-0.85x) and lost after
  // other stores (1.1-1.3x with a ReLU); MobileNet, EfficientNet, yolox_nano and UltraFace, all
  // their stride-2 layers switched, ran level in the models (0.98-1.03x); UltraFace's 160-wide
  // rows too. No layer between 161 and 207 wide was measured: the bound 192 lies in that gap.
  if (!cpu_has_avx512()) {
    const bool same_all = p.stride == 1 && p.ph == R && p.pw == R && p.OH == p.H && p.OW == p.W;
    if (same_all && p.H * p.W <= (g.kernel[0] == 3 ? 1024 : 256)) return depthwise_flat_avx2(g, p, X, W, B, Y, pool, act);
    if (p.stride == 2 && g.kernel[0] == 3 && p.W >= 96 && p.W < 192) return depthwise_direct_avx2(g, p, X, W, B, Y, pool, act);
  }
  const int64_t K = g.kernel[0];
  p.row_len = row_length(p, K, kOut, 8, p.pw + (p.W + 7) / 8 * 8);  // (copy_row stores whole vectors)
  over_planes(g, p, pool, act, [&]<InReg Act>(int64_t b, int64_t e) {
    if (K == 5) {
      if (p.stride == 1) planes<Act, 1, 5>(p, g.C, X, W, B, Y, act, b, e);
      else planes<Act, 2, 5>(p, g.C, X, W, B, Y, act, b, e);
    } else if (p.stride == 1) {
      planes<Act, 1, 3>(p, g.C, X, W, B, Y, act, b, e);
    } else {
      planes<Act, 2, 3>(p, g.C, X, W, B, Y, act, b, e);
    }
  });
}
#else
// Never called: conv_depthwise3x3_applies() is false on other architectures.
void conv_depthwise3x3(const ConvGeom&, const float*, const float*, const float*, float*, ThreadPool&, const EpilogueOut&) {}
#endif

}  // namespace nnxr::runtime
