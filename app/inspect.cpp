// `nnxr inspect [MODEL] [--json] [--dim NAME=VALUE]...`: what a model is made of.
// `nnxr inspect [MODEL] --scene [--input FILE]... [--random SEED] [--budget N] [--top-k K]
//               [--threads N] [--json]`: runs the model and reports the scene built from it.
#include <algorithm>
#include <chrono>
#include <iomanip>
#include <iostream>
#include <map>
#include <sstream>
#include <thread>

#include "app/commands.h"
#include "app/json.h"
#include "model/ops.h"
#ifdef NNXR_HAVE_RUNTIME
#include "app/compare.h"
#include "app/filter_args.h"
#include "app/inputs.h"
#include "app/limits.h"
#include "model/runtime/runtime.h"
#include "model/scene/compare.h"
#include "model/scene/scene.h"
#include "model/scene/tiles.h"
#endif

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


#ifdef NNXR_HAVE_RUNTIME
// ---- --scene ------------------------------------------------------------------------------------

std::string op_of(const Graph& g, model::TensorId id) {
  const Tensor& t = g.tensors[id];
  if (t.producer == model::kNone) return kind_name(t.kind);
  return g.nodes[t.producer].op_type;
}

int inspect_scene(Args& args, bool json, model::LoadOptions options) {
  auto specs = parse_input_specs(args);
  const ImageOptions image = parse_image_options(args);
  std::optional<uint32_t> seed;
  if (auto s = args.int_option("--random", 0, 0xffffffffLL)) seed = static_cast<uint32_t>(*s);
  const auto budget = static_cast<uint64_t>(args.int_option("--budget", 0, int64_t{1} << 40).value_or(20'000'000));
  const int top_k = static_cast<int>(args.int_option("--top-k", 1, 16).value_or(8));
  const bool show_constants = args.flag("--show-constants");
  int threads = static_cast<int>(args.int_option("--threads", 0, 256).value_or(1));
  if (threads == 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const FilterArgs filter_args = parse_filter_args(args);
  const auto compare = args.option("--compare");
  const auto show_text = args.option("--show");
  const Limits limits = parse_limits(args);
  auto pos = args.positionals();
  args.finish();
  install(limits);
  if (show_text && !compare) throw UsageError("--show needs --compare FILE");
  const auto show = scene::parse_compare_show(show_text.value_or("diff"));
  if (!show) throw UsageError("--show takes a, b or diff, got '" + *show_text + "'");
  if (pos.size() > 1) throw UsageError("inspect takes one model, got '" + pos[0] + "' and '" + pos[1] + "'");
  const std::optional<std::string> model_path = pos.empty() ? std::nullopt : std::optional(pos[0]);
  add_default_input(model_path.has_value(), seed, specs);
  if (!seed) seed = 0;  // inputs without a file: seeded random values, reproducibly

  using Clock = std::chrono::steady_clock;
  const auto t_load = Clock::now();
  auto [graph, inputs] = load_with_inputs(model_path, std::move(specs), options);
  print_warnings(graph);
  const scene::Filter filter = resolve_filter(graph, filter_args);
  const auto feeds = inputs.resolve(graph, seed, image, /*quiet=*/true);
  const double load_ms = std::chrono::duration<double, std::milli>(Clock::now() - t_load).count();

  auto plan = runtime::Plan::build(std::move(graph));
  runtime::Session session(plan, {.threads = threads});
  for (const auto& [name, t] : feeds) session.set_input(name, t.dtype, t.shape, t.bytes);
  runtime::RunStats run;
  try {
    run = session.run(run_options(limits));
  } catch (const runtime::CancelledError& e) {
    return report_cancelled(e);
  } catch (const runtime::RuntimeError& e) {  // show what was computed
    std::cerr << "warning: " << e.what() << "; the scene shows the tensors computed\n";
  }
  const Graph& g = plan->graph();

  const scene::Activations values_a = scene::activations_of(session);
  const scene::Layout layout = scene::Layout::build(g, {.constants = show_constants}, &values_a);  // shapes as run
  // --compare: input B in a second session, the divergence of every tensor, and the scene of
  // what --show picks.
  std::optional<runtime::Session> session_b;
  scene::Activations values_b, values_diff;
  std::vector<float> diff_storage;
  std::vector<std::optional<scene::Divergence>> divergence;
  double inference_b_ms = 0;
  if (compare) {
    const auto feeds_b = compare_feeds(*compare, g, feeds, image);
    session_b.emplace(plan, runtime::SessionOptions{.threads = threads});
    for (const auto& [name, t] : feeds_b) session_b->set_input(name, t.dtype, t.shape, t.bytes);
    try {
      inference_b_ms = session_b->run(run_options(limits)).milliseconds;
    } catch (const runtime::CancelledError& e) {
      return report_cancelled(e);
    } catch (const runtime::RuntimeError& e) {
      std::cerr << "warning: " << *compare << ": " << e.what() << "; the scene shows the tensors computed\n";
    }
    values_b = scene::activations_of(*session_b);
    divergence = scene::divergence(g, values_a, values_b);
    if (*show == scene::CompareShow::Difference) values_diff = scene::difference(g, values_a, values_b, diff_storage);
  }
  const scene::Activations& values = !compare || *show == scene::CompareShow::A ? values_a
                                     : *show == scene::CompareShow::B           ? values_b
                                                                                : values_diff;
  scene::InMemorySink sink;
  const scene::Scene sc = scene::Scene::build(g, layout, values, {.top_k = top_k, .budget = budget, .threads = threads}, sink);
  const scene::BuildStats& st = sc.stats();
  for (const std::string& w : st.warnings) std::cerr << "warning: " << g.source << ": " << w << '\n';
  const auto lo = layout.bounds_min(), hi = layout.bounds_max();
  // What the filter shows of each segment (the thresholds at 0: every resident element).
  scene::Filter probe = filter;  // with Dim, every segment is counted and flagged when outside
  probe.outside = scene::Filter::Outside::Dim;
  const scene::DrawCounts shown = sc.counts(probe);
  const bool dim = filter.outside == scene::Filter::Outside::Dim;
  auto in_filter = [&](size_t i) { return shown.dimmed[i] == 0; };
  uint64_t neurons_shown = 0, connections_shown = 0;
  for (size_t i = 0; i < shown.neurons.size(); ++i)
    if (in_filter(i)) neurons_shown += shown.neurons[i], connections_shown += shown.connections[i];
  const scene::ImagesStats images = scene::plan_images(layout, &values);  // every activation, as images
  constexpr uint64_t kNeuronBytes = sizeof(scene::Neuron), kConnectionBytes = sizeof(scene::Connection);

  if (json) {
    JsonWriter j(std::cout);
    j.begin_object().field("model", g.source).field("top_k", top_k).field("budget", budget).field("threads", threads);
    j.field("load_ms", load_ms).field("inference_ms", run.milliseconds);
    if (compare) {
      std::cout << std::setprecision(10);  // divergence figures to 1e-9 and better
      j.key("compare").begin_object().field("file", *compare).field("show", scene::compare_show_name(*show));
      j.field("inference_ms", inference_b_ms).key("most_changed").begin_array();
      for (model::TensorId id : scene::most_changed(g, divergence, 10)) j.value(g.tensors[id].name);
      j.end_array().end_object();
    }
    j.key("stage_ms").begin_object().field("layout", st.layout_ms).field("scoring", st.scoring_ms).field("sorting", st.sorting_ms);
    j.field("writing", st.writing_ms).field("build", st.total_ms).end_object();
    j.field("neurons", st.neurons).field("neurons_total", st.neurons_total);
    j.field("activations_total", images.activations_total).field("activations_shown", images.activations_shown);
    j.field("points_resident", st.neurons).field("connections_resident", st.connections);
    j.field("image_bytes", images.bytes);
    j.field("connections", st.connections).field("connection_candidates", st.connection_candidates);
    j.field("resident_bytes", st.bytes).field("bytes_per_neuron", kNeuronBytes).field("bytes_per_connection", kConnectionBytes);
    j.field("cpu_bytes", st.cpu_bytes).field("max_contribution", static_cast<double>(sc.max_contribution()));
    j.key("bounds").begin_object().key("min").begin_array();
    for (float v : lo) j.value(static_cast<double>(v));
    j.end_array().key("max").begin_array();
    for (float v : hi) j.value(static_cast<double>(v));
    j.end_array().end_object();
    if (filter.selective()) {
      j.key("filter").begin_object().field("layer_min", filter.layer_min);
      j.field("layer_max", std::min(filter.layer_max, std::max(g.layer_count - 1, 0)));
      j.key("ops").begin_array();
      for (const std::string& op : filter.op_types) j.value(op);
      j.end_array().key("tensors").begin_array();
      for (const std::string& t : filter_args.tensors) j.value(t);
      j.end_array().field("mode", dim ? "dim" : "hide").end_object();
      j.field("neurons_shown", neurons_shown).field("connections_shown", connections_shown);
    }
    j.key("ops_without_connector").begin_array();
    for (const auto& [op, n] : st.unconnected_ops) j.begin_object().field("op", op).field("tensors", n).end_object();
    j.end_array();
    j.key("warnings").begin_array();
    for (const auto& w : st.warnings) j.value(w);
    j.end_array();
    j.key("tensors").begin_array();
    for (size_t i = 0; i < sc.segments().size(); ++i) {
      const scene::Segment& s = sc.segments()[i];
      if (filter.selective() && !dim && !in_filter(i)) continue;
      const Tensor& t = g.tensors[s.tensor];
      j.begin_object().field("name", t.name).field("op", op_of(g, s.tensor)).field("layer", s.layer).key("shape");
      write_shape(j, t);
      j.field("neurons", static_cast<uint64_t>(s.neuron_count)).field("neurons_total", s.neuron_total);
      j.field("candidates", s.connection_candidates).field("connections", static_cast<uint64_t>(s.connection_count));
      j.field("value_min", static_cast<double>(s.value_min)).field("value_max", static_cast<double>(s.value_max));
      if (dim) j.field("dimmed", !in_filter(i));
      if (compare) {
        j.key("divergence");
        if (const auto& d = divergence[s.tensor]) j.begin_object().field("rel_l2", d->rel_l2).field("cosine", d->cosine).end_object();
        else j.null();
      }
      j.end_object();
    }
    j.end_array().end_object();
    return 0;
  }

  auto& out = std::cout;
  out << "scene of " << g.source << " (top-" << top_k << ", budget " << grouped(static_cast<int64_t>(budget)) << ", "
      << threads << (threads == 1 ? " thread" : " threads") << ")\n";
  out << std::left << std::setw(40) << "tensor" << std::setw(20) << "op" << std::right << std::setw(13) << "neurons"
      << std::setw(22) << "candidates" << std::setw(13) << "connections" << '\n';
  for (size_t i = 0; i < sc.segments().size(); ++i) {
    const scene::Segment& s = sc.segments()[i];
    if (filter.selective() && !dim && !in_filter(i)) continue;
    const Tensor& t = g.tensors[s.tensor];
    std::string name = t.name.size() > 38 ? t.name.substr(0, 35) + "..." : t.name;
    out << std::left << std::setw(40) << name << std::setw(20) << op_of(g, s.tensor) << std::right << std::setw(13)
        << grouped(s.neuron_count) << std::setw(22) << grouped(s.connection_candidates) << std::setw(13)
        << grouped(s.connection_count) << '\n';
  }
  if (filter.selective()) {
    std::string what = "layers " + std::to_string(filter.layer_min) + ".." +
                       std::to_string(std::min(filter.layer_max, std::max(g.layer_count - 1, 0)));
    if (!filter.op_types.empty()) {
      what += ", ops ";
      for (size_t i = 0; i < filter.op_types.size(); ++i) what += (i ? "," : "") + filter.op_types[i];
    }
    if (!filter_args.tensors.empty()) {
      what += ", tensors ";
      for (size_t i = 0; i < filter_args.tensors.size(); ++i) what += (i ? "," : "") + filter_args.tensors[i];
    }
    out << "filter      " << what << (dim ? " (the rest dimmed): " : ": ") << grouped(static_cast<int64_t>(neurons_shown))
        << " neurons, " << grouped(static_cast<int64_t>(connections_shown)) << " connections shown\n";
  }
  out << std::fixed << std::setprecision(2);
  out << "total       " << grouped(static_cast<int64_t>(st.neurons)) << " of " << grouped(static_cast<int64_t>(st.neurons_total))
      << " neurons, " << grouped(static_cast<int64_t>(st.connections)) << " connections kept of "
      << grouped(static_cast<int64_t>(st.connection_candidates)) << " candidates\n";
  out << "activations " << grouped(static_cast<int64_t>(images.activations_shown)) << " of "
      << grouped(static_cast<int64_t>(images.activations_total)) << " shown as images ("
      << grouped(static_cast<int64_t>(images.bytes)) << " bytes)\n";
  out << "resident    " << grouped(static_cast<int64_t>(st.bytes)) << " bytes (" << kNeuronBytes << " per neuron, "
      << kConnectionBytes << " per connection); CPU side " << grouped(static_cast<int64_t>(st.cpu_bytes)) << " bytes\n";
  out << "bounds      x " << lo[0] << ".." << hi[0] << " m, y " << lo[1] << ".." << hi[1] << " m, z " << lo[2] << ".." << hi[2]
      << " m\n";
  out << "times       load " << load_ms << " ms, inference " << run.milliseconds << " ms, layout " << st.layout_ms
      << " ms, scoring " << st.scoring_ms << " ms, sorting " << st.sorting_ms << " ms, writing " << st.writing_ms
      << " ms (build " << st.total_ms << " ms)\n";
  if (compare) {
    out << "compare     A against B = " << *compare << " (inference " << run.milliseconds << " ms and " << inference_b_ms
        << " ms), the scene shows " << scene::compare_show_name(*show) << "\n";
    out << "most changed (rel L2 = |a_A - a_B| / |a_A|, cosine of a_A and a_B):\n";
    out << std::setprecision(4);
    for (model::TensorId id : scene::most_changed(g, divergence, 10)) {
      const Tensor& t = g.tensors[id];
      std::string name = t.name.size() > 38 ? t.name.substr(0, 35) + "..." : t.name;
      out << "  " << std::left << std::setw(40) << name << std::setw(20) << op_of(g, id) << std::right << "rel L2 "
          << std::setw(9) << divergence[id]->rel_l2 << "  cosine " << std::setw(7) << divergence[id]->cosine << '\n';
    }
    out << std::setprecision(2);
  }
  if (!st.unconnected_ops.empty()) {
    std::string list;
    for (const auto& [op, n] : st.unconnected_ops) list += (list.empty() ? "" : ", ") + op + "×" + std::to_string(n);
    out << "no connector " << list << '\n';
  }
  return 0;
}
#endif

}  // namespace

int inspect_command(Args& args) {
  const bool json = args.flag("--json");
  const bool scene = args.flag("--scene");
  model::LoadOptions options;
  parse_dims(args, options);
#ifdef NNXR_HAVE_RUNTIME
  if (scene) return inspect_scene(args, json, std::move(options));
#else
  if (scene) throw UsageError("--scene needs the runtime, which this build leaves out");
#endif
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
