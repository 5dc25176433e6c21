// gemm_packed on AVX-512: tiles of 6 or 12 rows (one panel or two) x 32 columns from the same
// packed panels as the AVX2 kernel, with partial tiles read and written through lane masks (no
// copy of B's last columns). One 512-bit FMA does the work of two 256-bit ones: half the
// instructions and loads of the AVX2 kernel for the same products.
//
// Two panels a tile where there are two: B's two vectors of each k then feed 24 FMAs instead of
// 12, and B, read in place k by k at a row stride of ldb, is fetched 8 rows ahead. On a core
// with two 512-bit FMA pipes (Intel Xeon, 212 Gflop/s a thread) the 6-row tile waited on B's
// loads, whose stride (a whole plane row apart) defeats the hardware prefetchers: a copy of it
// reading B in place at ResNet's 12.5 KB row stride ran at 117-127 Gflop/s, with 12 rows and B
// fetched ahead at 167 (179 with B contiguous in L1).
//
// In a model the weights come from memory: a layer's were last read a whole run ago, and one core
// reads 13 GB/s from memory here (22-26 GB/s from L3), while a 12 x 32 tile takes 48 bytes of
// them a step of 24 FMAs (14 GB/s at this CPU's peak). So the first tile over a pair of panels
// fetches the next pair into L2 as it goes. ResNet-50 at 1 thread, with gemm_lanes' chunks of K
// below: 17 ms less a run (102-123 ms before; the median of 5 paired rounds), the chunks alone 13.
#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <utility>
#include <vector>

#include "model/runtime/avx512.h"
#include "model/runtime/compute.h"
#include "model/runtime/gemm_packed.h"
#include "model/runtime/lanes_store.h"

