// Conv (im2col + gemm_packed, or sgemm without AVX2; the 3x3 depthwise kernel and a general
// direct depthwise one; naive N-d reference) and ConvTranspose (sgemm + col2im, naive reference).
#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <type_traits>

#include "model/half.h"
#include "model/runtime/avx2.h"
#include "model/runtime/avx512.h"
#include "model/runtime/compute.h"
#include "model/runtime/exp_lanes.h"
#include "model/runtime/gemm_packed.h"
#include "model/runtime/kernel.h"
#include "model/runtime/spatial.h"

namespace nnxr::runtime {

int64_t conv_out_dim(int64_t in, int64_t kernel, int64_t stride, int64_t dilation, int64_t pad_total, bool ceil_mode) {
  const int64_t span = in + pad_total - ((kernel - 1) * dilation + 1);
  if (span < 0) return 0;
  return (ceil_mode ? (span + stride - 1) / stride : span / stride) + 1;
}

namespace {

// 2-D view of a 1-D or 2-D geometry.
struct G2 {
  int64_t H, W, kh, kw, sh, sw, dh, dw, ph, pw, OH, OW;
};
G2 as2d(const ConvGeom& g) {
  if (g.spatial() == 2)
    return {g.in[0], g.in[1], g.kernel[0], g.kernel[1], g.stride[0], g.stride[1], g.dilation[0], g.dilation[1], g.pad_begin[0], g.pad_begin[1],
            g.out[0], g.out[1]};
  if (g.spatial() == 1) return {1, g.in[0], 1, g.kernel[0], 1, g.stride[0], 1, g.dilation[0], 0, g.pad_begin[0], 1, g.out[0]};
  throw std::invalid_argument("2-D kernel used with spatial rank " + std::to_string(g.spatial()));
}


}  // namespace

void conv_naive(const ConvGeom& g, const float* X, const float* W, const float* B, float* Y) {
  const size_t S = g.in.size();
  const int64_t Cg = g.C / g.group, Mg = g.M / g.group;
  const int64_t P = product(g.out), KS = product(g.kernel), IS = product(g.in);
  std::vector<int64_t> o(S), k(S);
  for (int64_t n = 0; n < g.N; ++n)
    for (int64_t m = 0; m < g.M; ++m) {
      const int64_t grp = m / Mg;
      for (int64_t p = 0; p < P; ++p) {
        int64_t rem = p;
        for (size_t d = S; d-- > 0;) {
          o[d] = rem % g.out[d];
          rem /= g.out[d];
        }
        double acc = B ? B[m] : 0.0;
        for (int64_t c = 0; c < Cg; ++c)
          for (int64_t kk = 0; kk < KS; ++kk) {
            int64_t r2 = kk, off = 0;
            bool inside = true;
            for (size_t d = S; d-- > 0;) {
              k[d] = r2 % g.kernel[d];
              r2 /= g.kernel[d];
            }
            int64_t mul = 1;
            for (size_t d = S; d-- > 0;) {
              const int64_t i = o[d] * g.stride[d] - g.pad_begin[d] + k[d] * g.dilation[d];
              if (i < 0 || i >= g.in[d]) inside = false;
              off += i * mul;
              mul *= g.in[d];
            }
            if (!inside) continue;
            acc += static_cast<double>(X[(n * g.C + grp * Cg + c) * IS + off]) * W[(m * Cg + c) * KS + kk];
          }
        Y[(n * g.M + m) * P + p] = static_cast<float>(acc);
      }
    }
}

#if defined(__x86_64__) || defined(__i386__)
namespace {
__attribute__((target("avx2,fma"))) void copy_every_other_avx2(const float* src, float* dst, int64_t n) {
  int64_t i = 0;
  if (n > 8) {  // whole vectors while they read no further than the last element (src[2 (n - 1)])
    i = (n - 1) / 8 * 8;
    avx2::split_even_odd(src, i, dst, nullptr);
  }
  for (; i < n; ++i) dst[i] = src[2 * i];
}
}  // namespace
#endif

void copy_every_other(const float* src, float* dst, int64_t n) {
#if defined(__x86_64__) || defined(__i386__)
  if (cpu_has_avx2_fma()) return copy_every_other_avx2(src, dst, n);
#endif
  for (int64_t i = 0; i < n; ++i) dst[i] = src[2 * i];
}

namespace {

// Rows [r0, r1) of the im2col matrix [Kdim, pb] (row r = tap (c, ki, kj)) of output columns
// [p0, p0 + pb) of one image and group, into cols (row stride pb). T: float, or float16 bits
// (copied as they are).
template <class T>
void im2col_rows(const G2& s, const T* x, int64_t KK, int64_t p0, int64_t pb, int64_t r0, int64_t r1, T* cols) {
  const int64_t HW = s.H * s.W;
  for (int64_t r = r0; r < r1; ++r) {
    const int64_t c = r / KK, ki = (r / s.kw) % s.kh, kj = r % s.kw;
    const T* xc = x + c * HW;
    T* dst = cols + r * pb;
    // Tap (ki, kj) reads column ow * sw + off of row oh * sh - ph + ki * dh; the columns
    // inside the input are ow in [ow_lo, ow_hi). One output row (or part of one) at a time:
    // zeros, a contiguous copy (stride 1) or a strided one, zeros.
    const int64_t off = kj * s.dw - s.pw;
    const int64_t ow_lo = off >= 0 ? 0 : (-off + s.sw - 1) / s.sw;
    const int64_t ow_hi = std::min(s.OW, s.W - off <= 0 ? 0 : (s.W - off + s.sw - 1) / s.sw);
    for (int64_t p = p0; p < p0 + pb;) {
      const int64_t oh = p / s.OW, ow0 = p % s.OW, ow1 = std::min(s.OW, ow0 + (p0 + pb - p));
      T* d = dst + (p - p0);  // d[ow - ow0]
      const int64_t ih = oh * s.sh - s.ph + ki * s.dh;
      if (ih < 0 || ih >= s.H) {
        std::fill(d, d + (ow1 - ow0), T{0});  // (float16 0 is all zero bits)
      } else {
        const T* row = xc + ih * s.W;  // column ow reads row[ow * sw + off]
        const int64_t lo = std::clamp(ow_lo, ow0, ow1), hi = std::clamp(ow_hi, lo, ow1);
        std::fill(d, d + (lo - ow0), T{0});
        if (s.sw == 1) std::copy(row + lo + off, row + hi + off, d + (lo - ow0));
        else if (std::is_same_v<T, float> && s.sw == 2 && hi > lo) copy_every_other(reinterpret_cast<const float*>(row + lo * 2 + off), reinterpret_cast<float*>(d + (lo - ow0)), hi - lo);
        else
          for (int64_t ow = lo; ow < hi; ++ow) d[ow - ow0] = row[ow * s.sw + off];
        std::fill(d + (hi - ow0), d + (ow1 - ow0), T{0});
      }
      p += ow1 - ow0;
    }
  }
}

#if defined(__x86_64__) || defined(__i386__)
// Lanes [lo, hi) of 16 (clamped).
NNXR_AVX512 inline __mmask16 lane_range(int64_t lo, int64_t hi) { return avx512::lanes(hi) & static_cast<__mmask16>(~avx512::lanes(lo)); }

// im2col_rows for every row of one image and group, on AVX-512, where the taps' columns are
// contiguous (dilation 1 along the width) and the stride along it is 1 or 2: 16 outputs of one
// output row at a time for each tap, read with masked loads (the lanes outside the input row read
// nothing and are zero: the padding) and, for stride 2, their even lanes gathered by one permute.
// No per-element branches and no scalar row ends: for the stride-2 3x3 layers im2col_rows spent a
// fifth of the layer's time copying.
NNXR_AVX512 void im2col_wide_avx512(const G2& s, const float* x, int64_t C, int64_t p0, int64_t pb, float* cols) {
  const int64_t HW = s.H * s.W, KK = s.kh * s.kw;
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  for (int64_t p = p0; p < p0 + pb;) {
    const int64_t oh = p / s.OW, ow0 = p % s.OW, ow1 = std::min(s.OW, ow0 + (p0 + pb - p));
    float* const seg = cols + (p - p0);  // this output row's part of row r: seg + r * pb
    // The input columns this output row reads, for prefetching a few channels ahead (rows of one
    // channel are a plane apart: no hardware prefetcher follows that).
    const int64_t first = std::max<int64_t>(0, ow0 * s.sw - s.pw), last = std::min(s.W, (ow1 - 1) * s.sw + s.kw - s.pw);
    constexpr int64_t kAhead = 4;
    for (int64_t c = 0; c < C; ++c)
      for (int64_t ki = 0; ki < s.kh; ++ki) {
        if (const int64_t ih = oh * s.sh - s.ph + ki * s.dh; c + kAhead < C && ih >= 0 && ih < s.H)
          for (int64_t i = first; i < last; i += 16) _mm_prefetch(reinterpret_cast<const char*>(x + (c + kAhead) * HW + ih * s.W + i), _MM_HINT_T0);
        const int64_t ih = oh * s.sh - s.ph + ki * s.dh;
        float* const d0 = seg + (c * KK + ki * s.kw) * pb;
        if (ih < 0 || ih >= s.H) {
          for (int64_t kj = 0; kj < s.kw; ++kj) std::fill(d0 + kj * pb, d0 + kj * pb + (ow1 - ow0), 0.f);
          continue;
        }
        const float* const row = x + c * HW + ih * s.W;
        for (int64_t kj = 0; kj < s.kw; ++kj) {
          float* const d = d0 + kj * pb;
          for (int64_t o = ow0; o < ow1; o += 16) {
            const __mmask16 out = avx512::lanes(ow1 - o);
            // Input column of lane e of the loads: i0 + e.
            const int64_t i0 = o * s.sw + kj - s.pw;
            __m512 v;
            if (s.sw == 1) {
              v = _mm512_maskz_loadu_ps(lane_range(-i0, s.W - i0) & out, row + i0);
            } else {
              const int64_t used = 2 * (ow1 - o) - 1;  // elements read: lanes [0, used) of the pair
              const __m512 lo = _mm512_maskz_loadu_ps(lane_range(-i0, std::min(s.W - i0, used)), row + i0);
              const __m512 hi = _mm512_maskz_loadu_ps(lane_range(-i0 - 16, std::min(s.W - i0, used) - 16), row + i0 + 16);
              v = _mm512_permutex2var_ps(lo, even, hi);
            }
            _mm512_mask_storeu_ps(d + (o - ow0), out, v);
          }
        }
      }
    p += ow1 - ow0;
  }
}
#endif

// Whether im2col_wide_avx512 applies (and the CPU has AVX-512).
bool im2col_wide(const G2& s) { return cpu_has_avx512() && s.dw == 1 && (s.sw == 1 || s.sw == 2) && s.W < (int64_t{1} << 30); }

// Rows [0, C KK) of the im2col matrix of columns [p0, p0 + pb) (float).
void im2col_all(const G2& s, const float* x, int64_t C, int64_t p0, int64_t pb, float* cols) {
#if defined(__x86_64__) || defined(__i386__)
  if (im2col_wide(s)) return im2col_wide_avx512(s, x, C, p0, pb, cols);
#endif
  im2col_rows(s, x, s.kh * s.kw, p0, pb, 0, C * s.kh * s.kw, cols);
}

// How conv_im2col and conv_im2col_f16 share a product of Mg x Kdim (x P columns) over the pool.
struct ConvBlocking {
  int64_t block, blocks;    // blocks of output columns, each done whole by one thread
  int64_t flops_per_block;
  bool by_panels;           // split by panels of output rows (a pointwise product on a small plane, or
                            // whole blocks that fall unevenly to the threads)
  bool whole_blocks;        // the blocks above, one thread each (else the product split by rows)
};

// Blocks sized so that a block's columns and outputs (`budget` elements, in steps of `step`
// columns, at most `max_block`) stay in L2; as many for every thread (a run waits for the last
// one), and at least one per thread when each still gets 64 columns or more: a thread then
// works on its own columns from im2col to epilogue, which beats sharing one im2col buffer between
// cores. (From 128 columns to 64: at 2 threads on an Intel Xeon, MNIST's 32 -> 64 3x3 on 14x14,
// 196 columns, ran on one thread; mnist-cnn 0.138 -> 0.104 ms a run, the SqueezeNet 1.1 models,
// whose 13x13 layers have 169, 4% less.) `panels`: gemm_packed's panels of the weights, 0
// without them.
ConvBlocking conv_blocking(const ConvGeom& g, int64_t P, int64_t Kdim, bool pointwise, int64_t threads, int64_t panels, int64_t budget,
                           int64_t step, int64_t max_block) {
  const int64_t Cg = g.C / g.group, Mg = g.M / g.group;
  const int64_t per_col = (pointwise ? Cg : Kdim) + Mg;
  ConvBlocking b{};
  b.block = std::clamp<int64_t>(budget / per_col / step * step, 64, max_block);
  b.blocks = (P + b.block - 1) / b.block;
  if (threads > 1 && b.blocks < threads && P >= 64 * threads) b.blocks = threads;
  if (b.blocks > 1 && b.blocks % threads != 0) b.blocks += threads - b.blocks % threads;
  b.block = std::max<int64_t>(16, ((P + b.blocks - 1) / b.blocks + 15) / 16 * 16);
  b.blocks = (P + b.block - 1) / b.block;
  b.flops_per_block = 2 * Mg * Kdim * std::min(b.block, P);
  // A pointwise product on a small plane (B small enough for every thread to read it whole) is
  // split by panels when that shares the work more evenly: 196 columns split as 112 + 84, while
  // 96 panels split as 48 + 48. Not when the columns share it within 2% as evenly: each thread
  // then reads only its part of B (SqueezeNet's 256 -> 32 on 27x27, 6 panels as 3 + 3 or 729
  // columns as 368 + 361, ran 1.1 times faster at 2 threads than at 1 split by panels).
  if (panels > 0 && pointwise && threads > 1 && P < 1024) {
    const double even_cols = static_cast<double>(P) / static_cast<double>(threads * std::min(P, b.block) * ((b.blocks + threads - 1) / threads));
    const double even_panels = static_cast<double>(panels) / static_cast<double>(threads * ((panels + threads - 1) / threads));
    b.by_panels = even_panels > even_cols + 0.02;
  }
  // Any product whose whole blocks fall unevenly to the threads is split by panels when that gives
  // the busiest thread a tenth less work, counted in vectors of 16 columns (a tile's unit). At 2
  // threads ResNet-50's 14 x 14 layers (196 columns) ran as blocks of 64, 64, 64 and 4: one thread
  // took 128 columns (8 vectors) and the other 68 (5). By panels each takes half the rows of all
  // 196 (13 vectors: 6.5 each).
  if (panels > 0 && threads > 1 && !b.by_panels && b.blocks >= threads) {
    auto vectors = [](int64_t cols) { return (cols + 15) / 16; };
    int64_t busiest = 0;
    for (int64_t t = 0; t < threads; ++t) {
      int64_t v = 0;
      for (int64_t i = t * b.blocks / threads; i < (t + 1) * b.blocks / threads; ++i) v += vectors(std::min(b.block, P - i * b.block));
      busiest = std::max(busiest, v);
    }
    const double share = static_cast<double>((panels + threads - 1) / threads) / static_cast<double>(panels);
    b.by_panels = share * static_cast<double>(vectors(P)) < 0.9 * static_cast<double>(busiest);
  }
  // A small product (under 8 Mflop: tens of microseconds) is not split by rows: that split (im2col
  // by rows into one buffer, then the product by panels) costs two pool calls and a third more
  // time than whole blocks (MNIST's 32 -> 64 3x3 at 14x14: 115 us against 98 us when the caller
  // ended up with every chunk). It runs as whole blocks, which the pool shares when there are
  // several (from 64 columns a thread, above). A pointwise product split by panels has neither
  // cost (one pool call, no im2col): it is split from 2 Mflop (SqueezeNet's 1x1 layers on 13x13
  // planes, 5-8 Mflop, ran on one thread).
  const bool small = 2 * g.N * g.M * Kdim * P < (int64_t{1} << (b.by_panels && pointwise ? 21 : 23));
  b.whole_blocks = threads == 1 || small || (b.blocks >= threads && !b.by_panels);
  return b;
}

// The row blocks of M rows in lanes_kernel.
int64_t lane_parts(int64_t M) { return (M + lanes_kernel_rows() - 1) / lanes_kernel_rows(); }

}  // namespace

std::vector<PackedA> pack_conv_weights(const float* W, int64_t M, int64_t group, int64_t Kdim) {
  std::vector<PackedA> packed;
  const int64_t Mg = M / group;
  for (int64_t grp = 0; grp < group; ++grp) packed.push_back(pack_a(W + grp * Mg * Kdim, Mg, Kdim, Kdim));
  return packed;
}

// The bias and the epilogue are applied to each block of output columns right after its product,
// while the block is still in cache: in registers with gemm_packed, else after sgemm (beta = 0).
void conv_im2col(const ConvGeom& g, const float* X, const float* W, const float* B, float* Y, ThreadPool& pool, const EpilogueOut& act,
                 const std::vector<PackedA>* packed) {
  const G2 s = as2d(g);
  const int64_t Cg = g.C / g.group, Mg = g.M / g.group;
  const int64_t P = s.OH * s.OW, HW = s.H * s.W, KK = s.kh * s.kw, Kdim = Cg * KK;
  if (P == 0) return;
  const bool pointwise = KK == 1 && s.sh == 1 && s.sw == 1 && s.ph == 0 && s.pw == 0 && s.OH == s.H && s.OW == s.W;
  const bool post = B || act.epi;
  const bool fast = gemm_packed_available();
  std::vector<PackedA> local;
  if (fast && !packed) {
    local = pack_conv_weights(W, g.M, g.group, Kdim);
    packed = &local;
  }
  // Rows [m0, m1) of group grp, columns [p0, p0 + pb): bias and epilogue (after sgemm).
  auto finish = [&](int64_t n, int64_t grp, int64_t m0, int64_t m1, int64_t p0, int64_t pb) {
    for (int64_t m = m0; m < m1; ++m) {
      const int64_t ch = grp * Mg + m, at = (n * g.M + ch) * P + p0;
      epilogue_apply(act, Y + at, at, pb, B != nullptr, B ? B[ch] : 0.f);
    }
  };
  // Panels [q0, q1) of group grp's product over columns [p0, p0 + pb), B read from src (stride ldb);
  // lanes: row blocks [q0, q1) of gemm_lanes instead.
  auto packed_part = [&](int64_t n, int64_t grp, int64_t q0, int64_t q1, int64_t p0, int64_t pb, const float* src, int64_t ldb, bool lanes) {
    const int64_t at = (n * g.M + grp * Mg) * P + p0;
    const GemmOut out{Y + at, P, B ? B + grp * Mg : nullptr, &act, at};
    if (lanes) lanes_kernel((*packed)[static_cast<size_t>(grp)], q0, q1, src, ldb, 0, pb, out);
    else gemm_packed((*packed)[static_cast<size_t>(grp)], q0, q1, src, ldb, 0, pb, out);
  };
  // Blocks of output columns, each done whole by one thread (im2col into that thread's buffer,
  // product, bias and epilogue), of floats.
  const ConvBlocking cb = conv_blocking(g, P, Kdim, pointwise, pool.threads(), fast ? (*packed)[0].panels() : 0, int64_t{1} << 17, 16, 1024);
  const int64_t block = cb.block, blocks = cb.blocks, flops_per_block = cb.flops_per_block;
  if (cb.whole_blocks) {
    for (int64_t n = 0; n < g.N; ++n)
      for (int64_t grp = 0; grp < g.group; ++grp) {
        const float* x = X + (n * g.C + grp * Cg) * HW;
        float* y = Y + (n * g.M + grp * Mg) * P;
        const float* w = W + grp * Mg * Kdim;
        const int64_t panels = fast ? (*packed)[static_cast<size_t>(grp)].panels() : 0;
        pool.parallel_for(blocks, std::max<int64_t>(1, (int64_t{1} << 21) / flops_per_block), [&](int64_t b0, int64_t b1) {
          // Each thread's own column buffer (kept: allocating per call costs page faults).
          thread_local std::vector<float, CacheAligned<float>> col;
          for (int64_t bi = b0; bi < b1; ++bi) {
            const int64_t p0 = bi * block, pb = std::min(block, P - p0);
            const float* src = x + p0;
            int64_t ldb = HW;
            if (!pointwise) {
              if (col.size() < static_cast<size_t>(Kdim * block)) col.resize(static_cast<size_t>(Kdim * block));
              im2col_all(s, x, Cg, p0, pb, col.data());
              src = col.data();
              ldb = pb;
            }
            if (fast) {
              if (lanes_kernel_wins(Mg, pb, Kdim)) packed_part(n, grp, 0, lane_parts(Mg), p0, pb, src, ldb, true);
              else packed_part(n, grp, 0, panels, p0, pb, src, ldb, false);
              continue;
            }
            gemm_serial(false, false, Mg, pb, Kdim, 1.f, w, Kdim, src, ldb, 0.f, y + p0, P);
            if (post) finish(n, grp, 0, Mg, p0, pb);
          }
        });
      }
    return;
  }
  // Few columns (or a small pointwise plane, above): the product split over the pool by rows
  // (panels of gemm_packed, or gemm_blas), im2col split by rows, the bias and epilogue (after
  // gemm_blas) by output rows.
  const int64_t cblock = pointwise ? P : std::max<int64_t>(std::min<int64_t>(P, 64), std::min<int64_t>(P, (int64_t{1} << 21) / std::max<int64_t>(1, Kdim)));
  thread_local std::vector<float, CacheAligned<float>> col;
  if (!pointwise && col.size() < static_cast<size_t>(Kdim * cblock)) col.resize(static_cast<size_t>(Kdim * cblock));
  float* const cols = col.data();  // (worker threads write into this thread's buffer)
  for (int64_t n = 0; n < g.N; ++n)
    for (int64_t grp = 0; grp < g.group; ++grp) {
      const float* x = X + (n * g.C + grp * Cg) * HW;
      float* y = Y + (n * g.M + grp * Mg) * P;
      const float* w = W + grp * Mg * Kdim;
      for (int64_t p0 = 0; p0 < P; p0 += cblock) {
        const int64_t pb = std::min(cblock, P - p0);
        const float* src = x + p0;
        int64_t ldb = HW;
        if (!pointwise) {
          pool.parallel_for(Kdim, 4, [&](int64_t r0, int64_t r1) { im2col_rows(s, x, KK, p0, pb, r0, r1, cols); });
          src = cols;
          ldb = pb;
        }
        if (fast) {
          const bool lanes = lanes_kernel_wins(Mg, pb, Kdim);
          const int64_t rows = lanes ? lanes_kernel_rows() : kPanelRows;
          const int64_t parts = lanes ? lane_parts(Mg) : (*packed)[static_cast<size_t>(grp)].panels();
          const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 17) / (2 * rows * std::max<int64_t>(1, Kdim) * pb));
          pool.parallel_for(parts, grain, [&](int64_t q0, int64_t q1) { packed_part(n, grp, q0, q1, p0, pb, src, ldb, lanes); });
          continue;
        }
        gemm_blas(false, false, Mg, pb, Kdim, 1.f, w, Kdim, src, ldb, 0.f, y + p0, P);
        if (post)
          pool.parallel_for(Mg, std::max<int64_t>(1, 4096 / pb), [&](int64_t m0, int64_t m1) { finish(n, grp, m0, m1, p0, pb); });
      }
    }
}

