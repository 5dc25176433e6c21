#include "engine/worker.h"

#include <chrono>
#include <cstdio>
#include <exception>
#include <new>
#include <utility>

namespace nnxr::engine {
namespace {

using Clock = std::chrono::steady_clock;

std::string one_line(std::string text) {
  for (char& c : text)
    if (c == '\n' || c == '\r') c = ' ';
  return text;
}

}  // namespace

const char* stage_name(Stage stage) {
  switch (stage) {
    case Stage::Idle: return "idle";
    case Stage::Load: return "load";
    case Stage::Infer: return "infer";
    case Stage::Scene: return "scene";
    case Stage::Filter: return "filter";
    case Stage::Select: return "select";
    case Stage::Focus: return "focus";
  }
  return "?";
}

struct Ray3 {
  std::array<float, 3> origin{}, direction{};
  float radius = 0;
  uint64_t serial = 0;
};

// Requests not yet taken by the worker, one slot per kind, and the stages that finished stages
// invalidated. Guarded by Worker::mutex_.
struct Worker::Pending {
  std::optional<ModelSource> model;
  InputSource model_input;  // comes with `model`; may be empty
  std::optional<InputSource> input;
  std::optional<std::pair<int, uint64_t>> rebuild;
  std::optional<std::pair<scene::Filter, uint64_t>> filter;
  std::optional<Ray3> select;
  std::optional<Ray3> hover;
  std::optional<scene::FocusView> view;
  bool need_infer = false, need_scene = false;
  bool need_refine = false;  // the scene was refreshed: an exact build when nothing else waits
  bool no_refresh = false;   // the next scene is built, not refreshed (reinfer(): a new sink)

