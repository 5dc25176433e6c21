// Interaction: where the viewer stands, where the network stands and how big it is, the filter
// thresholds, and what is selected. Pure logic (no Vulkan, no window): the desktop window feeds it
// keys and mouse motion through DesktopControls; the XR layer will feed the same verbs (grab,
// scale_about, step thresholds, select) from controllers.
//
// Spaces: "network space" is where scene::Layout puts neurons (metres at scale 1, X is depth);
// "world space" is the room/viewer space. WorldTransform maps network → world. The camera lives in
// world space, Y up, looking down −Z when yaw = pitch = 0.
//
// Threads: one owner (the frame thread); no internal locking. Lives as long as the viewer.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <glm/glm.hpp>
#include <glm/gtc/quaternion.hpp>

#include "engine/camera.h"
#include "engine/search.h"
#include "model/scene/scene.h"

namespace nnxr::engine {

struct Ray {
  glm::vec3 origin{0};
  glm::vec3 direction{0, 0, -1};  // unit length
};

// Network → world: world = translation + rotation · (scale · network).
struct WorldTransform {
  glm::vec3 translation{0};
  glm::quat rotation{1, 0, 0, 0};
  float scale = 1;

  glm::mat4 matrix() const;
  glm::vec3 to_world(glm::vec3 network) const;
  glm::vec3 to_network(glm::vec3 world) const;
  Ray to_network(const Ray& world) const;  // direction stays unit length
};

// A fly camera: position and yaw/pitch (radians; pitch clamped short of ±90°).
struct FlyCamera {
  glm::vec3 position{0, 0, 1};
  float yaw = 0, pitch = 0;
  float fov_y = glm::radians(60.0f);
  float near_plane = 0.01f, far_plane = 1000.0f;

  glm::vec3 forward() const;
  glm::vec3 right() const;
  glm::vec3 up() const;
  glm::mat4 view() const;
  // Vulkan clip space: depth 0..1, Y pointing down in framebuffer coordinates.
  glm::mat4 projection(float aspect) const;
  // The world-space ray through pixel (x, y) of a width × height framebuffer (origin top left).
  Ray ray_through(float x, float y, float width, float height) const;
};

// Filter thresholds as positions on a ladder of quantiles (0, 0.05, ..., 0.95, 0.98, 0.99,
// 0.995, 0.999): each key press moves one rung, clamped at both ends.
struct Thresholds {
  static const std::vector<float>& ladder();
  int neuron_rung = 0;
  int connection_rung = 0;
  float neuron() const;
  float connection() const;
};

// The selected neuron, as shown to the user (from Worker's Selection).
struct SelectionState {
  std::string tensor_name, node_name, op_type;
  std::vector<int64_t> index;
  int64_t element = 0;
  float value = 0;
  std::optional<uint32_t> neuron;  // resident neuron index (highlighted)
  model::TensorId tensor = model::kNone;
  // The path that fed it (scene::upstream_tensors): laid-out tensors, its own first.
  std::vector<model::TensorId> path;
  std::vector<std::string> path_names;
};

// The filter beyond the thresholds, as reported by `view --stats` (filter: {...}).
struct FilterSummary {
  int layer_min = 0, layer_max = 0;  // the layer window, clamped to the model's layers
  std::vector<std::string> ops;      // op types shown; empty: all
  std::vector<std::string> tensors;  // tensors shown; empty: all
  std::string mode = "hide";         // what happens outside the filter: "hide" or "dim"
};

// One layer's extent in network space, for walking to it (min > max: the layer has no blocks).
struct LayerBox {
  glm::vec3 min{1}, max{-1};
  bool empty() const { return min.x > max.x; }
};

// The defaults every view starts from (desktop, headset and `render`): all neurons, and the
// strongest half of each segment's connections.
inline constexpr int kDefaultNeuronRung = 0;
inline constexpr int kDefaultConnectionRung = 10;  // quantile 0.5 on Thresholds::ladder()

struct InteractionOptions {
  float fly_speed = 0.5f;               // fraction of the network's extent per second
  float look_radians_per_pixel = 0.004f;
  float scroll_factor = 1.1f;           // scale per scroll notch
  float min_scale = 1e-3f, max_scale = 1e3f;
  int initial_neuron_rung = kDefaultNeuronRung;
  int initial_connection_rung = kDefaultConnectionRung;
  float walk_seconds = 0.3f;            // a layer-window step slides the network this long
  float arm_length = 0.6f;              // metres from the eye to the window's first layer
};

class Interaction {
 public:
  explicit Interaction(InteractionOptions options = {});

