// The worker pipeline: one thread that loads a model, runs inference, builds the scene into the
// engine's scene buffers and applies filter changes, from requests posted by the frame thread.
//
//   Worker worker(scene_buffers, {});
//   worker.load({"squeezenet.onnx", [] { return model::load_model("squeezenet.onnx"); }}, inputs);
//   ...frame loop: worker.filter(f); for (auto& e : worker.take_events()) ...; worker.progress();
//
// Requests are kept in one slot per kind (load, input, scene options, filter, selection): a newer
// request of a kind replaces a queued older one, so moving a slider quickly queues one rebuild,
// not fifty. Pending work is done in pipeline order (load → infer → scene → filter → select),
// each stage invalidating the ones after it, so a filter change always applies to the newest
// scene and a selection always refers to the scene that is (or is about to be) published.
//
// Threads: every public member may be called from any thread; they hold an internal mutex for a
// few instructions only (the worker never holds it while it works). progress() reads atomics;
// take_events() uses try_lock and returns nothing when the worker is posting at that instant. The
// caller's thread never waits on the pipeline except in wait_idle() (tests, scripted runs) and
// the destructor, which cancels the stage in progress (at its next progress report, or through
// Stages::cancelled) and drops the rest.
//
// The SceneSink is used from the worker thread only; the Worker does not own it and it must
// outlive the Worker. Model and input sources run on the worker thread.
#pragma once

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include "engine/words.h"
#include "model/graph.h"
#include "model/runtime/runtime.h"
#include "model/scene/compare.h"
#include "model/scene/focus.h"
#include "model/scene/scene.h"
#include "model/scene/tiles.h"

