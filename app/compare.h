// `--compare [NAME=]FILE`: the second input B of a comparison, for inspect --scene, render and
// view; and several inputs to step through in view (`--input DIR` or several files).
#pragma once

#include <map>
#include <string>

#include "app/inputs.h"
#include "model/graph.h"

namespace nnxr::app {

// The feeds of input B: FILE (an image, .npy or .pb) replaces the model's first input (or input
// NAME), every other input is as in `a`. Throws ModelError with one line naming both shapes when
// B's shape is not A's, UsageError for a bad argument.
std::map<std::string, model::TensorData> compare_feeds(const std::string& argument, const model::Graph& graph,
                                                       const std::map<std::string, model::TensorData>& a,
                                                       const ImageOptions& image);

// Parses `[NAME=]FILE` as --input does.
InputSpec parse_input_argument(const std::string& argument, const std::string& option);

// `--input DIR`: the input files in DIR (images, .npy, .pb), sorted by name, each as a spec with
// the directory's NAME. Other files are skipped with a note on stderr; a directory without input
// files is an error (ModelError). Specs that name files are passed on as they are.
std::vector<InputSpec> expand_input_directories(std::vector<InputSpec> specs);

}  // namespace nnxr::app
