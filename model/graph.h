// The graph of a loaded ONNX model: every tensor with its type, shape, producer, consumers and
// layer, and the nodes in topological order.
//
// A Graph is built once by load_model() (model/load.h) and is immutable afterwards; any thread may
// read it concurrently. Constant data (initializers, Constant nodes) is shared by pointer, so a
// Graph is cheap to move and its TensorData outlives nothing but its owners.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "model/dtype.h"

namespace nnxr::model {

using TensorId = uint32_t;
using NodeId = uint32_t;
inline constexpr uint32_t kNone = std::numeric_limits<uint32_t>::max();

// Unknown dimension in a Shape.
inline constexpr int64_t kUnknownDim = -1;

// Product of dims; nullopt if a dim is unknown or the product overflows int64.
std::optional<int64_t> element_count(std::span<const int64_t> dims);

// "[1, 3, 224, 224]", with "?" for unknown dims.
std::string shape_string(std::span<const int64_t> dims);
// A name or string taken from a model file, fit for a one-line message on a terminal: control
// characters (NUL, ESC, newlines...) shown as \xNN, cut to `max` bytes (at a UTF-8 character
// boundary) followed by "…".
std::string display_name(std::string_view s, size_t max = 80);

// Decoded constant data: little-endian elements packed as dtype_size(dtype) bytes each, or, for
// DType::String, one std::string per element.
struct TensorData {
  DType dtype = DType::Undefined;
  std::vector<int64_t> shape;
  std::vector<std::byte> bytes;
  std::vector<std::string> strings;

  int64_t elements() const;
  template <class T>
  std::span<const T> as() const {
    return {reinterpret_cast<const T*>(bytes.data()), bytes.size() / sizeof(T)};
  }
};

enum class TensorKind : uint8_t {
  Input,        // graph input fed by the caller
  Initializer,  // weight stored in the file
  Constant,     // output of a Constant node
  Activation,   // output of any other node
};

struct Tensor {
  std::string name;
  DType dtype = DType::Undefined;
  std::vector<int64_t> shape;  // dims; kUnknownDim where unknown
  bool rank_known = false;     // false: even the rank is unknown (shape is empty then)
  TensorKind kind = TensorKind::Activation;
  NodeId producer = kNone;  // kNone for inputs and initializers
  std::vector<NodeId> consumers;
  int layer = 0;
  bool is_output = false;                   // listed among the graph outputs
  std::shared_ptr<const TensorData> data;  // set for Initializer and Constant

  // Element count, or nullopt when the shape is not fully known.
  std::optional<int64_t> elements() const;
};

// One attribute of a node, decoded from AttributeProto.
struct Attribute {
  enum class Kind : uint8_t { Float, Int, String, Tensor, Graph, Floats, Ints, Strings, Tensors, Graphs, Other };
  std::string name;
  Kind kind = Kind::Other;
  float f = 0;
  int64_t i = 0;
  std::string s;
  std::vector<float> floats;
  std::vector<int64_t> ints;
  std::vector<std::string> strings;
  std::shared_ptr<const TensorData> tensor;
};

class Attributes {
 public:
  Attributes() = default;
  explicit Attributes(std::vector<Attribute> list) : list_(std::move(list)) {}

  const Attribute* find(std::string_view name) const;
  int64_t get_int(std::string_view name, int64_t fallback) const;
  float get_float(std::string_view name, float fallback) const;
  std::string get_string(std::string_view name, std::string_view fallback) const;
  std::vector<int64_t> get_ints(std::string_view name, std::vector<int64_t> fallback = {}) const;
  std::vector<float> get_floats(std::string_view name, std::vector<float> fallback = {}) const;
  const std::vector<Attribute>& all() const { return list_; }

 private:
  std::vector<Attribute> list_;
};

struct Node {
  std::string name;     // never empty: "<op_type>_<index>" when the file gives none
  std::string op_type;
  std::string domain;   // "" for the default ai.onnx domain
  int64_t opset = 0;    // version of `domain` imported by the model
  bool has_schema = true;  // false: ONNX defines no such op for this domain and version
  std::vector<TensorId> inputs;   // kNone for an omitted optional input
  std::vector<TensorId> outputs;  // kNone for an omitted optional output
  Attributes attributes;
  int layer = 0;  // layer of its outputs
};

struct OpsetImport {
  std::string domain;  // "" for ai.onnx
  int64_t version = 0;
};

struct Graph {
  std::string source;  // file name used in messages
  int64_t ir_version = 0;
  std::string producer_name;
  std::string producer_version;
  std::string name;
  std::string doc;
  std::vector<OpsetImport> opsets;
  std::vector<std::pair<std::string, std::string>> metadata;

  std::vector<Tensor> tensors;
  std::vector<Node> nodes;         // topological order
  std::vector<TensorId> inputs;    // graph inputs the caller feeds (initializers excluded)
  std::vector<TensorId> outputs;   // graph outputs
  int layer_count = 0;             // 1 + the deepest layer
  std::vector<std::string> warnings;  // things the loader assumed or could not infer

  TensorId find(std::string_view tensor_name) const;  // kNone if absent
  int64_t opset_version(std::string_view domain) const;  // 0 if not imported

  // Called by the loader once tensors are final.
  void rebuild_index();

 private:
  std::unordered_map<std::string, TensorId> index_;
};

// Assigns layers as DESIGN.md defines them: graph inputs, initializers and Constant outputs are
// layer 0; any other node's outputs are max(layer of its inputs) + 1. Requires `nodes` to be in
// topological order and producer/consumer links to be set. Sets Graph::layer_count.
void assign_layers(Graph& graph);

}  // namespace nnxr::model
