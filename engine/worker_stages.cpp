// The real pipeline behind the Worker: model/ loader → runtime::Session → scene::Layout/Scene →
// the engine's SceneSink.
#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <span>

#include "engine/worker.h"
#include "model/half.h"
#include "model/runtime/runtime.h"
#include "model/scene/tiles.h"

namespace nnxr::engine {
namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) { return std::chrono::duration<double, std::milli>(Clock::now() - start).count(); }

// The laid-out tensors of `graph` with their names, ops and bounds.
std::vector<TensorPlace> tensor_places(const model::Graph& graph, const scene::Layout& layout) {
  std::vector<TensorPlace> out;
  out.reserve(layout.blocks().size());
  for (const scene::Block& b : layout.blocks()) {
    if (b.tensor >= graph.tensors.size()) continue;
    const model::Tensor& t = graph.tensors[b.tensor];
    TensorPlace p{.tensor = b.tensor, .name = t.name, .node = {}, .op = {}, .layer = b.layer, .min = b.min, .max = b.max};
    if (t.producer != model::kNone && t.producer < graph.nodes.size()) {
      p.node = graph.nodes[t.producer].name;
      p.op = graph.nodes[t.producer].op_type;
    }
    out.push_back(std::move(p));
  }
  return out;
}

uint64_t sum(const std::vector<uint32_t>& v) { return std::accumulate(v.begin(), v.end(), uint64_t{0}); }

// Holds back the publish of a build so that its first counts are those of the current filter:
// Scene::build publishes unfiltered counts, and the scene's counts() exist only once it returns.
class HeldPublish final : public scene::SceneSink {
 public:
  explicit HeldPublish(scene::SceneSink& target) : target_(target) {}
  std::span<scene::Neuron> neurons(uint64_t count) override { return target_.neurons(count); }
  std::span<scene::Connection> connections(uint64_t count) override { return target_.connections(count); }
  void publish(std::span<const scene::Segment> segments, const scene::DrawCounts&, float max_contribution) override {
    segments_.assign(segments.begin(), segments.end());
    max_contribution_ = max_contribution;
    published_ = true;
  }
  void write_counts(const scene::DrawCounts& counts) override { target_.write_counts(counts); }

  // Publishes what build() wrote, with `counts`.
  void release(const scene::DrawCounts& counts) {
    if (published_) target_.publish(segments_, counts, max_contribution_);
  }

 private:
  scene::SceneSink& target_;
  std::vector<scene::Segment> segments_;
  float max_contribution_ = 0;
  bool published_ = false;
};

class SceneStages final : public Stages {
 public:
  SceneStages(scene::SceneSink& sink, const WorkerOptions& options)
      : sink_(sink), words_(dynamic_cast<WordsSink*>(&sink)), options_(options) {}

  void load(const ModelSource& model, const ProgressFn& progress, const PostFn& post) override {
    const auto start = Clock::now();
    if (!model.load) throw std::runtime_error(model.name + ": no loader given");
    model::Graph graph = model.load();
    progress(0.4f);
    auto plan = runtime::Plan::build(std::move(graph));
    progress(0.6f);
    scene::Layout layout = scene::Layout::build(plan->graph(), options_.layout);
    progress(0.9f);
    auto session = std::make_unique<runtime::Session>(plan, runtime::SessionOptions{.threads = std::max(1, options_.threads)});
    std::unique_ptr<runtime::Session> session_b;
    if (options_.compare.b)
      session_b = std::make_unique<runtime::Session>(plan, runtime::SessionOptions{.threads = std::max(1, options_.threads)});

    // Committed. The old scene stays in the sink (and on screen) until the new one is
    // published, but it can no longer be filtered or picked.
    scene_.reset();
    point_focus_.clear();
    inferred_ = false;
    images_stale_ = true;
    drop_images(true);
    tile_pictures_.reset();
    picture_points_.clear();
    ++layout_serial_;
    session_ = std::move(session);
    session_b_ = std::move(session_b);
    b_inferred_ = false;
    layout_ = std::move(layout);
    plan_ = std::move(plan);
    name_ = model.name;
    const model::Graph& g = plan_->graph();
    ModelLoaded loaded{.name = name_,
                       .bounds_min = layout_->bounds_min(),
                       .bounds_max = layout_->bounds_max(),
                       .neuron_spacing = layout_->options().neuron_spacing,
                       .layers = g.layer_count,
                       .nodes = g.nodes.size(),
                       .milliseconds = ms_since(start),
                       .tensors = tensor_places(g, *layout_),
                       .frame_words = options_.frame_words ? options_.frame_words(g, *layout_) : std::vector<std::array<float, 3>>{}};
    // Tensors whose shape only a run can tell are laid out after each inference; the model's
    // bounds are announced once the first run has told them.
    layout_needs_run_ = scene::Layout::needs_run(g);
    pending_loaded_.reset();
    if (layout_needs_run_) pending_loaded_ = std::move(loaded);
    else post(std::move(loaded));
    if (!plan_->unsupported().empty()) {
      std::string ops;
      for (const auto& u : plan_->unsupported()) ops += (ops.empty() ? "" : ", ") + u.op_type + " x" + std::to_string(u.count);
      post(Warning{name_ + ": the runtime cannot execute " + ops + "; what depends on them stays dark"});
    }
  }