bool conv_f16_applies(const ConvGeom& g) {
  return gemm_packed_available() && (g.spatial() == 1 || g.spatial() == 2) && !(g.group > 1 && g.group == g.C && g.M == g.C);
}

// As conv_im2col's packed path, on float16 bits: im2col copies the halves, gemm_packed_f16
// widens them in registers and rounds each output once.
void conv_im2col_f16(const ConvGeom& g, const uint16_t* X, const std::vector<PackedA>& packed, const float* B, uint16_t* Y, uint16_t* relu,
                     ThreadPool& pool) {
  const G2 s = as2d(g);
  const int64_t Cg = g.C / g.group, Mg = g.M / g.group;
  const int64_t P = s.OH * s.OW, HW = s.H * s.W, KK = s.kh * s.kw, Kdim = Cg * KK;
  if (P == 0) return;
  const bool pointwise = KK == 1 && s.sh == 1 && s.sw == 1 && s.ph == 0 && s.pw == 0 && s.OH == s.H && s.OW == s.W;
  auto part = [&](int64_t n, int64_t grp, int64_t q0, int64_t q1, int64_t p0, int64_t pb, const uint16_t* src, int64_t ldb) {
    const int64_t at = (n * g.M + grp * Mg) * P + p0;
    const GemmOutF16 out{Y + at, P, B ? B + grp * Mg : nullptr, relu ? relu + at : nullptr};
    gemm_packed_f16(packed[static_cast<size_t>(grp)], q0, q1, src, ldb, 0, pb, out);
  };
  // The blocking of conv_im2col, of halves: twice the columns in the same bytes.
  const ConvBlocking cb = conv_blocking(g, P, Kdim, pointwise, pool.threads(), packed[0].panels(), int64_t{1} << 18, 32, 2048);
  const int64_t block = cb.block, blocks = cb.blocks, flops_per_block = cb.flops_per_block;
  if (cb.whole_blocks) {
    for (int64_t n = 0; n < g.N; ++n)
      for (int64_t grp = 0; grp < g.group; ++grp) {
        const uint16_t* x = X + (n * g.C + grp * Cg) * HW;
        const int64_t panels = packed[static_cast<size_t>(grp)].panels();
        pool.parallel_for(blocks, std::max<int64_t>(1, (int64_t{1} << 21) / flops_per_block), [&](int64_t b0, int64_t b1) {
          thread_local std::vector<uint16_t, CacheAligned<uint16_t>> col;
          for (int64_t bi = b0; bi < b1; ++bi) {
            const int64_t p0 = bi * block, pb = std::min(block, P - p0);
            const uint16_t* src = x + p0;
            int64_t ldb = HW;
            if (!pointwise) {
              if (col.size() < static_cast<size_t>(Kdim * block)) col.resize(static_cast<size_t>(Kdim * block));
              im2col_rows(s, x, KK, p0, pb, 0, Kdim, col.data());
              src = col.data();
              ldb = pb;
            }
            part(n, grp, 0, panels, p0, pb, src, ldb);
          }
        });
      }
    return;
  }
  const int64_t cblock = pointwise ? P : std::max<int64_t>(std::min<int64_t>(P, 64), std::min<int64_t>(P, (int64_t{1} << 22) / std::max<int64_t>(1, Kdim)));
  thread_local std::vector<uint16_t, CacheAligned<uint16_t>> col;
  if (!pointwise && col.size() < static_cast<size_t>(Kdim * cblock)) col.resize(static_cast<size_t>(Kdim * cblock));
  uint16_t* const cols = col.data();
  for (int64_t n = 0; n < g.N; ++n)
    for (int64_t grp = 0; grp < g.group; ++grp) {
      const uint16_t* x = X + (n * g.C + grp * Cg) * HW;
      for (int64_t p0 = 0; p0 < P; p0 += cblock) {
        const int64_t pb = std::min(cblock, P - p0);
        const uint16_t* src = x + p0;
        int64_t ldb = HW;
        if (!pointwise) {
          pool.parallel_for(Kdim, 4, [&](int64_t r0, int64_t r1) { im2col_rows(s, x, KK, p0, pb, r0, r1, cols); });
          src = cols;
          ldb = pb;
        }
        const int64_t panels = packed[static_cast<size_t>(grp)].panels();
        const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 17) / (2 * kPanelRows * std::max<int64_t>(1, Kdim) * pb));
        pool.parallel_for(panels, grain, [&](int64_t q0, int64_t q1) { part(n, grp, q0, q1, p0, pb, src, ldb); });
      }
    }
}

