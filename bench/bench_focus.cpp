// Focus change latency: the viewer moves from one layer to another and the worker re-chooses the
// focus (WorkerOptions::follow_view) and publishes its points and connections.
//  - focus_change/MODEL/budget:N: from Worker::view() with a view of the other layer to the
//    SceneBuilt event of the refocused scene (choice, scene build with connection scoring,
//    publish into an in-memory sink), at the viewer's defaults for an element budget of N (`nnxr
//    view`: 2,000,000 on a GPU, 300,000 on lavapipe): a focus of half the budget, each tensor's
//    strongest kFocusPointsPerTensor points and kFocusConnectionsPerTensor connections, 2 worker
//    threads. The frame thread takes the scene in at its next frame and never waits for it.
//    neurons/connections: resident after the change.
// The views alternate between a layer a quarter of the way in and one three quarters in (each
// looked at from beside it, within a neuron spacing or two), so every iteration is a change.
// Run: build/bench/bench_focus [--benchmark_filter=mobilenet]; skips models absent from
// NNXR_SHARED_MODELS.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <random>
#include <thread>
#include <variant>

#include <glm/glm.hpp>
#include <glm/gtc/matrix_transform.hpp>

#include "engine/worker.h"
#include "model/load.h"
#include "tests/support/random_feeds.h"

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using namespace nnxr;

engine::Feeds random_feeds(const model::Graph& g) { return test::random_feeds(g, 1, -1, 1); }

// From beside the block (+Z), level with its centre, looking a little down the depth axis so
// that the aim ray crosses the block's plane.
scene::FocusView looking_at(const engine::TensorPlace& t, float spacing) {
  const glm::vec3 lo(t.min[0], t.min[1], t.min[2]), hi(t.max[0], t.max[1], t.max[2]);
  const glm::vec3 centre = 0.5f * (lo + hi);
  const glm::vec3 eye(centre.x - 20 * spacing, centre.y, hi.z + 2 * spacing);
  const glm::mat4 clip = glm::perspective(glm::radians(60.0f), 16.0f / 9.0f, 0.001f, 100.0f) * glm::lookAt(eye, centre, {0, 1, 0});
  scene::FocusView v;
  v.eye = {eye.x, eye.y, eye.z};
  for (int c = 0; c < 4; ++c)
    for (int r = 0; r < 4; ++r) v.clip[size_t(4 * c + r)] = clip[c][r];
  const glm::vec3 d = glm::normalize(centre - eye);
  v.aim_origin = v.eye;
  v.aim_direction = {d.x, d.y, d.z};
  return v;
}

void focus_change(benchmark::State& state, fs::path path) {
  if (!fs::exists(path)) return state.SkipWithError("model not found");
  scene::InMemorySink sink;
  engine::WorkerOptions o;
  o.print_progress = false;
  o.threads = 2;
  o.follow_view = true;
  o.scene.budget = uint64_t(state.range(0));  // the focus: half of it (WorkerOptions::focus_points 0)
  o.scene.connections_per_tensor = scene::kFocusConnectionsPerTensor;
  o.scene.points_per_tensor = scene::kFocusPointsPerTensor;
  engine::Worker w(sink, o);
  w.load({path.filename().string(), [path] { return model::load_model(path); }}, random_feeds);
  w.wait_idle();
  std::vector<engine::TensorPlace> places;
  float spacing = 0.004f;
  for (engine::WorkerEvent& e : w.take_events()) {
    if (auto* loaded = std::get_if<engine::ModelLoaded>(&e)) places = loaded->tensors, spacing = loaded->neuron_spacing;
    if (auto* failed = std::get_if<engine::Failed>(&e)) return state.SkipWithError(failed->message.c_str());
  }
  if (places.size() < 4) return state.SkipWithError("too few tensors");
  const scene::FocusView views[2] = {looking_at(places[places.size() / 4], spacing), looking_at(places[3 * places.size() / 4], spacing)};
  w.view(views[1]);
  w.wait_idle();
  (void)w.take_events();
  size_t next = 0;
  uint64_t neurons = 0, connections = 0, changes = 0, candidates = 0;
  double build_ms = 0, scoring_ms = 0, sorting_ms = 0, writing_ms = 0;  // summed over the changes
  for (auto _ : state) {
    const auto start = Clock::now();
    w.view(views[next]);
    next ^= 1;
    bool built = false, idle = false;
    while (!built && !idle) {
      idle = !w.progress().busy;  // read before the events: a build posts before it goes idle
      for (engine::WorkerEvent& e : w.take_events())
        if (auto* b = std::get_if<engine::SceneBuilt>(&e)) {
          built = true;
          neurons = b->neurons;
          connections = b->connections;
          candidates = b->stats.connection_candidates;
          build_ms += b->build_ms, scoring_ms += b->stats.scoring_ms;
          sorting_ms += b->stats.sorting_ms, writing_ms += b->stats.writing_ms;
          ++changes;
        }
      if (!built && !idle) std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    state.SetIterationTime(std::chrono::duration<double>(Clock::now() - start).count());
  }
  state.counters["neurons"] = double(neurons);
  state.counters["connections"] = double(connections);
  state.counters["changes"] = double(changes);
  state.counters["candidates"] = double(candidates);
  // The scene build's stages (ms, mean per change): the rest of a change is choosing and publishing.
  const double n = double(std::max<uint64_t>(changes, 1));
  state.counters["build_ms"] = build_ms / n;
  state.counters["scoring_ms"] = scoring_ms / n;
  state.counters["sorting_ms"] = sorting_ms / n;
  state.counters["writing_ms"] = writing_ms / n;
}

const char* const kModels[][2] = {
    {"mobilenet_v2", "arch/mobilenet_v2-op13.onnx"},
    {"squeezenet1.1", "squeezenet1.1-caffe2-op7-fp32.onnx"},
};

[[maybe_unused]] const bool registered = [] {
  for (const auto& [name, file] : kModels)
    benchmark::RegisterBenchmark((std::string("focus_change/") + name).c_str(), focus_change, fs::path(NNXR_SHARED_MODELS) / file)
        ->ArgName("budget")
        ->Arg(300'000)
        ->Arg(2'000'000)
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond)
        ->Iterations(6);
  return true;
}();

}  // namespace

BENCHMARK_MAIN();
