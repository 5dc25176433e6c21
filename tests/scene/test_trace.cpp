// Scene::trace against a brute-force walk over the whole connection array.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>

#include "model/load.h"
#include "tests/scene/test_scene_util.h"

namespace nnxr::scene {
namespace {

using model::Graph;

struct Edge {
  uint32_t index, src, dst;  // connection index, global neurons
};

std::vector<Edge> all_edges(const Scene& scene, const InMemorySink& sink) {
  std::vector<Edge> out;
  for (const Segment& s : scene.segments())
    for (uint32_t c = s.connection_first; c < s.connection_first + s.connection_count; ++c)
      out.push_back({c, sink.connection_data[c].src, s.neuron_first + (sink.connection_data[c].packed & 0xFFFFFFu)});
  return out;
}

// Breadth-first over every edge: per step and per frontier neuron, the `fan` edges of lowest
// index (= strongest) that end (back) or start (forward) at it.
std::pair<std::set<uint32_t>, std::set<uint32_t>> brute(const std::vector<Edge>& edges, uint32_t start, int back, int forward, int fan) {
  std::set<uint32_t> neurons{start}, conns;
  for (bool backward : {true, false}) {
    std::vector<uint32_t> frontier{start};
    for (int step = 0; step < (backward ? back : forward); ++step) {
      std::vector<uint32_t> next;
      for (uint32_t n : frontier) {
        int taken = 0;
        for (const Edge& e : edges) {  // in index order
          if ((backward ? e.dst : e.src) != n || taken == fan) continue;
          ++taken;
          conns.insert(e.index);
          if (neurons.insert(backward ? e.src : e.dst).second) next.push_back(backward ? e.src : e.dst);
        }
      }
      frontier = next;
    }
  }
  return {neurons, conns};
}

TEST(Trace, MatchesBruteForce) {
  const Graph g = model::load_model_from_text(test::kBranchy);
  const Layout layout = Layout::build(g, {});
  std::mt19937 rng(8);
  for (int round = 0; round < 4; ++round) {
    const test::Values v(g, uint32_t(40 + round));
    InMemorySink sink;
    const Scene scene = test::build_test_scene(g, layout, v.acts, {.top_k = 3, .budget = round % 2 ? 900u : 100000u}, sink);
    const auto edges = all_edges(scene, sink);
    for (int trial = 0; trial < 25; ++trial) {
      const uint32_t n = uint32_t(rng() % scene.stats().neurons);
      const int back = int(rng() % 4), forward = int(rng() % 3), fan = 1 + int(rng() % 4);
      const Trace t = scene.trace(n, back, forward, fan);
      const auto [want_neurons, want_conns] = brute(edges, n, back, forward, fan);
      EXPECT_EQ(t.neurons.front(), n);
      EXPECT_EQ(std::set<uint32_t>(t.neurons.begin(), t.neurons.end()), want_neurons) << "neuron " << n;
      EXPECT_EQ(std::set<uint32_t>(t.connections.begin(), t.connections.end()), want_conns) << "neuron " << n;
      EXPECT_EQ(t.neurons.size(), want_neurons.size());  // no duplicates
      EXPECT_EQ(t.connections.size(), want_conns.size());
    }
  }
}

TEST(Trace, Identity) {
  const Graph g = model::load_model_from_text(test::kBranchy);
  const Layout layout = Layout::build(g, {});
  const test::Values v(g, 5);
  InMemorySink sink;
  const Scene scene = test::build_test_scene(g, layout, v.acts, {.top_k = 2, .budget = 100000}, sink);
  const model::TensorId c = g.find("C");
  const int64_t element = 2 * 35 + 3 * 7 + 4;  // [0, 2, 3, 4] of [1,3,5,7]
  const uint32_t n = *scene.find(c, element);
  const Trace t = scene.trace(n, 1, 1, 2);
  EXPECT_EQ(t.selected.neuron, n);
  EXPECT_EQ(t.selected.tensor, c);
  EXPECT_EQ(t.selected.element, element);
  EXPECT_EQ(t.selected.value, v.storage[c][size_t(element)]);
  EXPECT_EQ(t.tensor_name, "C");
  EXPECT_EQ(t.op_type, "Add");
  EXPECT_FALSE(t.node_name.empty());
  EXPECT_EQ(t.index, (std::vector<int64_t>{0, 2, 3, 4}));
  EXPECT_EQ(scene.trace(n, 1, 0, 2).connections.size(), 2u);  // its top two of 210 candidates
  EXPECT_EQ(scene.trace(n, 1, 0, 2).neurons.size(), 3u);
  const Trace input = scene.trace(*scene.find(g.find("X"), 0), 3, 0, 8);
  EXPECT_EQ(input.op_type, "");
  EXPECT_TRUE(input.connections.empty());
  EXPECT_THROW(scene.trace(uint32_t(scene.stats().neurons)), std::out_of_range);
  EXPECT_THROW(scene.neuron(uint32_t(scene.stats().neurons) + 5), std::out_of_range);
  EXPECT_FALSE(scene.find(model::TensorId(9999), 0));
  EXPECT_FALSE(scene.find(c, -1));
  EXPECT_FALSE(scene.find(c, 105));
}

}  // namespace
}  // namespace nnxr::scene