namespace {

constexpr int64_t kDwBlock = 32;  // outputs per block: four 8-float accumulators

// out[j] = bias + sum_t w[t] * base[off[t] + j] for j in [0, n). Reads base[off[t] + j] for j up
// to n rounded up to kDwBlock (callers leave that much slack); stores only out[0, n). Built for
// AVX2 + FMA where the CPU has them (see dw_accumulate below), SSE otherwise.
// W floats per vector: 8 (AVX2, or two SSE registers), four accumulators; 16 (AVX-512), two.
template <int W = 8>
[[gnu::always_inline]] inline void dw_accumulate_body(const float* base, const int64_t* off, const float* w, int64_t taps, float bias, float* out,
                                                      int64_t n) {
  using V = typename Lanes<W>::F;
  constexpr int kV = kDwBlock / W;
  for (int64_t j0 = 0; j0 < n; j0 += kDwBlock) {
    V a[kV];  // in registers across all taps
    for (int v = 0; v < kV; ++v) a[v] = V{} + bias;
    for (int64_t t = 0; t < taps; ++t) {
      const float* src = base + off[t] + j0;
      const float wv = w[t];
      for (int v = 0; v < kV; ++v) {
        V x;
        std::memcpy(&x, src + W * v, sizeof x);
        a[v] += wv * x;
      }
    }
    if (n - j0 >= kDwBlock) std::memcpy(out + j0, a, sizeof a);
    else std::memcpy(out + j0, a, static_cast<size_t>(n - j0) * sizeof(float));
  }
}

__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma"))) void dw_accumulate_avx512(const float* base, const int64_t* off,
                                                                                                 const float* w, int64_t taps, float bias,
                                                                                                 float* out, int64_t n) {
  dw_accumulate_body<16>(base, off, w, taps, bias, out, n);
}