  bool infer(const InputSource& input, const ProgressFn& progress, const PostFn& post) override {
    if (!session_) return false;  // the input waits for a model
    if (!input) throw std::runtime_error(name_ + ": no input given");
    const auto start = Clock::now();
    // The input first: one that cannot be read (a file gone meanwhile) keeps the previous
    // inference and scene as they are.
    const Feeds feeds = input(plan_->graph());
    // The scene stays: its elements are refreshed with this run's values (or rebuilt). Until
    // then it shows the previous input, and filters and picks apply to that.
    inferred_ = false;
    images_stale_ = true;
    drop_images(layout_needs_run_);  // A's and A − B's; B's too when the layout follows the run
    tile_pictures_.reset();  // asked again: an image dropped on a view of random values is a picture now
    for (const auto& [name, t] : feeds) session_->set_input(name, t.dtype, t.shape, t.bytes);
    progress(0.1f);  // throws StageCancelled once the Worker is being destroyed
    try {
      session_->run(run_options());  // stops between nodes on ~Worker, at the limits
    } catch (const runtime::CancelledError& e) {
      cancelled_by(e);
    } catch (const runtime::UnsupportedError& e) {
      post(Warning{e.what()});  // what could run did; the rest stays dark
    }
    for (const std::string& line : runtime::non_finite_report(*session_, 4)) post(Warning{name_ + ": " + line});
    if (session_b_) infer_b(feeds, post);
    if (layout_needs_run_) {
      const scene::Activations values = scene::activations_of(*session_);
      layout_ = scene::Layout::build(plan_->graph(), options_.layout, &values);
      ++layout_serial_;  // a scene on the previous layout cannot be refreshed
      if (pending_loaded_) {
        pending_loaded_->bounds_min = layout_->bounds_min();
        pending_loaded_->bounds_max = layout_->bounds_max();
        pending_loaded_->tensors = tensor_places(plan_->graph(), *layout_);
        if (options_.frame_words) pending_loaded_->frame_words = options_.frame_words(plan_->graph(), *layout_);
        post(std::move(*pending_loaded_));
        pending_loaded_.reset();
      }
    }
    infer_ms_ = ms_since(start);
    inferred_ = true;
    return true;
  }

  bool build(const scene::SceneOptions& options, const scene::Filter& filter, uint64_t filter_serial,
             const ProgressFn& progress, const PostFn& post) override {
    if (!inferred_) return false;
    scene_.reset();  // its memory goes before the new scene's comes
    return build_scene(options, choose_focus(options), filter, filter_serial, progress, post, false, false);
  }

  bool refine(const scene::SceneOptions& options, const scene::Filter& filter, uint64_t filter_serial,
              const ProgressFn& progress, const PostFn& post) override {
    if (!inferred_) return false;
    // scene_ stays until then
    return build_scene(options, choose_focus(options), filter, filter_serial, progress, post, true, false);
  }

