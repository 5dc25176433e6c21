#include "xr/gestures.h"

#include <algorithm>
#include <cmath>

#include <glm/gtc/matrix_transform.hpp>

namespace nnxr::xr {

namespace {

// The shortest-arc rotation taking direction a to direction b, restricted to turns about the
// vertical (Y) axis: a two-hand twist should not tip the network over.
glm::quat yaw_between(glm::vec3 a, glm::vec3 b) {
  glm::vec2 fa(a.x, a.z), fb(b.x, b.z);
  if (glm::length(fa) < 1e-4f || glm::length(fb) < 1e-4f) return {1.0f, 0.0f, 0.0f, 0.0f};
  // Angle about +Y taking fa to fb (x right, z towards the viewer, so a positive angle turns x to -z).
  float angle = std::atan2(fa.y, fa.x) - std::atan2(fb.y, fb.x);
  return glm::angleAxis(angle, glm::vec3(0.0f, 1.0f, 0.0f));
}

}  // namespace

bool Gestures::pressed(bool was, float value) const {
  return was ? value > options_.release : value >= options_.press;
}

void Gestures::begin_one_hand(int hand, const HandState& h, const WorldTransform& world) {
  one_hand_ = hand;
  glm::quat inv = glm::inverse(h.grip.orientation);
  grab_rotation_ = inv * world.rotation;
  grab_offset_ = inv * (world.translation - h.grip.position);
}

void Gestures::begin_two_hands(const std::array<HandState, 2>& hands, const WorldTransform& world) {
  two_hand_active_ = true;
  one_hand_ = -1;
  start_mid_ = 0.5f * (hands[0].grip.position + hands[1].grip.position);
  start_span_ = hands[1].grip.position - hands[0].grip.position;
  start_world_ = world;
}

GestureEvents Gestures::update(const std::array<HandState, 2>& hands, double dt, WorldTransform& world) {
  GestureEvents events;

  // Squeeze edges, with hysteresis; an untracked hand lets go.
  std::array<bool, 2> was = grab_;
  for (int i = 0; i < 2; ++i) grab_[i] = hands[i].tracked && pressed(grab_[i], hands[i].squeeze);

  if (grab_[0] && grab_[1]) {
    if (!two_hand_active_) begin_two_hands(hands, world);
    glm::vec3 mid = 0.5f * (hands[0].grip.position + hands[1].grip.position);
    glm::vec3 span = hands[1].grip.position - hands[0].grip.position;
    float start_len = glm::length(start_span_);
    float factor = start_len > 1e-4f ? glm::length(span) / start_len : 1.0f;
    float scale = std::clamp(start_world_.scale * factor, options_.min_scale, options_.max_scale);
    factor = scale / start_world_.scale;
    glm::quat turn = yaw_between(start_span_, span);
    // Scale and turn about the starting midpoint, then carry that point with the hands.
    world.rotation = glm::normalize(turn * start_world_.rotation);
    world.scale = scale;
    world.translation = mid + turn * (factor * (start_world_.translation - start_mid_));
  } else {
    if (two_hand_active_) {
      two_hand_active_ = false;
      // The hand still squeezing continues as a one-hand grab from here.
      for (int i = 0; i < 2; ++i)
        if (grab_[i]) begin_one_hand(i, hands[i], world);
      if (!grab_[0] && !grab_[1]) one_hand_ = -1;
    } else {
      for (int i = 0; i < 2; ++i)
        if (grab_[i] && !was[i]) begin_one_hand(i, hands[i], world);
      if (one_hand_ >= 0 && !grab_[one_hand_]) one_hand_ = -1;
    }
    if (one_hand_ >= 0) {
      const Pose& g = hands[one_hand_].grip;
      world.rotation = glm::normalize(g.orientation * grab_rotation_);
      world.translation = g.position + g.orientation * grab_offset_;
    }
  }

  // Thumbstick of the right hand: Y steps the neuron threshold, X the connection threshold. A push
  // past the dead zone steps once, and again every repeat_seconds while held.
  // The left thumbstick steps the layer window the same way (Y: deeper/shallower, X: width).
  const HandState& right = hands[kRight];
  const HandState& left = hands[kLeft];
  const std::array<float, 4> axes{right.thumbstick.y, right.thumbstick.x, left.thumbstick.y, left.thumbstick.x};
  for (int a = 0; a < 4; ++a) {
    const bool tracked = a < 2 ? right.tracked : left.tracked;
    int dir = !tracked ? 0 : axes[a] > options_.stick_dead_zone ? 1 : axes[a] < -options_.stick_dead_zone ? -1 : 0;
    int steps = 0;
    if (dir != 0 && dir != stick_dir_[a]) {
      steps = dir;
      stick_held_[a] = 0;
    } else if (dir != 0) {
      stick_held_[a] += dt;
      if (stick_held_[a] >= options_.repeat_seconds) {
        steps = dir;
        stick_held_[a] -= options_.repeat_seconds;
      }
    }
    stick_dir_[a] = dir;
    int* const out[] = {&events.neuron_steps, &events.connection_steps, &events.window_steps, &events.window_resize};
    *out[a] += steps;
    if (steps != 0) events.haptic_tick[a < 2 ? kRight : kLeft] = true;
  }

  // Trigger: a press selects along that hand's aim ray (world space).
  for (int i = 0; i < 2; ++i) {
    bool was_down = trigger_[i];
    trigger_[i] = hands[i].tracked && pressed(trigger_[i], hands[i].trigger);
    if (trigger_[i] && !was_down && !events.select) {
      const Pose& aim = hands[i].aim;
      events.select = engine::Ray{aim.position, glm::normalize(aim.orientation * glm::vec3(0.0f, 0.0f, -1.0f))};
      events.select_hand = Hand(i);
    }
    bool menu_was = menu_[i];
    menu_[i] = hands[i].tracked && hands[i].menu;
    if (menu_[i] && !menu_was) events.reset = true;
    const bool next_was = next_[i], previous_was = previous_[i];
    next_[i] = hands[i].next_input;
    previous_[i] = hands[i].previous_input;
    if (next_[i] && !next_was) events.input_step += 1;
    if (previous_[i] && !previous_was) events.input_step -= 1;
    const bool compare_was = compare_[i];
    compare_[i] = hands[i].compare_show;
    if (compare_[i] && !compare_was) events.compare_toggle = true;
  }
  return events;
}

}  // namespace nnxr::xr
