// Scene::refresh(): another input's values on the elements a build chose (model/scene/scene.h).
// Checked against full builds of the same values and against the sessions' own numbers, and
// for allocations: a refresh after the first allocates no element storage.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <map>
#include <memory>
#include <new>
#include <set>
#include <tuple>

#include "assets/assets.h"
#include "model/load.h"
#include "model/runtime/runtime.h"
#include "model/scene/compare.h"
#include "model/scene/scene.h"

// Counts what operator new hands out while `counting` is set (this test binary only). GCC takes
// the free() in the replaced operator delete for a mismatch with new; both are malloc's here.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
namespace {
std::atomic<bool> counting{false};
std::atomic<uint64_t> allocated_bytes{0}, largest_allocation{0};
std::unique_ptr<std::vector<int>> probe;
}  // namespace

// Every unaligned form is replaced, so that whatever new allocates, delete frees with the same
// allocator (ASan checks the pairing).
namespace {
void* counted(std::size_t n) noexcept {
  if (counting.load(std::memory_order_relaxed)) {
    allocated_bytes += n;
    uint64_t seen = largest_allocation.load();
    while (n > seen && !largest_allocation.compare_exchange_weak(seen, n)) {
    }
  }
  return std::malloc(n ? n : 1);
}
}  // namespace
void* operator new(std::size_t n) {
  if (void* p = counted(n)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n) {
  if (void* p = counted(n)) return p;
  throw std::bad_alloc();
}
void* operator new(std::size_t n, const std::nothrow_t&) noexcept { return counted(n); }
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept { return counted(n); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }

namespace {

namespace rt = nnxr::runtime;
namespace sc = nnxr::scene;

// The default digits model run on two inputs.
struct Two {
  std::shared_ptr<const rt::Plan> plan = rt::Plan::build(
      nnxr::model::load_model_from_memory(nnxr::assets::default_model().bytes, "digits.onnx"));
  rt::Session a{plan}, b{plan};
  std::vector<float> xa, xb;
  Two() {
    const auto& g = plan->graph();
    const nnxr::model::Tensor& input = g.tensors[g.inputs[0]];
    xa.resize(static_cast<size_t>(*input.elements()));
    xb.resize(xa.size());
    for (size_t i = 0; i < xa.size(); ++i) {
      xa[i] = static_cast<float>(i % 7) / 7.0f;
      xb[i] = static_cast<float>((i * 5) % 11) / 11.0f;
    }
    a.set_input(0, nnxr::model::DType::Float, input.shape, std::as_bytes(std::span(xa)));
    b.set_input(0, nnxr::model::DType::Float, input.shape, std::as_bytes(std::span(xb)));
    a.run();
    b.run();
  }
  const nnxr::model::Graph& graph() const { return plan->graph(); }
};

// (tensor, element) of every resident neuron.
std::set<std::pair<uint32_t, int64_t>> neuron_set(const sc::Scene& s, size_t count) {
  std::set<std::pair<uint32_t, int64_t>> out;
  for (uint32_t i = 0; i < count; ++i) out.insert({s.neuron(i).tensor, s.neuron(i).element});
  return out;
}

// Per connection: (destination tensor, source tensor, source element, destination element) ->
// decoded contribution.
std::map<std::tuple<uint32_t, uint32_t, int64_t, int64_t>, float> connection_map(const sc::Scene& s, const sc::InMemorySink& sink) {
  std::map<std::tuple<uint32_t, uint32_t, int64_t, int64_t>, float> out;
  for (const sc::Segment& seg : s.segments())
    for (uint32_t c = 0; c < seg.connection_count; ++c) {
      const sc::Connection& conn = sink.connection_data[seg.connection_first + c];
      const sc::NeuronInfo src = s.neuron(conn.src);
      const sc::NeuronInfo dst = s.neuron(seg.neuron_first + (conn.packed & 0xFFFFFFu));
      EXPECT_EQ(dst.tensor, seg.tensor);
      out[{seg.tensor, src.tensor, src.element, dst.element}] =
          sc::decode_contribution(uint8_t(conn.packed >> 24), sink.max_contribution);
    }
  return out;
}

// Each segment's resident neurons descend by |value| and its connections by |contribution|.
void expect_sorted(const sc::Scene& s, const sc::InMemorySink& sink) {
  for (const sc::Segment& seg : s.segments()) {
    for (uint32_t r = 1; r < seg.neuron_count; ++r)
      ASSERT_GE(std::fabs(sink.neuron_data[seg.neuron_first + r - 1].value), std::fabs(sink.neuron_data[seg.neuron_first + r].value));
    // Ordered on 16-bit score keys; codes (8 steps an octave) of one key may differ by one.
    for (uint32_t c = 1; c < seg.connection_count; ++c)
      ASSERT_GE((sink.connection_data[seg.connection_first + c - 1].packed >> 24 & 0x7F) + 1,
                sink.connection_data[seg.connection_first + c].packed >> 24 & 0x7F);
  }
}

// Every tensor resident and every candidate kept (top-16 is more than any digits neuron of an
// unweighted op has): refreshing A's scene with B's values gives B's own scene, neuron for neuron;
// and for the ops scored by |a| (every link's factor is 1), connection for connection.
TEST(Refresh, GivesTheBuildOfTheOtherValues) {
  Two t;
  const auto& g = t.graph();
  const sc::Layout layout = sc::Layout::build(g, {});
  const sc::SceneOptions options{.top_k = 16, .budget = 50'000'000, .refreshable = true};
  sc::InMemorySink refreshed, built;
  sc::Scene scene = sc::Scene::build(g, layout, sc::activations_of(t.a), options, refreshed);
  const uint64_t generation = refreshed.generation;
  scene.refresh(layout, sc::activations_of(t.b), refreshed, 2);
  EXPECT_EQ(refreshed.generation, generation + 1);
  EXPECT_TRUE(scene.stats().refreshed);
  const sc::Scene of_b = sc::Scene::build(g, layout, sc::activations_of(t.b), options, built);
  ASSERT_EQ(refreshed.neuron_data.size(), built.neuron_data.size());
  ASSERT_EQ(scene.segments().size(), of_b.segments().size());
  // The same |value| order; the same neurons in each segment (ties of |value| stay in the order
  // A's build gave them, B's build orders them by element).
  for (size_t i = 0; i < refreshed.neuron_data.size(); ++i)
    ASSERT_EQ(std::fabs(refreshed.neuron_data[i].value), std::fabs(built.neuron_data[i].value)) << i;
  for (const sc::Segment& seg : of_b.segments()) {
    std::multiset<std::tuple<float, float, float, float>> mine_set, theirs_set;
    for (uint32_t r = 0; r < seg.neuron_count; ++r) {
      const sc::Neuron& m = refreshed.neuron_data[seg.neuron_first + r];
      const sc::Neuron& o = built.neuron_data[seg.neuron_first + r];
      mine_set.insert({m.x, m.y, m.z, m.value});
      theirs_set.insert({o.x, o.y, o.z, o.value});
    }
    ASSERT_EQ(mine_set, theirs_set) << g.tensors[seg.tensor].name;
  }
  for (size_t i = 0; i < scene.segments().size(); ++i) {
    EXPECT_EQ(scene.segments()[i].value_min, of_b.segments()[i].value_min);
    EXPECT_EQ(scene.segments()[i].value_max, of_b.segments()[i].value_max);
  }
  expect_sorted(scene, refreshed);
  const auto mine = connection_map(scene, refreshed), theirs = connection_map(of_b, built);
  size_t compared = 0;
  for (const sc::Segment& seg : of_b.segments()) {
    const auto p = g.tensors[seg.tensor].producer;
    if (p == nnxr::model::kNone) continue;
    const std::string& op = g.nodes[p].op_type;
    if (op != "Relu" && op != "MaxPool" && op != "Flatten" && op != "Reshape") continue;
    for (const auto& [key, value] : theirs) {
      if (std::get<0>(key) != seg.tensor) continue;
      const auto it = mine.find(key);
      ASSERT_NE(it, mine.end()) << op;
      EXPECT_NEAR(it->second, value, std::fabs(value) * 0.1f + 1e-6f) << op;  // a code step is 9%
      ++compared;
    }
  }
  EXPECT_GT(compared, 100u);
  EXPECT_EQ(refreshed.max_contribution, built.max_contribution);
}

// A budget that leaves most neurons out: the refresh keeps the build's neurons and connections
// (the same (tensor, element) sets), each neuron holds B's value, each connection's contribution
// is its weight (A's contribution / A's source) times B's source, and a refresh back to A gives
// the build of A again.
TEST(Refresh, KeepsTheElementsAndRescoresThem) {
  Two t;
  const auto& g = t.graph();
  const sc::Layout layout = sc::Layout::build(g, {});
  const sc::SceneOptions options{.top_k = 4, .budget = 6'000, .refreshable = true};
  sc::InMemorySink sink;
  sc::Scene scene = sc::Scene::build(g, layout, sc::activations_of(t.a), options, sink);
  const size_t n = sink.neuron_data.size();
  ASSERT_LT(n, 4000u);
  const auto neurons_a = neuron_set(scene, n);
  const std::vector<sc::Neuron> first = sink.neuron_data;
  const auto connections_a = connection_map(scene, sink);
  const float max_a = sink.max_contribution;

  scene.refresh(layout, sc::activations_of(t.b), sink, 1);
  EXPECT_EQ(neuron_set(scene, n), neurons_a);
  for (uint32_t i = 0; i < n; ++i) {
    const sc::NeuronInfo info = scene.neuron(i);
    ASSERT_EQ(sink.neuron_data[i].value, t.b.value(info.tensor)->as<float>()[size_t(info.element)]);
    ASSERT_EQ(info.value, sink.neuron_data[i].value);
  }
  expect_sorted(scene, sink);
  const auto connections_b = connection_map(scene, sink);
  ASSERT_EQ(connections_b.size(), connections_a.size());
  size_t rescored = 0;
  for (const auto& [key, contribution_a] : connections_a) {
    const auto it = connections_b.find(key);
    ASSERT_NE(it, connections_b.end());
    const auto [dst_tensor, src_tensor, src, dst] = key;
    const float a_src = t.a.value(src_tensor)->as<float>()[size_t(src)];
    const float b_src = t.b.value(src_tensor)->as<float>()[size_t(src)];
    if (a_src == 0 || std::fabs(contribution_a) < max_a * 1e-3f) continue;
    const float expected = contribution_a / a_src * b_src;  // decoded: within a code step either way
    EXPECT_NEAR(it->second, expected, std::fabs(expected) * 0.2f + sink.max_contribution * 1e-4f);
    ++rescored;
  }
  EXPECT_GT(rescored, 100u);

  scene.refresh(layout, sc::activations_of(t.a), sink, 2);  // back to A
  for (size_t i = 0; i < n; ++i) {
    EXPECT_EQ(sink.neuron_data[i].value, first[i].value) << i;
    EXPECT_EQ(sink.neuron_data[i].y, first[i].y) << i;
  }
  EXPECT_EQ(connection_map(scene, sink).size(), connections_a.size());
}

// After the first refresh (which makes its scratch), refreshing allocates no element storage:
// every allocation is a few bytes of bookkeeping (per-segment tables, the helper thread).
TEST(Refresh, AllocatesNoElementStorage) {
  Two t;
  const auto& g = t.graph();
  const sc::Layout layout = sc::Layout::build(g, {});
  sc::InMemorySink sink;
  std::vector<float> storage;
  const sc::Activations a = sc::activations_of(t.a), b = sc::activations_of(t.b);
  sc::Scene scene = sc::Scene::build(g, layout, a, {.top_k = 8, .budget = 200'000, .refreshable = true}, sink);
  ASSERT_GT(scene.stats().connections, 10'000u);
  scene.refresh(layout, b, sink, 2);
  scene.refresh(layout, sc::difference(g, a, b, storage), sink, 2);
  const auto* neurons_at = sink.neuron_data.data();
  const auto* storage_at = storage.data();
  counting = true;  // the counter sees allocations at all
  probe = std::make_unique<std::vector<int>>(1000);
  counting = false;
  EXPECT_GE(allocated_bytes.load(), 4000u);
  allocated_bytes = 0;
  largest_allocation = 0;
  counting = true;
  scene.refresh(layout, a, sink, 2);  // A, B, A − B, A: a viewer flipping
  scene.refresh(layout, b, sink, 2);
  const sc::Activations d = sc::difference(g, a, b, storage);
  scene.refresh(layout, d, sink, 2);
  counting = false;
  EXPECT_EQ(sink.neuron_data.data(), neurons_at);
  EXPECT_EQ(storage.data(), storage_at);
  EXPECT_LT(largest_allocation.load(), 16'384u);
  EXPECT_LT(allocated_bytes.load(), 256'000u) << "bytes allocated by three refreshes";
  // The scene's elements are ~ 200,000 × 8-16 bytes: what was allocated is not element storage.
}

TEST(Refresh, BadUse) {
  Two t;
  const auto& g = t.graph();
  const sc::Layout layout = sc::Layout::build(g, {});
  sc::InMemorySink sink;
  sc::Scene plain = sc::Scene::build(g, layout, sc::activations_of(t.a), {.top_k = 4, .budget = 10'000}, sink);
  EXPECT_THROW(plain.refresh(layout, sc::activations_of(t.b), sink), std::logic_error);
  sc::Scene scene = sc::Scene::build(g, layout, sc::activations_of(t.a), {.top_k = 4, .budget = 10'000, .refreshable = true}, sink);
  sc::Activations shorter = sc::activations_of(t.b);
  const sc::Segment& last = scene.segments().back();
  shorter[last.tensor].data = shorter[last.tensor].data.first(1);
  const uint64_t generation = sink.generation;
  EXPECT_THROW(scene.refresh(layout, shorter, sink), std::invalid_argument);
  EXPECT_EQ(sink.generation, generation);  // nothing published
}

}  // namespace