  bool refocus(const scene::SceneOptions& options, const scene::Filter& filter, uint64_t filter_serial,
               const ProgressFn& progress, const PostFn& post) override {
    if (!inferred_ || !scene_) return false;
    std::vector<std::string> focus = choose_focus(options);
    if (focus == point_focus_) return false;
    scene_.reset();
    return build_scene(options, std::move(focus), filter, filter_serial, progress, post, false, true);
  }

  bool refresh(const scene::SceneOptions& options, const scene::Filter& filter, uint64_t filter_serial,
               const PostFn& post) override {
    if (!inferred_ || !scene_ || scene_layout_serial_ != layout_serial_ || options.top_k != scene_options_.top_k ||
        options.budget != scene_options_.budget || options.focus != scene_options_.focus)
      return false;
    const auto start = Clock::now();
    const scene::Activations values = shown_values();
    HeldPublish held(sink_);
    try {
      scene_->refresh(*layout_, values, held, std::max(1, options.threads));
    } catch (const std::invalid_argument&) {
      return false;  // values shaped unlike the scene's: the caller builds (nothing was changed)
    }
    publish(held, values, filter, filter_serial, start, post, true, false);
    return true;
  }

  bool filter(const scene::Filter& filter, uint64_t serial, const PostFn& post) override {
    if (!scene_) return false;
    scene::DrawCounts counts = scene_->counts(filter);
    scene::drop_points(counts, scene_->segments(), picture_points_);
    sink_.write_counts(counts);
    write_image_filter(filter);
    post(CountsApplied{serial, generation_, sum(counts.neurons), sum(counts.connections)});
    filter_ = filter;
    // The menu shows the filter: its text follows (after the counts, which show next frame).
    if (options_.words.menu) publish_words(words_values(), focus_, selection_text_);
    return true;
  }

  void select(std::array<float, 3> origin, std::array<float, 3> direction, float radius, uint64_t serial,
              const PostFn& post) override {
    Selected out{.serial = serial, .generation = generation_};
    const auto hit = scene_ && layout_ ? layout_->pick(origin, direction, radius) : std::nullopt;
    if (hit) out.selection = describe(hit->tensor, hit->element);
    selected_ = out.selection;
    if (scene_ && words_) {
      std::optional<SelectionText> text;
      if (out.selection) {
        const Selection& s = *out.selection;
        text = SelectionText{s.tensor_name, s.op_type, s.node_name, s.index, s.value, {}};
        const model::Graph& g = plan_->graph();
        if (const model::NodeId p = g.tensors[s.tensor].producer; p != model::kNone)
          for (model::TensorId in : g.nodes[p].inputs)
            if (in != model::kNone && g.tensors[in].kind != model::TensorKind::Initializer) text->fed_by.push_back(g.tensors[in].name);
      }
      const std::optional<model::TensorId> picked = out.selection ? std::optional(out.selection->tensor) : std::nullopt;
      publish_words(scene::activations_of(*session_), hovered_ ? hovered_ : picked, text);
    }
    post(std::move(out));
  }

  void hover(std::array<float, 3> origin, std::array<float, 3> direction, float radius) override {
    if (!scene_ || !layout_ || !words_) return;
    const auto hit = layout_->pick(origin, direction, radius);
    const std::optional<model::TensorId> tensor = hit ? std::optional(hit->tensor) : std::nullopt;
    if (tensor == hovered_) return;  // the legend already shows it
    hovered_ = tensor;
    const std::optional<model::TensorId> picked = selected_ ? std::optional(selected_->tensor) : std::nullopt;
    publish_words(words_values(), hovered_ ? hovered_ : picked, selection_text_);
  }

 private:
  // The options of every inference: the viewer's limits plus the worker's shutdown flag.
  runtime::RunOptions run_options() const {
    runtime::RunOptions o = options_.run;
    o.cancel_too = cancelled;
    return o;
  }

