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
  // One glyph unit: a text line (12 units) is a thirtieth of the view's height.
  const float unit = 2 * half_h / (30 * 12);
  const glm::vec3 right = r * unit, down = -u * unit;
  const glm::vec3 top_left = centre - r * (half_w * 0.96f) + u * (half_h * 0.94f);
  // The lines first: the panel fits the longest.
  std::vector<std::pair<std::string, glm::vec4>> lines;
  const glm::vec4 white{1, 1, 1, 1}, grey{0.6f, 0.6f, 0.65f, 1}, chosen{1.0f, 0.85f, 0.2f, 1};
  lines.emplace_back("find: " + search.query() + "_", white);
  if (search.matches().empty()) lines.emplace_back("no tensor or node matches", grey);
  for (size_t i = 0; i < search.matches().size(); ++i) {
    const SearchEntry& e = search.entries()[search.matches()[i]];
    std::string line = (i == search.chosen() ? "> " : "  ") + e.name;
    if (line.size() > 60) line = line.substr(0, 57) + "...";
    line += "  (" + (e.op.empty() ? std::string("input") : e.op) + ", layer " + std::to_string(e.layer) + ")";
    lines.emplace_back(std::move(line), i == search.chosen() ? chosen : white);
  }
  if (!search.matches().empty())
    lines.emplace_back(std::to_string(search.match_count()) + " match" + (search.match_count() == 1 ? "" : "es") +
                           "; Up/Down choose, Enter flies there, Esc closes",
                       grey);
  size_t longest = 0;
  for (const auto& l : lines) longest = std::max(longest, l.first.size());
  const float width = 6.0f * float(longest) + 4, height = 12.0f * float(lines.size()) + 2;
  overlay.quad(top_left + right * (width * 0.5f - 2) + down * (height * 0.5f - 3), right * (width * 0.5f + 4),
               -down * (height * 0.5f + 4), {0.03f, 0.03f, 0.06f, 0.85f});
  glm::vec3 at = top_left;
  for (const auto& [text, colour] : lines) {
    overlay.text(at, right, down, text, colour);
    at += down * 12.0f;
  }
}

}  // namespace nnxr::engine
