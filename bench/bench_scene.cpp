// Scene build and filter change for every shared model (and the embedded default model), after one
// inference on seeded random inputs (Mulberry32 seed 0, uniform [0, 1); integer inputs 0/1).
//   scene/<model>     Scene::build (top-8, budget 150M, 2 threads) into an InMemorySink reused
//                     across iterations (and warmed by one untimed build), as the engine reuses
//                     its mapped buffers. Counters:
//                     neurons, connections, resident_MB, candidates, candidates/s/core.
//   pipeline/<model>  load + inference + layout + scene, all on 2 threads, into a cold sink (the
//                     1.5 s target for mobilenet_v2).
//   trace/<model>     Scene::trace of one neuron (3 back, 1 forward, fan 8).
//   filter/<model>    Scene::counts for a new threshold + write_counts; bytes_written = the
//                     counts (4 bytes per segment, neurons and connections).
//   window/<model>    a layer-window step (a 4-layer window moved one layer deeper, wrapping;
//                     hidden and dimmed in turn) resolved by Scene::counts + write_counts; the
//                     engine writes 16 bytes per segment and element kind for it.
// Run: build/bench/bench_scene [--benchmark_filter=mobilenet].
#include <benchmark/benchmark.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <memory>

#include "assets/assets.h"
#include "model/load.h"
#include "model/runtime/runtime.h"
#include "model/scene/scene.h"
#include "model/tensor_io.h"
#include "tests/support/shared_models.h"

