// gemm_packed: C = A · B + bias with the epilogue applied while each 6x16 tile of C is still in
// registers. A (a Conv's weights) is packed once; B (the input, or an im2col block) is read in
// place on AVX-512 and copied a block of columns at a time into contiguous tiles on AVX2 (run()
// below). One write of each output element and of its activation and no zeroing pass: that is
// what makes the pointwise convolutions of mobile networks, which move more memory than they
// compute, cheaper than through sgemm plus a separate bias and activation pass.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <stdexcept>

#include "model/runtime/compute.h"
#include "model/runtime/avx2.h"
#include "model/runtime/gemm_packed.h"

namespace nnxr::runtime {

PackedA pack_a(const float* A, int64_t M, int64_t K, int64_t lda) {
  PackedA p;
  p.M = M;
  p.K = K;
  p.lanes = std::make_shared<LaneCache>();
  // Full panels by the AVX-512 transpose where it runs (a transformer's activations are packed
  // for every product); the rest element by element, the rows past M left at zero.
  const int64_t full = cpu_has_avx512() ? M / kPanelRows : 0;
  p.data.resize(static_cast<size_t>(p.panels() * K * kPanelRows));  // (zeros)
  if (full > 0) pack_panels_avx512(A, lda, K, full, p.data.data());
  for (int64_t m = full * kPanelRows; m < M; ++m) {
    float* panel = p.data.data() + (m / kPanelRows) * K * kPanelRows + m % kPanelRows;
    const float* row = A + m * lda;
    for (int64_t k = 0; k < K; ++k) panel[k * kPanelRows] = row[k];
  }
  return p;
}

bool gemm_packed_available() { return cpu_has_avx2_fma(); }

std::shared_ptr<const PackedB> pack_b(const float* B, int64_t K, int64_t N, bool transposed) {
  if (!cpu_has_avx512() || N < kStripCols || K <= 0) return nullptr;
  auto p = std::make_shared<PackedB>();
  p->K = K;
  p->N = N;
  const int64_t strips = (N + kStripCols - 1) / kStripCols;
  p->storage.assign(static_cast<size_t>(strips * K * kStripCols + 16), 0.f);
  p->offset = (64 - reinterpret_cast<uintptr_t>(p->storage.data()) % 64) % 64 / sizeof(float);
  for (int64_t s = 0; s < strips; ++s) {
    const int64_t j0 = s * kStripCols, w = std::min(kStripCols, N - j0);
    float* dst = p->storage.data() + p->offset + s * K * kStripCols;
    for (int64_t k = 0; k < K; ++k)
      if (transposed)
        for (int64_t j = 0; j < w; ++j) dst[k * kStripCols + j] = B[(j0 + j) * K + k];
      else
        std::copy_n(B + k * N + j0, w, dst + k * kStripCols);
  }
  return p;
}

void gemm_packed(const PackedA& a, int64_t p0, int64_t p1, const PackedB& b, int64_t n0, int64_t n1, const GemmOut& out) {
  if (p0 >= p1 || n0 >= n1) return;
  if (n0 % kStripCols != 0 || a.K != b.K || n1 > b.N) throw std::logic_error("gemm_packed: columns or depth do not match the packed B");
  gemm_packed_avx512(a, p0, p1, b, n0, n1, out);
}

#if defined(__x86_64__) || defined(__i386__)
namespace {

constexpr int kCols = 16;  // columns per tile: two 8-float vectors
static_assert(kPanelRows == 6, "the tile kernel holds 6 rows x 2 vectors of accumulators");

using avx2::ActParams;
using avx2::InReg;

struct TileOut {
  float* y;   // C at the tile's first element
  float* z1;  // the activation at the same place, or null
  float* z2;  // SiLU's product at the same place, or null
  const float* addend;  // Add's addend at the same place, or null
  int64_t ld;
  ActParams p;
  // Full tiles of y with streaming stores (whole cache lines): with the activation computed in
  // registers nothing reads y during the run (the next node reads z1), so it need not pass
  // through cache.
  bool stream_y;
};

// Row r of an optional array with row stride ld (null stays null).
template <class T>
T* row(T* p, int r, int64_t ld) {
  return p ? p + r * ld : nullptr;
}

// Stores a finished tile (rows [0, rows) x columns [0, cols)) and its activation. Out of line,
// with the tile in memory: an epilogue working on the accumulators themselves can make the
// compiler keep them in memory throughout the product loop (several times slower).
template <InReg Act>
[[gnu::noinline]] __attribute__((target("avx2,fma"))) void store_tile(const __m256 (&res)[kPanelRows][2], const TileOut& o, int rows, int cols) {
  if (rows == kPanelRows && cols == kCols) {
    for (int r = 0; r < kPanelRows; ++r) {
      avx2::store16(o.y + r * o.ld, res[r][0], res[r][1], o.stream_y);
      if constexpr (Act != InReg::None) avx2::store_act<Act>(o.z1 + r * o.ld, row(o.z2, r, o.ld), row(o.addend, r, o.ld), res[r][0], res[r][1], o.p, kCols);
    }
    return;
  }
  for (int r = 0; r < rows; ++r) {
    avx2::store_first(o.y + r * o.ld, res[r][0], res[r][1], cols);
    if constexpr (Act != InReg::None) avx2::store_act<Act>(o.z1 + r * o.ld, row(o.z2, r, o.ld), row(o.addend, r, o.ld), res[r][0], res[r][1], o.p, cols);
  }
}

// One row of a tile: x += a * (b0, b1) (V = 1: x0 only).
template <int V>
__attribute__((target("avx2,fma"), always_inline)) inline void fma_row(const float& a, __m256 b0, __m256 b1, __m256& x0, __m256& x1) {
  const __m256 av = _mm256_broadcast_ss(&a);
  x0 = _mm256_fmadd_ps(av, b0, x0);
  if constexpr (V == 2) x1 = _mm256_fmadd_ps(av, b1, x1);
}

// One tile: rows [0, rows) x columns [0, cols) of C from a packed panel and B (row stride ldb,
// at least 8 V readable columns per row), V vectors of 8 columns (V = 1: a narrow last tile,
// cols <= 8). Accumulators start at the bias. `next`, unless null: the next panel (K x 6 floats),
// fetched into L2 a step at a time (gemm_packed_avx512.cpp gives the measurements).
template <InReg Act, int V>
__attribute__((target("avx2,fma"))) void tile(const float* a, const float* b, int64_t ldb, int64_t K, const float* bias, const float* next, const TileOut& o,
                                              int rows, int cols) {
  // Twelve named accumulators rather than an array: the compiler may keep an array in memory and
  // store it on every step of the loop.
  __m256 c00 = _mm256_set1_ps(bias[0]), c10 = _mm256_set1_ps(bias[1]), c20 = _mm256_set1_ps(bias[2]);
  __m256 c30 = _mm256_set1_ps(bias[3]), c40 = _mm256_set1_ps(bias[4]), c50 = _mm256_set1_ps(bias[5]);
  __m256 c01 = c00, c11 = c10, c21 = c20, c31 = c30, c41 = c40, c51 = c50;
  for (int64_t k = 0; k < K; ++k, a += kPanelRows, b += ldb) {
    if (next) _mm_prefetch(reinterpret_cast<const char*>(next + kPanelRows * k), _MM_HINT_T1);
    const __m256 b0 = _mm256_loadu_ps(b), b1 = V == 2 ? _mm256_loadu_ps(b + 8) : b0;
    fma_row<V>(a[0], b0, b1, c00, c01);
    fma_row<V>(a[1], b0, b1, c10, c11);
    fma_row<V>(a[2], b0, b1, c20, c21);
    fma_row<V>(a[3], b0, b1, c30, c31);
    fma_row<V>(a[4], b0, b1, c40, c41);
    fma_row<V>(a[5], b0, b1, c50, c51);
  }
  const __m256 res[kPanelRows][2] = {{c00, c01}, {c10, c11}, {c20, c21}, {c30, c31}, {c40, c41}, {c50, c51}};
  store_tile<Act>(res, o, rows, cols);
}

// Columns [0, w) of B (w <= 16; K rows, stride ldb) as a contiguous [K][16] panel, zero-padded.
// B's rows are a plane apart: each is fetched kCopyAhead rows ahead of its copy. On AMD EPYC
// Zen 3, one binary switched run by run: mobilenet_v2, yolox_nano, squeezenet1.1 and ResNet-50
// 0.97-0.99x the time at 1 and 2 threads, efficientnet_b0 level; 16 rows ahead as 8.
constexpr int64_t kCopyAhead = 8;
__attribute__((target("avx2,fma"))) void copy_columns(const float* B, int64_t ldb, int64_t K, int64_t w, float* dst) {
  const __m256i m0 = avx2::tail_mask(std::min<int64_t>(w, 8)), m1 = avx2::tail_mask(std::max<int64_t>(w - 8, 0));
  for (int64_t k = 0; k < K; ++k, B += ldb, dst += kCols) {
    if (k + kCopyAhead < K) {
      _mm_prefetch(reinterpret_cast<const char*>(B + kCopyAhead * ldb), _MM_HINT_T0);
      _mm_prefetch(reinterpret_cast<const char*>(B + kCopyAhead * ldb + w - 1), _MM_HINT_T0);
    }
    _mm256_storeu_ps(dst, w == kCols ? _mm256_loadu_ps(B) : _mm256_maskload_ps(B, m0));
    _mm256_storeu_ps(dst + 8, w == kCols ? _mm256_loadu_ps(B + 8) : _mm256_maskload_ps(B + 8, m1));
  }
}

template <InReg Act>
__attribute__((target("avx2,fma"))) void run(const PackedA& a, int64_t p0, int64_t p1, const float* B, int64_t ldb, int64_t n0, int64_t n1,
                                             const GemmOut& out) {
  const int64_t K = a.K;
  const EpilogueOut* act = out.act;
  float* const z1 = Act == InReg::None ? nullptr : act->z1 + out.act_offset;
  float* const z2 = Act == InReg::SiLU ? act->z2 + out.act_offset : nullptr;
  const float* const addend = Act == InReg::Add ? act->addend + out.act_offset : nullptr;
  TileOut o{nullptr, nullptr, nullptr, nullptr, out.ldc, avx2::act_params(act ? act->epi : nullptr), false};
  // Streaming stores for tiles that are whole cache lines (row starts on a line, 16 floats); the
  // partial last tile then starts on a line of its own.
  const bool stream = Act != InReg::None && out.ldc % kCols == 0;
  // Otherwise, in the column blocks below, y is staged a panel at a time (its rows ldc apart, as
  // y's) and streamed out (avx2::stream_span), with SiLU's sigmoid, as on AVX-512 (here level:
  // yolox_nano's 1x1 layers on 26x26 5.71 ms a run either way, 6 profiles, Intel Xeon).
  const int64_t tiles = (n1 - n0 + kCols - 1) / kCols;
  const bool few = 2 * tiles < p1 - p0;
  const bool stage = Act != InReg::None && !stream && !few;
  const Staging staged = stage ? staging_rows(kPanelRows, out.ldc, Act == InReg::SiLU) : Staging{};
  // One tile of panel p at columns [j, j + cols), B read from src with row stride ld; `fetch`: the
  // tile fetches the next panel into L2 as it goes.
  auto one = [&](int64_t p, int64_t j, int cols, const float* src, int64_t ld, bool fetch) {
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
    if (stage) o.y = staged.y + j;
    if (staged.z1) o.z1 = staged.z1 + j;
    const float* next = fetch && p + 1 < p1 ? a.panel(p + 1) : nullptr;
    if (cols > 8) tile<Act, 2>(a.panel(p), src, ld, K, bias, next, o, rows, cols);
    else tile<Act, 1>(a.panel(p), src, ld, K, bias, next, o, rows, cols);
  };
  thread_local std::vector<float, CacheAligned<float>> copied;  // on a cache line (see gemm_packed_avx512.cpp)
  // Columns [j, j + w) of B as `tiles` contiguous [K][16] tiles, each zero-padded to 16 columns.
  auto copy_tiles = [&](int64_t j, int64_t w) {
    const int64_t tiles = (w + kCols - 1) / kCols;
    copied.resize(static_cast<size_t>(tiles * K * kCols));
    for (int64_t t = 0; t < tiles; ++t) copy_columns(B + j + t * kCols, ldb, K, std::min<int64_t>(kCols, w - t * kCols), copied.data() + t * K * kCols);
    return copied.data();
  };
  // What the tile of panel p at columns [j, j + w) reads besides A and B, and what it writes,
  // fetched a tile ahead: Add's addend (as on AVX-512), and the rows of y (where it is stored in
  // place) and of the activation's outputs, fetched for their stores (avx2::fetch_rows_for_store).
  auto ahead = [&](int64_t p, int64_t j, int64_t w) {
    const int64_t r0 = p * kPanelRows, r1 = std::min(a.M, (p + 1) * kPanelRows);
    if constexpr (Act == InReg::Add) fetch_addend(addend, out.ldc, r0, r1, j, w);
    avx2::fetch_rows_for_store<float>(stage || stream ? nullptr : out.C, staged.z1 ? nullptr : z1, z2, out.ldc, r0, r1, j, w);
  };
  if (few) {
    // Few columns, many panels (the 7x7 and 14x14 layers): one tile of B at a time, copied
    // contiguous so that it stays in L1 while every panel of A streams past it.
    for (int64_t j = n0; j < n1; j += kCols) {
      const int64_t w = std::min<int64_t>(kCols, n1 - j);
      const float* bt = copy_tiles(j, w);
      for (int64_t p = p0; p < p1; ++p) {
        if (p + 1 < p1) ahead(p + 1, j, w);
        one(p, j, static_cast<int>(w), bt, kCols, true);
      }
    }
  } else {
    // Column blocks whose part of B stays in L2 while every panel passes over it (each panel in
    // L1 meanwhile), copied first as contiguous tiles of 16 columns (the last zero-padded: B has
    // no readable slack past its rows). Read in place, B's rows are a plane apart, and a tile's K
    // rows came from L2 at a stride: on AMD EPYC Zen 3 copying won in the models (whole runs of
    // one binary, both ways interleaved run by run): ResNet-50 at 2 threads 0.86x the time, 0.97x
    // at 1; yolox_nano 0.89x / 0.92x; the other models within 3 %.
    const int64_t block = std::clamp<int64_t>((int64_t{256} << 10) / (std::max<int64_t>(K, 1) * 4) / kCols * kCols, kCols, 2048);
    for (int64_t j0 = n0; j0 < n1; j0 += block) {
      const int64_t j1 = std::min(n1, j0 + block);
      const float* bt = copy_tiles(j0, j1 - j0);
      for (int64_t p = p0; p < p1; ++p) {
        for (int64_t j = j0; j < j1; j += kCols) {
          if (j + kCols < j1) ahead(p, j + kCols, std::min<int64_t>(kCols, j1 - j - kCols));
          one(p, j, static_cast<int>(std::min<int64_t>(kCols, j1 - j)), bt + (j - j0) * K, kCols, j == j0);
        }
        if (stage) {
          const int64_t r0 = p * kPanelRows, r1 = std::min(a.M, (p + 1) * kPanelRows);
          flush_staged(out.C, out.ldc, staged.y, r0, r1, j0, j1, avx2::stream_span);
          if (staged.z1) flush_staged(z1, out.ldc, staged.z1, r0, r1, j0, j1, avx2::stream_span);
        }
      }
    }
  }
  if (stream || stage) _mm_sfence();  // the streamed stores are visible before the caller signals completion
}

// ---- float16 B and C (gemm_packed_f16): converted in registers, F16C ---------------------------

#define NNXR_AVX2_F16C __attribute__((target("avx2,fma,f16c")))

// 16 floats (v0, v1) rounded to float16 (to nearest even, as model::float_to_half), lanes [0, n)
// stored at p.
NNXR_AVX2_F16C inline void store_half(uint16_t* p, __m256 v0, __m256 v1, int n) {
  const __m128i h0 = _mm256_cvtps_ph(v0, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m128i h1 = _mm256_cvtps_ph(v1, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  if (n == kCols) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), h0);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p + 8), h1);
    return;
  }
  alignas(32) uint16_t t[kCols];
  _mm_store_si128(reinterpret_cast<__m128i*>(t), h0);
  _mm_store_si128(reinterpret_cast<__m128i*>(t + 8), h1);
  std::memcpy(p, t, static_cast<size_t>(n) * sizeof(uint16_t));
}