  // The network's bounds in network space; puts the camera at the home view.
  void set_bounds(glm::vec3 min, glm::vec3 max);
  // Where reset_view() puts the camera; by default a three-quarter view of the whole network.
  // `move`: false keeps the camera where it is (the home changed under a view the user moved).
  void set_home(glm::vec3 eye, glm::vec3 target, float fov_y, bool move = true);
  // The camera and the network stand as reset_view() put them (nothing moved them since).
  bool at_home() const;
  // Home view: identity world transform, camera at the home eye looking at its target.
  void reset_view();

  // Continuous motion. `move` is camera-local (x right, y up, z forward), each −1..1.
  void fly(glm::vec3 move, float seconds);
  void look(float dx_pixels, float dy_pixels);
  // Scales the network about a world-space point (the point stays where it is).
  void scale_about(glm::vec3 pivot, float factor);
  // Applies a rigid world-space motion to the network (XR grab: the hand's motion this frame).
  void move_network(const glm::mat4& delta);
  // Replaces the world transform (XR: the gesture tracker owns it while a grab is active).
  void set_world(const WorldTransform& world) { world_ = world; }

  // Both thresholds back to their initial rungs. Returns true when that changed them.
  bool reset_thresholds();
  // Threshold steps (+1 / −1 rungs). Return true when the threshold changed.
  bool step_neuron_threshold(int rungs);
  bool step_connection_threshold(int rungs);
  // The filter the thresholds, the layer window, the op types and the tensors describe;
  // filter_serial() grows by one on every change.
  scene::Filter filter() const;
  uint64_t filter_serial() const { return filter_serial_; }

  // Layer window, op types, tensors and dim/hide, e.g. from the command line (thresholds are not
  // touched). `tensor_names` name filter.tensors, in order. It is also what reset_filters()
  // returns to.
  void set_filter(const scene::Filter& filter, std::vector<std::string> tensor_names);
  // The model's layers (index = layer), for the window's bounds and the walk.
  void set_layers(std::vector<LayerBox> layers);
  // The layer window [start, start + width − 1] (clamped to the model's last layer). step_window
  // moves its start deeper (+) or shallower (−); resize_window widens (+) or narrows (−) it,
  // never below one layer. Return true when the filter changed.
  bool step_window(int layers);
  bool resize_window(int layers);
  bool set_outside(scene::Filter::Outside outside);
  // Back to the filter given to set_filter() (or none). Returns true when that changed it.
  bool reset_filters();
  FilterSummary filter_summary() const;

  // Slides the network over options().walk_seconds (eased) so that the layer window's first layer
  // stands `distance` in front of `eye` along `forward` (world space). With fit_fov_y > 0 the
  // distance grows until the layer fits that field of view.
  void walk_to_window(glm::vec3 eye, glm::vec3 forward, float distance, float fit_fov_y = 0);
  // Flies the camera over options().walk_seconds (eased) to `eye`, looking at `target` (world).
  void fly_camera_to(glm::vec3 eye, glm::vec3 target);
  bool flying() const { return flight_.has_value(); }
  // Advances a walk or a flight in progress (once per frame).
  void advance(float seconds);
  bool walking() const { return walk_.has_value(); }
  void stop_walk() { walk_.reset(); }  // the network stays where the walk had taken it

  // Op types: the model's own list with its laid-out tensor counts (set with the model), which the
  // filter menu toggles. toggle_op shows a hidden op or hides a shown one (never the last shown);
  // isolate_tensor shows that tensor alone. Return true when the filter changed.
  void set_op_counts(std::vector<std::pair<std::string, int>> ops) { op_counts_ = std::move(ops); }
  const std::vector<std::pair<std::string, int>>& op_counts() const { return op_counts_; }
  bool op_shown(const std::string& op) const;
  bool toggle_op(const std::string& op);
  bool isolate_tensor(model::TensorId tensor, const std::string& name);
  // Shows these tensors alone (`names` in the same order), e.g. the path that fed the selection.
  bool isolate_tensors(std::vector<model::TensorId> tensors, std::vector<std::string> names);

  // The desktop's find-by-name box (the tensors come with the model).
  Search& search() { return search_; }
  const Search& search() const { return search_; }

  void select(std::optional<SelectionState> selection) { selection_ = std::move(selection); }

