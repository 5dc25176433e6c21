// Scene::counts against a naive filter that scans every element of the sink, over random scenes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "model/load.h"
#include "model/scene/scene_impl.h"
#include "tests/scene/test_scene_util.h"

namespace nnxr::scene {
namespace {

using model::Graph;

// The contribution of a kept connection, recomputed from the test connector's definition.
float contribution(const Graph& g, const Scene& scene, const test::Values& v, const Segment& dst_seg, const Connection& c) {
  const NeuronInfo src = scene.neuron(c.src);
  const NeuronInfo dst = scene.neuron(dst_seg.neuron_first + (c.packed & 0xFFFFFFu));
  const model::Node& node = g.nodes[g.tensors[dst.tensor].producer];
  const uint32_t slot = uint32_t(std::find(node.inputs.begin(), node.inputs.end(), src.tensor) - node.inputs.begin());
  return v.storage[src.tensor][size_t(src.element)] * test::test_weight(dst.element, slot, src.element);
}

DrawCounts naive_counts(const Graph& g, const Scene& scene, const InMemorySink& sink, const test::Values& v, const Filter& f) {
  DrawCounts out;
  for (const Segment& s : scene.segments()) {
    const model::Tensor& t = g.tensors[s.tensor];
    const std::string op = t.producer == model::kNone ? "" : g.nodes[t.producer].op_type;
    bool shown = s.layer >= f.layer_min && s.layer <= f.layer_max;
    if (!f.op_types.empty() && std::find(f.op_types.begin(), f.op_types.end(), op) == f.op_types.end()) shown = false;
    if (!f.tensors.empty() && std::find(f.tensors.begin(), f.tensors.end(), s.tensor) == f.tensors.end()) shown = false;
    const bool dim = f.outside == Filter::Outside::Dim;
    if (dim) out.dimmed.push_back(shown ? 0 : 1);
    uint32_t n = 0, c = 0;
    if (shown || dim) {
      if (f.neuron_mode == Filter::Mode::Quantile) {
        n = s.neuron_count - uint32_t(std::llround(double(std::clamp(f.neuron_threshold, 0.f, 1.f)) * s.neuron_count));
      } else {
        for (uint32_t i = 0; i < s.neuron_count; ++i) n += std::fabs(sink.neuron_data[s.neuron_first + i].value) >= f.neuron_threshold;
      }
      if (f.connection_mode == Filter::Mode::Quantile) {
        c = s.connection_count -
            uint32_t(std::llround(double(std::clamp(f.connection_threshold, 0.f, 1.f)) * s.connection_count));
      } else {
        // Keys keep 8 significant bits: compare the scores at that precision.
        for (uint32_t i = 0; i < s.connection_count; ++i)
          c += score_key(std::fabs(contribution(g, scene, v, s, sink.connection_data[s.connection_first + i]))) >=
               score_key(f.connection_threshold);
      }
    }
    out.neurons.push_back(n);
    out.connections.push_back(c);
  }
  return out;
}

TEST(Filter, MatchesNaiveFilterOnRandomScenes) {
  const Graph g = model::load_model_from_text(test::kBranchy);
  const Layout layout = Layout::build(g, {});
  std::mt19937 rng(17);
  const std::vector<std::string> ops = {"Relu", "Sigmoid", "Add", "Tanh", "Conv"};
  for (int round = 0; round < 12; ++round) {
    const test::Values v(g, uint32_t(100 + round));
    InMemorySink sink;
    const uint64_t budget = 200 + rng() % 3000;
    const Scene scene = test::build_test_scene(g, layout, v.acts, {.top_k = 1 + int(rng() % 6), .budget = budget, .threads = 2}, sink);
    for (int trial = 0; trial < 40; ++trial) {
      Filter f;
      std::uniform_real_distribution<float> unit(0, 1), score(0, 4);
      f.neuron_mode = rng() % 2 ? Filter::Mode::Quantile : Filter::Mode::Absolute;
      f.connection_mode = rng() % 2 ? Filter::Mode::Quantile : Filter::Mode::Absolute;
      f.neuron_threshold = f.neuron_mode == Filter::Mode::Quantile ? unit(rng) : score(rng);
      f.connection_threshold = f.connection_mode == Filter::Mode::Quantile ? unit(rng) : score(rng) * score(rng) / 4;
      if (trial % 5 == 1) f.neuron_threshold = f.neuron_mode == Filter::Mode::Quantile ? 1.f : 0.f;
      if (trial % 4 == 2) {
        f.layer_min = int(rng() % 3);
        f.layer_max = f.layer_min + int(rng() % 3);
      }
      if (trial % 6 == 3) f.op_types = {ops[rng() % ops.size()], ops[rng() % ops.size()]};
      if (trial % 7 == 4) f.tensors = {g.find("A"), g.find("W"), model::TensorId(rng() % g.tensors.size())};
      if (trial % 3 == 0) f.outside = Filter::Outside::Dim;
      const DrawCounts got = scene.counts(f), want = naive_counts(g, scene, sink, v, f);
      EXPECT_EQ(got.neurons, want.neurons) << "round " << round << " trial " << trial;
      EXPECT_EQ(got.connections, want.connections) << "round " << round << " trial " << trial;
      EXPECT_EQ(got.dimmed, want.dimmed) << "round " << round << " trial " << trial;
    }
  }
}

TEST(Filter, EdgeCases) {
  const Graph g = model::load_model_from_text(test::kBranchy);
  const Layout layout = Layout::build(g, {});
  const test::Values v(g, 1);
  InMemorySink sink;
  const Scene scene = test::build_test_scene(g, layout, v.acts, {.top_k = 2, .budget = 100000}, sink);
  const size_t n = scene.segments().size();
  Filter all;
  DrawCounts c = scene.counts(all);
  for (size_t i = 0; i < n; ++i) {
    EXPECT_EQ(c.neurons[i], scene.segments()[i].neuron_count);
    EXPECT_EQ(c.connections[i], scene.segments()[i].connection_count);
  }
  Filter none;
  none.neuron_threshold = 1;
  none.connection_threshold = 1;
  c = scene.counts(none);
  for (size_t i = 0; i < n; ++i) EXPECT_EQ(c.neurons[i] + c.connections[i], 0u);
  Filter top10;
  top10.neuron_threshold = 0.9f;  // of 105 neurons, drop round(0.9·105)
  c = scene.counts(top10);
  const auto a = size_t(std::find_if(scene.segments().begin(), scene.segments().end(),
                                     [&](const Segment& s) { return s.tensor == g.find("A"); }) - scene.segments().begin());
  EXPECT_EQ(c.neurons[a], 105u - uint32_t(std::llround(double(0.9f) * 105)));
  Filter nan;
  nan.neuron_threshold = std::nanf("");
  nan.connection_mode = Filter::Mode::Absolute;
  nan.connection_threshold = std::nanf("");
  c = scene.counts(nan);
  EXPECT_EQ(c.neurons[a], scene.segments()[a].neuron_count);
  EXPECT_EQ(c.connections[a], scene.segments()[a].connection_count);
  Filter layers;
  layers.layer_min = 5;
  c = scene.counts(layers);
  EXPECT_EQ(std::count(c.neurons.begin(), c.neurons.end(), 0u), std::ptrdiff_t(n));
  EXPECT_TRUE(c.dimmed.empty());
  // Dimmed: every segment keeps its threshold counts and is flagged.
  layers.outside = Filter::Outside::Dim;
  c = scene.counts(layers);
  ASSERT_EQ(c.dimmed.size(), n);
  for (size_t i = 0; i < n; ++i) {
    EXPECT_EQ(c.neurons[i], scene.segments()[i].neuron_count);
    EXPECT_EQ(c.dimmed[i], 1);
  }
}

}  // namespace
}  // namespace nnxr::scene
