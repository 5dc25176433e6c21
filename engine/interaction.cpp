#include "engine/interaction.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <glm/gtc/matrix_transform.hpp>

namespace nnxr::engine {

// ---- WorldTransform ----------------------------------------------------------------------------

glm::mat4 WorldTransform::matrix() const {
  return glm::translate(glm::mat4(1), translation) * glm::mat4_cast(rotation) * glm::scale(glm::mat4(1), glm::vec3(scale));
}

glm::vec3 WorldTransform::to_world(glm::vec3 network) const { return translation + rotation * (scale * network); }

glm::vec3 WorldTransform::to_network(glm::vec3 world) const {
  return (glm::inverse(rotation) * (world - translation)) / scale;
}

Ray WorldTransform::to_network(const Ray& world) const {
  return {to_network(world.origin), glm::normalize(glm::inverse(rotation) * world.direction)};
}

// ---- FlyCamera ----------------------------------------------------------------------------------

glm::vec3 FlyCamera::forward() const {
  return {std::sin(yaw) * std::cos(pitch), std::sin(pitch), -std::cos(yaw) * std::cos(pitch)};
}

glm::vec3 FlyCamera::right() const { return {std::cos(yaw), 0, std::sin(yaw)}; }

glm::vec3 FlyCamera::up() const { return glm::cross(right(), forward()); }

glm::mat4 FlyCamera::view() const { return glm::lookAtRH(position, position + forward(), glm::vec3(0, 1, 0)); }

glm::mat4 FlyCamera::projection(float aspect) const {
  glm::mat4 p = glm::perspectiveRH_ZO(fov_y, aspect > 0 ? aspect : 1.0f, near_plane, far_plane);
  p[1][1] *= -1;  // Vulkan framebuffer Y points down
  return p;
}

Ray FlyCamera::ray_through(float x, float y, float width, float height) const {
  const glm::mat4 inv = glm::inverse(projection(width / height) * view());
  const glm::vec2 ndc(2 * x / width - 1, 2 * y / height - 1);
  glm::vec4 a = inv * glm::vec4(ndc, 0, 1);
  glm::vec4 b = inv * glm::vec4(ndc, 1, 1);
  const glm::vec3 near_point = glm::vec3(a) / a.w;
  const glm::vec3 far_point = glm::vec3(b) / b.w;
  return {position, glm::normalize(far_point - near_point)};
}

// ---- Thresholds ---------------------------------------------------------------------------------

const std::vector<float>& Thresholds::ladder() {
  static const std::vector<float> rungs = [] {
    std::vector<float> r;
    for (int i = 0; i < 20; ++i) r.push_back(static_cast<float>(i) * 0.05f);
    for (float q : {0.98f, 0.99f, 0.995f, 0.999f}) r.push_back(q);
    return r;
  }();
  return rungs;
}

float Thresholds::neuron() const { return ladder()[static_cast<size_t>(neuron_rung)]; }
float Thresholds::connection() const { return ladder()[static_cast<size_t>(connection_rung)]; }

// ---- Interaction --------------------------------------------------------------------------------

namespace {

int clamp_rung(int rung) { return std::clamp(rung, 0, static_cast<int>(Thresholds::ladder().size()) - 1); }

}  // namespace

Interaction::Interaction(InteractionOptions options) : options_(options) {
  thresholds_.neuron_rung = clamp_rung(options_.initial_neuron_rung);
  thresholds_.connection_rung = clamp_rung(options_.initial_connection_rung);
  reset_view();
}

float Interaction::extent() const { return std::max(glm::length(max_ - min_), 1e-3f); }

void Interaction::set_bounds(glm::vec3 min, glm::vec3 max) {
  min_ = glm::min(min, max);
  max_ = glm::max(min, max);
  home_.reset();
  reset_view();
}

void Interaction::set_home(glm::vec3 eye, glm::vec3 target, float fov_y, bool move) {
  if (!(glm::length(target - eye) > 0) || !(fov_y > 0 && fov_y < 3.1f)) return;
  home_ = {eye, target};
  home_fov_y_ = fov_y;
  if (move) reset_view();
}

bool Interaction::at_home() const {
  if (walk_ || flight_ || !home_) return false;
  const WorldTransform identity;
  if (world_.translation != identity.translation || world_.rotation != identity.rotation || world_.scale != identity.scale)
    return false;
  const glm::vec3 d = glm::normalize(home_->second - home_->first);
  return camera_.position == home_->first && camera_.fov_y == home_fov_y_ && camera_.yaw == std::atan2(d.x, -d.z) &&
         camera_.pitch == std::asin(std::clamp(d.y, -1.0f, 1.0f));
}

void Interaction::reset_view() {
  walk_.reset();
  flight_.reset();
  world_ = {};
  camera_ = FlyCamera{};
  const float distance_to_bounds = glm::length((min_ + max_) * 0.5f - (home_ ? home_->first : glm::vec3(0)));
  if (home_) {
    const glm::vec3 d = glm::normalize(home_->second - home_->first);
    camera_.position = home_->first;
    camera_.fov_y = home_fov_y_;
    camera_.yaw = std::atan2(d.x, -d.z);
    camera_.pitch = std::asin(std::clamp(d.y, -1.0f, 1.0f));
    camera_.near_plane = std::max(extent() * 1e-4f, 1e-4f);
    camera_.far_plane = (distance_to_bounds + extent()) * 100;
    return;
  }
  // A three-quarter view from the input side, a little above: layers recede to the right.
  camera_.yaw = glm::radians(35.0f);
  camera_.pitch = glm::radians(-20.0f);
  const glm::vec3 centre = (min_ + max_) * 0.5f;
  const float radius = extent() * 0.5f;
  const float distance = radius / std::sin(camera_.fov_y * 0.5f);
  camera_.position = centre - camera_.forward() * distance;
  camera_.near_plane = std::max(distance * 1e-3f, 1e-4f);
  camera_.far_plane = distance * 100;
}

void Interaction::fly(glm::vec3 move, float seconds) {
  flight_.reset();
  const float speed = options_.fly_speed * extent() * world_.scale;
  camera_.position += (camera_.right() * move.x + glm::vec3(0, 1, 0) * move.y + camera_.forward() * move.z) * speed * seconds;
}

void Interaction::look(float dx_pixels, float dy_pixels) {
  flight_.reset();
  camera_.yaw = std::remainder(camera_.yaw + dx_pixels * options_.look_radians_per_pixel, 2 * glm::pi<float>());
  const float limit = glm::radians(89.0f);
  camera_.pitch = std::clamp(camera_.pitch - dy_pixels * options_.look_radians_per_pixel, -limit, limit);
}

void Interaction::scale_about(glm::vec3 pivot, float factor) {
  if (!(factor > 0) || !std::isfinite(factor)) return;
  walk_.reset();
  const float scale = std::clamp(world_.scale * factor, options_.min_scale, options_.max_scale);
  const float f = scale / world_.scale;
  world_.translation = pivot + f * (world_.translation - pivot);
  world_.scale = scale;
}

void Interaction::move_network(const glm::mat4& delta) {
  walk_.reset();
  const glm::quat r = glm::normalize(glm::quat_cast(glm::mat3(delta)));
  world_.translation = r * world_.translation + glm::vec3(delta[3]);
  world_.rotation = glm::normalize(r * world_.rotation);
}

bool Interaction::reset_thresholds() {
  const int neuron = clamp_rung(options_.initial_neuron_rung), connection = clamp_rung(options_.initial_connection_rung);
  if (thresholds_.neuron_rung == neuron && thresholds_.connection_rung == connection) return false;
  thresholds_.neuron_rung = neuron;
  thresholds_.connection_rung = connection;
  ++filter_serial_;
  return true;
}

bool Interaction::step_neuron_threshold(int rungs) {
  const int next = clamp_rung(thresholds_.neuron_rung + rungs);
  if (next == thresholds_.neuron_rung) return false;
  thresholds_.neuron_rung = next;
  ++filter_serial_;
  return true;
}

bool Interaction::step_connection_threshold(int rungs) {
  const int next = clamp_rung(thresholds_.connection_rung + rungs);
  if (next == thresholds_.connection_rung) return false;
  thresholds_.connection_rung = next;
  ++filter_serial_;
  return true;
}

scene::Filter Interaction::filter() const {
  scene::Filter f = base_;
  f.layer_min = window_start_;
  f.layer_max = window_width_ >= kOpenWidth ? std::numeric_limits<int>::max() : window_start_ + window_width_ - 1;
  f.neuron_mode = scene::Filter::Mode::Quantile;
  f.neuron_threshold = thresholds_.neuron();
  f.connection_mode = scene::Filter::Mode::Quantile;
  f.connection_threshold = thresholds_.connection();
  return f;
}

int Interaction::window_end() const {
  const int64_t end = int64_t(window_start_) + window_width_ - 1;
  return static_cast<int>(layers_.empty() ? std::min<int64_t>(end, std::numeric_limits<int>::max()) : std::min<int64_t>(end, last_layer()));
}

void Interaction::set_filter(const scene::Filter& filter, std::vector<std::string> tensor_names) {
  base_.op_types = filter.op_types;
  base_.tensors = filter.tensors;
  base_.outside = filter.outside;
  tensor_names_ = std::move(tensor_names);
  window_start_ = std::max(filter.layer_min, 0);
  window_width_ = filter.layer_max >= std::numeric_limits<int>::max() - 1
                      ? kOpenWidth
                      : std::clamp(filter.layer_max - window_start_ + 1, 1, kOpenWidth - 1);
  initial_ = filter;
  initial_tensor_names_ = tensor_names_;
  ++filter_serial_;
}

void Interaction::set_layers(std::vector<LayerBox> layers) {
  layers_ = std::move(layers);
  window_start_ = std::min(window_start_, last_layer());
}

bool Interaction::step_window(int layers) {
  const int limit = layers_.empty() ? std::numeric_limits<int>::max() / 2 : last_layer();
  const int next = static_cast<int>(std::clamp<int64_t>(int64_t(window_start_) + layers, 0, limit));
  if (next == window_start_) return false;
  window_start_ = next;
  ++filter_serial_;
  return true;
}

bool Interaction::resize_window(int layers) {
  // The width as seen: an open or overlong window is first cut to the layers it shows.
  const int shown = window_end() - window_start_ + 1;
  const int max_width = layers_.empty() ? kOpenWidth - 1 : last_layer() + 1;
  const int next = std::clamp(shown + layers, 1, max_width);
  if (next == shown) return false;
  window_width_ = next;
  // Against the deepest layer, a wider window grows towards the input instead.
  if (!layers_.empty() && window_start_ + next - 1 > last_layer()) window_start_ = std::max(0, last_layer() - next + 1);
  ++filter_serial_;
  return true;
}

bool Interaction::set_outside(scene::Filter::Outside outside) {
  if (base_.outside == outside) return false;
  base_.outside = outside;
  ++filter_serial_;
  return true;
}

bool Interaction::reset_filters() {
  const scene::Filter before = filter();
  const auto names = initial_tensor_names_;
  const uint64_t serial = filter_serial_;
  set_filter(initial_, names);
  const scene::Filter after = filter();
  const bool changed = before.layer_min != after.layer_min || before.layer_max != after.layer_max ||
                       before.op_types != after.op_types || before.tensors != after.tensors || before.outside != after.outside;
  filter_serial_ = changed ? serial + 1 : serial;
  return changed;
}

bool Interaction::op_shown(const std::string& op) const {
  return base_.op_types.empty() || std::find(base_.op_types.begin(), base_.op_types.end(), op) != base_.op_types.end();
}

bool Interaction::toggle_op(const std::string& op) {
  std::vector<std::string> shown;
  for (const auto& [name, count] : op_counts_)
    if (op_shown(name) != (name == op)) shown.push_back(name);
  if (shown.empty()) return false;  // the last op shown stays
  if (shown.size() == op_counts_.size()) shown.clear();  // all of them: no op filter
  if (shown == base_.op_types) return false;
  base_.op_types = std::move(shown);
  ++filter_serial_;
  return true;
}

bool Interaction::isolate_tensor(model::TensorId tensor, const std::string& name) {
  if (base_.tensors == std::vector<model::TensorId>{tensor}) return false;
  base_.tensors = {tensor};
  tensor_names_ = {name};
  ++filter_serial_;
  return true;
}

bool Interaction::isolate_tensors(std::vector<model::TensorId> tensors, std::vector<std::string> names) {
  if (tensors.empty() || base_.tensors == tensors) return false;
  base_.tensors = std::move(tensors);
  tensor_names_ = std::move(names);
  ++filter_serial_;
  return true;
}

FilterMenu::Row FilterMenu::row(glm::vec2 p, size_t* op) const {
  if (!(p.x >= 0 && p.x < kWidth && p.y >= kPad)) return Row::None;
  const auto i = static_cast<size_t>((p.y - kPad) / kLine);
  if (i >= rows()) return Row::None;
  if (i == 0) return Row::Title;
  if (i <= ops) {
    if (op) *op = i - 1;
    return Row::Op;
  }
  const size_t k = i - ops;
  return k == 1 ? Row::Mode : k == 2 ? Row::IsolateTensor : k == 3 ? Row::IsolatePath : Row::Reset;
}

FilterMenu::Placement FilterMenu::desktop(float width, float height) const {
  // Below the prediction (about 190 px tall), above the selection panel (about 170 px).
  constexpr float kPrediction = 190, kSelection = 170, kMargin = 14;
  const float scale = std::clamp((height - kPrediction - kSelection) / size().y, 0.6f, 1.0f);
  return {{width - kMargin - size().x * scale, std::max(0.0f, height - kSelection - size().y * scale)}, scale};
}

std::vector<ScreenRect> panel_rects(std::span<const ScreenArea> areas, glm::vec2 window, const FilterMenu* menu) {
  std::vector<ScreenRect> rects;
  for (const ScreenArea& a : areas) {
    const glm::vec2 at{(a.corner & 1u) ? window.x - a.at.x - a.size.x : a.at.x, (a.corner & 2u) ? window.y - a.at.y - a.size.y : a.at.y};
    rects.push_back({at, at + a.size});
  }
  if (menu) {
    const FilterMenu::Placement placed = menu->desktop(window.x, window.y);
    rects.push_back({placed.origin, placed.origin + menu->size() * placed.scale});
  }
  return rects;
}

Command press_menu(Interaction& interaction, FilterMenu::Row row, size_t op) {
  Command c;
  switch (row) {
    case FilterMenu::Row::Op:
      if (op < interaction.op_counts().size()) c.filter_changed = interaction.toggle_op(interaction.op_counts()[op].first);
      break;
    case FilterMenu::Row::Mode:
      c.filter_changed = interaction.set_outside(interaction.filter_summary().mode == "dim" ? scene::Filter::Outside::Hide
                                                                                           : scene::Filter::Outside::Dim);
      break;
    case FilterMenu::Row::IsolateTensor:
      if (const auto& s = interaction.selection(); s && s->tensor != model::kNone)
        c.filter_changed = interaction.isolate_tensor(s->tensor, s->tensor_name);
      break;
    case FilterMenu::Row::IsolatePath:
      if (const auto& s = interaction.selection(); s && !s->path.empty())
        c.filter_changed = interaction.isolate_tensors(s->path, s->path_names);
      break;
    case FilterMenu::Row::Reset: c.filter_changed = interaction.reset_filters(); break;
    default: break;
  }
  return c;
}

FilterSummary Interaction::filter_summary() const {
  FilterSummary s;
  s.layer_min = window_start_;
  s.layer_max = window_end();
  s.ops = base_.op_types;
  s.tensors = tensor_names_;
  s.mode = base_.outside == scene::Filter::Outside::Dim ? "dim" : "hide";
  return s;
}

void Interaction::walk_to_window(glm::vec3 eye, glm::vec3 forward, float distance, float fit_fov_y) {
  if (layers_.empty()) return;
  // The window's first layer with blocks (or the nearest shallower one).
  int layer = std::min(window_start_, last_layer());
  while (layer < last_layer() && layers_[size_t(layer)].empty() && layer < window_end()) ++layer;
  while (layer > 0 && layers_[size_t(layer)].empty()) --layer;
  const LayerBox& box = layers_[size_t(layer)];
  if (box.empty()) return;
  if (glm::length(forward) < 1e-6f) return;
  forward = glm::normalize(forward);
  const glm::vec3 centre = (box.min + box.max) * 0.5f;
  if (fit_fov_y > 0) {
    const float half = 0.5f * std::max(box.max.y - box.min.y, box.max.z - box.min.z) * world_.scale;
    distance = std::max(distance, 1.15f * half / std::tan(fit_fov_y * 0.5f));
  }
  const glm::vec3 from = world_.translation;  // a walk in progress goes on from where it is
  const glm::vec3 to = world_.translation + (eye + forward * distance - world_.to_world(centre));
  walk_ = Walk{from, to, 0};
  if (!(options_.walk_seconds > 0)) advance(0);
}

void Interaction::fly_camera_to(glm::vec3 eye, glm::vec3 target) {
  const glm::vec3 d = target - eye;
  if (!(glm::length(d) > 0)) return;
  const glm::vec3 dir = glm::normalize(d);
  Flight f;
  f.from = camera_.position;
  f.to = eye;
  f.from_yaw = camera_.yaw;
  f.from_pitch = camera_.pitch;
  // The shortest turn to the new heading.
  f.to_yaw = camera_.yaw + std::remainder(std::atan2(dir.x, -dir.z) - camera_.yaw, 2 * glm::pi<float>());
  f.to_pitch = std::clamp(std::asin(std::clamp(dir.y, -1.0f, 1.0f)), -glm::radians(89.0f), glm::radians(89.0f));
  flight_ = f;
  camera_.far_plane = std::max(camera_.far_plane, glm::length(d) * 100);
  if (!(options_.walk_seconds > 0)) advance(0);
}

void Interaction::advance(float seconds) {
  if (flight_) {
    Flight& f = *flight_;
    f.t = options_.walk_seconds > 0 ? std::min(1.0f, f.t + std::max(seconds, 0.0f) / options_.walk_seconds) : 1.0f;
    const float e = f.t * f.t * (3 - 2 * f.t);
    camera_.position = glm::mix(f.from, f.to, e);
    camera_.yaw = f.from_yaw + (f.to_yaw - f.from_yaw) * e;
    camera_.pitch = f.from_pitch + (f.to_pitch - f.from_pitch) * e;
    if (f.t >= 1) flight_.reset();
  }
  if (!walk_) return;
  walk_->t = options_.walk_seconds > 0 ? std::min(1.0f, walk_->t + std::max(seconds, 0.0f) / options_.walk_seconds) : 1.0f;
  const float t = walk_->t;
  const float eased = t * t * (3 - 2 * t);  // smoothstep: no jump in position or speed at either end
  world_.translation = glm::mix(walk_->from, walk_->to, eased);
  if (t >= 1) walk_.reset();
}

// ---- DesktopControls ----------------------------------------------------------------------------

Command DesktopControls::key(Key key, Press press) {
  Command c;
  if (search().active()) {
    if (press == Press::Up) return c;
    return search_key(key);
  }
  if (key == Key::Other) return c;
  held_[static_cast<int>(key)] = press != Press::Up;
  if (press == Press::Up) return c;
  switch (key) {
    case Key::R:
      if (press == Press::Down) {
        interaction_.reset_view();
        c.filter_changed = interaction_.reset_filters();
      }
      break;
    case Key::PageDown:
    case Key::PageUp:
      c.filter_changed = interaction_.step_window(key == Key::PageDown ? +1 : -1);
      if (c.filter_changed) walk();
      break;
    case Key::End:
    case Key::Home:
      c.filter_changed = interaction_.resize_window(key == Key::Home ? +1 : -1);
      break;
    case Key::LeftBracket: c.filter_changed = interaction_.step_neuron_threshold(-1); break;
    case Key::RightBracket: c.filter_changed = interaction_.step_neuron_threshold(+1); break;
    case Key::Comma: c.filter_changed = interaction_.step_connection_threshold(-1); break;
    case Key::Period: c.filter_changed = interaction_.step_connection_threshold(+1); break;
    case Key::F12: c.screenshot = press == Press::Down; break;
    case Key::Slash:
      if (press == Press::Down) {
        search().open();
        skip_slash_ = true;
        std::fill(std::begin(held_), std::end(held_), false);  // typing does not fly
      }
      break;
    case Key::Escape: c.quit = true; break;
    case Key::Left: c.input_step = -1; break;
    case Key::Right: c.input_step = +1; break;
    case Key::C: c.compare_toggle = press == Press::Down; break;
    default: break;
  }
  return c;
}

Command DesktopControls::menu_click(float x, float y, bool* hit) {
  *hit = false;
  if (interaction_.op_counts().empty()) return {};
  const FilterMenu menu{interaction_.op_counts().size()};
  size_t op = 0;
  const FilterMenu::Row row = menu.row(menu.desktop(width_, height_).to_canvas({x, y}), &op);
  *hit = row != FilterMenu::Row::None;
  return press_menu(interaction_, row, op);
}

Command DesktopControls::button(Button button, Press press, float x, float y) {
  Command c;
  last_x_ = x, last_y_ = y;
  if (button == Button::Left && press == Press::Down) {
    bool hit = false;
    c = menu_click(x, y, &hit);
    if (hit) return c;
  }
  if (button == Button::Right) looking_ = press == Press::Down;
  if (button == Button::Left && press == Press::Down) c.select = interaction_.camera().ray_through(x, y, width_, height_);
  return c;
}

void DesktopControls::cursor(float x, float y) {
  if (looking_) interaction_.look(x - last_x_, y - last_y_);
  moved_ = moved_ || x != last_x_ || y != last_y_;
  last_x_ = x, last_y_ = y;
  cursor_in_ = x >= 0 && y >= 0 && x < width_ && y < height_;
}

std::optional<Ray> DesktopControls::pointer() const {
  if (!cursor_in_ || looking_) return std::nullopt;
  if (!interaction_.op_counts().empty()) {  // over the filter menu: it points at no tensor
    const FilterMenu menu{interaction_.op_counts().size()};
    if (menu.row(menu.desktop(width_, height_).to_canvas({last_x_, last_y_})) != FilterMenu::Row::None) return std::nullopt;
  }
  if (over_search(search(), last_x_, last_y_, width_, height_)) return std::nullopt;  // over the search box's list
  for (const ScreenArea& a : screen_areas_)  // over a panel of the view's text
    if (a.contains({last_x_, last_y_}, {width_, height_})) return std::nullopt;
  return interaction_.camera().ray_through(last_x_, last_y_, width_, height_);
}

std::optional<Ray> DesktopControls::take_hover() {
  if (!moved_ || looking_) return std::nullopt;
  moved_ = false;
  return interaction_.camera().ray_through(last_x_, last_y_, width_, height_);
}

void DesktopControls::scroll(float notches, float x, float y) {
  // Scale about the point under the cursor at the depth of the network's centre, so that what
  // the cursor points at stays put.
  const Ray ray = interaction_.camera().ray_through(x, y, width_, height_);
  const glm::vec3 centre = interaction_.world().to_world((interaction_.bounds_min() + interaction_.bounds_max()) * 0.5f);
  const float depth = std::max(glm::dot(centre - ray.origin, interaction_.camera().forward()), interaction_.camera().near_plane);
  const float along = depth / std::max(glm::dot(ray.direction, interaction_.camera().forward()), 1e-3f);
  interaction_.scale_about(ray.origin + ray.direction * along, std::pow(interaction_.options().scroll_factor, notches));
}

void DesktopControls::character(uint32_t codepoint) {
  // The '/' that opened the search arrives as a character too; it is not part of the query.
  const bool skip = skip_slash_ && codepoint == '/';
  skip_slash_ = false;
  if (!skip) search().type(codepoint);
}

Command DesktopControls::search_key(Key key) {
  Command c;
  switch (key) {
    case Key::Escape: search().close(); break;
    case Key::Backspace: search().backspace(); break;
    case Key::Up: search().move(-1); break;
    case Key::Down: search().move(+1); break;
    case Key::Enter: {
      const auto match = search().accept();
      if (!match) break;
      // Fly to face the block from its shallow side, looking along the network's depth, from
      // where it fills most of the view; then pick it there with a ray along its depth.
      const WorldTransform& w = interaction_.world();
      const glm::vec3 centre = (match->min + match->max) * 0.5f;
      const glm::vec3 depth = glm::normalize(w.rotation * glm::vec3(1, 0, 0));
      const float half = 0.5f * std::max({match->max.y - match->min.y, match->max.z - match->min.z, 1e-3f}) * w.scale;
      const float distance = 1.2f * half / std::tan(interaction_.camera().fov_y * 0.5f);
      const glm::vec3 target = w.to_world(centre);
      interaction_.fly_camera_to(target - depth * distance, target);
      const float before = 0.25f * std::max(match->max.x - match->min.x, 0.01f) + 0.01f;
      c.select = Ray{w.to_world(centre - glm::vec3(before, 0, 0)), depth};
      c.select_radius = 0.5f * std::max(std::min(match->max.y - match->min.y, match->max.z - match->min.z), 1e-3f);
      break;
    }
    default: break;
  }
  return c;
}

void DesktopControls::walk() {
  const FlyCamera& c = interaction_.camera();
  interaction_.walk_to_window(c.position, c.forward(), interaction_.options().arm_length, c.fov_y);
}

void DesktopControls::update(float seconds) {
  interaction_.advance(seconds);
  auto held = [this](Key k) { return held_[static_cast<int>(k)] ? 1.0f : 0.0f; };
  const glm::vec3 move(held(Key::D) - held(Key::A), held(Key::E) - held(Key::Q), held(Key::W) - held(Key::S));
  if (move == glm::vec3(0)) return;
  interaction_.fly(move, seconds * (held(Key::Shift) > 0 ? 4.0f : 1.0f));
}

}  // namespace nnxr::engine
