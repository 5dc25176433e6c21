// Internal: the per-instruction-set bodies of gemm_packed (compute.h), chosen by active_isa().
#pragma once

#include <cstdint>
#include <mutex>
#include <vector>

#include "model/runtime/compute.h"
#include "model/runtime/value.h"

namespace nnxr::runtime {

// PackedA's rows for gemm_lanes: blocks of 32 rows, k-major (data[(b * K + k) * 32 + r], rows
// past M zero), made once from the panels at the first gemm_lanes call; rows16: the same in
// blocks of 16 rows for gemm_lanes_avx2.
struct LaneCache {
  std::once_flag once;
  std::vector<float, CacheAligned<float>> data;
  std::once_flag once16;
  std::vector<float, CacheAligned<float>> rows16;
};

// gemm_lanes on AVX2 (gemm_lanes_avx2.cpp): row blocks [b0, b1) of 16 (rows [16 b0, min(16 b1,
// M))), columns and outputs as gemm_lanes, in tiles of 16 rows x 4-6 columns. Only where
// gemm_lanes_avx2_wins() (false where the AVX-512 path runs).
constexpr int64_t kLaneRowsAvx2 = 16;
bool gemm_lanes_avx2_wins(int64_t M, int64_t N, int64_t K);
void gemm_lanes_avx2(const PackedA& a, int64_t b0, int64_t b1, const float* B, int64_t ldb, int64_t n0, int64_t n1, const GemmOut& out);

// The share of the lanes that n rows or columns fill in tiles of `tile` (the measure of
// gemm_lanes_wins and gemm_lanes_avx2_wins).
inline double tile_fill(int64_t n, int64_t tile) { return static_cast<double>(n) / static_cast<double>((n + tile - 1) / tile * tile); }

// The lanes kernel of the active instruction set, gemm_lanes (AVX-512) or gemm_lanes_avx2 (the
// AVX2 path): whether it takes M x N x K, the rows of its row blocks, and the product over row
// blocks [b0, b1) with gemm_lanes' arguments.
bool lanes_kernel_wins(int64_t M, int64_t N, int64_t K);
int64_t lanes_kernel_rows();
void lanes_kernel(const PackedA& a, int64_t b0, int64_t b1, const float* B, int64_t ldb, int64_t n0, int64_t n1, const GemmOut& out);

// y staged by both gemm_packed bodies where it is not streamed as written and the epilogue keeps
// its own output (nothing reads y during the run), and SiLU's sigmoid with it (only the fused
// product reads that): `rows` rows of this thread's buffer for y, and as many after them for the
// sigmoid when `sigmoid` (else z1 is null), ldc apart as y's so that the tiles' stores are
// unchanged. flush_staged streams rows [r0, r1) of an output's columns [c0, c1) from its staged
// rows (row r0 in the first) to dst (ldc apart) with stream_span (avx2:: or avx512::).
struct Staging {
  float* y = nullptr;
  float* z1 = nullptr;
};
inline Staging staging_rows(int64_t rows, int64_t ldc, bool sigmoid) {
  thread_local std::vector<float, CacheAligned<float>> staged;
  staged.resize(static_cast<size_t>((sigmoid ? 2 : 1) * rows * ldc));
  return {staged.data(), sigmoid ? staged.data() + rows * ldc : nullptr};
}
template <class StreamSpan>
void flush_staged(float* dst, int64_t ldc, const float* staged, int64_t r0, int64_t r1, int64_t c0, int64_t c1, StreamSpan&& stream_span) {
  for (int64_t r = r0; r < r1; ++r) stream_span(dst + r * ldc + c0, staged + (r - r0) * ldc + c0, c1 - c0);
}

// Add's addend (ldc floats a row) for the tile at rows [r0, r1), columns [c, c + w): its lines
// fetched into L1, a tile ahead of the epilogue that reads them. Row by row, ldc apart, they are a
// stream no hardware prefetcher follows, and in a model the addend (a residual, written a few
// layers back) has left L2: the epilogue stalled on each row. ResNet-50 at 1 thread, one binary
// with the fetch switched on and off, medians of 8 profiles in alternating order (Intel Xeon): on
// AVX-512 its twelve 1x1 layers that add the residual 14.20 -> 13.73 ms a run and its four
// downsampling ones 8.10 -> 7.62, the other layers level; on AVX2 16.46 -> 16.25 and 9.55 -> 9.44
// (6 profiles). (In gemm_lanes, the 7x7 layers, the same fetch changed nothing: not there.)
inline void fetch_addend(const float* addend, int64_t ldc, int64_t r0, int64_t r1, int64_t c, int64_t w) {
  for (int64_t r = r0; r < r1; ++r) {
    const char* row = reinterpret_cast<const char*>(addend + r * ldc + c);
    for (int64_t b = 0; b < w * 4; b += 64) __builtin_prefetch(row + b, 0, 3);
    __builtin_prefetch(row + w * 4 - 1, 0, 3);
  }
}

void gemm_packed_avx512(const PackedA& a, int64_t p0, int64_t p1, const float* B, int64_t ldb, int64_t n0, int64_t n1, const GemmOut& out);
void gemm_packed_avx512(const PackedA& a, int64_t p0, int64_t p1, const PackedB& b, int64_t n0, int64_t n1, const GemmOut& out);
// pack_a's full panels on AVX-512: rows [0, 6 x panels) of A (lda apart), K columns, into dst as
// `panels` panels of [K][6].
void pack_panels_avx512(const float* A, int64_t lda, int64_t K, int64_t panels, float* dst);
void gemm_packed_f16_avx512(const PackedA& a, int64_t p0, int64_t p1, const uint16_t* B, int64_t ldb, int64_t n0, int64_t n1,
                            const GemmOutF16& out);

}  // namespace nnxr::runtime
