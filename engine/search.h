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

}  // namespace nnxr::engine
