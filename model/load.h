// Loading an ONNX model into a Graph: protobuf parse, external data, the ONNX checker, symbolic
// dimensions, ONNX shape inference, topological order and layers.
//
// Thread-safe: load_model() touches no global state but libonnx's read-only schema registry.
#pragma once

#include <cstddef>
#include <filesystem>
#include <map>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "model/graph.h"

namespace nnxr::model {

// A model that cannot be loaded. what() is one line: "<file>: <what is wrong>".
class ModelError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct LoadOptions {
  // Values for symbolic input dimensions, by dim_param name (`--dim NAME=VALUE`).
  std::map<std::string, int64_t, std::less<>> dims;
  // Shapes of the inputs the caller will feed, by input name; they fill unknown dims.
  std::map<std::string, std::vector<int64_t>, std::less<>> input_shapes;
  // Symbolic dims with no value from either source become this, with a warning...
  int64_t default_dim = 1;
  // ...except the spatial dims (2 and 3) of a rank-4 float input, an NCHW image almost always,
  // which a size of 1 would shrink to nothing after the first pooling.
  int64_t default_image_dim = 224;
};

// Loads `path`; external data is looked up beside it. Throws ModelError.
Graph load_model(const std::filesystem::path& path, const LoadOptions& options = {});

// Loads serialized ModelProto bytes. `source` names the model in messages; external data, if
// any, is looked up in `base_dir` (none when empty). Throws ModelError.
Graph load_model_from_memory(std::span<const std::byte> bytes, std::string_view source,
                             const LoadOptions& options = {},
                             const std::filesystem::path& base_dir = {});

// Loads a model written in the ONNX text syntax (onnx/defs/parser.h). Throws ModelError.
Graph load_model_from_text(std::string_view text, const LoadOptions& options = {});

// Serializes a model written in the ONNX text syntax to ModelProto bytes (tests, tools).
std::string model_text_to_bytes(std::string_view text);

}  // namespace nnxr::model
