// Turns per-frame controller state into changes of the network's world transform, the filter
// thresholds and selection requests: one-hand grab, two-hand scale/rotate, thumbstick thresholds
// with a haptic tick per step, trigger selection with the aim ray, menu to reset.
//
// Pure logic (glm and the engine's interaction types, no OpenXR, no Vulkan): the XR session feeds
// it what xrSyncActions/xrLocateSpace returned, tests feed it scripted hands. The network's
// transform is the engine's WorldTransform (network → world). Owned and called by the frame
// thread; O(1) per frame.
#pragma once

#include <array>
#include <optional>

#include <glm/glm.hpp>
#include <glm/gtc/quaternion.hpp>

#include "engine/interaction.h"

namespace nnxr::xr {

// A rigid pose in the stage/local space.
struct Pose {
  glm::vec3 position{0.0f};
  glm::quat orientation{1.0f, 0.0f, 0.0f, 0.0f};
};

using engine::WorldTransform;

// One hand's state this frame. `tracked` false: its poses are invalid and it cannot grab.
struct HandState {
  bool tracked = false;
  Pose grip;
  Pose aim;
  float squeeze = 0;           // 0..1
  float trigger = 0;           // 0..1
  glm::vec2 thumbstick{0.0f};  // -1..1
  bool menu = false;
  bool next_input = false, previous_input = false;  // X and Y (left Touch controller)
  bool compare_show = false;  // A (right Touch controller): show input A, B or A − B
};

enum Hand { kLeft = 0, kRight = 1 };

struct GestureOptions {
  float press = 0.7f;    // analog value that counts as pressed
  float release = 0.3f;  // ... and as released again (hysteresis)
  float min_scale = 1e-3f, max_scale = 1e3f;  // as engine::InteractionOptions (a placed BERT is at 0.08)
  float stick_dead_zone = 0.5f;
  float threshold_step = 0.05f;   // quantile step per thumbstick tick
  double repeat_seconds = 0.25;   // a held stick steps again after this long
};

// What a frame's input asks for beyond the world transform.
struct GestureEvents {
  int neuron_steps = 0;      // +n: raise the neuron threshold n steps; -n: lower
  int connection_steps = 0;  // same for the connection threshold
  int window_steps = 0;      // left stick forward (+) / back (−): step the layer window deeper / shallower
  int window_resize = 0;     // left stick right (+) / left (−): widen / narrow the layer window
  std::array<bool, 2> haptic_tick{};  // pulse this hand (a threshold step happened)
  // Trigger pressed: select what the hand's aim ray hits. World space (OpenXR aim: −Z forward),
  // as engine::Command::select takes it; WorldTransform::to_network() gives the network's view.
  std::optional<engine::Ray> select;
  std::optional<Hand> select_hand;
  bool reset = false;  // menu pressed: the caller resets transform and filter
  int input_step = 0;  // +1: next input (X pressed), -1: previous (Y pressed)
  bool compare_toggle = false;  // the compare button pressed: A → B → A − B → A
};

class Gestures {
 public:
  explicit Gestures(GestureOptions options = {}) : options_(options) {}

  // Advances by one frame of `dt` seconds: updates `world` for grabs and returns the events.
  // Thumbsticks: Y of the right hand drives the neuron threshold, X the connection threshold; Y
  // of the left hand steps the layer window, X narrows (left) and widens (right) it.
  GestureEvents update(const std::array<HandState, 2>& hands, double dt, WorldTransform& world);

  bool grabbing(Hand hand) const { return grab_[hand]; }
  bool two_handed() const { return two_hand_active_; }

 private:
  bool pressed(bool was, float value) const;
  void begin_one_hand(int hand, const HandState& h, const WorldTransform& world);
  void begin_two_hands(const std::array<HandState, 2>& hands, const WorldTransform& world);

  GestureOptions options_;
  std::array<bool, 2> grab_{};
  std::array<bool, 2> trigger_{};
  std::array<bool, 2> menu_{};
  std::array<bool, 2> next_{}, previous_{}, compare_{};
  // One-hand grab: the network's pose relative to the grabbing hand at grab start.
  int one_hand_ = -1;
  glm::quat grab_rotation_{1.0f, 0.0f, 0.0f, 0.0f};  // hand⁻¹ · world rotation
  glm::vec3 grab_offset_{0.0f};                       // world translation in hand space
  // Two-hand grab: the hands' midpoint and span at start, and the world transform then.
  bool two_hand_active_ = false;
  glm::vec3 start_mid_{0.0f}, start_span_{0.0f};
  WorldTransform start_world_;
  // Thumbstick stepping, per axis (0: right Y, neuron; 1: right X, connection; 2: left Y, window
  // step; 3: left X, window width).
  std::array<int, 4> stick_dir_{};
  std::array<double, 4> stick_held_{};
};

}  // namespace nnxr::xr
