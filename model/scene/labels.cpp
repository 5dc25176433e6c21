#include "model/scene/labels.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <numeric>

namespace nnxr::scene {
namespace {

bool is_number(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); });
}

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  size_t start = 0;
  for (;;) {
    const size_t end = s.find(sep, start);
    const std::string_view part = s.substr(start, end == std::string_view::npos ? end : end - start);
    if (!part.empty()) out.push_back(part);
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  return out;
}

int importance_of(const model::Graph& graph, const model::Tensor& t, model::TensorId id) {
  if (t.kind == model::TensorKind::Input) return 0;
  if (std::find(graph.outputs.begin(), graph.outputs.end(), id) != graph.outputs.end()) return 0;
  if (t.producer == model::kNone) return 2;
  static const char* const kMajor[] = {"Conv", "ConvTranspose", "Gemm", "MatMul", "Concat", "LSTM", "GRU", "RNN",
                                       "Attention", "Softmax", "GlobalAveragePool", "MaxPool", "AveragePool"};
  const std::string& op = graph.nodes[t.producer].op_type;
  return std::any_of(std::begin(kMajor), std::end(kMajor), [&](const char* m) { return op == m; }) ? 1 : 2;
}

}  // namespace

std::string shape_text(std::span<const int64_t> shape) {
  size_t first = 0;
  while (first + 1 < shape.size() && shape[first] == 1) ++first;
  std::string s;
  for (size_t i = first; i < shape.size(); ++i) s += (i > first ? "x" : "") + std::to_string(shape[i]);
  return s.empty() ? "scalar" : s;
}

std::string short_name(std::string_view name, size_t max_chars) {
  std::string_view s = name;
  constexpr std::string_view kSuffix = "_output_0";
  if (s.size() > kSuffix.size() && s.substr(s.size() - kSuffix.size()) == kSuffix) s.remove_suffix(kSuffix.size());
  // Exported paths repeat themselves ("/features/features.3/Relu"): keep the last two components.
  const auto parts = split(s, '/');
  std::string out;
  if (parts.size() >= 2) out = std::string(parts[parts.size() - 2]) + "/" + std::string(parts.back());
  else if (parts.size() == 1) out = std::string(parts[0]);
  else out = std::string(s);
  if (out.size() > max_chars && max_chars >= 5) {
    const size_t keep = max_chars - 2, head = keep / 2;
    out = out.substr(0, head) + ".." + out.substr(out.size() - (keep - head));
  }
  return out;
}

std::string group_of(std::string_view name) {
  const auto components = split(name, '/');
  std::string path;  // components before the numbered one, joined by '.'
  for (std::string_view component : components) {
    const auto tokens = split(component, '.');
    for (size_t i = 1; i < tokens.size(); ++i) {
      if (!is_number(tokens[i])) continue;
      std::string head;
      for (size_t j = 0; j <= i; ++j) head += (j ? "." : "") + std::string(tokens[j]);
      // "/features/features.3": the component repeats the path before it.
      if (!path.empty() && head.rfind(path, 0) != 0) head = path + "." + head;
      return head;
    }
    path += (path.empty() ? "" : ".") + std::string(component);
  }
  // "fire2/squeeze1x1": the first of several components.
  return components.size() >= 2 ? std::string(components[0]) : std::string();
}

Labels make_labels(const model::Graph& graph, const Layout& layout) {
  Labels out;
  struct Span {
    float x0 = INFINITY, x1 = -INFINITY, y = -INFINITY, z0 = INFINITY, z1 = -INFINITY;
    int blocks = 0;
  };
  std::map<std::string, Span> groups;
  for (const Block& b : layout.blocks()) {
    const model::Tensor& t = graph.tensors[b.tensor];
    TensorLabel l;
    l.tensor = b.tensor;
    l.anchor = {0.5f * (b.min[0] + b.max[0]), b.max[1], 0.5f * (b.min[2] + b.max[2])};
    l.extent = std::max(b.max[1] - b.min[1], b.max[2] - b.min[2]);
    l.op = t.kind == model::TensorKind::Input ? "Input"
           : t.producer != model::kNone        ? graph.nodes[t.producer].op_type
                                               : "Constant";
    l.name = short_name(t.name);
    l.shape = shape_text(t.shape);
    l.importance = importance_of(graph, t, b.tensor);
    out.tensors.push_back(std::move(l));
    const std::string g = group_of(t.producer != model::kNone && !graph.nodes[t.producer].name.empty()
                                       ? graph.nodes[t.producer].name
                                       : t.name);
    if (g.empty()) continue;
    Span& s = groups[g];
    s.x0 = std::min(s.x0, b.min[0]);
    s.x1 = std::max(s.x1, b.max[0]);
    s.y = std::max(s.y, b.max[1]);
    s.z0 = std::min(s.z0, b.min[2]);
    s.z1 = std::max(s.z1, b.max[2]);
    ++s.blocks;
  }
  int multi = 0;
  for (const auto& [name, s] : groups) multi += s.blocks >= 2;
  if (multi >= 2)
    for (const auto& [name, s] : groups) {
      if (s.blocks < 2) continue;
      out.groups.push_back({name, {0.5f * (s.x0 + s.x1), s.y, 0.5f * (s.z0 + s.z1)}, s.x1 - s.x0, s.blocks});
    }
  std::sort(out.groups.begin(), out.groups.end(), [](const GroupLabel& a, const GroupLabel& b) {
    return a.anchor[0] < b.anchor[0];
  });
  return out;
}