  // A run stopped by its options: quietly when the Worker is being destroyed, else the stage
  // fails with the reason (Ctrl-C, the timeout).
  [[noreturn]] void cancelled_by(const runtime::CancelledError& e) const {
    if (cancelled && cancelled->load()) throw StageCancelled();
    throw std::runtime_error(name_ + ": " + e.what());
  }

  // What a scene shows: A's run, or in compare mode B's or the difference a_A − a_B.
  scene::Activations shown_values() {
    scene::Activations values = scene::activations_of(*session_);
    if (session_b_ && b_inferred_) {
      switch (options_.compare.show->load()) {
        case scene::CompareShow::A: break;
        case scene::CompareShow::B: values = scene::activations_of(*session_b_); break;
        case scene::CompareShow::Difference:
          values = scene::difference(plan_->graph(), values, scene::activations_of(*session_b_), difference_);
          break;
      }
    }
    return values;
  }

  // The focus of the next build: the fixed one (SceneOptions::focus), else the tensors chosen for
  // the newest view, else (no view yet, or nothing in view) the current one.
  std::vector<std::string> choose_focus(const scene::SceneOptions& options) const {
    if (!options.focus.empty() || !options_.follow_view || !view || !layout_) return options.focus;
    const uint64_t points = options_.focus_points ? options_.focus_points : std::max<uint64_t>(options.budget / 2, 1);
    std::vector<std::string> focus = scene::choose_focus(plan_->graph(), *layout_, *view, points, options.points_per_tensor);
    if (focus.size() == layout_->blocks().size()) return {};  // all of it: as without a focus
    return focus.empty() ? point_focus_ : focus;
  }

  // The image input whose tiles show the picture in its true colours, from the view's words (the
  // input picture's tensor and preprocessing), once per model.
  const std::vector<scene::ImagePicture>& tile_pictures(const scene::Activations& values) {
    if (!tile_pictures_) {
      tile_pictures_.emplace();
      const model::Graph& g = plan_->graph();
      ViewWords w = options_.words;
      if (w.complete) w.complete(g, scene::class_count(g, values), w);
      if (w.picture)
        if (const model::TensorId id = g.find(w.picture->input); id != model::kNone)
          tile_pictures_->push_back({id, w.picture->mapping});
    }
    return *tile_pictures_;
  }

  // The kept images whose values change: A's and A − B's on a new input, B's as well on a new
  // model (or a layout that follows the run).
  void drop_images(bool all) {
    scene::ImageSink* images = sink_.image_sink();
    for (size_t i = 0; i < image_keys_.size(); ++i) {
      if (!all && i == size_t(scene::CompareShow::B)) continue;
      if (images) images->drop_image(image_keys_[i]);
      image_keys_[i] = 0;
    }
  }

  // The images' share of a filter: which tensors' images the op types and tensors leave out.
  void write_image_filter(const scene::Filter& filter) {
    if (scene::ImageSink* images = sink_.image_sink(); images && layout_)
      images->write_image_filter(scene::image_filter(plan_->graph(), *layout_, filter));
  }

  // A full build of the shown values with points and connections for `focus` (refine: the
  // current scene stays until this one is done; refocused: the view chose another focus).
  bool build_scene(const scene::SceneOptions& options, std::vector<std::string> focus, const scene::Filter& filter,
                   uint64_t filter_serial, const ProgressFn& progress, const PostFn& post, bool refine, bool refocused) {
    const auto start = Clock::now();
    scene::SceneOptions o = options;
    o.focus = focus;
    o.progress = progress;
    o.refreshable = true;  // the next input or comparison side refreshes it
    HeldPublish held(sink_);
    const scene::Activations values = shown_values();
    auto built = std::make_unique<scene::Scene>(scene::Scene::build(plan_->graph(), *layout_, values, o, held));
    scene_ = std::move(built);
    scene_options_ = options;
    scene_layout_serial_ = layout_serial_;
    point_focus_ = std::move(focus);
    publish(held, values, filter, filter_serial, start, post, false, refine, refocused);
    return true;
  }

