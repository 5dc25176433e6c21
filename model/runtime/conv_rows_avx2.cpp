// The stride-1 convolution from padded row bands (conv_rows) on AVX2 + FMA: the kernel
// conv_rows_avx512.cpp runs on AVX-512, with 8-float vectors. The banding and the row copies are
// the same: each band of output rows copies its input rows once into zero-padded rows, and a tile
// reads the taps of its outputs straight from them (no im2col matrix). AVX2 has 16 vector
// registers and no broadcast operand, so a tile is up to 6 output channels x 16 columns of one
// output row: 12 accumulators, the tap's two input vectors and one broadcast weight (a row's
// last 8 columns or fewer in one vector). With dilation (dh, dw) the tap reads row oh + ki * dh
// from column kj * dw on, as on AVX-512. M is split
// into blocks of as even a size as 6 allows (64: 6 x 9 and 5 x 2; 9: 5 and 4), each size a
// template instance. The sum starts at the bias and runs over (c, ki, kj) in the weights' order,
// as im2col's product does; the bias and the epilogue are applied on the way out. For 3 output
// channels or fewer a tile is all of them x 32, 48 or 64 columns (3 x 4 vectors, 2 x 6, 1 x 8);
// at stride 2 the taps come from the rows' even and odd halves, as on AVX-512.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "model/runtime/avx2.h"
#include "model/runtime/compute.h"
#include "model/runtime/conv_rows.h"
#include "model/runtime/kernel.h"
#include "model/runtime/value.h"

