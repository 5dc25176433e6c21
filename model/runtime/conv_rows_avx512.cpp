// Stride-1 2-D convolution without a column matrix, on AVX-512 (an implicit GEMM). At stride 1
// the im2col row of tap (c, ki, kj) over one output row is input row oh + ki of channel c read
// from column kj on: so each band of output rows copies its input rows once into zero-padded
// rows (left and right padding in the row, missing rows as zeros), and the tile kernel reads the
// taps of 32 or 48 outputs straight from them. A tile holds R output channels x 32 columns of
// one output row in 2R accumulators (R from 4, 6, 8, 9 and 12, the one that wastes fewest rows
// of M; for R = 8, 48 columns in 24), starting at the bias; the sum runs over (c, ki, kj) in the
// weights' order, as im2col's product does, and the bias and the epilogue are applied on the way
// out. On AVX2 + FMA, conv_rows runs conv_rows_avx2 (conv_rows_avx2.cpp): the same bands, tiles
// of up to 6 x 16.
// With dilation (dh, dw) the tap reads row oh + ki * dh from column kj * dw on. Rows under 56
// columns (UltraFace's 30x40 heads, CIFAR's 28x28) end in a tile of one vector when 16 columns
// or fewer are left (40: 32 + 8). For 3 output channels or fewer a tile is all of them x 80 or 96
// columns (3 x 5 vectors, 2 x 6, 1 x 6), not a panel of 4 rows x 32 of which 1-3 are used: so
// fns-candy's 9x9 16 -> 3 output layer on 720x720 (K = 1296; K may reach 2592 for them) no
// longer writes and reads a 1296 x 518400 column matrix for a product of 3 rows. At stride 2 each
// padded row is copied as its even columns then its odd ones (conv_rows.h), and a tile reads the
// taps of even kj from the first half and of odd kj from the second (the weights in that order).
//
// On super-resolution's 64 -> 64 and 64 -> 32 3x3 layers at 224x224, im2col wrote and read back
// a 576-row column matrix per block (16% of the model's time) and the 32 and 9 channel layers
// went through gemm_lanes' transposing stores; here neither exists.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

#include "model/runtime/avx512.h"
#include "model/runtime/compute.h"
#include "model/runtime/conv_rows.h"
#include "model/runtime/kernel.h"
#include "model/runtime/lanes_store.h"
#include "model/runtime/value.h"

