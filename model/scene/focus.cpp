#include "model/scene/focus.h"

#include <algorithm>
#include <cmath>

namespace nnxr::scene {

std::vector<std::string> choose_focus(const model::Graph& graph, const Layout& layout, std::array<float, 3> eye,
                                      const std::function<bool(std::array<float, 3>)>& in_view, uint64_t points,
                                      uint64_t points_per_tensor) {
  std::vector<std::pair<float, const Block*>> seen;
  for (const Block& b : layout.blocks()) {
    const std::array<float, 3> c = {(b.min[0] + b.max[0]) / 2, (b.min[1] + b.max[1]) / 2, (b.min[2] + b.max[2]) / 2};
    if (in_view && !in_view(c)) continue;
    // Distance to the block's rectangle, not its centre: a big map in front is near.
    float d2 = 0;
    for (int a = 0; a < 3; ++a) {
      const float v = std::max({b.min[size_t(a)] - eye[size_t(a)], 0.f, eye[size_t(a)] - b.max[size_t(a)]});
      d2 += v * v;
    }
    seen.emplace_back(d2, &b);
  }
  std::stable_sort(seen.begin(), seen.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::string> out;
  uint64_t total = 0;
  for (const auto& [d, b] : seen) {
    const uint64_t n = points_per_tensor ? std::min(uint64_t(b->elements), points_per_tensor) : uint64_t(b->elements);
    if (!out.empty() && total + n > points) continue;
    total += n;
    out.push_back(graph.tensors[b->tensor].name);
  }
  return out;
}

bool in_frustum(const std::array<float, 16>& m, std::array<float, 3> p) {
  float c[4];
  for (int r = 0; r < 4; ++r) c[r] = m[size_t(r)] * p[0] + m[size_t(4 + r)] * p[1] + m[size_t(8 + r)] * p[2] + m[size_t(12 + r)];
  return c[3] > 0 && std::abs(c[0]) <= c[3] && std::abs(c[1]) <= c[3];
}

std::optional<model::TensorId> aimed_tensor(const Layout& layout, const FocusView& view) {
  // Any element within a few neuron spacings of the ray: the map the viewer points at.
  const float radius = 4 * layout.options().neuron_spacing;
  auto hit = [&](const std::array<float, 3>& origin, const std::array<float, 3>& d) -> std::optional<model::TensorId> {
    if (d[0] == 0 && d[1] == 0 && d[2] == 0) return std::nullopt;
    if (const auto h = layout.pick(origin, d, radius)) return h->tensor;
    return std::nullopt;
  };
  if (const auto aimed = hit(view.aim_origin, view.aim_direction)) return aimed;
  return hit(view.gaze_origin, view.gaze_direction);
}

std::vector<std::string> choose_focus(const model::Graph& graph, const Layout& layout, const FocusView& view, uint64_t points,
                                      uint64_t points_per_tensor) {
  std::vector<std::string> out;
  uint64_t total = 0;
  auto add = [&](model::TensorId id) {
    const Block* b = layout.block(id);
    if (!b || id >= graph.tensors.size()) return;
    if (std::find(out.begin(), out.end(), graph.tensors[id].name) != out.end()) return;
    out.push_back(graph.tensors[id].name);
    total += points_per_tensor ? std::min(uint64_t(b->elements), points_per_tensor) : uint64_t(b->elements);
  };
  if (!view.selected.empty())
    for (model::TensorId id = 0; id < graph.tensors.size(); ++id)
      if (graph.tensors[id].name == view.selected) add(id);
  if (const auto aimed = aimed_tensor(layout, view)) add(*aimed);
  const uint64_t left = points > total ? points - total : 0;
  const auto& clip = view.clip;
  // The nearest in view always (whatever the selection took), then more while points are left.
  auto nearest = choose_focus(graph, layout, view.eye, [&](std::array<float, 3> p) { return in_frustum(clip, p); },
                              std::max<uint64_t>(left, 1), points_per_tensor);
  for (size_t i = 0; i < nearest.size() && (i == 0 || left > 0); ++i)
    if (std::find(out.begin(), out.end(), nearest[i]) == out.end()) out.push_back(std::move(nearest[i]));
  std::sort(out.begin(), out.end());
  return out;
}

uint64_t focus_elements(const model::Graph& graph, const Layout& layout, const std::vector<std::string>& focus, int top_k,
                        uint64_t connections_per_tensor, uint64_t points_per_tensor) {
  const uint64_t k = uint64_t(std::clamp(top_k, 1, 16));
  auto points = [&](int64_t elements) {
    return points_per_tensor ? std::min(uint64_t(elements), points_per_tensor) : uint64_t(elements);
  };
  auto connections = [&](uint64_t neurons) {
    return connections_per_tensor ? std::min(neurons * k, connections_per_tensor) : neurons * k;
  };
  if (focus.empty()) {
    uint64_t n = 0;
    for (const Block& b : layout.blocks()) n += points(b.elements) + connections(points(b.elements));
    return n;
  }
  std::vector<uint8_t> role(graph.tensors.size(), 0);
  for (const std::string& name : focus)
    for (model::TensorId id = 0; id < graph.tensors.size(); ++id)
      if (graph.tensors[id].name == name) {
        role[id] = 2;
        const model::Tensor& t = graph.tensors[id];
        if (t.producer != model::kNone && t.producer < graph.nodes.size())
          for (model::TensorId in : graph.nodes[t.producer].inputs)
            if (in != model::kNone && in < role.size()) role[in] = std::max<uint8_t>(role[in], 1);
      }
  uint64_t n = 0;
  for (const Block& b : layout.blocks())
    if (b.tensor < role.size() && role[b.tensor])
      n += points(b.elements) + (role[b.tensor] == 2 ? connections(points(b.elements)) : 0);
  return n;
}

}  // namespace nnxr::scene
