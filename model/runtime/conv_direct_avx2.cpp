// The few-channel direct 3x3 convolution (conv_direct) and the thin pointwise convolution
// (conv_pointwise_thin) on AVX2 + FMA: the kernels conv_direct_avx512.cpp runs on AVX-512, with
// 8-float vectors. AVX2 has 16 vector registers and no broadcast operand, so a block is up to 6
// output channels x 16 outputs: 12 accumulators, the tap's two input vectors and one broadcast
// weight. Each tap of a block is two loads, six broadcasts and twelve fused multiply-adds; the
// columns come straight from the zero-padded row copies (conv_direct: no tap vectors built) or
// from x in place (conv_pointwise_thin), and the bias and the epilogue are applied on the way out.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "model/runtime/avx2.h"
#include "model/runtime/compute.h"
#include "model/runtime/kernel.h"
#include "model/runtime/value.h"

namespace nnxr::runtime {

#if defined(__x86_64__) || defined(__i386__)
namespace {

using avx2::ActParams;
using avx2::InReg;

constexpr int kMB = 6;  // output channels per block: 6 x 2 vectors = 12 accumulators

// Where a block writes: y, and the epilogue's outputs at the same offsets (null when it has none).
struct Out {
  float* y;
  float* z1;
  float* z2;
  const float* addend;
  int64_t plane;  // floats between two output channels
  bool stream;    // whole blocks of 16 streamed past the cache
  // y of channel m at offset `at` of its plane goes to y[at + m y_plane + y_shift]: y's own
  // planes (y_plane = plane), or a staging buffer's (see direct_rows and pointwise_columns).
  int64_t y_plane = 0, y_shift = 0;
};

// MB output channels x 16 columns (the first n stored, n in [1, 16]): the bias b plus, for each
// of the `taps` taps, the 16 floats at src[t] + off times the weights w[t * kMB + m].
template <InReg Act, int MB>
__attribute__((target("avx2,fma"), always_inline)) inline void block(const float* const* src, int64_t off, int64_t taps, const float* w,
                                                                     const float* b, const Out& out, int64_t at, int64_t n, const ActParams& ap) {
  // The output the next layer reads, two blocks on, fetched for the stores.
  avx2::fetch_for_store<Act>(out.z1, out.z2, at + 32, out.plane, MB, 1);
  __m256 acc0[MB], acc1[MB];
#pragma GCC unroll 6
  for (int m = 0; m < MB; ++m) acc0[m] = acc1[m] = _mm256_broadcast_ss(b + m);
  for (int64_t t = 0; t < taps; ++t, w += kMB) {
    const float* p = src[t] + off;
    const __m256 v0 = _mm256_loadu_ps(p), v1 = _mm256_loadu_ps(p + 8);
#pragma GCC unroll 6
    for (int m = 0; m < MB; ++m) {
      const __m256 wm = _mm256_broadcast_ss(w + m);
      acc0[m] = _mm256_fmadd_ps(wm, v0, acc0[m]);
      acc1[m] = _mm256_fmadd_ps(wm, v1, acc1[m]);
    }
  }
#pragma GCC unroll 6
  for (int m = 0; m < MB; ++m) {
    const int64_t o = at + m * out.plane;
    float* const y = out.y + (at + m * out.y_plane + out.y_shift);
    if (n == 16) avx2::store16(y, acc0[m], acc1[m], out.stream);
    else avx2::store_first(y, acc0[m], acc1[m], n);
    if constexpr (Act != InReg::None)
      avx2::store_act<Act>(out.z1 + o, out.z2 ? out.z2 + o : nullptr, out.addend ? out.addend + o : nullptr, acc0[m], acc1[m], ap, n, out.stream);
  }
}

// Columns [p0, end) of MB output channels at out offset at0 + column: whole blocks of 16 from src
// at the column up to `full`, the partial block after it from tail_src at tail_off.
template <InReg Act, int MB>
__attribute__((target("avx2,fma"))) void strip(const float* const* src, int64_t p0, int64_t full, const float* const* tail_src, int64_t tail_off,
                                               int64_t end, int64_t taps, const float* w, const float* b, const Out& out, int64_t at0,
                                               const ActParams& ap) {
  for (int64_t p = p0; p < full; p += 16) block<Act, MB>(src, p, taps, w, b, out, at0 + p, 16, ap);
  if (full < end) block<Act, MB>(tail_src, tail_off, taps, w, b, out, at0 + full, end - full, ap);
}

// strip<Act, MB> for a block of mb in [1, kMB] output channels.
template <InReg Act, class... Args>
void strip_of(int64_t mb, const Args&... args) {
  switch (mb) {
    case 1: return strip<Act, 1>(args...);
    case 2: return strip<Act, 2>(args...);
    case 3: return strip<Act, 3>(args...);
    case 4: return strip<Act, 4>(args...);
    case 5: return strip<Act, 5>(args...);
    default: return strip<Act, 6>(args...);
  }
}

// M output channels in blocks of as even a size as kMB allows (32: 6, 6, 5, 5, 5, 5, not five of
// 6 and one of 2, whose 4 accumulators would wait on the multiply-add latency).
struct Blocks {
  int64_t count, base, extra;  // `extra` blocks of base + 1 channels, then blocks of base
  explicit Blocks(int64_t M) : count((M + kMB - 1) / kMB), base(M / std::max<int64_t>(1, count)), extra(M % std::max<int64_t>(1, count)) {}
  int64_t first(int64_t b) const { return b * base + std::min(b, extra); }
  int64_t size(int64_t b) const { return base + (b < extra ? 1 : 0); }
};

// Weights [M, taps] as [block][tap][kMB] (lanes past the block's size zero); the bias as
// [block][kMB].
void pack_blocks(const Blocks& blocks, const float* W, const float* B, int64_t taps, std::vector<float>& wp, std::vector<float>& bias) {
  wp.assign(static_cast<size_t>(blocks.count * taps * kMB), 0.f);
  bias.assign(static_cast<size_t>(blocks.count * kMB), 0.f);
  for (int64_t b = 0; b < blocks.count; ++b)
    for (int64_t i = 0; i < blocks.size(b); ++i) {
      const int64_t m = blocks.first(b) + i;
      if (B) bias[static_cast<size_t>(b * kMB + i)] = B[m];
      for (int64_t t = 0; t < taps; ++t) wp[static_cast<size_t>((b * taps + t) * kMB + i)] = W[m * taps + t];
    }
}

Out out_of(float* y, const EpilogueOut& act, InReg kind, int64_t at, int64_t plane, bool stream) {
  return Out{y + at, kind == InReg::None ? nullptr : act.z1 + at, kind == InReg::SiLU ? act.z2 + at : nullptr,
             kind == InReg::Add ? act.addend + at : nullptr, plane, stream, plane, 0};
}

// y staged, when the epilogue keeps its own output and y is not streamed as it is written: rows
// of `len` floats for every channel (SL apart), streamed out by stream_staged, as on AVX-512.
struct Staged {
  float* rows = nullptr;
  int64_t SL = 0;
};
template <InReg Act>
Staged stage_for(const Out& out, int64_t M, int64_t len) {
  if (Act == InReg::None || out.stream) return {};
  thread_local std::vector<float, CacheAligned<float>> buf;
  const int64_t SL = (len + 15) / 16 * 16;
  if (buf.size() < static_cast<size_t>(M * SL)) buf.resize(static_cast<size_t>(M * SL));
  return {buf.data(), SL};
}
// out with channel `first` on, at plane offset `from`, writing y to the staged rows.
Out staged_out(const Out& out, const Staged& st, int64_t first, int64_t from) {
  if (!st.rows) return out;
  Out o = out;
  o.y = st.rows;
  o.y_plane = st.SL;
  o.y_shift = first * st.SL - first * out.plane - from;
  return o;
}
__attribute__((target("avx2,fma"))) void stream_staged(const Out& out, const Staged& st, int64_t M, int64_t from, int64_t len) {
  if (!st.rows) return;
  for (int64_t m = 0; m < M; ++m) avx2::stream_span(out.y + m * out.plane + from, st.rows + m * st.SL, len);
}

struct Direct {
  int64_t C, H, W, OH, OW, M, ph, pw;
  int64_t L;  // floats per prepared row (stride 2: per half)
};

// Output rows [r0, r1) of one image: x [C, H, W] -> out (planes of OH x OW), with the packed
// weights wp and bias.
template <InReg Act, int Stride>
__attribute__((target("avx2,fma"))) void direct_rows(const Direct& d, const Blocks& blocks, const float* x, const float* wp, const float* bias,
                                                     const Out& out, const ActParams& ap, int64_t r0, int64_t r1) {
  const int64_t L = d.L, taps = d.C * 9;
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
  const Staged st = stage_for<Act>(out, d.M, d.OW);  // a row of every channel
  // The input row of each tap (c, ki, kj), as the weights are ordered: stride 1, padded columns
  // ow + kj; stride 2, columns 2 ow + kj, that is even[ow], odd[ow], even[ow + 1].
  const float* src[4 * 9];
  for (int64_t oh = r0; oh < r1; ++oh) {
    for (int64_t c = 0; c < d.C; ++c)
      for (int64_t ki = 0; ki < 3; ++ki) {
        const int64_t ih = oh * Stride - d.ph + ki, tap = 3 * (c * 3 + ki);
        const float* row = zero;
        if (ih >= 0 && ih < d.H) {
          const int64_t slot = c * 3 + ih % 3;
          float* const dst = prepared + slot * Stride * L;
          if (held[slot] != ih) {
            const float* const xr = x + (c * d.H + ih) * d.W;
            if constexpr (Stride == 1) avx2::copy_row(xr, d.W, dst + d.pw);
            else avx2::split_row(xr, d.W, d.pw, dst, dst + L);
            held[slot] = ih;
          }
          row = dst;
        }
        src[tap] = row;
        src[tap + 1] = Stride == 1 ? row + 1 : row + L;
        src[tap + 2] = row + (Stride == 1 ? 2 : 1);
      }
    // One block of output channels at a time along the row: 12 planes of y and z written front to
    // back (all M planes at each step would be as many scattered streams).
    // (The last partial step reads the padded rows past the row's end, as the whole ones.)
    const int64_t full = d.OW / 16 * 16;
    for (int64_t b = 0; b < blocks.count; ++b)
      strip_of<Act>(blocks.size(b), src, int64_t{0}, full, src, full, d.OW, taps, wp + b * taps * kMB, bias + b * kMB,
                    staged_out(out, st, blocks.first(b), oh * d.OW), blocks.first(b) * out.plane + oh * d.OW, ap);
    stream_staged(out, st, d.M, oh * d.OW, d.OW);
  }
  if (out.stream || st.rows) _mm_sfence();  // the streamed y visible before the task completes
}

// Columns [p0, p1) of one image: x [C, P] -> out (planes of P) with the packed weights wp.
template <InReg Act>
__attribute__((target("avx2,fma"))) void pointwise_columns(int64_t C, const Blocks& blocks, const float* x, const float* wp, const float* bias,
                                                           const Out& out, const ActParams& ap, int64_t p0, int64_t p1) {
  const int64_t P = out.plane, full = p0 + (p1 - p0) / 16 * 16;
  const float* src[32];
  for (int64_t c = 0; c < C; ++c) src[c] = x + c * P;
  // The last partial step's columns, copied zero-padded to 16 (x is read in place otherwise).
  alignas(32) float tail[32 * 16];
  const float* tail_src[32] = {};
  if (full < p1) {
    for (int64_t c = 0; c < C; ++c) {
      float* t = tail + c * 16;
      std::memcpy(t, x + c * P + full, static_cast<size_t>(p1 - full) * sizeof(float));
      std::fill(t + (p1 - full), t + 16, 0.f);
      tail_src[c] = t;
    }
  }
  const Staged st = stage_for<Act>(out, blocks.first(blocks.count), p1 - p0);  // the columns of every channel
  for (int64_t b = 0; b < blocks.count; ++b)
    strip_of<Act>(blocks.size(b), src, p0, full, tail_src, int64_t{0}, p1, C, wp + b * C * kMB, bias + b * kMB, staged_out(out, st, blocks.first(b), p0),
                  blocks.first(b) * P, ap);
  stream_staged(out, st, blocks.first(blocks.count), p0, p1 - p0);
  if (out.stream || st.rows) _mm_sfence();
}

}  // namespace

void conv_pointwise_thin_avx2(const ConvGeom& g, const float* X, const float* W, const float* B, float* Y, ThreadPool& pool, const EpilogueOut& act) {
  const int64_t P = product(g.out), C = g.C, M = g.M;
  if (P == 0) return;
  std::vector<float> wp, bias;
  const Blocks blocks(M);
  pack_blocks(blocks, W, B, C, wp, bias);
  const ActParams ap = avx2::act_params(act.epi);
  // Chunks of columns (pointwise_chunk: 256, or as many for each thread).
  const int64_t chunk = pointwise_chunk(P, pool.threads());
  const int64_t chunks = (P + chunk - 1) / chunk;
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 20) / std::max<int64_t>(1, 2 * C * M * chunk));
  avx2::with_in_reg(act.epi, [&]<InReg Act>() {
    // y streamed when every whole block of 16 starts on a cache line and the epilogue keeps its
    // own output: nothing reads y during the run. So is SiLU's sigmoid, which only the fused
    // product reads (as on AVX-512; its tensor on a cache line too).
    const bool stream = Act != InReg::None && P % 16 == 0 && reinterpret_cast<uintptr_t>(Y) % 64 == 0 && reinterpret_cast<uintptr_t>(act.z1) % 64 == 0;
    pool.parallel_for(g.N * chunks, grain, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        const int64_t n = i / chunks, p0 = i % chunks * chunk, p1 = std::min(P, p0 + chunk);
        pointwise_columns<Act>(C, blocks, X + n * C * P, wp.data(), bias.data(), out_of(Y, act, Act, n * M * P, P, stream), ap, p0, p1);
      }
    });
  });
}