namespace nnxr::runtime {

#if defined(__x86_64__) || defined(__i386__)
namespace {

using avx2::ActParams;
using avx2::InReg;

constexpr int kMB = 6;                            // output channels per block: 6 x 2 vectors = 12 accumulators

using conv_rows_band::Out;
using conv_rows_band::Rows;

// M output channels in blocks of as even a size as kMB allows (a block of 2 has 4 accumulators,
// which wait on the multiply-add latency).
struct Blocks {
  int64_t count, base, extra;  // `extra` blocks of base + 1 channels, then blocks of base
  explicit Blocks(int64_t M) : count((M + kMB - 1) / kMB), base(M / std::max<int64_t>(1, count)), extra(M % std::max<int64_t>(1, count)) {}
  int64_t first(int64_t b) const { return b * base + std::min(b, extra); }
  int64_t size(int64_t b) const { return base + (b < extra ? 1 : 0); }
};

// One tile: MB output channels (weights a[k][kMB]) x columns [0, n) (n in (8 (V - 1), 8 V]) of
// the output row whose taps start at x (channel c's row ki at x + c * plane + ki * dh * Wp, tap
// kj at column kj * dw), stored at offset o of each output plane from channel m0 on, in V vectors
// of 8. A partial tile reads the padded rows past its columns (the next row, or the buffer's 16
// spare floats) and stores the first n. Up to 6 channels x 2 vectors (a row of 40 runs as 16 +
// 16 + 8), the tap's weight broadcast once per channel; or, for 3 channels or fewer, x up to 8
// vectors with the channels' weights broadcast once per tap and each input vector loaded once
// (3 x 4: 12 accumulators, 3 weights and the input vector fill the 16 registers).
template <InReg Act, int MB, int V>
__attribute__((target("avx2,fma"))) void tile(const Rows& d, const float* a, const float* x, int64_t plane, const float* bias, const Out& out,
                                              int64_t m0, int64_t o, int64_t n) {
  constexpr int kPairs = (V + 1) / 2;
  avx2::fetch_for_store<Act>(out.z1, out.z2, m0 * out.P + o + 2 * 8 * V, out.P, MB, kPairs);  // two tiles on (as on AVX-512)
  __m256 acc[MB][2 * kPairs];
#pragma GCC unroll 6
  for (int m = 0; m < MB; ++m)
#pragma GCC unroll 8
    for (int v = 0; v < 2 * kPairs; ++v) acc[m][v] = v < V ? _mm256_broadcast_ss(bias + m) : _mm256_setzero_ps();  // past V: past the n stored
  // One tap: input vectors at b, weights at a.
  const auto tap = [&](const float* b, const float* a) __attribute__((target("avx2,fma"), always_inline)) {
    if constexpr (V <= 2) {
      __m256 in[V];
#pragma GCC unroll 2
      for (int v = 0; v < V; ++v) in[v] = _mm256_loadu_ps(b + 8 * v);
#pragma GCC unroll 6
      for (int m = 0; m < MB; ++m) {
        const __m256 wm = _mm256_broadcast_ss(a + m);
#pragma GCC unroll 2
        for (int v = 0; v < V; ++v) acc[m][v] = _mm256_fmadd_ps(wm, in[v], acc[m][v]);
      }
    } else {
      __m256 w[MB];
#pragma GCC unroll 3
      for (int m = 0; m < MB; ++m) w[m] = _mm256_broadcast_ss(a + m);
#pragma GCC unroll 8
      for (int v = 0; v < V; ++v) {
        const __m256 in = _mm256_loadu_ps(b + 8 * v);
#pragma GCC unroll 3
        for (int m = 0; m < MB; ++m) acc[m][v] = _mm256_fmadd_ps(w[m], in, acc[m][v]);
      }
    }
  };
  const int64_t kh = d.kh, kw = d.kw, row = d.dh * d.Wp, dw = d.dw;
  if (kw == 3 && dw == 1) {
    // Three taps a step, as on AVX-512 (ResNet-50's 64 -> 64 on 56x56: 2.72 -> 2.46 ms,
    // super-resolution's 64 -> 64 on 224x224 40.2 -> 36.9, fns-candy's 16 -> 32 stride 2 on
    // 800x800 27.5 -> 20.1 in bench_kernels).
    const int64_t third = d.sw == 1 ? 2 : d.Wq;
    for (int64_t c = 0; c < d.C; ++c, x += plane)
#pragma GCC unroll 1
      for (int64_t ki = 0; ki < kh; ++ki, a += 3 * kMB) {
        const float* const b = x + ki * row;
        tap(b, a);
        tap(b + 1, a + kMB);
        tap(b + third, a + 2 * kMB);
      }
  } else if (d.sw == 1) {  // (the phase loop below, at stride 1, cost the 64 -> 64 3x3 layer a quarter)
    for (int64_t c = 0; c < d.C; ++c, x += plane)
      for (int64_t ki = 0; ki < kh; ++ki) {
        const float* b = x + ki * row;
        for (int64_t kj = 0; kj < kw; ++kj, b += dw, a += kMB) tap(b, a);
      }
  } else {
    for (int64_t c = 0; c < d.C; ++c, x += plane)
      for (int64_t ki = 0; ki < kh; ++ki)
        for (int64_t p = 0; p < d.sw; ++p) {
          const float* b = x + ki * row + p * d.Wq;
          for (int64_t t = conv_rows_band::phase_taps(d, p); t > 0; --t, b += dw, a += kMB) tap(b, a);
        }
  }
#pragma GCC unroll 6
  for (int m = 0; m < MB; ++m) {
    const int64_t at = (m0 + m) * out.P + o;
    // (y staged: see rows)
    float* const y = out.staged ? out.staged + (m0 + m) * out.staged_P + (o - out.staged_from) : out.y + at;
#pragma GCC unroll 4
    for (int j = 0; j < kPairs; ++j) {
      const int64_t left = n - 16 * j, i = at + 16 * j;
      if (left <= 0) break;
      if (left >= 16) avx2::store16(y + 16 * j, acc[m][2 * j], acc[m][2 * j + 1], out.stream);
      else avx2::store_first(y + 16 * j, acc[m][2 * j], acc[m][2 * j + 1], left);
      if constexpr (Act != InReg::None)
        avx2::store_act<Act>(out.z1 + i, out.z2 ? out.z2 + i : nullptr, out.addend ? out.addend + i : nullptr, acc[m][2 * j], acc[m][2 * j + 1],
                             out.ap, std::min<int64_t>(16, left));
    }
  }
}

// tile<Act, MB, V> for a block of mb in [1, kMB] output channels, in as few vectors (up to V) as
// hold the n columns.
template <InReg Act, int V, class... Args>
void tile_of(int64_t mb, int64_t n, const Args&... args) {
  if constexpr (V > 1)
    if (n <= 8 * (V - 1)) return tile_of<Act, V - 1>(mb, n, args...);
  if constexpr (V <= 2) {
    switch (mb) {
      case 1: return tile<Act, 1, V>(args..., n);
      case 2: return tile<Act, 2, V>(args..., n);
      case 3: return tile<Act, 3, V>(args..., n);
      case 4: return tile<Act, 4, V>(args..., n);
      case 5: return tile<Act, 5, V>(args..., n);
      default: return tile<Act, 6, V>(args..., n);
    }
  } else {
    switch (mb) {
      case 1: return tile<Act, 1, V>(args..., n);
      case 2: return tile<Act, 2, V>(args..., n);
      default: return tile<Act, 3, V>(args..., n);
    }
  }
}

// Vectors of 8 per tile for M output channels: 2 (6 x 16 columns), or for 3 channels or fewer 4,
// 6 and 8 (3 x 32, 2 x 48, 1 x 64).
int tile_vectors(int64_t M) { return M == 3 ? 4 : M == 2 ? 6 : M == 1 ? 8 : 2; }

template <class F>
void with_vectors(int v, F&& f) {
  switch (v) {
    case 4: return f.template operator()<4>();
    case 6: return f.template operator()<6>();
    case 8: return f.template operator()<8>();
    default: return f.template operator()<2>();
  }
}

// Output rows [r0, r1) of one image: x [C, H, W] -> out (weights wp[block][K][kMB], bias by block),
// in tiles of 8 V columns.
template <InReg Act, int V>
__attribute__((target("avx2,fma"))) void rows(const Rows& d, const Blocks& blocks, const float* x, const float* wp, const float* bias,
                                              const Out& out, int64_t r0, int64_t r1) {
  constexpr int64_t kCols = 8 * V;
  const int64_t K = d.C * d.kh * d.kw;
  const int64_t band = conv_rows_band::band_rows(d);
  thread_local std::vector<float, CacheAligned<float>> buf;
  // y, when the epilogue keeps its own output and y's rows are not whole aligned vectors, staged a
  // band at a time and streamed out (as on AVX-512).
  const bool stage = Act != InReg::None && !out.stream;
  for (int64_t b0 = r0; b0 < r1; b0 += band) {
    const int64_t b1 = std::min(r1, b0 + band), plane = conv_rows_band::fill_band(d, x, b0, b1, buf, avx2::split_row);
    const Out o = conv_rows_band::band_out(out, d.M, d.OW, b0, b1, stage);
    for (int64_t oh = b0; oh < b1; ++oh)
      for (int64_t b = 0; b < blocks.count; ++b) {
        const float* const a = wp + b * K * kMB;
        for (int64_t ow = 0; ow < d.OW; ow += kCols)
          tile_of<Act, V>(blocks.size(b), std::min(kCols, d.OW - ow), d, a, buf.data() + (oh - b0) * d.sh * d.Wp + ow, plane, bias + b * kMB, o,
                          blocks.first(b), oh * d.OW + ow);
      }
    conv_rows_band::flush_band(out, o, 0, d.M, avx2::stream_span);
  }
  if (out.stream || stage) _mm_sfence();  // the streamed y visible before the task completes
}

// ---- Lane tiles: 8 output channels in the lanes x up to 10 columns -------------------------
//
// conv_rows_avx512.cpp's lane tiles with 8-float vectors: a 3x3 layer at stride 1 (lane_tiles_apply)
// takes tiles of 8 output channels (their weights a vector a tap, from conv_rows' packing with
// R = 8) x NC <= 10 columns of one output row: 10 accumulators, the three taps' weight vectors and
// the broadcast fill 14 of the 16 registers. (In a copy of the loop, in cache, on AMD EPYC Zen 3:
// 8 x 10 at 68-73 % of peak; 8 x 12, all 16 registers, 52-58 %; 16 channels x 5 or 6 columns with
// the weights read from memory 64-70 %; the tiles below 43-55 %.) Each of the NC + 2 floats of
// a padded input row (c, ki) is broadcast once and multiplied into the up to three columns whose
// taps read it. A row is cut into tiles of as even a width as 10 allows (56: 2 x 10 + 4 x 9; 14:
// 7 + 7), each width a template instance. Stored through the 8 x 8 transpose, each element summed
// over (c, ki, kj) in the weights' order from the bias, as the tiles above and im2col's product.
constexpr int kLaneBlock = 8;
constexpr int kLaneCols = 10;
// A band's padded input rows, which every block of 8 channels reads again: a quarter of a Zen 3
// L2 (half of conv_rows_band's). With the half, the band left L2 and each tile's broadcasts
// waited on L3 (AMD EPYC Zen 3, bench_kernels, fastest of 8 runs in alternating order):
// super-resolution's 64 -> 64 on 224x224 77.7 -> 59.3 ms, fns-candy's on 196x196 61.9 -> 45.5,
// ResNet-50's on 56x56 4.50 -> 3.94 and 28x28 4.26 -> 3.11.
constexpr int64_t kLaneBandBytes = int64_t{1} << 17;

// Where a lane tile's channel 0, column 0 goes: its planes ld floats apart (y's ld_y apart).
struct LaneOut {
  float* y;
  float* z1;
  float* z2;
  const float* addend;
  int64_t ld, ld_y;
  ActParams ap;
};

// Channels [0, rows) x columns [0, NC) of a finished tile (acc[j]: column j's 8 channels) stored
// as rows of NC floats, the epilogue computed on the transposed rows. Out of line: keeps the
// accumulators in registers in the tile's loop.
template <InReg Act, int NC>
[[gnu::noinline]] __attribute__((target("avx2,fma"))) void store_lane_tile(const __m256 (&acc)[kLaneCols], const LaneOut& o, int rows) {
  const __m256 zero = _mm256_setzero_ps();
  __m256 in[8], lo[8], hi[8];  // columns 0-7 and 8-9 of each channel
#pragma GCC unroll 8
  for (int j = 0; j < 8; ++j) in[j] = j < NC ? acc[j] : zero;
  avx2::transpose8(in, lo);
#pragma GCC unroll 8
  for (int j = 0; j < 8; ++j) in[j] = j + 8 < NC ? acc[std::min(j + 8, kLaneCols - 1)] : zero;
  avx2::transpose8(in, hi);
  for (int r = 0; r < rows; ++r) {
    const int64_t off = r * o.ld;
    avx2::store_first(o.y + r * o.ld_y, lo[r], hi[r], NC);
    if constexpr (Act != InReg::None)
      avx2::store_act<Act>(o.z1 + off, o.z2 ? o.z2 + off : nullptr, o.addend ? o.addend + off : nullptr, lo[r], hi[r], o.ap, NC);
  }
}

template <InReg Act, int NC>
__attribute__((target("avx2,fma"))) void lane_tile(const float* a, const float* x, int64_t C, int64_t plane, int64_t Wp, const float* bias,
                                                   const LaneOut& o, int rows) {
  __m256 acc[kLaneCols];
  const __m256 b = _mm256_load_ps(bias);
#pragma GCC unroll 10
  for (int j = 0; j < kLaneCols; ++j) acc[j] = j < NC ? b : _mm256_setzero_ps();
  for (int64_t c = 0; c < C; ++c, x += plane)
#pragma GCC unroll 1
    for (int64_t ki = 0; ki < 3; ++ki, a += 3 * kLaneBlock) {
      const float* const in_row = x + ki * Wp;
      const __m256 w0 = _mm256_load_ps(a), w1 = _mm256_load_ps(a + kLaneBlock), w2 = _mm256_load_ps(a + 2 * kLaneBlock);
#pragma GCC unroll 12
      for (int j = 0; j < NC + 2; ++j) {
        const __m256 in = _mm256_broadcast_ss(in_row + j);
        if (j < NC) acc[j] = _mm256_fmadd_ps(w0, in, acc[j]);
        if (j >= 1 && j - 1 < NC) acc[j - 1] = _mm256_fmadd_ps(w1, in, acc[j - 1]);
        if (j >= 2) acc[j - 2] = _mm256_fmadd_ps(w2, in, acc[j - 2]);
      }
    }
  store_lane_tile<Act, NC>(acc, o, rows);
}

template <InReg Act>
void lane_tile_of(int nc, const float* a, const float* x, int64_t C, int64_t plane, int64_t Wp, const float* bias, const LaneOut& o, int rows) {
  switch (nc) {
    case 1: return lane_tile<Act, 1>(a, x, C, plane, Wp, bias, o, rows);
    case 2: return lane_tile<Act, 2>(a, x, C, plane, Wp, bias, o, rows);
    case 3: return lane_tile<Act, 3>(a, x, C, plane, Wp, bias, o, rows);
    case 4: return lane_tile<Act, 4>(a, x, C, plane, Wp, bias, o, rows);
    case 5: return lane_tile<Act, 5>(a, x, C, plane, Wp, bias, o, rows);
    case 6: return lane_tile<Act, 6>(a, x, C, plane, Wp, bias, o, rows);
    case 7: return lane_tile<Act, 7>(a, x, C, plane, Wp, bias, o, rows);
    case 8: return lane_tile<Act, 8>(a, x, C, plane, Wp, bias, o, rows);
    case 9: return lane_tile<Act, 9>(a, x, C, plane, Wp, bias, o, rows);
    default: return lane_tile<Act, 10>(a, x, C, plane, Wp, bias, o, rows);
  }
}

// Output rows [r0, r1) of one image x [C, H, W], channel blocks [blk0, blk1) (of 8), a band of
// rows at a time (its padded input rows copied once), block by block (a block's weights, K x 8
// floats, stay in L1 or L2 over the band), row by row. y staged a band at a time and streamed out
// where the epilogue keeps its own output (nothing reads y during the run).
template <InReg Act>
__attribute__((target("avx2,fma"))) void lane_rows(const Rows& d, const float* x, const float* wp, const float* bias, const Out& out, int64_t r0,
                                                   int64_t r1, int64_t blk0, int64_t blk1) {
  const int64_t K = d.C * 9, band = conv_rows_band::band_rows(d, kLaneBandBytes);
  const int64_t tiles = (d.OW + kLaneCols - 1) / kLaneCols, base = d.OW / tiles, wider = d.OW % tiles;  // `wider` tiles of base + 1
  thread_local std::vector<float, CacheAligned<float>> buf;
  const bool stage = Act != InReg::None;
  for (int64_t b0 = r0; b0 < r1; b0 += band) {
    const int64_t b1 = std::min(r1, b0 + band), plane = conv_rows_band::fill_band(d, x, b0, b1, buf, avx2::split_row);
    const Out o = conv_rows_band::band_out(out, d.M, d.OW, b0, b1, stage);
    for (int64_t blk = blk0; blk < blk1; ++blk) {
      const int rows = static_cast<int>(std::min<int64_t>(kLaneBlock, d.M - blk * kLaneBlock));
      const float* const a = wp + blk * K * kLaneBlock;
      for (int64_t oh = b0; oh < b1; ++oh)
        for (int64_t t = 0, ow = 0; t < tiles; ++t) {
          const int nc = static_cast<int>(base + (t < wider ? 1 : 0));
          const int64_t at = blk * kLaneBlock * out.P + oh * d.OW + ow;
          LaneOut lo{out.y + at,
                     out.z1 ? out.z1 + at : nullptr,
                     out.z2 ? out.z2 + at : nullptr,
                     out.addend ? out.addend + at : nullptr,
                     out.P,
                     out.P,
                     out.ap};
          if (o.staged) {
            lo.y = o.staged + blk * kLaneBlock * o.staged_P + oh * d.OW + ow - o.staged_from;
            lo.ld_y = o.staged_P;
          }
          // The next tile's outputs (along the row, else the next row's first), fetched for its
          // stores (avx2::fetch_rows_for_store: the tile writes a few columns of 8 planes). The
          // SqueezeNet 1.1 models, one binary switched run by run on AMD EPYC Zen 3: 0.93-0.96x
          // the time at 1 and 2 threads; ultraface and yunet level.
          if (const bool along = t + 1 < tiles; along || oh + 1 < b1) {
            const int64_t next = along ? oh * d.OW + ow + nc : (oh + 1) * d.OW;
            const int64_t w = along ? base + (t + 1 < wider ? 1 : 0) : base + (wider > 0 ? 1 : 0), m0 = blk * kLaneBlock;
            avx2::fetch_rows_for_store<float>(o.staged ? nullptr : out.y, out.z1, out.z2, out.P, m0, m0 + rows, next, w);
          }
          lane_tile_of<Act>(nc, a, buf.data() + (oh - b0) * d.Wp + ow, d.C, plane, d.Wp, bias + blk * kLaneBlock, lo, rows);
          ow += nc;
        }
    }
    conv_rows_band::flush_band(out, o, blk0 * kLaneBlock, std::min(d.M, blk1 * kLaneBlock), avx2::stream_span);  // this task's channels
  }
  if (stage) _mm_sfence();  // the streamed y visible before the task completes
}

}  // namespace

void conv_rows_avx2(const ConvGeom& g, const float* X, const float* W, const float* B, float* Y, ThreadPool& pool, const EpilogueOut& act) {
  const Rows d = conv_rows_band::rows_of(g);
  const int64_t P = d.OH * d.OW, K = d.C * d.kh * d.kw;
  if (P == 0 || g.N == 0 || d.M == 0) return;
  // Weights as [block][K][kMB] (k in W's order: c, ki, kj), zero past the block's size; the bias
  // as [block][kMB].
  const Blocks blocks(d.M);
  std::vector<float, CacheAligned<float>> wp(static_cast<size_t>(blocks.count * K * kMB), 0.f), bias(static_cast<size_t>(blocks.count * kMB), 0.f);
  const std::vector<int64_t> order = conv_rows_band::tap_order(d);
  for (int64_t b = 0; b < blocks.count; ++b)
    for (int64_t i = 0; i < blocks.size(b); ++i) {
      const int64_t m = blocks.first(b) + i;
      if (B) bias[static_cast<size_t>(b * kMB + i)] = B[m];
      for (int64_t k0 = 0; k0 < K; k0 += d.kw)
        for (int64_t j = 0; j < d.kw; ++j) wp[static_cast<size_t>((b * K + k0 + j) * kMB + i)] = W[m * K + k0 + order[static_cast<size_t>(j)]];
    }
  const ActParams ap = avx2::act_params(act.epi);
  const int64_t flops_per_row = 2 * d.M * K * d.OW;
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 21) / std::max<int64_t>(1, flops_per_row));
  avx2::with_in_reg(act.epi, [&]<InReg Act>() {
    with_vectors(tile_vectors(d.M), [&]<int V>() {
      pool.parallel_for(g.N * d.OH, grain, [&](int64_t b, int64_t e) {
        conv_rows_band::image_rows<Act>(d, b, e, Y, act, ap, [&](int64_t n, int64_t r0, int64_t r1, const Out& out) {
          rows<Act, V>(d, blocks, X + n * d.C * d.H * d.W, wp.data(), bias.data(), out, r0, r1);
        });
      });
    });
  });
}