template <bool Relu>
[[gnu::noinline]] NNXR_AVX2_F16C void store_tile_half(const __m256 (&res)[kPanelRows][2], const GemmOutF16& o, int64_t at, int rows, int cols) {
  for (int r = 0; r < rows; ++r) {
    store_half(o.C + at + r * o.ldc, res[r][0], res[r][1], cols);
    if constexpr (Relu)
      store_half(o.relu + at + r * o.ldc, _mm256_max_ps(res[r][0], _mm256_setzero_ps()), _mm256_max_ps(res[r][1], _mm256_setzero_ps()), cols);
  }
}

// As tile() with B in float16 (16 readable columns per row).
template <bool Relu>
NNXR_AVX2_F16C void tile_half(const float* a, const uint16_t* b, int64_t ldb, int64_t K, const float* bias, const GemmOutF16& o, int64_t at,
                              int rows, int cols) {
  __m256 c00 = _mm256_set1_ps(bias[0]), c10 = _mm256_set1_ps(bias[1]), c20 = _mm256_set1_ps(bias[2]);
  __m256 c30 = _mm256_set1_ps(bias[3]), c40 = _mm256_set1_ps(bias[4]), c50 = _mm256_set1_ps(bias[5]);
  __m256 c01 = c00, c11 = c10, c21 = c20, c31 = c30, c41 = c40, c51 = c50;
  for (int64_t k = 0; k < K; ++k, a += kPanelRows, b += ldb) {
    const __m256 b0 = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b)));
    const __m256 b1 = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + 8)));
    fma_row<2>(a[0], b0, b1, c00, c01);
    fma_row<2>(a[1], b0, b1, c10, c11);
    fma_row<2>(a[2], b0, b1, c20, c21);
    fma_row<2>(a[3], b0, b1, c30, c31);
    fma_row<2>(a[4], b0, b1, c40, c41);
    fma_row<2>(a[5], b0, b1, c50, c51);
  }
  const __m256 res[kPanelRows][2] = {{c00, c01}, {c10, c11}, {c20, c21}, {c30, c31}, {c40, c41}, {c50, c51}};
  store_tile_half<Relu>(res, o, at, rows, cols);
}

