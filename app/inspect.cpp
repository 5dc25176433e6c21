// `nnxr inspect [MODEL] [--json] [--dim NAME=VALUE]...`: what a model is made of.
#include <algorithm>
#include <iomanip>
#include <iostream>
#include <map>
#include <sstream>

#include "app/commands.h"
#include "app/json.h"
#include "model/ops.h"

namespace nnxr::app {
namespace {

using model::Graph;
using model::Tensor;
using model::TensorKind;

struct Summary {
  int64_t parameters = 0;           // elements of floating-point initializers
  int64_t activation_elements = 0;  // elements of node outputs (Constant nodes excluded) with known shapes
  int64_t float_activation_elements = 0;
  int activation_tensors = 0;
  int unknown_shapes = 0;  // node outputs whose element count is unknown
  std::vector<std::pair<std::string, int>> op_counts;  // most frequent first
};

Summary summarize(const Graph& g) {
  Summary s;
  for (const Tensor& t : g.tensors) {
    if (t.kind == TensorKind::Initializer && model::dtype_is_float(t.dtype)) s.parameters += t.elements().value_or(0);
    if (t.kind != TensorKind::Activation || t.producer == model::kNone) continue;
    ++s.activation_tensors;
    if (auto n = t.elements()) {
      s.activation_elements += *n;
      if (model::dtype_is_float(t.dtype)) s.float_activation_elements += *n;
    } else {
      ++s.unknown_shapes;
    }
  }
  std::map<std::string, int> counts;
  for (const auto& n : g.nodes) ++counts[n.domain.empty() ? n.op_type : n.domain + "." + n.op_type];
  s.op_counts.assign(counts.begin(), counts.end());
  std::stable_sort(s.op_counts.begin(), s.op_counts.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  return s;
}

std::string grouped(int64_t v) {
  std::string digits = std::to_string(v), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0 && digits[i - 1] != '-') out += ',';
    out += digits[i];
  }
  return out;
}

std::string tensor_line(const Tensor& t) {
  return t.name + "  " + std::string(model::dtype_name(t.dtype)) + " " + (t.rank_known ? model::shape_string(t.shape) : "[unknown]");
}

const char* kind_name(TensorKind k) {
  switch (k) {
    case TensorKind::Input: return "input";
    case TensorKind::Initializer: return "initializer";
    case TensorKind::Constant: return "constant";
    case TensorKind::Activation: return "activation";
  }
  return "?";
}

void print_text(const Graph& g, const Summary& s) {
  auto& out = std::cout;
  auto row = [&](std::string_view label) -> std::ostream& { return out << std::left << std::setw(13) << label; };
  row("model") << g.source << '\n';
  row("producer") << (g.producer_name.empty() ? "(unknown)" : g.producer_name)
                  << (g.producer_version.empty() ? "" : " " + g.producer_version) << ", IR version " << g.ir_version << '\n';
  std::string opsets;
  for (const auto& o : g.opsets) opsets += (opsets.empty() ? "" : ", ") + (o.domain.empty() ? std::string("ai.onnx") : o.domain) + " " + std::to_string(o.version);
  row("opsets") << opsets << '\n';
  for (auto id : g.inputs) row("input") << tensor_line(g.tensors[id]) << '\n';
  for (auto id : g.outputs) row("output") << tensor_line(g.tensors[id]) << '\n';
  row("nodes") << grouped(static_cast<int64_t>(g.nodes.size())) << " in " << g.layer_count << " layers\n";
  std::string ops;
  for (const auto& [op, n] : s.op_counts) ops += (ops.empty() ? "" : ", ") + op + "×" + std::to_string(n);
  row("ops") << ops << '\n';
  row("parameters") << grouped(s.parameters) << '\n';
  row("activations") << grouped(s.activation_elements) << " elements in " << s.activation_tensors << " tensors ("
                     << grouped(s.float_activation_elements) << " float)";
  if (s.unknown_shapes) out << "; " << s.unknown_shapes << " tensors of unknown shape not counted";
  out << '\n';
  const auto unsupported = model::unsupported_ops(g);
  if (unsupported.empty()) {
    row("runtime") << "supports every op\n";
  } else {
    std::string list;
    int nodes = 0;
    for (const auto& u : unsupported) {
      list += (list.empty() ? "" : ", ") + (u.domain.empty() ? u.op_type : u.domain + "." + u.op_type) + "×" + std::to_string(u.count);
      nodes += u.count;
    }
    row("unsupported") << nodes << " nodes the runtime cannot execute yet: " << list << '\n';
  }
}

void write_shape(JsonWriter& j, const Tensor& t) {
  if (!t.rank_known) {
    j.null();
    return;
  }
  j.begin_array();
  for (int64_t d : t.shape) d < 0 ? j.null() : j.value(d);
  j.end_array();
}

void print_json(const Graph& g, const Summary& s) {
  JsonWriter j(std::cout);
  j.begin_object();
  j.field("model", g.source);
  j.key("producer").begin_object().field("name", g.producer_name).field("version", g.producer_version).end_object();
  j.field("ir_version", g.ir_version);
  j.key("opsets").begin_array();
  for (const auto& o : g.opsets)
    j.begin_object().field("domain", o.domain.empty() ? std::string("ai.onnx") : o.domain).field("version", o.version).end_object();
  j.end_array();
  auto tensor_refs = [&](std::string_view key, const std::vector<model::TensorId>& ids) {
    j.key(key).begin_array();
    for (auto id : ids) {
      const Tensor& t = g.tensors[id];
      j.begin_object().field("name", t.name).field("dtype", model::dtype_name(t.dtype)).key("shape");
      write_shape(j, t);
      j.end_object();
    }
    j.end_array();
  };
  tensor_refs("inputs", g.inputs);
  tensor_refs("outputs", g.outputs);
  j.field("node_count", static_cast<int64_t>(g.nodes.size()));
  j.field("layers", g.layer_count);
  j.key("op_counts").begin_object();
  for (const auto& [op, n] : s.op_counts) j.field(op, n);
  j.end_object();
  j.field("parameters", s.parameters);
  j.field("activation_elements", s.activation_elements);
  j.field("float_activation_elements", s.float_activation_elements);
  j.field("activation_tensors", s.activation_tensors);
  j.field("unknown_shape_tensors", s.unknown_shapes);
  j.key("unsupported_ops").begin_array();
  for (const auto& u : model::unsupported_ops(g))
    j.begin_object().field("domain", u.domain.empty() ? std::string("ai.onnx") : u.domain).field("op", u.op_type).field("count", u.count).end_object();
  j.end_array();
  j.key("warnings").begin_array();
  for (const auto& w : g.warnings) j.value(w);
  j.end_array();
  j.key("tensors").begin_array();
  for (const Tensor& t : g.tensors) {
    j.begin_object().field("name", t.name).field("dtype", model::dtype_name(t.dtype)).key("shape");
    write_shape(j, t);
    j.field("layer", t.layer).field("kind", kind_name(t.kind));
    if (t.producer != model::kNone) {
      const auto& n = g.nodes[t.producer];
      j.field("op", n.op_type).field("node", n.name);
      if (!n.domain.empty()) j.field("domain", n.domain);
    } else {
      j.key("op").null().key("node").null();
    }
    j.field("consumers", static_cast<int64_t>(t.consumers.size()));
    if (t.is_output) j.field("output", true);
    j.end_object();
  }
  j.end_array();
  j.end_object();
}

}  // namespace

int inspect_command(Args& args) {
  const bool json = args.flag("--json");
  if (args.flag("--scene")) throw UsageError("--scene: the scene (layout and connections) is not built yet in this version");
  model::LoadOptions options;
  parse_dims(args, options);
  auto pos = args.positionals();
  args.finish();
  if (pos.size() > 1) throw UsageError("inspect takes one model, got '" + pos[0] + "' and '" + pos[1] + "'");
  const Graph g = load_model_arg(pos.empty() ? std::nullopt : std::optional(pos[0]), options, /*quiet=*/false);
  const Summary s = summarize(g);
  if (json) print_json(g, s);
  else print_text(g, s);
  return 0;
}

}  // namespace nnxr::app