  // Publishes the scene held in `held`'s target with `filter`'s counts, the activation images of
  // `values` when they changed, and the view's words; posts SceneBuilt and CountsApplied.
  void publish(HeldPublish& held, const scene::Activations& values, const scene::Filter& filter, uint64_t filter_serial,
               Clock::time_point start, const PostFn& post, bool refreshed, bool refined, bool refocused = false) {
    const scene::CompareShow show = session_b_ && b_inferred_ ? options_.compare.show->load() : scene::CompareShow::A;
    // An image input drawn as a picture in its tiles has no points over it (they would cover the
    // picture with the colour map up close); it is still picked and highlighted.
    picture_points_.clear();
    if (sink_.image_sink() && show != scene::CompareShow::Difference)
      picture_points_ = scene::picture_tensors(*layout_, values, tile_pictures(values));
    scene::DrawCounts counts = scene_->counts(filter);
    scene::drop_points(counts, scene_->segments(), picture_points_);
    held.release(counts);
    write_image_filter(filter);
    if (scene::ImageSink* images = sink_.image_sink(); images && (images_stale_ || show != images_show_)) {
      // Every activation as images, of what is shown (A, B or the difference, each tensor's
      // colour range its own). Each of the three is kept once written, until its values change,
      // so that flipping back to one is a pointer swap in the sink.
      // An image input in its true colours in its tiles (A's or B's picture; a difference is none).
      std::span<const scene::ImagePicture> pictures;
      if (show != scene::CompareShow::Difference) pictures = tile_pictures(values);
      images_ = scene::show_or_publish_images(*layout_, values, *images, image_keys_[size_t(show)], image_key_serial_,
                                              std::max(1, options_.threads), pictures);
      images_stale_ = false;
      images_show_ = show;
    }
    filter_ = filter;
    selected_.reset(), hovered_.reset();  // a new scene drops the selection and the hover
    publish_words(values, std::nullopt, std::nullopt);
    ++generation_;
    const scene::BuildStats& st = scene_->stats();
    post(SceneBuilt{.generation = generation_,
                    .neurons = st.neurons,
                    .connections = st.connections,
                    .segments = scene_->segments().size(),
                    .infer_ms = infer_ms_,
                    .build_ms = ms_since(start),
                    .stats = st,
                    .refreshed = refreshed,
                    .refined = refined,
                    .compare = session_b_ && b_inferred_ ? std::optional(compare_summary_) : std::nullopt,
                    .images = images_,
                    .focus = point_focus_,
                    .refocused = refocused});
    post(CountsApplied{filter_serial, generation_, sum(counts.neurons), sum(counts.connections)});
  }

  // Compare mode: runs input B once per model (its shape must be A's), then reports the tensors
  // that changed most between A and B.
  void infer_b(const Feeds& a, const PostFn& post) {
    const model::Graph& g = plan_->graph();
    if (!b_inferred_) {
      const Feeds b = options_.compare.b(g);
      for (const auto& [name, t] : b) {
        const auto it = a.find(name);
        if (it != a.end() && (it->second.shape != t.shape || it->second.dtype != t.dtype))
          throw std::runtime_error("--compare: input B has shape " + model::shape_string(t.shape) + ", input A has " +
                                   model::shape_string(it->second.shape) + " (input '" + name + "'): they cannot be compared");
      }
      for (const auto& [name, t] : b) session_b_->set_input(name, t.dtype, t.shape, t.bytes);
      try {
        session_b_->run(run_options());
      } catch (const runtime::CancelledError& e) {
        cancelled_by(e);
      } catch (const runtime::UnsupportedError& e) {
        post(Warning{std::string("input B: ") + e.what()});
      }
      b_inferred_ = true;
    }
    const auto div = scene::divergence(g, scene::activations_of(*session_), scene::activations_of(*session_b_));
    CompareSummary summary = compare_summary(g, *layout_, div);
    std::string line;
    for (size_t i = 0; i < summary.most_changed.size() && i < 5; ++i) {
      char figure[48];
      std::snprintf(figure, sizeof figure, " (rel L2 %.3g)", summary.most_changed[i].second);
      line += (line.empty() ? "" : ", ") + summary.most_changed[i].first + figure;
    }
    std::fprintf(stderr, "nnxr: compare: most changed: %s\n", line.c_str());
    compare_summary_ = std::move(summary);
  }

