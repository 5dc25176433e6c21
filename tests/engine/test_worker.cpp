// Worker: supersede semantics, pipeline ordering, progress, error reporting and shutdown, with
// scripted stages whose timing the test controls.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <condition_variable>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <glm/glm.hpp>
#include <glm/gtc/matrix_transform.hpp>
#include <gtest/gtest.h>

#include "assets/assets.h"
#include "engine/words.h"
#include "engine/worker.h"
#include "model/load.h"
#include "model/runtime/runtime.h"
#include "model/scene/compare.h"

namespace nnxr::engine {
namespace {

using namespace std::chrono_literals;

// A gate a stage waits at until the test opens it; `arrived` tells the test the stage is there.
class Gate {
 public:
  void wait() {
    std::unique_lock lock(m_);
    arrived_ = true;
    cv_.notify_all();
    cv_.wait(lock, [this] { return open_; });
  }
  void wait_arrived() {
    std::unique_lock lock(m_);
    ASSERT_TRUE(cv_.wait_for(lock, 10s, [this] { return arrived_; })) << "the stage never reached the gate";
  }
  void open() {
    std::lock_guard lock(m_);
    open_ = true;
    cv_.notify_all();
  }

 private:
  std::mutex m_;
  std::condition_variable cv_;
  bool arrived_ = false, open_ = false;
};

// Records every stage call; `scene` counts built scenes so that filters can be checked against
// the scene they applied to. Stage calls happen on the worker thread, reads on the test thread
// after wait_idle() (which orders them).
class ScriptedStages final : public Stages {
 public:
  struct Shared {
    std::mutex m;
    std::vector<std::string> log;
    Gate* build_gate = nullptr;  // builds wait here when set
    Gate* infer_gate = nullptr;
    float build_progress = -1;   // reported before the build gate when >= 0
    bool slow_build = false;     // builds report progress every millisecond for 30 s
    bool refreshes = false;      // refresh() succeeds once there is a scene
    std::atomic<bool> building{false};
    void add(std::string s) {
      std::lock_guard lock(m);
      log.push_back(std::move(s));
    }
    std::vector<std::string> take() {
      std::lock_guard lock(m);
      return std::exchange(log, {});
    }
  };
  explicit ScriptedStages(Shared& shared) : s_(shared) {}

