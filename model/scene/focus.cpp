#include "model/scene/focus.h"

#include <algorithm>
#include <cmath>

namespace nnxr::scene {

std::vector<std::string> choose_focus(const model::Graph& graph, const Layout& layout, std::array<float, 3> eye,
                                      const std::function<bool(std::array<float, 3>)>& in_view, uint64_t points) {
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
    if (!out.empty() && total + uint64_t(b->elements) > points) continue;
    total += uint64_t(b->elements);
    out.push_back(graph.tensors[b->tensor].name);
  }
  return out;
}

uint64_t focus_elements(const model::Graph& graph, const Layout& layout, const std::vector<std::string>& focus, int top_k) {
  const uint64_t k = uint64_t(std::clamp(top_k, 1, 16));
  if (focus.empty()) {
    uint64_t n = 0;
    for (const Block& b : layout.blocks()) n += uint64_t(b.elements);
    return n * (1 + k);
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
    if (b.tensor < role.size() && role[b.tensor]) n += uint64_t(b.elements) * (role[b.tensor] == 2 ? 1 + k : 1);
  return n;
}

}  // namespace nnxr::scene
