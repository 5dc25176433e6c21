#include "xr/placement.h"

#include <algorithm>
#include <cmath>

#include <glm/gtc/quaternion.hpp>

#include "engine/camera.h"
#include "xr/feedback.h"

namespace nnxr::xr {
namespace {

// The head's heading, level (straight up or down: the stage's −Z).
glm::vec3 level_heading(const Pose& head) {
  glm::vec3 ahead = head.orientation * glm::vec3(0, 0, -1);
  ahead.y = 0;
  return glm::length(ahead) > 1e-3f ? glm::normalize(ahead) : glm::vec3(0, 0, -1);
}

}  // namespace

WorldTransform place_network(std::span<const glm::vec3> corners, const Pose& head, const EyeFov& fov) {
  const glm::vec3 ahead = level_heading(head);
  WorldTransform world;
  if (corners.empty()) {
    world.translation = head.position + ahead * kPlaceDistance;
    return world;
  }
  // A symmetric field of view inside the eye's (real headsets' are a little asymmetric).
  const float kDefault = 0.785398f;
  auto half = [&](float a, float b) {
    const float h = std::min(std::abs(a), std::abs(b));
    return std::isfinite(h) && h > 0.05f && h < 1.5f ? h : kDefault;
  };
  const float half_x = half(fov.left, fov.right), half_y = half(fov.up, fov.down);
  const engine::Camera cam = engine::frame_level(corners, std::tan(half_x) / std::tan(half_y), 2 * half_y);
  // Turned so that the camera's gaze runs along the head's heading and its up is the room's
  // (a level camera: a turn about the vertical; a tilted one tilts the network).
  const glm::vec3 gaze = glm::normalize(cam.target - cam.eye);
  const glm::vec3 right = glm::normalize(glm::cross(gaze, cam.up)), up = glm::cross(right, gaze);
  const glm::mat3 from(right, up, -gaze), to(glm::normalize(glm::cross(ahead, glm::vec3(0, 1, 0))), glm::vec3(0, 1, 0), -ahead);
  world.rotation = glm::normalize(glm::quat_cast(to * glm::transpose(from)));
  const float middle = glm::dot(cam.target - cam.eye, gaze);
  float nearest = middle;
  for (const glm::vec3& p : corners) nearest = std::min(nearest, glm::dot(p - cam.eye, gaze));
  float scale = middle > 0 ? kPlaceDistance / middle : 1.0f;
  if (nearest > 0 && scale * nearest < kPlaceNearest) scale = kPlaceNearest / nearest;
  world.scale = std::clamp(scale, 1e-3f, 1e3f);
  // The camera's eye onto the head's.
  world.translation = head.position - world.rotation * (world.scale * cam.eye);
  return world;
}

glm::mat4 place_board(std::span<const glm::vec3> corners, const WorldTransform& world, const Pose& head) {
  const glm::vec3 ahead = level_heading(head);
  const glm::vec3 right = glm::cross(ahead, glm::vec3(0, 1, 0));
  // The network's leftmost bearing from the head (radians, left positive), level.
  float left = -1e30f;
  const glm::mat4 m = world.matrix();
  for (const glm::vec3& p : corners) {
    const glm::vec3 d = glm::vec3(m * glm::vec4(p, 1)) - head.position;
    left = std::max(left, std::atan2(-glm::dot(d, right), glm::dot(d, ahead)));
  }
  if (!(left > -1e29f)) left = glm::radians(20.0f) - kBoardGap;
  // The board's right edge at `left` + the gap; its middle faces the head, so the right edge is
  // its rightmost bearing.
  const glm::vec2 half = 0.5f * kPanelCanvas * kPanelMetresPerPixel;
  const float middle = std::min(left + kBoardGap + std::atan(half.x / kBoardDistance), glm::radians(170.0f));
  const glm::vec3 towards = std::cos(middle) * ahead - std::sin(middle) * right;
  const glm::vec3 board_right = std::cos(middle) * right + std::sin(middle) * ahead, up(0, 1, 0);
  const glm::vec3 centre = glm::vec3(head.position.x, head.position.y - kBoardBelow, head.position.z) + towards * kBoardDistance;
  return canvas_plane(centre - board_right * half.x + up * half.y, board_right, up, kPanelMetresPerPixel);
}

}  // namespace nnxr::xr
