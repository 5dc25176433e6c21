// Stride-1 2-D convolution without a column matrix, on AVX-512 (an implicit GEMM). At stride 1
// the im2col row of tap (c, ki, kj) over one output row is input row oh + ki of channel c read
// from column kj on: so each band of output rows copies its input rows once into zero-padded
// rows (left and right padding in the row, missing rows as zeros), and the tile kernel reads the
// taps of 32 outputs straight from them. A tile holds R output channels x 32 columns of one
// output row in 2R accumulators (R from 4, 6, 8, 9 and 12, the one that wastes fewest rows of
// M), starting at the bias; the sum runs over (c, ki, kj) in the weights' order, as im2col's
// product does, and the bias and the epilogue are applied on the way out. On AVX2 + FMA,
// conv_rows runs conv_rows_avx2 (conv_rows_avx2.cpp): the same bands, tiles of up to 6 x 16.
// With dilation (dh, dw) the tap reads row oh + ki * dh from column kj * dw on. Rows under 56
// columns (UltraFace's 30x40 heads, CIFAR's 28x28) end in a tile of one vector when 16 columns
// or fewer are left (40: 32 + 8).
//
// On super-resolution's 64 -> 64 and 64 -> 32 3x3 layers at 224x224, im2col wrote and read back
// a 576-row column matrix per block (16% of the model's time) and the 32 and 9 channel layers
// went through gemm_lanes' transposing stores; here neither exists.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "model/runtime/avx512.h"
#include "model/runtime/compute.h"
#include "model/runtime/conv_rows.h"
#include "model/runtime/kernel.h"
#include "model/runtime/value.h"