namespace nnxr::engine {

// Tensors for the graph inputs, by input name.
using Feeds = std::map<std::string, model::TensorData>;

// Where a model comes from. `load` runs on the worker thread and throws (std::exception) for a
// model that cannot be loaded; `name` names it in the title and in messages.
struct ModelSource {
  std::string name;
  std::function<model::Graph()> load;
};

// Makes the input tensors for a loaded graph; runs on the worker thread, throws on bad input.
using InputSource = std::function<Feeds(const model::Graph&)>;

enum class Stage : uint8_t { Idle, Load, Infer, Scene, Filter, Select, Focus };
// "idle", "load", "infer", "scene", "filter", "select", "focus"
const char* stage_name(Stage stage);

struct Progress {
  Stage stage = Stage::Idle;
  float fraction = 0;  // of the current stage, 0..1
  bool busy = false;   // a stage runs or work is pending
};

// ---- results, posted by the worker and taken by the frame thread ------------------------------

// A laid-out tensor as the controls need it: to find it by name, step the layer window to it,
// walk to it and list its op.
struct TensorPlace {
  model::TensorId tensor = model::kNone;
  std::string name, node, op;  // node and op empty for graph inputs
  int layer = 0;
  std::array<float, 3> min{}, max{};  // its block's bounds (network space)
};

// The model's op types with their laid-out tensor counts, most first (ties in order of first
// appearance): the filter menu's rows. Inputs (no op) are not counted.
std::vector<std::pair<std::string, int>> op_counts(const std::vector<TensorPlace>& tensors);

struct ModelLoaded {
  std::string name;
  std::array<float, 3> bounds_min{}, bounds_max{};  // network space, metres at scale 1
  float neuron_spacing = 0;
  int layers = 0;
  size_t nodes = 0;
  double milliseconds = 0;  // load + plan + layout
  std::vector<TensorPlace> tensors;  // every laid-out tensor, by layer
  std::vector<std::array<float, 3>> frame_words;  // WorkerOptions::frame_words of the layout
};

// Compare mode: where inputs A and B part ways. `curve` holds, by depth, the largest rel L2
// ‖a_A − a_B‖/‖a_A‖ of the tensors at each depth (x in network space, metres at scale 1; a
// wrapped layout's rows laid end to end in the chain's order and fitted to the network's X extent);
// `most_changed` the tensors with the largest rel L2, most first.
struct CompareSummary {
  std::vector<std::array<float, 2>> curve;
  std::vector<std::pair<std::string, double>> most_changed;
};

// The summary of `divergence` (scene/compare.h, per tensor id) for the tensors `layout` lays out.
CompareSummary compare_summary(const model::Graph& graph, const scene::Layout& layout,
                               const std::vector<std::optional<scene::Divergence>>& divergence);

struct SceneBuilt {
  uint64_t generation = 0;  // 1, 2, ... per successful build
  uint64_t neurons = 0, connections = 0;  // resident
  size_t segments = 0;
  double infer_ms = 0, build_ms = 0;
  scene::BuildStats stats;  // the scene build's own breakdown
  // refreshed: the last scene's elements with this inference's (or comparison side's) values
  // (scene::Scene::refresh); an exact build follows when the worker is otherwise idle, posted
  // with `refined` set (it shows the same input, with the top-K chosen for it).
  bool refreshed = false, refined = false;
  std::optional<CompareSummary> compare;  // compare mode only
  scene::ImagesStats images;  // the run's activation images (every activation; zero without an image sink)
  std::vector<std::string> focus;  // the tensors with points and connections (empty: every tensor)
  bool refocused = false;  // built because the view's focus changed (same inference, same input)
};

// A filter's counts were written to the sink (the frame after this shows them).
struct CountsApplied {
  uint64_t serial = 0;      // of the filter() request
  uint64_t generation = 0;  // scene they apply to
  uint64_t neurons = 0, connections = 0;  // drawn with this filter
};

// What a pick ray hit. `neuron` is set when the element is resident in the scene buffers; then
// `trace` holds the neurons and connections that fed it (for the renderer's highlight).
struct Selection {
  model::TensorId tensor = model::kNone;
  int64_t element = 0;
  std::string tensor_name, node_name, op_type;  // node/op empty for inputs and weights
  std::vector<int64_t> index;
  float value = 0;
  std::optional<uint32_t> neuron;
  scene::Trace trace;
  // The path that fed it (scene::upstream_tensors): the laid-out tensors it was computed from,
  // its own first; for "isolate the path" in the filter menu.
  std::vector<model::TensorId> path;
  std::vector<std::string> path_names;
};

struct Selected {
  uint64_t serial = 0;                 // of the select() request
  uint64_t generation = 0;             // scene the neuron indices refer to
  std::optional<Selection> selection;  // nullopt: the ray hit nothing
};

struct Failed {
  Stage stage = Stage::Idle;
  std::string message;  // one line
};

struct Warning {
  std::string message;  // one line; the pipeline went on (e.g. unsupported ops)
};

using WorkerEvent = std::variant<ModelLoaded, SceneBuilt, CountsApplied, Selected, Failed, Warning>;

// Compare mode (`view --compare`): input B runs in a second session beside each input A (once
// per model: B does not change when A does), and every build shows what `show` says then: A, B
// or the difference a_A − a_B (scene/compare.h). Flipping needs a rebuild, never an inference.
struct CompareOptions {
  InputSource b;  // empty: no comparison
  std::shared_ptr<std::atomic<scene::CompareShow>> show = std::make_shared<std::atomic<scene::CompareShow>>(scene::CompareShow::Difference);
};

// Several inputs a viewer steps through (←/→ on the desktop, X/Y in the headset): the name and
// the source of each. Entry 0 is the input the model was loaded with.
struct InputList {
  std::vector<std::string> names;
  std::function<InputSource(size_t index)> source;
};

struct WorkerOptions {
  int threads = 1;                    // inference and scene-build threads
  scene::LayoutOptions layout;
  scene::SceneOptions scene;          // top_k, budget (progress is set by the worker)
  ViewWords words;                    // title, notes and class names for the view's text
  bool print_progress = true;         // stage lines on stderr for work longer than print_after_ms
  double print_after_ms = 500;
  CompareOptions compare;             // input B, and what a build shows
  InputList inputs;                   // read by the viewer (ViewerState), not by the pipeline
  // Limits for every inference (deadline, Loop/Scan cap, a cancel flag such as Ctrl-C's): a run
  // they stop fails its stage with their message. The worker's own shutdown flag is added to them.
  runtime::RunOptions run;
  // The focus follows the view (Worker::view()) unless scene.focus names a fixed one: each build
  // gives points and connections to the tensors chosen for the newest view (scene/focus.h), up
  // to focus_points neurons (0: half the budget), and a new view whose choice differs rebuilds.
  bool follow_view = false;
  uint64_t focus_points = 0;
  // Points the home view and the headset's placement hold besides the blocks' corners, as render
  // frames them (the app passes engine::words_to_frame: a wrapped layout's group labels); unset:
  // none.
  std::function<std::vector<std::array<float, 3>>(const model::Graph&, const scene::Layout&)> frame_words;
};

// Thrown from a stage's progress callback once the Worker is being destroyed; the stage unwinds
// and nothing is posted. Stages may throw it themselves when they see Stages::cancelled set.
class StageCancelled : public std::runtime_error {
 public:
  StageCancelled() : std::runtime_error("cancelled") {}
};

// The work behind each stage, run on the worker thread only. SceneStages (below) is the real
// pipeline; tests substitute their own to control timing. A stage throws std::exception to fail
// (the Worker posts Failed and carries on); `progress` takes 0..1 of the current stage.
class Stages {
 public:
  using ProgressFn = std::function<void(float)>;
  using PostFn = std::function<void(WorkerEvent)>;
  virtual ~Stages() = default;
  // Set by the Worker before its thread starts; true once the Worker is being destroyed. A stage
  // that runs long without reporting progress (inference) polls it or hands it on.
  const std::atomic<bool>* cancelled = nullptr;
  // Loads and lays out a model; on success it replaces the current one.
  virtual void load(const ModelSource& model, const ProgressFn& progress, const PostFn& post) = 0;
  // Runs inference on the current model. Returns false when there is no model yet.
  virtual bool infer(const InputSource& input, const ProgressFn& progress, const PostFn& post) = 0;
  // Builds and publishes the scene of the last inference with `filter` applied. Returns false
  // when there is nothing inferred yet.
  virtual bool build(const scene::SceneOptions& options, const scene::Filter& filter, uint64_t filter_serial,
                     const ProgressFn& progress, const PostFn& post) = 0;
  // Shows the last inference (or the comparison side now asked for) on the current scene's
  // elements (scene::Scene::refresh) when that scene fits it (same model, layout and options),
  // in a fraction of a build's time. Returns false when a build is needed instead; after a true,
  // the Worker asks for refine() once nothing else is pending.
  virtual bool refresh(const scene::SceneOptions& options, const scene::Filter& filter, uint64_t filter_serial,
                       const PostFn& post) {
    (void)options, (void)filter, (void)filter_serial, (void)post;
    return false;
  }
  // The exact build after a refresh: like build(), but the refreshed scene stays usable until the
  // new one is published, and the Worker abandons it (through `progress`) as soon as a newer
  // input, comparison side, model or rebuild is asked for.
  virtual bool refine(const scene::SceneOptions& options, const scene::Filter& filter, uint64_t filter_serial,
                      const ProgressFn& progress, const PostFn& post) {
    return build(options, filter, filter_serial, progress, post);
  }
  // Applies a filter to the current scene. Returns false when there is no scene yet.
  virtual bool filter(const scene::Filter& filter, uint64_t serial, const PostFn& post) = 0;
  virtual void select(std::array<float, 3> origin, std::array<float, 3> direction, float radius, uint64_t serial,
                      const PostFn& post) = 0;
  // Points the legend at the tensor under the ray (nothing posted); a miss goes back to the
  // selected tensor. Stages without words ignore it.
  virtual void hover(std::array<float, 3> /*origin*/, std::array<float, 3> /*direction*/, float /*radius*/) {}
  // The viewer's newest view (set by the Worker before Scene and Focus stages; nullopt: none yet).
  std::optional<scene::FocusView> view;
  // Re-chooses the focus for `view`; when the choice differs from the scene's, rebuilds and
  // publishes as build() does. Returns whether it rebuilt. By default nothing depends on the view.
  virtual bool refocus(const scene::SceneOptions&, const scene::Filter&, uint64_t, const ProgressFn&, const PostFn&) {
    return false;
  }
};

// The real pipeline: model/ loader → runtime::Session → scene::Layout/Scene → `sink`. The sink
// must outlive it; it is called from the worker thread only.
std::unique_ptr<Stages> make_scene_stages(scene::SceneSink& sink, const WorkerOptions& options);

class Worker {
 public:
  Worker(scene::SceneSink& sink, WorkerOptions options);
  Worker(std::unique_ptr<Stages> stages, WorkerOptions options);
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  // Replaces the model (and, when given, the input source). The previous model stays shown until
  // the new scene is published; if loading fails it stays for good and a Failed event is posted.
  void load(ModelSource model, InputSource input = {});
  // Replaces the input and reruns inference and the scene build.
  void set_input(InputSource input);
  // Rebuilds the scene with another connection fan-in / element budget.
  void rebuild(int top_k, uint64_t budget);
  // Shows the last inference again as it is (after options().compare.show changed): a refresh of
  // the current scene where it fits (Stages::refresh), else a build.
  void rebuild();
  // Runs inference on the current input again, then rebuilds: for a sink that was replaced (a
  // viewer moved to another GPU), which needs the activation images and the scene written anew.
  // The model stays loaded.
  void reinfer();
  const WorkerOptions& options() const { return options_; }
  // Applies a filter to the current scene (and to every later one). Returns its serial.
  uint64_t filter(scene::Filter filter);
  // Picks along a ray in network space (the caller undoes the world transform). Returns its serial.
  uint64_t select(std::array<float, 3> origin, std::array<float, 3> direction, float radius);
  // The ray the user points along (desktop: through the mouse; headset: the aim ray), in network
  // space: the legend follows the tensor it hits. Only the newest is kept; runs after the rest.
  void hover(std::array<float, 3> origin, std::array<float, 3> direction, float radius);
  // Where the viewer looks now (network space). With WorkerOptions::follow_view the focus is
  // re-chosen for it after any other pending work; a newer view replaces a queued one.
  void view(scene::FocusView view);

