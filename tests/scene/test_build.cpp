// Scene::build: contribution codes, segment order, the budget, the sink, and full builds on the
// default model and a small inline model with hand-checked counts.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

#include "assets/assets.h"
#include "model/half.h"
#include "model/load.h"
#include "model/runtime/runtime.h"
#include "model/scene/focus.h"
#include "model/scene/scene_impl.h"
#include "tests/scene/test_scene_util.h"

namespace nnxr::scene {
namespace {

using model::Graph;

// ---- contribution codes ----------------------------------------------------------------------

uint8_t naive_encode(float c, float max_abs) {
  if (c == 0 || max_abs <= 0) return 0;
  const double level = 127.0 + 8.0 * std::log2(std::fabs(double(c)) / double(max_abs));
  const uint8_t sign = c < 0 ? 0x80 : 0;
  if (std::round(level) <= 0) return sign;
  return uint8_t(sign | int(std::min(127.0, std::round(level))));
}

TEST(Contribution, MatchesTheLogFormula) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<double> exponent(-20, 0.1);
  for (int i = 0; i < 100000; ++i) {
    const float max_abs = float(std::exp2(exponent(rng) * 3));
    const float c = float((rng() % 2 ? -1 : 1) * max_abs * std::exp2(exponent(rng)));
    const uint8_t got = encode_contribution(c, max_abs), want = naive_encode(c, max_abs);
    // The two may differ by one step exactly at a rounding boundary (float vs double log2).
    const double level = 127.0 + 8.0 * std::log2(std::fabs(double(c)) / double(max_abs));
    if (std::abs(level - std::floor(level) - 0.5) > 1e-4) {
      EXPECT_EQ(int(got), int(want)) << c << " / " << max_abs;
    }
    if ((got & 0x7F) != 0 && (got & 0x7F) != 127) {
      const float back = decode_contribution(got, max_abs);
      EXPECT_EQ(std::signbit(back), std::signbit(c));
      EXPECT_LE(std::fabs(std::log2(std::fabs(back) / std::fabs(c))), 1.0 / 16 + 1e-4);
    }
  }
  EXPECT_EQ(encode_contribution(0, 1), 0);
  EXPECT_EQ(encode_contribution(1, 1), 127);
  EXPECT_EQ(encode_contribution(-1, 1), 0x80 | 127);
  EXPECT_EQ(encode_contribution(5, 1), 127);  // clamped
  EXPECT_EQ(encode_contribution(std::nanf(""), 1), 0);
  EXPECT_EQ(encode_contribution(1, 0), 0);
  EXPECT_EQ(decode_contribution(0, 3), 0);
  EXPECT_FLOAT_EQ(decode_contribution(127, 3), 3);
  EXPECT_FLOAT_EQ(decode_contribution(0x80 | 119, 4), -2);
}

// ---- structure of a built scene ----------------------------------------------------------------

// Every invariant a sink's contents must satisfy, checked against the activations.
void check_scene(const Graph&, const Layout& layout, const Activations& acts, const Scene& scene, const InMemorySink& sink,
                 uint64_t budget) {
  const auto& segs = scene.segments();
  ASSERT_EQ(sink.segments.size(), segs.size());
  const BuildStats& st = scene.stats();
  EXPECT_LE(st.neurons + st.connections, budget);
  EXPECT_EQ(sink.neuron_data.size(), st.neurons);
  EXPECT_EQ(sink.connection_data.size(), st.connections);
  EXPECT_EQ(st.bytes, st.neurons * 16 + st.connections * 8);
  uint64_t neurons = 0, connections = 0;
  for (size_t i = 0; i < segs.size(); ++i) {
    const Segment& s = segs[i];
    EXPECT_EQ(s.neuron_first, neurons);
    EXPECT_EQ(s.connection_first, connections);
    neurons += s.neuron_count;
    connections += s.connection_count;
    const auto data = acts[s.tensor].data;
    ASSERT_EQ(int64_t(data.size()), s.neuron_total);
    std::vector<bool> seen(data.size());
    for (uint32_t r = 0; r < s.neuron_count; ++r) {
      const uint32_t index = s.neuron_first + r;
      const Neuron& n = sink.neuron_data[index];
      const NeuronInfo info = scene.neuron(index);
      EXPECT_EQ(info.tensor, s.tensor);
      ASSERT_LT(info.element, s.neuron_total);
      EXPECT_FALSE(seen[size_t(info.element)]);
      seen[size_t(info.element)] = true;
      EXPECT_EQ(n.value, data[size_t(info.element)]);
      EXPECT_EQ(info.value, n.value);
      const auto p = layout.position(s.tensor, info.element);
      EXPECT_EQ(n.x, p[0]);
      EXPECT_EQ(n.y, p[1]);
      EXPECT_EQ(n.z, p[2]);
      EXPECT_EQ(scene.find(s.tensor, info.element), index);
      if (r > 0) {
        EXPECT_GE(std::fabs(sink.neuron_data[index - 1].value), std::fabs(n.value)) << "segment " << i;
      }
    }
    // The resident neurons are the strongest: nothing left out beats the weakest kept.
    if (s.neuron_count > 0 && s.neuron_count < s.neuron_total) {
      const float weakest = std::fabs(sink.neuron_data[s.neuron_first + s.neuron_count - 1].value);
      for (size_t e = 0; e < data.size(); ++e)
        if (!seen[e]) {
          EXPECT_LE(std::fabs(data[e]), weakest);
          EXPECT_FALSE(scene.find(s.tensor, int64_t(e)));
        }
    }
    for (uint32_t c = s.connection_first; c < s.connection_first + s.connection_count; ++c) {
      const Connection& conn = sink.connection_data[c];
      EXPECT_LT(conn.src, st.neurons);
      EXPECT_LT(conn.packed & 0xFFFFFFu, s.neuron_count) << "destination must be resident";
      // Sorted by |contribution| at the 16-bit key's precision (2^-7 relative): adjacent codes
      // (steps of 2^(1/8)) may swap only across a code boundary inside one key step.
      if (c > s.connection_first) {
        const int prev = sink.connection_data[c - 1].packed >> 24 & 0x7F, cur = conn.packed >> 24 & 0x7F;
        EXPECT_GE(prev + 1, cur) << "segment " << i << " connection " << c;
      }
    }
  }
  EXPECT_EQ(neurons, st.neurons);
  EXPECT_EQ(connections, st.connections);
  EXPECT_EQ(sink.max_contribution, scene.max_contribution());
}

TEST(SceneBuild, TestConnectorCountsAreExact) {
  const Graph g = model::load_model_from_text(test::kBranchy);
  const Layout layout = Layout::build(g, {});
  const test::Values v(g, 3);
  InMemorySink sink;
  const Scene scene = test::build_test_scene(g, layout, v.acts, {.top_k = 3, .budget = 1'000'000}, sink);
  check_scene(g, layout, v.acts, scene, sink, 1'000'000);
  // X A B T C D: 105 neurons each, V W: 6, U R: 24; all-to-all candidates: A, B (105·105 each), C, D (105·210 each),
  // W (6·6), R (24·24); T has no connector.
  const BuildStats& st = scene.stats();
  EXPECT_EQ(st.neurons_total, 105u * 6 + 6 + 24 + 6 + 24);
  EXPECT_EQ(st.neurons, st.neurons_total);
  EXPECT_EQ(st.connection_candidates, 2u * 105 * 105 + 2u * 105 * 210 + 36 + 576);
  EXPECT_EQ(st.connections, 3u * (105 * 4 + 6 + 24));
  ASSERT_EQ(st.unconnected_ops.size(), 1u);
  EXPECT_EQ(st.unconnected_ops[0].first, "Tanh");
  EXPECT_EQ(sink.generation, 1u);
  for (size_t i = 0; i < scene.segments().size(); ++i) {
    EXPECT_EQ(sink.counts.neurons[i], scene.segments()[i].neuron_count);
    EXPECT_EQ(sink.counts.connections[i], scene.segments()[i].connection_count);
  }
}

// The kept connections of a neuron are its top-k candidates, ranked like a brute-force list.
TEST(SceneBuild, KeptConnectionsAreTheTopK) {
  const Graph g = model::load_model_from_text(test::kBranchy);
  const Layout layout = Layout::build(g, {});
  const test::Values v(g, 11);
  InMemorySink sink;
  const Scene scene = test::build_test_scene(g, layout, v.acts, {.top_k = 4, .budget = 1'000'000, .threads = 3}, sink);
  const model::TensorId w = g.find("W"), vin = g.find("V");
  const Segment& s = scene.segments()[size_t(std::find_if(scene.segments().begin(), scene.segments().end(),
                                                          [&](const Segment& x) { return x.tensor == w; }) -
                                             scene.segments().begin())];
  for (int64_t out = 0; out < 6; ++out) {
    std::vector<std::pair<float, int64_t>> all;
    for (int64_t src = 0; src < 6; ++src) all.push_back({std::fabs(v.storage[vin][size_t(src)] * test::test_weight(out, 0, src)), src});
    std::stable_sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    std::vector<int64_t> want, got;
    for (int i = 0; i < 4; ++i) want.push_back(all[size_t(i)].second);
    const uint32_t dst = *scene.find(w, out) - s.neuron_first;
    for (uint32_t c = s.connection_first; c < s.connection_first + s.connection_count; ++c)
      if ((sink.connection_data[c].packed & 0xFFFFFFu) == dst) got.push_back(scene.neuron(sink.connection_data[c].src).element);
    std::sort(want.begin(), want.end());
    std::sort(got.begin(), got.end());
    EXPECT_EQ(got, want) << "output " << out;
  }
}

TEST(SceneBuild, BudgetIsRespected) {
  const Graph g = model::load_model_from_text(test::kBranchy);
  const Layout layout = Layout::build(g, {});
  const test::Values v(g, 4);
  for (uint64_t budget : {0ull, 1ull, 7ull, 100ull, 585ull, 1000ull, 1500ull, 3000ull}) {
    for (int threads : {1, 2}) {
      InMemorySink sink;
      const Scene scene = test::build_test_scene(g, layout, v.acts, {.top_k = 2, .budget = budget, .threads = threads}, sink);
      check_scene(g, layout, v.acts, scene, sink, budget);
      const BuildStats& st = scene.stats();
      // Neurons get at least half of the budget while they last.
      EXPECT_GE(st.neurons, std::min<uint64_t>(st.neurons_total, budget / 2)) << budget;
      // Everything fits from 690 neurons + 2·450 connections on.
      if (budget >= 1590) { EXPECT_EQ(st.neurons + st.connections, 1590u); }
      if (budget == 1000) { EXPECT_EQ(st.neurons, 500u); }
    }
  }
}

// SceneOptions::points_per_tensor: each tensor keeps its strongest |a| points only, however large
// the budget; every kept value is at least as strong as every dropped one.
TEST(SceneBuild, APointCapKeepsEachTensorsStrongest) {
  const Graph g = model::load_model_from_text(test::kBranchy);
  const Layout layout = Layout::build(g, {});
  const test::Values v(g, 5);
  InMemorySink sink;
  const Scene scene = test::build_test_scene(g, layout, v.acts, {.top_k = 2, .budget = 1'000'000, .points_per_tensor = 20}, sink);
  ASSERT_FALSE(scene.segments().empty());
  uint64_t kept = 0;
  for (const Segment& s : scene.segments()) {
    ASSERT_EQ(s.neuron_count, uint32_t(std::min<int64_t>(s.neuron_total, 20))) << g.tensors[s.tensor].name;
    kept += s.neuron_count;
    std::vector<float> all(v.storage[s.tensor]);
    std::sort(all.begin(), all.end(), [](float x, float y) { return std::abs(x) > std::abs(y); });
    float weakest = INFINITY;
    for (uint32_t i = 0; i < s.neuron_count; ++i) weakest = std::min(weakest, std::abs(sink.neuron_data[s.neuron_first + i].value));
    EXPECT_EQ(weakest, std::abs(all[s.neuron_count - 1])) << g.tensors[s.tensor].name;
  }
  EXPECT_EQ(scene.stats().neurons, kept);
  // focus_elements counts a tensor at most the cap too.
  uint64_t expected = 0;
  for (const Block& b : layout.blocks()) expected += uint64_t(std::min<int64_t>(b.elements, 20));
  EXPECT_EQ(focus_elements(g, layout, {}, 2, 0, 20), 3 * expected);  // and top_k = 2 connections each
}

// The two sinks hold the same neurons and connections, byte for byte.
void expect_same_elements(const InMemorySink& a, const InMemorySink& b) {
  ASSERT_EQ(a.neuron_data.size(), b.neuron_data.size());
  ASSERT_EQ(a.connection_data.size(), b.connection_data.size());
  EXPECT_EQ(0, std::memcmp(a.neuron_data.data(), b.neuron_data.data(), a.neuron_data.size() * sizeof(Neuron)));
  EXPECT_EQ(0, std::memcmp(a.connection_data.data(), b.connection_data.data(), a.connection_data.size() * sizeof(Connection)));
}

// The branchy graph's scene for one fixed input (top 5, budget 2000) with `threads` threads.
void build_branchy(int threads, InMemorySink& sink) {
  const Graph g = model::load_model_from_text(test::kBranchy);
  const Layout layout = Layout::build(g, {});
  const test::Values v(g, 9);
  test::build_test_scene(g, layout, v.acts, {.top_k = 5, .budget = 2000, .threads = threads}, sink);
}

TEST(SceneBuild, SameInputSameScene) {
  InMemorySink a, b;
  build_branchy(1, a);
  build_branchy(4, b);
  expect_same_elements(a, b);
}

// The builder writes every element it asks the sink for: a sink whose memory holds garbage from
// a larger earlier scene ends up with exactly the data of a fresh one (the in-memory sink does not
// clear its arrays).
TEST(SceneBuild, EveryElementAskedForIsWritten) {
  InMemorySink fresh, reused;
  build_branchy(2, fresh);
  reused.neuron_data.resize(fresh.neuron_data.size() + 100);
  reused.connection_data.resize(fresh.connection_data.size() + 100);
  std::memset(static_cast<void*>(reused.neuron_data.data()), 0xA5, reused.neuron_data.size() * sizeof(Neuron));
  std::memset(static_cast<void*>(reused.connection_data.data()), 0xA5, reused.connection_data.size() * sizeof(Connection));
  build_branchy(2, reused);
  ASSERT_GT(fresh.connection_data.size(), 0u);
  expect_same_elements(fresh, reused);
}

TEST(SceneBuild, ProgressRisesToOne) {
  const Graph g = model::load_model_from_text(test::kBranchy);
  const Layout layout = Layout::build(g, {});
  const test::Values v(g, 2);
  std::vector<float> seen;
  InMemorySink sink;
  test::build_test_scene(g, layout, v.acts, {.top_k = 2, .budget = 5000, .threads = 2, .progress = [&](float p) { seen.push_back(p); }}, sink);
  ASSERT_GE(seen.size(), 3u);
  EXPECT_TRUE(std::is_sorted(seen.begin(), seen.end()));
  EXPECT_EQ(seen.front(), 0.f);
  EXPECT_EQ(seen.back(), 1.f);
}

// A sink that offers less than asked.
class SmallSink final : public SceneSink {
 public:
  std::span<Neuron> neurons(uint64_t) override { return {n_.data(), n_.size()}; }
  std::span<Connection> connections(uint64_t) override { return {c_.data(), c_.size()}; }
  void publish(std::span<const Segment>, const DrawCounts&, float) override { ++published; }
  void write_counts(const DrawCounts&) override {}
  int published = 0;

