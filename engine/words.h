// The view's words as the worker hands them over (no Vulkan here, so that the worker builds
// alone): what the app knows (title, preprocessing, class names) and what the worker knows (graph,
// layout, the run's values, the selection). A scene sink that also implements WordsSink (the
// engine's SceneBuffers) composes them into glyphs (engine/annotations.h) and publishes them.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "model/graph.h"
#include "model/scene/labels.h"
#include "model/scene/scene.h"

namespace nnxr::engine {

struct SelectionText {
  std::string tensor, op, node;
  std::vector<int64_t> index;
  float value = 0;
  std::vector<std::string> fed_by;  // tensors that feed it
};

// An input fed by an image file, shown as the picture it is: the input's name and how to undo
// its preprocessing for display.
struct InputPicture {
  std::string input;
  scene::PictureMapping mapping;
};

struct ViewWords {
  std::string title;                      // the model's name
  std::vector<std::string> notes;         // lines under the title (preprocessing in effect, ...)
  std::vector<std::string> warnings;      // lines in amber under the notes
  std::vector<std::string> class_names;   // for the prediction; empty: "class N"
  std::string class_list;                 // where they came from ("ImageNet-1k"), shown in the panel
  std::optional<InputPicture> picture;    // the input in its true colours, with detections over it
  bool menu = false;                      // also compose the filter menu (the viewers)
  // Called (worker thread) with the loaded graph and its class count before each compose, to fill
  // what depends on the model. May be empty.
  std::function<void(const model::Graph& graph, int64_t classes, ViewWords& words)> complete;
};

// What the filter menu shows (engine/interaction.h FilterMenu): the model's op types with their
// tensor counts and whether each is shown, dimmed or hidden, and what the isolate rows would do.
struct MenuState {
  std::vector<std::pair<std::string, int>> ops;
  std::vector<bool> shown;      // per op
  bool dim = false;             // outside the filter: dimmed (else hidden)
  std::string selected;         // the selected tensor ("": none)
  size_t path = 0;              // tensors on the path that fed it
  std::vector<std::string> isolated;  // the tensor filter in effect (names)
};

struct WordsContext {
  const model::Graph& graph;
  const scene::Layout& layout;
  const scene::Activations& values;
  const ViewWords& words;
  std::optional<model::TensorId> focus;       // the legend's tensor
  std::optional<SelectionText> selection;
  std::optional<MenuState> menu;  // when ViewWords::menu
  // Compare mode drawing the difference: the two runs (AnnotationOptions::run_a, run_b).
  const scene::Activations* run_a = nullptr;
  const scene::Activations* run_b = nullptr;
};

class WordsSink {
 public:
  virtual ~WordsSink() = default;
  // Composes and publishes the view's text (worker thread). Throws std::runtime_error when stopped.
  virtual void publish_words(const WordsContext& context) = 0;
};

}  // namespace nnxr::engine
