// Class names for the prediction panel: `--labels FILE` (one name a line), the model's metadata
// (nnxr.labels: comma-separated names; nnxr.classes: imagenet, cifar10, digits, coco), or a
// built-in list (assets/classes/) chosen by the output's class count.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "app/args.h"
#include "app/inputs.h"
#include "model/graph.h"

namespace nnxr::app {

struct ClassList {
  std::vector<std::string> names;
  std::string source;  // "ImageNet-1k", "CIFAR-10", "COCO", "digits", "model metadata", the file name; empty: none
};

// Reads --labels (throws UsageError for an unreadable or empty file).
std::optional<ClassList> parse_labels_option(Args& args);

// `classes`: the score vector's length (scene::class_count), 0 when there is none.
ClassList choose_classes(const model::Graph& graph, int64_t classes, const std::optional<ClassList>& given);

// One line saying how images are turned into the input tensor ("image: preset caffe (BGR, 0-255,
// mean 104/117/123)"); `guessed` is set when neither flags nor the model's metadata said.
std::string describe_preprocessing(const model::Graph& graph, const ImageOptions& image, bool& guessed);

}  // namespace nnxr::app