 private:
  std::vector<Neuron> n_ = std::vector<Neuron>(10);
  std::vector<Connection> c_ = std::vector<Connection>(10);
};

TEST(SceneBuild, SinkTooSmallThrows) {
  const Graph g = model::load_model_from_text(test::kBranchy);
  const Layout layout = Layout::build(g, {});
  const test::Values v(g, 2);
  SmallSink sink;
  EXPECT_THROW(test::build_test_scene(g, layout, v.acts, {.budget = 5000}, sink), std::runtime_error);
  EXPECT_EQ(sink.published, 0);
}

TEST(InMemorySink, GenerationsAndCounts) {
  const Graph g = model::load_model_from_text(test::kBranchy);
  const Layout layout = Layout::build(g, {});
  const test::Values v(g, 2);
  InMemorySink sink;
  const Scene a = test::build_test_scene(g, layout, v.acts, {.budget = 5000}, sink);
  EXPECT_EQ(sink.generation, 1u);
  const Scene b = test::build_test_scene(g, layout, v.acts, {.top_k = 1, .budget = 700}, sink);
  EXPECT_EQ(sink.generation, 2u);
  EXPECT_EQ(sink.connection_data.size(), b.stats().connections);
  Filter f;
  f.neuron_threshold = 0.5f;
  const DrawCounts c = b.counts(f);
  sink.write_counts(c);
  EXPECT_EQ(sink.counts.neurons, c.neurons);
  EXPECT_EQ(sink.generation, 2u);
  DrawCounts wrong = c;
  wrong.neurons.pop_back();
  EXPECT_THROW(sink.write_counts(wrong), std::runtime_error);
  wrong = c;
  wrong.neurons[0] = b.segments()[0].neuron_count + 1;
  EXPECT_THROW(sink.write_counts(wrong), std::runtime_error);
}

// Every output element fed by element 0 of input 0.
void from_first(const NodeValues& v, uint32_t, TopK& top) {
  if (v.inputs.empty() || v.inputs[0].data.empty()) return;
  for (int64_t out = top.begin(); out < top.end(); ++out) top.offer(out, 0, 0, std::fabs(v.inputs[0].data[0]), v.inputs[0].data[0]);
}
ConnectFn from_first_lookup(std::string_view, std::string_view) { return &from_first; }

TEST(SceneBuild, TensorsBeyondTheSegmentLimitAreCapped) {
  const int64_t n = int64_t(kMaxSegmentNeurons) + 8;
  const Graph g = model::load_model_from_text(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1] S) => (float[16777224] Y) {
      shape = Constant<value_ints = [16777224]>()
      Y = Expand(S, shape)
    })");
  const Layout layout = Layout::build(g, {});
  ASSERT_NE(layout.block(g.find("Y")), nullptr);
  const test::Values v(g, 6);
  InMemorySink sink;
  const Scene scene = SceneBuilder::build(g, layout, v.acts, {.top_k = 1, .budget = 40'000'000, .threads = 2}, sink, &from_first_lookup);
  const BuildStats& st = scene.stats();
  ASSERT_EQ(st.warnings.size(), 1u);
  EXPECT_NE(st.warnings[0].find("'Y'"), std::string::npos) << st.warnings[0];
  EXPECT_EQ(st.neurons_total, uint64_t(n) + 1);
  EXPECT_EQ(st.neurons, uint64_t(kMaxSegmentNeurons) + 1);
  EXPECT_EQ(st.connections, uint64_t(kMaxSegmentNeurons));
  const Segment& y = scene.segments()[1];
  EXPECT_EQ(y.neuron_count, kMaxSegmentNeurons);
  EXPECT_EQ(y.neuron_total, n);
  // The 8 weakest elements of Y are not resident; every destination index is in range.
  const float weakest = std::fabs(sink.neuron_data[y.neuron_first + y.neuron_count - 1].value);
  int absent = 0;
  for (int64_t e = 0; e < n; ++e)
    if (!scene.find(y.tensor, e)) {
      ++absent;
      EXPECT_LE(std::fabs(v.storage[y.tensor][size_t(e)]), weakest);
    }
  EXPECT_EQ(absent, 8);
  uint32_t max_dst = 0;
  for (uint32_t c = y.connection_first; c < y.connection_first + y.connection_count; ++c)
    max_dst = std::max(max_dst, sink.connection_data[c].packed & 0xFFFFFFu);
  EXPECT_EQ(max_dst, kMaxSegmentNeurons - 1);
}

