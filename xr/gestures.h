// Turns per-frame controller state into changes of the network's world transform, the filter
// thresholds and selection requests: one-hand grab, two-hand scale/rotate, thumbstick thresholds
// with a haptic tick per step, trigger selection with the aim ray, menu to reset.
//
// Pure logic (glm only, no OpenXR): the XR session feeds it what xrSyncActions/xrLocateSpace
// returned, tests feed it scripted hands. Owned and called by the frame thread; O(1) per frame.
#pragma once

#include <array>
#include <optional>

#include <glm/glm.hpp>
#include <glm/gtc/quaternion.hpp>

namespace nnxr::xr {

// A rigid pose in the stage/local space.
struct Pose {
  glm::vec3 position{0.0f};
  glm::quat orientation{1.0f, 0.0f, 0.0f, 0.0f};
};

// Similarity transform of the network: world = T(translation) · R(rotation) · S(scale) · local.
struct WorldTransform {
  glm::vec3 translation{0.0f};
  glm::quat rotation{1.0f, 0.0f, 0.0f, 0.0f};
  float scale = 1.0f;

  glm::mat4 matrix() const;
  glm::vec3 apply(glm::vec3 local) const;
  glm::vec3 inverse_apply(glm::vec3 world) const;
};

// One hand's state this frame. `tracked` false: its poses are invalid and it cannot grab.
struct HandState {
  bool tracked = false;
  Pose grip;
  Pose aim;
  float squeeze = 0;           // 0..1
  float trigger = 0;           // 0..1
  glm::vec2 thumbstick{0.0f};  // -1..1
  bool menu = false;
};

enum Hand { kLeft = 0, kRight = 1 };

struct GestureOptions {
  float press = 0.7f;    // analog value that counts as pressed
  float release = 0.3f;  // ... and as released again (hysteresis)
  float min_scale = 0.01f, max_scale = 100.0f;
  float stick_dead_zone = 0.5f;
  float threshold_step = 0.05f;   // quantile step per thumbstick tick
  double repeat_seconds = 0.25;   // a held stick steps again after this long
};

// What a frame's input asks for beyond the world transform.
struct GestureEvents {
  int neuron_steps = 0;      // +n: raise the neuron threshold n steps; -n: lower
  int connection_steps = 0;  // same for the connection threshold
  std::array<bool, 2> haptic_tick{};  // pulse this hand (a threshold step happened)
  // Trigger pressed: select what the aim ray hits. Ray in the network's local coordinates.
  std::optional<std::array<glm::vec3, 2>> select_ray;  // origin, unit direction
  std::optional<Hand> select_hand;
  bool reset = false;  // menu pressed: the caller resets transform and filter
};

class Gestures {
 public:
  explicit Gestures(GestureOptions options = {}) : options_(options) {}

  // Advances by one frame of `dt` seconds: updates `world` for grabs and returns the events.
  // Thumbsticks: Y of the right hand drives the neuron threshold, X the connection threshold.
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
  // One-hand grab: the network's pose relative to the grabbing hand at grab start.
  int one_hand_ = -1;
  glm::quat grab_rotation_{1.0f, 0.0f, 0.0f, 0.0f};  // hand⁻¹ · world rotation
  glm::vec3 grab_offset_{0.0f};                       // world translation in hand space
  // Two-hand grab: the hands' midpoint and span at start, and the world transform then.
  bool two_hand_active_ = false;
  glm::vec3 start_mid_{0.0f}, start_span_{0.0f};
  WorldTransform start_world_;
  // Thumbstick stepping, per axis (0: neuron/Y, 1: connection/X).
  std::array<int, 2> stick_dir_{};
  std::array<double, 2> stick_held_{};
};

}  // namespace nnxr::xr