namespace nnxr::runtime {

namespace {
constexpr int64_t kTileCols = 32;                // two vectors of 16 columns
using conv_rows_band::kBandBytes;
}  // namespace

bool conv_rows_applies(const ConvGeom& g) {
  if (!cpu_has_avx2_fma() || g.spatial() != 2 || g.group != 1 || g.C < 1 || g.M < 1) return false;
  if (g.stride[0] != 1 || g.stride[1] != 1 || g.dilation[0] < 1 || g.dilation[1] < 1) return false;
  const bool wide = cpu_has_avx512();
  const int64_t kh = g.kernel[0], kw = g.kernel[1], OW = g.out[1];
  if (kh * kw < 2 || kh > 7 || kw > 7 || g.C * kh * kw > 1152 || g.dilation[0] > 8 || g.dilation[1] > 8) return false;
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
  return g.C * ((kh - 1) * g.dilation[0] + 1) * (OW + (kw - 1) * g.dilation[1]) * 4 <= kBandBytes;
}

#if defined(__x86_64__) || defined(__i386__)
namespace {

using avx2::ActParams;
using avx2::InReg;

using conv_rows_band::Out;
using conv_rows_band::Rows;

// One tile: output channels [m0, m0 + rows) (rows <= R; the panel's weights a[k][R] are zero past
// M) x columns [0, cols) of the output row whose taps start at x (channel c's row ki at
// x + c * plane + ki * Wp), stored at offset o of each output plane.
// Two: 32 columns in two vectors, else up to 16 in one.
template <InReg Act, int R, bool Masked, bool Two = true>
NNXR_AVX512 void tile(const Rows& d, const float* a, const float* x, int64_t plane, const float* bias, const Out& out, int64_t m0, int rows,
                      int64_t o, int64_t cols) {
  const __mmask16 k0 = avx512::lanes(cols), k1 = Two ? avx512::lanes(cols - 16) : 0;
  __m512 lo[R], hi[R];
#pragma GCC unroll 12
  for (int r = 0; r < R; ++r) hi[r] = lo[r] = _mm512_set1_ps(bias[r]);
  const int64_t kh = d.kh, kw = d.kw, row = d.dh * d.Wp, dw = d.dw;
  for (int64_t c = 0; c < d.C; ++c, x += plane)
    for (int64_t ki = 0; ki < kh; ++ki) {
      const float* b = x + ki * row;
      for (int64_t kj = 0; kj < kw; ++kj, b += dw, a += R) {
        const __m512 b0 = Masked ? _mm512_maskz_loadu_ps(k0, b) : _mm512_loadu_ps(b);
        if constexpr (Two) {
          const __m512 b1 = Masked ? _mm512_maskz_loadu_ps(k1, b + 16) : _mm512_loadu_ps(b + 16);
#pragma GCC unroll 12
          for (int r = 0; r < R; ++r) {
            const __m512 av = _mm512_set1_ps(a[r]);
            lo[r] = _mm512_fmadd_ps(av, b0, lo[r]);
            hi[r] = _mm512_fmadd_ps(av, b1, hi[r]);
          }
        } else {
#pragma GCC unroll 12
          for (int r = 0; r < R; ++r) lo[r] = _mm512_fmadd_ps(_mm512_set1_ps(a[r]), b0, lo[r]);
        }
      }
    }
  // (A constant bound and index: the accumulators stay in registers through the taps.)
#pragma GCC unroll 12
  for (int r = 0; r < R; ++r) {
    if (r >= rows) break;
    const int64_t at = (m0 + r) * out.P + o;
    float* const z1 = out.z1 ? out.z1 + at : nullptr;
    float* const z2 = out.z2 ? out.z2 + at : nullptr;
    const float* const addend = out.addend ? out.addend + at : nullptr;
    avx512::store<Act>(out.y + at, z1, z2, addend, lo[r], k0, out.stream, out.ap);
    if (Two && k1)
      avx512::store<Act>(out.y + at + 16, z1 ? z1 + 16 : nullptr, z2 ? z2 + 16 : nullptr, addend ? addend + 16 : nullptr, hi[r], k1, out.stream,
                         out.ap);
  }
}

// Output rows [r0, r1) of one image: x [C, H, W] -> out (weights wp[panel][K][R], bias by panel).
template <InReg Act, int R>
NNXR_AVX512 void rows(const Rows& d, const float* x, const float* wp, const float* bias, const Out& out, int64_t r0, int64_t r1) {
  const int64_t K = d.C * d.kh * d.kw, panels = (d.M + R - 1) / R;
  const int64_t band = conv_rows_band::band_rows(d);
  thread_local std::vector<float, CacheAligned<float>> buf;
  for (int64_t b0 = r0; b0 < r1; b0 += band) {
    const int64_t b1 = std::min(r1, b0 + band), in_rows = conv_rows_band::band_input_rows(d, b0, b1), plane = in_rows * d.Wp;
    const size_t need = static_cast<size_t>(d.C * plane + 16);
    if (buf.size() < need) buf.resize(need);
    conv_rows_band::pad_band(d, x, b0, in_rows, buf.data());
    for (int64_t oh = b0; oh < b1; ++oh)
      for (int64_t p = 0; p < panels; ++p) {
        const int rows = static_cast<int>(std::min<int64_t>(R, d.M - p * R));
        const float* const a = wp + p * K * R;
        for (int64_t ow = 0; ow < d.OW; ow += kTileCols) {
          const float* const src = buf.data() + (oh - b0) * d.Wp + ow;
          const int64_t cols = std::min(kTileCols, d.OW - ow), o = oh * d.OW + ow;
          if (cols == kTileCols) tile<Act, R, false>(d, a, src, plane, bias + p * R, out, p * R, rows, o, cols);
          else if (cols == 16) tile<Act, R, false, false>(d, a, src, plane, bias + p * R, out, p * R, rows, o, cols);
          else if (cols < 16) tile<Act, R, true, false>(d, a, src, plane, bias + p * R, out, p * R, rows, o, cols);
          else tile<Act, R, true>(d, a, src, plane, bias + p * R, out, p * R, rows, o, cols);
        }
      }
  }
  if (out.stream) _mm_sfence();  // the streamed y visible before the task completes
}

// The panel height for M output channels: of 4, 6, 8, 9 and 12, the one with the fewest rows
// past M, then the tallest.
int panel_rows(int64_t M) {
  int best = 4;
  int64_t waste = (M + 3) / 4 * 4 - M;
  for (int r : {6, 8, 9, 12}) {
    const int64_t w = (M + r - 1) / r * r - M;
    if (w <= waste) best = r, waste = w;
  }
  return best;
}

template <class F>
void with_rows(int R, F&& f) {
  switch (R) {
    case 4: return f.template operator()<4>();
    case 6: return f.template operator()<6>();
    case 8: return f.template operator()<8>();
    case 9: return f.template operator()<9>();
    default: return f.template operator()<12>();
  }
}

}  // namespace

void conv_rows(const ConvGeom& g, const float* X, const float* W, const float* B, float* Y, ThreadPool& pool, const EpilogueOut& act) {
  if (!cpu_has_avx512()) return conv_rows_avx2(g, X, W, B, Y, pool, act);
  Rows d{g.C, g.in[0], g.in[1], g.out[0], g.out[1], g.M, g.kernel[0], g.kernel[1], g.pad_begin[0], g.pad_begin[1], g.dilation[0], g.dilation[1], 0};
  d.Wp = d.OW + (d.kw - 1) * d.dw;
  const int64_t P = d.OH * d.OW, K = d.C * d.kh * d.kw;
  if (P == 0 || g.N == 0) return;
  const int R = panel_rows(d.M);
  const int64_t panels = (d.M + R - 1) / R;
  // Weights as [panel][K][R] (k in W's order: c, ki, kj), zero past M; the bias likewise.
  std::vector<float, CacheAligned<float>> wp(static_cast<size_t>(panels * K * R), 0.f), bias(static_cast<size_t>(panels * R), 0.f);
  for (int64_t m = 0; m < d.M; ++m) {
    if (B) bias[static_cast<size_t>(m)] = B[m];
    const int64_t p = m / R, r = m % R;
    for (int64_t k = 0; k < K; ++k) wp[static_cast<size_t>((p * K + k) * R + r)] = W[m * K + k];
  }
  const ActParams ap = avx2::act_params(act.epi);
  const int64_t flops_per_row = 2 * panels * R * K * d.OW;
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 21) / std::max<int64_t>(1, flops_per_row));
  avx2::with_in_reg(act.epi, [&]<InReg Act>() {
    with_rows(R, [&]<int Rt>() {
      pool.parallel_for(g.N * d.OH, grain, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e;) {
          const int64_t n = i / d.OH, r0 = i % d.OH, r1 = std::min(d.OH, r0 + (e - i));
          const int64_t at = n * d.M * P;
          float* const y = Y + at;
          // y streamed when every full store is a whole aligned vector and the epilogue keeps
          // its own output (nothing reads y during the run).
          const bool stream = Act != InReg::None && d.OW % 16 == 0 && reinterpret_cast<uintptr_t>(y) % 64 == 0;
          const Out out{y,
                        Act == InReg::None ? nullptr : act.z1 + at,
                        Act == InReg::SiLU ? act.z2 + at : nullptr,
                        Act == InReg::Add ? act.addend + at : nullptr,
                        P,
                        stream,
                        ap};
          rows<Act, Rt>(d, X + n * d.C * d.H * d.W, wp.data(), bias.data(), out, r0, r1);
          i += r1 - r0;
        }
      });
    });
  });
}
#else
// Never called: conv_rows_applies() is false on other architectures.
void conv_rows(const ConvGeom&, const float*, const float*, const float*, float*, ThreadPool&, const EpilogueOut&) {}
#endif

}  // namespace nnxr::runtime
