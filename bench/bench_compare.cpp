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
//   flip_refresh_b/<model>, flip_refresh_diff/<model>: the same with Scene::refresh, images
//                           written on every flip (the worker before kept images)
//   flip_kept_b/<model>, flip_kept_diff/<model>: Scene::refresh with the images of A, B and
//                           A − B kept resident (show_or_publish_images: a swap): the worker now
//   refine/<model>          the exact build that follows a refresh when the viewer is idle
//   images/<model>, refresh/<model>: write_images and Scene::refresh alone
//   memory/<model>       resident memory (RSS) of the process with one input's activations kept
//                        and with two (plus the difference): counters one_MB, two_MB, ratio;
//                        the activation images as the engine keeps them (two regions for one
//                        input, three for A, B and A − B): images_one_MB, images_two_MB
// Models: mobilenet_v2 (shared/models/arch) and the embedded default model.
// Run: build/bench/bench_compare [--benchmark_filter=mobilenet].
#include <benchmark/benchmark.h>

#include <sys/resource.h>
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

// CPU time of every thread of the process (the calling thread and the helpers), in ms.
double process_cpu_ms() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return 1e3 * (double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + 1e-6 * double(u.ru_utime.tv_usec + u.ru_stime.tv_usec));
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

enum class Mode { Infer, Build, Refresh, Kept };

void switch_input(benchmark::State& state, const fs::path& path, Mode mode) {
  Two t = prepare(path);
  const model::Graph& g = t.plan->graph();
  scene::InMemorySink sink;
  Images images(*t.layout);
  scene::Scene scene = scene::Scene::build(g, *t.layout, scene::activations_of(*t.a), options(), sink);  // warm the sink
  bool flip = false;
  const double cpu0 = process_cpu_ms();
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
  state.counters["process_cpu_ms"] = (process_cpu_ms() - cpu0) / double(state.iterations());
}

void flip(benchmark::State& state, const fs::path& path, bool difference, Mode mode) {
  Two t = prepare(path);
  const model::Graph& g = t.plan->graph();
  scene::InMemorySink sink;
  Images images(*t.layout);
  std::vector<float> storage;
  const scene::Activations a = scene::activations_of(*t.a), b = scene::activations_of(*t.b);
  scene::Scene scene = scene::Scene::build(g, *t.layout, a, options(), sink);
  // Kept: the images of A and of the flip's side stay resident (the worker's
  // show_or_publish_images into the engine's three regions); both written once before timing.
  scene::InMemoryImages kept;
  uint64_t key_a = 0, key_other = 0, serial = 0;
  if (mode == Mode::Kept) {
    scene::show_or_publish_images(*t.layout, a, kept, key_a, serial, kThreads);
    const scene::Activations values = difference ? scene::difference(g, a, b, storage) : b;
    scene::show_or_publish_images(*t.layout, values, kept, key_other, serial, kThreads);
  }
  bool back = false;
  double cpu = 0;
  for (auto _ : state) {
    // Refresh alternates with a refresh back to A, as a viewer flipping does; only the flip to
    // B (or A − B) is timed.
    if ((mode == Mode::Refresh || mode == Mode::Kept) && back) {
      state.PauseTiming();
      scene.refresh(*t.layout, a, sink, kThreads);
      if (mode == Mode::Kept) scene::show_or_publish_images(*t.layout, a, kept, key_a, serial, kThreads);
      state.ResumeTiming();
    }
    back = true;
    const double cpu0 = process_cpu_ms();
    const scene::Activations values = difference ? scene::difference(g, a, b, storage) : b;
    if (mode == Mode::Build) benchmark::DoNotOptimize(scene::Scene::build(g, *t.layout, values, options(), sink));
    else scene.refresh(*t.layout, values, sink, kThreads);
    if (mode == Mode::Kept) scene::show_or_publish_images(*t.layout, values, kept, key_other, serial, kThreads);
    else images.write(*t.layout, values);
    cpu += process_cpu_ms() - cpu0;
  }
  state.counters["process_cpu_ms"] = cpu / double(state.iterations());
  if (mode == Mode::Kept) state.counters["image_writes"] = double(serial);
}

// The activation images alone, and a refresh alone (the two parts of a flip).
void images_only(benchmark::State& state, const fs::path& path) {
  Two t = prepare(path);
  Images images(*t.layout);
  const scene::Activations a = scene::activations_of(*t.a);
  const double cpu0 = process_cpu_ms();
  for (auto _ : state) images.write(*t.layout, a);
  state.counters["process_cpu_ms"] = (process_cpu_ms() - cpu0) / double(state.iterations());
  const scene::ImagesStats planned = scene::plan_images(*t.layout);
  state.counters["bytes_per_activation"] = double(planned.bytes) / double(std::max<uint64_t>(planned.activations_total, 1));
}
void refresh_only(benchmark::State& state, const fs::path& path) {
  Two t = prepare(path);
  const model::Graph& g = t.plan->graph();
  scene::InMemorySink sink;
  const scene::Activations a = scene::activations_of(*t.a), b = scene::activations_of(*t.b);
  scene::Scene scene = scene::Scene::build(g, *t.layout, a, options(), sink);
  bool flip = false;
  const double cpu0 = process_cpu_ms();
  for (auto _ : state) {
    scene.refresh(*t.layout, flip ? a : b, sink, kThreads);
    flip = !flip;
  }
  state.counters["process_cpu_ms"] = (process_cpu_ms() - cpu0) / double(state.iterations());
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
    // The images as the engine keeps them: two regions written for one input (the current one and
    // the next being written), a third for compare mode (A, B and A − B resident).
    scene::InMemoryImages images(3);
    uint64_t key = 0, serial = 0;
    scene::show_or_publish_images(layout, scene::activations_of(a), images, key, serial, kThreads);
    images.drop_image(key);
    key = 0;
    scene::show_or_publish_images(layout, scene::activations_of(a), images, key, serial, kThreads);
    one = rss_mb();
    state.counters["images_one_MB"] = double(images.bytes_allocated()) / 1e6;
    runtime::Session b(plan, {.threads = kThreads});
    feed(b, g, inputs_of(g, 1));
    b.run();
    std::vector<float> storage;
    const scene::Activations d = scene::difference(g, scene::activations_of(a), scene::activations_of(b), storage);
    scene::Scene::build(g, layout, d, options(), sink);
    uint64_t key_b = 0, key_d = 0;
    scene::show_or_publish_images(layout, scene::activations_of(b), images, key_b, serial, kThreads);
    scene::show_or_publish_images(layout, d, images, key_d, serial, kThreads);
    two = rss_mb();
    state.counters["images_two_MB"] = double(images.bytes_allocated()) / 1e6;
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
    add("flip_kept_b", flip, path, false, Mode::Kept);
    add("flip_kept_diff", flip, path, true, Mode::Kept);
    add("refine", refine, path);
    add("images", images_only, path);
    add("refresh", refresh_only, path);
    benchmark::RegisterBenchmark(("memory/" + name).c_str(), memory, path)->Unit(benchmark::kMillisecond)->Iterations(1);
  }
  return 0;
}();

}  // namespace

BENCHMARK_MAIN();
