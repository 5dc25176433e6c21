// The focus: the tensors that get points and connections (SceneOptions::focus) where the viewer
// looks, while the activation images show every tensor (DESIGN.md "Levels of detail").
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "model/graph.h"
#include "model/scene/scene.h"

namespace nnxr::scene {

// Connections a viewer keeps per focus tensor (SceneOptions::connections_per_tensor): its
// strongest, enough to see what fed a map without covering its image.
inline constexpr uint64_t kFocusConnectionsPerTensor = 2'000;
// Points a viewer keeps per tensor (SceneOptions::points_per_tensor): its strongest by |value|,
// so that one huge map near the viewer (fns-candy's 12M-element ones) is not kept whole; its
// image shows every activation anyway.
inline constexpr uint64_t kFocusPointsPerTensor = 1'000'000;

// The laid-out tensors whose block centre `in_view` accepts, nearest to `eye` first, until their
// elements reach `points` (always at least the nearest one; none when nothing is in view), a
// tensor counting at most `points_per_tensor` (SceneOptions::points_per_tensor; 0: no cap). Names,
// for SceneOptions::focus. O(blocks · log blocks).
std::vector<std::string> choose_focus(const model::Graph& graph, const Layout& layout, std::array<float, 3> eye,
                                      const std::function<bool(std::array<float, 3>)>& in_view, uint64_t points,
                                      uint64_t points_per_tensor = 0);

// A viewer's view in network space: the eye, the network-to-clip matrix (column-major, Vulkan
// clip space), the aim ray (what the viewer points at: the mouse cursor's ray on the desktop, the
// controller's aim in the headset), the gaze ray (the view's centre ray, the fallback when the
// aim ray hits nothing or there is none) and the selected tensor (empty: none). A zero
// direction: no such ray.
struct FocusView {
  std::array<float, 3> eye{};
  std::array<float, 16> clip{};
  std::array<float, 3> aim_origin{}, aim_direction{};
  std::array<float, 3> gaze_origin{}, gaze_direction{};
  std::string selected;
};

// The tensor a view points at: the one the aim ray hits (any element within a few neuron
// spacings of it), else the one the gaze ray hits; nullopt when neither hits.
std::optional<model::TensorId> aimed_tensor(const Layout& layout, const FocusView& view);

// True when `p` (network space) projects inside the view's frustum (in front of the eye).
bool in_frustum(const std::array<float, 16>& clip, std::array<float, 3> p);

// The focus for a view: the selected tensor, the tensor it points at (aimed_tensor), then the
// nearest blocks in the frustum (choose_focus above) until their elements, each at most
// `points_per_tensor` (0: no cap), reach `points` (the selected and aimed-at tensors and the
// nearest in view always). Sorted by name, so equal sets compare equal. O(blocks · log blocks).
std::vector<std::string> choose_focus(const model::Graph& graph, const Layout& layout, const FocusView& view, uint64_t points,
                                      uint64_t points_per_tensor = 0);

// Elements a scene built with `focus` keeps at most: the neurons of the focus and of the tensors
// feeding it, at most `points_per_tensor` per tensor when that is not 0
// (SceneOptions::points_per_tensor), and top_k connections per focus neuron, at most
// `connections_per_tensor` per focus tensor when that is not 0
// (SceneOptions::connections_per_tensor); every laid-out tensor when focus is empty.
uint64_t focus_elements(const model::Graph& graph, const Layout& layout, const std::vector<std::string>& focus, int top_k,
                        uint64_t connections_per_tensor = 0, uint64_t points_per_tensor = 0);

}  // namespace nnxr::scene
