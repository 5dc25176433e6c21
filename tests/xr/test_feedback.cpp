// The headset's in-view feedback geometry (xr/feedback.h) without a device: which parts appear
// for which state, and that the gauges' fill follows the thresholds.
#include <gtest/gtest.h>

#include <algorithm>

#include "engine/overlay.h"
#include "xr/feedback.h"

namespace nnxr::xr {
namespace {

using engine::OverlayBuilder;
using engine::OverlayVertex;
using engine::pack_rgba;

// Vertices of one colour.
std::vector<glm::vec3> of_colour(const OverlayBuilder& o, glm::vec4 colour) {
  std::vector<glm::vec3> out;
  for (const OverlayVertex& v : o.triangles())
    if (v.rgba == pack_rgba(colour)) out.push_back(v.position);
  return out;
}

float extent_y(const std::vector<glm::vec3>& p) {
  if (p.empty()) return 0;
  auto [lo, hi] = std::minmax_element(p.begin(), p.end(), [](glm::vec3 a, glm::vec3 b) { return a.y < b.y; });
  return hi->y - lo->y;
}

FeedbackInput hands_in_front() {
  FeedbackInput in;
  in.head.position = {0, 1.6f, 0};
  for (int h = 0; h < 2; ++h) {
    in.hands[size_t(h)].tracked = true;
    in.hands[size_t(h)].grip.position = in.hands[size_t(h)].aim.position = {h ? 0.2f : -0.2f, 1.3f, -0.3f};
  }
  return in;
}

TEST(Feedback, EachTrackedHandHasARayFacingTheHead) {
  OverlayBuilder o;
  FeedbackInput in = hands_in_front();
  build_feedback(in, o);
  const auto ray = of_colour(o, feedback_colour::kRay);
  ASSERT_EQ(ray.size(), 12u);  // two ribbons of two triangles
  // The rays point down −Z (the aim pose's forward) for 3 m from the hands.
  float min_z = 0;
  for (glm::vec3 p : ray) min_z = std::min(min_z, p.z);
  EXPECT_NEAR(min_z, -3.3f, 1e-4f);
  in.hands[kLeft].tracked = false;
  o.clear();
  build_feedback(in, o);
  EXPECT_EQ(of_colour(o, feedback_colour::kRay).size(), 6u);
}

TEST(Feedback, GaugesFillWithTheThresholdsAndNeedTheRightHand) {
  OverlayBuilder o;
  FeedbackInput in = hands_in_front();
  in.neuron_threshold = 0.25f;
  in.connection_threshold = 0.5f;
  build_feedback(in, o);
  const float n = extent_y(of_colour(o, feedback_colour::kNeuronGauge));
  const float c = extent_y(of_colour(o, feedback_colour::kConnectionGauge));
  EXPECT_NEAR(n / c, 0.5f, 1e-4f);
  EXPECT_NEAR(extent_y(of_colour(o, feedback_colour::kGaugeBack)), 2 * c, 1e-4f);  // full height
  in.neuron_threshold = 0;
  o.clear();
  build_feedback(in, o);
  EXPECT_TRUE(of_colour(o, feedback_colour::kNeuronGauge).empty());
  in.hands[kRight].tracked = false;
  o.clear();
  build_feedback(in, o);
  EXPECT_TRUE(of_colour(o, feedback_colour::kGaugeBack).empty());
}

TEST(Feedback, ThePanelShowsOnlyWithASelectionInFrontOfTheHead) {
  OverlayBuilder o;
  FeedbackInput in = hands_in_front();
  build_feedback(in, o);
  EXPECT_TRUE(of_colour(o, feedback_colour::kPanel).empty());
  const size_t text_without = of_colour(o, feedback_colour::kText).size();
  engine::SelectionState s;
  s.tensor_name = "conv1_out";
  s.op_type = "Conv";
  s.node_name = "conv1";
  s.index = {0, 3, 4, 5};
  s.value = 0.125f;
  in.selection = &s;
  o.clear();
  build_feedback(in, o);
  const auto panel = of_colour(o, feedback_colour::kPanel);
  ASSERT_EQ(panel.size(), 6u);
  for (glm::vec3 p : panel) {
    EXPECT_LT(p.z, -0.5f);  // ahead of the head
    EXPECT_LT(p.y, 1.6f);   // below eye level
  }
  EXPECT_GT(of_colour(o, feedback_colour::kText).size(), text_without + 6 * 40);  // four lines of glyph strokes
}

TEST(HandMenu, StandsOnTheGripFacesTheEyesAndMapsTheRayToCanvasPixels) {
  const engine::FilterMenu layout{6};
  Pose grip;
  grip.position = {-0.1f, 1.2f, -0.3f};
  const glm::vec3 eyes(0, 1.6f, 0);
  const HandMenu m = hand_menu(grip, layout.size());
  // Canvas corners: top left 5 cm + its height above the grip, x along the grip's x.
  const glm::vec2 size = layout.size() * kMenuMetresPerPixel;
  const glm::vec3 tl(m.plane * glm::vec4(0, 0, 0, 1)), br(m.plane * glm::vec4(layout.size(), 0, 1));
  EXPECT_NEAR(glm::length(tl - glm::vec3(-0.1f - size.x / 2, 1.2f + 0.05f + size.y, -0.3f)), 0, 1e-5f);
  EXPECT_NEAR(glm::length(br - glm::vec3(-0.1f + size.x / 2, 1.25f, -0.3f)), 0, 1e-5f);
  // Upright (+Z to the user) below the eyes it is seen at 44°: hidden; tipped back 30° it faces
  // them; facing eyes in front of it or out of reach, or turned away, it is hidden.
  EXPECT_FALSE(menu_faces(m, eyes));
  Pose tipped = grip;
  tipped.orientation = glm::angleAxis(glm::radians(-30.0f), glm::vec3(1, 0, 0));
  const HandMenu shown = hand_menu(tipped, layout.size());
  EXPECT_TRUE(menu_faces(shown, eyes));
  EXPECT_FALSE(menu_faces(shown, glm::vec3(-0.1f, 1.6f, -1.0f)));
  EXPECT_FALSE(menu_faces(shown, shown.centre + shown.normal * 0.8f));
  EXPECT_TRUE(menu_faces(shown, shown.centre + shown.normal * 0.7f));
  Pose turned = tipped;
  turned.orientation = glm::angleAxis(glm::radians(90.0f), glm::vec3(0, 1, 0)) * tipped.orientation;
  EXPECT_FALSE(menu_faces(hand_menu(turned, layout.size()), eyes));
  // A ray at a canvas point comes back as that point; a ray away from the plane misses.
  const glm::vec2 point(120, layout.row_top(3) + 10);
  const glm::vec3 target(m.plane * glm::vec4(point, 0, 1));
  const glm::vec3 hand(0.2f, 1.3f, -0.2f);
  float t = 0;
  const auto hit = menu_hit(m, engine::Ray{hand, glm::normalize(target - hand)}, &t);
  ASSERT_TRUE(hit.has_value());
  EXPECT_NEAR(hit->x, point.x, 1e-2f);
  EXPECT_NEAR(hit->y, point.y, 1e-2f);
  EXPECT_NEAR(t, glm::length(target - hand), 1e-4f);
  size_t op = 9;
  EXPECT_EQ(layout.row(*hit, &op), engine::FilterMenu::Row::Op);
  EXPECT_EQ(op, 2u);
  EXPECT_FALSE(menu_hit(m, engine::Ray{hand, glm::normalize(hand - target)}).has_value());
  // The panels' plane: 1280 x 720 pixels of 1.2 mm, upright, to the left and ahead.
  const glm::mat4 p = panel_plane();
  const glm::vec3 c(p * glm::vec4(0.5f * kPanelCanvas, 0, 1));
  EXPECT_NEAR(c.x, -0.95f, 1e-4f);
  EXPECT_NEAR(c.y, 1.45f, 1e-4f);
  EXPECT_NEAR(c.z, -1.1f, 1e-4f);
  EXPECT_NEAR(glm::length(glm::vec3(p[0])) * 1280, 1.536f, 1e-4f);
  EXPECT_GT(glm::dot(glm::normalize(glm::vec3(p[2])), glm::normalize(glm::vec3(0, 1.6f, 0) - c)), 0.95f);  // turned to the user
}

}  // namespace
}  // namespace nnxr::xr