// ---- real connectors -------------------------------------------------------------------------

struct ModelRun {
  std::shared_ptr<const runtime::Plan> plan;
  runtime::Session session;
  explicit ModelRun(Graph g) : plan(runtime::Plan::build(std::move(g))), session(plan) {}
};

TEST(SceneBuild, InlineModelHandCheckedCounts) {
  ModelRun run(model::load_model_from_text(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1,2,3] X) => (float[1,6] F) {
      A = Relu(X)
      B = Sigmoid(X)
      C = Add(A, B)
      F = Flatten(C)
    })"));
  const std::vector<float> x = {-1, 2, -3, 4, -5, 6};
  const std::vector<int64_t> shape = {1, 2, 3};
  run.session.set_input("X", model::DType::Float, shape, std::as_bytes(std::span(x)));
  run.session.run();
  const Graph& g = run.plan->graph();
  const Layout layout = Layout::build(g, {});
  const Activations acts = activations_of(run.session);
  for (int k : {1, 8}) {
    InMemorySink sink;
    const Scene scene = Scene::build(g, layout, acts, {.top_k = k, .budget = 1000}, sink);
    check_scene(g, layout, acts, scene, sink, 1000);
    const BuildStats& st = scene.stats();
    EXPECT_EQ(st.neurons, 30u);  // X A B C F, 6 each
    // One-to-one: A, B, F one candidate per element; C two (A and B).
    EXPECT_EQ(st.connection_candidates, 6u + 6 + 12 + 6);
    EXPECT_EQ(st.connections, k == 1 ? 24u : 30u);
    const auto seg = [&](const char* name) {
      for (const Segment& s : scene.segments())
        if (s.tensor == g.find(name)) return s;
      ADD_FAILURE() << name;
      return Segment{};
    };
    EXPECT_EQ(seg("C").connection_candidates, 12);
    EXPECT_EQ(seg("X").connection_count, 0u);
    // Relu's strongest neuron is 6 (element 5); its one connection comes from X's element 5
    // (the strongest neuron of X, index 0 of the array), contribution a = 6 = the scene's max.
    const uint32_t a0 = *scene.find(g.find("A"), 5);
    EXPECT_EQ(a0, seg("A").neuron_first);
    EXPECT_EQ(scene.neuron(a0).value, 6.f);
    // The strongest contribution: Flatten passes C's element 5 = 6 + sigmoid(6) on.
    const float c5 = acts[g.find("C")].data[5];
    EXPECT_NEAR(c5, 6.f + 1.f / (1.f + std::exp(-6.f)), 1e-5f);
    EXPECT_EQ(scene.max_contribution(), c5);
    const Connection first = sink.connection_data[seg("A").connection_first];
    EXPECT_EQ(first.src, *scene.find(g.find("X"), 5));
    EXPECT_EQ(first.src, 0u);
    EXPECT_EQ(first.packed & 0xFFFFFFu, 0u);
    EXPECT_EQ(first.packed >> 24, encode_contribution(6.f, c5));
    EXPECT_EQ(seg("C").value_max, c5);
    EXPECT_EQ(sink.connection_data[seg("F").connection_first].packed >> 24, 127u);
  }
}