namespace {

namespace fs = std::filesystem;
using namespace nnxr;

constexpr int kThreads = 2;
constexpr uint64_t kBudget = 150'000'000;

model::LoadOptions load_options(const fs::path& path) {
  model::LoadOptions o;
  if (path.filename() == "face_detection_yunet.onnx") o.dims = {{"height", 320}, {"width", 320}};
  return o;
}

model::Graph load(const fs::path& path) {
  if (path.empty()) return model::load_model_from_memory(assets::default_model().bytes, "digits.onnx");
  return model::load_model(path, load_options(path));
}

// A model after one run, with its layout.
struct Prepared {
  std::shared_ptr<const runtime::Plan> plan;
  std::unique_ptr<runtime::Session> session;
  scene::Layout layout;
  scene::Activations acts;
};

Prepared prepare(model::Graph graph) {
  Prepared p;
  p.plan = runtime::Plan::build(std::move(graph));
  p.session = std::make_unique<runtime::Session>(p.plan, runtime::SessionOptions{.threads = kThreads});
  const model::Graph& g = p.plan->graph();
  model::Mulberry32 rng(0);
  for (model::TensorId id : g.inputs) {
    const model::Tensor& t = g.tensors[id];
    const model::TensorData d = model::random_tensor(t.dtype, t.shape, rng);
    p.session->set_input(t.name, d.dtype, d.shape, d.bytes);
  }
  try {
    p.session->run();
  } catch (const runtime::RuntimeError&) {  // the scene shows what was computed
  }
  p.acts = scene::activations_of(*p.session);
  p.layout = scene::Layout::build(g, {}, &p.acts);  // data-dependent shapes as run
  return p;
}

void scene_build(benchmark::State& state, const fs::path& path) {
  Prepared p;
  try {
    p = prepare(load(path));
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
    return;
  }
  scene::InMemorySink sink;
  // Untimed first build: the sink's memory is then touched, as the engine's mapped buffers are.
  scene::Scene::build(p.plan->graph(), p.layout, p.acts, {.top_k = 8, .budget = kBudget, .threads = kThreads}, sink);
  scene::BuildStats st;
  double seconds = 0;
  for (auto _ : state) {
    const scene::Scene s = scene::Scene::build(p.plan->graph(), p.layout, p.acts, {.top_k = 8, .budget = kBudget, .threads = kThreads}, sink);
    st = s.stats();
    seconds += st.total_ms / 1000;
  }
  state.counters["neurons"] = double(st.neurons);
  state.counters["connections"] = double(st.connections);
  state.counters["resident_MB"] = double(st.bytes) / 1e6;
  state.counters["cpu_MB"] = double(st.cpu_bytes) / 1e6;
  state.counters["candidates"] = double(st.connection_candidates);
  state.counters["cand/s/core"] = double(st.connection_candidates) * double(state.iterations()) / seconds / kThreads;
  state.counters["scoring_ms"] = st.scoring_ms;
  state.counters["sorting_ms"] = st.sorting_ms;
  state.counters["writing_ms"] = st.writing_ms;
}

void pipeline(benchmark::State& state, const fs::path& path) {
  scene::InMemorySink sink;
  for (auto _ : state) {
    Prepared p = prepare(load(path));
    const scene::Scene s = scene::Scene::build(p.plan->graph(), p.layout, p.acts, {.top_k = 8, .budget = kBudget, .threads = kThreads}, sink);
    benchmark::DoNotOptimize(s.stats().connections);
  }
}

void filter_change(benchmark::State& state, const fs::path& path) {
  Prepared p;
  try {
    p = prepare(load(path));
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
    return;
  }
  scene::InMemorySink sink;
  const scene::Scene s = scene::Scene::build(p.plan->graph(), p.layout, p.acts, {.top_k = 8, .budget = kBudget, .threads = kThreads}, sink);
  scene::Filter f;
  f.connection_mode = scene::Filter::Mode::Absolute;
  int step = 0;
  for (auto _ : state) {
    f.neuron_threshold = float(step % 100) / 100.f;                  // quantile
    f.connection_threshold = s.max_contribution() * float(step % 37) / 64.f;  // absolute
    ++step;
    const scene::DrawCounts c = s.counts(f);
    sink.write_counts(c);
  }
  state.counters["segments"] = double(s.segments().size());
  state.counters["bytes_written"] = double(s.segments().size() * 2 * sizeof(uint32_t));
}

void window_step(benchmark::State& state, const fs::path& path) {
  Prepared p;
  try {
    p = prepare(load(path));
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
    return;
  }
  scene::InMemorySink sink;
  const scene::Scene s = scene::Scene::build(p.plan->graph(), p.layout, p.acts, {.top_k = 8, .budget = kBudget, .threads = kThreads}, sink);
  const int layers = std::max(p.plan->graph().layer_count, 1);
  scene::Filter f;
  f.connection_threshold = 0.5f;
  int step = 0;
  uint64_t shown = 0;
  for (auto _ : state) {
    f.layer_min = step % layers;
    f.layer_max = f.layer_min + 3;
    f.outside = step % 2 ? scene::Filter::Outside::Dim : scene::Filter::Outside::Hide;
    ++step;
    const scene::DrawCounts c = s.counts(f);
    sink.write_counts(c);
    shown += c.neurons.empty() ? 0 : c.neurons[size_t(step) % c.neurons.size()];
  }
  benchmark::DoNotOptimize(shown);
  state.counters["segments"] = double(s.segments().size());
  state.counters["engine_bytes_written"] = double(s.segments().size() * 2 * 16);  // VkDrawIndirectCommand each
}

// Trace of the strongest neuron of the largest segment (3 layers back, 1 forward, fan 8).
void trace(benchmark::State& state, const fs::path& path) {
  Prepared p;
  try {
    p = prepare(load(path));
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
    return;
  }
  scene::InMemorySink sink;
  const scene::Scene s = scene::Scene::build(p.plan->graph(), p.layout, p.acts, {.top_k = 8, .budget = kBudget, .threads = kThreads}, sink);
  const auto& segs = s.segments();
  const auto big = std::max_element(segs.begin(), segs.end(), [](const auto& a, const auto& b) { return a.neuron_count < b.neuron_count; });
  if (big == segs.end() || big->neuron_count == 0) {
    state.SkipWithError("no neurons");
    return;
  }
  size_t highlighted = 0;
  for (auto _ : state) highlighted = s.trace(big->neuron_first).connections.size();
  state.counters["connections"] = double(highlighted);
}

const int registered = [] {
  std::vector<std::pair<std::string, fs::path>> models = {{"default", {}}};
  for (const fs::path& p : nnxr::test::shared_model_paths()) models.push_back({p.stem().string(), p});
  if (models.size() == 1) std::cerr << "note: " << NNXR_SHARED_MODELS << " is absent; only the default model is measured\n";
  for (const auto& [name, path] : models) {
    benchmark::RegisterBenchmark(("scene/" + name).c_str(), scene_build, path)->Unit(benchmark::kMillisecond)->UseRealTime();
    benchmark::RegisterBenchmark(("filter/" + name).c_str(), filter_change, path)->Unit(benchmark::kMicrosecond);
    benchmark::RegisterBenchmark(("trace/" + name).c_str(), trace, path)->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("window/" + name).c_str(), window_step, path)->Unit(benchmark::kMicrosecond);
  }
  for (const auto& [name, path] : models)
    if (name == "mobilenet_v2-op13" || name == "default")
      benchmark::RegisterBenchmark(("pipeline/" + name).c_str(), pipeline, path)->Unit(benchmark::kMillisecond)->UseRealTime();
  return 0;
}();

}  // namespace

BENCHMARK_MAIN();
