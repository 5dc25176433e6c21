// Where non-finite values enter a run: see non_finite_report() in runtime.h.
#include <bit>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "model/runtime/runtime.h"

namespace nnxr::runtime {
namespace {

// NaN and ±Inf among a float32 tensor's values (none for other dtypes).
struct Count {
  int64_t nan = 0, inf = 0;
  bool any() const { return nan + inf > 0; }
};

Count count_non_finite(const Value& v) {
  Count c;
  if (v.dtype() != model::DType::Float) return c;
  // A branch-free pass (exponent bits all ones) that the compiler vectorises; the NaN/Inf split
  // only for the rare tensor that has some.
  const auto values = v.as<float>();
  int64_t bad = 0;
  for (const float x : values) bad += (std::bit_cast<uint32_t>(x) & 0x7F800000u) == 0x7F800000u;
  if (bad == 0) return c;
  for (const float x : values) {
    if (std::isfinite(x)) [[likely]]
      continue;
    if (std::isnan(x)) ++c.nan;
    else ++c.inf;
  }
  return c;
}

}  // namespace

NonFiniteScan::NonFiniteScan(const model::Graph& graph) : graph_(&graph), counted_(graph.tensors.size()) {}

void NonFiniteScan::count(model::TensorId id, const Value& value) {
  if (id >= counted_.size()) return;
  const Count c = count_non_finite(value);
  counted_[id] = {c.nan, c.inf, value.elements()};
}

std::vector<std::string> NonFiniteScan::report(size_t max_lines) const {
  const model::Graph& g = *graph_;
  std::vector<std::string> lines;
  size_t more = 0;
  auto add = [&](std::string line) {
    if (lines.size() < max_lines) lines.push_back(std::move(line));
    else ++more;
  };
  auto describe = [&](model::TensorId id) {
    const Counted& c = counted_[id];
    std::string s;
    if (c.nan) s += std::to_string(c.nan) + " NaN";
    if (c.inf) s += std::string(s.empty() ? "" : " and ") + std::to_string(c.inf) + " Inf";
    return s + " of " + std::to_string(c.elements) + " values";
  };
  auto any = [&](model::TensorId id) { return id < counted_.size() && counted_[id].nan + counted_[id].inf > 0; };
  for (model::TensorId id = 0; id < g.tensors.size(); ++id) {
    const model::Tensor& t = g.tensors[id];
    if (t.producer != model::kNone || !any(id)) continue;  // node outputs: below, in node order
    const bool input = t.kind == model::TensorKind::Input;
    add(std::string(input ? "input" : "weight") + " '" + t.name + "' holds " + describe(id));
  }
  for (const model::Node& node : g.nodes) {
    bool inputs_finite = true;
    for (model::TensorId in : node.inputs)
      if (in != model::kNone && any(in)) inputs_finite = false;
    for (model::TensorId out : node.outputs) {
      // Only where they first appear: a node fed non-finite values passes them on unremarked.
      if (out != model::kNone && any(out) && inputs_finite)
        add("node '" + node.name + "' (" + node.op_type + ") computed " + describe(out) + " in '" + g.tensors[out].name +
            "' from finite inputs");
    }
  }
  if (more) lines.push_back("... and " + std::to_string(more) + " more tensors where non-finite values appear");
  return lines;
}

std::vector<std::string> non_finite_report(const Session& session, size_t max_lines) {
  NonFiniteScan scan(session.plan().graph());
  for (const TensorView& t : session.tensors()) scan.count(t.id, *t.value);
  return scan.report(max_lines);
}

}  // namespace nnxr::runtime
