#include "engine/overlay.h"

#include <algorithm>
#include <cstring>
#include <string>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wpedantic"
#include <stb_easy_font.h>
#pragma GCC diagnostic pop

namespace nnxr::engine {

uint32_t pack_rgba(glm::vec4 c) {
  auto byte = [](float v) { return uint32_t(std::clamp(v, 0.0f, 1.0f) * 255.0f + 0.5f); };
  return byte(c.r) | byte(c.g) << 8 | byte(c.b) << 16 | byte(c.a) << 24;
}

void OverlayBuilder::line(glm::vec3 a, glm::vec3 b, glm::vec4 colour) {
  const uint32_t c = pack_rgba(colour);
  lines_.push_back({a, c});
  lines_.push_back({b, c});
}

void OverlayBuilder::ribbon(glm::vec3 a, glm::vec3 b, glm::vec3 eye, float width, glm::vec4 colour) {
  const glm::vec3 along = b - a;
  glm::vec3 side = glm::cross(along, eye - 0.5f * (a + b));
  const float len = glm::length(side);
  if (!(len > 1e-9f)) return;  // degenerate, or seen end-on
  side *= 0.5f * width / len;
  quad(0.5f * (a + b), side, 0.5f * along, colour);
}

void OverlayBuilder::quad(glm::vec3 centre, glm::vec3 right, glm::vec3 up, glm::vec4 colour) {
  const uint32_t c = pack_rgba(colour);
  const glm::vec3 p00 = centre - right - up, p10 = centre + right - up, p11 = centre + right + up, p01 = centre - right + up;
  for (glm::vec3 p : {p00, p10, p11, p00, p11, p01}) triangles_.push_back({p, c});
}

float OverlayBuilder::text(glm::vec3 top_left, glm::vec3 right, glm::vec3 down, std::string_view s, glm::vec4 colour) {
  std::string printable;
  for (char ch : s)
    if (ch >= 32 && ch < 127) printable.push_back(ch);
  if (printable.empty()) return 0;
  // stb_easy_font writes 4 vertices of 16 bytes per quad; at most ~30 quads per glyph.
  scratch_.resize(printable.size() * 30 * 64 + 64);
  unsigned char white[4] = {255, 255, 255, 255};
  const int quads = stb_easy_font_print(0, 0, printable.data(), white, scratch_.data(), int(scratch_.size()));
  const uint32_t c = pack_rgba(colour);
  auto at = [&](int q, int v) {
    float xy[2];
    std::memcpy(xy, scratch_.data() + (size_t(q) * 4 + size_t(v)) * 16, sizeof xy);
    return top_left + xy[0] * right + xy[1] * down;
  };
  for (int q = 0; q < quads; ++q) {
    const glm::vec3 a = at(q, 0), b = at(q, 1), d = at(q, 2), e = at(q, 3);
    for (glm::vec3 p : {a, b, d, a, d, e}) triangles_.push_back({p, c});
  }
  return float(stb_easy_font_width(printable.data()));
}

}  // namespace nnxr::engine
