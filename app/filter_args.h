// The scene filter on the command line, for view, render and inspect --scene:
//   --layers A:B        layers A..B (also A, A: and :B)
//   --ops Conv,Relu     only tensors produced by these ops
//   --tensors N1,N2     only these tensors
//   --filter-mode hide|dim   what happens to the rest (default hide)
// parse_filter_args() checks the syntax before the model is loaded; resolve_filter() checks the
// names and the range against the model. Both throw UsageError with one line that, for an unknown
// name, lists the close matches.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "app/args.h"
#include "model/graph.h"
#include "model/scene/scene.h"

namespace nnxr::app {

struct FilterArgs {
  std::optional<int> layer_min, layer_max;  // unset: open at that end
  std::vector<std::string> ops, tensors;
  scene::Filter::Outside outside = scene::Filter::Outside::Hide;

  bool any() const { return layer_min || layer_max || !ops.empty() || !tensors.empty(); }
};

FilterArgs parse_filter_args(Args& args);

// The filter the arguments describe on `graph` (thresholds left at their defaults).
scene::Filter resolve_filter(const model::Graph& graph, const FilterArgs& filter);

// Up to `limit` of `candidates` close to `name` (edit distance, case-insensitive, or one contains
// the other), closest first.
std::vector<std::string> close_matches(const std::string& name, const std::vector<std::string>& candidates,
                                       size_t limit = 5);

}  // namespace nnxr::app
