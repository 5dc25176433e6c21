#include "xr/feedback.h"

#include <algorithm>
#include <cstdio>
#include <string>

namespace nnxr::xr {
namespace {

constexpr float kRayWidth = 0.004f;
constexpr float kGaugeHalfWidth = 0.010f;     // metres
constexpr float kGaugeHalfHeight = 0.060f;
constexpr float kGaugeGlyph = 0.0012f;        // metres per glyph-grid unit by the gauges
constexpr float kPanelDistance = 0.6f;        // ahead of the head
constexpr float kPanelDrop = 0.20f;           // below eye level
constexpr float kPanelLeft = 0.16f;           // left of the line of sight, clear of what is looked at
constexpr float kPanelHalfWidth = 0.20f, kPanelHalfHeight = 0.065f;
constexpr float kPanelGlyph = 0.0018f;
constexpr size_t kPanelChars = 34;            // per line; longer names are cut with "..."

std::string fit(std::string s) {
  if (s.size() > kPanelChars) s = s.substr(0, kPanelChars - 3) + "...";
  return s;
}

std::string number(float v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", double(v));
  return buf;
}

// One vertical gauge: a dark back, filled from the bottom to `value` (0..1), its value above and
// its letter below.
void gauge(engine::OverlayBuilder& out, glm::vec3 centre, glm::vec3 right, glm::vec3 up, glm::vec3 toward_user,
           float value, glm::vec4 colour, const char* label) {
  using namespace feedback_colour;
  value = std::clamp(value, 0.0f, 1.0f);
  out.quad(centre, right * kGaugeHalfWidth, up * kGaugeHalfHeight, kGaugeBack);
  if (value > 0) {
    const glm::vec3 bottom = centre - up * kGaugeHalfHeight;
    const float h = kGaugeHalfHeight * value;
    // A hair in front of the back so that the depth test keeps it on top.
    out.quad(bottom + up * h + toward_user * 0.001f, right * (kGaugeHalfWidth * 0.8f), up * h, colour);
  }
  const std::string v = number(value);
  const glm::vec3 r = right * kGaugeGlyph, d = -up * kGaugeGlyph;
  out.text(centre + up * (kGaugeHalfHeight + 10 * kGaugeGlyph) - r * (3.0f * float(v.size())), r, d, v, kText);
  out.text(centre - up * (kGaugeHalfHeight + 2 * kGaugeGlyph) - r * 3.0f, r, d, label, kText);
}

}  // namespace

void build_feedback(const FeedbackInput& in, engine::OverlayBuilder& out) {
  using namespace feedback_colour;
  for (size_t i = 0; i < 2; ++i) {
    const HandState& h = in.hands[i];
    if (!h.tracked) continue;
    const glm::vec3 dir = glm::normalize(h.aim.orientation * glm::vec3(0, 0, -1));
    out.ribbon(h.aim.position, h.aim.position + dir * in.ray_length[i], in.head.position, kRayWidth, kRay);
  }

  const HandState& right = in.hands[kRight];
  if (right.tracked) {
    const glm::quat q = right.grip.orientation;
    const glm::vec3 x = q * glm::vec3(1, 0, 0), y = q * glm::vec3(0, 1, 0), z = q * glm::vec3(0, 0, 1);
    const glm::vec3 base = right.grip.position + y * 0.11f;
    gauge(out, base - x * 0.02f, x, y, z, in.neuron_threshold, kNeuronGauge, "N");
    gauge(out, base + x * 0.02f, x, y, z, in.connection_threshold, kConnectionGauge, "C");
  }

  if (in.selection) {
    const engine::SelectionState& s = *in.selection;
    const glm::quat q = in.head.orientation;
    const glm::vec3 x = q * glm::vec3(1, 0, 0), y = q * glm::vec3(0, 1, 0), z = q * glm::vec3(0, 0, 1);
    const glm::vec3 centre = in.head.position - z * kPanelDistance - y * kPanelDrop - x * kPanelLeft;
    out.quad(centre, x * kPanelHalfWidth, y * kPanelHalfHeight, kPanel);
    std::string index = "[";
    for (size_t i = 0; i < s.index.size(); ++i) index += (i ? "," : "") + std::to_string(s.index[i]);
    index += "]";
    const std::string lines[] = {
        fit("tensor " + s.tensor_name),
        fit("op " + (s.op_type.empty() ? std::string("(input)") : s.op_type) + (s.node_name.empty() ? "" : " " + s.node_name)),
        fit("index " + index),
        fit("value " + number(s.value)),
    };
    const glm::vec3 r = x * kPanelGlyph, d = -y * kPanelGlyph;
    glm::vec3 at = centre - x * (kPanelHalfWidth - 0.012f) + y * (kPanelHalfHeight - 0.01f) + z * 0.001f;
    for (const std::string& line : lines) {
      out.text(at, r, d, line, kText);
      at += d * 13.0f;
    }
  }
}

glm::mat4 canvas_plane(glm::vec3 top_left, glm::vec3 right, glm::vec3 up, float metres) {
  glm::mat4 m(1.0f);
  m[0] = glm::vec4(right * metres, 0);
  m[1] = glm::vec4(-up * metres, 0);
  m[2] = glm::vec4(glm::cross(right, up), 0);
  m[3] = glm::vec4(top_left, 1);
  return m;
}

glm::mat4 panel_plane() {
  const glm::quat turn = glm::angleAxis(glm::radians(40.0f), glm::vec3(0, 1, 0));
  const glm::vec3 right = turn * glm::vec3(1, 0, 0), up(0, 1, 0);
  const glm::vec3 centre(-0.95f, 1.45f, -1.1f);
  const glm::vec2 half = 0.5f * kPanelCanvas * kPanelMetresPerPixel;
  return canvas_plane(centre - right * half.x + up * half.y, right, up, kPanelMetresPerPixel);
}

HandMenu hand_menu(const Pose& grip, glm::vec2 canvas_size) {
  constexpr float kAboveGrip = 0.05f;
  HandMenu m;
  const glm::quat q = grip.orientation;
  m.right = q * glm::vec3(1, 0, 0);
  m.up = q * glm::vec3(0, 1, 0);
  m.normal = q * glm::vec3(0, 0, 1);
  const glm::vec2 size = canvas_size * kMenuMetresPerPixel;
  const glm::vec3 bottom = grip.position + m.up * kAboveGrip;
  m.centre = bottom + m.up * (0.5f * size.y);
  m.top_left = bottom + m.up * size.y - m.right * (0.5f * size.x);
  m.plane = canvas_plane(m.top_left, m.right, m.up, kMenuMetresPerPixel);
  return m;
}

bool menu_faces(const HandMenu& menu, glm::vec3 eyes) {
  constexpr float kFacing = 0.8f, kReach = 0.75f;
  const glm::vec3 to_eyes = eyes - menu.centre;
  const float d = glm::length(to_eyes);
  return d > 1e-3f && d < kReach && glm::dot(menu.normal, to_eyes / d) >= kFacing;
}

std::optional<glm::vec2> menu_hit(const HandMenu& menu, const engine::Ray& ray, float* distance) {
  const float facing = glm::dot(ray.direction, menu.normal);
  if (std::abs(facing) < 1e-4f) return std::nullopt;
  const float t = glm::dot(menu.top_left - ray.origin, menu.normal) / facing;
  if (!(t >= 0)) return std::nullopt;
  if (distance) *distance = t;
  const glm::vec3 local = ray.origin + ray.direction * t - menu.top_left;
  return glm::vec2(glm::dot(local, menu.right), -glm::dot(local, menu.up)) / kMenuMetresPerPixel;
}

}  // namespace nnxr::xr
