// `nnxr run [MODEL] [--input [NAME=]FILE]... [--random SEED] [--threads N] [--repeat N] [--profile]
//           [--dump DIR] [--json] [--dim NAME=VALUE]...`: run the model once (or N times) on the
// CPU and report its outputs; --dump writes every computed tensor as .npy with an index.json.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <numeric>
#include <sstream>

#include "app/classes.h"
#include "app/commands.h"
#include "app/inputs.h"
#include "app/json.h"
#include "app/limits.h"
#include "model/runtime/runtime.h"
#include "model/scene/labels.h"
#include "model/scene/scene.h"
#include "model/tensor_io.h"

namespace nnxr::app {
namespace {

namespace fs = std::filesystem;

struct Stats {
  double min = 0, max = 0, mean = 0;
  int64_t argmax = -1;
  int64_t non_finite = 0;
};

Stats float_stats(const runtime::Value& v) {
  Stats s;
  if (v.dtype() != model::DType::Float || v.elements() == 0) return s;
  auto data = v.as<float>();
  double sum = 0;
  s.min = INFINITY;
  s.max = -INFINITY;
  for (size_t i = 0; i < data.size(); ++i) {
    const float x = data[i];
    if (!std::isfinite(x)) {
      ++s.non_finite;
      continue;
    }
    sum += x;
    if (x < s.min) s.min = x;
    if (x > s.max) {
      s.max = x;
      s.argmax = static_cast<int64_t>(i);
    }
  }
  s.mean = sum / static_cast<double>(data.size());
  return s;
}

std::string safe_file_name(std::string_view name) {
  std::string out;
  for (char c : name) out += std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' ? c : '_';
  if (out.size() > 100) out.resize(100);
  return out;
}

void dump(const runtime::Session& session, const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw model::ModelError(dir.string() + ": cannot create the folder: " + ec.message());
  if (!fs::is_directory(dir, ec)) throw model::ModelError(dir.string() + ": is " + model::file_kind(dir) + ", not a directory");
  std::ostringstream index;
  JsonWriter j(index);
  j.begin_array();
  int n = 0;
  for (const runtime::TensorView& t : session.tensors()) {
    if (t.node.empty() || !t.value || t.value->empty()) continue;  // inputs and weights were not computed
    if (t.value->dtype() == model::DType::String) continue;
    std::ostringstream file;
    file << std::setw(4) << std::setfill('0') << n++ << '_' << safe_file_name(t.name) << ".npy";
    model::write_npy(dir / file.str(), t.value->dtype(), t.value->shape(), std::span(t.value->data(), t.value->byte_size()),
                     model::WriteMode::Fresh);
    j.begin_object().field("name", t.name).field("file", file.str()).key("shape").begin_array();
    for (int64_t d : t.value->shape()) j.value(d);
    j.end_array().field("dtype", model::dtype_name(t.value->dtype())).field("node", t.node).end_object();
  }
  j.end_array();
  const std::string text = index.str();
  model::write_file(dir / "index.json", std::as_bytes(std::span(text.data(), text.size())), model::WriteMode::Fresh);
  std::cerr << "dumped " << n << " tensors to " << dir.string() << '\n';
}

// Time per op type, most first: total per run, share, node count.
void print_profile(const model::Graph& g, const std::vector<double>& node_ms, int runs) {
  std::map<std::string, std::pair<double, int>> by_op;
  double total = 0;
  for (size_t n = 0; n < std::min(node_ms.size(), g.nodes.size()); ++n) {
    auto& [ms, count] = by_op[g.nodes[n].op_type];
    ms += node_ms[n] / runs;
    ++count;
    total += node_ms[n] / runs;
  }
  std::vector<std::pair<std::string, std::pair<double, int>>> rows(by_op.begin(), by_op.end());
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.second.first > b.second.first; });
  std::cout << "kernels: " << runtime::isa_name(runtime::active_isa()) << " (this CPU: " << runtime::isa_name(runtime::cpu_isa()) << ")\n";
  std::cout << "time per op type (ms per run):\n";
  for (const auto& [op, v] : rows)
    std::cout << "  " << std::left << std::setw(24) << op << std::right << std::setw(10) << std::setprecision(3) << v.first << " ms "
              << std::setw(5) << std::setprecision(1) << (total > 0 ? 100 * v.first / total : 0) << "%  x" << v.second << '\n';
  // The slowest nodes with their first input's and output's shapes (what a kernel choice depends on).
  std::vector<size_t> order(std::min(node_ms.size(), g.nodes.size()));
  std::iota(order.begin(), order.end(), size_t{0});
  const size_t shown = std::min<size_t>(order.size(), 12);
  std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(shown), order.end(),
                    [&](size_t a, size_t b) { return node_ms[a] > node_ms[b]; });
  auto shape_of = [&](const std::vector<model::TensorId>& ids) {
    std::string out;
    if (!ids.empty() && ids[0] != model::kNone) {
      for (int64_t d : g.tensors[ids[0]].shape) out += (out.empty() ? "" : "x") + std::to_string(d);
    }
    return "[" + out + "]";
  };
  std::cout << "slowest nodes (ms per run):\n";
  for (size_t i = 0; i < shown; ++i) {
    const model::Node& node = g.nodes[order[i]];
    std::cout << "  " << std::setw(10) << std::setprecision(3) << node_ms[order[i]] / runs << " ms  " << node.op_type << ' ' << node.name << ' '
              << shape_of(node.inputs) << " -> " << shape_of(node.outputs) << '\n';
  }
}

