#include "engine/search.h"

#include <algorithm>
#include <cctype>

namespace nnxr::engine {
namespace {

std::string lower(const std::string& s) {
  std::string out = s;
  for (char& c : out) c = char(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Rank of a match of `query` (lower case) in `text`: 0 exact, 1 prefix, 2 the start of a word
// (after / . _ - or a space), 3 anywhere; -1 none.
int rank(const std::string& text, const std::string& query) {
  const std::string t = lower(text);
  if (t == query) return 0;
  if (t.rfind(query, 0) == 0) return 1;
  int best = -1;
  for (size_t at = t.find(query); at != std::string::npos; at = t.find(query, at + 1)) {
    const char before = t[at - 1];
    const bool word = before == '/' || before == '.' || before == '_' || before == '-' || before == ' ';
    best = word ? 2 : (best < 0 ? 3 : best);
    if (word) break;
  }
  return best;
}

}  // namespace

void Search::set_entries(std::vector<SearchEntry> entries) {
  entries_ = std::move(entries);
  update();
}

void Search::open() {
  active_ = true;
  query_.clear();
  update();
}

void Search::close() { active_ = false; }

void Search::type(uint32_t codepoint) {
  if (!active_ || codepoint < 0x20 || codepoint > 0x7e || query_.size() >= 200) return;
  query_ += char(codepoint);
  update();
}

void Search::backspace() {
  if (!active_ || query_.empty()) return;
  query_.pop_back();
  update();
}

void Search::move(int steps) {
  if (matches_.empty()) return;
  chosen_ = size_t(std::clamp<int64_t>(int64_t(chosen_) + steps, 0, int64_t(matches_.size()) - 1));
}

std::optional<SearchEntry> Search::accept() {
  if (!active_ || matches_.empty()) return std::nullopt;
  active_ = false;
  return entries_[matches_[std::min(chosen_, matches_.size() - 1)]];
}

void Search::update() {
  chosen_ = 0;
  matches_.clear();
  const std::string q = lower(query_);
  std::vector<std::pair<int, size_t>> ranked;
  for (size_t i = 0; i < entries_.size(); ++i) {
    if (q.empty()) {
      ranked.emplace_back(0, i);
      continue;
    }
    int r = rank(entries_[i].name, q);
    const int n = entries_[i].node.empty() ? -1 : rank(entries_[i].node, q);
    if (n >= 0 && (r < 0 || n + 1 < r)) r = n + 1;  // a tensor's own name first
    if (r >= 0) ranked.emplace_back(r, i);
  }
  // Best rank first; then shallower layers, then the model's order.
  std::stable_sort(ranked.begin(), ranked.end(), [&](const auto& a, const auto& b) {
    if (a.first != b.first) return a.first < b.first;
    return entries_[a.second].layer < entries_[b.second].layer;
  });
  match_count_ = ranked.size();
  for (size_t i = 0; i < ranked.size() && i < kShown; ++i) matches_.push_back(ranked[i].second);
}

SearchPanel search_panel(const Search& search) {
  SearchPanel p;
  const glm::vec4 white{1, 1, 1, 1}, grey{0.6f, 0.6f, 0.65f, 1}, chosen{1.0f, 0.85f, 0.2f, 1};
  p.lines.push_back({"find: " + search.query() + "_", white});
  if (search.matches().empty()) p.lines.push_back({"no tensor or node matches", grey});
  for (size_t i = 0; i < search.matches().size(); ++i) {
    const SearchEntry& e = search.entries()[search.matches()[i]];
    std::string line = (i == search.chosen() ? "> " : "  ") + e.name;
    if (line.size() > 60) line = line.substr(0, 57) + "...";
    line += "  (" + (e.op.empty() ? std::string("input") : e.op) + ", layer " + std::to_string(e.layer) + ")";
    p.lines.push_back({std::move(line), i == search.chosen() ? chosen : white});
  }
  if (!search.matches().empty())
    p.lines.push_back({std::to_string(search.match_count()) + " match" + (search.match_count() == 1 ? "" : "es") +
                           "; Up/Down choose, Enter flies there, Esc closes",
                       grey});
  // The panel fits the longest line.
  size_t longest = 0;
  for (const auto& l : p.lines) longest = std::max(longest, l.text.size());
  const float width = 6.0f * float(longest) + 4, height = 12.0f * float(p.lines.size()) + 2;
  p.box = {{-6, -7}, {width + 2, height + 1}};
  return p;
}

bool over_search(const Search& search, float x, float y, float width, float height) {
  if (!search.active() || width <= 0 || height <= 0) return false;
  // As draw_search places it in this window: the first line's top left in pixels, and the pixels
  // of a glyph unit across (the view is 2 half_w wide, half_w = half_h * aspect) and down.
  const float aspect = std::max(width / height, 0.1f);
  const glm::vec2 origin{width / 2 * (1 - SearchPanel::kLeft), height / 2 * (1 - SearchPanel::kTop)};
  const glm::vec2 unit{width / (SearchPanel::kLinesPerView * 12 * aspect), height / (SearchPanel::kLinesPerView * 12)};
  const SearchPanel::Box box = search_panel(search).box;
  const glm::vec2 lo = origin + box.lo * unit, hi = origin + box.hi * unit;
  return x >= lo.x && x <= hi.x && y >= lo.y && y <= hi.y;
}

}  // namespace nnxr::engine
