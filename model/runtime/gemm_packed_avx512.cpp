// gemm_packed on AVX-512: tiles of 6 rows x 32 columns (twelve 16-float accumulators) from the
// same packed panels as the AVX2 kernel, with partial tiles read and written through lane masks
// (no copy of B's last columns). One 512-bit FMA does the work of two 256-bit ones: half the
// instructions and loads of the AVX2 kernel for the same products.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "model/runtime/avx512.h"
#include "model/runtime/compute.h"
#include "model/runtime/gemm_packed.h"

namespace nnxr::runtime {

#if defined(__x86_64__) || defined(__i386__)
namespace {

constexpr int kCols = 32;  // columns per tile: two 16-float vectors
static_assert(kPanelRows == 6, "the tile kernel holds 6 rows x 2 vectors of accumulators");

using avx2::ActParams;
using avx2::InReg;

struct TileOut {
  float* y;
  float* z1;
  float* z2;
  const float* addend;
  int64_t ld;
  ActParams p;
  bool stream_y;  // full tiles of y with streaming stores (see gemm_packed.cpp)
};

template <class T>
T* row(T* p, int r, int64_t ld) {
  return p ? p + r * ld : nullptr;
}

// Stores a finished tile (rows [0, rows) x columns [0, cols)) and its epilogue. Out of line, with
// the tile in memory, as in the AVX2 kernel (keeps the accumulators in registers in the loop).
template <InReg Act>
[[gnu::noinline]] NNXR_AVX512 void store_tile(const __m512 (&res)[kPanelRows][2], const TileOut& o, int rows, int cols) {
  const __mmask16 k0 = avx512::lanes(cols), k1 = avx512::lanes(cols - 16);
  const bool stream = o.stream_y && cols == kCols;
  for (int r = 0; r < rows; ++r) {
    const int64_t at = r * o.ld;
    avx512::store<Act>(o.y + at, row(o.z1, r, o.ld), row(o.z2, r, o.ld), row(o.addend, r, o.ld), res[r][0], k0, stream, o.p);
    if (k1)
      avx512::store<Act>(o.y + at + 16, o.z1 ? o.z1 + at + 16 : nullptr, o.z2 ? o.z2 + at + 16 : nullptr, o.addend ? o.addend + at + 16 : nullptr,
                         res[r][1], k1, stream, o.p);
  }
}

// One tile: V vectors of 16 columns (V = 1: cols <= 16). B's rows are read through the masks
// (m0, m1) when Masked (a partial tile read in place), whole otherwise. Accumulators start at
// the bias.
template <InReg Act, int V, bool Masked>
NNXR_AVX512 void tile(const float* a, const float* b, int64_t ldb, int64_t K, const float* bias, const TileOut& o, int rows, int cols) {
  const __mmask16 m0 = avx512::lanes(cols), m1 = avx512::lanes(cols - 16);
  __m512 c00 = _mm512_set1_ps(bias[0]), c10 = _mm512_set1_ps(bias[1]), c20 = _mm512_set1_ps(bias[2]);
  __m512 c30 = _mm512_set1_ps(bias[3]), c40 = _mm512_set1_ps(bias[4]), c50 = _mm512_set1_ps(bias[5]);
  __m512 c01 = c00, c11 = c10, c21 = c20, c31 = c30, c41 = c40, c51 = c50;
  for (int64_t k = 0; k < K; ++k, a += kPanelRows, b += ldb) {
    const __m512 b0 = Masked ? _mm512_maskz_loadu_ps(m0, b) : _mm512_loadu_ps(b);
    const __m512 b1 = V == 1 ? b0 : Masked ? _mm512_maskz_loadu_ps(m1, b + 16) : _mm512_loadu_ps(b + 16);
    __m512 av = _mm512_set1_ps(a[0]);
    c00 = _mm512_fmadd_ps(av, b0, c00);
    if constexpr (V == 2) c01 = _mm512_fmadd_ps(av, b1, c01);
    av = _mm512_set1_ps(a[1]);
    c10 = _mm512_fmadd_ps(av, b0, c10);
    if constexpr (V == 2) c11 = _mm512_fmadd_ps(av, b1, c11);
    av = _mm512_set1_ps(a[2]);
    c20 = _mm512_fmadd_ps(av, b0, c20);
    if constexpr (V == 2) c21 = _mm512_fmadd_ps(av, b1, c21);
    av = _mm512_set1_ps(a[3]);
    c30 = _mm512_fmadd_ps(av, b0, c30);
    if constexpr (V == 2) c31 = _mm512_fmadd_ps(av, b1, c31);
    av = _mm512_set1_ps(a[4]);
    c40 = _mm512_fmadd_ps(av, b0, c40);
    if constexpr (V == 2) c41 = _mm512_fmadd_ps(av, b1, c41);
    av = _mm512_set1_ps(a[5]);
    c50 = _mm512_fmadd_ps(av, b0, c50);
    if constexpr (V == 2) c51 = _mm512_fmadd_ps(av, b1, c51);
  }
  const __m512 res[kPanelRows][2] = {{c00, c01}, {c10, c11}, {c20, c21}, {c30, c31}, {c40, c41}, {c50, c51}};
  store_tile<Act>(res, o, rows, cols);
}

// Columns [0, w) of B (w <= 32; K rows, stride ldb) as a contiguous [K][32] panel, zero-padded.
NNXR_AVX512 void copy_columns(const float* B, int64_t ldb, int64_t K, int64_t w, float* dst) {
  const __mmask16 m0 = avx512::lanes(w), m1 = avx512::lanes(w - 16);
  for (int64_t k = 0; k < K; ++k, B += ldb, dst += kCols) {
    _mm512_storeu_ps(dst, _mm512_maskz_loadu_ps(m0, B));
    _mm512_storeu_ps(dst + 16, _mm512_maskz_loadu_ps(m1, B + 16));
  }
}

template <InReg Act>
NNXR_AVX512 void run(const PackedA& a, int64_t p0, int64_t p1, const float* B, int64_t ldb, int64_t n0, int64_t n1, const GemmOut& out) {
  const int64_t K = a.K;
  const EpilogueOut* act = out.act;
  float* const z1 = Act == InReg::None ? nullptr : act->z1 + out.act_offset;
  float* const z2 = Act == InReg::SiLU ? act->z2 + out.act_offset : nullptr;
  const float* const addend = Act == InReg::Add ? act->addend + out.act_offset : nullptr;
  TileOut o{nullptr, nullptr, nullptr, nullptr, out.ldc, avx2::act_params(act ? act->epi : nullptr), false};
  const bool stream = Act != InReg::None && out.ldc % 16 == 0;
  // One tile of panel p at columns [j, j + cols), B read from src with row stride ld; `whole`:
  // src has 32 readable columns.
  auto one = [&](int64_t p, int64_t j, int cols, const float* src, int64_t ld, bool whole) {
    const int64_t m0 = p * kPanelRows;
    const int rows = static_cast<int>(std::min<int64_t>(kPanelRows, a.M - m0));
    float bias[kPanelRows] = {};
    if (out.bias)
      for (int r = 0; r < rows; ++r) bias[r] = out.bias[m0 + r];
    const int64_t at = m0 * out.ldc + j;
    o.y = out.C + at;
    o.z1 = z1 ? z1 + at : nullptr;
    o.z2 = z2 ? z2 + at : nullptr;
    o.addend = addend ? addend + at : nullptr;
    o.stream_y = stream && reinterpret_cast<uintptr_t>(o.y) % 64 == 0;
    if (whole) {
      if (cols > 16) tile<Act, 2, false>(a.panel(p), src, ld, K, bias, o, rows, cols);
      else tile<Act, 1, false>(a.panel(p), src, ld, K, bias, o, rows, cols);
    } else {
      if (cols > 16) tile<Act, 2, true>(a.panel(p), src, ld, K, bias, o, rows, cols);
      else tile<Act, 1, true>(a.panel(p), src, ld, K, bias, o, rows, cols);
    }
  };
  const int64_t tiles = (n1 - n0 + kCols - 1) / kCols;
  if (2 * tiles < p1 - p0) {
    // Few columns, many panels: one tile of B at a time, copied contiguous (stays in L1).
    thread_local std::vector<float> copied;
    copied.resize(static_cast<size_t>(K * kCols));
    for (int64_t j = n0; j < n1; j += kCols) {
      const int64_t w = std::min<int64_t>(kCols, n1 - j);
      copy_columns(B + j, ldb, K, w, copied.data());
      for (int64_t p = p0; p < p1; ++p) one(p, j, static_cast<int>(w), copied.data(), kCols, true);
    }
  } else {
    // Column blocks whose part of B stays in L2 while every panel passes over it; B in place, its
    // last partial tile through masks.
    const int64_t block = std::clamp<int64_t>((int64_t{256} << 10) / (std::max<int64_t>(K, 1) * 4) / kCols * kCols, kCols, 2048);
    for (int64_t j0 = n0; j0 < n1; j0 += block) {
      const int64_t j1 = std::min(n1, j0 + block);
      for (int64_t p = p0; p < p1; ++p)
        for (int64_t j = j0; j < j1; j += kCols) {
          const int64_t w = std::min<int64_t>(kCols, j1 - j);
          one(p, j, static_cast<int>(w), B + j, ldb, w == kCols);
        }
    }
  }
  if (stream) _mm_sfence();
}

// ---- float16 B and C: vcvtph2ps on each load of B, vcvtps2ph on each store of C ---------------

NNXR_AVX512 inline void store_half(uint16_t* p, __m512 v, __mmask16 k) {
  const __m256i h = _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  if (k == 0xffff) _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), h);
  else _mm256_mask_storeu_epi16(p, k, h);
}

