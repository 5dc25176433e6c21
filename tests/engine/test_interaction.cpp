// Interaction: camera and world-transform math, every desktop binding, threshold ladder.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <glm/gtc/matrix_transform.hpp>
#include <gtest/gtest.h>

#include "engine/frame_times.h"
#include "engine/interaction.h"

namespace nnxr::engine {
namespace {

constexpr float kEps = 1e-4f;

void expect_near(glm::vec3 a, glm::vec3 b, float eps = kEps) {
  EXPECT_NEAR(a.x, b.x, eps);
  EXPECT_NEAR(a.y, b.y, eps);
  EXPECT_NEAR(a.z, b.z, eps);
}

// Where a world point lands in the framebuffer (pixels), the naive way: view, projection, divide.
glm::vec2 project(const FlyCamera& c, glm::vec3 p, float w, float h) {
  const glm::vec4 clip = c.projection(w / h) * c.view() * glm::vec4(p, 1);
  const glm::vec2 ndc = glm::vec2(clip) / clip.w;
  return {(ndc.x + 1) * 0.5f * w, (ndc.y + 1) * 0.5f * h};
}

TEST(WorldTransform, MatrixMatchesToWorldAndInverts) {
  WorldTransform t{.translation = {1, -2, 3}, .rotation = glm::angleAxis(0.7f, glm::normalize(glm::vec3(1, 2, 3))), .scale = 2.5f};
  const glm::vec3 p(0.3f, -0.4f, 5);
  expect_near(glm::vec3(t.matrix() * glm::vec4(p, 1)), t.to_world(p));
  expect_near(t.to_network(t.to_world(p)), p);
  const Ray r = t.to_network(Ray{t.to_world(p), glm::normalize(glm::vec3(1, 1, 0))});
  expect_near(r.origin, p);
  EXPECT_NEAR(glm::length(r.direction), 1.0f, kEps);
  // Direction maps back through the rotation only.
  expect_near(glm::normalize(t.rotation * r.direction), glm::normalize(glm::vec3(1, 1, 0)));
}

TEST(FlyCamera, ForwardRightUpAreOrthonormal) {
  FlyCamera c;
  c.yaw = 0.9f, c.pitch = -0.4f;
  EXPECT_NEAR(glm::length(c.forward()), 1, kEps);
  EXPECT_NEAR(glm::length(c.right()), 1, kEps);
  EXPECT_NEAR(glm::dot(c.forward(), c.right()), 0, kEps);
  EXPECT_NEAR(glm::dot(c.forward(), c.up()), 0, kEps);
  EXPECT_GT(c.up().y, 0);
  c.yaw = 0, c.pitch = 0;
  expect_near(c.forward(), {0, 0, -1});
  expect_near(c.right(), {1, 0, 0});
}

TEST(FlyCamera, ProjectionIsVulkanClipSpace) {
  FlyCamera c;
  c.position = {0, 0, 0};
  c.near_plane = 0.1f, c.far_plane = 100;
  const glm::mat4 vp = c.projection(2.0f) * c.view();
  auto depth = [&](glm::vec3 p) {
    glm::vec4 clip = vp * glm::vec4(p, 1);
    return clip.z / clip.w;
  };
  EXPECT_NEAR(depth({0, 0, -0.1f}), 0, 1e-4);
  EXPECT_NEAR(depth({0, 0, -100}), 1, 1e-4);
  // A point above the view axis lands in the upper half of the framebuffer (small y).
  EXPECT_LT(project(c, {0, 1, -5}, 800, 400).y, 200);
  EXPECT_GT(project(c, {1, 0, -5}, 800, 400).x, 400);
}

TEST(FlyCamera, RayThroughPixelHitsWhatProjectsThere) {
  FlyCamera c;
  c.position = {1, 2, 3};
  c.yaw = 0.5f, c.pitch = -0.3f;
  const float w = 640, h = 480;
  const glm::vec3 target = c.position + 7.0f * glm::normalize(glm::vec3(0.4f, -0.5f, -1));
  const glm::vec2 px = project(c, target, w, h);
  const Ray r = c.ray_through(px.x, px.y, w, h);
  expect_near(r.origin, c.position);
  expect_near(r.direction, glm::normalize(target - c.position), 1e-3f);
  // The centre pixel looks straight ahead.
  expect_near(c.ray_through(w / 2, h / 2, w, h).direction, c.forward(), 1e-4f);
}

TEST(Interaction, HomeViewSeesTheWholeNetwork) {
  Interaction in;
  in.set_bounds({0, -1, -1}, {10, 1, 1});
  const FlyCamera& c = in.camera();
  for (float x : {0.0f, 10.0f})
    for (float y : {-1.0f, 1.0f})
      for (float z : {-1.0f, 1.0f}) {
        const glm::vec2 px = project(c, {x, y, z}, 1280, 720);
        EXPECT_GE(px.x, 0);
        EXPECT_LE(px.x, 1280);
        EXPECT_GE(px.y, 0);
        EXPECT_LE(px.y, 720);
      }
  // The centre is straight ahead.
  const glm::vec3 to_centre = glm::normalize(glm::vec3(5, 0, 0) - c.position);
  expect_near(to_centre, c.forward(), 1e-4f);
}

TEST(Interaction, SetHomeLooksFromEyeToTarget) {
  Interaction in;
  in.set_bounds({0, -1, -1}, {10, 1, 1});
  const glm::vec3 eye(-3, 4, 6), target(5, 0, 0);
  in.set_home(eye, target, 0.8f);
  expect_near(in.camera().position, eye);
  expect_near(in.camera().forward(), glm::normalize(target - eye), 1e-5f);
  EXPECT_FLOAT_EQ(in.camera().fov_y, 0.8f);
  in.fly({0, 0, 1}, 1);
  in.reset_view();
  expect_near(in.camera().position, eye);
  // A degenerate home is ignored.
  in.set_home(eye, eye, 0.8f);
  expect_near(in.camera().forward(), glm::normalize(target - eye), 1e-5f);
}

TEST(Interaction, ScaleAboutKeepsThePivotFixed) {
  Interaction in;
  in.set_bounds({0, 0, 0}, {1, 1, 1});
  const glm::vec3 pivot(0.3f, 0.2f, 0.1f);
  const glm::vec3 network_point = in.world().to_network(pivot);
  in.scale_about(pivot, 2);
  EXPECT_FLOAT_EQ(in.world().scale, 2);
  expect_near(in.world().to_world(network_point), pivot);
  // Another point moved away from the pivot by the factor.
  const glm::vec3 q(1, 1, 1);
  expect_near(in.world().to_world(q) - pivot, 2.0f * (q - pivot));
  // Clamped at the limits, ignored when not positive.
  in.scale_about(pivot, 1e9f);
  EXPECT_FLOAT_EQ(in.world().scale, in.options().max_scale);
  in.scale_about(pivot, -1);
  in.scale_about(pivot, NAN);
  EXPECT_FLOAT_EQ(in.world().scale, in.options().max_scale);
}

TEST(Interaction, MoveNetworkComposesRigidMotion) {
  Interaction in;
  in.scale_about({0, 0, 0}, 3);
  const glm::vec3 p(1, 2, 3);
  const glm::vec3 before = in.world().to_world(p);
  const glm::mat4 delta = glm::translate(glm::mat4(1), glm::vec3(0.5f, 0, -1)) * glm::rotate(glm::mat4(1), 0.8f, glm::vec3(0, 1, 0));
  in.move_network(delta);
  expect_near(in.world().to_world(p), glm::vec3(delta * glm::vec4(before, 1)), 1e-3f);
  EXPECT_FLOAT_EQ(in.world().scale, 3);
}

TEST(Thresholds, LadderIsIncreasingWithinZeroAndOne) {
  const auto& l = Thresholds::ladder();
  ASSERT_GE(l.size(), 20u);
  EXPECT_EQ(l.front(), 0);
  EXPECT_LT(l.back(), 1);
  for (size_t i = 1; i < l.size(); ++i) EXPECT_GT(l[i], l[i - 1]);
  EXPECT_NEAR(l[1], 0.05f, 1e-6);
}

class Controls : public ::testing::Test {
 protected:
  Controls() : controls(in) {
    in.set_bounds({0, -1, -1}, {10, 1, 1});
    controls.set_framebuffer(800, 600);
  }
  Interaction in;
  DesktopControls controls;
};

TEST_F(Controls, BracketsStepTheNeuronThreshold) {
  const float start = in.thresholds().neuron();
  const uint64_t serial = in.filter_serial();
  Command c = controls.key(Key::RightBracket, Press::Down);
  EXPECT_TRUE(c.filter_changed);
  EXPECT_NEAR(in.thresholds().neuron(), start + 0.05f, 1e-6);
  EXPECT_NEAR(in.filter().neuron_threshold, start + 0.05f, 1e-6);
  EXPECT_EQ(in.filter().neuron_mode, scene::Filter::Mode::Quantile);
  EXPECT_EQ(in.filter_serial(), serial + 1);
  controls.key(Key::RightBracket, Press::Repeat);  // held key repeats
  EXPECT_NEAR(in.thresholds().neuron(), start + 0.10f, 1e-6);
  controls.key(Key::LeftBracket, Press::Down);
  controls.key(Key::LeftBracket, Press::Down);
  EXPECT_NEAR(in.thresholds().neuron(), start, 1e-6);
  // Clamped at 0: no change reported.
  while (in.thresholds().neuron_rung > 0) controls.key(Key::LeftBracket, Press::Down);
  const uint64_t at_zero = in.filter_serial();
  EXPECT_FALSE(controls.key(Key::LeftBracket, Press::Down).filter_changed);
  EXPECT_EQ(in.filter_serial(), at_zero);
  EXPECT_EQ(in.thresholds().neuron(), 0);
  // Clamped at the top.
  for (int i = 0; i < 100; ++i) controls.key(Key::RightBracket, Press::Down);
  EXPECT_EQ(in.thresholds().neuron(), Thresholds::ladder().back());
  EXPECT_FALSE(controls.key(Key::RightBracket, Press::Down).filter_changed);
}

TEST_F(Controls, CommaPeriodStepTheConnectionThreshold) {
  const float neuron = in.thresholds().neuron();
  const float start = in.thresholds().connection();
  EXPECT_TRUE(controls.key(Key::Period, Press::Down).filter_changed);
  EXPECT_NEAR(in.filter().connection_threshold, start + 0.05f, 1e-6);
  EXPECT_TRUE(controls.key(Key::Comma, Press::Down).filter_changed);
  EXPECT_TRUE(controls.key(Key::Comma, Press::Down).filter_changed);
  EXPECT_NEAR(in.filter().connection_threshold, start - 0.05f, 1e-6);
  EXPECT_EQ(in.thresholds().neuron(), neuron);  // untouched
  EXPECT_FALSE(controls.key(Key::Comma, Press::Up).filter_changed);  // releases do nothing
}

TEST_F(Controls, WasdFliesAlongTheCameraAxes) {
  const glm::vec3 start = in.camera().position;
  const glm::vec3 forward = in.camera().forward();
  const glm::vec3 right = in.camera().right();
  controls.key(Key::W, Press::Down);
  controls.update(0.5f);
  const float step = in.options().fly_speed * in.extent() * 0.5f;
  expect_near(in.camera().position, start + forward * step, 1e-3f);
  controls.key(Key::W, Press::Up);
  controls.update(0.5f);  // released: no motion
  expect_near(in.camera().position, start + forward * step, 1e-3f);
  controls.key(Key::D, Press::Down);
  controls.key(Key::Shift, Press::Down);
  controls.update(0.25f);
  expect_near(in.camera().position, start + forward * step + right * step * 2.0f, 1e-3f);  // 4x for 1/2 the time
  controls.key(Key::D, Press::Up);
  controls.key(Key::Shift, Press::Up);
  controls.key(Key::A, Press::Down);
  controls.key(Key::S, Press::Down);
  controls.update(0.5f);
  expect_near(in.camera().position, start + right * step, 1e-3f);
  controls.key(Key::A, Press::Up);
  controls.key(Key::S, Press::Up);
  const glm::vec3 before_e = in.camera().position;
  controls.key(Key::E, Press::Down);
  controls.update(0.5f);
  expect_near(in.camera().position, before_e + glm::vec3(0, step, 0), 1e-3f);
}

TEST_F(Controls, RightDragLooksLeftDragDoesNot) {
  const float yaw = in.camera().yaw, pitch = in.camera().pitch;
  controls.cursor(100, 100);
  controls.cursor(150, 100);  // no button: nothing
  EXPECT_EQ(in.camera().yaw, yaw);
  controls.button(Button::Right, Press::Down, 150, 100);
  EXPECT_TRUE(controls.looking());
  controls.cursor(200, 80);
  EXPECT_NEAR(in.camera().yaw, yaw + 50 * in.options().look_radians_per_pixel, 1e-5);
  EXPECT_NEAR(in.camera().pitch, pitch + 20 * in.options().look_radians_per_pixel, 1e-5);
  controls.button(Button::Right, Press::Up, 200, 80);
  controls.cursor(300, 300);
  EXPECT_NEAR(in.camera().yaw, yaw + 50 * in.options().look_radians_per_pixel, 1e-5);
  // Pitch is clamped short of straight up.
  controls.button(Button::Right, Press::Down, 0, 10000);
  controls.cursor(0, 0);
  EXPECT_LT(in.camera().pitch, glm::radians(89.5f));
  EXPECT_GT(in.camera().pitch, glm::radians(88.5f));
}

TEST_F(Controls, ScrollScalesAboutThePointUnderTheCursor) {
  const Ray ray = in.camera().ray_through(600, 200, 800, 600);
  controls.scroll(2, 600, 200);
  EXPECT_NEAR(in.world().scale, 1.21f, 1e-4);
  // A point on the cursor ray at the depth of the network centre did not move on screen: it is
  // still on the same ray.
  const glm::vec3 centre(5, 0, 0);
  const float depth = glm::dot(centre - ray.origin, in.camera().forward()) / glm::dot(ray.direction, in.camera().forward());
  const glm::vec3 pivot = ray.origin + ray.direction * depth;
  const glm::vec3 network = WorldTransform{}.to_network(pivot);  // where it was before scaling
  expect_near(in.world().to_world(network), pivot, 1e-3f);
  controls.scroll(-2, 600, 200);
  EXPECT_NEAR(in.world().scale, 1.0f, 1e-4);
}

TEST_F(Controls, RResetsViewButKeepsThresholds) {
  const FlyCamera home = in.camera();
  controls.key(Key::RightBracket, Press::Down);
  controls.key(Key::W, Press::Down);
  controls.update(1);
  controls.key(Key::W, Press::Up);
  controls.scroll(3, 400, 300);
  controls.button(Button::Right, Press::Down, 0, 0);
  controls.cursor(40, 40);
  controls.button(Button::Right, Press::Up, 40, 40);
  EXPECT_NE(in.world().scale, 1);
  const float neuron = in.thresholds().neuron();
  EXPECT_FALSE(controls.key(Key::R, Press::Down).filter_changed);
  expect_near(in.camera().position, home.position);
  EXPECT_EQ(in.camera().yaw, home.yaw);
  EXPECT_EQ(in.camera().pitch, home.pitch);
  EXPECT_EQ(in.world().scale, 1);
  expect_near(in.world().translation, {0, 0, 0});
  EXPECT_EQ(in.thresholds().neuron(), neuron);
}

TEST_F(Controls, LeftClickGivesAPickRayF12AScreenshotEscapeQuits) {
  const Command c = controls.button(Button::Left, Press::Down, 400, 300);
  ASSERT_TRUE(c.select.has_value());
  expect_near(c.select->direction, in.camera().forward(), 1e-4f);
  EXPECT_FALSE(controls.button(Button::Left, Press::Up, 400, 300).select.has_value());
  EXPECT_TRUE(controls.key(Key::F12, Press::Down).screenshot);
  EXPECT_FALSE(controls.key(Key::F12, Press::Repeat).screenshot);
  EXPECT_TRUE(controls.key(Key::Escape, Press::Down).quit);
  const Command other = controls.key(Key::Other, Press::Down);
  EXPECT_FALSE(other.quit || other.screenshot || other.filter_changed);
}

TEST_F(Controls, PickRayInNetworkSpaceFollowsTheWorldTransform) {
  in.scale_about({0, 0, 0}, 2);
  in.move_network(glm::translate(glm::mat4(1), glm::vec3(1, 0, 0)));
  // The network point (5, 0, 0) is now at world (11, 0, 0); a ray towards it, in network space,
  // passes through (5, 0, 0).
  const glm::vec3 world_target = in.world().to_world({5, 0, 0});
  expect_near(world_target, {11, 0, 0});
  const Ray world_ray{in.camera().position, glm::normalize(world_target - in.camera().position)};
  const Ray r = in.world().to_network(world_ray);
  const glm::vec3 closest = r.origin + r.direction * glm::dot(glm::vec3(5, 0, 0) - r.origin, r.direction);
  expect_near(closest, {5, 0, 0}, 1e-3f);
}


// Ten layers one metre apart along X, each a 2 m square block centred on the axis (layer 4 empty).
std::vector<LayerBox> ten_layers() {
  std::vector<LayerBox> boxes(10);
  for (int i = 0; i < 10; ++i)
    if (i != 4) boxes[size_t(i)] = {glm::vec3(float(i), -1, -1), glm::vec3(float(i), 1, 1)};
  return boxes;
}

TEST_F(Controls, PageKeysStepTheLayerWindowHomeEndResizeIt) {
  in.set_layers(ten_layers());
  EXPECT_EQ(in.filter().layer_min, 0);
  EXPECT_EQ(in.filter_summary().layer_max, 9);
  // Narrow the open window to three layers, then walk it through the network.
  for (int i = 0; i < 7; ++i) EXPECT_TRUE(controls.key(Key::End, Press::Down).filter_changed);
  EXPECT_EQ(in.filter().layer_min, 0);
  EXPECT_EQ(in.filter().layer_max, 2);
  uint64_t serial = in.filter_serial();
  EXPECT_TRUE(controls.key(Key::PageDown, Press::Down).filter_changed);
  EXPECT_GT(in.filter_serial(), serial);
  EXPECT_EQ(in.filter().layer_min, 1);
  EXPECT_EQ(in.filter().layer_max, 3);
  EXPECT_TRUE(controls.key(Key::PageDown, Press::Repeat).filter_changed);
  EXPECT_EQ(in.filter_summary().layer_min, 2);
  EXPECT_EQ(in.filter_summary().layer_max, 4);
  EXPECT_TRUE(controls.key(Key::PageUp, Press::Down).filter_changed);
  EXPECT_EQ(in.filter().layer_min, 1);
  EXPECT_TRUE(controls.key(Key::PageUp, Press::Down).filter_changed);
  EXPECT_FALSE(controls.key(Key::PageUp, Press::Down).filter_changed);  // at the input already
  EXPECT_EQ(in.filter().layer_min, 0);
  // Narrow to one layer and no further; widen again.
  EXPECT_TRUE(controls.key(Key::End, Press::Down).filter_changed);
  EXPECT_TRUE(controls.key(Key::End, Press::Down).filter_changed);
  EXPECT_FALSE(controls.key(Key::End, Press::Down).filter_changed);
  EXPECT_EQ(in.filter().layer_max, 0);
  EXPECT_TRUE(controls.key(Key::Home, Press::Down).filter_changed);
  EXPECT_EQ(in.filter().layer_max, 1);
  // At the deepest layer the window stops; widening there grows it towards the input.
  for (int i = 0; i < 20; ++i) controls.key(Key::PageDown, Press::Down);
  EXPECT_EQ(in.filter_summary().layer_min, 9);
  EXPECT_EQ(in.filter_summary().layer_max, 9);
  EXPECT_TRUE(controls.key(Key::Home, Press::Down).filter_changed);
  EXPECT_EQ(in.filter_summary().layer_min, 8);
  EXPECT_EQ(in.filter_summary().layer_max, 9);
  // R resets the window (and the view); the thresholds stay.
  const int rung = in.thresholds().connection_rung;
  EXPECT_TRUE(controls.key(Key::R, Press::Down).filter_changed);
  EXPECT_EQ(in.filter_summary().layer_min, 0);
  EXPECT_EQ(in.filter_summary().layer_max, 9);
  EXPECT_EQ(in.filter().layer_max, std::numeric_limits<int>::max());
  EXPECT_EQ(in.thresholds().connection_rung, rung);
}

TEST_F(Controls, AStepWalksTheFirstLayerInFrontOfTheEyeSmoothly) {
  InteractionOptions options;
  options.walk_seconds = 0.3f;
  Interaction walker(options);
  walker.set_bounds({0, -1, -1}, {9, 1, 1});
  walker.set_layers(ten_layers());
  const glm::vec3 eye(0, 0, 5), forward(0, 0, -1);
  ASSERT_TRUE(walker.step_window(+3));  // layers 3..9
  walker.walk_to_window(eye, forward, 0.6f);
  EXPECT_TRUE(walker.walking());
  // Eased: it starts and ends slowly, never jumps, and takes the set time.
  glm::vec3 last = walker.world().translation;
  float largest_step = 0;
  for (int frame = 0; frame < 18; ++frame) {  // 300 ms at 60 Hz
    walker.advance(1.0f / 60);
    largest_step = std::max(largest_step, glm::length(walker.world().translation - last));
    if (frame == 0) {
      EXPECT_LT(glm::length(walker.world().translation - last), 0.05f);
    }
    last = walker.world().translation;
  }
  EXPECT_FALSE(walker.walking());
  // Layer 3's centre (3, 0, 0) now stands 0.6 m in front of the eye.
  expect_near(walker.world().to_world({3, 0, 0}), eye + forward * 0.6f, 1e-4f);
  const float distance = glm::length(eye + forward * 0.6f - (glm::vec3(3, 0, 0) + glm::vec3(0)));
  EXPECT_LT(largest_step, distance / 18 * 1.6f);  // smoothstep peaks at 1.5× the mean speed
  // The empty layer 4 is skipped to the next layer that has blocks.
  ASSERT_TRUE(walker.step_window(+1));
  walker.walk_to_window(eye, forward, 0.6f);
  walker.advance(1);
  expect_near(walker.world().to_world({5, 0, 0}), eye + forward * 0.6f, 1e-4f);
  // With a field of view to fit, the 2 m layer stands farther off than arm's length.
  walker.walk_to_window(eye, forward, 0.6f, glm::radians(60.0f));
  walker.advance(1);
  const float d = glm::length(walker.world().to_world({5, 0, 0}) - eye);
  EXPECT_NEAR(d, 1.15f * 1.0f / std::tan(glm::radians(30.0f)), 1e-3f);
  // Grabbing or scaling ends a walk where it is.
  walker.walk_to_window(eye, glm::vec3(1, 0, 0), 0.6f);
  walker.advance(0.1f);
  walker.scale_about(eye, 1.5f);
  EXPECT_FALSE(walker.walking());
}

TEST_F(Controls, FilterCarriesOpsTensorsModeAndTheWindow) {
  scene::Filter f;
  f.layer_min = 2;
  f.layer_max = 5;
  f.op_types = {"Conv", "Relu"};
  f.tensors = {7};
  f.outside = scene::Filter::Outside::Dim;
  in.set_filter(f, {"seven"});
  in.set_layers(ten_layers());
  const scene::Filter got = in.filter();
  EXPECT_EQ(got.layer_min, 2);
  EXPECT_EQ(got.layer_max, 5);
  EXPECT_EQ(got.op_types, f.op_types);
  EXPECT_EQ(got.tensors, f.tensors);
  EXPECT_EQ(got.outside, scene::Filter::Outside::Dim);
  EXPECT_EQ(got.neuron_threshold, in.thresholds().neuron());
  const FilterSummary s = in.filter_summary();
  EXPECT_EQ(s.mode, "dim");
  EXPECT_EQ(s.tensors, std::vector<std::string>{"seven"});
  EXPECT_TRUE(in.set_outside(scene::Filter::Outside::Hide));
  EXPECT_FALSE(in.set_outside(scene::Filter::Outside::Hide));
  EXPECT_TRUE(in.step_window(+1));
  EXPECT_EQ(in.filter().layer_max, 6);
  // Reset returns to what set_filter() gave, not to nothing.
  EXPECT_TRUE(in.reset_filters());
  EXPECT_EQ(in.filter().layer_min, 2);
  EXPECT_EQ(in.filter().outside, scene::Filter::Outside::Dim);
  EXPECT_FALSE(in.reset_filters());
}


std::vector<SearchEntry> entries() {
  return {{0, "input", "", "", 0, glm::vec3(0, -1, -1), glm::vec3(0, 1, 1)},
          {1, "/block1/conv/Conv_output_0", "/block1/conv/Conv", "Conv", 1, glm::vec3(1, -1, -1), glm::vec3(1, 1, 1)},
          {2, "/block1/relu/Relu_output_0", "/block1/relu/Relu", "Relu", 2, glm::vec3(2, -1, -1), glm::vec3(2, 1, 1)},
          {3, "logits", "/head/Gemm", "Gemm", 3, glm::vec3(3, -0.5f, -2), glm::vec3(3, 0.5f, 2)},
          {4, "conv_probe", "/probe", "Identity", 4, glm::vec3(4, -1, -1), glm::vec3(4, 1, 1)}};
}

TEST(Search, RanksExactPrefixWordAndSubstringMatches) {
  Search s;
  s.set_entries(entries());
  s.open();
  EXPECT_EQ(s.matches().size(), 5u);  // empty query: everything
  for (char c : std::string("conv")) s.type(uint32_t(c));
  ASSERT_EQ(s.match_count(), 2u);
  EXPECT_EQ(s.entries()[s.matches()[0]].name, "conv_probe");           // a prefix
  EXPECT_EQ(s.entries()[s.matches()[1]].name, "/block1/conv/Conv_output_0");  // a word inside
  s.backspace();
  s.backspace();
  s.backspace();
  s.backspace();
  for (char c : std::string("GEMM")) s.type(uint32_t(c));  // by node name, any case
  ASSERT_EQ(s.match_count(), 1u);
  EXPECT_EQ(s.entries()[s.matches()[0]].name, "logits");
  s.type(0x263A);  // not ASCII: ignored
  EXPECT_EQ(s.query(), "GEMM");
  s.type('z');
  EXPECT_TRUE(s.matches().empty());
  EXPECT_FALSE(s.accept().has_value());
  EXPECT_TRUE(s.active());
  s.backspace();
  s.move(+5);
  EXPECT_EQ(s.chosen(), 0u);
  const auto taken = s.accept();
  ASSERT_TRUE(taken.has_value());
  EXPECT_EQ(taken->tensor, 3u);
  EXPECT_FALSE(s.active());
}

TEST_F(Controls, SlashOpensTheSearchEnterFliesAndPicks) {
  in.search().set_entries(entries());
  const glm::vec3 eye = in.camera().position;
  controls.key(Key::Slash, Press::Down);
  controls.character('/');  // the character of the key that opened it
  ASSERT_TRUE(in.search().active());
  for (char c : std::string("logw")) controls.character(uint32_t(c));
  EXPECT_EQ(in.search().query(), "logw");
  controls.key(Key::W, Press::Down);  // typing, not flying
  controls.update(1);
  EXPECT_EQ(in.camera().position, eye);
  controls.key(Key::Backspace, Press::Down);
  EXPECT_EQ(in.search().query(), "log");
  const Command c = controls.key(Key::Enter, Press::Down);
  EXPECT_FALSE(in.search().active());
  ASSERT_TRUE(c.select.has_value());
  ASSERT_TRUE(c.select_radius.has_value());
  // The pick ray runs along the network's depth into the block's centre, from just before it.
  expect_near(c.select->direction, {1, 0, 0});
  EXPECT_LT(c.select->origin.x, 3.0f);
  EXPECT_NEAR(c.select->origin.y, 0, kEps);
  EXPECT_NEAR(*c.select_radius, 0.5f, kEps);
  EXPECT_TRUE(in.flying());
  controls.update(0.1f);
  EXPECT_TRUE(in.flying());
  controls.update(0.5f);
  EXPECT_FALSE(in.flying());
  // The camera now looks at the block's centre down the depth axis, from where it fits the view.
  expect_near(in.camera().forward(), {1, 0, 0}, 1e-3f);
  EXPECT_NEAR(in.camera().position.y, 0, 1e-3f);
  EXPECT_LT(in.camera().position.x, 3.0f);
  // Escape closes without flying anywhere.
  controls.key(Key::Slash, Press::Down);
  const Command esc = controls.key(Key::Escape, Press::Down);
  EXPECT_FALSE(esc.quit);
  EXPECT_FALSE(in.search().active());
  EXPECT_TRUE(controls.key(Key::Escape, Press::Down).quit);
}

// Per-frame times in bounded memory: a million frames take no more room than one, and the median
// and p99 stay within a bin (1%) of the exact order statistics.
TEST(FrameTimes, PercentilesOfAMillionFramesInFixedMemory) {
  FrameTimes t;
  EXPECT_EQ(t.percentile(0.5), 0);
  t.add(16.7);
  EXPECT_EQ(t.percentile(0.5), 16.7);  // one sample comes back exactly
  EXPECT_EQ(t.percentile(0.99), 16.7);
  FrameTimes m;
  const size_t bytes = sizeof m;
  std::vector<double> exact;
  for (int i = 0; i < 1'000'000; ++i) {
    // 1..100 ms, with one frame in 200 a 25 s hitch.
    const double ms = i % 200 == 199 ? 25'000.0 : 1.0 + double(int64_t{i} * 7919 % 100'000) / 1'000.0;
    m.add(ms);
    exact.push_back(ms);
  }
  EXPECT_EQ(sizeof m, bytes);
  EXPECT_EQ(m.count(), 1'000'000u);
  std::sort(exact.begin(), exact.end());
  for (double p : {0.5, 0.99, 0.999}) {
    const double want = exact[static_cast<size_t>(p * double(exact.size() - 1) + 0.5)];
    EXPECT_NEAR(m.percentile(p), want, want * 0.01) << "p" << p;
  }
  EXPECT_EQ(m.percentile(1), 25'000.0);  // the maximum, exact
  EXPECT_EQ(m.percentile(0), 1.0);       // the minimum, exact
}


// What the focus follows on the desktop: the ray through the cursor, none before the cursor is
// seen, while it is off the window or on the filter menu, or while the view is being turned.
TEST_F(Controls, ThePointerIsTheCursorsRayOffTheMenu) {
  EXPECT_FALSE(controls.pointer().has_value());
  controls.cursor(200, 300);
  const auto ray = controls.pointer();
  ASSERT_TRUE(ray.has_value());
  const Ray expected = in.camera().ray_through(200, 300, 800, 600);
  EXPECT_LT(glm::length(ray->origin - expected.origin), 1e-6f);
  EXPECT_GT(glm::dot(ray->direction, expected.direction), 1 - 1e-6f);
  controls.cursor_left();
  EXPECT_FALSE(controls.pointer().has_value());
  controls.cursor(900, 300);  // outside the 800 × 600 window
  EXPECT_FALSE(controls.pointer().has_value());
  in.set_op_counts({{"Conv", 3}, {"Relu", 2}});
  const FilterMenu menu{2};
  const glm::vec2 on_menu = menu.desktop(800, 600).to_screen({FilterMenu::kWidth / 2, menu.row_top(1) + 0.5f * FilterMenu::kLine});
  controls.cursor(on_menu.x, on_menu.y);
  EXPECT_FALSE(controls.pointer().has_value());
  controls.cursor(200, 300);
  EXPECT_TRUE(controls.pointer().has_value());
  controls.button(Button::Right, Press::Down, 200, 300);  // turning the view
  EXPECT_FALSE(controls.pointer().has_value());
  controls.button(Button::Right, Press::Up, 200, 300);
  EXPECT_TRUE(controls.pointer().has_value());
}

// Nor does it follow the cursor over the search box's list while the search is open. In an
// 800 × 600 window the box starts 2% / 3% of the window from its top left, a line is a thirtieth
// of the height (20 px), and it is as wide as its longest line: with all five entries listed
// (seven lines) it reaches y = 163 and x = 586; with one match (three lines) y = 83.
TEST_F(Controls, ThePointerOverTheSearchListAimsAtNothing) {
  in.search().set_entries(entries());
  controls.cursor(100, 100);
  EXPECT_TRUE(controls.pointer().has_value());  // closed: nothing there
  in.search().open();
  EXPECT_FALSE(controls.pointer().has_value());
  for (const auto& [x, y] : {std::pair{20.f, 12.f}, {580.f, 150.f}, {300.f, 60.f}}) {
    controls.cursor(x, y);
    EXPECT_FALSE(controls.pointer().has_value()) << x << ", " << y;
  }
  for (const auto& [x, y] : {std::pair{100.f, 300.f}, {700.f, 100.f}, {200.f, 170.f}}) {
    controls.cursor(x, y);
    EXPECT_TRUE(controls.pointer().has_value()) << x << ", " << y;
  }
  for (char c : std::string("logits")) controls.character(static_cast<uint32_t>(c));
  ASSERT_EQ(in.search().matches().size(), 1u);
  controls.cursor(100, 100);  // below the shorter list
  EXPECT_TRUE(controls.pointer().has_value());
  controls.cursor(100, 50);
  EXPECT_FALSE(controls.pointer().has_value());
  in.search().close();
  EXPECT_TRUE(controls.pointer().has_value());
}

// Nor over the panels of the view's text, each fixed to a corner of the window.
TEST_F(Controls, ThePointerOverAPanelAimsAtNothing) {
  controls.set_screen_areas({{1, {10, 20}, {200, 100}}, {2, {14, 14}, {300, 50}}});  // top right; bottom left
  for (const auto& [x, y] : {std::pair{600.f, 30.f}, {780.f, 110.f}, {20.f, 570.f}, {300.f, 540.f}}) {
    controls.cursor(x, y);
    EXPECT_FALSE(controls.pointer().has_value()) << x << ", " << y;
  }
  for (const auto& [x, y] : {std::pair{580.f, 30.f}, {700.f, 130.f}, {400.f, 300.f}, {320.f, 570.f}, {20.f, 530.f}}) {
    controls.cursor(x, y);
    EXPECT_TRUE(controls.pointer().has_value()) << x << ", " << y;
  }
  controls.set_framebuffer(1000, 600);  // the top right panel follows its corner
  controls.cursor(600, 30);
  EXPECT_TRUE(controls.pointer().has_value());
  controls.cursor(800, 30);
  EXPECT_FALSE(controls.pointer().has_value());
}

TEST_F(Controls, FilterMenuClicksToggleOpsModeIsolateAndReset) {
  in.set_op_counts({{"Conv", 3}, {"Relu", 2}, {"Gemm", 1}});
  in.search().set_entries(entries());
  const FilterMenu menu{3};
  EXPECT_EQ(menu.rows(), 9u);
  const FilterMenu::Placement place = menu.desktop(800, 600);
  // At the right edge, between the prediction and the selection, shrunk to fit.
  EXPECT_NEAR(place.to_screen(menu.size()).x, 800 - 14, 1e-3f);
  EXPECT_NEAR(place.to_screen(menu.size()).y, 600 - 170, 1e-3f);
  EXPECT_NEAR(place.origin.y, 190, 1e-3f);
  EXPECT_NEAR(place.scale, 240.0f / menu.size().y, 1e-5f);
  EXPECT_EQ(menu.desktop(800, 900).scale, 1.0f);  // a tall window: full size
  EXPECT_EQ(menu.desktop(800, 300).scale, 0.6f);  // a short window: the menu shrinks, down to 0.6
  auto click_row = [&](size_t row) {
    const glm::vec2 p = place.to_screen({FilterMenu::kWidth / 2, menu.row_top(row) + 0.5f * FilterMenu::kLine});
    return controls.button(Button::Left, Press::Down, p.x, p.y);
  };
  EXPECT_EQ(menu.row({-1, menu.row_top(0) + 1}), FilterMenu::Row::None);
  EXPECT_EQ(menu.row({1, 1}), FilterMenu::Row::None);  // the margin above the title
  size_t op = 9;
  EXPECT_EQ(menu.row({1, menu.row_top(2) + 1}, &op), FilterMenu::Row::Op);
  EXPECT_EQ(op, 1u);
  EXPECT_EQ(menu.row({1, menu.row_top(4) + 1}), FilterMenu::Row::Mode);
  EXPECT_EQ(menu.row({1, menu.row_top(5) + 1}), FilterMenu::Row::IsolateTensor);
  EXPECT_EQ(menu.row({1, menu.row_top(6) + 1}), FilterMenu::Row::IsolatePath);
  EXPECT_EQ(menu.row({1, menu.row_top(7) + 1}), FilterMenu::Row::Reset);
  EXPECT_EQ(menu.row({1, menu.row_top(8) + 1}), FilterMenu::Row::Reset);
  EXPECT_EQ(menu.row({1, menu.row_top(9) + 1}), FilterMenu::Row::None);
  // A click on the menu is not a pick.
  Command c = click_row(0);
  EXPECT_FALSE(c.select.has_value());
  EXPECT_FALSE(c.filter_changed);
  // Conv off: the others stay; Conv on again: no op filter at all.
  c = click_row(1);
  EXPECT_TRUE(c.filter_changed);
  EXPECT_FALSE(c.select.has_value());
  EXPECT_EQ(in.filter().op_types, (std::vector<std::string>{"Relu", "Gemm"}));
  EXPECT_FALSE(in.op_shown("Conv"));
  EXPECT_TRUE(click_row(1).filter_changed);
  EXPECT_TRUE(in.filter().op_types.empty());
  // The last op shown stays on.
  click_row(1);
  click_row(2);
  EXPECT_FALSE(click_row(3).filter_changed);
  EXPECT_EQ(in.filter().op_types, std::vector<std::string>{"Gemm"});
  // Dim / hide.
  EXPECT_TRUE(click_row(4).filter_changed);
  EXPECT_EQ(in.filter().outside, scene::Filter::Outside::Dim);
  // Isolate: nothing selected, nothing happens; with a selection, that tensor alone.
  EXPECT_FALSE(click_row(5).filter_changed);
  EXPECT_FALSE(click_row(6).filter_changed);
  SelectionState sel;
  sel.tensor_name = "logits";
  sel.tensor = 3;
  sel.path = {3, 2, 1, 0};
  sel.path_names = {"logits", "/block1/relu/Relu_output_0", "/block1/conv/Conv_output_0", "input"};
  in.select(sel);
  EXPECT_TRUE(click_row(5).filter_changed);
  EXPECT_EQ(in.filter().tensors, std::vector<model::TensorId>{3});
  EXPECT_EQ(in.filter_summary().tensors, std::vector<std::string>{"logits"});
  // The path that fed it: those tensors, named in its order.
  EXPECT_TRUE(click_row(6).filter_changed);
  EXPECT_EQ(in.filter().tensors, (std::vector<model::TensorId>{3, 2, 1, 0}));
  EXPECT_EQ(in.filter_summary().tensors, sel.path_names);
  EXPECT_FALSE(click_row(6).filter_changed);  // already
  // Reset.
  EXPECT_TRUE(click_row(7).filter_changed);
  EXPECT_TRUE(in.filter().op_types.empty());
  EXPECT_TRUE(in.filter().tensors.empty());
  EXPECT_EQ(in.filter().outside, scene::Filter::Outside::Hide);
  // Below the menu a click picks again.
  EXPECT_TRUE(click_row(10).select.has_value());
}

}  // namespace
}  // namespace nnxr::engine
