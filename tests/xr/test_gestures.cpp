// Grab, two-hand scale/rotate, thumbstick thresholds, selection and reset from scripted hands.
#include "xr/gestures.h"

#include <cmath>

#include <glm/gtc/quaternion.hpp>
#include <gtest/gtest.h>

namespace nnxr::xr {
namespace {

constexpr double kDt = 1.0 / 90;

HandState hand_at(glm::vec3 p, float squeeze = 0, glm::quat q = {1, 0, 0, 0}) {
  HandState h;
  h.tracked = true;
  h.grip = {p, q};
  h.aim = {p, q};
  h.squeeze = squeeze;
  return h;
}

void expect_near(glm::vec3 a, glm::vec3 b, float tol = 1e-4f) {
  EXPECT_NEAR(a.x, b.x, tol);
  EXPECT_NEAR(a.y, b.y, tol);
  EXPECT_NEAR(a.z, b.z, tol);
}

TEST(Gestures, OneHandGrabFollowsHandInPositionAndRotation) {
  Gestures g;
  WorldTransform w;
  w.translation = {0, 1, -2};
  glm::vec3 local_point(0.5f, 0.2f, 0.1f);
  std::array<HandState, 2> hands{hand_at({-0.3f, 1, -0.5f}), hand_at({0.3f, 1, -0.5f}, 1.0f)};
  g.update(hands, kDt, w);
  ASSERT_TRUE(g.grabbing(kRight));
  glm::vec3 before_world = w.to_world(local_point);
  glm::vec3 before_in_hand = glm::inverse(hands[1].grip.orientation) * (before_world - hands[1].grip.position);

  // Move and turn the hand 90° about Y: the point keeps its place relative to the hand.
  hands[1].grip.position = {0.6f, 1.2f, -0.4f};
  hands[1].grip.orientation = glm::angleAxis(glm::radians(90.0f), glm::vec3(0, 1, 0));
  g.update(hands, kDt, w);
  glm::vec3 after_world = w.to_world(local_point);
  glm::vec3 after_in_hand = glm::inverse(hands[1].grip.orientation) * (after_world - hands[1].grip.position);
  expect_near(after_in_hand, before_in_hand);
  EXPECT_FLOAT_EQ(w.scale, 1.0f);

  // Release: the network stays where it was let go.
  hands[1].squeeze = 0.1f;
  WorldTransform held = w;
  hands[1].grip.position += glm::vec3(1, 0, 0);
  g.update(hands, kDt, w);
  EXPECT_FALSE(g.grabbing(kRight));
  expect_near(w.translation, held.translation);
}

TEST(Gestures, SqueezeHysteresis) {
  Gestures g;
  WorldTransform w;
  std::array<HandState, 2> hands{hand_at({0, 1, 0}, 0.5f), hand_at({1, 1, 0})};
  g.update(hands, kDt, w);
  EXPECT_FALSE(g.grabbing(kLeft));  // 0.5 < press
  hands[0].squeeze = 0.8f;
  g.update(hands, kDt, w);
  EXPECT_TRUE(g.grabbing(kLeft));
  hands[0].squeeze = 0.5f;  // still above release
  g.update(hands, kDt, w);
  EXPECT_TRUE(g.grabbing(kLeft));
  hands[0].tracked = false;  // tracking lost lets go
  g.update(hands, kDt, w);
  EXPECT_FALSE(g.grabbing(kLeft));
}

TEST(Gestures, TwoHandsScaleAboutTheirMidpoint) {
  Gestures g;
  WorldTransform w;
  w.translation = {0, 1, -2};
  std::array<HandState, 2> hands{hand_at({-0.2f, 1, -1}, 1), hand_at({0.2f, 1, -1}, 1)};
  g.update(hands, kDt, w);
  ASSERT_TRUE(g.two_handed());
  glm::vec3 mid(0, 1, -1);
  glm::vec3 local_mid = w.to_network(mid);
  // Hands twice as far apart, same midpoint: scale doubles, the midpoint stays fixed.
  hands[0].grip.position = {-0.4f, 1, -1};
  hands[1].grip.position = {0.4f, 1, -1};
  g.update(hands, kDt, w);
  EXPECT_NEAR(w.scale, 2.0f, 1e-5f);
  expect_near(w.to_world(local_mid), mid);
  // The network's origin moved away from the midpoint by the factor.
  expect_near(w.translation, mid + 2.0f * (glm::vec3(0, 1, -2) - mid));
}

TEST(Gestures, TwoHandsRotateAboutVerticalAndClampScale) {
  Gestures g;
  WorldTransform w;
  std::array<HandState, 2> hands{hand_at({-0.5f, 1, 0}, 1), hand_at({0.5f, 1, 0}, 1)};
  g.update(hands, kDt, w);
  // Turn the hands' span from +X to -Z (a 90° turn about +Y), keeping length and midpoint.
  hands[0].grip.position = {0, 1, 0.5f};
  hands[1].grip.position = {0, 1, -0.5f};
  g.update(hands, kDt, w);
  expect_near(w.rotation * glm::vec3(1, 0, 0), glm::vec3(0, 0, -1));
  expect_near(w.rotation * glm::vec3(0, 1, 0), glm::vec3(0, 1, 0));  // never tips over
  // Bring the hands together: scale clamps at min_scale instead of collapsing to zero.
  hands[0].grip.position = {0, 1, 0};
  hands[1].grip.position = {0, 1, 0};
  g.update(hands, kDt, w);
  EXPECT_FLOAT_EQ(w.scale, GestureOptions{}.min_scale);
}

TEST(Gestures, ReleasingOneOfTwoHandsContinuesAsOneHandGrab) {
  Gestures g;
  WorldTransform w;
  std::array<HandState, 2> hands{hand_at({-0.5f, 1, 0}, 1), hand_at({0.5f, 1, 0}, 1)};
  g.update(hands, kDt, w);
  hands[0].squeeze = 0;
  g.update(hands, kDt, w);
  EXPECT_FALSE(g.two_handed());
  EXPECT_TRUE(g.grabbing(kRight));
  glm::vec3 t = w.translation;
  hands[1].grip.position += glm::vec3(0, 0.5f, 0);
  g.update(hands, kDt, w);
  expect_near(w.translation, t + glm::vec3(0, 0.5f, 0));
}

TEST(Gestures, ThumbstickStepsWithRepeatAndHaptics) {
  Gestures g;
  WorldTransform w;
  std::array<HandState, 2> hands{hand_at({0, 1, 0}), hand_at({1, 1, 0})};
  hands[1].thumbstick = {0, 0.9f};
  GestureEvents e = g.update(hands, kDt, w);
  EXPECT_EQ(e.neuron_steps, 1);
  EXPECT_EQ(e.connection_steps, 0);
  EXPECT_TRUE(e.haptic_tick[kRight]);
  // Held: no step until repeat_seconds have passed, then one more.
  int steps = 0;
  for (int i = 0; i < 22; ++i) steps += g.update(hands, kDt, w).neuron_steps;  // 0.244 s
  EXPECT_EQ(steps, 0);
  steps = 0;
  for (int i = 0; i < 2; ++i) steps += g.update(hands, kDt, w).neuron_steps;
  EXPECT_EQ(steps, 1);
  // Left on X lowers the connection threshold; inside the dead zone nothing happens.
  hands[1].thumbstick = {-0.9f, 0.2f};
  e = g.update(hands, kDt, w);
  EXPECT_EQ(e.connection_steps, -1);
  EXPECT_EQ(e.neuron_steps, 0);
  hands[1].thumbstick = {0.3f, -0.3f};
  e = g.update(hands, kDt, w);
  EXPECT_EQ(e.connection_steps + e.neuron_steps, 0);
  EXPECT_FALSE(e.haptic_tick[kRight]);
}

TEST(Gestures, LeftThumbstickStepsAndResizesTheLayerWindow) {
  Gestures g;
  WorldTransform w;
  std::array<HandState, 2> hands{hand_at({0, 1, 0}), hand_at({1, 1, 0})};
  hands[0].thumbstick = {0, 0.9f};  // forward: one layer deeper
  GestureEvents e = g.update(hands, kDt, w);
  EXPECT_EQ(e.window_steps, 1);
  EXPECT_EQ(e.window_resize, 0);
  EXPECT_EQ(e.neuron_steps + e.connection_steps, 0);  // the right hand's thresholds stay
  EXPECT_TRUE(e.haptic_tick[kLeft]);
  EXPECT_FALSE(e.haptic_tick[kRight]);
  int steps = 0;
  for (int i = 0; i < 24; ++i) steps += g.update(hands, kDt, w).window_steps;  // held: repeats
  EXPECT_EQ(steps, 1);
  hands[0].thumbstick = {0, -0.9f};  // back: shallower
  EXPECT_EQ(g.update(hands, kDt, w).window_steps, -1);
  hands[0].thumbstick = {-0.9f, 0};  // left: narrower
  e = g.update(hands, kDt, w);
  EXPECT_EQ(e.window_resize, -1);
  EXPECT_EQ(e.window_steps, 0);
  hands[0].thumbstick = {0, 0};
  g.update(hands, kDt, w);
  hands[0].thumbstick = {0.9f, 0};  // right: wider
  EXPECT_EQ(g.update(hands, kDt, w).window_resize, 1);
  hands[0].tracked = false;  // an untracked hand steps nothing
  hands[0].thumbstick = {0, 0.9f};
  e = g.update(hands, kDt, w);
  EXPECT_EQ(e.window_steps + e.window_resize, 0);
}

TEST(Gestures, TriggerSelectsAlongTheAimRay) {
  Gestures g;
  WorldTransform w;
  w.translation = {1, 0, 0};
  w.scale = 2;
  std::array<HandState, 2> hands{hand_at({0, 1, 0}), hand_at({3, 1, 0})};
  hands[1].trigger = 0.9f;
  GestureEvents e = g.update(hands, kDt, w);
  ASSERT_TRUE(e.select.has_value());
  EXPECT_EQ(*e.select_hand, kRight);
  // The world-space aim ray, which the viewer hands to the engine as it is ...
  expect_near(e.select->origin, glm::vec3(3, 1, 0));
  expect_near(e.select->direction, glm::vec3(0, 0, -1));
  // ... and in the network's coordinates: (3,1,0) → ((3-1)/2, 1/2, 0).
  const engine::Ray local = w.to_network(*e.select);
  expect_near(local.origin, glm::vec3(1, 0.5f, 0));
  expect_near(local.direction, glm::vec3(0, 0, -1));
  // Holding the trigger does not select again.
  e = g.update(hands, kDt, w);
  EXPECT_FALSE(e.select.has_value());
}

TEST(Gestures, MenuResetsOncePerPress) {
  Gestures g;
  WorldTransform w;
  std::array<HandState, 2> hands{hand_at({0, 1, 0}), hand_at({1, 1, 0})};
  hands[0].menu = true;
  EXPECT_TRUE(g.update(hands, kDt, w).reset);
  EXPECT_FALSE(g.update(hands, kDt, w).reset);
}

TEST(Gestures, XAndYStepInputsOncePerPress) {
  Gestures g;
  WorldTransform w;
  std::array<HandState, 2> hands{hand_at({0, 1, 0}), hand_at({1, 1, 0})};
  hands[0].next_input = true;
  EXPECT_EQ(g.update(hands, kDt, w).input_step, 1);
  EXPECT_EQ(g.update(hands, kDt, w).input_step, 0);  // held: no repeat
  hands[0].next_input = false;
  hands[0].previous_input = true;
  EXPECT_EQ(g.update(hands, kDt, w).input_step, -1);
  EXPECT_EQ(g.update(hands, kDt, w).input_step, 0);
}

TEST(Gestures, TheCompareButtonFlipsOncePerPress) {
  Gestures g;
  WorldTransform w;
  std::array<HandState, 2> hands{hand_at({0, 1, 0}), hand_at({1, 1, 0})};
  EXPECT_FALSE(g.update(hands, kDt, w).compare_toggle);
  hands[1].compare_show = true;
  EXPECT_TRUE(g.update(hands, kDt, w).compare_toggle);
  EXPECT_FALSE(g.update(hands, kDt, w).compare_toggle);  // held: no repeat
  hands[1].compare_show = false;
  EXPECT_FALSE(g.update(hands, kDt, w).compare_toggle);
  hands[0].compare_show = true;  // either hand's binding
  EXPECT_TRUE(g.update(hands, kDt, w).compare_toggle);
}

TEST(WorldTransform, MatrixMatchesToWorld) {
  WorldTransform w;
  w.translation = {1, 2, 3};
  w.rotation = glm::angleAxis(0.7f, glm::normalize(glm::vec3(1, 2, 3)));
  w.scale = 1.5f;
  glm::vec3 p(0.3f, -0.2f, 0.9f);
  expect_near(glm::vec3(w.matrix() * glm::vec4(p, 1)), w.to_world(p));
  expect_near(w.to_network(w.to_world(p)), p);
}

}  // namespace
}  // namespace nnxr::xr