__attribute__((target("avx2,fma"))) void dw_accumulate_avx2(const float* base, const int64_t* off, const float* w, int64_t taps, float bias,
                                                              float* out, int64_t n) {
  dw_accumulate_body(base, off, w, taps, bias, out, n);
}
void dw_accumulate_sse(const float* base, const int64_t* off, const float* w, int64_t taps, float bias, float* out, int64_t n) {
  dw_accumulate_body(base, off, w, taps, bias, out, n);
}
void dw_accumulate(const float* base, const int64_t* off, const float* w, int64_t taps, float bias, float* out, int64_t n) {
  (cpu_has_avx512() ? dw_accumulate_avx512 : cpu_has_avx2_fma() ? dw_accumulate_avx2 : dw_accumulate_sse)(base, off, w, taps, bias, out, n);
}

}  // namespace

// Each plane is first copied into a zero-padded buffer whose columns are split by phase modulo the
// stride, so that every kernel tap reads a contiguous run. With stride 1 and narrow rows the whole
// plane is one run (the padded rows laid end to end; the padding columns' outputs are computed and
// dropped), so that narrow planes still fill whole vector blocks; otherwise one output row at a
// time.
void conv_depthwise(const ConvGeom& g, const float* X, const float* W, const float* B, float* Y, ThreadPool& pool, const EpilogueOut& act) {
  const G2 s = as2d(g);
  const int64_t HW = s.H * s.W, P = s.OH * s.OW, KK = s.kh * s.kw;
  if (P == 0) return;
  const int64_t Hp = (s.OH - 1) * s.sh + (s.kh - 1) * s.dh + 1;  // padded rows that are read
  const int64_t Wp = (s.OW - 1) * s.sw + (s.kw - 1) * s.dw + 1;  // padded columns that are read
  const int64_t Wq = (Wp + s.sw - 1) / s.sw;                     // columns per phase
  // Rows of 64 or more outputs fill most of their blocks: those go straight into y, one row at a
  // time (no copy out of a flat buffer).
  const bool flat = s.sh == 1 && s.sw == 1 && s.OW < 64;
  // Tap t reads row (oh * sh + ki * dh), phase (kj * dw) % sw, from column ow + (kj * dw) / sw.
  std::vector<int64_t> off(static_cast<size_t>(KK));
  for (int64_t ki = 0; ki < s.kh; ++ki)
    for (int64_t kj = 0; kj < s.kw; ++kj) {
      const int64_t t = ki * s.kw + kj, c = kj * s.dw;
      off[static_cast<size_t>(t)] = ki * s.dh * s.sw * Wq + (c % s.sw) * Wq + c / s.sw;
    }
  pool.parallel_for(g.N * g.C, 1, [&](int64_t b, int64_t e) {
    std::vector<float> buf(static_cast<size_t>(Hp * s.sw * Wq + kDwBlock));  // + slack for a last partial block
    std::vector<float> flat_out(flat ? static_cast<size_t>(s.OH * Wq) : 0);
    for (int64_t plane = b; plane < e; ++plane) {
      const int64_t c = plane % g.C;
      const float* x = X + plane * HW;
      const float* w = W + c * KK;
      float* y = Y + plane * P;
      const float bias = B ? B[c] : 0.f;
      for (int64_t r = 0; r < Hp; ++r) {
        const int64_t ih = r - s.ph;
        for (int64_t f = 0; f < s.sw; ++f) {
          float* dst = buf.data() + (r * s.sw + f) * Wq;
          if (ih < 0 || ih >= s.H) {
            std::fill(dst, dst + Wq, 0.f);
            continue;
          }
          // Columns j with 0 <= j * sw + f - pw < W come from the input row; the rest are padding.
          const int64_t lo = std::min(Wq, s.pw > f ? (s.pw - f + s.sw - 1) / s.sw : 0);
          const int64_t hi = std::max(lo, std::min(Wq, (s.W + s.pw - f + s.sw - 1) / s.sw));
          const float* xr = x + ih * s.W;  // column j reads xr[j * sw + f - pw]
          std::fill(dst, dst + lo, 0.f);
          if (s.sw == 1) {
            if (hi > lo) std::memcpy(dst + lo, xr + (lo - s.pw), static_cast<size_t>(hi - lo) * sizeof(float));
          } else
            for (int64_t j = lo; j < hi; ++j) dst[j] = xr[j * s.sw + f - s.pw];
          std::fill(dst + hi, dst + Wq, 0.f);
        }
      }
      if (flat) {
        // Output (oh, ow) is flat element oh * Wq + ow.
        dw_accumulate(buf.data(), off.data(), w, KK, bias, flat_out.data(), (s.OH - 1) * Wq + s.OW);
        for (int64_t oh = 0; oh < s.OH; ++oh)
          std::memcpy(y + oh * s.OW, flat_out.data() + oh * Wq, static_cast<size_t>(s.OW) * sizeof(float));
      } else {
        for (int64_t oh = 0; oh < s.OH; ++oh) dw_accumulate(buf.data() + oh * s.sh * s.sw * Wq, off.data(), w, KK, bias, y + oh * s.OW, s.OW);
      }
      if (act.epi) epilogue_apply(act, y, plane * P, P, false, 0.f);
    }
  });
}