  // The view's text for the current scene (when the sink takes words).
  void publish_words(const scene::Activations& values, std::optional<model::TensorId> focus,
                     std::optional<SelectionText> selection) {
    if (!words_ || !layout_) return;
    focus_ = focus;
    selection_text_ = selection;
    if (&values != &values_) values_ = values;
    WordsContext context{plan_->graph(), *layout_, values, options_.words, focus, std::move(selection), menu_state()};
    // Drawing the difference: the panels describe the two runs.
    scene::Activations run_a, run_b;
    if (session_b_ && b_inferred_ && options_.compare.show->load() == scene::CompareShow::Difference) {
      run_a = scene::activations_of(*session_);
      run_b = scene::activations_of(*session_b_);
      context.run_a = &run_a;
      context.run_b = &run_b;
    }
    words_->publish_words(context);
  }

  // The values the view's text described last (what the scene shows: A, B or A − B).
  const scene::Activations& words_values() const { return values_; }

  // What the filter menu shows: the filter in effect and the selection.
  std::optional<MenuState> menu_state() const {
    if (!options_.words.menu || !layout_) return std::nullopt;
    const model::Graph& g = plan_->graph();
    MenuState m;
    m.ops = op_counts(tensor_places(g, *layout_));
    for (const auto& [op, count] : m.ops)
      m.shown.push_back(filter_.op_types.empty() || std::find(filter_.op_types.begin(), filter_.op_types.end(), op) != filter_.op_types.end());
    m.dim = filter_.outside == scene::Filter::Outside::Dim;
    if (selected_) {
      m.selected = selected_->tensor_name;
      m.path = selected_->path.size();
    }
    for (model::TensorId t : filter_.tensors)
      if (t < g.tensors.size()) m.isolated.push_back(g.tensors[t].name);
    return m;
  }

  Selection describe(model::TensorId tensor, int64_t element) const {
    const model::Graph& g = plan_->graph();
    const model::Tensor& t = g.tensors.at(tensor);
    Selection sel;
    sel.tensor = tensor;
    sel.element = element;
    sel.tensor_name = t.name;
    if (t.producer != model::kNone) {
      sel.node_name = g.nodes[t.producer].name;
      sel.op_type = g.nodes[t.producer].op_type;
    }
    int64_t rest = element;
    sel.index.assign(t.shape.size(), 0);
    for (size_t i = t.shape.size(); i-- > 0;) {
      const int64_t d = std::max<int64_t>(1, t.shape[i]);
      sel.index[i] = rest % d;
      rest /= d;
    }
    auto value_in = [&](const runtime::Session& session) -> std::optional<float> {
      const runtime::Value* v = session.value(tensor);
      if (!v || element >= v->elements()) return std::nullopt;
      if (v->dtype() == model::DType::Float) return v->as<float>()[static_cast<size_t>(element)];
      if (v->dtype() == model::DType::Float16) return model::half_to_float(v->as<uint16_t>()[static_cast<size_t>(element)]);
      return std::nullopt;
    };
    // Compare mode: the value of what is shown (B's, or a_A − a_B for an input or activation).
    const auto show = session_b_ && b_inferred_ ? options_.compare.show->load() : scene::CompareShow::A;
    const auto a = value_in(*session_);
    if (show == scene::CompareShow::A) {
      sel.value = a.value_or(0.0f);
    } else if (const auto b = value_in(*session_b_)) {
      const bool varies = t.kind == model::TensorKind::Input || t.kind == model::TensorKind::Activation;
      sel.value = show == scene::CompareShow::B ? *b : varies && a ? *a - *b : a.value_or(0.0f);
    }
    if (auto n = scene_->find(tensor, element)) {
      sel.neuron = *n;
      sel.trace = scene_->trace(*n);
    }
    sel.path = scene::upstream_tensors(g, *layout_, tensor);
    for (model::TensorId id : sel.path) sel.path_names.push_back(g.tensors[id].name);
    return sel;
  }