TensorStats stats_of(std::span<const float> v) {
  TensorStats s;
  s.count = int64_t(v.size());
  if (v.empty()) return s;
  double sum = 0;
  int64_t zeros = 0, finite = 0;
  s.min = INFINITY;
  s.max = -INFINITY;
  for (float x : v) {
    if (!std::isfinite(x)) continue;
    ++finite;
    s.min = std::min(s.min, x);
    s.max = std::max(s.max, x);
    sum += x;
    zeros += x == 0.0f;
  }
  if (finite == 0) s.min = s.max = 0;
  s.mean = finite ? float(sum / double(finite)) : 0.0f;
  s.zero_fraction = float(double(zeros) / double(v.size()));
  return s;
}

namespace {

std::optional<model::TensorId> score_output(const model::Graph& graph, const Activations& values) {
  for (model::TensorId id : graph.outputs) {
    if (id >= values.size() || values[id].data.empty()) continue;
    const auto shape = values[id].shape;
    int64_t big = 0, dims = 0;
    for (int64_t d : shape)
      if (d != 1) {
        big = d;
        ++dims;
      }
    if (dims == 1 && big >= 2 && big <= 100000 && shape.size() <= 4 && (shape.size() <= 2 || shape[1] == big))
      return id;
  }
  return std::nullopt;
}

}  // namespace

int64_t class_count(const model::Graph& graph, const Activations& values) {
  const auto id = score_output(graph, values);
  return id ? int64_t(values[*id].data.size()) : 0;
}

std::optional<Prediction> predict(const model::Graph& graph, const Activations& values,
                                  std::span<const std::string> names, int k) {
  const auto id = score_output(graph, values);
  if (!id) return std::nullopt;
  const std::span<const float> v = values[*id].data;
  Prediction p;
  p.output = *id;
  p.classes = int64_t(v.size());
  // Probabilities already (softmax output) when they lie in [0, 1] and sum to 1; else logits.
  double sum = 0;
  bool unit = true;
  for (float x : v) {
    sum += x;
    unit = unit && x >= 0 && x <= 1;
  }
  std::vector<float> prob(v.begin(), v.end());
  if (!(unit && std::abs(sum - 1.0) < 1e-2)) {
    p.softmax = true;
    const float m = *std::max_element(prob.begin(), prob.end());
    double total = 0;
    for (float& x : prob) total += x = std::isfinite(x) ? std::exp(x - m) : 0.0f;
    for (float& x : prob) x = total > 0 ? float(x / total) : 0.0f;
  }
  std::vector<int64_t> order(prob.size());
  std::iota(order.begin(), order.end(), 0);
  const size_t top = std::min(order.size(), size_t(std::max(k, 1)));
  std::partial_sort(order.begin(), order.begin() + std::ptrdiff_t(top), order.end(),
                    [&](int64_t a, int64_t b) { return prob[size_t(a)] > prob[size_t(b)]; });
  const bool background = !names.empty() && int64_t(names.size()) + 1 == p.classes;
  for (size_t i = 0; i < top; ++i) {
    ClassScore c;
    c.index = order[i];
    c.probability = prob[size_t(c.index)];
    const int64_t n = background ? c.index - 1 : c.index;
    if (n >= 0 && n < int64_t(names.size())) c.name = names[size_t(n)];
    else c.name = background && n < 0 ? "background" : "class " + std::to_string(c.index);
    p.top.push_back(std::move(c));
  }
  return p;
}

}  // namespace nnxr::scene
