#include "engine/search_overlay.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

namespace nnxr::engine {

void draw_search(const Search& search, const FlyCamera& camera, float aspect, OverlayBuilder& overlay) {
  overlay.clear();
  // A plane just beyond the near plane, so that the scene does not cover it.
  const float distance = camera.near_plane * 4;
  const float half_h = distance * std::tan(camera.fov_y * 0.5f);
  const float half_w = half_h * std::max(aspect, 0.1f);
  const glm::vec3 f = camera.forward(), r = camera.right(), u = camera.up();
  const glm::vec3 centre = camera.position + f * distance;
  const float unit = 2 * half_h / (SearchPanel::kLinesPerView * 12);
  const glm::vec3 right = r * unit, down = -u * unit;
  const glm::vec3 top_left = centre - r * (half_w * SearchPanel::kLeft) + u * (half_h * SearchPanel::kTop);
  const SearchPanel panel = search_panel(search);
  const SearchPanel::Box box = panel.box;
  const glm::vec2 mid = (box.lo + box.hi) * 0.5f, half = (box.hi - box.lo) * 0.5f;
  overlay.quad(top_left + right * mid.x + down * mid.y, right * half.x, -down * half.y, {0.03f, 0.03f, 0.06f, 0.85f});
  glm::vec3 at = top_left;
  for (const auto& [text, colour] : panel.lines) {
    overlay.text(at, right, down, text, colour);
    at += down * 12.0f;
  }
}

}  // namespace nnxr::engine