// Columns [0, w) of float16 B (w <= 16) as a contiguous [K][16] panel, zero-padded.
void copy_columns_half(const uint16_t* B, int64_t ldb, int64_t K, int64_t w, uint16_t* dst) {
  for (int64_t k = 0; k < K; ++k, B += ldb, dst += kCols) {
    std::memcpy(dst, B, static_cast<size_t>(w) * sizeof(uint16_t));
    std::memset(dst + w, 0, static_cast<size_t>(kCols - w) * sizeof(uint16_t));
  }
}

template <bool Relu>
void run_half(const PackedA& a, int64_t p0, int64_t p1, const uint16_t* B, int64_t ldb, int64_t n0, int64_t n1, const GemmOutF16& out) {
  const int64_t K = a.K;
  auto one = [&](int64_t p, int64_t j, int cols, const uint16_t* src, int64_t ld) {
    const int64_t m0 = p * kPanelRows;
    const int rows = static_cast<int>(std::min<int64_t>(kPanelRows, a.M - m0));
    float bias[kPanelRows] = {};
    if (out.bias)
      for (int r = 0; r < rows; ++r) bias[r] = out.bias[m0 + r];
    tile_half<Relu>(a.panel(p), src, ld, K, bias, out, m0 * out.ldc + j, rows, cols);
  };
  // The outputs of the tile of panel p at columns [j, j + w), fetched for its stores a tile ahead
  // (avx2::fetch_rows_for_store).
  auto ahead = [&](int64_t p, int64_t j, int64_t w) {
    const int64_t r0 = p * kPanelRows, r1 = std::min(a.M, (p + 1) * kPanelRows);
    avx2::fetch_rows_for_store<uint16_t>(out.C, out.relu, nullptr, out.ldc, r0, r1, j, w);
  };
  thread_local std::vector<uint16_t, CacheAligned<uint16_t>> copied;
  auto copy_tile = [&](int64_t j, int64_t w) {
    copied.resize(static_cast<size_t>(K * kCols));
    copy_columns_half(B + j, ldb, K, w, copied.data());
    return copied.data();
  };
  const int64_t tiles = (n1 - n0 + kCols - 1) / kCols;
  if (2 * tiles < p1 - p0) {
    for (int64_t j = n0; j < n1; j += kCols) {
      const int64_t w = std::min<int64_t>(kCols, n1 - j);
      const uint16_t* bt = copy_tile(j, w);
      for (int64_t p = p0; p < p1; ++p) {
        if (p + 1 < p1) ahead(p + 1, j, w);
        one(p, j, static_cast<int>(w), bt, kCols);
      }
    }
    return;
  }
  const int64_t block = std::clamp<int64_t>((int64_t{128} << 10) / (std::max<int64_t>(K, 1) * 2) / kCols * kCols, kCols, 2048);
  for (int64_t j0 = n0; j0 < n1; j0 += block) {
    const int64_t j1 = std::min(n1, j0 + block);
    const int64_t full_end = j0 + (j1 - j0) / kCols * kCols;
    const uint16_t* bt = full_end < j1 ? copy_tile(full_end, j1 - full_end) : nullptr;
    for (int64_t p = p0; p < p1; ++p)
      for (int64_t j = j0; j < j1; j += kCols) {
        if (j + kCols < j1) ahead(p, j + kCols, std::min<int64_t>(kCols, j1 - j - kCols));
        if (j < full_end) one(p, j, kCols, B + j, ldb);
        else one(p, j, static_cast<int>(j1 - j), bt, kCols);
      }
  }
}

}  // namespace

