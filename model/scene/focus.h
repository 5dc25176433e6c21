// The focus: the tensors that get points and connections (SceneOptions::focus) where the viewer
// looks, while the activation images show every tensor (DESIGN.md "Levels of detail").
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "model/graph.h"
#include "model/scene/scene.h"

namespace nnxr::scene {

// Connections a viewer keeps per focus tensor (SceneOptions::connections_per_tensor): its
// strongest, enough to see what fed a map without covering its image.
inline constexpr uint64_t kFocusConnectionsPerTensor = 2'000;

// The laid-out tensors whose block centre `in_view` accepts, nearest to `eye` first, until their
// elements reach `points` (always at least the nearest one; none when nothing is in view). Names,
// for SceneOptions::focus. O(blocks · log blocks).
std::vector<std::string> choose_focus(const model::Graph& graph, const Layout& layout, std::array<float, 3> eye,
                                      const std::function<bool(std::array<float, 3>)>& in_view, uint64_t points);

// A viewer's view in network space: the eye, the network-to-clip matrix (column-major, Vulkan
// clip space), the aim ray (a zero direction: none) and the selected tensor (empty: none).
struct FocusView {
  std::array<float, 3> eye{};
  std::array<float, 16> clip{};
  std::array<float, 3> aim_origin{}, aim_direction{};
  std::string selected;
};

// True when `p` (network space) projects inside the view's frustum (in front of the eye).
bool in_frustum(const std::array<float, 16>& clip, std::array<float, 3> p);

// The focus for a view: the selected tensor, the tensor the aim ray hits, then the nearest
// blocks in the frustum (choose_focus above) until their elements reach `points` (the selected
// and aimed-at tensors and the nearest in view always). Sorted by name, so equal sets compare equal. O(blocks · log blocks).
std::vector<std::string> choose_focus(const model::Graph& graph, const Layout& layout, const FocusView& view, uint64_t points);

// Elements a scene built with `focus` keeps at most: the neurons of the focus and of the tensors
// feeding it, and top_k connections per focus neuron, at most `connections_per_tensor` per focus
// tensor when that is not 0 (SceneOptions::connections_per_tensor); every laid-out tensor when
// focus is empty.
uint64_t focus_elements(const model::Graph& graph, const Layout& layout, const std::vector<std::string>& focus, int top_k,
                        uint64_t connections_per_tensor = 0);

}  // namespace nnxr::scene
