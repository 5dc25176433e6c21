// In-view feedback in the headset, built each frame as world-space overlay geometry
// (engine/overlay.h): the aim ray of each tracked controller, two gauges by the right controller
// (neuron and connection filter thresholds, 0..1, with their values), and while a neuron is
// selected a panel in front of the head with its tensor, op, index and value.
//
// Pure geometry (glm and the engine's OverlayBuilder; no OpenXR, no Vulkan). Frame thread; the
// cost is O(1) in the scene's size (a few hundred vertices plus the panel's text).
#pragma once

#include <array>
#include <optional>

#include <glm/glm.hpp>

#include "engine/interaction.h"
#include "engine/overlay.h"
#include "xr/gestures.h"

namespace nnxr::xr {

// The colours, linear RGBA (tests look for them in the eye images).
namespace feedback_colour {
inline constexpr glm::vec4 kRay{0.10f, 0.85f, 0.90f, 1.0f};
inline constexpr glm::vec4 kGaugeBack{0.06f, 0.06f, 0.08f, 1.0f};
inline constexpr glm::vec4 kNeuronGauge{0.15f, 0.90f, 0.20f, 1.0f};
inline constexpr glm::vec4 kConnectionGauge{1.00f, 0.75f, 0.10f, 1.0f};
inline constexpr glm::vec4 kPanel{0.03f, 0.06f, 0.15f, 1.0f};
inline constexpr glm::vec4 kText{1.0f, 1.0f, 1.0f, 1.0f};
}  // namespace feedback_colour

struct FeedbackInput {
  std::array<HandState, 2> hands{};
  float neuron_threshold = 0, connection_threshold = 0;  // quantiles, 0..1
  const engine::SelectionState* selection = nullptr;      // null: nothing selected
  Pose head;                                              // between the eyes, stage/local space
};

// Appends the feedback to `out` (which the caller clears each frame).
void build_feedback(const FeedbackInput& in, engine::OverlayBuilder& out);

}  // namespace nnxr::xr
