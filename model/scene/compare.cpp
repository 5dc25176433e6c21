// Divergence and difference of two runs of one model (compare.h).
#include "model/scene/compare.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>

namespace nnxr::scene {
namespace {

// Inputs and activations change with the input; weights and constants do not.
bool varies(const model::Tensor& t) { return t.kind == model::TensorKind::Input || t.kind == model::TensorKind::Activation; }

bool same_shape(const TensorValue& a, const TensorValue& b) {
  return a.data.size() == b.data.size() && std::equal(a.shape.begin(), a.shape.end(), b.shape.begin(), b.shape.end());
}

}  // namespace

Divergence divergence(std::span<const float> a, std::span<const float> b) {
  double aa = 0, bb = 0, ab = 0, dd = 0;
  const size_t n = std::min(a.size(), b.size());
  for (size_t i = 0; i < n; ++i) {
    const double x = a[i], y = b[i], d = x - y;
    aa += x * x;
    bb += y * y;
    ab += x * y;
    dd += d * d;
  }
  Divergence out;
  out.norm_a = std::sqrt(aa);
  out.norm_b = std::sqrt(bb);
  out.norm_diff = std::sqrt(dd);
  if (out.norm_a > 0) out.rel_l2 = out.norm_diff / out.norm_a;
  else out.rel_l2 = out.norm_diff > 0 ? std::numeric_limits<double>::infinity() : 0.0;
  if (out.norm_a > 0 && out.norm_b > 0) out.cosine = std::clamp(ab / (out.norm_a * out.norm_b), -1.0, 1.0);
  else out.cosine = out.norm_a == out.norm_b ? 1.0 : 0.0;
  return out;
}

std::vector<std::optional<Divergence>> divergence(const model::Graph& graph, const Activations& a, const Activations& b) {
  std::vector<std::optional<Divergence>> out(graph.tensors.size());
  for (size_t id = 0; id < graph.tensors.size() && id < a.size() && id < b.size(); ++id) {
    if (!varies(graph.tensors[id]) || a[id].data.empty() || !same_shape(a[id], b[id])) continue;
    out[id] = divergence(a[id].data, b[id].data);
  }
  return out;
}

Activations difference(const model::Graph& graph, const Activations& a, const Activations& b, std::vector<float>& storage) {
  size_t total = 0;
  for (size_t id = 0; id < a.size(); ++id)
    if (id < graph.tensors.size() && id < b.size() && varies(graph.tensors[id]) && same_shape(a[id], b[id])) total += a[id].data.size();
  if (storage.size() != total) storage.assign(total, 0.0f);
  Activations out = a;
  size_t at = 0;
  for (size_t id = 0; id < out.size(); ++id) {
    if (id >= graph.tensors.size() || !varies(graph.tensors[id])) continue;
    if (id >= b.size() || !same_shape(a[id], b[id])) {
      out[id] = {};
      continue;
    }
    const auto x = a[id].data, y = b[id].data;
    float* d = storage.data() + at;
    for (size_t i = 0; i < x.size(); ++i) d[i] = x[i] - y[i];
    out[id].data = std::span<const float>(d, x.size());
    out[id].owned = nullptr;  // `storage` holds it
    at += x.size();
  }
  return out;
}

std::vector<model::TensorId> most_changed(const model::Graph& graph, const std::vector<std::optional<Divergence>>& divergence,
                                          size_t count) {
  std::vector<model::TensorId> ids;
  for (size_t id = 0; id < divergence.size(); ++id)
    if (divergence[id] && graph.tensors[id].kind == model::TensorKind::Activation) ids.push_back(static_cast<model::TensorId>(id));
  std::stable_sort(ids.begin(), ids.end(), [&](model::TensorId x, model::TensorId y) { return divergence[x]->rel_l2 > divergence[y]->rel_l2; });
  if (ids.size() > count) ids.resize(count);
  return ids;
}

const char* compare_show_name(CompareShow show) {
  switch (show) {
    case CompareShow::A: return "A";
    case CompareShow::B: return "B";
    case CompareShow::Difference: return "A-B";
  }
  return "?";
}

std::optional<CompareShow> parse_compare_show(const std::string& text) {
  std::string t = text;
  std::transform(t.begin(), t.end(), t.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (t == "a") return CompareShow::A;
  if (t == "b") return CompareShow::B;
  if (t == "diff" || t == "a-b" || t == "difference") return CompareShow::Difference;
  return std::nullopt;
}

}  // namespace nnxr::scene
