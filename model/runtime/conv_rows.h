// What the two row-band convolution kernels share (conv_rows_avx512.cpp, conv_rows_avx2.cpp): the
// layer's geometry, where a tile's outputs go, and the band of zero-padded input rows its taps
// are read from.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "model/runtime/avx2.h"

namespace nnxr::runtime::conv_rows_band {

inline constexpr int64_t kBandBytes = int64_t{1} << 19;  // a band's padded rows: half of a Zen 4 L2

struct Rows {
  int64_t C, H, W, OH, OW, M, kh, kw, ph, pw;
  int64_t dh, dw;  // dilation
  int64_t Wp;      // floats per padded row: OW + (kw - 1) * dw
};

struct Out {
  float* y;
  float* z1;
  float* z2;
  const float* addend;
  int64_t P;  // floats per output plane
  bool stream;
  avx2::ActParams ap;
};

// Output rows per band: as many as keep the band's padded input rows within kBandBytes (one at
// least).
inline int64_t band_rows(const Rows& d) { return std::max<int64_t>(1, kBandBytes / (4 * d.C * d.Wp) - (d.kh - 1) * d.dh); }

// Input rows a band of output rows [b0, b1) reads.
inline int64_t band_input_rows(const Rows& d, int64_t b0, int64_t b1) { return b1 - b0 + (d.kh - 1) * d.dh; }

// Channel c's input rows b0 - ph ... (in_rows of them) of image x [C, H, W] as padded rows at
// band + c * in_rows * Wp: column j of a row is input column j - pw, rows and columns outside the
// input zeros.
inline void pad_band(const Rows& d, const float* x, int64_t b0, int64_t in_rows, float* band) {
  const int64_t plane = in_rows * d.Wp, copy = std::min(d.W, d.Wp - d.pw);
  for (int64_t c = 0; c < d.C; ++c)
    for (int64_t i = 0; i < in_rows; ++i) {
      float* const dst = band + c * plane + i * d.Wp;
      const int64_t ih = b0 - d.ph + i;
      if (ih < 0 || ih >= d.H) {
        std::fill(dst, dst + d.Wp, 0.f);
        continue;
      }
      std::fill(dst, dst + d.pw, 0.f);
      std::memcpy(dst + d.pw, x + (c * d.H + ih) * d.W, static_cast<size_t>(copy) * sizeof(float));
      std::fill(dst + d.pw + copy, dst + d.Wp, 0.f);
    }
}

}  // namespace nnxr::runtime::conv_rows_band
