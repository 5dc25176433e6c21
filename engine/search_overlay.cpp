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

void draw_filter_panel(const Interaction& interaction, float width, float height, OverlayBuilder& overlay) {
  if (interaction.op_counts().empty() || !(width > 0) || !(height > 0)) return;
  const FlyCamera& camera = interaction.camera();
  const FilterPanel panel = FilterPanel::layout(width, height, interaction.op_counts().size());
  const float distance = camera.near_plane * 4;
  const float half_h = distance * std::tan(camera.fov_y * 0.5f);
  const float half_w = half_h * width / height;
  const glm::vec3 f = camera.forward(), r = camera.right(), u = camera.up();
  const glm::vec3 centre = camera.position + f * distance;
  auto at_pixel = [&](float x, float y) { return centre + r * ((2 * x / width - 1) * half_w) - u * ((2 * y / height - 1) * half_h); };
  const float metres_per_pixel = 2 * half_h / height;
  const float unit = panel.line_height / 12 * metres_per_pixel;  // a glyph unit: a line is 12
  const glm::vec3 right = r * unit, down = -u * unit;
  const float panel_h = panel.line_height * float(panel.rows());
  overlay.quad(at_pixel(panel.left + panel.width / 2, panel.top + panel_h / 2), r * (panel.width / 2 * metres_per_pixel),
               u * (panel_h / 2 * metres_per_pixel), {0.03f, 0.03f, 0.06f, 0.75f});
  const glm::vec4 white{1, 1, 1, 1}, grey{0.55f, 0.55f, 0.6f, 1}, title{1.0f, 0.85f, 0.2f, 1};
  const float pad = panel.line_height * 0.25f;
  auto row = [&](size_t i, const std::string& text, glm::vec4 colour) {
    overlay.text(at_pixel(panel.left + pad, panel.top + float(i) * panel.line_height + pad), right, down, text, colour);
  };
  row(0, "filters (click)", title);
  for (size_t i = 0; i < interaction.op_counts().size(); ++i) {
    const auto& [op, count] = interaction.op_counts()[i];
    const bool shown = interaction.op_shown(op);
    row(i + 1, std::string(shown ? "[x] " : "[ ] ") + op + "  " + std::to_string(count), shown ? white : grey);
  }
  const FilterSummary s = interaction.filter_summary();
  row(panel.ops + 1, s.mode == "dim" ? "outside: dimmed" : "outside: hidden", white);
  row(panel.ops + 2, "isolate selected tensor", interaction.selection() ? white : grey);
  row(panel.ops + 3, "reset filters", white);
}

}  // namespace nnxr::engine