template <bool Relu>
[[gnu::noinline]] NNXR_AVX512 void store_tile_half(const __m512 (&res)[kPanelRows][2], const GemmOutF16& o, int64_t at, int rows, int cols) {
  const __mmask16 k0 = avx512::lanes(cols), k1 = avx512::lanes(cols - 16);
  for (int r = 0; r < rows; ++r) {
    uint16_t* y = o.C + at + r * o.ldc;
    store_half(y, res[r][0], k0);
    if (k1) store_half(y + 16, res[r][1], k1);
    if constexpr (Relu) {
      uint16_t* z = o.relu + at + r * o.ldc;
      store_half(z, _mm512_max_ps(res[r][0], _mm512_setzero_ps()), k0);
      if (k1) store_half(z + 16, _mm512_max_ps(res[r][1], _mm512_setzero_ps()), k1);
    }
  }
}

// As tile() with B in float16: 16 halves (one ymm) per load, widened in the register.
template <bool Relu, int V, bool Masked>
NNXR_AVX512 void tile_half(const float* a, const uint16_t* b, int64_t ldb, int64_t K, const float* bias, const GemmOutF16& o, int64_t at, int rows,
                           int cols) {
  const __mmask16 m0 = avx512::lanes(cols), m1 = avx512::lanes(cols - 16);
  __m512 c00 = _mm512_set1_ps(bias[0]), c10 = _mm512_set1_ps(bias[1]), c20 = _mm512_set1_ps(bias[2]);
  __m512 c30 = _mm512_set1_ps(bias[3]), c40 = _mm512_set1_ps(bias[4]), c50 = _mm512_set1_ps(bias[5]);
  __m512 c01 = c00, c11 = c10, c21 = c20, c31 = c30, c41 = c40, c51 = c50;
  for (int64_t k = 0; k < K; ++k, a += kPanelRows, b += ldb) {
    const __m512 b0 = _mm512_cvtph_ps(Masked ? _mm256_maskz_loadu_epi16(m0, b) : _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b)));
    const __m512 b1 = V == 1 ? b0
                             : _mm512_cvtph_ps(Masked ? _mm256_maskz_loadu_epi16(m1, b + 16)
                                                      : _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 16)));
    __m512 av = _mm512_set1_ps(a[0]);
    c00 = _mm512_fmadd_ps(av, b0, c00);
    if constexpr (V == 2) c01 = _mm512_fmadd_ps(av, b1, c01);
    av = _mm512_set1_ps(a[1]);
    c10 = _mm512_fmadd_ps(av, b0, c10);
    if constexpr (V == 2) c11 = _mm512_fmadd_ps(av, b1, c11);
    av = _mm512_set1_ps(a[2]);
    c20 = _mm512_fmadd_ps(av, b0, c20);
    if constexpr (V == 2) c21 = _mm512_fmadd_ps(av, b1, c21);
    av = _mm512_set1_ps(a[3]);
    c30 = _mm512_fmadd_ps(av, b0, c30);
    if constexpr (V == 2) c31 = _mm512_fmadd_ps(av, b1, c31);
    av = _mm512_set1_ps(a[4]);
    c40 = _mm512_fmadd_ps(av, b0, c40);
    if constexpr (V == 2) c41 = _mm512_fmadd_ps(av, b1, c41);
    av = _mm512_set1_ps(a[5]);
    c50 = _mm512_fmadd_ps(av, b0, c50);
    if constexpr (V == 2) c51 = _mm512_fmadd_ps(av, b1, c51);
  }
  const __m512 res[kPanelRows][2] = {{c00, c01}, {c10, c11}, {c20, c21}, {c30, c31}, {c40, c41}, {c50, c51}};
  store_tile_half<Relu>(res, o, at, rows, cols);
}

