#include "app/filter_args.h"

#include <algorithm>
#include <cctype>
#include <set>

namespace nnxr::app {
namespace {

std::string lower(std::string s) {
  for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

std::vector<std::string> split_list(const std::string& text, const std::string& option) {
  std::vector<std::string> out;
  size_t at = 0;
  while (true) {
    const size_t comma = text.find(',', at);
    const std::string item = text.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    if (item.empty()) throw UsageError(option + ": '" + text + "' has an empty name (a list is NAME,NAME,...)");
    out.push_back(item);
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  return out;
}

std::optional<int> layer_number(const std::string& text, const std::string& whole) {
  if (text.empty()) return std::nullopt;
  return static_cast<int>(parse_int(text, "--layers '" + whole + "': layer", 0, 1'000'000));
}

std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& s : items) out += (out.empty() ? "" : ", ") + s;
  return out;
}

}  // namespace

std::vector<std::string> close_matches(const std::string& name, const std::vector<std::string>& candidates, size_t limit) {
  const std::string n = lower(name);
  const size_t allowed = std::max<size_t>(2, n.size() / 3);
  std::vector<std::pair<size_t, std::string>> scored;
  for (const std::string& c : candidates) {
    const std::string l = lower(c);
    size_t score = edit_distance(n, l);
    if (score > allowed) {
      if (n.size() >= 2 && (l.find(n) != std::string::npos || (l.size() >= 2 && n.find(l) != std::string::npos)))
        score = allowed + 1 + (l.size() > n.size() ? l.size() - n.size() : n.size() - l.size());
      else
        continue;
    }
    scored.emplace_back(score, c);
  }
  std::stable_sort(scored.begin(), scored.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::string> out;
  for (auto& [score, c] : scored) {
    if (out.size() == limit) break;
    if (std::find(out.begin(), out.end(), c) == out.end()) out.push_back(std::move(c));
  }
  return out;
}

FilterArgs parse_filter_args(Args& args) {
  FilterArgs f;
  if (auto text = args.option("--layers")) {
    const size_t colon = text->find(':');
    if (text->empty() || (colon != std::string::npos && text->find(':', colon + 1) != std::string::npos) || *text == ":")
      throw UsageError("--layers: '" + *text + "' is not a layer range (A:B, A, A: or :B with whole numbers)");
    if (colon == std::string::npos) {
      f.layer_min = f.layer_max = layer_number(*text, *text);
    } else {
      f.layer_min = layer_number(text->substr(0, colon), *text);
      f.layer_max = layer_number(text->substr(colon + 1), *text);
    }
    if (f.layer_min && f.layer_max && *f.layer_min > *f.layer_max)
      throw UsageError("--layers: '" + *text + "' is empty: the first layer comes after the last");
  }
  if (auto text = args.option("--ops")) f.ops = split_list(*text, "--ops");
  if (auto text = args.option("--tensors")) f.tensors = split_list(*text, "--tensors");
  if (auto text = args.option("--filter-mode")) {
    if (*text == "hide") f.outside = scene::Filter::Outside::Hide;
    else if (*text == "dim") f.outside = scene::Filter::Outside::Dim;
    else throw UsageError("--filter-mode: '" + *text + "' is not hide or dim");
  }
  return f;
}

scene::Filter resolve_filter(const model::Graph& graph, const FilterArgs& args) {
  scene::Filter f;
  f.outside = args.outside;
  const int last = std::max(graph.layer_count - 1, 0);
  auto check_layer = [&](std::optional<int> layer) {
    if (layer && *layer > last)
      throw UsageError("--layers: layer " + std::to_string(*layer) + " does not exist: " + graph.source + " has layers 0 to " +
                       std::to_string(last));
  };
  check_layer(args.layer_min);
  check_layer(args.layer_max);
  if (args.layer_min) f.layer_min = *args.layer_min;
  if (args.layer_max) f.layer_max = *args.layer_max;

  if (!args.ops.empty()) {
    std::set<std::string> known;
    for (const model::Node& n : graph.nodes) known.insert(n.op_type);
    const std::vector<std::string> list(known.begin(), known.end());
    for (const std::string& op : args.ops) {
      if (known.count(op)) {
        f.op_types.push_back(op);
        continue;
      }
      const auto close = close_matches(op, list);
      throw UsageError("--ops: " + graph.source + " has no op '" + op + "'" +
                       (close.empty() ? "; its ops: " + joined(list) : " (close: " + joined(close) + ")"));
    }
  }

  if (!args.tensors.empty()) {
    std::vector<std::string> names;
    names.reserve(graph.tensors.size());
    for (const model::Tensor& t : graph.tensors) names.push_back(t.name);
    for (const std::string& name : args.tensors) {
      const auto it = std::find(names.begin(), names.end(), name);
      if (it != names.end()) {
        f.tensors.push_back(model::TensorId(it - names.begin()));
        continue;
      }
      const auto close = close_matches(name, names);
      throw UsageError("--tensors: " + graph.source + " has no tensor '" + name + "'" +
                       (close.empty() ? " (and none with a close name)" : " (close: " + joined(close) + ")"));
    }
  }
  return f;
}

}  // namespace nnxr::app
