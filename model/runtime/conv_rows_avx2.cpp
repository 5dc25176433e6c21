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
// as im2col's product does; the bias and the epilogue are applied on the way out.
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

// One tile: MB output channels (weights a[k][kMB]) x columns [0, n) (n in [1, 16], in [1, 8]
// without Two) of the output row whose taps start at x (channel c's row ki at x + c * plane +
// ki * dh * Wp, tap kj at column kj * dw), stored at offset o of each output plane from channel
// m0 on. A partial tile reads the padded rows past its columns (the next row, or the buffer's 16
// spare floats) and stores the first n. Two: 16 columns in two vectors, else up to 8 in one (a
// row of 40 runs as 16 + 16 + 8).
template <InReg Act, int MB, bool Two>
__attribute__((target("avx2,fma"))) void tile(const Rows& d, const float* a, const float* x, int64_t plane, const float* bias, const Out& out,
                                              int64_t m0, int64_t o, int64_t n) {
  __m256 acc0[MB], acc1[MB];
#pragma GCC unroll 6
  for (int m = 0; m < MB; ++m) {
    acc0[m] = _mm256_broadcast_ss(bias + m);
    acc1[m] = Two ? acc0[m] : _mm256_setzero_ps();  // without Two, past the n <= 8 stored
  }
  const int64_t kh = d.kh, kw = d.kw, row = d.dh * d.Wp, dw = d.dw;
  for (int64_t c = 0; c < d.C; ++c, x += plane)
    for (int64_t ki = 0; ki < kh; ++ki) {
      const float* b = x + ki * row;
      for (int64_t kj = 0; kj < kw; ++kj, b += dw, a += kMB) {
        const __m256 v0 = _mm256_loadu_ps(b);
        if constexpr (Two) {
          const __m256 v1 = _mm256_loadu_ps(b + 8);
#pragma GCC unroll 6
          for (int m = 0; m < MB; ++m) {
            const __m256 wm = _mm256_broadcast_ss(a + m);
            acc0[m] = _mm256_fmadd_ps(wm, v0, acc0[m]);
            acc1[m] = _mm256_fmadd_ps(wm, v1, acc1[m]);
          }
        } else {
#pragma GCC unroll 6
          for (int m = 0; m < MB; ++m) acc0[m] = _mm256_fmadd_ps(_mm256_broadcast_ss(a + m), v0, acc0[m]);
        }
      }
    }
#pragma GCC unroll 6
  for (int m = 0; m < MB; ++m) {
    const int64_t at = (m0 + m) * out.P + o;
    if (n == 16) avx2::store16(out.y + at, acc0[m], acc1[m], out.stream);
    else avx2::store_first(out.y + at, acc0[m], acc1[m], n);
    if constexpr (Act != InReg::None)
      avx2::store_act<Act>(out.z1 + at, out.z2 ? out.z2 + at : nullptr, out.addend ? out.addend + at : nullptr, acc0[m], acc1[m], out.ap, n);
  }
}

// tile<Act, MB, Two> for a block of mb in [1, kMB] output channels.
template <InReg Act, bool Two, class... Args>
void tile_of(int64_t mb, const Args&... args) {
  switch (mb) {
    case 1: return tile<Act, 1, Two>(args...);
    case 2: return tile<Act, 2, Two>(args...);
    case 3: return tile<Act, 3, Two>(args...);
    case 4: return tile<Act, 4, Two>(args...);
    case 5: return tile<Act, 5, Two>(args...);
    default: return tile<Act, 6, Two>(args...);
  }
}

