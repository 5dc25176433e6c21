// Where non-finite values enter a run: see non_finite_report() in runtime.h.
#include <bit>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "model/runtime/runtime.h"

namespace nnxr::runtime {
namespace {

// NaN and ±Inf among a float32 tensor's values (0 for other dtypes and for tensors not computed).
struct Count {
  int64_t nan = 0, inf = 0;
  bool any() const { return nan + inf > 0; }
};

Count count_non_finite(const Value* v) {
  Count c;
  if (!v || v->dtype() != model::DType::Float) return c;
  // A branch-free pass (exponent bits all ones) that the compiler vectorises; the NaN/Inf split
  // only for the rare tensor that has some.
  const auto values = v->as<float>();
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

std::string describe(const Count& c, const Value& v) {
  std::string s;
  if (c.nan) s += std::to_string(c.nan) + " NaN";
  if (c.inf) s += std::string(s.empty() ? "" : " and ") + std::to_string(c.inf) + " Inf";
  return s + " of " + std::to_string(v.elements()) + " values";
}

}  // namespace

std::vector<std::string> non_finite_report(const Session& session, size_t max_lines) {
  const model::Graph& g = session.plan().graph();
  std::vector<std::string> lines;
  size_t more = 0;
  auto add = [&](std::string line) {
    if (lines.size() < max_lines) lines.push_back(std::move(line));
    else ++more;
  };
  std::vector<char> bad(g.tensors.size(), 0);
  for (model::TensorId id = 0; id < g.tensors.size(); ++id) {
    const model::Tensor& t = g.tensors[id];
    if (t.producer != model::kNone) continue;  // node outputs: below, in node order
    const Value* v = session.value(id);
    const Count c = count_non_finite(v);
    if (!c.any()) continue;
    bad[id] = 1;
    const bool input = t.kind == model::TensorKind::Input;
    add(std::string(input ? "input" : "weight") + " '" + t.name + "' holds " + describe(c, *v));
  }
  for (const model::Node& node : g.nodes) {
    bool inputs_finite = true;
    for (model::TensorId in : node.inputs)
      if (in != model::kNone && in < bad.size() && bad[in]) inputs_finite = false;
    for (model::TensorId out : node.outputs) {
      if (out == model::kNone || out >= bad.size()) continue;
      const Value* v = session.value(out);
      const Count c = count_non_finite(v);
      if (!c.any()) continue;
      bad[out] = 1;
      // Only where they first appear: a node fed non-finite values passes them on unremarked.
      if (inputs_finite)
        add("node '" + node.name + "' (" + node.op_type + ") computed " + describe(c, *v) + " in '" + g.tensors[out].name +
            "' from finite inputs");
    }
  }
  if (more) lines.push_back("... and " + std::to_string(more) + " more tensors where non-finite values appear");
  return lines;
}

}  // namespace nnxr::runtime
