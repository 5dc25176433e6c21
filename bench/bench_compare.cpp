// Switching inputs and flipping compare mode at the viewer's defaults (top-8, budget 2M, 2
// threads), into an InMemorySink reused across iterations as the engine reuses its mapped buffers.
// Two seeded random inputs (Mulberry32 seeds 0 and 1) alternate from one iteration to the next.
// Every variant also writes the activation images (write_images) into a buffer made once, as the
// worker does for each new picture.
//   switch/<model>          set_input + inference + Scene::build: the reference, a full build
//                           per switch (the worker before Scene::refresh)
//   switch_refresh/<model>  set_input + inference + Scene::refresh: the worker's work from an
//                           input switch to the publish of its picture now
//   infer/<model>           set_input + inference alone (no images)
//   flip_b/<model>          Scene::build from B's kept activations (reference, no inference)
//   flip_diff/<model>       difference() a_A − a_B + Scene::build (reference, no inference)
//   flip_refresh_b/<model>, flip_refresh_diff/<model>: the same with Scene::refresh (now)
//   refine/<model>          the exact build that follows a refresh when the viewer is idle
//   images/<model>, refresh/<model>: write_images and Scene::refresh alone
//   memory/<model>       resident memory (RSS) of the process with one input's activations kept
//                        and with two (plus the difference): counters one_MB, two_MB, ratio
// Models: mobilenet_v2 (shared/models/arch) and the embedded default model.
// Run: build/bench/bench_compare [--benchmark_filter=mobilenet].
#include <benchmark/benchmark.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>

#include "assets/assets.h"
#include "model/load.h"
#include "model/runtime/runtime.h"
#include "model/scene/compare.h"
#include "model/scene/scene.h"
#include "model/scene/tiles.h"
#include "model/tensor_io.h"

