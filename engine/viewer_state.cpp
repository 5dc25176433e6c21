#include "engine/viewer_state.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <sstream>

#include "engine/camera.h"

namespace nnxr::engine {
namespace {

std::string index_string(const std::vector<int64_t>& index) {
  std::string s = "[";
  for (size_t i = 0; i < index.size(); ++i) s += (i ? ", " : "") + std::to_string(index[i]);
  return s + "]";
}

std::string count_string(uint64_t n) {
  char buf[32];
  if (n >= 10'000'000) std::snprintf(buf, sizeof buf, "%.0fM", static_cast<double>(n) / 1e6);
  else if (n >= 1'000'000) std::snprintf(buf, sizeof buf, "%.1fM", static_cast<double>(n) / 1e6);
  else if (n >= 10'000) std::snprintf(buf, sizeof buf, "%.0fk", static_cast<double>(n) / 1e3);
  else std::snprintf(buf, sizeof buf, "%llu", static_cast<unsigned long long>(n));
  return buf;
}

// Each layer's extent (index = layer; empty for layers without laid-out tensors).
std::vector<LayerBox> layer_boxes(const std::vector<TensorPlace>& tensors, int layers) {
  std::vector<LayerBox> boxes(static_cast<size_t>(std::max(layers, 1)));
  for (const TensorPlace& t : tensors) {
    if (t.layer < 0) continue;
    if (static_cast<size_t>(t.layer) >= boxes.size()) boxes.resize(static_cast<size_t>(t.layer) + 1);
    LayerBox& b = boxes[static_cast<size_t>(t.layer)];
    const glm::vec3 lo(t.min[0], t.min[1], t.min[2]), hi(t.max[0], t.max[1], t.max[2]);
    if (b.empty()) b = {lo, hi};
    else b = {glm::min(b.min, lo), glm::max(b.max, hi)};
  }
  return boxes;
}

// The median of a few timings (0 for none).
double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

ViewerState::ViewerState(Worker& worker, Interaction& interaction, Renderer& renderer)
    : worker_(worker), interaction_(interaction), renderer_(&renderer) {
  filter_requested_ = worker_.filter(interaction_.filter());
}

void ViewerState::rebind(Renderer& renderer) {
  renderer_ = &renderer;
  renderer_->set_highlight(highlight_);
}

void ViewerState::set_highlight(Highlight highlight) {
  highlight_ = std::move(highlight);
  renderer_->set_highlight(highlight_);
}

void ViewerState::frame_home(glm::vec2 window, std::span<const ScreenRect> panels, std::span<const glm::vec3> picture) {
  bool changed = window != home_window_;
  if (changed) home_panels_.clear(), home_window_ = window;
  if (!std::equal(picture.begin(), picture.end(), home_picture_.begin(), home_picture_.end())) {
    home_picture_.assign(picture.begin(), picture.end());
    changed = true;
  }
  for (const ScreenRect& r : panels) {
    if (!(r.max.x > r.min.x && r.max.y > r.min.y)) continue;
    auto inside = [&](const ScreenRect& s) { return s.min.x <= r.min.x && s.min.y <= r.min.y && r.max.x <= s.max.x && r.max.y <= s.max.y; };
    if (std::any_of(home_panels_.begin(), home_panels_.end(), inside)) continue;
    changed = true;
    // A panel that grew (fixed to its corner, it holds its smaller self) replaces what it holds.
    auto held = [&](const ScreenRect& s) { return r.min.x <= s.min.x && r.min.y <= s.min.y && s.max.x <= r.max.x && s.max.y <= r.max.y; };
    home_panels_.erase(std::remove_if(home_panels_.begin(), home_panels_.end(), held), home_panels_.end());
    home_panels_.push_back(r);
  }
  if (!changed || home_points_.empty() || !(window.x > 0 && window.y > 0)) return;
  const bool move = interaction_.at_home();
  std::vector<glm::vec3> points = home_points_;
  points.insert(points.end(), home_picture_.begin(), home_picture_.end());
  const Camera home = frame_clear(CameraPreset::Overview, points, window, home_panels_);
  interaction_.set_home(home.eye, home.target, home.fov_y, move);
}

void ViewerState::take_in(float aspect) {
  for (WorkerEvent& event : worker_.take_events()) {
    if (auto* e = std::get_if<ModelLoaded>(&event)) {
      model_ = e->name;
      neuron_spacing_ = e->neuron_spacing > 0 ? e->neuron_spacing : neuron_spacing_;
      const glm::vec3 min(e->bounds_min[0], e->bounds_min[1], e->bounds_min[2]);
      const glm::vec3 max(e->bounds_max[0], e->bounds_max[1], e->bounds_max[2]);
      interaction_.set_bounds(min, max);
      // The blocks' corners and the words over them, as `render` frames them: the window opens on
      // the picture it writes.
      corners_.clear();
      for (const TensorPlace& t : e->tensors)
        add_corners(corners_, glm::vec3(t.min[0], t.min[1], t.min[2]), glm::vec3(t.max[0], t.max[1], t.max[2]));
      if (!corners_.empty())
        for (const auto& p : e->frame_words) corners_.push_back({p[0], p[1], p[2]});
      // A hiding filter (from the command line) frames the blocks it shows, as `render` does;
      // every block when it shows them all or none.
      const scene::Filter filter = interaction_.filter();
      auto shown = [&](const TensorPlace& t) {
        if (t.layer < filter.layer_min || t.layer > filter.layer_max) return false;
        if (!filter.op_types.empty() && std::find(filter.op_types.begin(), filter.op_types.end(), t.op) == filter.op_types.end())
          return false;
        return filter.tensors.empty() || std::find(filter.tensors.begin(), filter.tensors.end(), t.tensor) != filter.tensors.end();
      };
      const bool hiding = filter.outside == scene::Filter::Outside::Hide;
      const size_t n_shown = hiding ? size_t(std::count_if(e->tensors.begin(), e->tensors.end(), shown)) : e->tensors.size();
      if (n_shown == 0 || n_shown == e->tensors.size()) {
        home_points_ = corners_;
      } else {
        home_points_.clear();
        for (const TensorPlace& t : e->tensors)
          if (shown(t)) add_corners(home_points_, glm::vec3(t.min[0], t.min[1], t.min[2]), glm::vec3(t.max[0], t.max[1], t.max[2]));
      }
      home_panels_.clear();
      home_picture_.clear();
      const Camera home = home_points_.empty() ? frame_bounds(CameraPreset::Overview, min, max, aspect)
                                               : home_window_.x > 0 ? frame_clear(CameraPreset::Overview, home_points_, home_window_, {})
                                                                    : frame_points(CameraPreset::Overview, home_points_, aspect);
      interaction_.set_home(home.eye, home.target, home.fov_y);
      interaction_.set_layers(layer_boxes(e->tensors, e->layers));
      std::vector<SearchEntry> entries;
      entries.reserve(e->tensors.size());
      for (const TensorPlace& t : e->tensors)
        entries.push_back({t.tensor, t.name, t.node, t.op, t.layer, glm::vec3(t.min[0], t.min[1], t.min[2]),
                           glm::vec3(t.max[0], t.max[1], t.max[2])});
      interaction_.search().set_entries(std::move(entries));
      interaction_.set_op_counts(op_counts(e->tensors));
      interaction_.select(std::nullopt);
      set_highlight({});
      last_pick_.reset();
      loaded_ = true;
      view_sent_.reset();
      std::cerr << "nnxr: " << e->name << ": " << e->nodes << " nodes, " << e->layers << " layers, loaded in "
                << static_cast<int>(e->milliseconds) << " ms\n";
    } else if (auto* e = std::get_if<SceneBuilt>(&event)) {
      if (awaited_ && !awaited_->target && !e->refined && e->generation > awaited_->generation) awaited_->target = e->generation;
      generation_ = e->generation;
      compare_ = e->compare;
      resident_neurons_ = e->neurons;
      resident_connections_ = e->connections;
      activations_total_ = e->images.activations_total;
      activations_shown_ = e->images.activations_shown;
      focus_ = e->focus;
      set_highlight({});
      if (e->refocused && last_pick_ && interaction_.selection()) {
        // Same inference, other residents: the selection stays and its trace is asked again.
        select_requested_ = worker_.select(last_pick_->origin, last_pick_->direction, last_pick_->radius);
      } else {
        interaction_.select(std::nullopt);
        last_pick_.reset();
      }
      if (e->refocused) {
        std::cerr << "nnxr: focus " << e->focus.size() << " tensors: " << e->neurons << " points, " << e->connections
                  << " connections resident (" << static_cast<int>(e->build_ms) << " ms)\n";
        continue;
      }
      std::cerr << "nnxr: scene " << e->generation << ": " << e->neurons << " neurons, " << e->connections
                << " connections resident (inference " << static_cast<int>(e->infer_ms) << " ms, scene "
                << static_cast<int>(e->build_ms) << " ms: layout " << static_cast<int>(e->stats.layout_ms) << ", scoring "
                << static_cast<int>(e->stats.scoring_ms) << ", sorting " << static_cast<int>(e->stats.sorting_ms) << ", writing "
                << static_cast<int>(e->stats.writing_ms) << ")" << (e->refreshed ? " refreshed" : e->refined ? " refined" : "")
                << '\n';
    } else if (auto* e = std::get_if<CountsApplied>(&event)) {
      filter_applied_ = std::max(filter_applied_, e->serial);
      drawn_neurons_ = e->neurons;
      drawn_connections_ = e->connections;
    } else if (auto* e = std::get_if<Selected>(&event)) {
      if (e->serial != select_requested_) continue;  // a newer click is on its way
      if (!e->selection) {
        interaction_.select(std::nullopt);
        set_highlight({});
        if (print_selection_) std::cerr << "nnxr: nothing selected\n";
        continue;
      }
      const Selection& s = *e->selection;
      SelectionState state{s.tensor_name, s.node_name, s.op_type, s.index, s.element, s.value, s.neuron, s.tensor, s.path, s.path_names};
      interaction_.select(state);
      std::ostringstream line;  // one write: stderr is unbuffered
      line << "nnxr: selected " << (s.op_type.empty() ? std::string("input") : s.op_type)
           << (s.node_name.empty() ? "" : " '" + s.node_name + "'") << " tensor '" << s.tensor_name << "' index "
           << index_string(s.index) << " value " << s.value;
      if (s.neuron) {
        line << " (trace: " << s.trace.neurons.size() << " neurons, " << s.trace.connections.size() << " connections)";
        set_highlight(Highlight{e->generation, s.trace.neurons, s.trace.connections});
      } else {
        line << " (not resident: below the budget)";
        set_highlight({});
      }
      line << '\n';
      if (print_selection_) std::cerr << line.str();
    } else if (auto* e = std::get_if<Failed>(&event)) {
      const auto& inputs = worker_.options().inputs;
      if (e->stage == Stage::Infer && awaited_ && !awaited_->flip && awaited_->previous_input < inputs.names.size()) {
        // A switch to an input that cannot be read: the previous input stays, and says so.
        input_index_ = awaited_->previous_input;
        awaited_.reset();
        input_message_ = e->message + " (kept " + inputs.names[input_index_] + ")";
      } else {
        last_error_ = e->message;
      }
      errors_.push_back(e->message);
      std::cerr << "nnxr: " << e->message << '\n';
    } else if (auto* e = std::get_if<Warning>(&event)) {
      std::cerr << "warning: " << e->message << '\n';
    }
  }
}

void ViewerState::apply(const Command& command) {
  if (command.filter_changed) filter_requested_ = worker_.filter(interaction_.filter());
  const InputList& inputs = worker_.options().inputs;
  if (command.input_step != 0 && inputs.names.size() > 1 && inputs.source) {
    const size_t n = inputs.names.size();
    const size_t previous = awaited_ && !awaited_->flip ? awaited_->previous_input : input_index_;
    input_index_ = (input_index_ + n + static_cast<size_t>(command.input_step % static_cast<int>(n) + static_cast<int>(n))) % n;
    input_message_.clear();
    awaited_ = Awaited{Clock::now(), generation_, previous, false};
    worker_.set_input(inputs.source(input_index_));
    std::cerr << "nnxr: input " << input_index_ + 1 << "/" << n << ": " << inputs.names[input_index_] << '\n';
  }
  const CompareOptions& compare = worker_.options().compare;
  if (command.compare_toggle && compare.b) {
    const scene::CompareShow next = compare.show->load() == scene::CompareShow::A   ? scene::CompareShow::B
                                    : compare.show->load() == scene::CompareShow::B ? scene::CompareShow::Difference
                                                                                    : scene::CompareShow::A;
    compare.show->store(next);
    if (!awaited_) awaited_ = Awaited{Clock::now(), generation_, input_index_, true};
    worker_.rebuild();
    std::cerr << "nnxr: showing " << scene::compare_show_name(next) << '\n';
  }
  if (command.select) {
    const Ray r = interaction_.world().to_network(*command.select);
    // A pick radius of most of a neuron spacing: the nearest neuron under the cursor, at any zoom.
    last_pick_ = Pick{{r.origin.x, r.origin.y, r.origin.z}, {r.direction.x, r.direction.y, r.direction.z},
                      command.select_radius.value_or(neuron_spacing_ * 0.75f)};
    select_requested_ = worker_.select(last_pick_->origin, last_pick_->direction, last_pick_->radius);
  }
}

void ViewerState::hover(const Ray& world_ray) {
  const auto now = Clock::now();
  if (last_hover_ && now - last_hover_time_ < std::chrono::milliseconds(50)) return;
  if (last_hover_ && glm::length(last_hover_->origin - world_ray.origin) < 1e-6f &&
      glm::dot(last_hover_->direction, world_ray.direction) > 1 - 1e-9f)
    return;  // not moved
  last_hover_ = world_ray;
  last_hover_time_ = now;
  const Ray r = interaction_.world().to_network(world_ray);
  worker_.hover({r.origin.x, r.origin.y, r.origin.z}, {r.direction.x, r.direction.y, r.direction.z}, neuron_spacing_ * 0.75f);
}

void ViewerState::follow_view(const glm::mat4& view, const glm::mat4& projection, const std::optional<Ray>& aim) {
  if (!loaded_ || !worker_.options().follow_view) return;
  const glm::mat4 eye_of_network = view * interaction_.world().matrix();
  const glm::mat4 clip = projection * eye_of_network;
  const glm::mat4 inverse = glm::inverse(eye_of_network);
  const glm::vec3 eye(inverse * glm::vec4(0, 0, 0, 1));
  const glm::vec3 forward = glm::normalize(glm::vec3(inverse * glm::vec4(0, 0, -1, 0)));
  scene::FocusView v;
  v.eye = {eye.x, eye.y, eye.z};
  for (int c = 0; c < 4; ++c)
    for (int r = 0; r < 4; ++r) v.clip[static_cast<size_t>(4 * c + r)] = clip[c][r];
  v.gaze_origin = v.eye;
  v.gaze_direction = {forward.x, forward.y, forward.z};
  glm::vec3 aim_origin(0), aim_direction(0);
  if (aim && glm::length(aim->direction) > 0) {
    const Ray r = interaction_.world().to_network(*aim);
    aim_origin = r.origin;
    aim_direction = glm::normalize(r.direction);
    v.aim_origin = {aim_origin.x, aim_origin.y, aim_origin.z};
    v.aim_direction = {aim_direction.x, aim_direction.y, aim_direction.z};
  }
  if (interaction_.selection()) v.selected = interaction_.selection()->tensor_name;
  if (view_sent_) {
    // Noticeably: the eye moved 1% of the network's extent, the gaze turned 2 degrees, the
    // frustum changed (zoom, aspect), the aim ray moved that far or turned half a degree (a
    // pointer picks one map among many), appeared or went, or the selection changed.
    const scene::FocusView& o = *view_sent_;
    const float step = 0.01f * std::max(interaction_.extent(), 1e-6f);
    const glm::vec3 old_eye(o.eye[0], o.eye[1], o.eye[2]), old_forward(o.gaze_direction[0], o.gaze_direction[1], o.gaze_direction[2]);
    const glm::vec3 old_aim_origin(o.aim_origin[0], o.aim_origin[1], o.aim_origin[2]);
    const glm::vec3 old_aim(o.aim_direction[0], o.aim_direction[1], o.aim_direction[2]);
    float clip_change = 0;
    for (size_t i = 0; i < 16; ++i) clip_change = std::max(clip_change, std::abs(o.clip[i] - v.clip[i]));
    const bool aim_same = (glm::length(old_aim) == 0) == (glm::length(aim_direction) == 0) &&
                          (glm::length(aim_direction) == 0 ||
                           (glm::distance(old_aim_origin, aim_origin) < step && glm::dot(old_aim, aim_direction) > 0.99996f));
    if (glm::distance(old_eye, eye) < step && glm::dot(old_forward, forward) > 0.99939f && clip_change < 0.02f && aim_same &&
        o.selected == v.selected)
      return;
  }
  view_sent_ = v;
  worker_.view(std::move(v));
}

FrameParams ViewerState::frame_params(float aspect) const {
  FrameParams p;
  const FlyCamera& c = interaction_.camera();
  p.view[0] = p.view[1] = c.view();
  p.projection[0] = p.projection[1] = c.projection(aspect);
  p.world = interaction_.world().matrix();
  p.neuron_size = neuron_spacing_ * 0.75f;
  p.image_threshold = interaction_.thresholds().neuron();  // the images follow the neuron filter
  p.point_fade_pixels = 3;
  const scene::Filter f = interaction_.filter();
  p.image_layer_min = f.layer_min;
  p.image_layer_max = f.layer_max;
  p.image_dim_outside = f.outside == scene::Filter::Outside::Dim;
  // Fog scaled to the network as seen: it starts beyond the network's far side at the home view.
  const float extent = interaction_.extent() * interaction_.world().scale;
  p.fog_start = extent * 2;
  p.fog_end = extent * 20;
  if (compare_ && !compare_->curve.empty()) {
    overlay_.clear();
    draw_divergence(overlay_, *compare_, interaction_.bounds_min(), interaction_.bounds_max(), interaction_.world().matrix());
    p.overlay_lines = overlay_.lines();
    p.overlay_triangles = overlay_.triangles();
  }
  return p;
}

void draw_divergence(OverlayBuilder& overlay, const CompareSummary& summary, glm::vec3 lo, glm::vec3 hi,
                     const glm::mat4& world) {
  auto at = [&](float x, float y, float z) { return glm::vec3(world * glm::vec4(x, y, z, 1.0f)); };
  auto dir = [&](glm::vec3 v) { return glm::vec3(world * glm::vec4(v, 0.0f)); };
  const float span_y = std::max(hi.y - lo.y, 0.05f);
  const float base = hi.y + 0.15f * span_y, height = 0.4f * span_y, z = 0.5f * (lo.z + hi.z);
  float top = 0;
  for (const auto& c : summary.curve) top = std::max(top, c[1]);
  if (!(top > 0)) top = 1;
  const glm::vec4 axis(0.5f, 0.5f, 0.55f, 1.0f), curve(1.0f, 0.75f, 0.1f, 1.0f), text(0.9f, 0.9f, 0.9f, 1.0f);
  overlay.line(at(lo.x, base, z), at(hi.x, base, z), axis);
  overlay.line(at(lo.x, base, z), at(lo.x, base + height, z), axis);
  for (size_t i = 0; i < summary.curve.size(); ++i) {
    const auto& c = summary.curve[i];
    const glm::vec3 p = at(c[0], base + height * c[1] / top, z);
    if (i > 0) {
      const auto& b = summary.curve[i - 1];
      overlay.line(at(b[0], base + height * b[1] / top, z), p, curve);
    }
    overlay.line(at(c[0], base, z), p, glm::vec4(curve.r, curve.g, curve.b, 0.3f));
  }
  const float unit = std::max(hi.x - lo.x, 0.05f) / 900.0f;
  const glm::vec3 right = dir({unit, 0, 0}), down = dir({0, -unit, 0});
  char line[160];
  std::snprintf(line, sizeof line, "A vs B: rel L2 |a_A - a_B| / |a_A| along depth (top %.3g)", static_cast<double>(top));
  // Text lines from the top down, ending just above the curve.
  const size_t rows = std::min<size_t>(summary.most_changed.size(), 5);
  float y = base + height + 10 * unit + 12 * unit * static_cast<float>(rows + 2);
  overlay.text(at(lo.x, y, z), right, down, line, text);
  y -= 12 * unit;
  if (rows) overlay.text(at(lo.x, y, z), right, down, "changed most (rel L2):", text);
  for (size_t i = 0; i < rows; ++i) {
    y -= 12 * unit;
    const auto& [name, rel] = summary.most_changed[i];
    std::snprintf(line, sizeof line, "  %.3g  %.60s", rel, name.c_str());
    overlay.text(at(lo.x, y, z), right, down, line, curve);
  }
}

bool ViewerState::settled() const {
  return !worker_.progress().busy && (generation_ > 0 || !errors_.empty());
}

void ViewerState::frame_done(double cpu_ms, uint64_t generation, double wall_ms) {
  const Clock::time_point now = Clock::now();
  const double since = std::chrono::duration<double, std::milli>(now - start_).count();
  const bool first = frames_total_++ == 0;
  if (first) first_frame_ms_ = since;
  if (generation > 0 && first_scene_ms_ == 0) first_scene_ms_ = since;
  if (awaited_ && awaited_->target && generation >= awaited_->target) {
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - awaited_->start).count();
    (awaited_->flip ? flip_ms_ : switch_ms_).push_back(ms);
    awaited_.reset();
  }
  // Without a measured wall time, the time since the previous frame (none for the first).
  if (wall_ms < 0 && !first) wall_ms = std::chrono::duration<double, std::milli>(now - last_frame_).count();
  last_frame_ = now;
  if (settled()) {
    cpu_ms_.add(cpu_ms);
    if (wall_ms >= 0) wall_ms_.add(wall_ms);
  }
  last_cpu_ms_ = cpu_ms;
}

std::string ViewerState::title() const {
  std::ostringstream t;
  t << "nnxr — " << model_;
  const Thresholds& th = interaction_.thresholds();
  char q[64];
  std::snprintf(q, sizeof q, " — neurons q≥%.3g, connections q≥%.3g", th.neuron(), th.connection());
  t << q;
  if (generation_ > 0) {
    t << " — images: " << count_string(activations_shown_) << " of " << count_string(activations_total_)
      << " activations; points: " << count_string(drawn_neurons_) << ", connections: " << count_string(drawn_connections_);
    if (!focus_.empty()) t << " in " << focus_.size() << (focus_.size() == 1 ? " tensor" : " tensors") << " near the view";
  }
  char ms[32];
  std::snprintf(ms, sizeof ms, " — %.2f ms", last_cpu_ms_);
  t << ms;
  const InputList& inputs = worker_.options().inputs;
  if (inputs.names.size() > 1 && input_index_ < inputs.names.size())
    t << " — input " << input_index_ + 1 << "/" << inputs.names.size() << ' ' << inputs.names[input_index_];
  if (worker_.options().compare.b) t << " — showing " << scene::compare_show_name(worker_.options().compare.show->load());
  if (!input_message_.empty()) t << " — " << input_message_;
  const Progress p = worker_.progress();
  if (p.busy && p.stage != Stage::Idle) t << " — " << stage_name(p.stage) << ' ' << static_cast<int>(p.fraction * 100) << '%';
  if (!last_error_.empty()) t << " — error: " << last_error_;
  return t.str();
}

ViewStats ViewerState::stats() const {
  ViewStats s;
  s.frames = cpu_ms_.count();
  s.frames_total = frames_total_;
  s.cpu_median_ms = cpu_ms_.percentile(0.5);
  s.cpu_p99_ms = cpu_ms_.percentile(0.99);
  s.wall_median_ms = wall_ms_.percentile(0.5);
  s.wall_p99_ms = wall_ms_.percentile(0.99);
  s.first_frame_ms = first_frame_ms_;
  s.first_scene_ms = first_scene_ms_;
  s.resident_neurons = resident_neurons_;
  s.resident_connections = resident_connections_;
  s.drawn_neurons = drawn_neurons_;
  s.drawn_connections = drawn_connections_;
  s.activations_total = activations_total_;
  s.activations_shown = activations_shown_;
  s.focus = focus_;
  s.world = interaction_.world();
  s.neuron_threshold = interaction_.thresholds().neuron();
  s.connection_threshold = interaction_.thresholds().connection();
  s.filter = interaction_.filter_summary();
  s.selection = interaction_.selection();
  s.errors = errors_;
  s.model = model_;
  const InputList& inputs = worker_.options().inputs;
  s.input_count = std::max<size_t>(inputs.names.size(), 1);
  s.input_index = input_index_;
  if (input_index_ < inputs.names.size()) s.input_file = inputs.names[input_index_];
  s.input_switch_ms = median(switch_ms_);
  s.input_switches = switch_ms_.size();
  if (worker_.options().compare.b) s.compare_show = scene::compare_show_name(worker_.options().compare.show->load());
  s.compare_flip_ms = median(flip_ms_);
  s.compare_flips = flip_ms_.size();
  return s;
}

}  // namespace nnxr::engine