// Columns [0, w) of float16 B (w <= 32) as a contiguous [K][32] panel, zero-padded.
NNXR_AVX512 void copy_columns_half(const uint16_t* B, int64_t ldb, int64_t K, int64_t w, uint16_t* dst) {
  const __mmask32 m = w >= 32 ? ~__mmask32(0) : static_cast<__mmask32>((1u << w) - 1u);
  for (int64_t k = 0; k < K; ++k, B += ldb, dst += kCols) _mm512_storeu_si512(dst, _mm512_maskz_loadu_epi16(m, B));
}

template <bool Relu>
NNXR_AVX512 void run_half(const PackedA& a, int64_t p0, int64_t p1, const uint16_t* B, int64_t ldb, int64_t n0, int64_t n1, const GemmOutF16& out) {
  const int64_t K = a.K;
  auto one = [&](int64_t p, int64_t j, int cols, const uint16_t* src, int64_t ld, bool whole) {
    const int64_t m0 = p * kPanelRows;
    const int rows = static_cast<int>(std::min<int64_t>(kPanelRows, a.M - m0));
    float bias[kPanelRows] = {};
    if (out.bias)
      for (int r = 0; r < rows; ++r) bias[r] = out.bias[m0 + r];
    const int64_t at = m0 * out.ldc + j;
    if (whole) {
      if (cols > 16) tile_half<Relu, 2, false>(a.panel(p), src, ld, K, bias, out, at, rows, cols);
      else tile_half<Relu, 1, false>(a.panel(p), src, ld, K, bias, out, at, rows, cols);
    } else {
      if (cols > 16) tile_half<Relu, 2, true>(a.panel(p), src, ld, K, bias, out, at, rows, cols);
      else tile_half<Relu, 1, true>(a.panel(p), src, ld, K, bias, out, at, rows, cols);
    }
  };
  const int64_t tiles = (n1 - n0 + kCols - 1) / kCols;
  if (2 * tiles < p1 - p0) {
    thread_local std::vector<uint16_t> copied;
    copied.resize(static_cast<size_t>(K * kCols));
    for (int64_t j = n0; j < n1; j += kCols) {
      const int64_t w = std::min<int64_t>(kCols, n1 - j);
      copy_columns_half(B + j, ldb, K, w, copied.data());
      for (int64_t p = p0; p < p1; ++p) one(p, j, static_cast<int>(w), copied.data(), kCols, true);
    }
    return;
  }
  const int64_t block = std::clamp<int64_t>((int64_t{128} << 10) / (std::max<int64_t>(K, 1) * 2) / kCols * kCols, kCols, 2048);
  for (int64_t j0 = n0; j0 < n1; j0 += block) {
    const int64_t j1 = std::min(n1, j0 + block);
    for (int64_t p = p0; p < p1; ++p)
      for (int64_t j = j0; j < j1; j += kCols) {
        const int64_t w = std::min<int64_t>(kCols, j1 - j);
        one(p, j, static_cast<int>(w), B + j, ldb, w == kCols);
      }
  }
}

