// Internal to model/scene: stable LSD radix sorts, O(n) per pass, for the per-segment orders.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace nnxr::scene {

// Sorts `a` stably by key(a[i]) ascending over the low `key_bytes` bytes of the key, one pass per
// byte that is not the same in every element. `tmp` is scratch (resized; a and tmp may trade
// buffers, and both keep their capacity for the caller to reuse). When `keep` < a.size(), only
// the first `keep` elements of the result are produced (a is resized to `keep`).
template <class Vector, class Key>
void radix_sort(Vector& a, Vector& tmp, Key key, int key_bytes, size_t keep) {
  using T = typename Vector::value_type;
  const size_t n = a.size();
  keep = std::min(keep, n);
  std::vector<std::array<size_t, 256>> hist(static_cast<size_t>(key_bytes));
  for (auto& h : hist) h.fill(0);
  for (const T& x : a) {
    const uint64_t k = key(x);
    for (int b = 0; b < key_bytes; ++b) ++hist[size_t(b)][(k >> (8 * b)) & 0xFF];
  }
  std::vector<int> passes;
  for (int b = 0; b < key_bytes; ++b) {
    bool trivial = false;
    for (size_t v : hist[size_t(b)]) trivial |= v == n;
    if (!trivial) passes.push_back(b);
  }
  if (passes.empty()) {
    a.resize(keep);
    return;
  }
  tmp.resize(n);
  for (size_t p = 0; p < passes.size(); ++p) {
    const int b = passes[p];
    const bool last = p + 1 == passes.size();
    std::array<size_t, 256> pos;
    size_t sum = 0;
    for (size_t v = 0; v < 256; ++v) {
      pos[v] = sum;
      sum += hist[size_t(b)][v];
    }
    const int shift = 8 * b;
    if (last && keep < n) {
      for (const T& x : a) {
        const size_t d = pos[(key(x) >> shift) & 0xFF]++;
        if (d < keep) tmp[d] = x;
      }
    } else {
      for (const T& x : a) tmp[pos[(key(x) >> shift) & 0xFF]++] = x;
    }
    a.swap(tmp);
  }
  a.resize(keep);
}

}  // namespace nnxr::scene