namespace nnxr::runtime {

namespace {
constexpr int64_t kTileCols = 32;                // two vectors of 16 columns
constexpr int64_t kLaneBlock = 16;               // output channels a lane tile holds (AVX2: 8)
using conv_rows_band::kBandBytes;
}  // namespace

// Lane tiles (below; on AVX2 conv_lanes_avx2): a 3x3 convolution at stride 1 without dilation,
// 16 input channels or more and output channels that fill at least 3/4 of the lanes of their
// blocks of 16 (AVX2: 8); any row width, any K (AVX2: up to 1152, below). (With fewer inputs each
// tile's store and epilogue, through a transpose, weigh too much against its few taps: yolox_nano's
// 12 -> 16 stem on 208x208, with its SiLU, took 2.24 ms instead of 1.64 on AVX-512.)
bool lane_tiles_apply(const ConvGeom& g) {
  if (!cpu_has_avx2_fma() || g.spatial() != 2 || g.group != 1 || g.C < 16) return false;
  const bool wide = cpu_has_avx512();
  const int64_t block = wide ? kLaneBlock : 8;
  if (g.M < block || 4 * g.M < 3 * block * ((g.M + block - 1) / block)) return false;
  // AVX2: K up to 1152, a block's weights (K x 8 floats) within 36 KB. Past it the tiles of up to
  // 10 columns read their weights from L2 for each tile: ResNet-50's 256 -> 256 on 14x14 (K = 2304)
  // fell from 54 to 45 % of peak, its 512 -> 512 on 7x7 from 48 to 38 (AMD EPYC Zen 3), where
  // im2col and the packed GEMM keep them.
  if (!wide && g.C * 9 > 1152) return false;
  if (g.kernel[0] != 3 || g.kernel[1] != 3 || g.stride[0] != 1 || g.stride[1] != 1 || g.dilation[0] != 1 || g.dilation[1] != 1) return false;
  for (int d = 0; d < 2; ++d)
    if (g.pad_begin[d] < 0 || g.pad_end[d] < 0 || g.pad_begin[d] > 2 || g.pad_end[d] > 2) return false;
  // One output row's padded input rows fit the band.
  return g.out[1] >= 1 && g.C * 3 * (g.out[1] + 2) * 4 <= kBandBytes;
}

bool conv_rows_applies(const ConvGeom& g) {
  if (!cpu_has_avx2_fma() || g.spatial() != 2 || g.group != 1 || g.C < 1 || g.M < 1) return false;
  if (lane_tiles_apply(g)) return true;
  // Stride 1, or 2 (both ways) without dilation and K <= 160: fns-candy's 16 -> 32 3x3 on 800x800
  // (K = 144) ran 29.4 -> 20.9 ms at 1 thread through it on AMD EPYC Zen 4 (AVX-512), but its
  // 32 -> 64 on 400x400 (K = 288) 19.7 -> 21.4 and ResNet-50's 128 -> 128 on 56x56 (K = 1152)
  // 2.6 -> 3.9 ms: where K is small im2col's thin product is what loses. ResNet's 7x7 stem, 3 -> 64
  // on 224x224 (K = 147), alone after 64 MB of other writes: 2.27-2.58 -> 1.80-1.84 ms at 1 thread,
  // 1.26-1.32 -> 0.98-1.08 at 2 (Intel Xeon, AVX-512); its AVX2 path level (3.05-3.12 -> 3.00-3.09).
  const bool s2 = g.stride[0] == 2 && g.stride[1] == 2 && g.dilation[0] == 1 && g.dilation[1] == 1 && g.C * g.kernel[0] * g.kernel[1] <= 160;
  if (!s2 && (g.stride[0] != 1 || g.stride[1] != 1)) return false;
  if (g.dilation[0] < 1 || g.dilation[1] < 1) return false;
  const bool wide = cpu_has_avx512();
  const int64_t kh = g.kernel[0], kw = g.kernel[1], OW = g.out[1];
  // Kernels up to 9x9; K up to 1152, or for 3 output channels or fewer (one tile of all of them) up
  // to 2592: a tile's weights, 31 KB at most, stay within a Zen 4 L1 (fns-candy's last 9x9
  // layer, 16 -> 3, has K = 1296).
  if (kh * kw < 2 || kh > 9 || kw > 9 || g.C * kh * kw > (g.M <= 3 ? 2592 : 1152) || g.dilation[0] > 8 || g.dilation[1] > 8) return false;
  for (int d = 0; d < 2; ++d) {
    const int64_t span = (g.kernel[d] - 1) * g.dilation[d] + 1;
    if (g.pad_begin[d] < 0 || g.pad_end[d] < 0 || g.pad_begin[d] >= span || g.pad_end[d] >= span) return false;
  }
  // Rows of 16 or more, at least 3/4 of the 16-column vectors' lanes used (40: 40 of 48); rows
  // under 56 in planes of 256 outputs or more (a 1x32 plane: copying its band costs more than
  // im2col + GEMM saves). Both ISAs: AVX2's tiles are 16 columns, with a last one of 8 or fewer
  // in one vector.
  const int64_t vecs = (OW + 15) / 16;
  if (OW < 16 || 4 * OW < 3 * 16 * vecs || (OW < 56 && g.out[0] * OW < 256)) return false;
  // AVX2 keeps, for rows of 56 or more, rows of whole 32-column tiles or nearly (at least 7/8 of
  // the last one's columns used), and takes rows under 56 with at least 7/8 of its 8-column
  // vectors' lanes used (SqueezeNet 1.1's 27 x 27 3x3 layers, 27 of 32, ran 0.71 -> 0.75-0.77 ms
  // through it on AMD EPYC Zen 4 at 1 thread).
  const int64_t tiles = (OW + kTileCols - 1) / kTileCols;
  if (!wide && OW >= 56 && 8 * OW < 7 * tiles * kTileCols) return false;
  if (!wide && OW < 56 && 8 * OW < 7 * 8 * ((OW + 7) / 8)) return false;
  // One output row's padded input rows fit the band.
  const int64_t sw = g.stride[1], Wp = sw * (OW + ((kw - 1) * g.dilation[1] + sw - 1) / sw);
  return g.C * ((kh - 1) * g.dilation[0] + 1) * Wp * 4 <= kBandBytes;
}

struct ConvRowsWeights {
  const float* W;
  int64_t M, K, kw, sw;
  int R;
  std::vector<float, CacheAligned<float>> wp, bias;  // [panel][K][R] and [panel][R], zero past M
};

#if defined(__x86_64__) || defined(__i386__)
namespace {

using avx2::ActParams;
using avx2::InReg;

using conv_rows_band::Out;
using conv_rows_band::Rows;

// One tile: output channels [m0, m0 + rows) (rows <= R; the panel's weights a[k][R] are zero past
// M) x columns [0, cols) of the output row whose taps start at x (channel c's row ki at
// x + c * plane + ki * Wp), stored at offset o of each output plane: V vectors of 16 columns
// (cols in (16 (V - 1), 16 V]), the last ones masked when Masked.
//
// Flat (stride 1 only): the tile's columns are positions [o, o + cols) of the band's rows laid
// end to end Wp apart (output row b0 + o / Wp, column o % Wp; the Wp - OW positions past each
// row's outputs are computed and not stored), so that a vector may end one row and start the
// next: its lanes are stored in two masked parts.
template <InReg Act, int R, int V, bool Masked, bool Flat = false>
NNXR_AVX512 void tile(const Rows& d, const float* a, const float* x, int64_t plane, const float* bias, const Out& out, int64_t m0, int rows,
                      int64_t b0, int64_t o, int64_t cols) {
  __mmask16 k[V];
#pragma GCC unroll 8
  for (int v = 0; v < V; ++v) k[v] = Masked ? avx512::lanes(cols - 16 * v) : __mmask16(0xffff);
  // The output the next layer reads, the lines of the tile two on that these channels write (next
  // but one), fetched for the stores (avx2::fetch_for_store; Flat: position o is column o % Wp of
  // output row b0 + o / Wp). Intel Xeon, 1 thread, the layer alone after 64 MB of other writes
  // (medians of 5): ResNet-50's 64 -> 64 on 56x56 2.00 -> 1.79 ms, its 128 -> 128 on 28x28
  // 1.81 -> 1.75 (1.50 with its outputs in the cache); in ResNet-50 (medians of 3 profiles) its
  // three 56x56 3x3 layers 5.88 -> 5.28 ms in all, the three 28x28 ones 5.29 -> 5.10.
  const int64_t at = (Flat ? (b0 + o / d.Wp) * d.OW + o % d.Wp : o) + 2 * 16 * V;
  avx2::fetch_for_store<Act>(out.z1, out.z2, m0 * out.P + at, out.P, rows, V);
  __m512 acc[R][V];
#pragma GCC unroll 12
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
    for (int v = 0; v < V; ++v) acc[r][v] = _mm512_set1_ps(bias[r]);
  // One tap: the input vectors at b times the weights a[0, R).
  const auto tap = [&](const float* b, const float* a) NNXR_AVX512 __attribute__((always_inline)) {
    __m512 in[V];
#pragma GCC unroll 8
    for (int v = 0; v < V; ++v) {
      in[v] = Masked ? _mm512_maskz_loadu_ps(k[v], b + 16 * v) : _mm512_loadu_ps(b + 16 * v);
      // Each input vector loaded once, into a register: with R of 3 or fewer the compiler
      // would otherwise fold it into every multiply-add as a memory operand, R loads of a
      // vector (mostly across two cache lines) per tap instead of one. (With more rows it
      // folds them no more, and the barrier cost SqueezeNet's 3x3 expand layers 15%.)
      if constexpr (R <= 3) __asm__("" : "+v"(in[v]));
    }
#pragma GCC unroll 12
    for (int r = 0; r < R; ++r) {
      const __m512 av = _mm512_set1_ps(a[r]);
#pragma GCC unroll 8
      for (int v = 0; v < V; ++v) acc[r][v] = _mm512_fmadd_ps(av, in[v], acc[r][v]);
    }
  };
  const int64_t kh = d.kh, kw = d.kw, row = d.dh * d.Wp, dw = d.dw;
  if (kw == 3 && dw == 1) {
    // Three taps a step (kj 0, 1 and 2; at stride 2, kj 0 and 2 from the row's even half, then
    // kj 1 from its odd half, the weights' order), the ki loop kept: with tiles of 8 x 32,
    // SqueezeNet 1.1's 32 -> 128 on 27x27 ran 0.414 -> 0.395 ms and ResNet-50's 64 -> 64 on 56x56
    // 1.78 -> 1.68; with tiles of 8 x 48, fns-candy's 16 -> 32 stride 2 on 800x800 16.0 -> 15.2
    // (bench_kernels). Unrolling ki as well spilled accumulators. (conv_rows_avx2.cpp walks its
    // taps the same way: a walker shared by both would have to inline each file's target-specific
    // tap, which GCC refuses.)
    const int64_t third = d.sw == 1 ? 2 : d.Wq;
    for (int64_t c = 0; c < d.C; ++c, x += plane)
#pragma GCC unroll 1
      for (int64_t ki = 0; ki < kh; ++ki, a += 3 * R) {
        const float* const b = x + ki * row;
        tap(b, a);
        tap(b + 1, a + R);
        tap(b + third, a + 2 * R);
      }
  } else if (d.sw == 1) {  // (the phase loop below, at stride 1, cost SqueezeNet's 3x3 expand layers 15%)
    for (int64_t c = 0; c < d.C; ++c, x += plane)
      for (int64_t ki = 0; ki < kh; ++ki) {
        const float* b = x + ki * row;
        for (int64_t kj = 0; kj < kw; ++kj, b += dw, a += R) tap(b, a);
      }
  } else {
    for (int64_t c = 0; c < d.C; ++c, x += plane)
      for (int64_t ki = 0; ki < kh; ++ki)
        for (int64_t p = 0; p < d.sw; ++p) {
          const float* b = x + ki * row + p * d.Wq;
          for (int64_t t = conv_rows_band::phase_taps(d, p); t > 0; --t, b += dw, a += R) tap(b, a);
        }
  }
  // Row r's outputs at in-plane offset q.
  const auto put = [&](int r, int64_t q, __m512 v, __mmask16 m, bool stream) NNXR_AVX512 __attribute__((always_inline)) {
    const int64_t i = (m0 + r) * out.P + q;
    float* const y = out.staged ? out.staged + (m0 + r) * out.staged_P + (q - out.staged_from) : out.y + i;
    avx512::store<Act>(y, out.z1 ? out.z1 + i : nullptr, out.z2 ? out.z2 + i : nullptr, out.addend ? out.addend + i : nullptr, v, m, stream, out.ap);
  };
  if constexpr (Flat) {
    // Vector v's lanes of output row b0 + row[v] (mask lo[v], from column col[v]) and of the next
    // row (mask hi[v], from its column 0): Wp > 16, so no vector reaches a third row.
    int64_t row[V], col[V];
    __mmask16 lo[V], hi[V];
    int64_t rr = o / d.Wp, c = o % d.Wp;
#pragma GCC unroll 8
    for (int v = 0; v < V; ++v) {
      row[v] = b0 + rr;
      col[v] = c;
      lo[v] = c < d.OW ? __mmask16(k[v] & avx512::lanes(d.OW - c)) : __mmask16(0);
      hi[v] = c + 16 > d.Wp ? __mmask16(k[v] & ~avx512::lanes(d.Wp - c)) : __mmask16(0);
      c += 16;
      if (c >= d.Wp) c -= d.Wp, ++rr;
    }
#pragma GCC unroll 12
    for (int r = 0; r < R; ++r) {
      if (r >= rows) break;
#pragma GCC unroll 8
      for (int v = 0; v < V; ++v) {
        // (the second part's lanes j >= Wp - col[v] are columns j - (Wp - col[v]) of the next row)
        if (lo[v]) put(r, row[v] * d.OW + col[v], acc[r][v], lo[v], false);
        if (hi[v]) put(r, (row[v] + 1) * d.OW + col[v] - d.Wp, acc[r][v], hi[v], false);
      }
    }
    return;
  }
  // (A constant bound and index: the accumulators stay in registers through the taps.)
#pragma GCC unroll 12
  for (int r = 0; r < R; ++r) {
    if (r >= rows) break;
#pragma GCC unroll 8
    for (int v = 0; v < V; ++v) put(r, o + 16 * v, acc[r][v], k[v], out.stream);
  }
}

// A row's last tile of cols < 16 V columns: in as few vectors as hold them, masked unless they
// fill them.
template <InReg Act, int R, int V, bool Flat, class... Args>
NNXR_AVX512 void last_tile(int64_t cols, const Args&... args) {
  if constexpr (V > 1)
    if (cols <= 16 * (V - 1)) return last_tile<Act, R, V - 1, Flat>(cols, args...);
  if (cols == 16 * V) tile<Act, R, V, false, Flat>(args..., cols);
  else tile<Act, R, V, true, Flat>(args..., cols);
}

// One band of output rows [b0, b1), its padded input rows at buf (channels plane floats apart), in
// tiles of R channels x 16 V columns of one output row, or when Flat (stride 1) of the band's rows
// end to end (see tile).
template <InReg Act, int R, int V, bool Flat>
NNXR_AVX512 void band_tiles(const Rows& d, const float* wp, const float* bias, const float* buf, int64_t plane, const Out& out, int64_t b0,
                            int64_t b1) {
  constexpr int64_t kCols = 16 * V;
  const int64_t K = d.C * d.kh * d.kw, panels = (d.M + R - 1) / R;
  if constexpr (Flat) {
    // Positions [0, end): the last one's last tap reads the last float of each channel's rows.
    const int64_t end = (b1 - b0 - 1) * d.Wp + d.OW;
    for (int64_t f = 0; f < end; f += kCols)
      for (int64_t p = 0; p < panels; ++p) {
        const int rows = static_cast<int>(std::min<int64_t>(R, d.M - p * R));
        const float* const a = wp + p * K * R;
        const int64_t cols = std::min(kCols, end - f);
        if (cols == kCols) tile<Act, R, V, false, true>(d, a, buf + f, plane, bias + p * R, out, p * R, rows, b0, f, cols);
        else last_tile<Act, R, V, true>(cols, d, a, buf + f, plane, bias + p * R, out, p * R, rows, b0, f);
      }
    return;
  }
  for (int64_t oh = b0; oh < b1; ++oh)
    for (int64_t p = 0; p < panels; ++p) {
      const int rows = static_cast<int>(std::min<int64_t>(R, d.M - p * R));
      const float* const a = wp + p * K * R;
      for (int64_t ow = 0; ow < d.OW; ow += kCols) {
        const float* const src = buf + (oh - b0) * d.sh * d.Wp + ow;
        const int64_t cols = std::min(kCols, d.OW - ow), o = oh * d.OW + ow;
        if (cols == kCols) tile<Act, R, V, false>(d, a, src, plane, bias + p * R, out, p * R, rows, b0, o, cols);
        else last_tile<Act, R, V, false>(cols, d, a, src, plane, bias + p * R, out, p * R, rows, b0, o);
      }
    }
}

// ---- Lane tiles: output channels in the lanes x up to 14 columns ----------------------------
//
// A 3x3 layer at stride 1 with 16 output channels or more takes tiles of 16 channels (their
// weights a vector a tap, from the packing with R = 16) x 14 columns of one output row, or of 32
// channels (two blocks of 16) x 7 columns on rows of 7 or fewer (14 accumulators either way),
// and broadcasts the input: each of the NC + 2 floats of a padded input row (c, ki) is multiplied
// into the up to three columns whose taps kj = 0, 1, 2 read it. A tap's loads are then whole
// aligned vectors of weights and single floats, where the tiles above load three vectors of
// inputs at 1 and 2 floats past a vector (two cache lines each). The tile is stored through
// gemm_lanes' transpose (lanes_store.h), as rows of NC floats; each element is summed over
// (c, ki, kj) in the weights' order from the bias, as the tiles above and im2col's product do.
template <InReg Act, int NC, int NV>
NNXR_AVX512 void lane_tile(const float* a, const float* a2, const float* x, int64_t C, int64_t plane, int64_t Wp, const float* bias,
                           int64_t fetch, const lanes::TileOut& o, int rows, int cols) {
  __m512 acc[lanes::kLaneCols][2];
#pragma GCC unroll 2
  for (int v = 0; v < NV; ++v) {
    const __m512 b = _mm512_loadu_ps(bias + 16 * v);
#pragma GCC unroll 14
    for (int j = 0; j < NC; ++j) acc[j][v] = b;
  }
  for (int64_t c = 0; c < C; ++c, x += plane)
#pragma GCC unroll 1
    for (int64_t ki = 0; ki < 3; ++ki, a += 3 * kLaneBlock, a2 += 3 * kLaneBlock) {
      const float* const b = x + ki * Wp;
      if (fetch) _mm_prefetch(reinterpret_cast<const char*>(a + fetch), _MM_HINT_T1);
      __m512 w[3][NV];
#pragma GCC unroll 3
      for (int kj = 0; kj < 3; ++kj) {
        w[kj][0] = _mm512_load_ps(a + kj * kLaneBlock);
        if constexpr (NV == 2) w[kj][1] = _mm512_load_ps(a2 + kj * kLaneBlock);
      }
#pragma GCC unroll 16
      for (int j = 0; j < NC + 2; ++j) {
        const __m512 in = _mm512_set1_ps(b[j]);
#pragma GCC unroll 3
        for (int kj = 0; kj < 3; ++kj) {
          const int r = j - kj;
          if (r < 0 || r >= NC) continue;
#pragma GCC unroll 2
          for (int v = 0; v < NV; ++v) acc[r][v] = _mm512_fmadd_ps(w[kj][v], in, acc[r][v]);
        }
      }
    }
  if constexpr (NV == 1)
#pragma GCC unroll 14
    for (int j = 0; j < NC; ++j) acc[j][1] = _mm512_setzero_ps();  // (not stored: rows <= 16)
  lanes::store_lanes<Act, NC>(acc, o, rows, cols);
}

// Output rows [b0, b1) of channel blocks [blk0, blk1) (of 16) in lane tiles, their padded input
// rows at buf (channels plane floats apart): a tile's blocks at a time (their weights, K x 16
// floats each, stay in L2 over the band), row by row, in tiles of 14 columns (of 7 on rows of 7
// or fewer). A row's last tile reads its NC + 2 floats on past the row (the next rows, or the
// buffer's slack): those columns are computed and not stored.
template <InReg Act>
NNXR_AVX512 void lane_band(const Rows& d, const float* wp, const float* bias, const float* buf, int64_t plane, const Out& out, int64_t b0, int64_t b1,
                           int64_t blk0, int64_t blk1) {
  const int64_t K = d.C * 9;
  const bool narrow = d.OW <= 7;  // tiles of 32 channels x 7 columns
  const int nc = narrow ? 7 : 14;
  const int64_t step = narrow ? 2 : 1;
  for (int64_t blk = blk0; blk < blk1; blk += step) {
    const bool two = narrow && blk + 1 < blk1;
    const int rows = static_cast<int>(std::min<int64_t>((two ? 2 : 1) * kLaneBlock, d.M - blk * kLaneBlock));
    const float* const a = wp + blk * K * kLaneBlock;
    // The next block's weights (pair: the next two), fetched into L2 by this block's first 3 (6)
    // tiles, one line of each (c, ki) step a tile: a layer's weights were last read a whole run
    // ago. ResNet-50 at 1 thread (medians of 6 profiles in alternating order, Intel Xeon): its 3x3
    // layers on 14x14 10.95 -> 10.22 ms a run, on 7x7 6.75 -> 6.49, the others level.
    const int64_t next = blk + step, next_lines = 3 * std::min<int64_t>(step, blk1 - next);
    int64_t t = 0;
    for (int64_t oh = b0; oh < b1; ++oh)
      for (int64_t ow = 0; ow < d.OW; ow += nc, ++t) {
        const int64_t at = blk * kLaneBlock * out.P + oh * d.OW + ow;
        lanes::TileOut o{out.y + at,
                         out.z1 ? out.z1 + at : nullptr,
                         out.z2 ? out.z2 + at : nullptr,
                         out.addend ? out.addend + at : nullptr,
                         out.P,
                         out.ap,
                         false};
        if (out.staged) {
          o.y = out.staged + blk * kLaneBlock * out.staged_P + oh * d.OW + ow - out.staged_from;
          o.ld_y = out.staged_P;
        }
        const float* const src = buf + (oh - b0) * d.Wp + ow;
        const int cols = static_cast<int>(std::min<int64_t>(nc, d.OW - ow));
        const float* const bb = bias + blk * kLaneBlock;
        const int64_t fetch = t < next_lines ? (next + t / 3 - blk) * K * kLaneBlock + t % 3 * 16 : 0;  // floats past a
        if (two) lane_tile<Act, 7, 2>(a, a + K * kLaneBlock, src, d.C, plane, d.Wp, bb, fetch, o, rows, cols);
        else if (narrow) lane_tile<Act, 7, 1>(a, a, src, d.C, plane, d.Wp, bb, fetch, o, rows, cols);
        else lane_tile<Act, 14, 1>(a, a, src, d.C, plane, d.Wp, bb, fetch, o, rows, cols);
      }
  }
}

// Output rows [r0, r1) of one image: x [C, H, W] -> out (weights wp[panel][K][R], bias by panel),
// a band of rows at a time (band_tiles).
template <InReg Act, int R, int V, bool Flat, bool Lanes = false>
NNXR_AVX512 void rows(const Rows& d, const float* x, const float* wp, const float* bias, const Out& out, int64_t r0, int64_t r1, int64_t blk0 = 0,
                      int64_t blk1 = 0) {
  const int64_t band = conv_rows_band::band_rows(d);
  thread_local std::vector<float, CacheAligned<float>> buf;
  // y, when the epilogue keeps its own output and y's rows are not whole aligned vectors, staged a
  // band at a time and streamed out (stream_span: one span of the band's rows per channel).
  // (Lane tiles store y as rows of up to 14 floats: staged wherever the epilogue keeps its own.)
  const bool stage = Act != InReg::None && (Lanes || !out.stream);
  for (int64_t b0 = r0; b0 < r1; b0 += band) {
    const int64_t b1 = std::min(r1, b0 + band), plane = conv_rows_band::fill_band(d, x, b0, b1, buf, avx512::split_row);
    const Out o = conv_rows_band::band_out(out, d.M, d.OW, b0, b1, stage);
    if constexpr (Lanes) {
      lane_band<Act>(d, wp, bias, buf.data(), plane, o, b0, b1, blk0, blk1);
      conv_rows_band::flush_band(out, o, blk0 * kLaneBlock, std::min(d.M, blk1 * kLaneBlock), avx512::stream_span);  // this task's channels
    } else {
      band_tiles<Act, R, V, Flat>(d, wp, bias, buf.data(), plane, o, b0, b1);
      conv_rows_band::flush_band(out, o, 0, d.M, avx512::stream_span);
    }
  }
  if (out.stream || stage) _mm_sfence();  // the streamed y visible before the task completes
}

// The tile for M output channels: for M of 3 or fewer, all of them x 16 V columns (V = 5, 6, 6:
// 15, 12 and 6 accumulators; a panel of 4 x 32 would compute 4 rows for 1-3); otherwise R of 4,
// 6, 8, 9 and 12, the one with the fewest rows past M, then the tallest, x 32 columns, or 48 for
// R = 8 (24 accumulators: 3 input vectors a tap for 8 broadcasts, not 2; SqueezeNet 1.1's
// 32 -> 128 on 27x27 ran 0.395 -> 0.366 ms, ResNet-50's 64 -> 64 on 56x56 1.68 -> 1.57, and
// 8 x 3 beat 6 x 4, 12 x 2 and 4 x 6 there).
struct TileShape {
  int R, V;
};
TileShape tile_shape(int64_t M) {
  if (M <= 3) return {static_cast<int>(M), M == 3 ? 5 : 6};
  int best = 4;
  int64_t waste = (M + 3) / 4 * 4 - M;
  for (int r : {6, 8, 9, 12}) {
    const int64_t w = (M + r - 1) / r * r - M;
    if (w <= waste) best = r, waste = w;
  }
  return {best, 2};
}

template <class F>
void with_shape(TileShape t, F&& f) {
  switch (t.R) {
    case 1: return f.template operator()<1, 6>();
    case 2: return f.template operator()<2, 6>();
    case 3: return f.template operator()<3, 5>();
    case 4: return f.template operator()<4, 2>();
    case 6: return f.template operator()<6, 2>();
    case 8: return f.template operator()<8, 3>();
    case 9: return f.template operator()<9, 2>();
    default: return f.template operator()<12, 2>();
  }
}

// Weights as [panel][K][R] (k in W's order: c, ki, kj; at stride 2 the kj of each (c, ki) even
// ones first, as the tile reads them), zero past M; the bias likewise.
std::shared_ptr<const ConvRowsWeights> pack_weights(const Rows& d, const float* W, const float* B, int R) {
  const int64_t K = d.C * d.kh * d.kw, panels = (d.M + R - 1) / R;
  auto packed = std::make_shared<ConvRowsWeights>(ConvRowsWeights{W, d.M, K, d.kw, d.sw, R, {}, {}});
  auto& wp = packed->wp;
  auto& bias = packed->bias;
  wp.assign(static_cast<size_t>(panels * K * R), 0.f);
  bias.assign(static_cast<size_t>(panels * R), 0.f);
  const std::vector<int64_t> order = conv_rows_band::tap_order(d);
  for (int64_t m = 0; m < d.M; ++m) {
    if (B) bias[static_cast<size_t>(m)] = B[m];
    const int64_t p = m / R, r = m % R;
    for (int64_t k0 = 0; k0 < K; k0 += d.kw)
      for (int64_t j = 0; j < d.kw; ++j) wp[static_cast<size_t>((p * K + k0 + j) * R + r)] = W[m * K + k0 + order[static_cast<size_t>(j)]];
  }
  return packed;
}

// Whether the packing's bias is B (zeros when B is null), bit for bit.
bool same_bias(const ConvRowsWeights& c, const float* B) {
  for (int64_t m = 0; m < c.M; ++m) {
    const float b = B ? B[m] : 0.f;
    if (std::memcmp(&b, &c.bias[static_cast<size_t>(m)], sizeof b) != 0) return false;
  }
  return true;
}

}  // namespace

void conv_rows(const ConvGeom& g, const float* X, const float* W, const float* B, float* Y, ThreadPool& pool, const EpilogueOut& act,
               ConvRowsCache* cache) {
  const bool lane_tiles = lane_tiles_apply(g), wide = cpu_has_avx512();
  if (!wide && !lane_tiles) return conv_rows_avx2(g, X, W, B, Y, pool, act);
  const Rows d = conv_rows_band::rows_of(g);
  const int64_t P = d.OH * d.OW, K = d.C * d.kh * d.kw;
  if (P == 0 || g.N == 0) return;
  const TileShape shape = lane_tiles ? TileShape{wide ? static_cast<int>(kLaneBlock) : 8, 1} : tile_shape(d.M);
  const int R = shape.R;
  const int64_t panels = (d.M + R - 1) / R;
  // The packed weights: the cache's while they were packed from the same W, B and layout (packing
  // SqueezeNet 1.1's 27x27 3x3 layers, 128 x 288 weights written with a stride of R floats, took
  // 0.5% of the model's samples when it ran on every call, serially before the threads start).
  std::shared_ptr<const ConvRowsWeights> packed;
  if (cache) {
    std::lock_guard lock(cache->mutex);
    const ConvRowsWeights* c = cache->packed.get();
    if (c && c->W == W && c->M == d.M && c->K == K && c->kw == d.kw && c->sw == d.sw && c->R == R && same_bias(*c, B)) packed = cache->packed;
    else packed = cache->packed = pack_weights(d, W, B, R);
  } else {
    packed = pack_weights(d, W, B, R);
  }
  const auto& wp = packed->wp;
  const auto& bias = packed->bias;
  if (!wide) return conv_lanes_avx2(g, X, wp.data(), bias.data(), Y, pool, act);
  const ActParams ap = avx2::act_params(act.epi);
  const int64_t flops_per_row = 2 * panels * R * K * d.OW;
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 21) / std::max<int64_t>(1, flops_per_row));
  if (lane_tiles) {
    // Split by rows, or by channel blocks (each task all the rows) where there are fewer rows than
    // 8 a thread: ResNet-50's 7x7 and 14x14 layers.
    const int64_t blocks = (d.M + kLaneBlock - 1) / kLaneBlock, image_rows = g.N * d.OH;
    const bool by_blocks = pool.threads() > 1 && image_rows < 8 * pool.threads() && blocks >= 2 * pool.threads();
    avx2::with_in_reg(act.epi, [&]<InReg Act>() {
      if (by_blocks) {
        const int64_t step = d.OW <= 7 ? 2 : 1;  // (32-channel tiles on rows of 7: whole pairs a task)
        pool.parallel_for((blocks + step - 1) / step, 1, [&](int64_t b, int64_t e) {
          conv_rows_band::image_rows<Act>(d, 0, image_rows, Y, act, ap, [&](int64_t n, int64_t r0, int64_t r1, const Out& out) {
            rows<Act, kLaneBlock, 1, false, true>(d, X + n * d.C * d.H * d.W, wp.data(), bias.data(), out, r0, r1, b * step,
                                                  std::min(blocks, e * step));
          });
        });
        return;
      }
      pool.parallel_for(image_rows, grain, [&](int64_t b, int64_t e) {
        conv_rows_band::image_rows<Act>(d, b, e, Y, act, ap, [&](int64_t n, int64_t r0, int64_t r1, const Out& out) {
          rows<Act, kLaneBlock, 1, false, true>(d, X + n * d.C * d.H * d.W, wp.data(), bias.data(), out, r0, r1, 0, blocks);
        });
      });
    });
    return;
  }
  // At stride 1 the tiles run along the band's rows end to end when that computes fewer lanes than
  // row by row: SqueezeNet 1.1's 55- and 27-column rows take 57 and 29 lanes each instead of 64
  // and 32 (the 2 positions past each row's outputs are computed, not stored).
  const int64_t cols = 16 * shape.V, rest = d.OW % cols;
  const int64_t row_lanes = d.OW - rest + (rest + 15) / 16 * 16;
  const bool flat = d.sh == 1 && d.sw == 1 && d.Wp > 16 && d.Wp < row_lanes;
  avx2::with_in_reg(act.epi, [&]<InReg Act>() {
    with_shape(shape, [&]<int Rt, int Vt>() {
      pool.parallel_for(g.N * d.OH, grain, [&](int64_t b, int64_t e) {
        conv_rows_band::image_rows<Act>(d, b, e, Y, act, ap, [&](int64_t n, int64_t r0, int64_t r1, const Out& out) {
          if (flat) rows<Act, Rt, Vt, true>(d, X + n * d.C * d.H * d.W, wp.data(), bias.data(), out, r0, r1);
          else rows<Act, Rt, Vt, false>(d, X + n * d.C * d.H * d.W, wp.data(), bias.data(), out, r0, r1);
        });
      });
    });
  });
}
#else
// Never called: conv_rows_applies() is false on other architectures.
void conv_rows(const ConvGeom&, const float*, const float*, const float*, float*, ThreadPool&, const EpilogueOut&, ConvRowsCache*) {}
#endif

}  // namespace nnxr::runtime