// What the outputs say: a detector's boxes ("1 face: 99.9% at [0.41, 0.12, 0.58, 0.43]", with its
// landmarks), a table of the largest values of several outputs in no known format, or a
// classifier's top-5 with class names, after the raw outputs.
void print_reading(const model::Graph& g, const runtime::Session& session, const std::optional<ClassList>& labels) {
  const scene::Activations values = scene::activations_of(session);
  const ClassList classes = choose_classes(g, scene::class_count(g, values), labels);
  if (const auto d = scene::detect(g, values, classes.names)) {
    std::cout << "detections (" << d->format << ", " << d->candidates << " candidates): " << scene::summary(*d) << '\n';
    for (const scene::Detection& b : d->boxes) {
      char line[160];
      std::snprintf(line, sizeof line, "  %5.1f%%  %s  [%.3f, %.3f, %.3f, %.3f]", 100.0 * b.score, b.name.c_str(), b.x0,
                    b.y0, b.x1, b.y1);
      std::cout << line;
      if (!b.points.empty()) std::cout << "  points";
      for (const auto& p : b.points) {
        std::snprintf(line, sizeof line, " (%.3f, %.3f)", p[0], p[1]);
        std::cout << line;
      }
      std::cout << '\n';
    }
    return;
  }
  // Several outputs in no known format: each one's largest values.
  if (const auto table = scene::output_table(g, values, 3); !table.empty()) {
    std::cout << "outputs (no known detector or classifier format), largest values [flat index]:\n";
    for (const scene::OutputRow& r : table) {
      std::cout << "  " << r.name << "  " << r.shape << " ";
      for (const auto& [index, value] : r.top) {
        char item[64];
        std::snprintf(item, sizeof item, "  %.4g [%lld]", double(value), static_cast<long long>(index));
        std::cout << item;
      }
      std::cout << '\n';
    }
    return;
  }
  if (const auto p = scene::predict(g, values, classes.names, 5)) {
    std::cout << "prediction" << (classes.source.empty() ? "" : " (" + classes.source + ")") << ":";
    for (const scene::ClassScore& c : p->top) {
      char item[160];
      std::snprintf(item, sizeof item, " %.1f%% %s;", 100.0 * c.probability, c.name.c_str());
      std::cout << item;
    }
    std::cout << '\n';
  }
}

}  // namespace

