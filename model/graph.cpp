#include "model/graph.h"

#include <algorithm>

namespace nnxr::model {

std::optional<int64_t> element_count(std::span<const int64_t> dims) {
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d < 0) return std::nullopt;
    if (__builtin_mul_overflow(n, d, &n)) return std::nullopt;
  }
  return n;
}

std::string display_name(std::string_view s, size_t max) {
  std::string out;
  size_t i = 0;
  for (; i < s.size() && out.size() < max; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c == 0x7f) {
      static const char hex[] = "0123456789abcdef";
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  if (i < s.size()) {
    // Do not end inside a UTF-8 sequence.
    while (!out.empty() && (static_cast<unsigned char>(out.back()) & 0xc0) == 0x80) out.pop_back();
    if (!out.empty() && (static_cast<unsigned char>(out.back()) & 0xc0) == 0xc0) out.pop_back();
    out += "…";
  }
  return out;
}

std::string shape_string(std::span<const int64_t> dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) s += ", ";
    s += dims[i] < 0 ? std::string("?") : std::to_string(dims[i]);
  }
  return s + "]";
}

int64_t TensorData::elements() const { return element_count(shape).value_or(0); }

std::optional<int64_t> Tensor::elements() const {
  if (!rank_known) return std::nullopt;
  return element_count(shape);
}

const Attribute* Attributes::find(std::string_view name) const {
  for (const Attribute& a : list_)
    if (a.name == name) return &a;
  return nullptr;
}

int64_t Attributes::get_int(std::string_view name, int64_t fallback) const {
  const Attribute* a = find(name);
  return a && a->kind == Attribute::Kind::Int ? a->i : fallback;
}

float Attributes::get_float(std::string_view name, float fallback) const {
  const Attribute* a = find(name);
  return a && a->kind == Attribute::Kind::Float ? a->f : fallback;
}

std::string Attributes::get_string(std::string_view name, std::string_view fallback) const {
  const Attribute* a = find(name);
  return a && a->kind == Attribute::Kind::String ? a->s : std::string(fallback);
}

std::vector<int64_t> Attributes::get_ints(std::string_view name, std::vector<int64_t> fallback) const {
  const Attribute* a = find(name);
  return a && a->kind == Attribute::Kind::Ints ? a->ints : fallback;
}

std::vector<float> Attributes::get_floats(std::string_view name, std::vector<float> fallback) const {
  const Attribute* a = find(name);
  return a && a->kind == Attribute::Kind::Floats ? a->floats : fallback;
}

TensorId Graph::find(std::string_view tensor_name) const {
  auto it = index_.find(std::string(tensor_name));
  return it == index_.end() ? kNone : it->second;
}

int64_t Graph::opset_version(std::string_view domain) const {
  if (domain == "ai.onnx") domain = "";
  for (const OpsetImport& o : opsets)
    if (o.domain == domain) return o.version;
  return 0;
}

void Graph::rebuild_index() {
  index_.clear();
  index_.reserve(tensors.size());
  for (TensorId i = 0; i < tensors.size(); ++i) index_.emplace(tensors[i].name, i);
}

void assign_layers(Graph& graph) {
  int deepest = 0;
  for (Tensor& t : graph.tensors) t.layer = 0;
  for (Node& node : graph.nodes) {
    int layer = 0;
    if (node.op_type != "Constant" || !node.domain.empty()) {
      for (TensorId in : node.inputs)
        if (in != kNone) layer = std::max(layer, graph.tensors[in].layer);
      layer += 1;
    }
    node.layer = layer;
    for (TensorId out : node.outputs)
      if (out != kNone) graph.tensors[out].layer = layer;
    deepest = std::max(deepest, layer);
  }
  graph.layer_count = deepest + 1;
}

}  // namespace nnxr::model
