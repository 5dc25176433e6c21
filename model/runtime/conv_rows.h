// What the two row-band convolution kernels share (conv_rows_avx512.cpp, conv_rows_avx2.cpp): the
// layer's geometry, where a tile's outputs go, and the band of zero-padded input rows its taps
// are read from.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "model/runtime/avx2.h"
#include "model/runtime/compute.h"
#include "model/runtime/value.h"

namespace nnxr::runtime::conv_rows_band {

inline constexpr int64_t kBandBytes = int64_t{1} << 19;  // a band's padded rows: half of a Zen 4 L2

// With stride 2 (dilation 1) each padded row is held as its even columns, then its odd ones (Wq
// floats each): tap kj of output column ow is column ow + kj / 2 of phase kj % 2, so a tile's
// taps are whole vectors of one phase row as at stride 1.
struct Rows {
  int64_t C, H, W, OH, OW, M, kh, kw, ph, pw;
  int64_t dh, dw;  // dilation
  int64_t sh, sw;  // stride (1, or 2 with dilation 1)
  int64_t Wq;      // floats per phase of a padded row: OW + ceil((kw - 1) dw / sw)
  int64_t Wp;      // floats per padded row: sw Wq
};

struct Out {
  float* y;
  float* z1;
  float* z2;
  const float* addend;
  int64_t P;  // floats per output plane
  bool stream;
  avx2::ActParams ap;
  // When set (band_out: an epilogue that keeps its own output, rows not streamed): channel m's y at
  // in-plane offset q goes to staged[m * staged_P + q - staged_from] instead, to be streamed out
  // a band at a time.
  float* staged = nullptr;
  int64_t staged_P = 0, staged_from = 0;
};

// `out` for the band of output rows [b0, b1): with y staged (every channel's rows of the band in
// a thread-local buffer, Out::staged) when the epilogue keeps its own output and y is not
// streamed as written; flush_band then streams channels [m0, m1) out, one span a channel.
inline Out band_out(const Out& out, int64_t M, int64_t OW, int64_t b0, int64_t b1, bool stage) {
  if (!stage) return out;
  thread_local std::vector<float, CacheAligned<float>> staged;
  Out o = out;
  o.staged_P = (b1 - b0) * OW;
  o.staged_from = b0 * OW;
  if (staged.size() < static_cast<size_t>(M * o.staged_P)) staged.resize(static_cast<size_t>(M * o.staged_P));
  o.staged = staged.data();
  return o;
}
template <class StreamSpan>
void flush_band(const Out& out, const Out& band, int64_t m0, int64_t m1, StreamSpan&& stream_span) {
  if (!band.staged) return;
  for (int64_t m = m0; m < m1; ++m) stream_span(out.y + m * out.P + band.staged_from, band.staged + m * band.staged_P, band.staged_P);
}

// The geometry of a 2-D convolution conv_rows_applies() took.
inline Rows rows_of(const ConvGeom& g) {
  Rows d{g.C,          g.in[0],      g.in[1],       g.out[0],     g.out[1],     g.M, g.kernel[0], g.kernel[1], g.pad_begin[0], g.pad_begin[1],
         g.dilation[0], g.dilation[1], g.stride[0], g.stride[1], 0,            0};
  d.Wq = d.OW + ((d.kw - 1) * d.dw + d.sw - 1) / d.sw;
  d.Wp = d.sw * d.Wq;
  return d;
}

// Taps kj of phase p (of sw): kj = p + sw t for t < phase_taps(d, p) (stride 1: all kw).
inline int64_t phase_taps(const Rows& d, int64_t p) { return (d.kw - p + d.sw - 1) / d.sw; }

// The taps of one (c, ki) in the order a tile reads them, phase by phase: order[i] is the kj of
// the i-th (stride 1: kj = i). Computed once per call: the weights are packed through it.
inline std::vector<int64_t> tap_order(const Rows& d) {
  std::vector<int64_t> order;
  order.reserve(static_cast<size_t>(d.kw));
  for (int64_t p = 0; p < d.sw; ++p)
    for (int64_t t = 0; t < phase_taps(d, p); ++t) order.push_back(p + d.sw * t);
  return order;
}

// A pool task's output rows [b, e) of N * OH, image by image: f(n, r0, r1, out) for image n's rows
// [r0, r1), out its outputs in Y and act. y is streamed when every full store is a whole aligned
// vector of 16 and the epilogue keeps its own output (nothing reads y during the run).
template <avx2::InReg Act, class F>
void image_rows(const Rows& d, int64_t b, int64_t e, float* Y, const EpilogueOut& act, const avx2::ActParams& ap, F&& f) {
  using avx2::InReg;
  const int64_t P = d.OH * d.OW;
  for (int64_t i = b; i < e;) {
    const int64_t n = i / d.OH, r0 = i % d.OH, r1 = std::min(d.OH, r0 + (e - i));
    const int64_t at = n * d.M * P;
    float* const y = Y + at;
    const bool stream = Act != InReg::None && d.OW % 16 == 0 && reinterpret_cast<uintptr_t>(y) % 64 == 0;
    const Out out{y,
                  Act == InReg::None ? nullptr : act.z1 + at,
                  Act == InReg::SiLU ? act.z2 + at : nullptr,
                  Act == InReg::Add ? act.addend + at : nullptr,
                  P,
                  stream,
                  ap};
    f(n, r0, r1, out);
    i += r1 - r0;
  }
}

// Input rows a band of output rows [b0, b1) reads.
inline int64_t band_input_rows(const Rows& d, int64_t b0, int64_t b1) { return (b1 - b0 - 1) * d.sh + (d.kh - 1) * d.dh + 1; }

// Output rows per band: as many as keep the band's padded input rows within kBandBytes (one at
// least).
inline int64_t band_rows(const Rows& d, int64_t bytes = kBandBytes) {
  return std::max<int64_t>(1, (bytes / (4 * d.C * d.Wp) - (d.kh - 1) * d.dh - 1) / d.sh + 1);
}

// Channel c's input rows b0 sh - ph ... (in_rows of them) of image x [C, H, W] as padded rows at
// band + c * in_rows * Wp: column j of a row is input column j - pw (at stride 2 column j / 2 of
// phase j % 2, split by split(x_row, n, pw, even, odd)), rows and columns outside the input zeros.
template <class Split>
void pad_band(const Rows& d, const float* x, int64_t b0, int64_t in_rows, float* band, Split&& split) {
  const int64_t plane = in_rows * d.Wp, copy = std::max<int64_t>(0, std::min(d.W, d.Wp - d.pw));
  for (int64_t c = 0; c < d.C; ++c)
    for (int64_t i = 0; i < in_rows; ++i) {
      float* const dst = band + c * plane + i * d.Wp;
      const int64_t ih = b0 * d.sh - d.ph + i;
      if (ih < 0 || ih >= d.H) {
        std::fill(dst, dst + d.Wp, 0.f);
        continue;
      }
      const float* const src = x + (c * d.H + ih) * d.W;
      if (d.sw == 2) {
        std::fill(dst, dst + d.Wp, 0.f);
        split(src, copy, d.pw, dst, dst + d.Wq);
        continue;
      }
      std::fill(dst, dst + d.pw, 0.f);
      std::memcpy(dst + d.pw, src, static_cast<size_t>(copy) * sizeof(float));
      std::fill(dst + d.pw + copy, dst + d.Wp, 0.f);
    }
}

// The padded input rows of output rows [b0, b1) copied into buf (grown as needed, with 16 floats
// to spare: what a row's last lane tile reads past the band); returns the floats per channel.
template <class Split>
int64_t fill_band(const Rows& d, const float* x, int64_t b0, int64_t b1, std::vector<float, CacheAligned<float>>& buf, Split&& split) {
  const int64_t in_rows = band_input_rows(d, b0, b1), plane = in_rows * d.Wp;
  const size_t need = static_cast<size_t>(d.C * plane + 16);
  if (buf.size() < need) buf.resize(need);
  pad_band(d, x, b0, in_rows, buf.data(), split);
  return plane;
}

}  // namespace nnxr::runtime::conv_rows_band
