// The desktop viewer's responsiveness, in a window on a private Xvfb (lavapipe):
//  - threshold_to_frame/MODEL/budget:N: from a threshold key press to the end of the first frame
//    that draws with the new counts (the worker computes them, the frame takes them in);
//    counts_ms is the worker's part. On lavapipe the rest is the frame's software raster time:
//    frame_wall_ms (the frame's wall time) against frame_cpu_ms (the frame thread's own).
//  - window_to_frame/MODEL/budget:N: the same for a layer-window step (Page Down / Page Up on a
//    four-layer window): the new window's detail is what the first frame after the step draws.
//  - view_to_first_frame/MODEL: from starting `nnxr view --desktop MODEL --frames 1 --stats` to
//    its first frame that shows the scene (first_scene_ms, measured by the viewer from its
//    creation) and to the process's exit (wall_ms).
// Run: build/bench/bench_viewer [--benchmark_filter=squeezenet]. Needs Xvfb or a DISPLAY; skips
// models absent from NNXR_SHARED_MODELS.
#include <benchmark/benchmark.h>

#include <sys/wait.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>

#include "engine/desktop.h"
#include "model/load.h"
#include "tests/support/random_feeds.h"
#include "tests/engine/xvfb.h"

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using namespace nnxr;

const char* const kModels[][2] = {
    {"squeezenet1.1", "squeezenet1.1-caffe2-op7-fp32.onnx"},
    {"mobilenet_v2", "arch/mobilenet_v2-op13.onnx"},
};

engine::Feeds random_feeds(const model::Graph& g) { return test::random_feeds(g, 1, -1, 1); }

test::Xvfb& xvfb() {
  static test::Xvfb server;
  return server;
}

void key_to_frame(benchmark::State& state, fs::path path, uint64_t budget, engine::Key more, engine::Key less, bool window) {
  if (!xvfb().ok()) return state.SkipWithError("no display and Xvfb could not be started");
  engine::ViewerOptions o;
  o.vsync = false;
  o.worker.print_progress = false;
  o.worker.threads = 2;
  o.worker.scene.budget = budget;
  o.budget_explicit = true;
  engine::DesktopViewer v(o);
  v.load({path.filename().string(), [path] { return model::load_model(path); }}, random_feeds);
  while (!v.state().settled())
    if (!v.frame()) return state.SkipWithError("the window closed");
  if (v.state().failed()) return state.SkipWithError("the model failed to load");
  if (window) {  // a window of four layers, a few layers in
    for (int i = 0; i < 200 && v.interaction().filter_summary().layer_max - v.interaction().filter_summary().layer_min > 3; ++i)
      v.key(engine::Key::End, engine::Press::Down);
    for (int i = 0; i < 10; ++i) v.key(engine::Key::PageDown, engine::Press::Down);
    v.worker().wait_idle();
    while (v.state().filter_applied() < v.state().filter_requested()) v.frame();
  }
  int frames = 0;
  bool up = true;
  double counts_ms = 0;
  for (auto _ : state) {
    const auto start = Clock::now();
    v.key(up ? more : less, engine::Press::Down);
    up = !up;
    // Only to split the latency for the report: the frame loop itself never waits on the worker.
    v.worker().wait_idle();
    counts_ms += std::chrono::duration<double, std::milli>(Clock::now() - start).count();
    do {
      v.frame();
      ++frames;
    } while (v.state().filter_applied() < v.state().filter_requested());
    state.SetIterationTime(std::chrono::duration<double>(Clock::now() - start).count());
  }
  const engine::ViewStats s = v.stats();
  const double n = static_cast<double>(state.iterations());
  state.counters["frames/key"] = static_cast<double>(frames) / n;
  state.counters["counts_ms"] = counts_ms / n;  // key → counts written by the worker
  state.counters["frame_cpu_ms"] = s.cpu_median_ms;
  state.counters["frame_wall_ms"] = s.wall_median_ms;  // the frame's whole cost (software raster)
  state.counters["resident"] = static_cast<double>(s.resident_neurons + s.resident_connections);
}

void view_to_first_frame(benchmark::State& state, fs::path path) {
  if (!xvfb().ok()) return state.SkipWithError("no display and Xvfb could not be started");
  double first_scene = 0, wall = 0;
  for (auto _ : state) {
    const std::string cmd = std::string("'") + NNXR_BINARY + "' view --desktop '" + path.string() +
                            "' --random 1 --frames 1 --stats 2>/dev/null";
    const auto start = Clock::now();
    FILE* p = popen(cmd.c_str(), "r");
    std::string out;
    char buf[4096];
    while (p && fgets(buf, sizeof buf, p)) out += buf;
    const int status = p ? pclose(p) : -1;
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return state.SkipWithError(("nnxr view failed: " + out).c_str());
    const auto at = out.find("\"first_scene_ms\":");
    if (at == std::string::npos) return state.SkipWithError("no first_scene_ms in the --stats line");
    first_scene = std::strtod(out.c_str() + at + 17, nullptr);
    wall = ms;
    state.SetIterationTime(first_scene / 1000.0);
  }
  state.counters["first_scene_ms"] = first_scene;
  state.counters["wall_ms"] = wall;
}

const int registered = [] {
  for (const auto& [name, file] : kModels) {
    const fs::path path = fs::path(NNXR_SHARED_MODELS) / file;
    if (!fs::exists(path)) continue;
    // A small budget shows the pipeline's latency; a large one adds lavapipe's raster time.
    for (uint64_t budget : {uint64_t{100'000}, uint64_t{2'000'000}}) {
      benchmark::RegisterBenchmark((std::string("threshold_to_frame/") + name + "/budget:" + std::to_string(budget)).c_str(),
                                   key_to_frame, path, budget, engine::Key::RightBracket, engine::Key::LeftBracket, false)
          ->UseManualTime()
          ->Unit(benchmark::kMillisecond)
          ->Iterations(10);
      benchmark::RegisterBenchmark((std::string("window_to_frame/") + name + "/budget:" + std::to_string(budget)).c_str(),
                                   key_to_frame, path, budget, engine::Key::PageDown, engine::Key::PageUp, true)
          ->UseManualTime()
          ->Unit(benchmark::kMillisecond)
          ->Iterations(10);
    }
    benchmark::RegisterBenchmark((std::string("view_to_first_frame/") + name).c_str(), view_to_first_frame, path)
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond)
        ->Iterations(3);
  }
  return 0;
}();

}  // namespace

BENCHMARK_MAIN();
