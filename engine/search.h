// Finding a tensor by name on the desktop: `/` opens the search, typing narrows the matches (by
// tensor or node name, case-insensitive), Up/Down choose among them, Enter takes one, Escape
// closes. Pure logic; the desktop draws it with the overlay (engine/search_overlay.h) and flies
// the camera to what Enter took.
//
// Cost: O(tensors · name length) per keystroke, nothing per frame. Threads: frame thread only.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <glm/glm.hpp>

#include "model/graph.h"

namespace nnxr::engine {

// A laid-out tensor that can be found.
struct SearchEntry {
  model::TensorId tensor = model::kNone;
  std::string name, node, op;  // node and op empty for graph inputs
  int layer = 0;
  glm::vec3 min{0}, max{0};  // its block's bounds (network space)
};

class Search {
 public:
  static constexpr size_t kShown = 8;  // matches listed at once

  void set_entries(std::vector<SearchEntry> entries);
  const std::vector<SearchEntry>& entries() const { return entries_; }

  void open();
  void close();
  bool active() const { return active_; }
  // Typing: printable ASCII (other code points are ignored); backspace removes the last one.
  void type(uint32_t codepoint);
  void backspace();
  // Moves the choice among the matches (+1: down the list), clamped.
  void move(int steps);

  const std::string& query() const { return query_; }
  // Indices into entries() of the matches, best first (every entry for an empty query), at most
  // kShown; and how many matched in all.
  const std::vector<size_t>& matches() const { return matches_; }
  size_t match_count() const { return match_count_; }
  size_t chosen() const { return chosen_; }
  // Enter: the chosen match (and the search closes), or nothing when nothing matches.
  std::optional<SearchEntry> accept();

 private:
  void update();

  std::vector<SearchEntry> entries_;
  bool active_ = false;
  std::string query_;
  std::vector<size_t> matches_;
  size_t match_count_ = 0;
  size_t chosen_ = 0;
};

// The search box as the desktop draws it (engine/search_overlay.cpp): its lines, top to bottom (the
// query, then the matches or why there are none, and the hint), and the panel behind them in
// glyph units (a line is 12 high, a glyph 6 wide) from the first line's top left, x right and y
// down. The first line starts kLeft of the half width left and kTop of the half height up from
// the view's centre; a line is 1 / kLinesPerView of the view's height.
struct SearchPanel {
  static constexpr float kLeft = 0.96f, kTop = 0.94f, kLinesPerView = 30;
  struct Line {
    std::string text;
    glm::vec4 colour;
  };
  struct Box {
    glm::vec2 lo, hi;
  };
  std::vector<Line> lines;
  Box box;
};
SearchPanel search_panel(const Search& search);

// Whether the window pixel (x, y) of a width × height view lies on the search box (false while
// the search is closed): the pointer there aims at nothing.
bool over_search(const Search& search, float x, float y, float width, float height);

}  // namespace nnxr::engine