  scene::SceneSink& sink_;
  WordsSink* words_;  // the sink, when it also takes the view's text
  // The legend's tensor: the one under the pointer, else the selected one (with its panel text).
  std::optional<model::TensorId> hovered_;
  WorkerOptions options_;
  std::string name_;
  std::shared_ptr<const runtime::Plan> plan_;
  std::optional<scene::Layout> layout_;
  bool layout_needs_run_ = false;             // some float tensor's shape is data-dependent
  std::optional<ModelLoaded> pending_loaded_;  // posted after the first run when layout_needs_run_
  std::unique_ptr<runtime::Session> session_;
  std::unique_ptr<runtime::Session> session_b_;  // compare mode: input B
  bool b_inferred_ = false;
  CompareSummary compare_summary_;  // of the last inference
  std::vector<float> difference_;  // a_A − a_B, reused from build to build
  bool inferred_ = false;
  double infer_ms_ = 0;
  scene::ImagesStats images_;  // of the published images
  bool images_stale_ = true;   // the images are not of the last inference
  std::array<uint64_t, 3> image_keys_{};  // kept images of A, B, A − B (CompareShow order; 0: none)
  uint64_t image_key_serial_ = 0;
  std::optional<std::vector<scene::ImagePicture>> tile_pictures_;  // of this model (none yet: not asked)
  std::vector<model::TensorId> picture_points_;  // tensors drawn as pictures: their points are not drawn
  scene::CompareShow images_show_ = scene::CompareShow::A;  // what the images show
  std::unique_ptr<scene::Scene> scene_;
  scene::SceneOptions scene_options_;  // scene_ was built with these
  uint64_t layout_serial_ = 0;         // incremented whenever layout_ is replaced
  uint64_t scene_layout_serial_ = 0;   // layout_serial_ when scene_ was built
  uint64_t generation_ = 0;
  // What the view's text showed last, so that a filter change can compose it again with the menu.
  scene::Filter filter_;
  std::optional<Selection> selected_;
  std::optional<model::TensorId> focus_;
  std::optional<SelectionText> selection_text_;
  scene::Activations values_;
  std::vector<std::string> point_focus_;  // of scene_ (empty: every tensor)
};

}  // namespace

