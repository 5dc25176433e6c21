// Direct 3x3 convolution with few input channels (C <= 4: the RGB stems of image networks,
// stride 1 or 2), and thin pointwise convolution (C <= 32), on AVX-512 (on AVX2 + FMA: kernels of
// the same plan with 8-float vectors, conv_direct_avx2.cpp). With K = C x 9 <= 36 the im2col + packed GEMM path is bound by
// writing and reading back its column matrix (a third of UltraFace's 3 -> 16 stem) and fills
// 6-row panels poorly for 16 or 32 output channels. Here each input row is copied once into a
// zero-padded row (stride 2: split into its even and odd columns) that stays while the output
// rows reading it are computed, 16 outputs x 16 output channels are 16 accumulators, and each tap
// is one vector loaded straight from those rows times 16 broadcast weights (the pointwise kernel:
// 8 output channels x 32 columns, see pointwise_columns). The bias and the epilogue are applied on
// the way out.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "model/runtime/avx512.h"
#include "model/runtime/compute.h"
#include "model/runtime/kernel.h"
#include "model/runtime/value.h"

namespace nnxr::runtime {

bool conv_direct_applies(const ConvGeom& g) {
  if (!cpu_has_avx2_fma() || g.spatial() != 2 || g.group != 1 || g.C > 4 || g.C < 1) return false;
  const int64_t s = g.stride[0];
  return g.kernel[0] == 3 && g.kernel[1] == 3 && g.dilation[0] == 1 && g.dilation[1] == 1 && g.stride[1] == s && (s == 1 || s == 2) &&
         g.pad_begin[0] < 3 && g.pad_begin[1] < 3 && g.out[1] >= 8;
}

bool conv_pointwise_thin_applies(const ConvGeom& g) {
  if (!cpu_has_avx2_fma() || g.spatial() < 1 || g.spatial() > 2 || g.group != 1 || g.C > 32 || g.C < 1 || g.M < 8) return false;
  for (size_t d = 0; d < g.in.size(); ++d)
    if (g.kernel[d] != 1 || g.stride[d] != 1 || g.pad_begin[d] != 0 || g.pad_end[d] != 0 || g.out[d] != g.in[d]) return false;
  return product(g.out) >= 256;
}

#if defined(__x86_64__) || defined(__i386__)
namespace {

using avx2::ActParams;
using avx2::InReg;

constexpr int64_t kMB = 16;  // output channels per block: 16 accumulators

struct Direct {
  int64_t C, H, W, OH, OW, M, ph, pw;
  int64_t L;  // floats per prepared row (stride 2: per half)
};

// Output rows [r0, r1) of one image: x [C, H, W] -> y [M, OH, OW] (bias b, weights packed as
// wp[block][C x 9][16], zero past M), the epilogue's outputs at the same offsets (index `at` of y).
template <InReg Act, int Stride>
NNXR_AVX512 void rows(const Direct& d, const float* x, const float* wp, const float* bias, float* y, const EpilogueOut& act, int64_t at,
                      const ActParams& ap, int64_t r0, int64_t r1) {
  const int64_t L = d.L, P = d.OH * d.OW, taps = d.C * 9;
  // Three prepared rows per channel (each Stride halves of L floats), input row ih in slot
  // c x 3 + ih % 3 (any three consecutive rows have their own slots), so that each input row is
  // copied or split once however many output rows read it; then one zero row. All zero at the
  // start, and only data columns are written after that.
  thread_local std::vector<float, CacheAligned<float>> buf;
  const size_t slots = static_cast<size_t>(d.C * 3 * Stride * L);
  buf.assign(slots + static_cast<size_t>(Stride * L), 0.f);
  float* const prepared = buf.data();
  const float* const zero = prepared + slots;
  int64_t held[4 * 3];  // the input row in each slot (-1: none yet)
  std::fill(held, held + 4 * 3, int64_t{-1});
  // The input row of each tap (c, ki, kj), as the weights are ordered: stride 1, padded columns
  // ow + kj; stride 2, columns 2 ow + kj, that is even[ow], odd[ow], even[ow + 1].
  const float* src[4 * 9];
  // y with streaming stores when every store is a whole aligned vector (rows and planes of whole
  // cache lines) and the epilogue keeps its own output: nothing reads y during the run.
  const bool stream = Act != InReg::None && d.OW % 16 == 0 && P % 16 == 0 && reinterpret_cast<uintptr_t>(y) % 64 == 0;
  // Otherwise y is staged, a block's rows of it, and streamed a whole row of a plane at a time: the
  // lines within it past the cache, the partial ones at its ends as usual (stream_span).
  const bool stage = Act != InReg::None && !stream;
  const int64_t SL = (d.OW + 15) / 16 * 16;
  thread_local std::vector<float, CacheAligned<float>> staged;
  if (stage) staged.resize(static_cast<size_t>(kMB * SL));
  float* const z1 = Act == InReg::None ? nullptr : act.z1 + at;
  float* const z2 = Act == InReg::SiLU ? act.z2 + at : nullptr;
  const float* const addend = Act == InReg::Add ? act.addend + at : nullptr;
  for (int64_t oh = r0; oh < r1; ++oh) {
    for (int64_t c = 0; c < d.C; ++c)
      for (int64_t ki = 0; ki < 3; ++ki) {
        const int64_t ih = oh * Stride - d.ph + ki;
        const float* row = zero;
        if (ih >= 0 && ih < d.H) {
          const int64_t slot = c * 3 + ih % 3;
          float* const dst = prepared + slot * Stride * L;
          if (held[slot] != ih) {
            const float* const xr = x + (c * d.H + ih) * d.W;
            if constexpr (Stride == 1) avx512::copy_row(xr, d.W, dst + d.pw);
            else avx512::split_row(xr, d.W, d.pw, dst, dst + L);
            held[slot] = ih;
          }
          row = dst;
        }
        const int64_t t = 3 * (c * 3 + ki);
        src[t] = row;
        src[t + 1] = Stride == 1 ? row + 1 : row + L;
        src[t + 2] = row + (Stride == 1 ? 2 : 1);
      }
    // One block of 16 output channels at a time along the row: 32 planes of y and z written front
    // to back (all M planes at each step would be as many scattered streams). Each tap is one
    // load straight from its prepared row (the last partial step reads the row's padding).
    for (int64_t m0 = 0; m0 < d.M; m0 += kMB) {
      const int64_t mb = std::min(kMB, d.M - m0);
      for (int64_t ow = 0; ow < d.OW; ow += 16) {
        const float* w = wp + m0 * taps;
        // The output the next layer reads, two steps on, fetched for the stores: SqueezeNet 1.1's
        // stem in the model 0.90 -> 0.79 ms (Intel Xeon, 1 thread, medians of 3 profiles).
        avx2::fetch_for_store<Act>(z1, z2, m0 * P + oh * d.OW + ow + 32, P, static_cast<int>(mb), 1);
        __m512 acc[kMB];
#pragma GCC unroll 16
        for (int m = 0; m < kMB; ++m) acc[m] = _mm512_set1_ps(bias[m0 + m]);
        for (int64_t t = 0; t < taps; ++t, w += kMB) {
          const __m512 v = _mm512_loadu_ps(src[t] + ow);
#pragma GCC unroll 16
          for (int m = 0; m < kMB; ++m) acc[m] = _mm512_fmadd_ps(_mm512_set1_ps(w[m]), v, acc[m]);
        }
        const __mmask16 k = avx512::lanes(d.OW - ow);
        // (A constant bound and index: acc[] stays in registers through the taps.)
#pragma GCC unroll 16
        for (int m = 0; m < kMB; ++m) {
          if (m >= mb) break;
          const int64_t o = (m0 + m) * P + oh * d.OW + ow;
          if (stage) {
            _mm512_store_ps(staged.data() + m * SL + ow, acc[m]);
            avx512::store_epilogue<Act>(z1 ? z1 + o : nullptr, z2 ? z2 + o : nullptr, addend ? addend + o : nullptr, acc[m], k, ap);
          } else {
            avx512::store<Act>(y + o, z1 ? z1 + o : nullptr, z2 ? z2 + o : nullptr, addend ? addend + o : nullptr, acc[m], k, stream, ap);
          }
        }
      }
      if (stage)
        for (int64_t m = 0; m < mb; ++m) avx512::stream_span(y + (m0 + m) * P + oh * d.OW, staged.data() + m * SL, d.OW);
    }
  }
  if (stream || stage) _mm_sfence();  // the streamed y visible before the task completes
}

// Columns [p0, p1) of one image: x [C, P] -> y [M, P] with wp[block][C][16] (zero past M). A
// tile is half a block, 8 output channels, x 32 columns: 16 accumulators, and per input channel
// two vectors of x and 8 broadcast weights for 16 FMAs. (16 channels x 16 columns took a vector
// and 16 broadcasts for 16 FMAs, and on an Intel Xeon with two 512-bit FMA pipes waited on the
// loads: SqueezeNet's 16 -> 64 expand layers on 55x55 ran at a third of its peak.)
template <InReg Act>
NNXR_AVX512 void pointwise_columns(int64_t C, int64_t M, int64_t P, const float* x, const float* wp, const float* bias, float* y,
                                   const EpilogueOut& act, int64_t at, const ActParams& ap, int64_t p0, int64_t p1) {
  constexpr int kHalf = kMB / 2;
  float* const z1 = Act == InReg::None ? nullptr : act.z1 + at;
  float* const z2 = Act == InReg::SiLU ? act.z2 + at : nullptr;
  const float* const addend = Act == InReg::Add ? act.addend + at : nullptr;
  const bool stream = Act != InReg::None && P % 16 == 0 && reinterpret_cast<uintptr_t>(y) % 64 == 0 && p0 % 16 == 0;
  // Otherwise y is staged, the half block's rows of the columns, and streamed a row at a time
  // (stream_span).
  const bool stage = Act != InReg::None && !stream;
  const int64_t SL = (p1 - p0 + 31) / 32 * 32;
  thread_local std::vector<float, CacheAligned<float>> staged;
  if (stage) staged.resize(static_cast<size_t>(kHalf * SL));
  for (int64_t m0 = 0; m0 < M; m0 += kHalf) {
    const int64_t mb = std::min<int64_t>(kHalf, M - m0);
    // (half h of block m0 / 16: its weights at lanes h * 8 of each tap's 16)
    const float* const wb = wp + m0 / kMB * kMB * C + m0 % kMB;
    for (int64_t p = p0; p < p1; p += 32) {
      const __mmask16 k0 = avx512::lanes(p1 - p), k1 = avx512::lanes(p1 - p - 16);
      const float* w = wb;
      // The output the next layer reads, two steps on, fetched for the stores: SqueezeNet 1.1's
      // 16 -> 64 1x1 on 55x55 in the model 0.164 -> 0.133 ms (as the stem above).
      avx2::fetch_for_store<Act>(z1, z2, m0 * P + p + 64, P, static_cast<int>(mb), 2);
      __m512 acc[kHalf][2];
#pragma GCC unroll 8
      for (int m = 0; m < kHalf; ++m) acc[m][0] = acc[m][1] = _mm512_set1_ps(bias[m0 + m]);
      for (int64_t c = 0; c < C; ++c, w += kMB) {
        const __m512 v0 = _mm512_maskz_loadu_ps(k0, x + c * P + p), v1 = _mm512_maskz_loadu_ps(k1, x + c * P + p + 16);
#pragma GCC unroll 8
        for (int m = 0; m < kHalf; ++m) {
          const __m512 wm = _mm512_set1_ps(w[m]);
          acc[m][0] = _mm512_fmadd_ps(wm, v0, acc[m][0]);
          acc[m][1] = _mm512_fmadd_ps(wm, v1, acc[m][1]);
        }
      }
#pragma GCC unroll 8
      for (int m = 0; m < kHalf; ++m) {
        if (m >= mb) break;
        const int64_t o = (m0 + m) * P + p;
        if (stage) {
          float* const st = staged.data() + m * SL + (p - p0);
          _mm512_store_ps(st, acc[m][0]);
          _mm512_store_ps(st + 16, acc[m][1]);
          avx512::store_epilogue<Act>(z1 ? z1 + o : nullptr, z2 ? z2 + o : nullptr, addend ? addend + o : nullptr, acc[m][0], k0, ap);
          if (k1)
            avx512::store_epilogue<Act>(z1 ? z1 + o + 16 : nullptr, z2 ? z2 + o + 16 : nullptr, addend ? addend + o + 16 : nullptr, acc[m][1], k1,
                                        ap);
          continue;
        }
        avx512::store<Act>(y + o, z1 ? z1 + o : nullptr, z2 ? z2 + o : nullptr, addend ? addend + o : nullptr, acc[m][0], k0, stream, ap);
        if (k1)
          avx512::store<Act>(y + o + 16, z1 ? z1 + o + 16 : nullptr, z2 ? z2 + o + 16 : nullptr, addend ? addend + o + 16 : nullptr, acc[m][1], k1,
                             stream, ap);
      }
    }
    if (stage)
      for (int64_t m = 0; m < mb; ++m) avx512::stream_span(y + (m0 + m) * P + p0, staged.data() + m * SL, p1 - p0);
  }
  if (stream || stage) _mm_sfence();
}

// Weights [M, taps] as [block of 16 output channels][tap][16], zero past M; the bias likewise.
void pack_blocks(const float* W, const float* B, int64_t M, int64_t taps, std::vector<float>& wp, std::vector<float>& bias) {
  const int64_t blocks = (M + kMB - 1) / kMB;
  wp.assign(static_cast<size_t>(blocks * taps * kMB), 0.f);
  bias.assign(static_cast<size_t>(blocks * kMB), 0.f);
  for (int64_t m = 0; m < M; ++m) {
    if (B) bias[static_cast<size_t>(m)] = B[m];
    for (int64_t t = 0; t < taps; ++t) wp[static_cast<size_t>((m / kMB * taps + t) * kMB + m % kMB)] = W[m * taps + t];
  }
}

}  // namespace

void conv_pointwise_thin(const ConvGeom& g, const float* X, const float* W, const float* B, float* Y, ThreadPool& pool, const EpilogueOut& act) {
  if (!cpu_has_avx512()) return conv_pointwise_thin_avx2(g, X, W, B, Y, pool, act);
  const int64_t P = product(g.out), C = g.C, M = g.M;
  if (P == 0) return;
  std::vector<float> wp, bias;
  pack_blocks(W, B, M, C, wp, bias);
  const ActParams ap = avx2::act_params(act.epi);
  // Chunks of columns (pointwise_chunk: 256, or as many for each thread).
  const int64_t chunk = pointwise_chunk(P, pool.threads());
  const int64_t chunks = (P + chunk - 1) / chunk;
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 20) / std::max<int64_t>(1, 2 * C * M * chunk));
  avx2::with_in_reg(act.epi, [&]<InReg Act>() {
    pool.parallel_for(g.N * chunks, grain, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        const int64_t n = i / chunks, p0 = i % chunks * chunk, p1 = std::min(P, p0 + chunk);
        const int64_t at = n * M * P;
        pointwise_columns<Act>(C, M, P, X + n * C * P, wp.data(), bias.data(), Y + at, act, at, ap, p0, p1);
      }
    });
  });
}