void conv_direct_avx2(const ConvGeom& g, const float* X, const float* W, const float* B, float* Y, ThreadPool& pool, const EpilogueOut& act) {
  Direct d{g.C, g.in[0], g.in[1], g.out[0], g.out[1], g.M, g.pad_begin[0], g.pad_begin[1], 0};
  const int64_t s = g.stride[0];
  if (d.OH * d.OW == 0 || d.M == 0) return;
  // Row length: the data columns as the row copy writes them (stride 1: whole vectors of 8) and
  // every column the last step's taps read (16 from column 2 at most, stride 2 from 1).
  const int64_t steps = (d.OW + 15) / 16 * 16;
  const int64_t need = s == 1 ? std::max(d.pw + (d.W + 7) / 8 * 8, steps + 2) : std::max((d.pw + d.W + 1) / 2, steps + 1);
  d.L = (need + 15) / 16 * 16;
  const int64_t taps = d.C * 9;
  const Blocks blocks(d.M);
  std::vector<float> wp, bias;
  pack_blocks(blocks, W, B, taps, wp, bias);
  const ActParams ap = avx2::act_params(act.epi);
  const int64_t P = d.OH * d.OW, flops_per_row = 2 * d.M * taps * steps;
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 20) / std::max<int64_t>(1, flops_per_row));
  avx2::with_in_reg(act.epi, [&]<InReg Act>() {
    const bool stream =
        Act != InReg::None && d.OW % 16 == 0 && P % 16 == 0 && reinterpret_cast<uintptr_t>(Y) % 64 == 0 && reinterpret_cast<uintptr_t>(act.z1) % 64 == 0;
    pool.parallel_for(g.N * d.OH, grain, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e;) {
        const int64_t n = i / d.OH, r0 = i % d.OH, r1 = std::min(d.OH, r0 + (e - i));
        const float* x = X + n * d.C * d.H * d.W;
        const Out out = out_of(Y, act, Act, n * d.M * P, P, stream);
        if (s == 1) direct_rows<Act, 1>(d, blocks, x, wp.data(), bias.data(), out, ap, r0, r1);
        else direct_rows<Act, 2>(d, blocks, x, wp.data(), bias.data(), out, ap, r0, r1);
        i += r1 - r0;
      }
    });
  });
}
#else
// Never called: conv_direct_applies() and conv_pointwise_thin_applies() are false on other
// architectures.
void conv_direct_avx2(const ConvGeom&, const float*, const float*, const float*, float*, ThreadPool&, const EpilogueOut&) {}
void conv_pointwise_thin_avx2(const ConvGeom&, const float*, const float*, const float*, float*, ThreadPool&, const EpilogueOut&) {}
#endif

}  // namespace nnxr::runtime