namespace {

namespace fs = std::filesystem;
using namespace nnxr;

constexpr int kThreads = 2;
constexpr uint64_t kBudget = 2'000'000;  // the viewer's default

model::Graph load(const fs::path& path) {
  if (path.empty()) return model::load_model_from_memory(assets::default_model().bytes, "digits.onnx");
  return model::load_model(path);
}

double rss_mb() {
  std::ifstream f("/proc/self/statm");
  uint64_t size = 0, resident = 0;
  f >> size >> resident;
  return static_cast<double>(resident) * static_cast<double>(sysconf(_SC_PAGESIZE)) / 1e6;
}

std::vector<model::TensorData> inputs_of(const model::Graph& g, uint32_t seed) {
  std::vector<model::TensorData> out;
  model::Mulberry32 rng(seed);
  for (model::TensorId id : g.inputs) out.push_back(model::random_tensor(g.tensors[id].dtype, g.tensors[id].shape, rng));
  return out;
}

void feed(runtime::Session& s, const model::Graph& g, const std::vector<model::TensorData>& in) {
  for (size_t i = 0; i < in.size(); ++i) s.set_input(g.tensors[g.inputs[i]].name, in[i].dtype, in[i].shape, in[i].bytes);
}

struct Two {
  std::shared_ptr<const runtime::Plan> plan;
  std::unique_ptr<runtime::Session> a, b;
  std::vector<model::TensorData> in_a, in_b;
  std::optional<scene::Layout> layout;
};

Two prepare(const fs::path& path) {
  Two t;
  t.plan = runtime::Plan::build(load(path));
  const model::Graph& g = t.plan->graph();
  t.a = std::make_unique<runtime::Session>(t.plan, runtime::SessionOptions{.threads = kThreads});
  t.b = std::make_unique<runtime::Session>(t.plan, runtime::SessionOptions{.threads = kThreads});
  t.in_a = inputs_of(g, 0);
  t.in_b = inputs_of(g, 1);
  feed(*t.a, g, t.in_a);
  feed(*t.b, g, t.in_b);
  t.a->run();
  t.b->run();
  t.layout = scene::Layout::build(g, {});
  return t;
}

scene::SceneOptions options() { return {.top_k = 8, .budget = kBudget, .threads = kThreads, .refreshable = true}; }

// The activation images of one run, written where the engine would map them.
struct Images {
  std::vector<std::byte> memory;
  explicit Images(const scene::Layout& layout) : memory(scene::plan_images(layout).bytes + 16) {}
  void write(const scene::Layout& layout, const scene::Activations& values) {
    auto* p = memory.data();
    p += (16 - reinterpret_cast<uintptr_t>(p) % 16) % 16;
    benchmark::DoNotOptimize(scene::write_images(layout, values, std::span(p, memory.size() - 16), kThreads));
  }
};

enum class Mode { Infer, Build, Refresh };

void switch_input(benchmark::State& state, const fs::path& path, Mode mode) {
  Two t = prepare(path);
  const model::Graph& g = t.plan->graph();
  scene::InMemorySink sink;
  Images images(*t.layout);
  scene::Scene scene = scene::Scene::build(g, *t.layout, scene::activations_of(*t.a), options(), sink);  // warm the sink
  bool flip = false;
  for (auto _ : state) {
    feed(*t.a, g, flip ? t.in_a : t.in_b);
    flip = !flip;
    t.a->run();
    if (mode == Mode::Infer) continue;
    const scene::Activations values = scene::activations_of(*t.a);
    if (mode == Mode::Build) benchmark::DoNotOptimize(scene::Scene::build(g, *t.layout, values, options(), sink));
    else scene.refresh(*t.layout, values, sink, kThreads);
    images.write(*t.layout, values);
  }
}

void flip(benchmark::State& state, const fs::path& path, bool difference, Mode mode) {
  Two t = prepare(path);
  const model::Graph& g = t.plan->graph();
  scene::InMemorySink sink;
  Images images(*t.layout);
  std::vector<float> storage;
  const scene::Activations a = scene::activations_of(*t.a), b = scene::activations_of(*t.b);
  scene::Scene scene = scene::Scene::build(g, *t.layout, a, options(), sink);
  bool back = false;
  for (auto _ : state) {
    // Refresh alternates with a refresh back to A, as a viewer flipping does; only the flip to
    // B (or A − B) is timed.
    if (mode == Mode::Refresh && back) {
      state.PauseTiming();
      scene.refresh(*t.layout, a, sink, kThreads);
      state.ResumeTiming();
    }
    back = true;
    const scene::Activations values = difference ? scene::difference(g, a, b, storage) : b;
    if (mode == Mode::Build) benchmark::DoNotOptimize(scene::Scene::build(g, *t.layout, values, options(), sink));
    else scene.refresh(*t.layout, values, sink, kThreads);
    images.write(*t.layout, values);
  }
}

// The activation images alone, and a refresh alone (the two parts of a flip).
void images_only(benchmark::State& state, const fs::path& path) {
  Two t = prepare(path);
  Images images(*t.layout);
  const scene::Activations a = scene::activations_of(*t.a);
  for (auto _ : state) images.write(*t.layout, a);
}
void refresh_only(benchmark::State& state, const fs::path& path) {
  Two t = prepare(path);
  const model::Graph& g = t.plan->graph();
  scene::InMemorySink sink;
  const scene::Activations a = scene::activations_of(*t.a), b = scene::activations_of(*t.b);
  scene::Scene scene = scene::Scene::build(g, *t.layout, a, options(), sink);
  bool flip = false;
  for (auto _ : state) {
    scene.refresh(*t.layout, flip ? a : b, sink, kThreads);
    flip = !flip;
  }
}

// The exact build after a refresh (no images: they are up to date by then).
void refine(benchmark::State& state, const fs::path& path) {
  Two t = prepare(path);
  const model::Graph& g = t.plan->graph();
  scene::InMemorySink sink;
  const scene::Activations a = scene::activations_of(*t.a);
  scene::Scene::build(g, *t.layout, a, options(), sink);
  for (auto _ : state) benchmark::DoNotOptimize(scene::Scene::build(g, *t.layout, a, options(), sink));
}

void memory(benchmark::State& state, const fs::path& path) {
  double one = 0, two = 0;
  for (auto _ : state) {
    auto plan = runtime::Plan::build(load(path));
    const model::Graph& g = plan->graph();
    const scene::Layout layout = scene::Layout::build(g, {});
    scene::InMemorySink sink;
    runtime::Session a(plan, {.threads = kThreads});
    feed(a, g, inputs_of(g, 0));
    a.run();
    scene::Scene::build(g, layout, scene::activations_of(a), options(), sink);
    one = rss_mb();
    runtime::Session b(plan, {.threads = kThreads});
    feed(b, g, inputs_of(g, 1));
    b.run();
    std::vector<float> storage;
    const scene::Activations d = scene::difference(g, scene::activations_of(a), scene::activations_of(b), storage);
    scene::Scene::build(g, layout, d, options(), sink);
    two = rss_mb();
  }
  state.counters["one_MB"] = one;
  state.counters["two_MB"] = two;
  state.counters["ratio"] = one > 0 ? two / one : 0;
}

const int registered = [] {
  std::vector<std::pair<std::string, fs::path>> models = {{"digits", fs::path()}};
  const fs::path mobilenet = fs::path(NNXR_SHARED_MODELS) / "arch" / "mobilenet_v2-op13.onnx";
  if (fs::exists(mobilenet)) models.emplace_back("mobilenet_v2", mobilenet);
  for (const auto& [name, path] : models) {
    auto add = [&](const std::string& what, auto&&... args) {
      benchmark::RegisterBenchmark((what + "/" + name).c_str(), args...)->Unit(benchmark::kMillisecond)->UseRealTime();
    };
    add("switch", switch_input, path, Mode::Build);
    add("switch_refresh", switch_input, path, Mode::Refresh);
    add("infer", switch_input, path, Mode::Infer);
    add("flip_b", flip, path, false, Mode::Build);
    add("flip_diff", flip, path, true, Mode::Build);
    add("flip_refresh_b", flip, path, false, Mode::Refresh);
    add("flip_refresh_diff", flip, path, true, Mode::Refresh);
    add("refine", refine, path);
    add("images", images_only, path);
    add("refresh", refresh_only, path);
    benchmark::RegisterBenchmark(("memory/" + name).c_str(), memory, path)->Unit(benchmark::kMillisecond)->Iterations(1);
  }
  return 0;
}();

}  // namespace

BENCHMARK_MAIN();