// ---- gemm_lanes: 32 rows in the lanes of two vectors x 7 columns -----------------------------

constexpr int kLaneCols = 14;  // two groups of 7: 28 accumulators, A read once for 14 columns

// Tile rows [0, 32) (lanes kr0, kr1 valid) x NC columns: acc (j, v) = rows 16 v .. 16 v + 15 of
// column j. Stored out of line by scatter (row r of column j at y + r ldc + j).
template <InReg Act, int NC>
[[gnu::noinline]] NNXR_AVX512 void store_lanes(const __m512 (&acc)[kLaneCols][2], const TileOut& o, __mmask16 kr0, __mmask16 kr1) {
  const __m512i step = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15), _mm512_set1_epi32(static_cast<int>(o.ld)));
  const __m512i idx[2] = {step, _mm512_add_epi32(step, _mm512_set1_epi32(static_cast<int>(16 * o.ld)))};
  const __mmask16 kr[2] = {kr0, kr1};
  for (int j = 0; j < NC; ++j)
    for (int v = 0; v < 2; ++v) {
      if (!kr[v]) continue;
      const __m512 y = acc[j][v];
      _mm512_mask_i32scatter_ps(o.y + j, kr[v], idx[v], y, 4);
      if constexpr (Act == InReg::None) continue;
      __m512 a = avx512::activate<Act>(y, o.p);
      if constexpr (Act == InReg::Add) a = _mm512_add_ps(y, _mm512_mask_i32gather_ps(_mm512_setzero_ps(), kr[v], idx[v], o.addend + j, 4));
      _mm512_mask_i32scatter_ps(o.z1 + j, kr[v], idx[v], a, 4);
      if constexpr (Act == InReg::SiLU) _mm512_mask_i32scatter_ps(o.z2 + j, kr[v], idx[v], _mm512_mul_ps(y, a), 4);
    }
}