void gemm_packed(const PackedA& a, int64_t p0, int64_t p1, const float* B, int64_t ldb, int64_t n0, int64_t n1, const GemmOut& out) {
  if (p0 >= p1 || n0 >= n1) return;
  if (cpu_has_avx512()) return gemm_packed_avx512(a, p0, p1, B, ldb, n0, n1, out);
  const Epilogue* e = out.act ? out.act->epi : nullptr;
  avx2::with_in_reg(e, [&]<InReg Act>() { run<Act>(a, p0, p1, B, ldb, n0, n1, out); });
}

void gemm_packed_f16(const PackedA& a, int64_t p0, int64_t p1, const uint16_t* B, int64_t ldb, int64_t n0, int64_t n1, const GemmOutF16& out) {
  if (p0 >= p1 || n0 >= n1) return;
  if (cpu_has_avx512()) return gemm_packed_f16_avx512(a, p0, p1, B, ldb, n0, n1, out);
  if (out.relu) run_half<true>(a, p0, p1, B, ldb, n0, n1, out);
  else run_half<false>(a, p0, p1, B, ldb, n0, n1, out);
}
#else
// Never called: gemm_packed_available() is false on other architectures.
void gemm_packed(const PackedA&, int64_t, int64_t, const float*, int64_t, int64_t, int64_t, const GemmOut&) {}
void gemm_packed_f16(const PackedA&, int64_t, int64_t, const uint16_t*, int64_t, int64_t, int64_t, const GemmOutF16&) {}
#endif

// Each *_wins is false where the other instruction set runs.
bool lanes_kernel_wins(int64_t M, int64_t N, int64_t K) { return gemm_lanes_wins(M, N, K) || gemm_lanes_avx2_wins(M, N, K); }
int64_t lanes_kernel_rows() { return cpu_has_avx512() ? kLaneRows : kLaneRowsAvx2; }
void lanes_kernel(const PackedA& a, int64_t b0, int64_t b1, const float* B, int64_t ldb, int64_t n0, int64_t n1, const GemmOut& out) {
  if (cpu_has_avx512()) return gemm_lanes(a, b0, b1, B, ldb, n0, n1, out);
  gemm_lanes_avx2(a, b0, b1, B, ldb, n0, n1, out);
}

}  // namespace nnxr::runtime
