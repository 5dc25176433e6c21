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
#include <glm/gtc/quaternion.hpp>

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
  std::array<float, 2> ray_length{3.0f, 3.0f};  // metres; shorter where a ray meets the hand menu
  float neuron_threshold = 0, connection_threshold = 0;  // quantiles, 0..1
  const engine::SelectionState* selection = nullptr;      // null: nothing selected
  Pose head;                                              // between the eyes, stage/local space
};

// Appends the feedback to `out` (which the caller clears each frame).
void build_feedback(const FeedbackInput& in, engine::OverlayBuilder& out);

// ---- where the worker's panels stand in the headset --------------------------------------------
// The text of the view's panels and of the filter menu is composed by the worker on canvases in
// pixels (engine/renderer.h FrameParams::panel_plane, menu_plane); here are the planes that carry
// them in the room, as canvas pixels (x right, y down from the top left) → world matrices.

// A plane whose top left is at `top_left`, spanned by unit `right` and `up`, `metres` per pixel.
glm::mat4 canvas_plane(glm::vec3 top_left, glm::vec3 right, glm::vec3 up, float metres);

// The view's panels (title, prediction, legend, selection): a canvas of kPanelCanvas pixels,
// 1.54 × 0.86 m, standing to the left of where the network is first placed (its middle 1.1 m
// ahead of the stage origin, 0.95 m to the left, 1.45 m high), turned 40° towards the user.
inline constexpr glm::vec2 kPanelCanvas{1280, 720};
inline constexpr float kPanelMetresPerPixel = 0.0012f;
glm::mat4 panel_plane();

// The filter menu held by the left hand: the plane of the grip's x and y axes, 5 cm above the
// grip, 0.45 mm per canvas pixel (a 28-pixel row is 12.6 mm), facing along the grip's +Z. It is
// shown while it faces the eyes within about 37° and the hand is within reach of them (0.75 m).
struct HandMenu {
  glm::mat4 plane{1.0f};  // canvas → world
  glm::vec3 top_left{0}, right{1, 0, 0}, up{0, 1, 0}, normal{0, 0, 1}, centre{0};
};
inline constexpr float kMenuMetresPerPixel = 0.00045f;
HandMenu hand_menu(const Pose& grip, glm::vec2 canvas_size);
bool menu_faces(const HandMenu& menu, glm::vec3 eyes);
// Where a world-space ray meets the menu's plane, in canvas pixels (nullopt: behind or parallel);
// *distance gets the distance along the ray.
std::optional<glm::vec2> menu_hit(const HandMenu& menu, const engine::Ray& ray, float* distance = nullptr);

}  // namespace nnxr::xr
