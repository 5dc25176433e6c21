// Internal to the connectors: the hot loop of the weighted ops (Conv, Gemm, MatMul). Scores a run
// of candidates against per-output thresholds and inserts only the few that beat them, so the
// cost per candidate is a multiply, an abs and a compare.
#pragma once

#include <cmath>
#include <cstdint>

#include "model/scene/connect.h"

namespace nnxr::scene::connect {

// Run over outputs out0 + j, j in [0, len): the candidate of output out0 + j is a = x[j * xs]
// (source index src0 + j * xs in input `input`) with weight w. th[j] caches top.threshold().
// True if any candidate was inserted (some th[j] changed).
inline bool scan_outputs(TopK& top, uint32_t input, int64_t out0, float* th, const float* x, int64_t xs, int64_t src0, float w, int64_t len) {
  bool inserted = false;
  int64_t j = 0;
  if (xs == 1) {
    for (; j + 8 <= len; j += 8) {
      float s[8];
      bool hit = false;
      for (int t = 0; t < 8; ++t) {
        s[t] = std::fabs(w * x[j + t]);
        hit |= s[t] > th[j + t];
      }
      if (!hit) [[likely]]
        continue;
      inserted = true;
      for (int t = 0; t < 8; ++t)
        if (s[t] > th[j + t]) {
          top.insert(out0 + j + t, input, src0 + j + t, s[t], w * x[j + t]);
          th[j + t] = top.threshold(out0 + j + t);
        }
    }
  }
  for (; j < len; ++j) {
    const float a = x[j * xs];
    const float s = std::fabs(w * a);
    if (s > th[j]) {
      top.insert(out0 + j, input, src0 + j * xs, s, w * a);
      th[j] = top.threshold(out0 + j);
      inserted = true;
    }
  }
  return inserted;
}

// One operand of a product: element t at p[t * stride], source index src0 + t * src_step in
// node input `input`.
struct Operand {
  const float* p;
  int64_t stride;
  int64_t src0, src_step;
  uint32_t input;
};

// One output, candidates t in [0, len): a = x[t] with weight w[t]: score |(alpha·w)·a|. When
// `both`, w is a source too, with the same score and contribution.
inline void scan_candidates(TopK& top, int64_t out, const Operand& x, const Operand& w, float alpha, int64_t len, bool both = false) {
  float th = top.threshold(out);
  int64_t t = 0;
  auto take = [&](int64_t i, float s, float c) {
    top.insert(out, x.input, x.src0 + i * x.src_step, s, c);
    if (both) top.insert(out, w.input, w.src0 + i * w.src_step, s, c);
    th = top.threshold(out);
  };
  if (x.stride == 1 && w.stride == 1) {
    for (; t + 8 <= len; t += 8) {
      float s[8];
      bool hit = false;
      for (int u = 0; u < 8; ++u) {
        s[u] = std::fabs((alpha * w.p[t + u]) * x.p[t + u]);
        hit |= s[u] > th;
      }
      if (!hit) [[likely]]
        continue;
      for (int u = 0; u < 8; ++u)
        if (s[u] > th) take(t + u, s[u], (alpha * w.p[t + u]) * x.p[t + u]);
    }
  }
  for (; t < len; ++t) {
    const float c = (alpha * w.p[t * w.stride]) * x.p[t * x.stride];
    const float s = std::fabs(c);
    if (s > th) take(t, s, c);
  }
}

}  // namespace nnxr::scene::connect