  const FlyCamera& camera() const { return camera_; }
  const WorldTransform& world() const { return world_; }
  const Thresholds& thresholds() const { return thresholds_; }
  const std::optional<SelectionState>& selection() const { return selection_; }
  glm::vec3 bounds_min() const { return min_; }
  glm::vec3 bounds_max() const { return max_; }
  const InteractionOptions& options() const { return options_; }
  float extent() const;  // diagonal of the bounds (network space, ≥ a small minimum)

 private:
  InteractionOptions options_;
  glm::vec3 min_{-0.5f}, max_{0.5f};
  std::optional<std::pair<glm::vec3, glm::vec3>> home_;  // eye, target
  float home_fov_y_ = glm::radians(60.0f);
  FlyCamera camera_;
  WorldTransform world_;
  Thresholds thresholds_;
  uint64_t filter_serial_ = 0;
  std::optional<SelectionState> selection_;

  static constexpr int kOpenWidth = 1 << 28;  // a window open at its deep end
  int last_layer() const { return std::max(static_cast<int>(layers_.size()) - 1, 0); }
  int window_end() const;  // last layer of the window, clamped when the layers are known
  scene::Filter base_;     // op types, tensors, outside (its layer range is the window's)
  std::vector<std::string> tensor_names_;
  scene::Filter initial_;
  std::vector<std::string> initial_tensor_names_;
  int window_start_ = 0, window_width_ = kOpenWidth;
  std::vector<LayerBox> layers_;
  struct Walk {
    glm::vec3 from{0}, to{0};
    float t = 0;  // 0..1 of the slide
  };
  std::optional<Walk> walk_;
  struct Flight {
    glm::vec3 from{0}, to{0};
    float from_yaw = 0, to_yaw = 0, from_pitch = 0, to_pitch = 0;
    float t = 0;
  };
  std::optional<Flight> flight_;
  Search search_;
  std::vector<std::pair<std::string, int>> op_counts_;
};

// The filter menu: the left hand's menu in the headset, the same panel on the desktop. A title
// row, one row per op type (the model's own list with its tensor counts, as toggles), then dimmed
// or hidden outside the filter, isolate the selected tensor, isolate the path that fed it, reset
// filters. It lives on its own canvas, in pixels from its top left (x right, y down): the worker
// composes its text there (engine/annotations.h compose_menu), the desktop draws it where
// desktop() says, the headset on a plane held by the left hand (xr/feedback.h hand_menu). row() says which row a
// canvas point hits, for a click or the right hand's aim ray.
struct FilterMenu {
  enum class Row : uint8_t { None, Title, Op, Mode, IsolateTensor, IsolatePath, Reset };
  static constexpr float kLine = 28;   // row height, canvas pixels
  static constexpr float kWidth = 340;
  static constexpr float kPad = 6;     // above the first row and below the last
  size_t ops = 0;
  size_t rows() const { return ops + 6; }
  glm::vec2 size() const { return {kWidth, kLine * float(rows()) + 2 * kPad}; }
  float row_top(size_t i) const { return kPad + kLine * float(i); }
  // The row at canvas point p; `op` gets the op index for Row::Op.
  Row row(glm::vec2 p, size_t* op = nullptr) const;
  // Where the desktop puts the canvas in a window of width × height pixels: at the right edge,
  // between the prediction (top right) and the selection (bottom right), shrunk (to no less than
  // 0.6) to fit; the left side has the title, the input picture, the legend and the search box.
  // Screen = origin + scale · canvas.
  struct Placement {
    glm::vec2 origin{0};
    float scale = 1;
    glm::vec2 to_canvas(glm::vec2 screen) const { return (screen - origin) / scale; }
    glm::vec2 to_screen(glm::vec2 canvas) const { return origin + canvas * scale; }
  };
  Placement desktop(float width, float height) const;
};

struct Command;
// Does what a menu row says (a click on the desktop, the trigger in the headset): toggles the op,
// switches dimmed/hidden, isolates the selected tensor or the path that fed it, resets filters.
Command press_menu(Interaction& interaction, FilterMenu::Row row, size_t op);

// ---- desktop bindings --------------------------------------------------------------------------

enum class Key : uint8_t {
  W, A, S, D, Q, E, Shift, R, LeftBracket, RightBracket, Comma, Period, F12, Escape,
  PageUp, PageDown, Home, End, Slash, Enter, Backspace, Up, Down, Left, Right, C, Other
};
enum class Button : uint8_t { Left, Right, Other };
enum class Press : uint8_t { Down, Up, Repeat };

// What the frame loop must do after an input event beyond what Interaction already changed.
struct Command {
  bool filter_changed = false;
  bool screenshot = false;
  bool quit = false;
  std::optional<Ray> select;  // world-space pick ray (left click, or a search's match)
  std::optional<float> select_radius;  // pick radius in network metres; unset: about a neuron
  int input_step = 0;         // to the next (+1) or previous (-1) of several inputs
  bool compare_toggle = false;  // compare mode: show A, B, A − B in turn
};

// A rectangle of the window fixed to one of its corners (a panel of the view's text, engine/
// annotations.h): its near corner `at` pixels in from the window's corner (corner: bit 0 the
// right, bit 1 the bottom, as engine/text.h's Corner), `size` pixels across and down.
struct ScreenArea {
  uint32_t corner = 0;
  glm::vec2 at{0}, size{0};
  bool contains(glm::vec2 p, glm::vec2 window) const {
    const float x0 = (corner & 1u) ? window.x - at.x - size.x : at.x, y0 = (corner & 2u) ? window.y - at.y - size.y : at.y;
    return p.x >= x0 && p.x <= x0 + size.x && p.y >= y0 && p.y <= y0 + size.y;
  }
};

// The pixel rectangles of `areas` in a window of `window` pixels and, when `menu` is given, of the
// filter menu as FilterMenu::desktop places it there: what the framing of the desktop's home view
// and of `render` keeps the blocks clear of (engine/camera.h frame_clear).
std::vector<ScreenRect> panel_rects(std::span<const ScreenArea> areas, glm::vec2 window, const FilterMenu* menu = nullptr);

// Desktop keyboard and mouse bindings (DESIGN.md "Interaction"): WASD (+Q/E down/up, Shift fast)
// fly, right-drag looks around, scroll scales the network about the point under the cursor, R
// resets the view and the filters, [ ] step the neuron threshold, , . the connection threshold,
// Page Down / Page Up step the layer window deeper / shallower and walk to it, End / Home narrow /
// widen it, left click selects, F12 saves a screenshot, ←/→ step through several inputs, C flips
// compare mode between A, B and A − B, Escape quits. Frame thread only.
class DesktopControls {
 public:
  explicit DesktopControls(Interaction& interaction) : interaction_(interaction) {}