// Output rows [r0, r1) of one image: x [C, H, W] -> out (weights wp[block][K][kMB], bias by block).
template <InReg Act>
__attribute__((target("avx2,fma"))) void rows(const Rows& d, const Blocks& blocks, const float* x, const float* wp, const float* bias,
                                              const Out& out, int64_t r0, int64_t r1) {
  const int64_t K = d.C * d.kh * d.kw;
  const int64_t band = conv_rows_band::band_rows(d);
  thread_local std::vector<float, CacheAligned<float>> buf;
  for (int64_t b0 = r0; b0 < r1; b0 += band) {
    const int64_t b1 = std::min(r1, b0 + band), in_rows = conv_rows_band::band_input_rows(d, b0, b1), plane = in_rows * d.Wp;
    const size_t need = static_cast<size_t>(d.C * plane + 16);
    if (buf.size() < need) buf.resize(need);
    conv_rows_band::pad_band(d, x, b0, in_rows, buf.data());
    for (int64_t oh = b0; oh < b1; ++oh)
      for (int64_t b = 0; b < blocks.count; ++b) {
        const float* const a = wp + b * K * kMB;
        for (int64_t ow = 0; ow < d.OW; ow += 16) {
          const int64_t n = std::min<int64_t>(16, d.OW - ow);
          if (n > 8)
            tile_of<Act, true>(blocks.size(b), d, a, buf.data() + (oh - b0) * d.Wp + ow, plane, bias + b * kMB, out, blocks.first(b), oh * d.OW + ow, n);
          else
            tile_of<Act, false>(blocks.size(b), d, a, buf.data() + (oh - b0) * d.Wp + ow, plane, bias + b * kMB, out, blocks.first(b), oh * d.OW + ow, n);
        }
      }
  }
  if (out.stream) _mm_sfence();  // the streamed y visible before the task completes
}

}  // namespace

void conv_rows_avx2(const ConvGeom& g, const float* X, const float* W, const float* B, float* Y, ThreadPool& pool, const EpilogueOut& act) {
  Rows d{g.C, g.in[0], g.in[1], g.out[0], g.out[1], g.M, g.kernel[0], g.kernel[1], g.pad_begin[0], g.pad_begin[1], g.dilation[0], g.dilation[1], 0};
  d.Wp = d.OW + (d.kw - 1) * d.dw;
  const int64_t P = d.OH * d.OW, K = d.C * d.kh * d.kw;
  if (P == 0 || g.N == 0 || d.M == 0) return;
  // Weights as [block][K][kMB] (k in W's order: c, ki, kj), zero past the block's size; the bias
  // as [block][kMB].
  const Blocks blocks(d.M);
  std::vector<float, CacheAligned<float>> wp(static_cast<size_t>(blocks.count * K * kMB), 0.f), bias(static_cast<size_t>(blocks.count * kMB), 0.f);
  for (int64_t b = 0; b < blocks.count; ++b)
    for (int64_t i = 0; i < blocks.size(b); ++i) {
      const int64_t m = blocks.first(b) + i;
      if (B) bias[static_cast<size_t>(b * kMB + i)] = B[m];
      for (int64_t k = 0; k < K; ++k) wp[static_cast<size_t>((b * K + k) * kMB + i)] = W[m * K + k];
    }
  const ActParams ap = avx2::act_params(act.epi);
  const int64_t flops_per_row = 2 * d.M * K * d.OW;
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 21) / std::max<int64_t>(1, flops_per_row));
  avx2::with_in_reg(act.epi, [&]<InReg Act>() {
    pool.parallel_for(g.N * d.OH, grain, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e;) {
        const int64_t n = i / d.OH, r0 = i % d.OH, r1 = std::min(d.OH, r0 + (e - i));
        const int64_t at = n * d.M * P;
        float* const y = Y + at;
        // y streamed when every whole store of 16 starts on a cache line and the epilogue keeps
        // its own output (nothing reads y during the run).
        const bool stream = Act != InReg::None && d.OW % 16 == 0 && reinterpret_cast<uintptr_t>(y) % 64 == 0;
        const Out out{y,
                      Act == InReg::None ? nullptr : act.z1 + at,
                      Act == InReg::SiLU ? act.z2 + at : nullptr,
                      Act == InReg::Add ? act.addend + at : nullptr,
                      P,
                      stream,
                      ap};
        rows<Act>(d, blocks, X + n * d.C * d.H * d.W, wp.data(), bias.data(), out, r0, r1);
        i += r1 - r0;
      }
    });
  });
}
#else
// Never called: conv_rows_applies() is false on other architectures.
void conv_rows_avx2(const ConvGeom&, const float*, const float*, const float*, float*, ThreadPool&, const EpilogueOut&) {}
#endif

}  // namespace nnxr::runtime