void conv_direct(const ConvGeom& g, const float* X, const float* W, const float* B, float* Y, ThreadPool& pool, const EpilogueOut& act) {
  if (!cpu_has_avx512()) return conv_direct_avx2(g, X, W, B, Y, pool, act);
  Direct d{g.C, g.in[0], g.in[1], g.out[0], g.out[1], g.M, g.pad_begin[0], g.pad_begin[1], 0};
  const int64_t s = g.stride[0];
  if (d.OH * d.OW == 0 || d.M == 0) return;
  // Row length: the data columns as the row copy writes them (stride 1: whole vectors) and every
  // column the last step's loads read (its 16 outputs' taps and the vector after them).
  const int64_t steps = (d.OW + 15) / 16 * 16;
  const int64_t need = s == 1 ? std::max(d.pw + (d.W + 15) / 16 * 16, steps + 16) : std::max((d.pw + d.W + 1) / 2, steps + 16);
  d.L = (need + 15) / 16 * 16;
  // Weights as [block of 16 output channels][tap (c, ki, kj)][16], zero past M; bias likewise.
  const int64_t blocks = (d.M + kMB - 1) / kMB, taps = d.C * 9;
  std::vector<float> wp, bias;
  pack_blocks(W, B, d.M, taps, wp, bias);
  const ActParams ap = avx2::act_params(act.epi);
  const int64_t per_image = d.OH, flops_per_row = 2 * blocks * kMB * taps * steps;
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 20) / std::max<int64_t>(1, flops_per_row));
  avx2::with_in_reg(act.epi, [&]<InReg Act>() {
    pool.parallel_for(g.N * per_image, grain, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e;) {
        const int64_t n = i / per_image, r0 = i % per_image, r1 = std::min(per_image, r0 + (e - i));
        const float* x = X + n * d.C * d.H * d.W;
        const int64_t at = n * d.M * d.OH * d.OW;
        if (s == 1) rows<Act, 1>(d, x, wp.data(), bias.data(), Y + at, act, at, ap, r0, r1);
        else rows<Act, 2>(d, x, wp.data(), bias.data(), Y + at, act, at, ap, r0, r1);
        i += r1 - r0;
      }
    });
  });
}
#else
// Never called: conv_direct_applies() and conv_pointwise_thin_applies() are false on other
// architectures.
void conv_direct(const ConvGeom&, const float*, const float*, const float*, float*, ThreadPool&, const EpilogueOut&) {}
void conv_pointwise_thin(const ConvGeom&, const float*, const float*, const float*, float*, ThreadPool&, const EpilogueOut&) {}
#endif

}  // namespace nnxr::runtime
