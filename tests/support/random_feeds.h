// Random float inputs for every graph input of a model, for tests and benchmarks that need some
// input and do not care which: each input in its declared shape (symbolic or zero dimensions as
// 1), values uniform in [lo, hi) from a std::mt19937 with `seed`, element by element.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>

#include "engine/worker.h"
#include "model/graph.h"

namespace nnxr::test {

inline engine::Feeds random_feeds(const model::Graph& g, unsigned seed, float lo, float hi) {
  engine::Feeds feeds;
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  for (auto id : g.inputs) {
    const model::Tensor& t = g.tensors[id];
    model::TensorData d;
    d.dtype = model::DType::Float;
    d.shape = t.shape;
    for (int64_t& s : d.shape) s = std::max<int64_t>(s, 1);
    const int64_t n = d.elements();
    d.bytes.resize(static_cast<size_t>(n) * 4);
    for (int64_t i = 0; i < n; ++i) {
      const float v = u(rng);
      std::memcpy(d.bytes.data() + i * 4, &v, 4);
    }
    feeds[t.name] = std::move(d);
  }
  return feeds;
}

}  // namespace nnxr::test
