// The words of a view, composed into glyphs (engine/text.h): a billboard label per laid-out tensor
// (op, short name, shape) and per name group, thinned by distance and importance; and, fixed to
// the corners of the view, the title with the preprocessing in effect, the prediction panel
// (top-5 classes), the legend (colour map, value range and statistics of the focused tensor) and
// the selection panel. Built by the worker after each scene build or selection (and by `render`),
// published through TextBuffer; the frame thread only draws it.
//
// Threading: a pure function of its inputs; runs on the caller's thread.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <glm/glm.hpp>

#include "engine/interaction.h"
#include "engine/text.h"
#include "engine/words.h"
#include "model/graph.h"
#include "model/scene/labels.h"
#include "model/scene/scene.h"

namespace nnxr::engine {

struct AnnotationOptions {
  ViewWords words;
  std::optional<model::TensorId> focus;   // the legend's tensor (default: the prediction's output, else the last)
  std::optional<SelectionText> selection;
  // Labels that overlap a more important one seen through this camera are hidden until the
  // viewer is a few times closer (none hidden without it).
  std::optional<glm::mat4> view_projection;  // network space → Vulkan clip
  glm::vec2 viewport{1600, 900};
  bool panels = true;  // title, prediction, legend and selection (a thumbnail has no room for them)
  // Compare mode drawing the difference a_A − a_B: the two runs. The prediction, the detections
  // and the input and output pictures then describe the runs (A's, with B's top class under it),
  // not the difference; the labels and the legend describe what is drawn.
  const scene::Activations* run_a = nullptr;
  const scene::Activations* run_b = nullptr;
};

// Appends the filter menu's text (glyphs on the menu's canvas, TextStyle::menu): a dark plate of
// FilterMenu::size() and one line per row.
void compose_menu(TextBuilder& out, const MenuState& menu);

// Points a camera should hold besides the blocks' corners so that the words over the network stay in
// the picture: for a layout wrapped into rows (a long chain, scene.h Layout), the tops of the group
// labels over its first row (the rows below have theirs in the gaps between rows); none for a
// layout in one line.
std::vector<glm::vec3> words_to_frame(const model::Graph& graph, const scene::Layout& layout);

// Where annotate() stands the input picture (ViewWords::picture): a world billboard beside the
// input's block, before its first layer, `em` tall and `aspect` (w/h) times as wide, centred at
// `centre` (network space). nullopt when annotate() draws none (no picture asked for, the input
// has no block, or its value is no image: scene::image_shape).
struct PictureBillboard {
  glm::vec3 centre{0};
  float em = 0, aspect = 1;
};
std::optional<PictureBillboard> picture_billboard(const model::Graph& graph, const scene::Layout& layout,
                                                  const scene::Activations& values, const ViewWords& words);
// Points a camera should frame to hold the billboard seen from any direction: the corners of the
// cube around the sphere its quad turns in (8 points).
std::vector<glm::vec3> picture_to_frame(const PictureBillboard& picture);

// Appends the view's text to `out`. Returns where its panels lie (fixed to the view's corners).
std::vector<ScreenArea> annotate(TextBuilder& out, const model::Graph& graph, const scene::Layout& layout,
                                 const scene::Activations& values, const AnnotationOptions& options);

}  // namespace nnxr::engine
