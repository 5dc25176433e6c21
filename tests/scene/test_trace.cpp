// Scene::trace against a brute-force walk over the whole connection array.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <filesystem>
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

// ---- the path that fed a tensor -----------------------------------------------------------------

// Naive reference: u feeds t when t is reachable from u along consumers.
bool feeds(const Graph& g, model::TensorId u, model::TensorId t) {
  std::vector<char> seen(g.tensors.size(), 0);
  std::vector<model::TensorId> stack{u};
  while (!stack.empty()) {
    const model::TensorId x = stack.back();
    stack.pop_back();
    if (x == t) return true;
    for (model::NodeId n : g.tensors[x].consumers)
      for (model::TensorId o : g.nodes[n].outputs)
        if (o != model::kNone && !seen[o]) {
          seen[o] = 1;
          stack.push_back(o);
        }
  }
  return false;
}

TEST(UpstreamTensors, AreTheLaidOutTensorsThatReachItOnRealModels) {
  const std::filesystem::path dir(NNXR_SHARED_MODELS);
  int checked = 0;
  for (const char* name : {"squeezenet1.1-caffe2-op7-fp32.onnx", "mnist-8.onnx", "ultraface-RFB-320.onnx", "tf-bert-qa-tiny.onnx"}) {
    if (!std::filesystem::exists(dir / name)) continue;
    const Graph g = model::load_model((dir / name).string());
    const Layout layout = Layout::build(g, {});
    // Every fifth laid-out tensor (all of them for the small models).
    const size_t step = std::max<size_t>(1, layout.blocks().size() / 12);
    for (size_t i = 0; i < layout.blocks().size(); i += step) {
      const model::TensorId t = layout.blocks()[i].tensor;
      const std::vector<model::TensorId> path = upstream_tensors(g, layout, t);
      ASSERT_FALSE(path.empty());
      EXPECT_EQ(path.front(), t);
      std::set<model::TensorId> got(path.begin(), path.end());
      EXPECT_EQ(got.size(), path.size()) << name << ": a tensor twice";
      for (const Block& b : layout.blocks())
        EXPECT_EQ(got.count(b.tensor) == 1, b.tensor == t || feeds(g, b.tensor, t))
            << name << ": " << g.tensors[b.tensor].name << " for " << g.tensors[t].name;
      for (size_t k = 2; k < path.size(); ++k) EXPECT_LE(layout.block(path[k - 1])->layer, layout.block(path[k])->layer);
    }
    ++checked;
  }
  if (checked == 0) GTEST_SKIP() << "no shared models in " << dir;
}

TEST(UpstreamTensors, OfAFireModulesBranchLeaveItsSiblingOut) {
  const std::filesystem::path file = std::filesystem::path(NNXR_SHARED_MODELS) / "squeezenet1.1-caffe2-op7-fp32.onnx";
  if (!std::filesystem::exists(file)) GTEST_SKIP() << file << " is absent";
  const Graph g = model::load_model(file.string());
  const Layout layout = Layout::build(g, {});
  const model::TensorId t = g.find("fire3/expand1x1_2");
  ASSERT_NE(t, model::kNone);
  std::vector<std::string> names;
  for (model::TensorId id : upstream_tensors(g, layout, t)) names.push_back(g.tensors[id].name);
  // The branch itself, the input, the stem and fire2 whole (both its branches meet in its
  // concat), fire3's squeeze and the branch's conv; fire3's 3x3 branch, at the same depth, is
  // not on the path, nor is anything deeper.
  const std::vector<std::string> want{"fire3/expand1x1_2", "data_0", "conv1_1", "conv1_2", "pool1_1",
                                      "fire2/squeeze1x1_1", "fire2/squeeze1x1_2", "fire2/expand1x1_1", "fire2/expand3x3_1",
                                      "fire2/expand1x1_2", "fire2/expand3x3_2", "fire2/concat_1", "fire3/squeeze1x1_1",
                                      "fire3/squeeze1x1_2", "fire3/expand1x1_1"};
  EXPECT_EQ(names, want);
}

}  // namespace

}  // namespace nnxr::scene