// One tile: a = the block's rows, k-major (32 a step), b = NC columns k-major (16 a step).
template <InReg Act, int NC>
NNXR_AVX512 void lane_tile(const float* a, const float* b, int64_t K, const float* bias, const TileOut& o, __mmask16 kr0, __mmask16 kr1) {
  __m512 acc[kLaneCols][2];
  const __m512 bias0 = _mm512_maskz_loadu_ps(kr0, bias), bias1 = _mm512_maskz_loadu_ps(kr1, bias + 16);
#pragma GCC unroll 14
  for (int j = 0; j < NC; ++j) {
    acc[j][0] = bias0;
    acc[j][1] = bias1;
  }
  for (int64_t k = 0; k < K; ++k, a += kLaneRows, b += 16) {
    const __m512 a0 = _mm512_loadu_ps(a), a1 = _mm512_loadu_ps(a + 16);
#pragma GCC unroll 14
    for (int j = 0; j < NC; ++j) {
      const __m512 bj = _mm512_set1_ps(b[j]);
      acc[j][0] = _mm512_fmadd_ps(a0, bj, acc[j][0]);
      acc[j][1] = _mm512_fmadd_ps(a1, bj, acc[j][1]);
    }
  }
  store_lanes<Act, NC>(acc, o, kr0, kr1);
}

const float* lane_rows(const PackedA& a) {
  LaneCache& c = *a.lanes;
  std::call_once(c.once, [&] {
    const int64_t blocks = lane_blocks(a.M), K = a.K;
    c.data.assign(static_cast<size_t>(blocks * K * kLaneRows), 0.f);
    for (int64_t m = 0; m < a.M; ++m) {
      const float* src = a.panel(m / kPanelRows) + m % kPanelRows;
      float* dst = c.data.data() + (m / kLaneRows) * K * kLaneRows + m % kLaneRows;
      for (int64_t k = 0; k < K; ++k) dst[k * kLaneRows] = src[k * kPanelRows];
    }
  });
  return c.data.data();
}