int run_command(Args& args) {
  const bool json = args.flag("--json");
  model::LoadOptions options;
  parse_dims(args, options);
  auto specs = parse_input_specs(args);
  const ImageOptions image = parse_image_options(args);
  const auto labels = parse_labels_option(args);
  std::optional<uint32_t> seed;
  if (auto s = args.int_option("--random", 0, 0xffffffffLL)) seed = static_cast<uint32_t>(*s);
  const int threads = static_cast<int>(args.int_option("--threads", 0, 256).value_or(1));
  const int repeat = static_cast<int>(args.int_option("--repeat", 0, 100000).value_or(0));
  const auto dump_dir = args.option("--dump");
  const bool profile = args.flag("--profile");
  const Limits limits = parse_limits(args);
  auto pos = args.positionals();
  args.finish();
  install(limits);
  const runtime::RunOptions run_opts = run_options(limits);
  if (pos.size() > 1) throw UsageError("run takes one model, got '" + pos[0] + "' and '" + pos[1] + "'");
  const std::optional<std::string> model_path = pos.empty() ? std::nullopt : std::optional(pos[0]);
  add_default_input(model_path.has_value(), seed, specs);

  auto [graph, inputs] = load_with_inputs(model_path, std::move(specs), options);
  if (!json) print_warnings(graph);
  const auto feeds = inputs.resolve(graph, seed, image, json);
  if (inputs.has_image()) {  // the preprocessing in effect, and a warning when it is a guess
    bool guessed = false;
    const std::string how = describe_preprocessing(graph, image, guessed);
    std::cerr << (guessed ? "warning: " : "note: ") << how << '\n';
  }

  auto plan = runtime::Plan::build(std::move(graph));
  runtime::Session session(plan, {.threads = threads, .profile = profile});
  for (const auto& [name, t] : feeds) session.set_input(name, t.dtype, t.shape, t.bytes);

  int exit_code = 0;
  runtime::RunStats stats;
  std::string failure;
  try {
    stats = session.run(run_opts);
  } catch (const runtime::CancelledError& e) {
    return report_cancelled(e);
  } catch (const runtime::RuntimeError& e) {
    failure = e.what();
    exit_code = 1;
  }
  for (const std::string& line : runtime::non_finite_report(session)) std::cerr << "warning: " << plan->graph().source << ": " << line << '\n';
  std::vector<double> times;
  std::vector<double> node_ms = stats.node_ms;  // summed over the timed runs when there are any
  if (repeat > 0 && exit_code == 0) {
    std::fill(node_ms.begin(), node_ms.end(), 0.0);
    for (int i = 0; i < repeat; ++i) {
      runtime::RunStats r;
      try {
        r = session.run(run_opts);
      } catch (const runtime::CancelledError& e) {
        return report_cancelled(e);
      }
      times.push_back(r.milliseconds);
      for (size_t n = 0; n < std::min(node_ms.size(), r.node_ms.size()); ++n) node_ms[n] += r.node_ms[n];
    }
    std::sort(times.begin(), times.end());
  }
  const double median = times.empty() ? 0 : times[times.size() / 2];
  if (dump_dir) dump(session, *dump_dir);

  const model::Graph& g = plan->graph();
  if (json) {
    JsonWriter j(std::cout);
    j.begin_object().field("model", g.source).field("threads", threads).field("isa", runtime::isa_name(runtime::active_isa()));
    j.field("milliseconds", stats.milliseconds);
    j.field("nodes_run", stats.nodes_run).field("nodes_fused", stats.nodes_fused).field("nodes_skipped", stats.nodes_skipped);
    if (!failure.empty()) j.field("error", failure);
    if (!times.empty()) j.field("repeat", repeat).field("median_ms", median).field("min_ms", times.front());
    if (profile) {
      j.key("profile").begin_array();
      for (size_t n = 0; n < std::min(node_ms.size(), g.nodes.size()); ++n)
        j.begin_object().field("node", g.nodes[n].name).field("op", g.nodes[n].op_type).field("ms", node_ms[n] / std::max(repeat, 1)).end_object();
      j.end_array();
    }
    j.key("outputs").begin_array();
    for (auto id : g.outputs) {
      const runtime::Value* v = session.value(id);
      j.begin_object().field("name", g.tensors[id].name);
      if (v && !v->empty()) {
        const Stats s = float_stats(*v);
        j.field("dtype", model::dtype_name(v->dtype())).key("shape").begin_array();
        for (int64_t d : v->shape()) j.value(d);
        j.end_array();
        if (v->dtype() == model::DType::Float)
          j.field("min", s.min).field("max", s.max).field("mean", s.mean).field("argmax", s.argmax).field("non_finite", s.non_finite);
      } else {
        j.field("computed", false);
      }
      j.end_object();
    }
    j.end_array().end_object();
  } else {
    for (auto id : g.outputs) {
      const runtime::Value* v = session.value(id);
      std::cout << "output " << g.tensors[id].name;
      if (!v || v->empty()) {
        std::cout << "  (not computed)\n";
        continue;
      }
      std::cout << "  " << model::dtype_name(v->dtype()) << " " << model::shape_string(v->shape());
      if (v->dtype() == model::DType::Float && v->elements() > 0) {
        const Stats s = float_stats(*v);
        std::cout << "  min=" << s.min << " max=" << s.max << " mean=" << s.mean << " argmax=" << s.argmax;
        if (s.non_finite) std::cout << " non-finite=" << s.non_finite;
      }
      std::cout << '\n';
    }
    print_reading(g, session, labels);
    std::cout << "ran " << stats.nodes_run << " nodes in " << std::fixed << std::setprecision(3) << stats.milliseconds << " ms ("
              << threads << (threads == 1 ? " thread" : " threads") << ")\n";
    if (!times.empty())
      std::cout << "latency over " << repeat << " runs: median=" << median << " ms min=" << times.front() << " ms\n";
    if (profile) print_profile(g, node_ms, std::max(repeat, 1));
  }
  if (!failure.empty()) std::cerr << "nnxr: " << failure << '\n';
  return exit_code;
}

}  // namespace nnxr::app