  Progress progress() const;
  // Events posted since the last call, oldest first; empty when none or when the worker holds
  // the mailbox at this instant (they come next time).
  std::vector<WorkerEvent> take_events();
  // Blocks until no stage runs and nothing is pending. Not for the frame thread.
  void wait_idle();

 private:
  struct Pending;
  void run();
  bool next(Stage& stage);
  void run_stage(Stage stage);
  void post(WorkerEvent event);
  void set_stage(Stage stage, float fraction);

  std::unique_ptr<Stages> stages_;
  WorkerOptions options_;

  mutable std::mutex mutex_;  // guards pending_, stopping_, working_
  std::condition_variable wake_;
  std::condition_variable idle_;
  std::unique_ptr<Pending> pending_;
  bool stopping_ = false;
  bool working_ = false;

  std::mutex events_mutex_;
  std::vector<WorkerEvent> events_;

  std::atomic<Stage> stage_{Stage::Idle};
  std::atomic<float> fraction_{0};
  std::atomic<bool> busy_{false};
  std::atomic<bool> cancel_{false};  // the destructor runs: the running stage gives up
  std::atomic<uint64_t> filter_serial_{0}, select_serial_{0};
  std::atomic<uint64_t> requests_{0};  // loads, inputs and rebuilds asked for: a refine gives way to them

  // Worker thread only: what the stage about to run takes.
  struct Taken;
  std::unique_ptr<Taken> taken_;
  std::thread thread_;  // last: started once everything above exists
};

}  // namespace nnxr::engine