void conv_auto(const ConvGeom& g, const float* X, const float* W, const float* B, float* Y, ThreadPool& pool, const EpilogueOut& act,
               const std::vector<PackedA>* packed, ConvRowsCache* rows_cache) {
  if (g.spatial() > 2) {
    conv_naive(g, X, W, B, Y);
    if (act.epi) epilogue_apply(act, Y, 0, g.N * g.M * product(g.out), false, 0.f);
    return;
  }
  if (conv_depthwise3x3_applies(g)) return conv_depthwise3x3(g, X, W, B, Y, pool, act);
  if (g.group == g.C && g.M == g.C && g.group > 1) return conv_depthwise(g, X, W, B, Y, pool, act);
  if (conv_direct_applies(g)) return conv_direct(g, X, W, B, Y, pool, act);
  if (conv_pointwise_thin_applies(g)) return conv_pointwise_thin(g, X, W, B, Y, pool, act);
  if (conv_rows_applies(g)) return conv_rows(g, X, W, B, Y, pool, act, rows_cache);
  conv_im2col(g, X, W, B, Y, pool, act, packed);
}

void conv_transpose_naive(const ConvGeom& g, const float* X, const float* W, const float* B, float* Y) {
  const size_t S = g.in.size();
  const int64_t Cg = g.C / g.group, Mg = g.M / g.group;
  const int64_t P = product(g.out), KS = product(g.kernel), IS = product(g.in);
  for (int64_t n = 0; n < g.N; ++n)
    for (int64_t m = 0; m < g.M; ++m)
      for (int64_t p = 0; p < P; ++p) Y[(n * g.M + m) * P + p] = B ? B[m] : 0.f;
  std::vector<int64_t> ii(S), k(S);
  for (int64_t n = 0; n < g.N; ++n)
    for (int64_t c = 0; c < g.C; ++c) {
      const int64_t grp = c / Cg;
      for (int64_t ip = 0; ip < IS; ++ip) {
        int64_t rem = ip;
        for (size_t d = S; d-- > 0;) {
          ii[d] = rem % g.in[d];
          rem /= g.in[d];
        }
        const float xv = X[(n * g.C + c) * IS + ip];
        for (int64_t mm = 0; mm < Mg; ++mm)
          for (int64_t kk = 0; kk < KS; ++kk) {
            int64_t r2 = kk;
            for (size_t d = S; d-- > 0;) {
              k[d] = r2 % g.kernel[d];
              r2 /= g.kernel[d];
            }
            int64_t off = 0, mul = 1;
            bool inside = true;
            for (size_t d = S; d-- > 0;) {
              const int64_t o = ii[d] * g.stride[d] - g.pad_begin[d] + k[d] * g.dilation[d];
              if (o < 0 || o >= g.out[d]) inside = false;
              off += o * mul;
              mul *= g.out[d];
            }
            if (!inside) continue;
            const int64_t m = grp * Mg + mm;
            Y[(n * g.M + m) * P + off] += xv * W[(c * Mg + mm) * KS + kk];
          }
      }
    }
}

