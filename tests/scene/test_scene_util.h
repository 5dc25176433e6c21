// Test support for the scene core: inline models, made-up activations and a test connector whose
// candidates are known exactly.
#pragma once

#include <cmath>
#include <cstdint>
#include <random>
#include <string_view>
#include <vector>

#include "model/graph.h"
#include "model/load.h"
#include "model/scene/build.h"
#include "model/scene/scene.h"

namespace nnxr::scene::test {

// Activations owned by the test: every float tensor of known shape gets seeded random values.
struct Values {
  std::vector<std::vector<float>> storage;
  std::vector<std::vector<int64_t>> shapes;
  Activations acts;

  Values(const model::Graph& g, uint32_t seed) : storage(g.tensors.size()), shapes(g.tensors.size()), acts(g.tensors.size()) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> d(-3.f, 3.f);
    for (size_t i = 0; i < g.tensors.size(); ++i) {
      const model::Tensor& t = g.tensors[i];
      if (t.dtype != model::DType::Float || !t.elements()) continue;
      shapes[i] = t.shape;
      storage[i].resize(size_t(*t.elements()));
      for (float& x : storage[i]) x = d(rng);
      if (!storage[i].empty() && rng() % 4 == 0) storage[i][rng() % storage[i].size()] = storage[i][0];  // a tie
      acts[i] = {shapes[i], storage[i]};
    }
  }
};

// The weight of the edge src -> out in the test connector (deterministic, in [-1, 1]).
inline float test_weight(int64_t out, uint32_t input, int64_t src) {
  uint32_t h = uint32_t(out) * 2654435761u ^ (uint32_t(src) + 0x9E3779B9u + (input << 6)) * 40503u;
  h ^= h >> 15;
  h *= 2246822519u;
  h ^= h >> 13;
  return float(h % 2001) / 1000.f - 1.f;
}

// Every element of every float input is a candidate of every output: contribution a·w.
inline void all_to_all(const NodeValues& v, uint32_t, TopK& top) {
  for (int64_t out = top.begin(); out < top.end(); ++out)
    for (uint32_t i = 0; i < v.inputs.size(); ++i) {
      const auto data = v.inputs[i].data;
      for (size_t s = 0; s < data.size(); ++s) {
        const float c = data[s] * test_weight(out, i, int64_t(s));
        top.offer(out, i, int64_t(s), std::fabs(c), c);
      }
    }
}

// all_to_all for every op but Tanh, which has no connector.
inline ConnectFn test_lookup(std::string_view, std::string_view op) { return op == "Tanh" ? nullptr : &all_to_all; }

inline Scene build_test_scene(const model::Graph& g, const Layout& layout, const Activations& acts, SceneOptions o,
                              SceneSink& sink) {
  return SceneBuilder::build(g, layout, acts, o, sink, &test_lookup);
}

// A small graph with parallel branches, several ranks and an op without connector.
inline constexpr std::string_view kBranchy = R"(
  <ir_version: 8, opset_import: ["" : 13]>
  g (float[1,3,5,7] X, float[6] V, float[2,3,4] U) => (float[1,3,5,7] D, float[6] W, float[2,3,4] R) {
    A = Relu(X)
    B = Sigmoid(X)
    T = Tanh(X)
    C = Add(A, B)
    D = Add(C, T)
    W = Relu(V)
    R = Sigmoid(U)
  })";

}  // namespace nnxr::scene::test