template <InReg Act>
void run_lanes(const PackedA& a, int64_t b0, int64_t b1, const float* B, int64_t ldb, int64_t n0, int64_t n1, const GemmOut& out) {
  const int64_t K = a.K;
  const float* rows = lane_rows(a);
  const EpilogueOut* act = out.act;
  float* const z1 = Act == InReg::None ? nullptr : act->z1 + out.act_offset;
  float* const z2 = Act == InReg::SiLU ? act->z2 + out.act_offset : nullptr;
  const float* const addend = Act == InReg::Add ? act->addend + out.act_offset : nullptr;
  TileOut o{nullptr, nullptr, nullptr, nullptr, out.ldc, avx2::act_params(act ? act->epi : nullptr), false};
  thread_local std::vector<float> bt;  // the tile's columns, k-major, 16 a step
  bt.resize(static_cast<size_t>(K * 16));
  for (int64_t j = n0; j < n1;) {
    // Tiles of 14 columns, and of 7 where 14 would leave a narrow last tile (49 = 14 + 14 + 14 + 7).
    const int64_t left = n1 - j;
    const int nc = static_cast<int>(left >= 21 || left == 14 ? 14 : std::min<int64_t>(7, left));
    for (int64_t k = 0; k < K; ++k)
      for (int c = 0; c < nc; ++c) bt[static_cast<size_t>(k * 16 + c)] = B[k * ldb + j + c];
    for (int64_t blk = b0; blk < b1; ++blk) {
      const int64_t m0 = blk * kLaneRows;
      const int64_t valid = std::min<int64_t>(kLaneRows, a.M - m0);
      float bias[kLaneRows] = {};
      if (out.bias)
        for (int64_t r = 0; r < valid; ++r) bias[r] = out.bias[m0 + r];
      const int64_t at = m0 * out.ldc + j;
      o.y = out.C + at;
      o.z1 = z1 ? z1 + at : nullptr;
      o.z2 = z2 ? z2 + at : nullptr;
      o.addend = addend ? addend + at : nullptr;
      const float* ab = rows + blk * K * kLaneRows;
      const __mmask16 kr0 = avx512::lanes(valid), kr1 = avx512::lanes(valid - 16);
      switch (nc) {
        case 14: lane_tile<Act, 14>(ab, bt.data(), K, bias, o, kr0, kr1); break;
        case 7: lane_tile<Act, 7>(ab, bt.data(), K, bias, o, kr0, kr1); break;
        case 6: lane_tile<Act, 6>(ab, bt.data(), K, bias, o, kr0, kr1); break;
        case 5: lane_tile<Act, 5>(ab, bt.data(), K, bias, o, kr0, kr1); break;
        case 4: lane_tile<Act, 4>(ab, bt.data(), K, bias, o, kr0, kr1); break;
        case 3: lane_tile<Act, 3>(ab, bt.data(), K, bias, o, kr0, kr1); break;
        case 2: lane_tile<Act, 2>(ab, bt.data(), K, bias, o, kr0, kr1); break;
        default: lane_tile<Act, 1>(ab, bt.data(), K, bias, o, kr0, kr1); break;
      }
    }
    j += nc;
  }
}

}  // namespace

void gemm_packed_avx512(const PackedA& a, int64_t p0, int64_t p1, const float* B, int64_t ldb, int64_t n0, int64_t n1, const GemmOut& out) {
  const Epilogue* e = out.act ? out.act->epi : nullptr;
  avx2::with_in_reg(e, [&]<InReg Act>() { run<Act>(a, p0, p1, B, ldb, n0, n1, out); });
}

void gemm_packed_f16_avx512(const PackedA& a, int64_t p0, int64_t p1, const uint16_t* B, int64_t ldb, int64_t n0, int64_t n1,
                            const GemmOutF16& out) {
  if (out.relu) run_half<true>(a, p0, p1, B, ldb, n0, n1, out);
  else run_half<false>(a, p0, p1, B, ldb, n0, n1, out);
}

namespace {
// The share of a tile's lanes that n columns fill with tiles of `tile` columns.
double fill(int64_t n, int64_t tile) { return static_cast<double>(n) / static_cast<double>((n + tile - 1) / tile * tile); }
}  // namespace

bool gemm_lanes_wins(int64_t M, int64_t N, int64_t K, int64_t ldc) {
  if (!cpu_has_avx512() || M < 16 || N <= 0 || K <= 0 || ldc > (int64_t{1} << 24)) return false;
  // Filled lanes of the two tilings (7-column tiles where 14 do not divide), less the scattered
  // stores: about 25 / K of a tile's time.
  const double lanes = fill(N, 7) * fill(M, kLaneRows) * (1.0 - 25.0 / static_cast<double>(K));
  return lanes > fill(N, kCols) * fill(M, kPanelRows) + 0.03;
}

void gemm_lanes(const PackedA& a, int64_t b0, int64_t b1, const float* B, int64_t ldb, int64_t n0, int64_t n1, const GemmOut& out) {
  if (b0 >= b1 || n0 >= n1) return;
  const Epilogue* e = out.act ? out.act->epi : nullptr;
  avx2::with_in_reg(e, [&]<InReg Act>() { run_lanes<Act>(a, b0, b1, B, ldb, n0, n1, out); });
}
#else
bool gemm_lanes_wins(int64_t, int64_t, int64_t, int64_t) { return false; }
void gemm_lanes(const PackedA&, int64_t, int64_t, const float*, int64_t, int64_t, int64_t, const GemmOut&) {}
void gemm_packed_avx512(const PackedA&, int64_t, int64_t, const float*, int64_t, int64_t, int64_t, const GemmOut&) {}
void gemm_packed_f16_avx512(const PackedA&, int64_t, int64_t, const uint16_t*, int64_t, int64_t, int64_t, const GemmOutF16&) {}
#endif

}  // namespace nnxr::runtime
