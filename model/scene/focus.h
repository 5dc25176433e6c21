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

// The laid-out tensors whose block centre `in_view` accepts, nearest to `eye` first, until their
// elements reach `points` (always at least the nearest one; none when nothing is in view). Names,
// for SceneOptions::focus. O(blocks · log blocks).
std::vector<std::string> choose_focus(const model::Graph& graph, const Layout& layout, std::array<float, 3> eye,
                                      const std::function<bool(std::array<float, 3>)>& in_view, uint64_t points);

// Elements a scene built with `focus` keeps at most: the neurons of the focus and of the tensors
// feeding it, and top_k connections per focus neuron (every laid-out tensor when focus is empty).
uint64_t focus_elements(const model::Graph& graph, const Layout& layout, const std::vector<std::string>& focus, int top_k);

}  // namespace nnxr::scene
