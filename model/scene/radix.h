// Internal to model/scene: stable LSD radix sorts, O(n) per pass, for the per-segment orders.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace nnxr::scene {

// Sorts `a` stably by key(a[i]) ascending over the low `key_bits` bits of the key, in digits of
// 11 bits (three passes for a 32-bit key where bytes would take four; a pass's 2048 positions
// stay in L1), one pass per digit that is not the same in every element. `tmp` is scratch
// (resized; a and tmp may trade buffers, and both keep their capacity for the caller to reuse).
// When `keep` < a.size(), only the first `keep` elements of the result are produced (a is resized
// to `keep`).
template <class Vector, class Key>
void radix_sort(Vector& a, Vector& tmp, Key key, int key_bits, size_t keep) {
  using T = typename Vector::value_type;
  constexpr int kDigit = 11;
  constexpr size_t kBins = size_t(1) << kDigit;
  const size_t n = a.size();
  keep = std::min(keep, n);
  const int digits = (key_bits + kDigit - 1) / kDigit;
  std::vector<std::array<size_t, kBins>> hist(static_cast<size_t>(digits));
  for (auto& h : hist) h.fill(0);
  for (const T& x : a) {
    const uint64_t k = key(x);
    for (int d = 0; d < digits; ++d) ++hist[size_t(d)][(k >> (kDigit * d)) & (kBins - 1)];
  }
  std::vector<int> passes;
  for (int d = 0; d < digits; ++d) {
    bool trivial = false;
    for (size_t v : hist[size_t(d)]) trivial |= v == n;
    if (!trivial) passes.push_back(d);
  }
  if (passes.empty()) {
    a.resize(keep);
    return;
  }
  tmp.resize(n);
  for (size_t p = 0; p < passes.size(); ++p) {
    const int d = passes[p];
    const bool last = p + 1 == passes.size();
    std::array<size_t, kBins> pos;
    size_t sum = 0;
    for (size_t v = 0; v < kBins; ++v) {
      pos[v] = sum;
      sum += hist[size_t(d)][v];
    }
    const int shift = kDigit * d;
    if (last && keep < n) {
      for (const T& x : a) {
        const size_t at = pos[(key(x) >> shift) & (kBins - 1)]++;
        if (at < keep) tmp[at] = x;
      }
    } else {
      for (const T& x : a) tmp[pos[(key(x) >> shift) & (kBins - 1)]++] = x;
    }
    a.swap(tmp);
  }
  a.resize(keep);
}

}  // namespace nnxr::scene