  bool any() const {
    return model || input || rebuild || filter || select || hover || view || need_infer || need_scene || need_refine;
  }
};

// The pipeline's parameters as of the stage about to run. Worker thread only.
struct Worker::Taken {
  std::optional<ModelSource> model;
  InputSource model_input;
  InputSource input;
  scene::SceneOptions scene_options;
  scene::Filter filter;
  uint64_t filter_serial = 0;
  Ray3 select;
  bool refine = false;  // the Scene stage taken is the exact build after a refresh
  bool no_refresh = false;  // the Scene stage taken builds (Pending::no_refresh)
  std::optional<Ray3> hover;  // set: the Select stage runs this hover instead of a pick
};

// Thrown from a refine's progress when a newer request came in; nothing is posted.
class Superseded : public StageCancelled {};

Worker::Worker(std::unique_ptr<Stages> stages, WorkerOptions options)
    : stages_(std::move(stages)), options_(std::move(options)), pending_(std::make_unique<Pending>()),
      taken_(std::make_unique<Taken>()) {
  taken_->scene_options = options_.scene;
  taken_->scene_options.threads = std::max(1, options_.threads);
  stages_->cancelled = &cancel_;
  thread_ = std::thread([this] { run(); });
}

Worker::~Worker() {
  cancel_ = true;
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void Worker::load(ModelSource model, InputSource input) {
  {
    std::lock_guard lock(mutex_);
    ++requests_;
    pending_->model = std::move(model);
    pending_->model_input = std::move(input);
    busy_ = true;
  }
  wake_.notify_one();
}

void Worker::set_input(InputSource input) {
  {
    std::lock_guard lock(mutex_);
    ++requests_;
    pending_->input = std::move(input);
    busy_ = true;
  }
  wake_.notify_one();
}

void Worker::rebuild(int top_k, uint64_t budget) {
  {
    std::lock_guard lock(mutex_);
    ++requests_;
    pending_->rebuild = {top_k, budget};
    busy_ = true;
  }
  wake_.notify_one();
}

void Worker::rebuild() {
  {
    std::lock_guard lock(mutex_);
    ++requests_;
    pending_->need_scene = true;
    busy_ = true;
  }
  wake_.notify_one();
}

void Worker::reinfer() {
  {
    std::lock_guard lock(mutex_);
    ++requests_;
    pending_->no_refresh = true;  // everything is written anew, exactly
    pending_->need_infer = true;
    busy_ = true;
  }
  wake_.notify_one();
}

uint64_t Worker::filter(scene::Filter filter) {
  std::lock_guard lock(mutex_);
  const uint64_t serial = ++filter_serial_;
  pending_->filter = {std::move(filter), serial};
  busy_ = true;
  wake_.notify_one();
  return serial;
}

void Worker::view(scene::FocusView view) {
  {
    std::lock_guard lock(mutex_);
    pending_->view = std::move(view);
    busy_ = true;
  }
  wake_.notify_one();
}

uint64_t Worker::select(std::array<float, 3> origin, std::array<float, 3> direction, float radius) {
  std::lock_guard lock(mutex_);
  const uint64_t serial = ++select_serial_;
  pending_->select = Ray3{origin, direction, radius, serial};
  busy_ = true;
  wake_.notify_one();
  return serial;
}

void Worker::hover(std::array<float, 3> origin, std::array<float, 3> direction, float radius) {
  std::lock_guard lock(mutex_);
  pending_->hover = Ray3{origin, direction, radius, 0};
  busy_ = true;
  wake_.notify_one();
}

Progress Worker::progress() const {
  return {stage_.load(std::memory_order_relaxed), fraction_.load(std::memory_order_relaxed), busy_.load()};
}

std::vector<WorkerEvent> Worker::take_events() {
  std::vector<WorkerEvent> out;
  std::unique_lock lock(events_mutex_, std::try_to_lock);
  if (lock.owns_lock()) out.swap(events_);
  return out;
}

void Worker::wait_idle() {
  std::unique_lock lock(mutex_);
  idle_.wait(lock, [this] { return stopping_ || (!working_ && !pending_->any()); });
}

void Worker::post(WorkerEvent event) {
  std::lock_guard lock(events_mutex_);
  events_.push_back(std::move(event));
}

void Worker::set_stage(Stage stage, float fraction) {
  stage_.store(stage, std::memory_order_relaxed);
  fraction_.store(fraction, std::memory_order_relaxed);
}

// Takes the earliest pending stage in pipeline order with its parameters; false on stop.
bool Worker::next(Stage& stage) {
  std::unique_lock lock(mutex_);
  working_ = false;
  if (!pending_->any()) {
    busy_ = false;
    idle_.notify_all();
  }
  wake_.wait(lock, [this] { return stopping_ || pending_->any(); });
  if (stopping_) return false;
  working_ = true;
  busy_ = true;
  Pending& p = *pending_;
  Taken& t = *taken_;
  if (p.model) {
    stage = Stage::Load;
    t.model = std::move(p.model);
    t.model_input = std::move(p.model_input);
    p.model.reset();
    p.model_input = {};
  } else if (p.input || p.need_infer) {
    stage = Stage::Infer;
    if (p.input) t.input = std::move(*p.input);
    p.input.reset();
    p.need_infer = false;
  } else if (p.rebuild || p.need_scene) {
    stage = Stage::Scene;
    t.refine = false;
    t.no_refresh = std::exchange(p.no_refresh, false);
    if (p.rebuild) {
      t.scene_options.top_k = p.rebuild->first;
      t.scene_options.budget = p.rebuild->second;
    }
    p.rebuild.reset();
    p.need_scene = false;
  } else if (p.filter) {
    // Taken here, and also read by Scene below: a build always applies the newest filter.
    stage = Stage::Filter;
    t.filter = std::move(p.filter->first);
    t.filter_serial = p.filter->second;
    p.filter.reset();
  } else if (p.select) {
    stage = Stage::Select;
    t.select = *p.select;
    p.select.reset();
  } else if (p.hover) {
    stage = Stage::Select;  // a hover: a pick that only moves the legend
    t.hover = *p.hover;
    p.hover.reset();
  } else if (p.need_refine) {
    stage = Stage::Scene;
    t.refine = true;
    p.need_refine = false;
  } else {
    stage = Stage::Focus;
  }
  // A build chooses its focus for the newest view, so a scene build takes the view too.
  if ((stage == Stage::Scene || stage == Stage::Focus) && p.view) {
    stages_->view = std::move(p.view);
    p.view.reset();
  }
  if (stage == Stage::Scene && p.filter) {  // the build applies it; no separate filter stage
    t.filter = std::move(p.filter->first);
    t.filter_serial = p.filter->second;
    p.filter.reset();
  }
  return true;
}

void Worker::run_stage(Stage stage) {
  Taken& t = *taken_;
  const auto start = Clock::now();
  float printed = -1;
  const bool refining = stage == Stage::Scene && t.refine;
  const uint64_t requests = requests_.load();
  auto progress = [&](float f) {
    if (cancel_.load(std::memory_order_relaxed)) throw StageCancelled();
    if (refining && requests_.load(std::memory_order_relaxed) != requests) throw Superseded();
    set_stage(stage, f);
    if (!options_.print_progress || f - printed < 0.1f) return;
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
    if (ms < options_.print_after_ms) return;
    printed = f;
    std::fprintf(stderr, "nnxr: %s %d%%\n", stage_name(stage), static_cast<int>(f * 100));
  };
  auto post = [this](WorkerEvent e) { this->post(std::move(e)); };
  auto invalidate = [this](bool Pending::*flag) {
    std::lock_guard lock(mutex_);
    pending_.get()->*flag = true;
  };
  switch (stage) {
    case Stage::Load: {
      ModelSource model = std::move(*t.model);
      t.model.reset();
      InputSource input = std::move(t.model_input);
      stages_->load(model, progress, post);
      if (input) t.input = std::move(input);  // only once the model it belongs to is in
      invalidate(&Pending::need_infer);
      break;
    }
    case Stage::Infer:
      if (stages_->infer(t.input, progress, post)) invalidate(&Pending::need_scene);
      break;
    case Stage::Scene:
      if (t.refine) stages_->refine(t.scene_options, t.filter, t.filter_serial, progress, post);
      else if (!t.no_refresh && stages_->refresh(t.scene_options, t.filter, t.filter_serial, post)) invalidate(&Pending::need_refine);
      else {
        {
          std::lock_guard lock(mutex_);
          pending_->need_refine = false;  // this build is exact
        }
        stages_->build(t.scene_options, t.filter, t.filter_serial, progress, post);
      }
      break;
    case Stage::Filter: stages_->filter(t.filter, t.filter_serial, post); break;
    case Stage::Select:
      if (t.hover) {
        const Ray3 h = *t.hover;
        t.hover.reset();
        stages_->hover(h.origin, h.direction, h.radius);
      } else {
        stages_->select(t.select.origin, t.select.direction, t.select.radius, t.select.serial, post);
      }
      break;
    case Stage::Focus: stages_->refocus(t.scene_options, t.filter, t.filter_serial, progress, post); break;
    case Stage::Idle: break;
  }
  const double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  if (options_.print_progress && ms >= options_.print_after_ms)
    std::fprintf(stderr, "nnxr: %s done in %.1f s\n", stage_name(stage), ms / 1000.0);
}

void Worker::run() {
  Stage stage = Stage::Idle;
  while (next(stage)) {
    set_stage(stage, 0);
    try {
      run_stage(stage);
    } catch (const Superseded&) {
      // A refine gave way to a newer request, which asks for its own when it needs one.
    } catch (const StageCancelled&) {
      // The Worker is being destroyed: nobody takes events any more.
    } catch (const std::bad_alloc&) {
      post(Failed{stage, std::string(stage_name(stage)) + ": out of memory"});
    } catch (const std::exception& e) {
      post(Failed{stage, one_line(e.what())});
    }
    set_stage(Stage::Idle, 0);
  }
  std::lock_guard lock(mutex_);
  working_ = false;
  busy_ = false;
  idle_.notify_all();
}

}  // namespace nnxr::engine