namespace {

// The output row y (OW floats) of one input row's taps kj = 0..kw-1 (tap kj's W values at
// c + kj * cs): y[iw * sw - pw + kj * dw] += tap kj [iw] where that lies in the row.
void scatter_taps(float* y, int64_t OW, const float* c, int64_t cs, int64_t W, int64_t kw, int64_t sw, int64_t dw, int64_t pw) {
  for (int64_t kj = 0; kj < kw; ++kj) {
    const int64_t off = kj * dw - pw;  // ow = iw * sw + off
    const int64_t lo = off >= 0 ? 0 : (-off + sw - 1) / sw;
    if (OW - 1 - off < 0) continue;
    const int64_t hi = std::min(W - 1, (OW - 1 - off) / sw);
    const float* src = c + kj * cs;
    for (int64_t iw = lo; iw <= hi; ++iw) y[iw * sw + off] += src[iw];
  }
}

// Columns [a, b) of the same row, each summed over the taps that reach it.
void gather_taps(float* y, int64_t a, int64_t b, const float* c, int64_t cs, int64_t W, int64_t kw, int64_t sw, int64_t dw, int64_t pw) {
  for (int64_t ow = a; ow < b; ++ow) {
    float acc = 0;
    for (int64_t kj = 0; kj < kw; ++kj) {
      const int64_t v = ow + pw - kj * dw;
      if (v >= 0 && v % sw == 0 && v / sw < W) acc += c[kj * cs + v / sw];
    }
    y[ow] += acc;
  }
}

#if defined(__x86_64__) || defined(__i386__)
// Stride 2, three taps (dilation 1): output column 2 t - pw gets tap 0 [t] + tap 2 [t - 1] and
// 2 t + 1 - pw tap 1 [t], 16 values of t a step as 32 adjacent outputs, for t in [t0, t1); returns
// the t reached.
NNXR_AVX512 int64_t taps_s2k3_avx512(float* y, const float* c0, const float* c1, const float* c2, int64_t t0, int64_t t1, int64_t pw) {
  const __m512i lo = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
  const __m512i hi = _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
  int64_t t = t0;
  for (; t + 16 <= t1; t += 16) {
    const __m512 e = _mm512_add_ps(_mm512_loadu_ps(c0 + t), _mm512_loadu_ps(c2 + t - 1)), o = _mm512_loadu_ps(c1 + t);
    float* yp = y + 2 * t - pw;
    _mm512_storeu_ps(yp, _mm512_add_ps(_mm512_loadu_ps(yp), _mm512_permutex2var_ps(e, lo, o)));
    _mm512_storeu_ps(yp + 16, _mm512_add_ps(_mm512_loadu_ps(yp + 16), _mm512_permutex2var_ps(e, hi, o)));
  }
  return t;
}

__attribute__((target("avx2,fma"))) int64_t taps_s2k3_avx2(float* y, const float* c0, const float* c1, const float* c2, int64_t t0, int64_t t1,
                                                            int64_t pw) {
  int64_t t = t0;
  for (; t + 8 <= t1; t += 8) {
    const __m256 e = _mm256_add_ps(_mm256_loadu_ps(c0 + t), _mm256_loadu_ps(c2 + t - 1)), o = _mm256_loadu_ps(c1 + t);
    const __m256 l = _mm256_unpacklo_ps(e, o), h = _mm256_unpackhi_ps(e, o);  // [e0 o0 e1 o1 | e4 o4 e5 o5], [e2 o2 e3 o3 | e6 ..]
    float* yp = y + 2 * t - pw;
    _mm256_storeu_ps(yp, _mm256_add_ps(_mm256_loadu_ps(yp), _mm256_permute2f128_ps(l, h, 0x20)));
    _mm256_storeu_ps(yp + 8, _mm256_add_ps(_mm256_loadu_ps(yp + 8), _mm256_permute2f128_ps(l, h, 0x31)));
  }
  return t;
}
#endif

// One input row's taps added to output row y: the vector kernels for stride 2 and three taps
// over the columns whose taps all lie in the row, the rest per column.
void add_row_taps(float* y, int64_t OW, const float* c, int64_t cs, int64_t W, int64_t kw, int64_t sw, int64_t dw, int64_t pw) {
#if defined(__x86_64__) || defined(__i386__)
  if (sw == 2 && kw == 3 && dw == 1 && OW - 2 + pw >= 0 && cpu_has_avx2_fma()) {
    // t in [t0, t1): 2 t - pw >= 0, 2 t + 1 - pw <= OW - 1, t - 1 >= 0, t <= W - 1.
    const int64_t t0 = std::max<int64_t>(1, pw > 0 ? (pw + 1) / 2 : 0), t1 = std::min<int64_t>(W, (OW - 2 + pw) / 2 + 1);
    int64_t t = t0;
    if (t1 - t0 >= 16) t = (cpu_has_avx512() ? taps_s2k3_avx512 : taps_s2k3_avx2)(y, c, c + cs, c + 2 * cs, t0, t1, pw);
    if (t > t0) {
      gather_taps(y, 0, std::min(OW, 2 * t0 - pw), c, cs, W, kw, sw, dw, pw);
      gather_taps(y, 2 * t - pw, OW, c, cs, W, kw, sw, dw, pw);
      return;
    }
  }
#endif
  scatter_taps(y, OW, c, cs, W, kw, sw, dw, pw);
}

}  // namespace

void conv_transpose_gemm(const ConvGeom& g, const float* X, const float* W, const float* B, float* Y, ThreadPool& pool) {
  if (g.spatial() > 2) return conv_transpose_naive(g, X, W, B, Y);
  const G2 s = as2d(g);  // here H, W are the input dims and OH, OW the output dims
  const int64_t Cg = g.C / g.group, Mg = g.M / g.group;
  const int64_t HW = s.H * s.W, P = s.OH * s.OW, KK = s.kh * s.kw, R = Mg * KK;
  for (int64_t n = 0; n < g.N; ++n)
    for (int64_t m = 0; m < g.M; ++m) std::fill(Y + (n * g.M + m) * P, Y + (n * g.M + m + 1) * P, B ? B[m] : 0.f);
  // Bands of input rows, each on one thread: its columns of the product col [R, rows x W] =
  // w^T [R, Cg] x x (sized to stay in L2), then each column's taps added to the output rows it
  // reaches. Bands two apart reach disjoint output rows (a band is at least ((kh - 1) dh + 1) / sh
  // rows): the even bands run together, then the odd ones.
  const int64_t reach = ((s.kh - 1) * s.dh + s.sh) / s.sh;
  const int64_t rows = std::min(s.H, std::max(reach, (int64_t{1} << 17) / std::max<int64_t>(1, R * s.W)));
  const int64_t bands = (s.H + rows - 1) / rows;
  const bool packed = gemm_packed_available();
  for (int64_t grp = 0; grp < g.group; ++grp) {
    const float* w = W + grp * Cg * R;  // [Cg, Mg*KK]
    PackedA a;
    if (packed) {
      std::vector<float> wt(static_cast<size_t>(R * Cg));
      for (int64_t c = 0; c < Cg; ++c)
        for (int64_t r = 0; r < R; ++r) wt[static_cast<size_t>(r * Cg + c)] = w[c * R + r];
      a = pack_a(wt.data(), R, Cg, Cg);
    }
    for (int64_t n = 0; n < g.N; ++n) {
      const float* x = X + (n * g.C + grp * Cg) * HW;
      float* y = Y + (n * g.M + grp * Mg) * P;
      for (int64_t parity = 0; parity < 2; ++parity)
        pool.parallel_for((bands - parity + 1) / 2, 1, [&](int64_t b0, int64_t b1) {
          std::vector<float> col(static_cast<size_t>(R * rows * s.W));
          for (int64_t band = 2 * b0 + parity; band < 2 * b1 + parity && band < bands; band += 2) {
            const int64_t ih0 = band * rows, ih1 = std::min(s.H, ih0 + rows), qb = (ih1 - ih0) * s.W;
            if (packed) gemm_packed(a, 0, a.panels(), x + ih0 * s.W, HW, 0, qb, GemmOut{col.data(), qb});
            else gemm_serial(true, false, R, qb, Cg, 1.f, w, R, x + ih0 * s.W, HW, 0.f, col.data(), qb);
            for (int64_t m = 0; m < Mg; ++m)
              for (int64_t ih = ih0; ih < ih1; ++ih)
                for (int64_t ki = 0; ki < s.kh; ++ki) {
                  const int64_t oh = ih * s.sh - s.ph + ki * s.dh;
                  if (oh < 0 || oh >= s.OH) continue;
                  const float* c = col.data() + (m * KK + ki * s.kw) * qb + (ih - ih0) * s.W;
                  add_row_taps(y + m * P + oh * s.OW, s.OW, c, qb, s.W, s.kw, s.sw, s.dw, s.pw);
                }
          }
        });
    }
  }
}

