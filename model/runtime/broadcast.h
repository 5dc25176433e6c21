// Internal: iteration over a broadcast output with N inputs, dims collapsed so that the inner loop
// is as long as possible. Used by the element-wise kernels, Where, Expand and PRelu.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "model/runtime/thread_pool.h"

namespace nnxr::runtime {

// Calls inner(offsets, inner_strides, out_offset, len) for each row of the collapsed output.
// offsets/inner_strides are per input, in elements. Rows are split across `pool` when the output
// is large.
template <size_t N, class F>
void for_each_broadcast(std::span<const int64_t> out_shape, const std::array<std::vector<int64_t>, N>& in_strides, ThreadPool* pool,
                        F&& inner) {
  // Collapse: drop size-1 dims, merge neighbours that are contiguous for every input.
  std::vector<int64_t> dims;
  std::array<std::vector<int64_t>, N> st;
  for (size_t d = 0; d < out_shape.size(); ++d) {
    if (out_shape[d] == 1) continue;
    if (!dims.empty()) {
      bool merge = true;
      for (size_t k = 0; k < N; ++k) merge = merge && st[k].back() == in_strides[k][d] * out_shape[d];
      if (merge) {
        dims.back() *= out_shape[d];
        for (size_t k = 0; k < N; ++k) st[k].back() = in_strides[k][d];
        continue;
      }
    }
    dims.push_back(out_shape[d]);
    for (size_t k = 0; k < N; ++k) st[k].push_back(in_strides[k][d]);
  }
  int64_t total = 1;
  for (int64_t d : out_shape) total *= d;
  if (total == 0) return;
  if (dims.empty()) {
    std::array<int64_t, N> off{}, is{};
    inner(off, is, int64_t{0}, int64_t{1});
    return;
  }
  const int64_t len = dims.back();
  std::array<int64_t, N> inner_st;
  for (size_t k = 0; k < N; ++k) inner_st[k] = st[k].back();
  const int64_t rows = total / len;
  const size_t outer_rank = dims.size() - 1;
  // The row's index in the outer dims is divided out once per range of rows, then counted up
  // (no division per row: rows of a few elements, a Slice of [4420, 4] to [4420, 2], would spend
  // most of their time there).
  auto body = [&](int64_t r0, int64_t r1) {
    std::array<int64_t, N> off{};
    std::vector<int64_t> idx(outer_rank);
    int64_t rem = r0;
    for (size_t d = outer_rank; d-- > 0;) {
      idx[d] = rem % dims[d];
      rem /= dims[d];
      for (size_t k = 0; k < N; ++k) off[k] += idx[d] * st[k][d];
    }
    for (int64_t r = r0; r < r1; ++r) {
      inner(off, inner_st, r * len, len);
      for (size_t d = outer_rank; d-- > 0;) {
        for (size_t k = 0; k < N; ++k) off[k] += st[k][d];
        if (++idx[d] < dims[d]) break;
        idx[d] = 0;
        for (size_t k = 0; k < N; ++k) off[k] -= dims[d] * st[k][d];
      }
    }
  };
  if (pool && total >= (1 << 16))
    pool->parallel_for(rows, std::max<int64_t>(1, (1 << 14) / len), body);
  else
    body(0, rows);
}

}  // namespace nnxr::runtime
