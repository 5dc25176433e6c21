// Internal: where an AVX-512 tile's outputs go (TileOut), and the stores of a tile that holds 32
// output rows in the lanes of two vectors by up to 14 columns (gemm_lanes' tiles, and conv_rows'
// lane tiles: output channels in the lanes), through an in-register transpose. Shared by
// gemm_packed_avx512.cpp and conv_rows_avx512.cpp.
#pragma once

#if defined(__x86_64__) || defined(__i386__)
#include <algorithm>
#include <cstdint>

#include "model/runtime/avx512.h"

namespace nnxr::runtime::lanes {

using avx2::ActParams;
using avx2::InReg;

// Where a tile's element (0, 0) and its epilogue's go: rows ld floats apart.
struct TileOut {
  float* y;
  float* z1;
  float* z2;
  const float* addend;
  int64_t ld;
  ActParams p;
  bool stream_y;  // full tiles of y with streaming stores (see gemm_packed.cpp)
  int64_t ld_y = 0;  // y's rows apart where not ld (store_lanes: y staged in a buffer of its own)

  // The same outputs `at` elements on (r rows down: at = r * ld; y too, whose caller moves it
  // itself where ld_y is set).
  TileOut shifted(int64_t at) const {
    TileOut o = *this;
    o.y = y + at;
    o.z1 = z1 ? z1 + at : nullptr;
    o.z2 = z2 ? z2 + at : nullptr;
    o.addend = addend ? addend + at : nullptr;
    return o;
  }
};

constexpr int kLaneCols = 14;  // columns a lanes tile holds: 28 accumulators with 32 rows

// The 16 x 16 transpose of in (in[j] lane r -> out[r] lane j): pairs of lanes by unpcklps /
// unpckhps, fours by unpcklpd / unpckhpd (row 4 L + k, columns 4 i .. 4 i + 3 in 128-bit lane L
// of u[4 i + k]), then the 4 x 4 transpose of the 128-bit lanes by vshuff32x4.
// (The maskz forms with every lane: the same instructions, without GCC 12's false
// -Wuninitialized on the plain forms' undefined pass-through operand.)
constexpr __mmask16 kAll = 0xffff;
[[gnu::always_inline]] NNXR_AVX512 inline __m512 unpacklo(__m512 a, __m512 b) { return _mm512_maskz_unpacklo_ps(kAll, a, b); }
[[gnu::always_inline]] NNXR_AVX512 inline __m512 unpackhi(__m512 a, __m512 b) { return _mm512_maskz_unpackhi_ps(kAll, a, b); }
[[gnu::always_inline]] NNXR_AVX512 inline __m512 unpacklo2(__m512 a, __m512 b) {
  return _mm512_castpd_ps(_mm512_maskz_unpacklo_pd(0xff, _mm512_castps_pd(a), _mm512_castps_pd(b)));
}
[[gnu::always_inline]] NNXR_AVX512 inline __m512 unpackhi2(__m512 a, __m512 b) {
  return _mm512_castpd_ps(_mm512_maskz_unpackhi_pd(0xff, _mm512_castps_pd(a), _mm512_castps_pd(b)));
}
template <int Imm>
[[gnu::always_inline]] NNXR_AVX512 inline __m512 shuffle4(__m512 a, __m512 b) {
  return _mm512_maskz_shuffle_f32x4(kAll, a, b, Imm);
}

[[gnu::always_inline]] NNXR_AVX512 inline void quads(const __m512 (&in)[16], int groups, __m512 (&u)[16]) {
  for (int i = 0; i < groups; ++i) {
    const __m512 a = unpacklo(in[4 * i], in[4 * i + 1]), b = unpackhi(in[4 * i], in[4 * i + 1]);
    const __m512 c = unpacklo(in[4 * i + 2], in[4 * i + 3]), d = unpackhi(in[4 * i + 2], in[4 * i + 3]);
    u[4 * i] = unpacklo2(a, c);
    u[4 * i + 1] = unpackhi2(a, c);
    u[4 * i + 2] = unpacklo2(b, d);
    u[4 * i + 3] = unpackhi2(b, d);
  }
}

// Rows [0, rows) of one half (16 rows, lanes of acc[j]) x NC columns stored as rows of NC floats
// at y + r ld (and the epilogue's z1, z2; Add's addend read as rows), through the in-register
// transpose instead of one scatter per column and output (and a gather for the addend). The
// epilogue is computed on the transposed rows: the same function of each element.
template <InReg Act, int NC>
NNXR_AVX512 void store_rows(const __m512 (&acc)[kLaneCols][2], int v, const TileOut& o, int rows, int cols) {
  __m512 in[16], u[16];
#pragma GCC unroll 16
  for (int j = 0; j < 16; ++j) in[j] = j < NC ? acc[j][v] : _mm512_setzero_ps();
  const int64_t ld = o.ld, ldy = o.ld_y ? o.ld_y : o.ld;
  if constexpr (NC > 8) {
    quads(in, 4, u);
    const __mmask16 k = avx512::lanes(cols);
#pragma GCC unroll 4
    for (int q = 0; q < 4; ++q) {
      const __m512 v0 = shuffle4<0x44>(u[q], u[4 + q]), v1 = shuffle4<0xee>(u[q], u[4 + q]);
      const __m512 v2 = shuffle4<0x44>(u[8 + q], u[12 + q]), v3 = shuffle4<0xee>(u[8 + q], u[12 + q]);
      const __m512 out[4] = {shuffle4<0x88>(v0, v2), shuffle4<0xdd>(v0, v2), shuffle4<0x88>(v1, v3), shuffle4<0xdd>(v1, v3)};
#pragma GCC unroll 4
      for (int l = 0; l < 4; ++l) {
        const int r = 4 * l + q;
        if (r >= rows) break;
        const int64_t off = r * ld;
        avx512::store<Act>(o.y + r * ldy, o.z1 ? o.z1 + off : nullptr, o.z2 ? o.z2 + off : nullptr, o.addend ? o.addend + off : nullptr, out[l], k, false,
                           o.p);
      }
    }
  } else {
    // 8 columns: two rows of 8 floats a vector (rows q and 4 + q, then 8 + q and 12 + q).
    quads(in, 2, u);
    const __m512i lo = _mm512_setr_epi32(0, 1, 2, 3, 16, 17, 18, 19, 4, 5, 6, 7, 20, 21, 22, 23);
    const __m512i hi = _mm512_setr_epi32(8, 9, 10, 11, 24, 25, 26, 27, 12, 13, 14, 15, 28, 29, 30, 31);
    const __mmask8 k = static_cast<__mmask8>((1u << cols) - 1u);
#pragma GCC unroll 4
    for (int q = 0; q < 4; ++q)
#pragma GCC unroll 2
      for (int h = 0; h < 2; ++h) {
        const int ra = 8 * h + q, rb = ra + 4;
        if (ra >= rows) continue;
        const __m512 y = _mm512_permutex2var_ps(u[q], h ? hi : lo, u[4 + q]);
        const __mmask8 kb = rb < rows ? k : 0;
        const int64_t a0 = ra * ld, b0 = rb * ld;
        _mm256_mask_storeu_ps(o.y + ra * ldy, k, _mm512_castps512_ps256(y));
        _mm256_mask_storeu_ps(o.y + rb * ldy, kb, _mm512_extractf32x8_ps(y, 1));
        if constexpr (Act == InReg::None) continue;
        __m512 z = avx512::activate<Act>(y, o.p);
        if constexpr (Act == InReg::Add)
          z = _mm512_add_ps(y, _mm512_insertf32x8(_mm512_castps256_ps512(_mm256_maskz_loadu_ps(k, o.addend + a0)), _mm256_maskz_loadu_ps(kb, o.addend + b0), 1));
        _mm256_mask_storeu_ps(o.z1 + a0, k, _mm512_castps512_ps256(z));
        _mm256_mask_storeu_ps(o.z1 + b0, kb, _mm512_extractf32x8_ps(z, 1));
        if constexpr (Act == InReg::SiLU) {
          const __m512 p = _mm512_mul_ps(y, z);  // as the Mul kernel
          _mm256_mask_storeu_ps(o.z2 + a0, k, _mm512_castps512_ps256(p));
          _mm256_mask_storeu_ps(o.z2 + b0, kb, _mm512_extractf32x8_ps(p, 1));
        }
      }
  }
}

// Tile rows [0, rows) (of 32) x NC columns: acc (j, v) = rows 16 v .. 16 v + 15 of column j;
// columns [0, cols) stored (cols <= NC). Out of line (keeps the accumulators in registers in the
// loop), row by row.
template <InReg Act, int NC>
[[gnu::noinline]] NNXR_AVX512 void store_lanes(const __m512 (&acc)[kLaneCols][2], const TileOut& o, int rows, int cols = NC) {
  store_rows<Act, NC>(acc, 0, o, std::min(rows, 16), cols);
  if (rows <= 16) return;
  TileOut h = o.shifted(16 * o.ld);
  if (o.ld_y) h.y = o.y + 16 * o.ld_y;
  store_rows<Act, NC>(acc, 1, h, rows - 16, cols);
}

}  // namespace nnxr::runtime::lanes
#endif
