// World-space overlay geometry drawn over the scene: lines (e.g. controller rays) and triangles
// (gauges, panels, text), built on the CPU each frame into a buffer the caller keeps.
//
//   OverlayBuilder overlay;                  // reuse across frames: clear() keeps the capacity
//   overlay.clear();
//   overlay.line(a, b, colour);              // or ribbon(a, b, eye, width, colour)
//   overlay.quad(centre, right, up, colour); // right/up: half extents as vectors
//   overlay.text(top_left, right, down, "value 0.5", colour);
//   FrameParams p; p.overlay_lines = overlay.lines(); p.overlay_triangles = overlay.triangles();
//
// Colours are linear RGBA in 0..1, packed to 8 bits per channel. Text uses stb_easy_font's
// built-in bitmap glyphs (printable ASCII; one quad per glyph stroke), so a label costs O(its
// length). Nothing here depends on the scene's size.
//
// Threads: one owner (the frame thread). Plain data; lives as long as its owner wants.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include <glm/glm.hpp>

namespace nnxr::engine {

// One overlay vertex, as the overlay pipelines read it (16 bytes).
struct OverlayVertex {
  glm::vec3 position{0.0f};  // world space
  uint32_t rgba = 0;         // R in the low byte; 8-bit unorm, linear
};
static_assert(sizeof(OverlayVertex) == 16);

uint32_t pack_rgba(glm::vec4 colour);

class OverlayBuilder {
 public:
  void clear() {
    lines_.clear();
    triangles_.clear();
  }
  // A 1-pixel line, however far away.
  void line(glm::vec3 a, glm::vec3 b, glm::vec4 colour);
  // The segment a–b as a flat strip `width` wide, turned to face `eye`.
  void ribbon(glm::vec3 a, glm::vec3 b, glm::vec3 eye, float width, glm::vec4 colour);
  // A parallelogram centred at `centre` spanning ±right and ±up.
  void quad(glm::vec3 centre, glm::vec3 right, glm::vec3 up, glm::vec4 colour);
  // Text starting at `top_left`; `right` and `down` are one glyph-grid unit (a glyph is about 5
  // units wide and 7 high, lines are 12 units apart). Non-printable characters are skipped.
  // Returns the text's width in units.
  float text(glm::vec3 top_left, glm::vec3 right, glm::vec3 down, std::string_view text, glm::vec4 colour);

  std::span<const OverlayVertex> lines() const { return lines_; }
  std::span<const OverlayVertex> triangles() const { return triangles_; }

 private:
  std::vector<OverlayVertex> lines_, triangles_;
  std::vector<char> scratch_;  // stb_easy_font output
};

}  // namespace nnxr::engine