  void load(const ModelSource& model, const ProgressFn&, const PostFn& post) override {
    model::Graph g = model.load();  // may block or throw
    loaded_ = model.name;
    scene_ = 0;
    inferred_ = false;
    s_.add("load " + model.name);
    post(ModelLoaded{.name = model.name});
  }
  bool infer(const InputSource& input, const ProgressFn&, const PostFn&) override {
    if (loaded_.empty()) return false;
    if (s_.infer_gate) s_.infer_gate->wait();
    model::Graph g;
    const Feeds feeds = input ? input(g) : Feeds{};  // may throw
    inferred_ = true;
    s_.add("infer " + loaded_ + " " + (feeds.empty() ? "-" : feeds.begin()->first));
    return true;
  }
  bool build(const scene::SceneOptions& options, const scene::Filter& filter, uint64_t serial, const ProgressFn& progress,
             const PostFn& post) override {
    if (!inferred_) return false;
    if (s_.build_progress >= 0) progress(s_.build_progress);
    if (s_.build_gate) s_.build_gate->wait();
    if (s_.slow_build) {
      s_.building = true;
      for (int i = 0; i < 30'000; ++i) {
        progress(float(i) / 30'000);
        std::this_thread::sleep_for(1ms);
      }
    }
    ++scene_;
    s_.add("build " + std::to_string(scene_) + " budget=" + std::to_string(options.budget) + " top_k=" +
           std::to_string(options.top_k) + " q=" + std::to_string(filter.neuron_threshold).substr(0, 4));
    post(SceneBuilt{.generation = scene_});
    post(CountsApplied{.serial = serial, .generation = scene_});
    return true;
  }
  bool refresh(const scene::SceneOptions&, const scene::Filter&, uint64_t serial, const PostFn& post) override {
    if (!s_.refreshes || scene_ == 0 || !inferred_) return false;
    ++scene_;
    s_.add("refresh " + std::to_string(scene_));
    post(SceneBuilt{.generation = scene_, .refreshed = true});
    post(CountsApplied{.serial = serial, .generation = scene_});
    return true;
  }
  bool refine(const scene::SceneOptions&, const scene::Filter&, uint64_t serial, const ProgressFn& progress,
              const PostFn& post) override {
    if (s_.slow_build) {
      s_.building = true;
      for (int i = 0; i < 30'000; ++i) {
        progress(float(i) / 30'000);  // throws once a newer request comes
        std::this_thread::sleep_for(1ms);
      }
    }
    ++scene_;
    s_.add("refine " + std::to_string(scene_));
    post(SceneBuilt{.generation = scene_, .refined = true});
    post(CountsApplied{.serial = serial, .generation = scene_});
    return true;
  }
  bool filter(const scene::Filter& filter, uint64_t serial, const PostFn& post) override {
    if (scene_ == 0) return false;
    s_.add("filter " + std::to_string(scene_) + " q=" + std::to_string(filter.neuron_threshold).substr(0, 4));
    post(CountsApplied{.serial = serial, .generation = scene_});
    return true;
  }
  void select(std::array<float, 3>, std::array<float, 3>, float, uint64_t serial, const PostFn& post) override {
    s_.add("select " + std::to_string(scene_));
    post(Selected{.serial = serial});
  }

 private:
  Shared& s_;
  std::string loaded_;
  uint64_t scene_ = 0;
  bool inferred_ = false;
};

WorkerOptions quiet() {
  WorkerOptions o;
  o.print_progress = false;
  return o;
}

ModelSource model_named(std::string name, Gate* gate = nullptr) {
  return {name, [gate] {
            if (gate) gate->wait();
            return model::Graph{};
          }};
}

InputSource input_named(std::string name) {
  return [name](const model::Graph&) {
    Feeds f;
    f[name] = model::TensorData{};
    return f;
  };
}

scene::Filter neuron_filter(float q) {
  scene::Filter f;
  f.neuron_threshold = q;
  return f;
}

template <class T>
std::vector<T> events_of(std::vector<WorkerEvent>& events) {
  std::vector<T> out;
  for (auto& e : events)
    if (auto* t = std::get_if<T>(&e)) out.push_back(*t);
  return out;
}

// take_events() may come back empty while the worker posts; after wait_idle() it cannot.
std::vector<WorkerEvent> drain(Worker& w) {
  w.wait_idle();
  return w.take_events();
}

TEST(Worker, RunsThePipelineInOrder) {
  ScriptedStages::Shared shared;
  Worker w(std::make_unique<ScriptedStages>(shared), quiet());
  w.load(model_named("m"), input_named("x"));
  w.wait_idle();
  EXPECT_EQ(shared.take(), (std::vector<std::string>{"load m", "infer m x", "build 1 budget=20000000 top_k=8 q=0.00"}));
  auto events = drain(w);
  ASSERT_EQ(events_of<ModelLoaded>(events).size(), 1u);
  ASSERT_EQ(events_of<SceneBuilt>(events).size(), 1u);
  EXPECT_FALSE(w.progress().busy);
  EXPECT_EQ(w.progress().stage, Stage::Idle);
}

TEST(Worker, NewerRequestsSupersedeQueuedOnesOfTheSameKind) {
  ScriptedStages::Shared shared;
  Gate gate;
  Worker w(std::make_unique<ScriptedStages>(shared), quiet());
  w.load(model_named("m", &gate), input_named("x"));
  gate.wait_arrived();  // the load is running; everything below queues
  for (int i = 1; i <= 50; ++i) w.rebuild(4, static_cast<uint64_t>(i) * 1000);
  for (int i = 1; i <= 50; ++i) w.filter(neuron_filter(static_cast<float>(i) / 100));
  for (int i = 1; i <= 5; ++i) w.set_input(input_named("in" + std::to_string(i)));
  gate.open();
  w.wait_idle();
  // One inference with the last input, one build with the last options and the last filter.
  EXPECT_EQ(shared.take(), (std::vector<std::string>{"load m", "infer m in5", "build 1 budget=50000 top_k=4 q=0.50"}));
  auto events = drain(w);
  const auto applied = events_of<CountsApplied>(events);
  ASSERT_EQ(applied.size(), 1u);
  EXPECT_EQ(applied[0].serial, 50u);  // the counts the frame sees belong to the last filter
}

TEST(Worker, ANewerModelSupersedesAQueuedOne) {
  ScriptedStages::Shared shared;
  Gate gate;
  Worker w(std::make_unique<ScriptedStages>(shared), quiet());
  w.load(model_named("a", &gate), input_named("x"));
  gate.wait_arrived();
  w.load(model_named("b"), input_named("y"));
  w.load(model_named("c"));  // keeps the input source it has (y is dropped with b)
  gate.open();
  w.wait_idle();
  EXPECT_EQ(shared.take(), (std::vector<std::string>{"load a", "load c", "infer c x", "build 1 budget=20000000 top_k=8 q=0.00"}));
}

TEST(Worker, AFilterAfterARebuildAppliesToTheNewScene) {
  ScriptedStages::Shared shared;
  Worker w(std::make_unique<ScriptedStages>(shared), quiet());
  w.load(model_named("m"), input_named("x"));
  w.wait_idle();
  shared.take();
  drain(w);

  Gate gate;
  shared.build_gate = &gate;
  w.rebuild(8, 1234);
  gate.wait_arrived();  // scene 2 is being built
  const uint64_t serial = w.filter(neuron_filter(0.9f));
  gate.open();
  w.wait_idle();
  EXPECT_EQ(shared.take(), (std::vector<std::string>{"build 2 budget=1234 top_k=8 q=0.00", "filter 2 q=0.90"}));
  auto events = drain(w);
  const auto applied = events_of<CountsApplied>(events);
  ASSERT_EQ(applied.size(), 2u);
  EXPECT_EQ(applied.back().serial, serial);
  EXPECT_EQ(applied.back().generation, 2u);

  // Filter then rebuild, both queued behind a running stage: the rebuild runs first and applies
  // the filter; no filter runs on the old scene.
  Gate gate2;
  shared.build_gate = nullptr;
  shared.infer_gate = &gate2;
  w.set_input(input_named("z"));
  gate2.wait_arrived();
  w.filter(neuron_filter(0.3f));
  w.rebuild(2, 99);
  gate2.open();
  w.wait_idle();
  EXPECT_EQ(shared.take(), (std::vector<std::string>{"infer m z", "build 3 budget=99 top_k=2 q=0.30"}));
  // Later scenes keep the last filter.
  shared.infer_gate = nullptr;
  w.rebuild(2, 100);
  w.wait_idle();
  EXPECT_EQ(shared.take(), (std::vector<std::string>{"build 4 budget=100 top_k=2 q=0.30"}));
}

TEST(Worker, FiltersAndSelectionsBeforeAnySceneWait) {
  ScriptedStages::Shared shared;
  Worker w(std::make_unique<ScriptedStages>(shared), quiet());
  w.filter(neuron_filter(0.25f));
  w.set_input(input_named("x"));
  w.wait_idle();
  EXPECT_TRUE(shared.take().empty());  // nothing to filter, nothing to infer yet
  w.load(model_named("m"));
  w.select({0, 0, 0}, {1, 0, 0}, 0.01f);
  w.wait_idle();
  // The input given earlier is used; the filter applies to the first scene; the selection refers
  // to the scene that was built first.
  EXPECT_EQ(shared.take(), (std::vector<std::string>{"load m", "infer m x", "build 1 budget=20000000 top_k=8 q=0.25", "select 1"}));
}

TEST(Worker, ProgressIsReadableWhileAStageRuns) {
  ScriptedStages::Shared shared;
  Gate gate;
  shared.build_gate = &gate;
  shared.build_progress = 0.5f;
  Worker w(std::make_unique<ScriptedStages>(shared), quiet());
  w.load(model_named("m"), input_named("x"));
  gate.wait_arrived();
  const Progress p = w.progress();
  EXPECT_TRUE(p.busy);
  EXPECT_EQ(p.stage, Stage::Scene);
  EXPECT_FLOAT_EQ(p.fraction, 0.5f);
  EXPECT_STREQ(stage_name(p.stage), "scene");
  gate.open();
  w.wait_idle();
  EXPECT_FALSE(w.progress().busy);
  EXPECT_EQ(w.progress().stage, Stage::Idle);
}

TEST(Worker, ErrorsComeBackAsEventsAndTheWorkerGoesOn) {
  ScriptedStages::Shared shared;
  Worker w(std::make_unique<ScriptedStages>(shared), quiet());
  w.load({"bad.onnx", []() -> model::Graph { throw std::runtime_error("bad.onnx: not a model\n(details)"); }}, input_named("x"));
  auto events = drain(w);
  auto failed = events_of<Failed>(events);
  ASSERT_EQ(failed.size(), 1u);
  EXPECT_EQ(failed[0].stage, Stage::Load);
  EXPECT_EQ(failed[0].message, "bad.onnx: not a model (details)");  // one line
  EXPECT_TRUE(shared.take().empty());

  // A failing input: the model is in, inference fails, no scene.
  w.load(model_named("m"), [](const model::Graph&) -> Feeds { throw std::runtime_error("x.png: cannot be decoded"); });
  events = drain(w);
  failed = events_of<Failed>(events);
  ASSERT_EQ(failed.size(), 1u);
  EXPECT_EQ(failed[0].stage, Stage::Infer);
  EXPECT_EQ(failed[0].message, "x.png: cannot be decoded");
  EXPECT_EQ(shared.take(), (std::vector<std::string>{"load m"}));

  // Non-std exceptions are not expected from stages, but a bad_alloc is reported, not fatal.
  w.set_input([](const model::Graph&) -> Feeds { throw std::bad_alloc(); });
  events = drain(w);
  failed = events_of<Failed>(events);
  ASSERT_EQ(failed.size(), 1u);
  EXPECT_EQ(failed[0].message, "infer: out of memory");

  // A good input afterwards works.
  w.set_input(input_named("ok"));
  w.wait_idle();
  EXPECT_EQ(shared.take(), (std::vector<std::string>{"infer m ok", "build 1 budget=20000000 top_k=8 q=0.00"}));
}

TEST(Worker, ShutdownWhileBusyFinishesTheStageAndDropsTheRest) {
  ScriptedStages::Shared shared;
  Gate gate;
  std::thread opener;
  std::chrono::steady_clock::time_point start;
  {
    Worker w(std::make_unique<ScriptedStages>(shared), quiet());
    w.load(model_named("m", &gate), input_named("x"));
    gate.wait_arrived();
    w.rebuild(1, 1);
    w.filter(neuron_filter(0.5f));
    start = std::chrono::steady_clock::now();
    opener = std::thread([&] {
      std::this_thread::sleep_for(50ms);
      gate.open();
    });
  }  // ~Worker: waits for the running load, then stops
  EXPECT_GE(std::chrono::steady_clock::now() - start, 50ms);
  opener.join();
  EXPECT_EQ(shared.take(), (std::vector<std::string>{"load m"}));
}

TEST(Worker, ShutdownCancelsABuildAtItsNextProgressReport) {
  ScriptedStages::Shared shared;
  shared.slow_build = true;
  auto w = std::make_unique<Worker>(std::make_unique<ScriptedStages>(shared), quiet());
  w->load(model_named("m"), input_named("x"));
  const auto limit = std::chrono::steady_clock::now() + 10s;
  while (!shared.building && std::chrono::steady_clock::now() < limit) std::this_thread::sleep_for(1ms);
  ASSERT_TRUE(shared.building) << "the build never started";
  std::this_thread::sleep_for(20ms);
  w->filter(neuron_filter(0.5f));  // queued behind the build: dropped
  const auto start = std::chrono::steady_clock::now();
  w.reset();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 500ms) << "the destructor waited for the whole 30 s build";
  // The build never finished: its log line is missing, and so is the queued filter's.
  EXPECT_EQ(shared.take(), (std::vector<std::string>{"load m", "infer m x"}));
}

TEST(Worker, ShutdownWhenIdleIsImmediate) {
  ScriptedStages::Shared shared;
  const auto start = std::chrono::steady_clock::now();
  { Worker w(std::make_unique<ScriptedStages>(shared), quiet()); }
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1s);
}

TEST(Worker, FrameThreadCallsDoNotWaitForAStage) {
  ScriptedStages::Shared shared;
  Gate gate;
  Worker w(std::make_unique<ScriptedStages>(shared), quiet());
  w.load(model_named("m", &gate), input_named("x"));
  gate.wait_arrived();
  // The load is blocked indefinitely: every frame-thread call still returns at once.
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 1000; ++i) {
    w.filter(neuron_filter(0.1f));
    w.select({0, 0, 0}, {0, 0, 1}, 0.1f);
    (void)w.progress();
    (void)w.take_events();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1s);
  gate.open();
  w.wait_idle();
}

// ---- the real pipeline (model/ → runtime → scene) into an InMemorySink -----------------------

model::Graph digits() { return model::load_model_from_memory(assets::default_model().bytes, "digits.onnx"); }

Feeds ones(const model::Graph& g) {
  Feeds feeds;
  for (auto id : g.inputs) {
    const model::Tensor& t = g.tensors[id];
    model::TensorData d;
    d.dtype = model::DType::Float;
    d.shape = t.shape;
    std::vector<float> v(static_cast<size_t>(d.elements()));
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>((i * 37) % 11) / 10.0f;
    d.bytes.resize(v.size() * 4);
    std::memcpy(d.bytes.data(), v.data(), d.bytes.size());
    feeds[t.name] = std::move(d);
  }
  return feeds;
}

// n − round(q·n): each segment keeps its strongest share (the filter's contract).
uint32_t expected_quantile(uint32_t n, float q) { return n - static_cast<uint32_t>(std::lround(double(q) * n)); }

TEST(WorkerScene, BuildsAndPublishesWithTheCurrentFilter) {
  scene::InMemorySink sink;
  WorkerOptions o = quiet();
  o.scene.budget = 100'000;
  Worker w(sink, o);
  w.filter(neuron_filter(0.5f));  // before any model: applies to the first scene's publish
  w.load({"digits", digits}, ones);
  auto events = drain(w);
  ASSERT_TRUE(events_of<Failed>(events).empty()) << events_of<Failed>(events)[0].message;
  const auto built = events_of<SceneBuilt>(events);
  ASSERT_EQ(built.size(), 1u);
  EXPECT_EQ(sink.generation, 1u);  // one publish, already filtered
  EXPECT_GT(built[0].neurons, 0u);
  ASSERT_FALSE(sink.segments.empty());
  ASSERT_EQ(sink.counts.neurons.size(), sink.segments.size());
  uint64_t resident = 0, drawn = 0;
  for (size_t i = 0; i < sink.segments.size(); ++i) {
    resident += sink.segments[i].neuron_count;
    drawn += sink.counts.neurons[i];
    EXPECT_EQ(sink.counts.neurons[i], expected_quantile(sink.segments[i].neuron_count, 0.5f)) << "segment " << i;
  }
  EXPECT_EQ(resident, built[0].neurons);
  const auto applied = events_of<CountsApplied>(events);
  ASSERT_EQ(applied.size(), 1u);
  EXPECT_EQ(applied[0].neurons, drawn);

  // A filter change writes counts only: same generation, new counts.
  w.filter(neuron_filter(0.9f));
  events = drain(w);
  EXPECT_EQ(sink.generation, 1u);
  for (size_t i = 0; i < sink.segments.size(); ++i)
    EXPECT_EQ(sink.counts.neurons[i], expected_quantile(sink.segments[i].neuron_count, 0.9f)) << "segment " << i;
  ASSERT_EQ(events_of<CountsApplied>(events).size(), 1u);
  EXPECT_LT(events_of<CountsApplied>(events)[0].neurons, drawn);

  // A rebuild with a smaller budget publishes generation 2 with fewer resident elements.
  w.rebuild(2, 1'000);
  events = drain(w);
  ASSERT_EQ(events_of<SceneBuilt>(events).size(), 1u);
  EXPECT_EQ(sink.generation, 2u);
  EXPECT_LE(events_of<SceneBuilt>(events)[0].neurons + events_of<SceneBuilt>(events)[0].connections, 1'000u);
}

// The real pipeline's inference stops between nodes once the Worker is being destroyed: the
// session's RunOptions::cancel is the Worker's flag (Stages::cancelled). Checked on the session.
// A refreshed scene gets its exact build when nothing else waits; a newer input abandons that
// build at its next progress report (nothing posted) and is refreshed in turn.
TEST(Worker, ARefineGivesWayToANewerInput) {
  ScriptedStages::Shared s;
  s.refreshes = true;
  Worker w(std::make_unique<ScriptedStages>(s), quiet());
  w.load(model_named("m"), input_named("a"));
  w.wait_idle();
  EXPECT_EQ(s.take(), (std::vector<std::string>{"load m", "infer m a", "build 1 budget=20000000 top_k=8 q=0.00"}));
  w.set_input(input_named("b"));
  w.wait_idle();
  EXPECT_EQ(s.take(), (std::vector<std::string>{"infer m b", "refresh 2", "refine 3"}));
  s.slow_build = true;
  w.set_input(input_named("c"));
  for (int i = 0; i < 10'000 && !s.building; ++i) std::this_thread::sleep_for(1ms);
  ASSERT_TRUE(s.building) << "the refine never started";
  s.slow_build = false;
  const auto start = std::chrono::steady_clock::now();
  w.set_input(input_named("d"));
  w.wait_idle();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);  // not the 30 s the refine would take
  EXPECT_EQ(s.take(), (std::vector<std::string>{"infer m c", "refresh 4", "infer m d", "refresh 5", "refine 6"}));
  auto events = drain(w);
  for (const SceneBuilt& b : events_of<SceneBuilt>(events)) EXPECT_NE(b.generation, 0u);
}

// Another input of the same shape: the scene's elements are refreshed with the new run's values
// (no build), then an exact build follows once the worker is idle. Both are published; the
// refreshed neurons hold the new run's values.
TEST(WorkerScene, AnotherInputRefreshesThenRefines) {
  scene::InMemorySink sink;
  WorkerOptions o = quiet();
  o.scene.budget = 20'000;  // a fraction of the neurons
  Worker w(sink, o);
  w.load({"digits", digits}, ones);
  auto events = drain(w);
  ASSERT_EQ(events_of<SceneBuilt>(events).size(), 1u);
  EXPECT_FALSE(events_of<SceneBuilt>(events)[0].refreshed);
  const uint64_t first = sink.generation;
  auto halves = [](const model::Graph& g) {
    Feeds f = ones(g);
    for (auto& [name, t] : f) {
      auto* v = reinterpret_cast<float*>(t.bytes.data());
      for (size_t i = 0; i < t.bytes.size() / 4; ++i) v[i] = 1.0f - v[i];
    }
    return f;
  };
  w.set_input(halves);
  events = drain(w);
  const auto built = events_of<SceneBuilt>(events);
  ASSERT_EQ(built.size(), 2u);
  EXPECT_TRUE(built[0].refreshed);
  EXPECT_TRUE(built[0].stats.refreshed);
  EXPECT_EQ(built[0].stats.scoring_ms, 0);
  EXPECT_TRUE(built[1].refined);
  EXPECT_FALSE(built[1].stats.refreshed);
  EXPECT_EQ(sink.generation, first + 2);
  EXPECT_EQ(events_of<CountsApplied>(events).size(), 2u);
  // The refined scene holds the new run: its output neurons' values are those of a run here.
  const auto plan = runtime::Plan::build(digits());
  runtime::Session session(plan, {});
  for (const auto& [name, t] : halves(plan->graph())) session.set_input(name, t.dtype, t.shape, t.bytes);
  session.run();
  const scene::Segment& out = sink.segments.back();
  const runtime::Value* v = session.value(out.tensor);
  ASSERT_TRUE(v);
  float strongest = 0;
  for (float x : v->as<float>()) strongest = std::max(strongest, std::fabs(x));
  EXPECT_EQ(std::fabs(sink.neuron_data[out.neuron_first].value), strongest);
}

TEST(WorkerScene, InferenceStopsBetweenNodesWhenCancelled) {
  const auto plan = runtime::Plan::build(digits());
  runtime::Session session(plan, {});
  const model::Graph& g = plan->graph();
  for (const auto& [name, t] : ones(g)) session.set_input(name, t.dtype, t.shape, t.bytes);
  std::atomic<bool> cancel{false};
  EXPECT_GT(session.run(runtime::RunOptions{.cancel = &cancel}).nodes_run, 0);
  cancel = true;
  try {
    session.run(runtime::RunOptions{.cancel = &cancel});
    ADD_FAILURE() << "a cancelled run went on";
  } catch (const runtime::CancelledError& e) {
    EXPECT_EQ(e.reason(), runtime::CancelledError::Reason::Cancelled);
    EXPECT_EQ(std::string(e.what()), "the run was cancelled");
  }
  // The real stages hand the Worker's flag on: a Worker destroyed while it runs posts no scene.
  scene::InMemorySink sink;
  {
    Worker w(sink, quiet());
    w.load({"digits", digits}, ones);
  }  // destroyed at once: whichever stage runs gives up at its next check
  EXPECT_EQ(sink.generation, 0u);
}

TEST(WorkerScene, SelectsTheNeuronOnTheRay) {
  scene::InMemorySink sink;
  Worker w(sink, quiet());
  w.load({"digits", digits}, ones);
  w.wait_idle();
  const model::Graph g = digits();
  const scene::Layout layout = scene::Layout::build(g, {});
  const scene::Block& block = layout.blocks()[layout.blocks().size() / 2];
  const int64_t element = 3;
  const auto p = layout.position(block.tensor, element);
  // A ray from in front of the block, along -X (depth), through the neuron.
  w.select({p[0] + 1.0f, p[1], p[2]}, {-1, 0, 0}, 0.001f);
  auto events = drain(w);
  const auto selected = events_of<Selected>(events);
  ASSERT_EQ(selected.size(), 1u);
  ASSERT_TRUE(selected[0].selection.has_value());
  const Selection& s = *selected[0].selection;
  EXPECT_EQ(s.tensor_name, g.tensors[block.tensor].name);
  EXPECT_EQ(s.element, element);
  EXPECT_EQ(selected[0].generation, 1u);
  ASSERT_TRUE(s.neuron.has_value());  // the digits model fits the default budget entirely
  EXPECT_EQ(s.value, sink.neuron_data.at(*s.neuron).value);
  ASSERT_FALSE(s.trace.neurons.empty());
  EXPECT_EQ(s.trace.neurons[0], *s.neuron);
  // The multi-index is the flat element unravelled in the tensor's shape.
  int64_t flat = 0;
  for (size_t i = 0; i < s.index.size(); ++i) flat = flat * g.tensors[block.tensor].shape[i] + s.index[i];
  EXPECT_EQ(flat, element);

  // A ray that misses everything.
  w.select({p[0], p[1] + 100.0f, p[2]}, {0, 1, 0}, 0.001f);
  events = drain(w);
  ASSERT_EQ(events_of<Selected>(events).size(), 1u);
  EXPECT_FALSE(events_of<Selected>(events)[0].selection.has_value());
}

// A scene sink that also takes the view's words and records which tensor each publish focused.
struct WordsRecorder final : scene::SceneSink, WordsSink {
  scene::InMemorySink memory;
  std::span<scene::Neuron> neurons(uint64_t count) override { return memory.neurons(count); }
  std::span<scene::Connection> connections(uint64_t count) override { return memory.connections(count); }
  void publish(std::span<const scene::Segment> segments, const scene::DrawCounts& counts, float max) override {
    memory.publish(segments, counts, max);
  }
  void write_counts(const scene::DrawCounts& counts) override { memory.write_counts(counts); }
  std::vector<std::optional<model::TensorId>> focus;
  std::vector<bool> with_selection;
  void publish_words(const WordsContext& c) override {
    focus.push_back(c.focus);
    with_selection.push_back(c.selection.has_value());
  }
};

// The legend follows the tensor under the pointer (hover), goes back to the selected tensor when
// the pointer leaves the network, and a hover that stays on the same tensor publishes nothing.
TEST(WorkerScene, LegendFollowsTheHoveredTensorThenTheSelection) {
  WordsRecorder sink;
  Worker w(sink, quiet());
  w.load({"digits", digits}, ones);
  w.wait_idle();
  ASSERT_EQ(sink.focus.size(), 1u);  // the scene's build
  EXPECT_FALSE(sink.focus[0]);
  const model::Graph g = digits();
  const scene::Layout layout = scene::Layout::build(g, {});
  const scene::Block& a = layout.blocks()[1];
  const scene::Block& b = layout.blocks()[layout.blocks().size() - 2];
  const auto pa = layout.position(a.tensor, 0), pb = layout.position(b.tensor, 0);
  w.select({pa[0] + 0.001f, pa[1], pa[2]}, {-1, 0, 0}, 0.001f);
  w.wait_idle();
  ASSERT_EQ(sink.focus.size(), 2u);
  EXPECT_EQ(sink.focus[1], a.tensor);
  EXPECT_TRUE(sink.with_selection[1]);
  w.hover({pb[0] + 0.001f, pb[1], pb[2]}, {-1, 0, 0}, 0.001f);
  w.wait_idle();
  ASSERT_EQ(sink.focus.size(), 3u);
  EXPECT_EQ(sink.focus[2], b.tensor);
  EXPECT_TRUE(sink.with_selection[2]);  // the selection panel stays
  w.hover({pb[0] + 0.001f, pb[1], pb[2]}, {-1, 0, 0}, 0.001f);  // the same tensor: nothing new
  w.wait_idle();
  EXPECT_EQ(sink.focus.size(), 3u);
  w.hover({pb[0], pb[1] + 100.0f, pb[2]}, {0, 1, 0}, 0.001f);  // off the network: the selection again
  w.wait_idle();
  ASSERT_EQ(sink.focus.size(), 4u);
  EXPECT_EQ(sink.focus[3], a.tensor);
  auto events = drain(w);
  EXPECT_TRUE(events_of<Failed>(events).empty());
}

// A view from beside `b` (along +Z, at its depth), looking at its centre.
scene::FocusView looking_at(const scene::Block& b, float spacing) {
  const glm::vec3 lo(b.min[0], b.min[1], b.min[2]), hi(b.max[0], b.max[1], b.max[2]);
  const glm::vec3 centre = 0.5f * (lo + hi);
  const glm::vec3 eye(centre.x, centre.y, hi.z + 2 * spacing);
  const glm::mat4 clip = glm::perspective(glm::radians(60.0f), 1.0f, 0.0001f, 100.0f) * glm::lookAt(eye, centre, {0, 1, 0});
  scene::FocusView v;
  v.eye = {eye.x, eye.y, eye.z};
  for (int c = 0; c < 4; ++c)
    for (int r = 0; r < 4; ++r) v.clip[size_t(4 * c + r)] = clip[c][r];
  v.aim_origin = v.gaze_origin = v.eye;
  v.aim_direction = v.gaze_direction = {0, 0, -1};
  return v;
}

std::vector<std::string> resident_tensors(const model::Graph& g, const scene::InMemorySink& sink, bool with_connections) {
  std::vector<std::string> out;
  for (const scene::Segment& s : sink.segments)
    if (s.neuron_count > 0 && (!with_connections || s.connection_count > 0)) out.push_back(g.tensors[s.tensor].name);
  return out;
}

// The focus follows the view (WorkerOptions::follow_view): the tensor looked at gets points and
// connections; when the viewer moves to another, that one is resident and the first is not; the
// same view again rebuilds nothing.
TEST(WorkerScene, TheFocusFollowsTheView) {
  scene::InMemorySink sink;
  WorkerOptions o = quiet();
  o.follow_view = true;
  o.focus_points = 1;  // the tensor looked at and no more
  o.scene.connections_per_tensor = 50;
  Worker w(sink, o);
  w.load({"digits", digits}, ones);
  auto events = drain(w);
  ASSERT_EQ(events_of<SceneBuilt>(events).size(), 1u);
  EXPECT_TRUE(events_of<SceneBuilt>(events)[0].focus.empty());  // no view yet: every tensor
  const model::Graph g = digits();
  const scene::Layout layout = scene::Layout::build(g, {});
  const float spacing = layout.options().neuron_spacing;
  // Two activations with connections, far apart: the second block and the last.
  const scene::Block& a = layout.blocks()[1];
  const scene::Block& b = layout.blocks().back();
  const std::string name_a = g.tensors[a.tensor].name, name_b = g.tensors[b.tensor].name;
  ASSERT_NE(name_a, name_b);

  w.view(looking_at(a, spacing));
  events = drain(w);
  auto built = events_of<SceneBuilt>(events);
  ASSERT_EQ(built.size(), 1u);
  EXPECT_TRUE(built[0].refocused);
  EXPECT_EQ(built[0].focus, std::vector<std::string>{name_a});
  EXPECT_EQ(resident_tensors(g, sink, true), std::vector<std::string>{name_a});
  for (const scene::Segment& s : sink.segments) EXPECT_LE(s.connection_count, 50u);  // the cap
  const uint64_t generation = sink.generation;

  w.view(looking_at(b, spacing));
  events = drain(w);
  built = events_of<SceneBuilt>(events);
  ASSERT_EQ(built.size(), 1u);
  EXPECT_EQ(built[0].focus, std::vector<std::string>{name_b});
  EXPECT_EQ(resident_tensors(g, sink, true), std::vector<std::string>{name_b});
  const auto resident = resident_tensors(g, sink, false);
  EXPECT_EQ(std::count(resident.begin(), resident.end(), name_a), 0) << "the old focus is no longer resident";
  EXPECT_EQ(sink.generation, generation + 1);

  w.view(looking_at(b, spacing * 1.5f));  // moved a little: same focus, no rebuild
  events = drain(w);
  EXPECT_TRUE(events_of<SceneBuilt>(events).empty());
  EXPECT_EQ(sink.generation, generation + 1);

  // The selection stays in the focus wherever the viewer looks.
  scene::FocusView v = looking_at(b, spacing);
  v.selected = name_a;
  w.view(v);
  events = drain(w);
  built = events_of<SceneBuilt>(events);
  ASSERT_EQ(built.size(), 1u);
  EXPECT_EQ(built[0].focus, (std::vector<std::string>{std::min(name_a, name_b), std::max(name_a, name_b)}));
}

// The focus follows what the viewer points at (the mouse's ray, the controller's aim): looking at
// A while pointing at B puts B in the focus; pointing into empty space falls back to the gaze,
// and B goes again.
TEST(WorkerScene, TheFocusFollowsTheAimRayElseTheGaze) {
  scene::InMemorySink sink;
  WorkerOptions o = quiet();
  o.follow_view = true;
  o.focus_points = 1;  // the tensor pointed at, the nearest in view, no more
  Worker w(sink, o);
  w.load({"digits", digits}, ones);
  (void)drain(w);
  const model::Graph g = digits();
  const scene::Layout layout = scene::Layout::build(g, {});
  const float spacing = layout.options().neuron_spacing;
  const scene::Block& a = layout.blocks()[1];
  const scene::Block& b = layout.blocks().back();
  const std::string name_a = g.tensors[a.tensor].name, name_b = g.tensors[b.tensor].name;
  ASSERT_NE(name_a, name_b);
  // Looking at A while pointing at B's middle element from behind the network (B is the deepest
  // block; a controller held out there).
  scene::FocusView v = looking_at(a, spacing);
  // The gaze: at A's middle element, a little obliquely (a ray within A's plane meets it nowhere).
  const auto middle_a = layout.position(a.tensor, a.elements / 2);
  v.gaze_origin = {middle_a[0] + 0.001f, middle_a[1], middle_a[2] + 0.2f};
  const glm::vec3 gaze = glm::normalize(glm::vec3(-0.001f, 0, -0.2f));
  v.gaze_direction = {gaze.x, gaze.y, gaze.z};
  const auto target = layout.position(b.tensor, b.elements / 2);
  v.aim_origin = {target[0] + 0.5f, target[1], target[2]};
  v.aim_direction = {-1, 0, 0};
  ASSERT_EQ(scene::aimed_tensor(layout, v), b.tensor);
  w.view(v);
  auto events = drain(w);
  auto built = events_of<SceneBuilt>(events);
  ASSERT_EQ(built.size(), 1u);
  EXPECT_TRUE(built[0].refocused);
  EXPECT_EQ(std::count(built[0].focus.begin(), built[0].focus.end(), name_b), 1) << "the tensor pointed at";
  EXPECT_EQ(std::count(built[0].focus.begin(), built[0].focus.end(), name_a), 1) << "the nearest in view";
  auto resident = resident_tensors(g, sink, true);
  EXPECT_EQ(std::count(resident.begin(), resident.end(), name_b), 1) << "B's points and connections are resident";

  // Pointing away from the network: the gaze (at A) chooses, B is no longer resident.
  v.aim_direction = {0, 0, 1};
  ASSERT_EQ(scene::aimed_tensor(layout, v), a.tensor);
  w.view(v);
  events = drain(w);
  built = events_of<SceneBuilt>(events);
  ASSERT_EQ(built.size(), 1u);
  EXPECT_EQ(built[0].focus, std::vector<std::string>{name_a});
  resident = resident_tensors(g, sink, false);
  EXPECT_EQ(std::count(resident.begin(), resident.end(), name_b), 0);

  // No aim ray at all: the same (the gaze), so nothing is rebuilt.
  v.aim_direction = {0, 0, 0};
  w.view(v);
  events = drain(w);
  EXPECT_TRUE(events_of<SceneBuilt>(events).empty());
  EXPECT_TRUE(events_of<Failed>(events).empty());
}

// A per-tensor point cap (SceneOptions::points_per_tensor, which points: SceneBuild tests) holds
// through the worker, and the focus's size counts a tensor at most that many.
TEST(WorkerScene, APointCapKeepsEachTensorsStrongestPoints) {
  const model::Graph g = digits();
  const scene::Layout layout = scene::Layout::build(g, {});
  const scene::Block& big = *std::max_element(layout.blocks().begin(), layout.blocks().end(),
                                              [](const scene::Block& x, const scene::Block& y) { return x.elements < y.elements; });
  ASSERT_GT(big.elements, 100);
  const std::string name = g.tensors[big.tensor].name;
  scene::InMemorySink sink;
  WorkerOptions o = quiet();
  o.scene.focus = {name};
  o.scene.points_per_tensor = 37;
  Worker w(sink, o);
  w.load({"digits", digits}, ones);
  auto events = drain(w);
  ASSERT_TRUE(events_of<Failed>(events).empty());
  ASSERT_EQ(events_of<SceneBuilt>(events).size(), 1u);
  bool seen = false;
  for (const scene::Segment& s : sink.segments) {
    EXPECT_LE(s.neuron_count, 37u) << g.tensors[s.tensor].name;
    if (s.tensor != big.tensor) continue;
    seen = true;
    EXPECT_EQ(s.neuron_count, 37u);
    EXPECT_EQ(s.neuron_total, big.elements);
  }
  EXPECT_TRUE(seen);
  EXPECT_LT(scene::focus_elements(g, layout, {name}, 8, 0, 37), scene::focus_elements(g, layout, {name}, 8, 0, 0));
}

// Compare mode's divergence curve follows the chain: a chain long enough to wrap into rows (each
// row along X from the same start) gives one point per depth, rows laid end to end, not the rows'
// points merged by their shared X. Divergence rising with depth gives a curve rising from the
// network's left end to its right end.
TEST(CompareSummary, AWrappedChainsCurveFollowsItsRowsInOrder) {
  std::string text = "<ir_version: 8, opset_import: [\"\" : 13]>\ng (float[1,8] t0) => (float[1,8] t150) {\n";
  for (int i = 1; i <= 150; ++i) text += "  t" + std::to_string(i) + " = Relu(t" + std::to_string(i - 1) + ")\n";
  text += "}\n";
  const model::Graph g = model::load_model_from_text(text);
  const scene::Layout layout = scene::Layout::build(g, {});
  int rows = 1;
  for (size_t i = 1; i < layout.blocks().size(); ++i) rows += layout.blocks()[i].min[1] != layout.blocks()[i - 1].min[1];
  ASSERT_GE(rows, 3) << "the chain wraps";
  std::vector<std::optional<scene::Divergence>> div(g.tensors.size());
  int activations = 0;
  for (const scene::Block& b : layout.blocks())
    if (g.tensors[b.tensor].kind == model::TensorKind::Activation) {
      div[b.tensor] = scene::Divergence{.rel_l2 = 0.01 * g.tensors[b.tensor].layer};
      ++activations;
    }
  const CompareSummary summary = compare_summary(g, layout, div);
  ASSERT_EQ(int(summary.curve.size()), activations) << "a point per depth";
  for (size_t i = 1; i < summary.curve.size(); ++i) {
    EXPECT_GT(summary.curve[i][0], summary.curve[i - 1][0]);
    EXPECT_GT(summary.curve[i][1], summary.curve[i - 1][1]) << "point " << i << ": in the chain's order";
  }
  const auto lo = layout.bounds_min(), hi = layout.bounds_max();
  EXPECT_GE(summary.curve.front()[0], lo[0]);
  EXPECT_LT(summary.curve.front()[0], lo[0] + 0.05f * (hi[0] - lo[0])) << "the chain starts at the left";
  EXPECT_LE(summary.curve.back()[0], hi[0]);
  EXPECT_GT(summary.curve.back()[0], hi[0] - 0.05f * (hi[0] - lo[0])) << "and ends at the right";

  // One line: each point at its block's X, as before.
  std::string shorter = "<ir_version: 8, opset_import: [\"\" : 13]>\ng (float[1,8] t0) => (float[1,8] t10) {\n";
  for (int i = 1; i <= 10; ++i) shorter += "  t" + std::to_string(i) + " = Relu(t" + std::to_string(i - 1) + ")\n";
  shorter += "}\n";
  const model::Graph h = model::load_model_from_text(shorter);
  const scene::Layout line = scene::Layout::build(h, {});
  std::vector<std::optional<scene::Divergence>> div1(h.tensors.size());
  for (const scene::Block& b : line.blocks()) div1[b.tensor] = scene::Divergence{.rel_l2 = 0.5};
  const CompareSummary one = compare_summary(h, line, div1);
  ASSERT_EQ(one.curve.size(), 10u);
  for (size_t i = 0; i < one.curve.size(); ++i) {
    const scene::Block& b = *line.block(h.find("t" + std::to_string(i + 1)));
    EXPECT_FLOAT_EQ(one.curve[i][0], 0.5f * (b.min[0] + b.max[0]));
  }
}

TEST(WorkerScene, BadModelIsAFailedEventNamingTheFile) {
  scene::InMemorySink sink;
  Worker w(sink, quiet());
  const std::string junk = "not an onnx model";
  w.load({"junk.onnx", [junk] { return model::load_model_from_memory(std::as_bytes(std::span(junk.data(), junk.size())), "junk.onnx"); }}, ones);
  auto events = drain(w);
  const auto failed = events_of<Failed>(events);
  ASSERT_EQ(failed.size(), 1u);
  EXPECT_EQ(failed[0].stage, Stage::Load);
  EXPECT_NE(failed[0].message.find("junk.onnx"), std::string::npos) << failed[0].message;
  EXPECT_EQ(sink.generation, 0u);
}

}  // namespace
}  // namespace nnxr::engine