namespace {

// The optional bias input B (index 2) of Conv/ConvTranspose: [M] floats, or null.
const float* conv_bias(KernelContext& ctx, const ConvGeom& g) {
  const Value* bv = ctx.opt(2);
  if (!bv) return nullptr;
  ctx.expect_dtype(2, {DType::Float});
  if (bv->rank() != 1 || bv->dims()[0] != g.M)
    ctx.fail("bias " + ctx.input_name(2) + " has shape " + shape_str(bv->shape()) + ", expected [" + std::to_string(g.M) + "]");
  return bv->as<float>().data();
}

// Output 0 sized [N, M, out...].
float* conv_output(KernelContext& ctx, const ConvGeom& g) {
  Shape os{g.N, g.M};
  os.insert(os.end(), g.out.begin(), g.out.end());
  Value& y = ctx.out(0);
  y.reset(DType::Float, os);
  return y.mutable_as<float>().data();
}

// Constant weights [M, C/group, kernel...] (float, or float16 as the Conv sees them upcast)
// packed for gemm_packed once, at plan time, for the im2col path (depthwise and N-d convolutions
// read W as it is). Constants cannot change after loading (only graph inputs can be set).
std::shared_ptr<const std::vector<PackedA>> pack_constant_weights(const KernelInit& init, int64_t group) {
  const model::TensorData* w = init.constant_input(1);
  if (!gemm_packed_available() || !w || w->shape.size() < 3 || w->shape.size() > 4) return nullptr;
  const int64_t M = w->shape[0], Cg = w->shape[1], n = w->elements();
  if (M <= 0 || M % group != 0 || (group > 1 && group == M && Cg == 1)) return nullptr;
  std::vector<float> upcast;
  const float* data = nullptr;
  if (w->dtype == DType::Float && static_cast<int64_t>(w->bytes.size()) == n * 4) {
    data = reinterpret_cast<const float*>(w->bytes.data());
  } else if (w->dtype == DType::Float16 && static_cast<int64_t>(w->bytes.size()) == n * 2) {
    upcast.resize(static_cast<size_t>(n));
    model::half_to_float(reinterpret_cast<const uint16_t*>(w->bytes.data()), upcast.data(), static_cast<size_t>(n));
    data = upcast.data();
  } else {
    return nullptr;
  }
  return std::make_shared<const std::vector<PackedA>>(pack_conv_weights(data, M, group, n / M));
}

// The geometry of a Conv node from its input and weight (checked) and attributes.
ConvGeom conv_geometry(KernelContext& ctx, const SpatialAttrs& at) {
  const Value &x = ctx.in(0), &w = ctx.in(1);
  if (x.rank() < 3) ctx.fail("input " + ctx.input_name(0) + " has shape " + shape_str(x.shape()) + ", expected [N, C, spatial...]");
  if (w.rank() != x.rank())
    ctx.fail("weight " + ctx.input_name(1) + " has shape " + shape_str(w.shape()) + ", expected rank " + std::to_string(x.rank()));
  ConvGeom g;
  g.N = x.dims()[0];
  g.C = x.dims()[1];
  g.M = w.dims()[0];
  g.group = at.group;
  g.in.assign(x.dims().begin() + 2, x.dims().end());
  g.kernel.assign(w.dims().begin() + 2, w.dims().end());
  if (!at.kernel.empty() && at.kernel != g.kernel)
    ctx.fail("kernel_shape " + shape_str(at.kernel) + " does not match weight " + ctx.input_name(1) + " " + shape_str(w.shape()));
  if (g.C != w.dims()[1] * g.group || g.M % g.group != 0)
    ctx.fail("input " + ctx.input_name(0) + " " + shape_str(x.shape()) + " and weight " + ctx.input_name(1) + " " + shape_str(w.shape()) +
             " do not agree for group " + std::to_string(g.group));
  at.resolve(ctx, g.in, g.kernel, g.stride, g.dilation, g.pad_begin, g.pad_end, g.out);
  return g;
}

using PackedWeights = std::shared_ptr<const std::vector<PackedA>>;

// The plan-time packing of the constant weights, if it matches the weights of this run.
const std::vector<PackedA>* packed_for(const PackedWeights& packed, int64_t packed_elements, const Value& w, const ConvGeom& g) {
  return packed && w.elements() == packed_elements && static_cast<int64_t>(packed->size()) == g.group ? packed.get() : nullptr;
}

void conv_float(KernelContext& ctx, const SpatialAttrs& at, const PackedWeights& packed, int64_t packed_elements, ConvRowsCache* rows_cache = nullptr) {
  ctx.expect_dtype(0, {DType::Float});
  ctx.expect_dtype(1, {DType::Float});
  const ConvGeom g = conv_geometry(ctx, at);
  const Value& w = ctx.in(1);
  const float* bias = conv_bias(ctx, g);
  float* y = conv_output(ctx, g);
  const EpilogueOut act = ctx.fused_epilogue();
  conv_auto(g, ctx.in(0).as<float>().data(), w.as<float>().data(), bias, y, ctx.pool(), act, packed_for(packed, packed_elements, w, g), rows_cache);
}

// `v` (float16) widened into `f`.
void widen(const Value& v, Value& f) {
  f.reset(DType::Float, v.dims());
  model::half_to_float(v.as<uint16_t>().data(), f.mutable_as<float>().data(), static_cast<size_t>(v.elements()));
}
// `f` (float) rounded into `v` (float16).
void narrow(const Value& f, Value& v) {
  v.reset(DType::Float16, f.dims());
  model::float_to_half(f.as<float>().data(), v.mutable_as<uint16_t>().data(), static_cast<size_t>(f.elements()));
}

// A float16 Conv: read and written in float16 by conv_im2col_f16 (with a fused Relu); otherwise
// (depthwise, N-d, no AVX2) widened to float, computed by conv_float and rounded.
void conv_half(KernelContext& ctx, const model::Graph& graph, const SpatialAttrs& at, const PackedWeights& packed, int64_t packed_elements) {
  ctx.expect_dtype(1, {DType::Float16});
  if (ctx.opt(2)) ctx.expect_dtype(2, {DType::Float16});
  const ConvGeom g = conv_geometry(ctx, at);
  const Value& w = ctx.in(1);
  const Epilogue* e = ctx.epilogue();
  if (conv_f16_applies(g) && (!e || e->kind == Epilogue::Kind::Relu)) {
    std::vector<float> bias;
    if (const Value* bv = ctx.opt(2)) {
      if (bv->rank() != 1 || bv->dims()[0] != g.M)
        ctx.fail("bias " + ctx.input_name(2) + " has shape " + shape_str(bv->shape()) + ", expected [" + std::to_string(g.M) + "]");
      bias.resize(static_cast<size_t>(g.M));
      model::half_to_float(bv->as<uint16_t>().data(), bias.data(), bias.size());
    }
    const std::vector<PackedA>* pw = packed_for(packed, packed_elements, w, g);
    std::vector<PackedA> local;
    if (!pw) {
      std::vector<float> wf(static_cast<size_t>(w.elements()));
      model::half_to_float(w.as<uint16_t>().data(), wf.data(), wf.size());
      local = pack_conv_weights(wf.data(), g.M, g.group, w.elements() / std::max<int64_t>(1, g.M));
      pw = &local;
    }
    Shape os{g.N, g.M};
    os.insert(os.end(), g.out.begin(), g.out.end());
    Value& y = ctx.out(0);
    y.reset(DType::Float16, os);
    uint16_t* relu = nullptr;
    if (e) {
      Value& z = ctx.epilogue_out(0);
      z.reset(DType::Float16, os);
      relu = z.mutable_as<uint16_t>().data();
    }
    conv_im2col_f16(g, ctx.in(0).as<uint16_t>().data(), *pw, bias.empty() ? nullptr : bias.data(), y.mutable_as<uint16_t>().data(), relu,
                    ctx.pool());
    return;
  }
  Value xf, wf, bf, yf, zf[2];
  widen(ctx.in(0), xf);
  widen(w, wf);
  if (ctx.opt(2)) widen(*ctx.opt(2), bf);
  std::vector<const Value*> ins{&xf, &wf, ctx.opt(2) ? &bf : nullptr};
  std::vector<Value*> outs{&yf};
  KernelContext fctx(graph, ctx.node(), ins, outs, ctx.pool());
  fctx.set_run_options(&ctx.run_options());
  if (e) fctx.set_epilogue(e, &zf[0], &zf[1], nullptr);  // (a float16 Conv fuses Relu only)
  conv_float(fctx, at, packed, packed_elements);
  narrow(yf, ctx.out(0));
  if (!e) return;
  if (fctx.epilogue_declined()) return ctx.decline_epilogue();
  for (int k = 0; k < e->outputs(); ++k) narrow(zf[k], ctx.epilogue_out(k));
}

std::unique_ptr<Kernel> conv_factory(const KernelInit& init) {
  const SpatialAttrs at = SpatialAttrs::decode(init);
  auto packed = pack_constant_weights(init, at.group);
  const int64_t packed_elements = packed ? (*packed)[0].M * (*packed)[0].K * static_cast<int64_t>(packed->size()) : 0;
  const model::Graph* graph = &init.graph;  // owned by the Plan, which owns this kernel
  // conv_rows' packing kept across calls only for constant weights (the float path; the bias,
  // which may come from a node such as an Identity, is compared by value).
  auto rows_cache = init.constant_input(1) ? std::make_shared<ConvRowsCache>() : nullptr;
  return make_kernel([at, packed, packed_elements, graph, rows_cache](KernelContext& ctx) {
    if (ctx.in(0).dtype() == DType::Float16) return conv_half(ctx, *graph, at, packed, packed_elements);
    conv_float(ctx, at, packed, packed_elements, rows_cache.get());
  });
}

std::unique_ptr<Kernel> conv_transpose_factory(const KernelInit& init) {
  const SpatialAttrs at = SpatialAttrs::decode(init);
  const auto output_shape = init.attrs().get_ints("output_shape");
  const auto output_padding = init.attrs().get_ints("output_padding");
  return make_kernel([=](KernelContext& ctx) {
    ctx.expect_dtype(0, {DType::Float});
    ctx.expect_dtype(1, {DType::Float});
    const Value &x = ctx.in(0), &w = ctx.in(1);
    if (x.rank() < 3) ctx.fail("input " + ctx.input_name(0) + " has shape " + shape_str(x.shape()) + ", expected [N, C, spatial...]");
    if (w.rank() != x.rank())
      ctx.fail("weight " + ctx.input_name(1) + " has shape " + shape_str(w.shape()) + ", expected rank " + std::to_string(x.rank()));
    ConvGeom g;
    g.N = x.dims()[0];
    g.C = x.dims()[1];
    g.group = at.group;
    g.M = w.dims()[1] * g.group;
    if (w.dims()[0] != g.C || g.C % g.group != 0)
      ctx.fail("input " + ctx.input_name(0) + " " + shape_str(x.shape()) + " and weight " + ctx.input_name(1) + " " + shape_str(w.shape()) +
               " do not agree for group " + std::to_string(g.group));
    const size_t S = x.rank() - 2;
    g.in.assign(x.dims().begin() + 2, x.dims().end());
    g.kernel.assign(w.dims().begin() + 2, w.dims().end());
    auto fixed = [&](const std::vector<int64_t>& v, int64_t def, const char* what) {
      if (v.empty()) return std::vector<int64_t>(S, def);
      if (v.size() != S) ctx.fail(std::string(what) + " has the wrong number of values");
      return v;
    };
    g.stride = fixed(at.strides, 1, "strides");
    g.dilation = fixed(at.dilations, 1, "dilations");
    const auto opad = fixed(output_padding, 0, "output_padding");
    g.pad_begin.assign(S, 0);
    g.pad_end.assign(S, 0);
    g.out.assign(S, 0);
    if (at.auto_pad == "NOTSET" && !at.pads.empty()) {
      if (at.pads.size() != 2 * S) ctx.fail("pads has the wrong number of values");
      for (size_t i = 0; i < S; ++i) {
        g.pad_begin[i] = at.pads[i];
        g.pad_end[i] = at.pads[i + S];
      }
    }
    for (size_t i = 0; i < S; ++i) {
      const int64_t full = g.stride[i] * (g.in[i] - 1) + opad[i] + (g.kernel[i] - 1) * g.dilation[i] + 1;
      int64_t target = -1;
      if (!output_shape.empty()) {
        if (output_shape.size() != S && output_shape.size() != S + 2) ctx.fail("output_shape has the wrong number of values");
        target = output_shape[output_shape.size() - S + i];
      } else if (at.auto_pad == "SAME_UPPER" || at.auto_pad == "SAME_LOWER") {
        target = g.in[i] * g.stride[i];
      }
      if (target >= 0) {
        const int64_t total = full - target;
        // floor division as in the ONNX reference implementation
        const int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);
        if (at.auto_pad == "SAME_UPPER") {
          g.pad_begin[i] = half;
          g.pad_end[i] = total - half;
        } else {
          g.pad_begin[i] = total - half;
          g.pad_end[i] = half;
        }
      }
      g.out[i] = full - g.pad_begin[i] - g.pad_end[i];
      if (g.out[i] <= 0) ctx.fail("output size " + std::to_string(g.out[i]) + " is not positive");
    }
    conv_transpose_gemm(g, x.as<float>().data(), w.as<float>().data(), conv_bias(ctx, g), conv_output(ctx, g), ctx.pool());
  });
}

}  // namespace

void register_conv(Registry& r) {
  r.add("Conv", conv_factory, false);  // float16 computed by conv_half
  r.add("ConvTranspose", conv_transpose_factory);
}

}  // namespace nnxr::runtime