// A side input feeding many far layers (an attention mask, -10000 where it masks, added to the
// scores before a Softmax in each of six blocks of a chain, as in BERT) draws its lines into its
// nearest consumer only, and neither they nor those into it set the scale; the chain's own
// connections stay in every block, and a skip connection (the chain's first map, added again at
// the end: one far consumer) keeps its lines.
TEST(SceneBuild, ASideInputFeedingManyFarLayersDrawsIntoItsNearestConsumerOnly) {
  std::string text =
      "<ir_version: 8, opset_import: [\"\" : 13]>\n"
      "g (float[1,8] X, float[1,8] M) => (float[1,8] Y) <float[1] big = {-10000}> {\n"
      "  S = Mul(M, big)\n  h0 = Relu(X)\n";
  std::string h = "h0";
  for (int b = 0; b < 6; ++b) {
    const std::string a = "a" + std::to_string(b);
    text += "  " + a + " = Add(" + h + ", S)\n  p" + std::to_string(b) + " = Softmax(" + a + ")\n";
    h = "p" + std::to_string(b);
    for (int i = 0; i < 10; ++i) {  // ten layers to a block: the next Add is far
      const std::string next = a + "_" + std::to_string(i);
      text += "  " + next + " = Relu(" + h + ")\n";
      h = next;
    }
  }
  text += "  Y = Add(" + h + ", h0)\n}\n";
  ModelRun run(model::load_model_from_text(text));
  const std::vector<float> x = {1, 2, 3, 4, 5, 6, 7, 8}, m = {0, 1, 0, 1, 1, 0, 1, 0};
  const std::vector<int64_t> shape = {1, 8};
  run.session.set_input("X", model::DType::Float, shape, std::as_bytes(std::span(x)));
  run.session.set_input("M", model::DType::Float, shape, std::as_bytes(std::span(m)));
  run.session.run();
  const Graph& g = run.plan->graph();
  const Layout layout = Layout::build(g, {});
  const Activations acts = activations_of(run.session);
  InMemorySink sink;
  const Scene scene = Scene::build(g, layout, acts, {.top_k = 8, .budget = 100'000}, sink);
  check_scene(g, layout, acts, scene, sink, 100'000);
  const auto seg = [&](const std::string& name) {
    for (const Segment& s : scene.segments())
      if (s.tensor == g.find(name)) return s;
    ADD_FAILURE() << name;
    return Segment{};
  };
  // Connections of `into` whose source lies in tensor `from`.
  auto from = [&](const std::string& into, const std::string& source) {
    const Segment d = seg(into), s = seg(source);
    int n = 0;
    for (uint32_t c = d.connection_first; c < d.connection_first + d.connection_count; ++c)
      n += sink.connection_data[c].src >= s.neuron_first && sink.connection_data[c].src < s.neuron_first + s.neuron_count;
    return n;
  };
  EXPECT_EQ(from("a0", "S"), 8) << "the nearest consumer keeps the mask's lines";
  for (int b = 1; b < 6; ++b) {
    const std::string a = "a" + std::to_string(b);
    EXPECT_EQ(from(a, "S"), 0) << a << " is far: no line from the mask";
    EXPECT_EQ(from(a, "a" + std::to_string(b - 1) + "_9"), 8) << a << " keeps the chain's lines";
  }
  EXPECT_EQ(from("Y", "h0"), 8) << "a skip connection keeps its lines";
  // The scale is the chain's (at most 8 plus what the mask's zeros add), not the mask's 10000;
  // the mask's lines into a0 are drawn at full strength.
  EXPECT_LT(scene.max_contribution(), 100.f);
  EXPECT_GT(scene.max_contribution(), 7.f);
  const Segment a0 = seg("a0");
  const uint32_t s0 = seg("S").neuron_first;
  int saturated = 0;
  for (uint32_t c = a0.connection_first; c < a0.connection_first + a0.connection_count; ++c) {
    const Connection& conn = sink.connection_data[c];
    if (conn.src < s0 || conn.src >= s0 + 8 || sink.neuron_data[conn.src].value == 0) continue;
    EXPECT_EQ(conn.packed >> 24, 0x80u | 127u);
    ++saturated;
  }
  EXPECT_EQ(saturated, 4);  // the mask's four ones
  // Without the far layers (one block) the mask is an ordinary input and sets the scale.
  ModelRun one(model::load_model_from_text(
      "<ir_version: 8, opset_import: [\"\" : 13]>\n"
      "g (float[1,8] X, float[1,8] M) => (float[1,8] Y) <float[1] big = {-10000}> {\n"
      "  S = Mul(M, big)\n  h0 = Relu(X)\n  Y = Add(h0, S)\n}\n"));
  one.session.set_input("X", model::DType::Float, shape, std::as_bytes(std::span(x)));
  one.session.set_input("M", model::DType::Float, shape, std::as_bytes(std::span(m)));
  one.session.run();
  InMemorySink sink1;
  const Layout layout1 = Layout::build(one.plan->graph(), {});
  const Scene scene1 = Scene::build(one.plan->graph(), layout1, activations_of(one.session), {.budget = 100'000}, sink1);
  EXPECT_EQ(scene1.max_contribution(), 10000.f);
}

TEST(SceneBuild, DefaultModel) {
  ModelRun run(model::load_model_from_memory(assets::default_model().bytes, "digits.onnx"));
  const Graph& g = run.plan->graph();
  std::vector<float> x(size_t(*g.tensors[g.inputs[0]].elements()));
  for (size_t i = 0; i < x.size(); ++i) x[i] = float(i % 7) / 7.f;
  run.session.set_input(0, model::DType::Float, g.tensors[g.inputs[0]].shape, std::as_bytes(std::span(x)));
  run.session.run();
  const Layout layout = Layout::build(g, {});
  const Activations acts = activations_of(run.session);
  uint64_t float_elements = 0;
  for (const Block& b : layout.blocks()) float_elements += uint64_t(*g.tensors[b.tensor].elements());
  InMemorySink sink;
  const Scene scene = Scene::build(g, layout, acts, {.top_k = 8, .budget = 1'000'000, .threads = 2}, sink);
  check_scene(g, layout, acts, scene, sink, 1'000'000);
  EXPECT_EQ(scene.stats().neurons, float_elements);
  EXPECT_EQ(scene.segments().size(), layout.blocks().size());
  EXPECT_GT(scene.stats().connections, scene.stats().neurons);
  EXPECT_TRUE(scene.stats().unconnected_ops.empty());
  EXPECT_TRUE(scene.stats().warnings.empty());
  // A tight budget keeps the strongest and stays within it.
  InMemorySink small;
  const Scene tight = Scene::build(g, layout, acts, {.top_k = 8, .budget = 3000, .threads = 2}, small);
  check_scene(g, layout, acts, tight, small, 3000);
  EXPECT_EQ(tight.stats().neurons, 1500u);
}

TEST(Activations, FloatTensorsOnly) {
  ModelRun run(model::load_model_from_text(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2] X) => (float[2] Y, int64[1] S) <float[2] W = {1.0, 2.0}> {
      Y = Mul(X, W)
      S = Shape(Y)
    })"));
  const std::vector<float> x = {3, 4};
  const std::vector<int64_t> shape = {2};
  run.session.set_input("X", model::DType::Float, shape, std::as_bytes(std::span(x)));
  run.session.run();
  const Graph& g = run.plan->graph();
  const Activations acts = activations_of(run.session);
  ASSERT_EQ(acts.size(), g.tensors.size());
  EXPECT_EQ(std::vector<float>(acts[g.find("Y")].data.begin(), acts[g.find("Y")].data.end()), (std::vector<float>{3, 8}));
  EXPECT_EQ(acts[g.find("W")].data.size(), 2u);
  EXPECT_EQ(acts[g.find("X")].data.size(), 2u);
  EXPECT_TRUE(acts[g.find("S")].data.empty());
  EXPECT_EQ(acts[g.find("Y")].shape.size(), 1u);
}

TEST(Activations, Float16TensorsAreConvertedAndLaidOut) {
  ModelRun run(model::load_model_from_text(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float16[3] X) => (float16[3] Y) { Y = Relu(X) })"));
  const std::vector<uint16_t> x = {model::float_to_half(-1.5f), model::float_to_half(0.25f), model::float_to_half(3.f)};
  const std::vector<int64_t> shape = {3};
  run.session.set_input("X", model::DType::Float16, shape, std::as_bytes(std::span(x)));
  run.session.run();
  const Graph& g = run.plan->graph();
  const Activations acts = activations_of(run.session);
  EXPECT_EQ(std::vector<float>(acts[g.find("X")].data.begin(), acts[g.find("X")].data.end()), (std::vector<float>{-1.5f, 0.25f, 3.f}));
  EXPECT_EQ(std::vector<float>(acts[g.find("Y")].data.begin(), acts[g.find("Y")].data.end()), (std::vector<float>{0.f, 0.25f, 3.f}));
  const Layout layout = Layout::build(g, {});
  ASSERT_EQ(layout.blocks().size(), 2u);
  InMemorySink sink;
  const Scene scene = Scene::build(g, layout, acts, {.top_k = 8, .budget = 100}, sink);
  EXPECT_EQ(scene.stats().neurons, 6u);
  EXPECT_EQ(scene.stats().connections, 3u);
}

}  // namespace
}  // namespace nnxr::scene
