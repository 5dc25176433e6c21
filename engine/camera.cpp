#include "engine/camera.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include <glm/gtc/matrix_transform.hpp>

namespace nnxr::engine {

std::optional<CameraPreset> parse_camera_preset(std::string_view name) {
  if (name == "overview") return CameraPreset::Overview;
  if (name == "front") return CameraPreset::Front;
  if (name == "side") return CameraPreset::Side;
  if (name == "top") return CameraPreset::Top;
  return std::nullopt;
}

std::string camera_preset_names() { return "overview, front, side, top"; }

glm::mat4 Camera::view() const { return glm::lookAtRH(eye, target, up); }

glm::mat4 Camera::projection(float aspect) const {
  glm::mat4 p = glm::perspectiveRH_ZO(fov_y, aspect, near, far);
  p[1][1] = -p[1][1];  // Vulkan clip space: Y down
  return p;
}

Camera frame_bounds(CameraPreset preset, glm::vec3 min, glm::vec3 max, float aspect) {
  std::vector<glm::vec3> corners;
  for (int i = 0; i < 8; ++i) corners.push_back({(i & 1) ? max.x : min.x, (i & 2) ? max.y : min.y, (i & 4) ? max.z : min.z});
  return frame_points(preset, corners, aspect);
}

namespace {

// The camera looking along -dir that holds every point, and the fraction of the image width the
// points then span.
Camera frame_along(glm::vec3 dir, glm::vec3 up, std::span<const glm::vec3> points, float aspect, float* width);

}  // namespace

Camera frame_points(CameraPreset preset, std::span<const glm::vec3> points, float aspect) {
  glm::vec3 dir{0, 0, 1}, up{0, 1, 0};  // from the target towards the eye
  switch (preset) {
    case CameraPreset::Overview: dir = glm::normalize(glm::vec3(-1.0f, 0.5f, 0.75f)); break;
    case CameraPreset::Front: dir = {-1, 0, 0}; break;
    // Side and top differ by 50 degrees of elevation, so that square feature maps (as tall as
    // they are wide) do not give both the same silhouette: side from 20 degrees above the
    // horizon (tops of the blocks in view), top from 70 degrees (their faces foreshortened).
    case CameraPreset::Side: dir = glm::normalize(glm::vec3(0, std::sin(0.35f), std::cos(0.35f))); break;
    case CameraPreset::Top: dir = glm::normalize(glm::vec3(0, std::sin(1.22f), std::cos(1.22f))), up = {0, 0, -1}; break;
  }
  float width = 0;
  Camera cam = frame_along(dir, up, points, aspect, &width);
  if (preset == CameraPreset::Overview && width < 0.5f) {
    // A network taller than the image is wide fills little of the width seen from near the
    // depth axis: turn towards its side (depth then runs more across the image) while that
    // widens it, up to 70 degrees off the axis.
    for (const float azimuth : {0.9f, 1.05f, 1.22f}) {
      float w = 0;
      const Camera c = frame_along(glm::normalize(glm::vec3(-std::cos(azimuth), 0.5f, std::sin(azimuth))), up, points, aspect, &w);
      if (w > width + 0.05f) cam = c, width = w;
    }
  }
  return cam;
}

namespace {

Camera frame_along(glm::vec3 dir, glm::vec3 up, std::span<const glm::vec3> points, float aspect, float* width) {
  glm::vec3 min(0), max(0);
  if (!points.empty()) min = max = points[0];
  for (const glm::vec3& p : points) min = glm::min(min, p), max = glm::max(max, p);
  Camera cam;
  cam.up = up;
  cam.target = 0.5f * (min + max);
  const glm::vec3 right = glm::normalize(glm::cross(-dir, up));
  const glm::vec3 true_up = glm::cross(right, -dir);
  const float margin = 0.92f;
  const float tan_y = std::tan(cam.fov_y / 2) * margin;
  const float tan_x = tan_y * std::max(aspect, 1e-3f);
  // The nearest eye distance at which all eight corners of the box fall inside the frustum.
  float distance = 0;
  for (const glm::vec3& point : points) {
    const glm::vec3 p = point - cam.target;
    const float toward = glm::dot(p, dir);
    distance = std::max(distance, std::abs(glm::dot(p, right)) / tan_x + toward);
    distance = std::max(distance, std::abs(glm::dot(p, true_up)) / tan_y + toward);
  }
  const float radius = std::max(0.5f * glm::length(max - min), 1e-3f);
  distance = std::max(distance, radius * 0.1f);
  // Tighten: centre the corners' projected extent and move in until it touches the margin on the
  // tighter axis (the bounds above are conservative for oblique views).
  for (int iteration = 0; iteration < 24; ++iteration) {
    glm::vec2 lo(1e30f), hi(-1e30f);
    float nearest = 1e30f;
    const glm::vec3 eye = cam.target + dir * distance;
    for (const glm::vec3& point : points) {
      const glm::vec3 v = point - eye;
      const float depth = glm::dot(v, -dir);
      nearest = std::min(nearest, depth);
      const glm::vec2 ndc(glm::dot(v, right) / (depth * tan_x), glm::dot(v, true_up) / (depth * tan_y));
      lo = glm::min(lo, ndc);
      hi = glm::max(hi, ndc);
    }
    if (nearest <= radius * 0.05f) break;  // keep well in front of the box
    const glm::vec2 centre = 0.5f * (lo + hi);
    cam.target += (right * centre.x * tan_x + true_up * centre.y * tan_y) * distance;
    const float extent = std::max(hi.x - lo.x, hi.y - lo.y) / 2;
    distance *= 0.5f + 0.5f * extent;  // halfway towards the distance where extent would be 1
  }
  // The last move is unchecked (and the loop stops early when the box comes close): back off
  // until every point is inside the margin, so that nothing is clipped at an edge.
  float x_lo = 0, x_hi = 0;
  for (int iteration = 0; iteration < 64; ++iteration) {
    const glm::vec3 eye = cam.target + dir * distance;
    float worst = 0;
    bool behind = false;
    x_lo = 1e30f, x_hi = -1e30f;
    for (const glm::vec3& point : points) {
      const glm::vec3 v = point - eye;
      const float depth = glm::dot(v, -dir);
      if (depth <= radius * 0.02f) {
        behind = true;
        break;
      }
      const float x = glm::dot(v, right) / (depth * tan_x);
      x_lo = std::min(x_lo, x), x_hi = std::max(x_hi, x);
      worst = std::max({worst, std::abs(x), std::abs(glm::dot(v, true_up)) / (depth * tan_y)});
    }
    if (!behind && worst <= 1.0001f) break;
    distance *= behind ? 1.25f : std::min(1.25f, std::max(1.01f, worst));
  }
  // NDC spans 2 across; the margin keeps points inside `margin` of it.
  if (width) *width = points.empty() || x_hi < x_lo ? 0.0f : std::clamp(0.5f * (x_hi - x_lo) * margin, 0.0f, 1.0f);
  cam.eye = cam.target + dir * distance;
  cam.near = std::max((distance - radius) * 0.5f, distance * 1e-3f);
  cam.far = distance + radius * 2 + 1;
  return cam;
}

}  // namespace

}  // namespace nnxr::engine
