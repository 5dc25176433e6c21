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

}  // namespace

void gemm_packed_avx512(const PackedA& a, int64_t p0, int64_t p1, const float* B, int64_t ldb, int64_t n0, int64_t n1, const GemmOut& out) {
  const Epilogue* e = out.act ? out.act->epi : nullptr;
  avx2::with_in_reg(e, [&]<InReg Act>() { run<Act>(a, p0, p1, B, ldb, n0, n1, out); });
}
#else
void gemm_packed_avx512(const PackedA&, int64_t, int64_t, const float*, int64_t, int64_t, int64_t, const GemmOut&) {}
#endif

}  // namespace nnxr::runtime