std::vector<std::pair<std::string, int>> op_counts(const std::vector<TensorPlace>& tensors) {
  std::vector<std::pair<std::string, int>> ops;
  for (const TensorPlace& t : tensors) {
    if (t.op.empty()) continue;
    auto it = std::find_if(ops.begin(), ops.end(), [&](const auto& o) { return o.first == t.op; });
    if (it == ops.end()) ops.emplace_back(t.op, 1);
    else ++it->second;
  }
  std::stable_sort(ops.begin(), ops.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  return ops;
}

CompareSummary compare_summary(const model::Graph& g, const scene::Layout& layout,
                               const std::vector<std::optional<scene::Divergence>>& div) {
  CompareSummary summary;
  for (model::TensorId id : scene::most_changed(g, div, 8)) summary.most_changed.emplace_back(g.tensors[id].name, div[id]->rel_l2);
  // The curve: per place along the chain, the largest finite rel L2 of its activations. A wrapped
  // layout's rows (scene.h Layout) each run along X from the same start, so X alone would fold
  // them onto one another: a block's place is its row's start along the chain (the rows before it
  // laid end to end, top row first) plus its X within the row, mapped back onto the network's X
  // extent. One row: its X itself.
  const auto& blocks = layout.blocks();
  std::vector<std::array<float, 3>> rows;  // per row: top, bottom, min X; top row first
  for (const scene::Block& b : blocks) {
    auto at = std::find_if(rows.begin(), rows.end(), [&](const auto& r) { return b.min[1] <= r[0] && b.max[1] >= r[1]; });
    if (at == rows.end()) rows.push_back({b.max[1], b.min[1], b.min[0]});
    else (*at) = {std::max((*at)[0], b.max[1]), std::min((*at)[1], b.min[1]), std::min((*at)[2], b.min[0])};
  }
  // Blocks of one row overlap in Y (a wrapped row centres its blocks on one height, rows stand a
  // gap apart); merge rows that came to overlap as blocks widened them.
  for (bool merged = true; merged;) {
    merged = false;
    for (size_t i = 0; i < rows.size() && !merged; ++i)
      for (size_t j = i + 1; j < rows.size() && !merged; ++j)
        if (rows[j][1] <= rows[i][0] && rows[j][0] >= rows[i][1]) {
          rows[i] = {std::max(rows[i][0], rows[j][0]), std::min(rows[i][1], rows[j][1]), std::min(rows[i][2], rows[j][2])};
          rows.erase(rows.begin() + std::ptrdiff_t(j));
          merged = true;
        }
  }
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a[0] > b[0]; });
  std::vector<float> row_start(rows.size(), 0.f), row_end(rows.size(), -INFINITY);
  auto row_of = [&](const scene::Block& b) {
    const float y = 0.5f * (b.min[1] + b.max[1]);
    for (size_t r = 0; r < rows.size(); ++r)
      if (y <= rows[r][0] && y >= rows[r][1]) return r;
    return size_t(0);
  };
  std::vector<std::vector<float>> xs(rows.size());  // per row: its blocks' depths
  for (const scene::Block& b : blocks) {
    const size_t r = row_of(b);
    row_end[r] = std::max(row_end[r], b.max[0]);
    xs[r].push_back(0.5f * (b.min[0] + b.max[0]));
  }
  float length = 0;  // the chain's length, rows end to end, each a step longer than its blocks
  for (size_t r = 0; r < rows.size(); ++r) {
    std::sort(xs[r].begin(), xs[r].end());
    xs[r].erase(std::unique(xs[r].begin(), xs[r].end()), xs[r].end());
    const float extent = std::max(row_end[r] - rows[r][2], 0.f);
    const float step = xs[r].size() > 1 ? extent / float(xs[r].size() - 1) : extent;
    row_start[r] = length;
    length += extent + step;
  }
  const auto lo = layout.bounds_min(), hi = layout.bounds_max();
  // The last row's step is not drawn: the chain ends at the network's right end.
  if (!rows.empty() && !xs.back().empty()) {
    const float extent = std::max(row_end.back() - rows.back()[2], 0.f);
    length -= xs.back().size() > 1 ? extent / float(xs.back().size() - 1) : extent;
  }
  const float scale = rows.size() > 1 && length > 0 ? (hi[0] - lo[0]) / length : 1.f;
  auto place = [&](const scene::Block& b) {
    const float x = 0.5f * (b.min[0] + b.max[0]);
    if (rows.size() <= 1) return x;
    const size_t r = row_of(b);
    return lo[0] + (row_start[r] + x - rows[r][2]) * scale;
  };
  for (const scene::Block& b : blocks) {
    if (b.tensor >= div.size() || !div[b.tensor] || g.tensors[b.tensor].kind != model::TensorKind::Activation) continue;
    if (!std::isfinite(div[b.tensor]->rel_l2)) continue;
    const float x = place(b), v = static_cast<float>(div[b.tensor]->rel_l2);
    auto& c = summary.curve;
    auto at = std::find_if(c.begin(), c.end(), [&](const std::array<float, 2>& p) { return std::abs(p[0] - x) < 1e-6f; });
    if (at == c.end()) c.push_back({x, v});
    else (*at)[1] = std::max((*at)[1], v);
  }
  std::sort(summary.curve.begin(), summary.curve.end(), [](const auto& p, const auto& q) { return p[0] < q[0]; });
  return summary;
}

std::unique_ptr<Stages> make_scene_stages(scene::SceneSink& sink, const WorkerOptions& options) {
  return std::make_unique<SceneStages>(sink, options);
}

Worker::Worker(scene::SceneSink& sink, WorkerOptions options) : Worker(make_scene_stages(sink, options), options) {}

}  // namespace nnxr::engine