void conv_lanes_avx2(const ConvGeom& g, const float* X, const float* wp, const float* bias, float* Y, ThreadPool& pool, const EpilogueOut& act) {
  const Rows d = conv_rows_band::rows_of(g);
  if (d.OH * d.OW == 0 || g.N == 0) return;
  const ActParams ap = avx2::act_params(act.epi);
  const int64_t blocks = (d.M + kLaneBlock - 1) / kLaneBlock, image_rows = g.N * d.OH;
  const int64_t flops_per_row = 2 * blocks * kLaneBlock * d.C * 9 * d.OW;
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 21) / std::max<int64_t>(1, flops_per_row));
  // Split by rows, or by channel blocks (each task all the rows) where there are fewer rows than
  // 8 a thread, as on AVX-512.
  const bool by_blocks = pool.threads() > 1 && image_rows < 8 * pool.threads() && blocks >= 2 * pool.threads();
  avx2::with_in_reg(act.epi, [&]<InReg Act>() {
    if (by_blocks) {
      pool.parallel_for(blocks, 1, [&](int64_t b, int64_t e) {
        conv_rows_band::image_rows<Act>(d, 0, image_rows, Y, act, ap, [&](int64_t n, int64_t r0, int64_t r1, const Out& out) {
          lane_rows<Act>(d, X + n * d.C * d.H * d.W, wp, bias, out, r0, r1, b, e);
        });
      });
      return;
    }
    pool.parallel_for(image_rows, grain, [&](int64_t b, int64_t e) {
      conv_rows_band::image_rows<Act>(d, b, e, Y, act, ap, [&](int64_t n, int64_t r0, int64_t r1, const Out& out) {
        lane_rows<Act>(d, X + n * d.C * d.H * d.W, wp, bias, out, r0, r1, 0, blocks);
      });
    });
  });
}
#else
// Never called: conv_rows_applies() is false on other architectures.
void conv_rows_avx2(const ConvGeom&, const float*, const float*, const float*, float*, ThreadPool&, const EpilogueOut&) {}

void conv_lanes_avx2(const ConvGeom&, const float*, const float*, const float*, float*, ThreadPool&, const EpilogueOut&) {}
#endif

}  // namespace nnxr::runtime
