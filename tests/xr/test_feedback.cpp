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

}  // namespace
}  // namespace nnxr::xr
