// gemm_lanes on AVX2: products with few columns (the 7x7 and 14x14 planes of the last stages)
// with 16 rows in the lanes of two 8-float vectors x 4 to 6 columns, the columns' tiles sized so
// that they cover the plane exactly (49 = 4 x 6 + 5 x 5, 196 = 31 x 6 + 2 x 5), where
// gemm_packed's 16-column tiles leave 49 columns as 3 tiles and a 1-column tile that costs
// nearly as much as a whole one. K is taken in chunks whose rows of A stay in L1 while every
// column tile passes over them (B read in place, each element broadcast); the sums between
// chunks are kept in lanes order in a per-thread buffer, so that a tile is transposed into rows
// once, with the bias added first and the epilogue applied at the last chunk, each element summed
// in the same order as gemm_packed sums it.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "model/runtime/avx2.h"
#include "model/runtime/compute.h"
#include "model/runtime/gemm_packed.h"

namespace nnxr::runtime {

#if defined(__x86_64__) || defined(__i386__)
namespace {

#define NNXR_AVX2 __attribute__((target("avx2,fma")))

using avx2::ActParams;
using avx2::InReg;

constexpr int kRows = kLaneRowsAvx2;  // rows of a tile: two 8-float vectors
constexpr int kMaxCols = 6;     // 12 accumulators, 2 rows of A and a broadcast: 15 registers
constexpr int64_t kChunk = 64;  // rows of K per pass: 4 KB of A (16 rows each) and 64 rows of B stay in L1

struct Out {
  float* y;  // C at the tile's first element
  float* z1;
  float* z2;
  const float* addend;
  int64_t ld;
  ActParams p;
};

// Rows [0, rows) (of 16) x NC columns of a finished tile (acc: 16 rows a column) stored as rows of NC floats at y + r ld, with the epilogue computed on the transposed
// rows (the same function of each element). Out of line: keeps the accumulators in registers in
// the product loop.
template <InReg Act, int NC>
[[gnu::noinline]] NNXR_AVX2 void store_rows(const float* acc, const Out& o, int rows) {
  const __m256 zero = _mm256_setzero_ps();
  for (int v = 0; v < 2 && 8 * v < rows; ++v) {
    __m256 in[8], out[8];
    for (int j = 0; j < 8; ++j) in[j] = j < NC ? _mm256_load_ps(acc + j * kRows + 8 * v) : zero;
    avx2::transpose8(in, out);
    const int n = std::min(8, rows - 8 * v);
    for (int i = 0; i < n; ++i) {
      const int64_t off = (8 * v + i) * o.ld;
      avx2::store_first(o.y + off, out[i], zero, NC);
      if constexpr (Act != InReg::None)
        avx2::store_act<Act>(o.z1 + off, o.z2 ? o.z2 + off : nullptr, o.addend ? o.addend + off : nullptr, out[i], zero, o.p, NC);
    }
  }
}

// One tile over a chunk of K (klen rows): a = the block's 16 rows, k-major (16 a step), b = B at
// the tile's first column (row stride ldb). The sums start at `init` (16 floats a column, lanes
// order) and end in `keep` (same order) unless `o` is given: then they are stored as rows.
template <InReg Act, int NC>
NNXR_AVX2 void lane_tile(const float* a, const float* b, int64_t ldb, int64_t klen, const float* init, float* keep, const Out* o, int rows,
                         int64_t ahead) {
  __m256 acc[kMaxCols][2];
#pragma GCC unroll 6
  for (int j = 0; j < NC; ++j) {
    acc[j][0] = _mm256_loadu_ps(init + j * kRows);
    acc[j][1] = _mm256_loadu_ps(init + j * kRows + 8);
  }
  for (int64_t k = 0; k < klen; ++k, a += kRows, b += ldb) {
    if (ahead) _mm_prefetch(reinterpret_cast<const char*>(a + ahead), _MM_HINT_T0);
    const __m256 a0 = _mm256_loadu_ps(a), a1 = _mm256_loadu_ps(a + 8);
#pragma GCC unroll 6
    for (int j = 0; j < NC; ++j) {
      const __m256 bj = _mm256_broadcast_ss(b + j);
      acc[j][0] = _mm256_fmadd_ps(a0, bj, acc[j][0]);
      acc[j][1] = _mm256_fmadd_ps(a1, bj, acc[j][1]);
    }
  }
  // The sums leave through memory (keep, or a local copy for store_rows): passing the array
  // itself out would make the compiler keep it in memory throughout the loop.
  alignas(32) float done[kMaxCols * kRows];
  float* to = o ? done : keep;
#pragma GCC unroll 6
  for (int j = 0; j < NC; ++j) {
    _mm256_storeu_ps(to + j * kRows, acc[j][0]);
    _mm256_storeu_ps(to + j * kRows + 8, acc[j][1]);
  }
  if (o) store_rows<Act, NC>(done, *o, rows);
}

template <InReg Act>
NNXR_AVX2 void tile_nc(int nc, const float* a, const float* b, int64_t ldb, int64_t klen, const float* init, float* keep, const Out* o, int rows,
                       int64_t ahead) {
  switch (nc) {
    case 6: return lane_tile<Act, 6>(a, b, ldb, klen, init, keep, o, rows, ahead);
    case 5: return lane_tile<Act, 5>(a, b, ldb, klen, init, keep, o, rows, ahead);
    case 4: return lane_tile<Act, 4>(a, b, ldb, klen, init, keep, o, rows, ahead);
    case 3: return lane_tile<Act, 3>(a, b, ldb, klen, init, keep, o, rows, ahead);
    case 2: return lane_tile<Act, 2>(a, b, ldb, klen, init, keep, o, rows, ahead);
    default: return lane_tile<Act, 1>(a, b, ldb, klen, init, keep, o, rows, ahead);
  }
}

// Where rows [16 rb, 16 rb + 16) of A start in chunk k0 (of klen rows of K) of rows16's layout:
// chunk after chunk, each holding every block's rows k-major, so that the pass over one chunk
// reads A in one sequential stream.
int64_t chunk_at(int64_t blocks, int64_t rb, int64_t k0, int64_t klen) { return (k0 * blocks + rb * klen) * kRows; }

// PackedA's rows in blocks of 16 (rows past M zero) in chunks of K (chunk_at), made once from the
// panels at the first call.
const float* rows16(const PackedA& a) {
  LaneCache& c = *a.lanes;
  std::call_once(c.once16, [&] {
    const int64_t blocks = (a.M + kRows - 1) / kRows, K = a.K;
    c.rows16.assign(static_cast<size_t>(blocks * K * kRows), 0.f);
    for (int64_t m = 0; m < a.M; ++m) {
      const float* src = a.panel(m / kPanelRows) + m % kPanelRows;
      for (int64_t k0 = 0; k0 < K; k0 += kChunk) {
        const int64_t klen = std::min(kChunk, K - k0);
        float* dst = c.rows16.data() + chunk_at(blocks, m / kRows, k0, klen) + m % kRows;
        for (int64_t k = 0; k < klen; ++k) dst[k * kRows] = src[(k0 + k) * kPanelRows];
      }
    }
  });
  return c.rows16.data();
}

// Columns [0, n) in tiles of at most 6, as even as they go (49: 6 6 6 6 5 5 5 5 5).
int tile_width(int64_t n, int64_t t) {
  const int64_t tiles = (n + kMaxCols - 1) / kMaxCols;
  return static_cast<int>(n / tiles + (t < n % tiles ? 1 : 0));
}

template <InReg Act>
void run(const PackedA& a, int64_t b0, int64_t b1, const float* B, int64_t ldb, int64_t n0, int64_t n1, const GemmOut& out) {
  const int64_t K = a.K, N = n1 - n0;
  const float* A = rows16(a);
  const EpilogueOut* act = out.act;
  float* const z1 = Act == InReg::None ? nullptr : act->z1 + out.act_offset;
  float* const z2 = Act == InReg::SiLU ? act->z2 + out.act_offset : nullptr;
  const float* const addend = Act == InReg::Add ? act->addend + out.act_offset : nullptr;
  Out o{nullptr, nullptr, nullptr, nullptr, out.ldc, avx2::act_params(act ? act->epi : nullptr)};
  const int64_t blocks = (a.M + kRows - 1) / kRows, tiles = (N + kMaxCols - 1) / kMaxCols;
  const int64_t r0 = b0, r1 = std::min(b1, blocks);
  // Per row block: the bias of its 16 rows, repeated for each column (the first chunk's start),
  // and the sums between chunks, 16 floats a column.
  thread_local std::vector<float, CacheAligned<float>> bias, sums;
  bias.assign(static_cast<size_t>((r1 - r0) * kRows * kMaxCols), 0.f);
  for (int64_t rb = r0; rb < r1; ++rb)
    for (int64_t r = 0; r < kRows && rb * kRows + r < a.M; ++r)
      for (int j = 0; j < kMaxCols; ++j) bias[static_cast<size_t>(((rb - r0) * kMaxCols + j) * kRows + r)] = out.bias ? out.bias[rb * kRows + r] : 0.f;
  if (K > kChunk) sums.resize(static_cast<size_t>((r1 - r0) * N * kRows));
  for (int64_t k0 = 0; k0 < K; k0 += kChunk) {
    const int64_t klen = std::min(kChunk, K - k0);
    const bool last = k0 + klen == K;
    for (int64_t rb = r0; rb < r1; ++rb) {
      const float* ab = A + chunk_at(blocks, rb, k0, klen);
      const int rows = static_cast<int>(std::min<int64_t>(kRows, a.M - rb * kRows));
      float* keep = K > kChunk ? sums.data() + (rb - r0) * N * kRows : nullptr;  // (one chunk: no sums between chunks)
      int64_t j = 0;
      for (int64_t t = 0; t < tiles; ++t) {
        const int nc = tile_width(N, t);
        // The first tile of a block brings the next block's rows of A into L1 (they follow).
        const int64_t ahead = t == 0 && rb + 1 < r1 ? klen * kRows : 0;
        const float* init = k0 == 0 ? bias.data() + (rb - r0) * kMaxCols * kRows : keep + j * kRows;
        const float* bt = B + k0 * ldb + n0 + j;
        if (last) {
          const int64_t at = rb * kRows * out.ldc + n0 + j;
          o.y = out.C + at;
          o.z1 = z1 ? z1 + at : nullptr;
          o.z2 = z2 ? z2 + at : nullptr;
          o.addend = addend ? addend + at : nullptr;
          // The next tile's outputs (the next block's first, after the last tile), fetched for
          // its stores (avx2::fetch_rows_for_store).
          const int64_t nb = t + 1 < tiles ? rb : rb + 1;
          if (nb < r1) {
            const int64_t nj = n0 + (t + 1 < tiles ? j + nc : 0), nw = tile_width(N, t + 1 < tiles ? t + 1 : 0);
            const int64_t q0 = nb * kRows, q1 = std::min(a.M, q0 + kRows);
            avx2::fetch_rows_for_store<float>(out.C, z1, z2, out.ldc, q0, q1, nj, nw);
          }
          tile_nc<Act>(nc, ab, bt, ldb, klen, init, nullptr, &o, rows, ahead);
        } else {
          tile_nc<Act>(nc, ab, bt, ldb, klen, init, keep + j * kRows, nullptr, rows, ahead);
        }
        j += nc;
      }
    }
  }
}

}  // namespace

bool gemm_lanes_avx2_wins(int64_t M, int64_t N, int64_t K) {
  if (cpu_has_avx512() || !cpu_has_avx2_fma() || M < kRows || N <= 0 || K <= 0) return false;
  // The share of lanes that N columns fill in gemm_packed's 16-column tiles and its 6-row panels,
  // against the lanes tiling's (4-6 columns: every lane from 8 columns up; rows in blocks of 16),
  // less its transposing stores (about 4 / K of a tile's time); it must win by 10%. Measured on
  // AMD EPYC Zen 4 (bench_kernels big/ and lanes/, AVX2, thread CPU time, both tilings forced):
  // on 7x7 planes (49 columns in 64 lanes) the lanes win by 8-25% at K = 160-4608 and tie at
  // K = 192 with SiLU; on 14x14 (196 in 208) they tie at K = 256-2304 and lose by 20% at
  // K = 112 with SiLU (three outputs stored 6 floats at a time), on 28x28 by 35%.
  if (N < 8 || K < 32) return false;
  const double lanes = tile_fill(M, kRows) * (1.0 - 4.0 / static_cast<double>(K));
  return lanes > 1.1 * tile_fill(N, 16) * tile_fill(M, kPanelRows);
}

void gemm_lanes_avx2(const PackedA& a, int64_t b0, int64_t b1, const float* B, int64_t ldb, int64_t n0, int64_t n1, const GemmOut& out) {
  if (b0 >= b1 || n0 >= n1) return;
  const Epilogue* e = out.act ? out.act->epi : nullptr;
  avx2::with_in_reg(e, [&]<InReg Act>() { run<Act>(a, b0, b1, B, ldb, n0, n1, out); });
}
#else
bool gemm_lanes_avx2_wins(int64_t, int64_t, int64_t) { return false; }
void gemm_lanes_avx2(const PackedA&, int64_t, int64_t, const float*, int64_t, int64_t, int64_t, const GemmOut&) {}
#endif

}  // namespace nnxr::runtime