  void set_framebuffer(float width, float height) { width_ = width, height_ = height; }
  Command key(Key key, Press press);
  // A typed character (for the search box; ignored while it is closed).
  void character(uint32_t codepoint);
  Command button(Button button, Press press, float x, float y);
  void cursor(float x, float y);
  void scroll(float notches, float x, float y);
  // Applies held keys for `seconds` of motion (once per frame).
  void update(float seconds);
  bool looking() const { return looking_; }
  // The ray through the mouse when it moved since the last call and the view is not being
  // turned (for the legend's hover); nullopt otherwise.
  std::optional<Ray> take_hover();
  // The ray through the mouse cursor while it is in the window, off the filter menu, the search
  // box and the panels of set_screen_areas(), and the view is not being turned (what the focus
  // follows); nullopt otherwise.
  std::optional<Ray> pointer() const;
  // Where the view's text has its panels (title, input picture, prediction, legend, selection).
  void set_screen_areas(std::vector<ScreenArea> areas) { screen_areas_ = std::move(areas); }
  // The cursor left the window (pointer() is nullopt until it moves in again).
  void cursor_left() { cursor_in_ = false; }
  Search& search() { return interaction_.search(); }
  const Search& search() const { return interaction_.search(); }

 private:
  Command search_key(Key key);  // a key while the search is open

  void walk();  // slides the network to the layer window's first layer

  Interaction& interaction_;
  float width_ = 1, height_ = 1;
  bool held_[static_cast<int>(Key::Other)] = {};
  bool looking_ = false;
  float last_x_ = 0, last_y_ = 0;
  float press_x_ = 0, press_y_ = 0;
  bool moved_ = false;  // the cursor moved since take_hover()
  bool cursor_in_ = false;  // the cursor's position is known and inside the window
  Command menu_click(float x, float y, bool* hit);
  bool skip_slash_ = false;  // the search was just opened by '/', whose character comes next
  std::vector<ScreenArea> screen_areas_;
};

}  // namespace nnxr::engine