namespace nnxr::runtime {

#if defined(__x86_64__) || defined(__i386__)
namespace {

constexpr int kCols = 32;  // columns per tile: two 16-float vectors
constexpr int64_t kLaneGroupFloats = int64_t{1} << 20;  // run_lanes: B's copied columns a group (4 MB)
constexpr int64_t kLaneChunk = 256;                     // run_lanes: rows of K a pass (32 KB of a row block's weights)
static_assert(kPanelRows == 6, "a tile holds one or two panels of 6 rows x 2 vectors of accumulators");

using avx2::ActParams;
using avx2::InReg;
using lanes::TileOut;

// Where a product's element (0, 0) and its epilogue's go, for the epilogue Act (z1, z2 and the
// addend as Act uses them, else null); no streaming.
template <InReg Act>
TileOut product_out(const GemmOut& out) {
  const EpilogueOut* act = out.act;
  return TileOut{out.C,
                 Act == InReg::None ? nullptr : act->z1 + out.act_offset,
                 Act == InReg::SiLU ? act->z2 + out.act_offset : nullptr,
                 Act == InReg::Add ? act->addend + out.act_offset : nullptr,
                 out.ldc,
                 avx2::act_params(act ? act->epi : nullptr),
                 false};
}

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

// B rows fetched ahead of the tile's loads, where B is read in place (a row stride of ldb).
constexpr int64_t kFetchAhead = 8;

// One tile of P panels (6 P rows) x V vectors of 16 columns (V = 1: cols <= 16); panel q's rows
// at a + q * panel. B holds floats or float16 (TB = uint16_t: widened in the register as loaded).
// B's rows are read through the masks (m0, m1) when Masked (a partial tile read in place), whole
// otherwise, and fetched kFetchAhead rows ahead when Ahead. `next`, unless null: the next pair of
// panels (K x 12 floats), fetched into L2 a step at a time; `later`, unless null: K lines from
// there (64 bytes apart) fetched into L2, one a step. Accumulators start at the bias; each panel's
// 6 rows go to store(res, q, rows) at the end, rows < 6 for a last partial panel.
template <class TB, int P, int V, bool Masked, bool Ahead, class Store>
[[gnu::always_inline]] NNXR_AVX512 inline void tile_body(const float* a, int64_t panel, const TB* b, int64_t ldb, int64_t K, const float* bias, int rows,
                                                          int cols, const float* next, const char* later, const Store& store) {
  constexpr int R = P * kPanelRows;
  const __mmask16 m0 = avx512::lanes(cols), m1 = avx512::lanes(cols - 16);
  const auto load = [&](const TB* at, __mmask16 m) NNXR_AVX512 __attribute__((always_inline)) {
    if constexpr (std::is_same_v<TB, float>) return Masked ? _mm512_maskz_loadu_ps(m, at) : _mm512_loadu_ps(at);
    else return _mm512_cvtph_ps(Masked ? _mm256_maskz_loadu_epi16(m, at) : _mm256_loadu_si256(reinterpret_cast<const __m256i*>(at)));
  };
  __m512 c[R][V];
#pragma GCC unroll 12
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 2
    for (int v = 0; v < V; ++v) c[r][v] = _mm512_set1_ps(bias[r]);
  const float* a2 = a + (P == 2 ? panel : 0);
  for (int64_t k = 0; k < K; ++k, a += kPanelRows, a2 += kPanelRows, b += ldb) {
    if (next) _mm_prefetch(reinterpret_cast<const char*>(next + 2 * kPanelRows * k), _MM_HINT_T1);
    if (later) _mm_prefetch(later + 64 * k, _MM_HINT_T1);
    if constexpr (Ahead) {
      // the row's first and last byte (an address past B's end is never loaded: a prefetch does
      // not fault)
      const uintptr_t next = reinterpret_cast<uintptr_t>(b) + static_cast<uintptr_t>(kFetchAhead * ldb) * sizeof(TB);
      _mm_prefetch(reinterpret_cast<const char*>(next), _MM_HINT_T0);
      if constexpr (V * 16 * sizeof(TB) > 32) _mm_prefetch(reinterpret_cast<const char*>(next + V * 16 * sizeof(TB) - 1), _MM_HINT_T0);
    }
    __m512 bv[V];
    bv[0] = load(b, m0);
    if constexpr (V == 2) bv[1] = load(b + 16, m1);
#pragma GCC unroll 12
    for (int r = 0; r < R; ++r) {
      const __m512 av = _mm512_set1_ps(r < kPanelRows ? a[r] : a2[r - kPanelRows]);
#pragma GCC unroll 2
      for (int v = 0; v < V; ++v) c[r][v] = _mm512_fmadd_ps(av, bv[v], c[r][v]);
    }
  }
  __m512 res[kPanelRows][2];
#pragma GCC unroll 2
  for (int q = 0; q < P; ++q) {
#pragma GCC unroll 6
    for (int r = 0; r < kPanelRows; ++r) {
      res[r][0] = c[q * kPanelRows + r][0];
      res[r][1] = c[q * kPanelRows + r][V - 1];
    }
    const int left = rows - q * kPanelRows;
    if (left <= 0) break;
    store(res, q, std::min(left, static_cast<int>(kPanelRows)));
  }
}

template <InReg Act, int P, int V, bool Masked, bool Ahead>
NNXR_AVX512 void tile(const float* a, int64_t panel, const float* b, int64_t ldb, int64_t K, const float* bias, const float* next, const char* later,
                      const TileOut& o, int rows, int cols) {
  tile_body<float, P, V, Masked, Ahead>(a, panel, b, ldb, K, bias, rows, cols, next, later, [&](const __m512 (&res)[kPanelRows][2], int q, int n) {
    store_tile<Act>(res, o.shifted(q * kPanelRows * o.ld), n, cols);
  });
}

// f.template operator()<P, V, Masked, Ahead>() for a tile of `panels` panels (1 or 2) and `cols`
// columns (V = 2 vectors past 16), Masked unless `whole`, Ahead where B is read in place
// (ld != 32: a copied tile is read front to back).
template <class F>
void with_tile_shape(int panels, int cols, bool whole, int64_t ld, const F& f) {
  const bool ahead = ld != kCols;
  const auto by_v = [&]<int P, bool Masked>() {
    if (cols > 16) ahead ? f.template operator()<P, 2, Masked, true>() : f.template operator()<P, 2, Masked, false>();
    else ahead ? f.template operator()<P, 1, Masked, true>() : f.template operator()<P, 1, Masked, false>();
  };
  if (panels == 2) whole ? by_v.template operator()<2, false>() : by_v.template operator()<2, true>();
  else whole ? by_v.template operator()<1, false>() : by_v.template operator()<1, true>();
}

// Columns [0, w) of B (w <= 32; K rows, stride ldb) as a contiguous [K][32] panel, zero-padded.
NNXR_AVX512 void copy_columns(const float* B, int64_t ldb, int64_t K, int64_t w, float* dst) {
  const __mmask16 m0 = avx512::lanes(w), m1 = avx512::lanes(w - 16);
  for (int64_t k = 0; k < K; ++k, B += ldb, dst += kCols) {
    _mm512_storeu_ps(dst, _mm512_maskz_loadu_ps(m0, B));
    _mm512_storeu_ps(dst + 16, _mm512_maskz_loadu_ps(m1, B + 16));
  }
}

// pb, unless null: B packed (n0 a multiple of its strips' width), read strip by strip instead of
// in place or copied.
template <InReg Act>
NNXR_AVX512 void run(const PackedA& a, int64_t p0, int64_t p1, const float* B, int64_t ldb, int64_t n0, int64_t n1, const GemmOut& out,
                     const PackedB* pb = nullptr) {
  static_assert(kStripCols == kCols, "a packed strip is one tile's columns");
  const int64_t K = a.K;
  const TileOut base = product_out<Act>(out);
  const bool stream = Act != InReg::None && out.ldc % 16 == 0;
  // Otherwise, when the epilogue keeps its own output (nothing reads y during the run), y is staged
  // in the column blocks below, a pair of panels at a time, and streamed out (stream_span: the
  // whole cache lines past the cache, no read for ownership). SiLU's sigmoid likewise: stored
  // through the cache, each line of it first read from memory, yolox_nano's thirty 1x1 layers on
  // 26x26 took 0.39 ms more a run (Intel Xeon, 1 thread, medians of 6 profiles). The staging rows
  // are ldc apart as y's (the tiles' stores unchanged); only the block's columns are touched.
  const int64_t tiles = (n1 - n0 + kCols - 1) / kCols;
  const bool few = 2 * tiles < p1 - p0;  // few columns, many panels (below)
  const bool stage = Act != InReg::None && !stream && !few;
  const Staging staged = stage ? staging_rows(2 * kPanelRows, out.ldc, Act == InReg::SiLU) : Staging{};
  // One tile of panels [p, p + P) (P = 2 where p + 1 < p1) at columns [j, j + cols), B read from
  // src with row stride ld; `whole`: src has 32 readable columns; `fetch`: the tile fetches the
  // next pair of panels into L2 as it goes.
  auto one = [&](int64_t p, int64_t j, int cols, const float* src, int64_t ld, bool whole, bool fetch, const char* later = nullptr) {
    const int P = p + 1 < p1 ? 2 : 1;
    const int64_t m0 = p * kPanelRows;
    const int rows = static_cast<int>(std::min<int64_t>(P * kPanelRows, a.M - m0));
    float bias[2 * kPanelRows] = {};
    if (out.bias)
      for (int r = 0; r < rows; ++r) bias[r] = out.bias[m0 + r];
    TileOut o = base.shifted(m0 * out.ldc + j);
    o.stream_y = stream && reinterpret_cast<uintptr_t>(o.y) % 64 == 0;
    if (stage) o.y = staged.y + j;
    if (staged.z1) o.z1 = staged.z1 + j;
    with_tile_shape(P, cols, whole, ld, [&]<int Q, int V, bool Masked, bool Ahead>() {
      tile<Act, Q, V, Masked, Ahead>(a.panel(p), K * kPanelRows, src, ld, K, bias, fetch && p + 2 < p1 ? a.panel(p + 2) : nullptr, later, o, rows,
                                     cols);
    });
  };
  // The addend of the tile of panels [p, p + 2) at columns [j, j + w), fetched (Add only).
  auto ahead = [&](int64_t p, int64_t j, int64_t w) {
    if constexpr (Act == InReg::Add) fetch_addend(base.addend, out.ldc, p * kPanelRows, std::min(a.M, std::min(p + 2, p1) * kPanelRows), j, w);
  };
  if (few) {
    // Few columns, many panels: one tile of B at a time, copied contiguous (stays in L1).
    // On a cache line, so that no row's two vectors straddle lines: a plain vector's storage,
    // from malloc, begins 16 bytes past a page here, and every load of a copied row was split
    // across two lines. bench_kernels (Intel Xeon, 1 thread, alternating binaries, both runs):
    // 512 -> 1000 1x1 on 13x13 1.41-1.45 -> 1.25-1.33 ms, 1024 -> 256 on 14x14 0.87-0.91 ->
    // 0.77-0.81; with gemm_lanes' copies and rows aligned alike, the 512 3x3 on 7x7 2.22-2.38 ->
    // 1.71-1.86 and 2048 -> 512 on 7x7 0.84-0.97 -> 0.72-0.74.
    thread_local std::vector<float, CacheAligned<float>> copied;
    if (!pb) copied.resize(static_cast<size_t>(K * kCols));
    // (Not staged: every tile spans all the rows, so a staging buffer as large as the weights'
    // share of L2 would have to hold them, or spans of 32 columns be streamed, a line or two of
    // each. Staged 64 columns at a time, 256 KB, ResNet-50 ran 0.8 ms slower a run and yolox_nano
    // 0.7, the medians of 5 paired rounds, as large as one round's noise.)
    for (int64_t j = n0; j < n1; j += kCols) {
      const int64_t w = std::min<int64_t>(kCols, n1 - j);
      if (!pb) copy_columns(B + j, ldb, K, w, copied.data());
      const float* const src = pb ? pb->strip(j) : copied.data();
      // The first two pairs over a packed strip fetch the next one into L2, half each: read from
      // memory as the first pair's tiles go, a strip of vit_s16_4l's weights held them up (without
      // the fetch its 12 large products took 1.2 ms more a run than reading B in place and
      // copying each strip: Intel Xeon, 1 thread).
      const bool more = pb && j + kCols < n1;
      for (int64_t p = p0, i = 0; p < p1; p += 2, ++i) {
        if (p + 2 < p1) ahead(p + 2, j, w);
        one(p, j, static_cast<int>(w), src, kCols, true, true,
            more && i < 2 ? reinterpret_cast<const char*>(pb->strip(j + kCols)) + i * K * 64 : nullptr);
      }
    }
  } else {
    // Column blocks whose part of B stays in L2 while every pair of panels passes over it; B in
    // place, its last partial tile through masks.
    const int64_t block = std::clamp<int64_t>((int64_t{256} << 10) / (std::max<int64_t>(K, 1) * 4) / kCols * kCols, kCols, 2048);
    for (int64_t j0 = n0; j0 < n1; j0 += block) {
      const int64_t j1 = std::min(n1, j0 + block);
      for (int64_t p = p0; p < p1; p += 2) {
        for (int64_t j = j0; j < j1; j += kCols) {
          const int64_t w = std::min<int64_t>(kCols, j1 - j);
          if (j + kCols < j1) ahead(p, j + kCols, std::min<int64_t>(kCols, j1 - j - kCols));
          if (pb) one(p, j, static_cast<int>(w), pb->strip(j), kCols, true, j == j0);
          else one(p, j, static_cast<int>(w), B + j, ldb, w == kCols, j == j0);
        }
        if (stage) {  // the pair's rows (one panel's at a range's end: the next is another task's)
          const int64_t r0 = p * kPanelRows, r1 = std::min(a.M, std::min(p + 2, p1) * kPanelRows);
          flush_staged(out.C, out.ldc, staged.y, r0, r1, j0, j1, avx512::stream_span);
          if (staged.z1) flush_staged(base.z1, out.ldc, staged.z1, r0, r1, j0, j1, avx512::stream_span);
        }
      }
    }
  }
  if (stream || stage) _mm_sfence();
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
template <bool Relu, int P, int V, bool Masked, bool Ahead>
NNXR_AVX512 void tile_half(const float* a, int64_t panel, const uint16_t* b, int64_t ldb, int64_t K, const float* bias, const GemmOutF16& o, int64_t at,
                           int rows, int cols) {
  tile_body<uint16_t, P, V, Masked, Ahead>(a, panel, b, ldb, K, bias, rows, cols, nullptr, nullptr, [&](const __m512 (&res)[kPanelRows][2], int q, int n) {
    store_tile_half<Relu>(res, o, at + q * kPanelRows * o.ldc, n, cols);
  });
}

// Columns [0, w) of float16 B (w <= 32) as a contiguous [K][32] panel, zero-padded.
NNXR_AVX512 void copy_columns_half(const uint16_t* B, int64_t ldb, int64_t K, int64_t w, uint16_t* dst) {
  const __mmask32 m = w >= 32 ? ~__mmask32(0) : static_cast<__mmask32>((1u << w) - 1u);
  for (int64_t k = 0; k < K; ++k, B += ldb, dst += kCols) _mm512_storeu_si512(dst, _mm512_maskz_loadu_epi16(m, B));
}

template <bool Relu>
NNXR_AVX512 void run_half(const PackedA& a, int64_t p0, int64_t p1, const uint16_t* B, int64_t ldb, int64_t n0, int64_t n1, const GemmOutF16& out) {
  const int64_t K = a.K;
  // As run's: panels [p, p + 2) where there are two, B fetched ahead where read in place.
  auto one = [&](int64_t p, int64_t j, int cols, const uint16_t* src, int64_t ld, bool whole) {
    const int P = p + 1 < p1 ? 2 : 1;
    const int64_t m0 = p * kPanelRows;
    const int rows = static_cast<int>(std::min<int64_t>(P * kPanelRows, a.M - m0));
    float bias[2 * kPanelRows] = {};
    if (out.bias)
      for (int r = 0; r < rows; ++r) bias[r] = out.bias[m0 + r];
    const int64_t at = m0 * out.ldc + j;
    with_tile_shape(P, cols, whole, ld, [&]<int Q, int V, bool Masked, bool Ahead>() {
      tile_half<Relu, Q, V, Masked, Ahead>(a.panel(p), K * kPanelRows, src, ld, K, bias, out, at, rows, cols);
    });
  };
  const int64_t tiles = (n1 - n0 + kCols - 1) / kCols;
  if (2 * tiles < p1 - p0) {
    thread_local std::vector<uint16_t, CacheAligned<uint16_t>> copied;
    copied.resize(static_cast<size_t>(K * kCols));
    for (int64_t j = n0; j < n1; j += kCols) {
      const int64_t w = std::min<int64_t>(kCols, n1 - j);
      copy_columns_half(B + j, ldb, K, w, copied.data());
      for (int64_t p = p0; p < p1; p += 2) one(p, j, static_cast<int>(w), copied.data(), kCols, true);
    }
    return;
  }
  const int64_t block = std::clamp<int64_t>((int64_t{128} << 10) / (std::max<int64_t>(K, 1) * 2) / kCols * kCols, kCols, 2048);
  for (int64_t j0 = n0; j0 < n1; j0 += block) {
    const int64_t j1 = std::min(n1, j0 + block);
    for (int64_t p = p0; p < p1; p += 2)
      for (int64_t j = j0; j < j1; j += kCols) {
        const int64_t w = std::min<int64_t>(kCols, j1 - j);
        one(p, j, static_cast<int>(w), B + j, ldb, w == kCols);
      }
  }
}

// ---- gemm_lanes: 32 rows in the lanes of two vectors x 7 columns -----------------------------

using lanes::kLaneCols;  // two groups of 7: 28 accumulators, A read once for 14 columns
using lanes::store_lanes;

// One tile over klen rows of K (a chunk): a = the block's rows, k-major (32 a step), b = NC
// columns k-major (16 a step), both at the chunk's first row. The sums start from the bias at the
// first chunk and from the previous chunk's (kept in part) at the others, so each element is
// summed in the same order as in one pass; the tile is stored at the last chunk, and otherwise
// its sums are kept in part. `ahead`, unless null: klen x 32 floats of weights fetched into L2 as
// the tile goes (the next row block's chunk).
template <InReg Act, int NC>
NNXR_AVX512 void lane_tile(const float* a, const float* b, int64_t klen, const float* bias, float* part, bool first, bool last, const float* ahead,
                           const TileOut& o, int rows) {
  __m512 acc[kLaneCols][2];
  if (first) {
    const __mmask16 kr0 = avx512::lanes(rows), kr1 = avx512::lanes(rows - 16);
    const __m512 bias0 = _mm512_maskz_loadu_ps(kr0, bias), bias1 = _mm512_maskz_loadu_ps(kr1, bias + 16);
#pragma GCC unroll 14
    for (int j = 0; j < NC; ++j) {
      acc[j][0] = bias0;
      acc[j][1] = bias1;
    }
  } else {
#pragma GCC unroll 14
    for (int j = 0; j < NC; ++j) {
      acc[j][0] = _mm512_loadu_ps(part + kLaneRows * j);
      acc[j][1] = _mm512_loadu_ps(part + kLaneRows * j + 16);
    }
  }
  for (int64_t k = 0; k < klen; ++k, a += kLaneRows, b += 16) {
    if (ahead) {
      _mm_prefetch(reinterpret_cast<const char*>(ahead + k * kLaneRows), _MM_HINT_T1);
      _mm_prefetch(reinterpret_cast<const char*>(ahead + k * kLaneRows + 16), _MM_HINT_T1);
    }
    const __m512 a0 = _mm512_loadu_ps(a), a1 = _mm512_loadu_ps(a + 16);
#pragma GCC unroll 14
    for (int j = 0; j < NC; ++j) {
      const __m512 bj = _mm512_set1_ps(b[j]);
      acc[j][0] = _mm512_fmadd_ps(a0, bj, acc[j][0]);
      acc[j][1] = _mm512_fmadd_ps(a1, bj, acc[j][1]);
    }
  }
  if (last) return store_lanes<Act, NC>(acc, o, rows);
#pragma GCC unroll 14
  for (int j = 0; j < NC; ++j) {
    _mm512_storeu_ps(part + kLaneRows * j, acc[j][0]);
    _mm512_storeu_ps(part + kLaneRows * j + 16, acc[j][1]);
  }
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

// Columns [0, nc) of B (K rows, stride ldb) k-major, 16 a step: one masked load and store a row.
NNXR_AVX512 void copy_tile_columns(const float* B, int64_t ldb, int64_t K, int nc, float* dst) {
  const __mmask16 k = avx512::lanes(nc);
  for (int64_t r = 0; r < K; ++r, B += ldb, dst += 16) _mm512_storeu_ps(dst, _mm512_maskz_loadu_ps(k, B));
}

template <InReg Act>
void run_lanes(const PackedA& a, int64_t b0, int64_t b1, const float* B, int64_t ldb, int64_t n0, int64_t n1, const GemmOut& out) {
  const int64_t K = a.K;
  const float* rows = lane_rows(a);
  const TileOut base = product_out<Act>(out);
  // Tiles of 14 columns, and of 7 where 14 would leave a narrow last tile (49 = 14 + 14 + 14 + 7).
  thread_local std::vector<std::pair<int64_t, int>> tiles;
  tiles.clear();
  for (int64_t j = n0; j < n1;) {
    const int64_t left = n1 - j;
    const int nc = static_cast<int>(left >= 21 || left == 14 ? 14 : std::min<int64_t>(7, left));
    tiles.emplace_back(j, nc);
    j += nc;
  }
  // Groups of tiles whose columns, copied k-major, take up to 4 MB (kLaneGroupFloats), as even as
  // they go (a bound on the copy; ResNet-50's last 3x3, K = 4608 by 49 columns, takes 1.2 MB).
  // Each group is taken in chunks of K (kLaneChunk rows), every row block over a chunk: a row
  // block's weights (the stream from memory: a layer's weights were last read a whole run ago)
  // pass once per group, each chunk of them read from L1 by all the group's tiles, and the
  // group's chunk of columns stays in L1 or L2 while the row blocks pass. One pass of all K a
  // tile read each row block's weights from memory for the first tile's 14 columns: 28 FMAs
  // per 128 bytes, more than one core's 13 GB/s from memory feeds at this CPU's peak (Intel Xeon).
  const int64_t tile_floats = K * 16;
  const int64_t fit = std::max<int64_t>(1, kLaneGroupFloats / tile_floats), ntiles = static_cast<int64_t>(tiles.size());
  const int64_t groups = (ntiles + fit - 1) / fit;
  const auto group = static_cast<size_t>((ntiles + groups - 1) / groups);  // as even as they go
  thread_local std::vector<float, CacheAligned<float>> bt;  // the group's tiles, each k-major, 16 a step
  thread_local std::vector<float, CacheAligned<float>> part;  // sums between chunks: per row block and tile, kLaneCols x 32
  constexpr int64_t kPart = kLaneCols * kLaneRows;
  for (size_t g0 = 0; g0 < tiles.size(); g0 += group) {
    const size_t g1 = std::min(tiles.size(), g0 + group);
    bt.resize(static_cast<size_t>(g1 - g0) * static_cast<size_t>(tile_floats));
    for (size_t t = g0; t < g1; ++t) copy_tile_columns(B + tiles[t].first, ldb, K, tiles[t].second, bt.data() + (t - g0) * tile_floats);
    if (K > kLaneChunk) part.resize(static_cast<size_t>((b1 - b0) * static_cast<int64_t>(g1 - g0) * kPart));
    for (int64_t k0 = 0; k0 < K; k0 += kLaneChunk) {
      const int64_t klen = std::min(kLaneChunk, K - k0);
      const bool first = k0 == 0, last = k0 + klen == K;
      for (int64_t blk = b0; blk < b1; ++blk) {
        const int64_t m0 = blk * kLaneRows;
        const int64_t valid = std::min<int64_t>(kLaneRows, a.M - m0);
        float bias[kLaneRows] = {};
        if (first && out.bias)
          for (int64_t r = 0; r < valid; ++r) bias[r] = out.bias[m0 + r];
        const float* ab = rows + (blk * K + k0) * kLaneRows;
        const int rows_valid = static_cast<int>(valid);
        for (size_t t = g0; t < g1; ++t) {
          const TileOut o = base.shifted(m0 * out.ldc + tiles[t].first);
          const float* b = bt.data() + (t - g0) * tile_floats + k0 * 16;
          float* p = last && first ? nullptr : part.data() + ((blk - b0) * static_cast<int64_t>(g1 - g0) + static_cast<int64_t>(t - g0)) * kPart;
          // The first tile fetches the next row block's chunk of weights (or the next chunk's first) into L2.
          const float* ahead = nullptr;
          if (t == g0) {
            if (blk + 1 < b1) ahead = ab + K * kLaneRows;
            else if (!last) ahead = rows + (b0 * K + k0 + klen) * kLaneRows;
          }
          const auto tile = [&]<int NC>() { lane_tile<Act, NC>(ab, b, klen, bias, p, first, last, ahead, o, rows_valid); };
          switch (tiles[t].second) {
            case 14: tile.template operator()<14>(); break;
            case 7: tile.template operator()<7>(); break;
            case 6: tile.template operator()<6>(); break;
            case 5: tile.template operator()<5>(); break;
            case 4: tile.template operator()<4>(); break;
            case 3: tile.template operator()<3>(); break;
            case 2: tile.template operator()<2>(); break;
            default: tile.template operator()<1>(); break;
          }
        }
      }
    }
  }
}

}  // namespace

// `panels` panels of six rows of A (lda apart) each, k-major, one after the other at dst: 16
// columns a step, the rows interleaved in pairs and the pairs merged by permutes into six whole
// vectors of (k, row) (each 16 floats of output take their rows from three pairs: two permutes),
// the columns past the last 16 one by one.
NNXR_AVX512 void pack_panels_avx512(const float* A, int64_t lda, int64_t K, int64_t panels, float* dst) {
  static_assert(kPanelRows == 6, "three pairs of rows");
  // Output vector v (of the three a step of 8 columns fills) lane i: flat f = 16 v + i, column
  // k = f / 6, row r = f % 6: from pair r / 2, lane 2 k + r % 2 of its interleaved vector.
  alignas(64) int32_t idx_a[3][16], idx_b[3][16];
  __mmask16 third[3] = {0, 0, 0};  // lanes from the third pair
  for (int v = 0; v < 3; ++v)
    for (int i = 0; i < 16; ++i) {
      const int f = 16 * v + i, k = f / 6, r = f % 6, lane = 2 * k + r % 2;
      idx_a[v][i] = r / 2 == 0 ? lane : 16 + lane;  // pairs 0 and 1
      idx_b[v][i] = 16 + lane;                      // pair 2 (as b)
      if (r / 2 == 2) third[v] = static_cast<__mmask16>(third[v] | (1u << i));
    }
  __m512i ia[3], ib[3];
  for (int v = 0; v < 3; ++v) {
    ia[v] = _mm512_load_si512(idx_a[v]);
    ib[v] = _mm512_load_si512(idx_b[v]);
  }
  const __m512i lo = _mm512_set_epi32(23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
  const __m512i hi = _mm512_set_epi32(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8);
  for (int64_t panel = 0; panel < panels; ++panel, A += kPanelRows * lda) {
    int64_t k = 0;
    for (; k + 16 <= K; k += 16, dst += 16 * kPanelRows) {
      __m512 pairs[2][3];  // [half: columns 0-7 or 8-15][pair]
      for (int q = 0; q < 3; ++q) {
        const __m512 x0 = _mm512_loadu_ps(A + 2 * q * lda + k), x1 = _mm512_loadu_ps(A + (2 * q + 1) * lda + k);
        pairs[0][q] = _mm512_permutex2var_ps(x0, lo, x1);
        pairs[1][q] = _mm512_permutex2var_ps(x0, hi, x1);
      }
      for (int h = 0; h < 2; ++h)
        for (int v = 0; v < 3; ++v) {
          const __m512 u = _mm512_permutex2var_ps(pairs[h][0], ia[v], pairs[h][1]);
          _mm512_storeu_ps(dst + 48 * h + 16 * v, _mm512_mask_permutex2var_ps(u, third[v], ib[v], pairs[h][2]));
        }
    }
    for (; k < K; ++k, dst += kPanelRows)
      for (int r = 0; r < kPanelRows; ++r) dst[r] = A[r * lda + k];
  }
}

void gemm_packed_avx512(const PackedA& a, int64_t p0, int64_t p1, const float* B, int64_t ldb, int64_t n0, int64_t n1, const GemmOut& out) {
  const Epilogue* e = out.act ? out.act->epi : nullptr;
  avx2::with_in_reg(e, [&]<InReg Act>() { run<Act>(a, p0, p1, B, ldb, n0, n1, out); });
}

void gemm_packed_avx512(const PackedA& a, int64_t p0, int64_t p1, const PackedB& b, int64_t n0, int64_t n1, const GemmOut& out) {
  const Epilogue* e = out.act ? out.act->epi : nullptr;
  avx2::with_in_reg(e, [&]<InReg Act>() { run<Act>(a, p0, p1, nullptr, 0, n0, n1, out, &b); });
}

void gemm_packed_f16_avx512(const PackedA& a, int64_t p0, int64_t p1, const uint16_t* B, int64_t ldb, int64_t n0, int64_t n1,
                            const GemmOutF16& out) {
  if (out.relu) run_half<true>(a, p0, p1, B, ldb, n0, n1, out);
  else run_half<false>(a, p0, p1, B, ldb, n0, n1, out);
}

bool gemm_lanes_wins(int64_t M, int64_t N, int64_t K) {
  if (!cpu_has_avx512() || M < 16 || N <= 0 || K <= 0) return false;
  // Filled lanes of the two tilings (7-column tiles where 14 do not divide), the lanes tiling's
  // less its transposing stores (about 4 / K of a tile's time), and it must beat the other by
  // 15%, the more time it takes per filled lane. Measured on AMD EPYC Zen 4 (bench_kernels
  // lanes/, thread CPU time, both tilings forced): on 7x7 planes, rows in whole blocks, the lanes
  // win by 19-23% at K = 160-1152, 11-14% at K = 64 and 7% at K = 32, tie at K = 16; on 14x14
  // planes, where 32-column tiles fill 196 of 224 lanes, they lose by 3-9% at K = 32-64 and on
  // partial row blocks, tie at K = 80-112 and win by 3-4% at most (96 rows: 3 row blocks, which
  // two threads split 2 + 1), so those stay on gemm_packed.
  const double lanes = tile_fill(N, 7) * tile_fill(M, kLaneRows) * (1.0 - 4.0 / static_cast<double>(K));
  return lanes > 1.15 * tile_fill(N, kCols) * tile_fill(M, kPanelRows);
}

void gemm_lanes(const PackedA& a, int64_t b0, int64_t b1, const float* B, int64_t ldb, int64_t n0, int64_t n1, const GemmOut& out) {
  if (b0 >= b1 || n0 >= n1) return;
  const Epilogue* e = out.act ? out.act->epi : nullptr;
  avx2::with_in_reg(e, [&]<InReg Act>() { run_lanes<Act>(a, b0, b1, B, ldb, n0, n1, out); });
}
#else
bool gemm_lanes_wins(int64_t, int64_t, int64_t) { return false; }
void gemm_lanes(const PackedA&, int64_t, int64_t, const float*, int64_t, int64_t, int64_t, const GemmOut&) {}
void gemm_packed_avx512(const PackedA&, int64_t, int64_t, const float*, int64_t, int64_t, int64_t, const GemmOut&) {}
void pack_panels_avx512(const float*, int64_t, int64_t, int64_t, float*) {}
void gemm_packed_avx512(const PackedA&, int64_t, int64_t, const PackedB&, int64_t, int64_t, const GemmOut&) {}
void gemm_packed_f16_avx512(const PackedA&, int64_t, int64_t, const uint16_t*, int64_t, int64_t, int64_t, const GemmOutF16&) {}
#endif

}  // namespace nnxr::runtime
