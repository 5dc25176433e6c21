#include "model/load.h"

#include "model/file_io.h"
#include "model/legacy_ops.h"
#include "model/tensor_io.h"

#include <google/protobuf/io/coded_stream.h>
#include <onnx/checker.h>
#include <onnx/defs/parser.h>
#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include <algorithm>
#include <charconv>
#include <climits>
#include <fstream>
#include <iterator>
#include <functional>
#include <queue>
#include <unordered_map>
#include <unordered_set>

namespace nnxr::model {
namespace {

namespace fs = std::filesystem;

// Longest message fragment taken from libonnx, which can be very verbose.
constexpr size_t kMaxDetail = 400;
// Domain that unregistered ops are moved to while the checker and shape inference run, so that
// both treat them as custom ops (skipped) instead of failing on the whole model.
constexpr const char* kUnregisteredDomain = "nnxr.unregistered";
// Metadata key marking a control-flow body saved as a model of its own (see subgraph_model()):
// the outer model's checker has validated it already.
constexpr const char* kSubgraphKey = "nnxr.subgraph";

std::string one_line(std::string_view text) {
  std::string out;
  bool space = false;
  for (char c : text) {
    if (c == '\n' || c == '\r' || c == '\t' || c == ' ') {
      space = !out.empty();
      continue;
    }
    if (space) out += ' ';
    space = false;
    out += c;
  }
  return display_name(out, kMaxDetail);  // control characters escaped, cut
}

// A name from the file: control characters escaped, cut to 80 bytes.
std::string q(std::string_view name) { return "'" + display_name(name) + "'"; }

std::string normalize_domain(std::string_view d) { return d == "ai.onnx" ? std::string() : std::string(d); }

std::string node_label(const onnx::NodeProto& n, int index) {
  std::string name = n.name().empty() ? n.op_type() + "_" + std::to_string(index) : n.name();
  return q(name) + " (" + display_name(n.op_type(), 60) + ")";
}

class Loader {
 public:
  Loader(std::string_view source, fs::path base_dir, const LoadOptions& options)
      : source_(source), base_dir_(std::move(base_dir)), options_(options) {}

  // Decodes one TensorProto (the .pb files of ONNX test data) in this loader's terms.
  TensorData tensor(const onnx::TensorProto& t) { return *decode(t, "tensor " + q(t.name())); }

  Graph run(std::span<const std::byte> bytes) {
    register_legacy_ops();
    parse(bytes);
    inline_external_data();
    sort_and_check_structure();
    find_unregistered_ops();
    run_checker();
    fix_input_dims();
    infer_shapes();
    build_graph();
    return std::move(graph_);
  }

 private:
  [[noreturn]] void fail(const std::string& what) const { throw ModelError(source_ + ": " + what); }

  void warn(std::string what) { graph_.warnings.push_back(std::move(what)); }

  void parse(std::span<const std::byte> bytes) {
    if (bytes.empty()) fail("file is empty");
    if (bytes.size() > static_cast<size_t>(INT_MAX))
      fail("file is larger than 2 GiB, the protobuf limit; store the weights as external data");
    google::protobuf::io::CodedInputStream in(reinterpret_cast<const uint8_t*>(bytes.data()),
                                              static_cast<int>(bytes.size()));
    in.SetTotalBytesLimit(INT_MAX);
    if (!model_.ParseFromCodedStream(&in) || !in.ConsumedEntireMessage()) {
      // Protobuf stops at 100 nested messages (each If/Loop/Scan body nests three): if the file
      // parses with a deeper limit, that was the cause.
      google::protobuf::io::CodedInputStream deep(reinterpret_cast<const uint8_t*>(bytes.data()), static_cast<int>(bytes.size()));
      deep.SetTotalBytesLimit(INT_MAX);
      deep.SetRecursionLimit(1000);
      onnx::ModelProto probe;
      if (probe.ParseFromCodedStream(&deep) && deep.ConsumedEntireMessage())
        fail("nests subgraphs (If/Loop/Scan bodies) deeper than protobuf's recursion limit of 100 messages (about 30 levels of bodies)");
      fail("not a valid ONNX file (protobuf parsing failed: truncated, corrupt or not a model)");
    }
    if (!model_.has_graph() || model_.ir_version() <= 0)
      fail("not an ONNX model (no " + std::string(model_.has_graph() ? "ir_version" : "graph") +
           "; is it a text file or another kind of protobuf?)");
    if (model_.graph().node_size() == 0 && model_.graph().output_size() == 0)
      fail("the model's graph is empty (no nodes and no outputs)");
    check_opsets();
  }

  // An opset of the ONNX domains newer than the operator definitions nnxr was built with is
  // refused (as onnxruntime does): its operators may mean something else.
  void check_opsets() const {
    const auto& ranges = onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
    for (const auto& o : model_.opset_import()) {
      const std::string domain = normalize_domain(o.domain());
      if (domain != "" && domain != "ai.onnx.ml") continue;
      const auto it = ranges.find(domain);
      if (it == ranges.end() || o.version() <= it->second.second) continue;
      const std::string name = domain.empty() ? "ai.onnx" : domain;
      fail("imports " + name + " opset " + std::to_string(o.version()) + ", newer than the " + name + " opsets nnxr implements (up to " +
           std::to_string(it->second.second) + ")");
    }
  }

  // --- external data ------------------------------------------------------------------------

  // `aside`: a main-graph initializer. Its bytes (1 MiB and more) are read once, into the buffer
  // that becomes its TensorData (build_graph()); the proto keeps a one-byte placeholder for the
  // checker and shape inference, which never need the values of a tensor that large. Smaller tensors,
  // and those of subgraphs (loaded from memory later), are inlined into the proto.
  void inline_external(onnx::TensorProto& t, bool aside = false) {
    if (t.data_location() != onnx::TensorProto::EXTERNAL) return;
    std::string location;
    int64_t offset = 0, length = -1;
    for (const auto& kv : t.external_data()) {
      auto parse_int = [&](const std::string& v) {
        int64_t x = -1;
        auto r = std::from_chars(v.data(), v.data() + v.size(), x);
        if (r.ec != std::errc() || r.ptr != v.data() + v.size() || x < 0)
          fail("tensor " + q(t.name()) + ": external data " + kv.key() + " " + q(v) + " is not a valid number");
        return x;
      };
      if (kv.key() == "location") location = kv.value();
      else if (kv.key() == "offset") offset = parse_int(kv.value());
      else if (kv.key() == "length") length = parse_int(kv.value());
    }
    const std::string what = "tensor " + q(t.name()) + " stores its data in external file " + q(location);
    if (location.empty()) fail("tensor " + q(t.name()) + " has external data without a location");
    if (base_dir_.empty()) fail(what + ", but the model was not loaded from a file");
    fs::path rel(location);
    if (rel.is_absolute() || std::any_of(rel.begin(), rel.end(), [](const fs::path& p) { return p == ".."; }))
      fail(what + ", which is outside the model's folder");
    // The real path (symlinks resolved) must stay inside the model's real folder: a link such
    // as etc -> /etc beside the model must not let "etc/passwd" through.
    std::error_code ec;
    const fs::path base = fs::weakly_canonical(base_dir_, ec);
    if (ec) fail(what + ", but the model's folder cannot be resolved: " + ec.message());
    const fs::path path = fs::weakly_canonical(base_dir_ / rel, ec);
    if (ec) fail(what + ", which cannot be resolved: " + ec.message());
    const fs::path inside = path.lexically_relative(base);
    if (inside.empty() || *inside.begin() == ".." || inside.is_absolute())
      fail(what + ", which resolves to " + q(path.string()) + ", outside the model's folder");
    const std::string kind = file_kind(path);
    if (kind == "missing") fail(what + ", which does not exist beside the model");
    if (kind != "a regular file") fail(what + ", which is " + kind + ", not a file");
    const auto file_size = static_cast<int64_t>(fs::file_size(path, ec));
    if (ec) fail(what + ", which cannot be read: " + ec.message());
    if (length < 0) length = file_size - offset;
    if (offset > file_size || length > file_size - offset)
      fail(what + " at offset " + std::to_string(offset) + " length " + std::to_string(length) +
           ", past the end of that file (" + std::to_string(file_size) + " bytes)");
    if (aside && length >= kAsideBytes && !aside_.count(t.name())) {  // a repeated name is inlined
      std::vector<std::byte> bytes(static_cast<size_t>(length));
      try {
        read_file_range(path, static_cast<uint64_t>(offset), std::span<std::byte>(bytes));
      } catch (const ModelError& e) {
        fail(what + ": " + e.what());
      }
      aside_[t.name()] = std::move(bytes);
      t.clear_external_data();
      t.set_data_location(onnx::TensorProto::DEFAULT);
      t.set_raw_data(std::string(1, '\0'));  // a placeholder: the checker wants one value field
      return;
    }
    // Read straight into the proto's raw_data (no second buffer); build_graph() copies it into
    // the Graph's TensorData tensor by tensor and frees it there.
    std::string data;
    data.resize(static_cast<size_t>(length));
    try {
      read_file_range(path, static_cast<uint64_t>(offset), std::as_writable_bytes(std::span<char>(data.data(), data.size())));
    } catch (const ModelError& e) {
      fail(what + ": " + e.what());
    }
    t.clear_external_data();
    t.set_data_location(onnx::TensorProto::DEFAULT);
    t.set_raw_data(std::move(data));
  }

  // In the main graph and in every subgraph (If, Loop and Scan bodies are later loaded from
  // memory, where a relative location could not be resolved).
  void inline_external_data() { inline_external_data(*model_.mutable_graph()); }
  void inline_external_data(onnx::GraphProto& g) {
    for (auto& t : *g.mutable_initializer()) inline_external(t, /*aside=*/&g == model_.mutable_graph());
    for (auto& n : *g.mutable_node())
      for (auto& a : *n.mutable_attribute()) {
        if (a.has_t()) inline_external(*a.mutable_t());
        for (auto& t : *a.mutable_tensors()) inline_external(t);
        if (a.has_g()) inline_external_data(*a.mutable_g());
        for (auto& sg : *a.mutable_graphs()) inline_external_data(sg);
      }
  }

  // --- structure: names, dangling inputs, cycles, topological order ---------------------------

  // Names a node reads from an enclosing scope through its subgraph attributes (If, Loop, Scan).
  static void collect_subgraph_reads(const onnx::NodeProto& n, std::vector<std::string>& out) {
    std::function<void(const onnx::GraphProto&)> walk = [&](const onnx::GraphProto& g) {
      std::unordered_set<std::string> local;
      for (const auto& i : g.input()) local.insert(i.name());
      for (const auto& i : g.initializer()) local.insert(i.name());
      for (const auto& sn : g.node())
        for (const auto& o : sn.output()) local.insert(o);
      for (const auto& sn : g.node()) {
        for (const auto& i : sn.input())
          if (!i.empty() && !local.count(i)) out.push_back(i);
        for (const auto& a : sn.attribute()) {
          if (a.has_g()) walk(a.g());
          for (const auto& sg : a.graphs()) walk(sg);
        }
      }
    };
    for (const auto& a : n.attribute()) {
      if (a.has_g()) walk(a.g());
      for (const auto& sg : a.graphs()) walk(sg);
    }
  }

  void sort_and_check_structure() {
    auto* g = model_.mutable_graph();
    const int n = g->node_size();
    std::unordered_set<std::string> given;  // graph inputs and initializers
    for (const auto& i : g->input()) given.insert(i.name());
    for (const auto& i : g->initializer()) given.insert(i.name());
    std::unordered_map<std::string, int> producer;
    for (int k = 0; k < n; ++k) {
      for (const auto& o : g->node(k).output()) {
        if (o.empty()) continue;
        if (given.count(o))
          fail("node " + node_label(g->node(k), k) + " writes " + q(o) + ", which is a graph input or initializer");
        auto [it, fresh] = producer.emplace(o, k);
        if (!fresh)
          fail("tensor " + q(o) + " is produced twice, by node " + node_label(g->node(it->second), it->second) +
               " and node " + node_label(g->node(k), k));
      }
    }
    // Edges: producer -> consumer.
    std::vector<std::vector<int>> users(n);
    std::vector<int> pending(n, 0);
    std::vector<std::string> reads;
    for (int k = 0; k < n; ++k) {
      const auto& node = g->node(k);
      reads.assign(node.input().begin(), node.input().end());
      const size_t explicit_reads = reads.size();
      collect_subgraph_reads(node, reads);
      std::unordered_set<int> deps;
      for (size_t r = 0; r < reads.size(); ++r) {
        const std::string& name = reads[r];
        if (name.empty() || given.count(name)) continue;
        auto it = producer.find(name);
        if (it == producer.end()) {
          if (r >= explicit_reads) continue;  // a subgraph name from a scope we do not model
          fail("node " + node_label(node, k) + " reads tensor " + q(name) +
               ", which no node, graph input or initializer provides");
        }
        if (it->second == k) fail("node " + node_label(node, k) + " reads its own output " + q(name) + " (a cycle)");
        if (deps.insert(it->second).second) {
          users[it->second].push_back(k);
          ++pending[k];
        }
      }
    }
    for (const auto& o : g->output())
      if (!given.count(o.name()) && !producer.count(o.name()))
        fail("graph output " + q(o.name()) + " is not produced by any node");

    // Kahn's algorithm, taking the earliest ready node first so that a sorted file keeps its order.
    std::priority_queue<int, std::vector<int>, std::greater<>> ready;
    for (int k = 0; k < n; ++k)
      if (pending[k] == 0) ready.push(k);
    std::vector<int> order;
    order.reserve(n);
    while (!ready.empty()) {
      int k = ready.top();
      ready.pop();
      order.push_back(k);
      for (int u : users[k])
        if (--pending[u] == 0) ready.push(u);
    }
    if (static_cast<int>(order.size()) < n) {
      // Walk backwards through unfinished producers until a node repeats: that is a cycle.
      std::vector<int> preds_of(n, -1);
      for (int k = 0; k < n; ++k)
        if (pending[k] > 0)
          for (int u : users[k])
            if (pending[u] > 0) preds_of[u] = k;
      int k = 0;
      while (pending[k] == 0) ++k;
      std::vector<int> seen_at(n, -1);
      std::vector<int> path;
      while (seen_at[k] < 0) {
        seen_at[k] = static_cast<int>(path.size());
        path.push_back(k);
        k = preds_of[k];
      }
      std::string cycle;
      for (size_t i = seen_at[k]; i < path.size() && i < static_cast<size_t>(seen_at[k]) + 6; ++i)
        cycle += (cycle.empty() ? "" : " <- ") + node_label(g->node(path[i]), path[i]);
      fail("the graph has a cycle: " + cycle);
    }
    bool sorted = true;
    for (int k = 0; k < n; ++k) sorted = sorted && order[k] == k;
    if (!sorted) {
      google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes;
      nodes.Reserve(n);
      for (int k : order) *nodes.Add() = std::move(*g->mutable_node(k));
      g->mutable_node()->Swap(&nodes);
      warn("the nodes were not in topological order; they have been sorted");
    }
  }

  // --- ONNX checker and shape inference -------------------------------------------------------

  // Ops whose schema lookup libonnx's checker replaces by a message on stderr, whatever their
  // domain (onnx 1.12, checker.cc: experimental_ops). We hide them from it by renaming.
  static bool checker_experimental(const std::string& op_type) {
    static const std::unordered_set<std::string> ops = {"ATen",           "Affine",      "ConstantFill", "Crop",
                                                        "DynamicSlice",   "GRUUnit",     "GivenTensorFill",
                                                        "ImageScaler",    "ParametricSoftplus", "Scale", "ScaledTanh"};
    return ops.count(op_type) > 0;
  }

  void find_unregistered_ops() {
    std::unordered_map<std::string, int64_t> imports;
    for (const auto& o : model_.opset_import()) imports[normalize_domain(o.domain())] = o.version();
    auto* g = model_.mutable_graph();
    for (int k = 0; k < g->node_size(); ++k) {
      auto& node = *g->mutable_node(k);
      const std::string domain = normalize_domain(node.domain());
      const std::string original_domain = node.domain();
      const std::string label = node_label(node, k);
      if (checker_experimental(node.op_type())) {
        hidden_from_checker_.emplace(k, std::make_pair(original_domain, node.op_type()));
        node.set_op_type("Legacy" + node.op_type());
        node.set_domain(kUnregisteredDomain);
      }
      if (domain != "" && domain != "ai.onnx.ml") continue;  // custom domains have no schemas anyway
      auto it = imports.find(domain);
      if (it == imports.end()) {  // the checker would report the missing import; do it here
        if (hidden_from_checker_.count(k)) fail("node " + label + " uses domain " + q(domain.empty() ? "ai.onnx" : domain) + ", which the model does not import");
        continue;
      }
      const std::string& op_type = hidden_from_checker_.count(k) ? hidden_from_checker_[k].second : node.op_type();
      const auto* schema = onnx::OpSchemaRegistry::Schema(op_type, static_cast<int>(std::clamp<int64_t>(it->second, 0, INT_MAX)), domain);
      if (schema && !schema->Deprecated()) continue;
      unregistered_.emplace(k, original_domain);
      node.set_domain(kUnregisteredDomain);
      warn("node " + label + ": ONNX defines no such operator in " +
           (domain.empty() ? std::string("ai.onnx") : domain) + " opset " + std::to_string(it->second) +
           (schema ? " (it was removed)" : "") + "; its outputs' shapes are unknown");
    }
    if (!unregistered_.empty() || !hidden_from_checker_.empty()) {
      auto* imp = model_.add_opset_import();
      imp->set_domain(kUnregisteredDomain);
      imp->set_version(1);
    }
  }

  void run_checker() {
    for (const auto& m : model_.metadata_props())
      if (m.key() == kSubgraphKey) return;
    try {
      onnx::checker::check_model(model_);
    } catch (const std::exception& e) {
      fail("fails the ONNX checker: " + one_line(e.what()));
    }
    // Back to their names; ops without a schema stay in kUnregisteredDomain for shape inference.
    for (const auto& [k, original] : hidden_from_checker_) {
      auto* node = model_.mutable_graph()->mutable_node(k);
      node->set_op_type(original.second);
      if (!unregistered_.count(k)) node->set_domain(original.first);
    }
  }

  int64_t dim_value_for(const std::string& input, size_t axis, const std::string& param, bool image) {
    if (!param.empty()) {
      if (auto it = options_.dims.find(param); it != options_.dims.end()) {
        used_dims_.insert(param);
        return it->second;
      }
    }
    if (auto it = options_.input_shapes.find(input); it != options_.input_shapes.end() && axis < it->second.size() &&
                                                    it->second[axis] >= 0)
      return it->second[axis];
    const int64_t value = image && axis >= 2 ? options_.default_image_dim : options_.default_dim;
    warn("input " + q(input) + " dimension " + std::to_string(axis) +
         (param.empty() ? std::string(" is unknown") : " (" + q(param) + ") is symbolic") + "; using " +
         std::to_string(value) + (param.empty() ? std::string() : " (set it with --dim " + param + "=N)"));
    return value;
  }

  void fix_input_dims() {
    auto* g = model_.mutable_graph();
    std::unordered_set<std::string> inits;
    for (const auto& i : g->initializer()) inits.insert(i.name());
    for (auto& input : *g->mutable_input()) {
      if (inits.count(input.name())) continue;
      if (!input.type().has_tensor_type()) continue;
      auto* tt = input.mutable_type()->mutable_tensor_type();
      if (!tt->has_shape()) {
        auto it = options_.input_shapes.find(input.name());
        if (it == options_.input_shapes.end()) {
          warn("input " + q(input.name()) + " declares no shape; shapes that depend on it are unknown");
          continue;
        }
        for (int64_t d : it->second) tt->mutable_shape()->add_dim()->set_dim_value(d);
      }
      auto* shape = tt->mutable_shape();
      const bool image = shape->dim_size() == 4 && tt->elem_type() == onnx::TensorProto::FLOAT;
      for (int axis = 0; axis < shape->dim_size(); ++axis) {
        auto* dim = shape->mutable_dim(axis);
        if (dim->has_dim_value()) {
          if (dim->dim_value() < 0)
            fail("input " + q(input.name()) + " has a negative dimension " + std::to_string(dim->dim_value()));
          continue;
        }
        const std::string param = dim->has_dim_param() ? dim->dim_param() : std::string();
        const int64_t v = dim_value_for(input.name(), static_cast<size_t>(axis), param, image);
        if (v < 0) fail("input " + q(input.name()) + " dimension " + std::to_string(axis) + " set to a negative value");
        dim->set_dim_value(v);
        if (!param.empty()) resolved_dims_.emplace(param, v);
      }
      if (auto it = options_.input_shapes.find(input.name()); it != options_.input_shapes.end()) {
        bool match = static_cast<int>(it->second.size()) == shape->dim_size();
        for (int axis = 0; match && axis < shape->dim_size(); ++axis)
          match = it->second[axis] < 0 || it->second[axis] == shape->dim(axis).dim_value();
        if (!match) {
          std::vector<int64_t> declared;
          for (const auto& d : shape->dim()) declared.push_back(d.dim_value());
          fail("input " + q(input.name()) + " expects shape " + shape_string(declared) + ", but the given input has shape " +
               shape_string(it->second));
        }
      }
    }
    // The same symbol elsewhere (outputs, value_info) takes the same value.
    auto resolve = [&](onnx::ValueInfoProto& vi) {
      if (!vi.type().has_tensor_type() || !vi.type().tensor_type().has_shape()) return;
      for (auto& dim : *vi.mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim())
        if (dim.has_dim_param())
          if (auto it = resolved_dims_.find(dim.dim_param()); it != resolved_dims_.end()) dim.set_dim_value(it->second);
    };
    for (auto& vi : *g->mutable_output()) resolve(vi);
    for (auto& vi : *g->mutable_value_info()) resolve(vi);
    for (const auto& [name, value] : options_.dims)
      if (!used_dims_.count(name)) warn("--dim " + name + "=" + std::to_string(value) + ": no input dimension is named " + q(name));
  }

  // libonnx's shape inference divides by some attributes without checking them (a zero stride
  // or block size crashes it with SIGFPE; found by fuzzing). Such nodes are invalid anyway.
  void check_attributes_inference_divides_by() {
    static const std::unordered_set<std::string> conv_pool = {"Conv", "ConvTranspose", "ConvInteger", "QLinearConv", "MaxPool",
                                                              "AveragePool", "LpPool", "MaxUnpool", "DeformConv"};
    const auto& g = model_.graph();
    for (int k = 0; k < g.node_size(); ++k) {
      const auto& node = g.node(k);
      const bool spatial = conv_pool.count(node.op_type()) > 0;
      const bool blocks = node.op_type() == "DepthToSpace" || node.op_type() == "SpaceToDepth";
      if (!spatial && !blocks) continue;
      for (const auto& a : node.attribute()) {
        const std::string& n = a.name();
        const bool positive_ints = spatial && (n == "strides" || n == "dilations" || n == "kernel_shape");
        for (int64_t v : a.ints())
          if (positive_ints && v <= 0)
            fail("node " + node_label(node, k) + ": attribute '" + n + "' must be positive, got " + std::to_string(v));
        if (((spatial && n == "group") || (blocks && n == "blocksize")) && a.i() <= 0)
          fail("node " + node_label(node, k) + ": attribute '" + n + "' must be positive, got " + std::to_string(a.i()));
      }
    }
  }

  void infer_shapes() {
    check_attributes_inference_divides_by();
    try {
      onnx::ShapeInferenceOptions strict(/*check_type=*/true, /*error_mode=*/1, /*data_prop=*/true);
      onnx::shape_inference::InferShapes(model_, onnx::OpSchemaRegistry::Instance(), strict);
      return;
    } catch (const std::exception& e) {
      warn("shape inference: " + one_line(e.what()) + "; some shapes are unknown");
    }
    try {
      onnx::ShapeInferenceOptions lenient(/*check_type=*/false, /*error_mode=*/0, /*data_prop=*/true);
      onnx::shape_inference::InferShapes(model_, onnx::OpSchemaRegistry::Instance(), lenient);
    } catch (const std::exception& e) {
      fail("shape inference failed: " + one_line(e.what()));
    }
  }

  // --- building the Graph ---------------------------------------------------------------------

  std::shared_ptr<const TensorData> decode(const onnx::TensorProto& t, const std::string& what, bool initializer = false) {
    if (!dtype_valid(t.data_type())) fail(what + " has an invalid data type " + std::to_string(t.data_type()));
    auto d = std::make_shared<TensorData>();
    d->dtype = static_cast<DType>(t.data_type());
    d->shape.assign(t.dims().begin(), t.dims().end());
    for (int64_t dim : d->shape)
      if (dim < 0) fail(what + " has a negative dimension in shape " + shape_string(d->shape));
    const auto count = element_count(d->shape);
    const size_t esize = dtype_size(d->dtype);
    if (!count || (esize && *count > std::numeric_limits<int64_t>::max() / static_cast<int64_t>(esize)))
      fail(what + " has shape " + shape_string(d->shape) + ", whose element count overflows");
    const auto n = static_cast<size_t>(*count);
    auto mismatch = [&](size_t have) {
      fail(what + " (" + std::string(dtype_name(d->dtype)) + " " + shape_string(d->shape) + ") holds " +
           std::to_string(have) + " values, expected " + std::to_string(n));
    };
    if (d->dtype == DType::String) {
      if (static_cast<size_t>(t.string_data_size()) != n) mismatch(t.string_data_size());
      d->strings.assign(t.string_data().begin(), t.string_data().end());
      return d;
    }
    if (initializer && t.has_raw_data() && t.raw_data().size() == 1) {
      if (auto it = aside_.find(t.name()); it != aside_.end()) {  // external data read aside: moved, not copied
        if (it->second.size() != n * esize)
          fail(what + " (" + std::string(dtype_name(d->dtype)) + " " + shape_string(d->shape) + ") has " +
               std::to_string(it->second.size()) + " bytes of data, expected " + std::to_string(n * esize));
        d->bytes = std::move(it->second);
        aside_.erase(it);
        return d;
      }
    }
    if (t.has_raw_data()) {
      if (t.raw_data().size() != n * esize)
        fail(what + " (" + std::string(dtype_name(d->dtype)) + " " + shape_string(d->shape) + ") has " +
             std::to_string(t.raw_data().size()) + " bytes of data, expected " + std::to_string(n * esize));
      const auto* p = reinterpret_cast<const std::byte*>(t.raw_data().data());
      d->bytes.assign(p, p + t.raw_data().size());
      return d;
    }
    // Typed fields: the count is checked before anything is allocated (a hostile file can
    // declare a huge shape with no data).
    auto copy_as = [&](const auto& field, auto tag) {
      using T = decltype(tag);
      const size_t per_element = esize / sizeof(T);  // 2 for complex types, else 1
      if (static_cast<size_t>(field.size()) != n * per_element) mismatch(static_cast<size_t>(field.size()) / per_element);
      d->bytes.resize(n * esize);
      auto* out = reinterpret_cast<T*>(d->bytes.data());
      for (int i = 0; i < field.size(); ++i) out[i] = static_cast<T>(field.Get(i));
    };
    switch (d->dtype) {
      case DType::Float: copy_as(t.float_data(), float{}); break;
      case DType::Complex64: copy_as(t.float_data(), float{}); break;
      case DType::Double: copy_as(t.double_data(), double{}); break;
      case DType::Complex128: copy_as(t.double_data(), double{}); break;
      case DType::Int64: copy_as(t.int64_data(), int64_t{}); break;
      case DType::UInt32: copy_as(t.uint64_data(), uint32_t{}); break;
      case DType::UInt64: copy_as(t.uint64_data(), uint64_t{}); break;
      case DType::Int32: copy_as(t.int32_data(), int32_t{}); break;
      case DType::Int16: copy_as(t.int32_data(), int16_t{}); break;
      case DType::UInt16:
      case DType::Float16:
      case DType::BFloat16: copy_as(t.int32_data(), uint16_t{}); break;
      case DType::Int8: copy_as(t.int32_data(), int8_t{}); break;
      case DType::UInt8:
      case DType::Bool: copy_as(t.int32_data(), uint8_t{}); break;
      case DType::String:
      case DType::Undefined: break;
    }
    return d;
  }

  Attribute decode_attribute(const onnx::AttributeProto& a, const std::string& where) {
    using K = Attribute::Kind;
    Attribute out;
    out.name = a.name();
    auto type = a.type();
    if (type == onnx::AttributeProto::UNDEFINED) {  // IR < 0.0.2 files leave it out
      if (a.has_f()) type = onnx::AttributeProto::FLOAT;
      else if (a.has_i()) type = onnx::AttributeProto::INT;
      else if (a.has_s()) type = onnx::AttributeProto::STRING;
      else if (a.has_t()) type = onnx::AttributeProto::TENSOR;
      else if (a.has_g()) type = onnx::AttributeProto::GRAPH;
      else if (a.floats_size()) type = onnx::AttributeProto::FLOATS;
      else if (a.ints_size()) type = onnx::AttributeProto::INTS;
      else if (a.strings_size()) type = onnx::AttributeProto::STRINGS;
    }
    switch (type) {
      case onnx::AttributeProto::FLOAT: out.kind = K::Float; out.f = a.f(); break;
      case onnx::AttributeProto::INT: out.kind = K::Int; out.i = a.i(); break;
      case onnx::AttributeProto::STRING: out.kind = K::String; out.s = a.s(); break;
      case onnx::AttributeProto::FLOATS: out.kind = K::Floats; out.floats.assign(a.floats().begin(), a.floats().end()); break;
      case onnx::AttributeProto::INTS: out.kind = K::Ints; out.ints.assign(a.ints().begin(), a.ints().end()); break;
      case onnx::AttributeProto::STRINGS: out.kind = K::Strings; out.strings.assign(a.strings().begin(), a.strings().end()); break;
      case onnx::AttributeProto::TENSOR:
        out.kind = K::Tensor;
        out.tensor = decode(a.t(), "attribute " + q(a.name()) + " of node " + where);
        break;
      case onnx::AttributeProto::GRAPH:
        out.kind = K::Graph;
        out.s = subgraph_model(a.g(), out.strings, where);
        break;
      case onnx::AttributeProto::GRAPHS: out.kind = K::Graphs; break;
      case onnx::AttributeProto::TENSORS: out.kind = K::Tensors; break;
      default: out.kind = K::Other; break;
    }
    return out;
  }

  // Names a graph reads from enclosing scopes: read by its nodes (or nested graphs) but defined
  // neither by the graph nor by a scope in between. In order of first use, without repeats.
  static void free_names(const onnx::GraphProto& g, std::vector<std::unordered_set<std::string>>& scopes, std::vector<std::string>& out) {
    std::unordered_set<std::string> local;
    for (const auto& i : g.input()) local.insert(i.name());
    for (const auto& i : g.initializer()) local.insert(i.name());
    for (const auto& sn : g.node())
      for (const auto& o : sn.output()) local.insert(o);
    scopes.push_back(std::move(local));
    auto defined = [&](const std::string& name) {
      return std::any_of(scopes.begin(), scopes.end(), [&](const auto& s) { return s.count(name) > 0; });
    };
    for (const auto& sn : g.node()) {
      for (const auto& i : sn.input())
        if (!i.empty() && !defined(i) && std::find(out.begin(), out.end(), i) == out.end()) out.push_back(i);
      for (const auto& a : sn.attribute()) {
        if (a.has_g()) free_names(a.g(), scopes, out);
        for (const auto& sg : a.graphs()) free_names(sg, scopes, out);
      }
    }
    scopes.pop_back();
  }

  // A control-flow body as a serialized model of its own (the runtime loads and runs it): the
  // outer model's opsets, and the names it reads from the outer graph as extra inputs after its
  // own, typed as the outer graph knows them. `outer` receives those names.
  std::string subgraph_model(const onnx::GraphProto& g, std::vector<std::string>& outer, const std::string& where) {
    std::vector<std::unordered_set<std::string>> scopes;
    outer.clear();
    free_names(g, scopes, outer);
    onnx::ModelProto m;
    m.set_ir_version(model_.ir_version());
    for (const auto& o : model_.opset_import())
      if (o.domain() != kUnregisteredDomain) *m.add_opset_import() = o;
    auto* meta = m.add_metadata_props();
    meta->set_key(kSubgraphKey);
    meta->set_value("1");
    *m.mutable_graph() = g;
    for (const auto& name : outer) {
      auto* in = m.mutable_graph()->add_input();
      in->set_name(name);
      if (auto it = types_.find(name); it != types_.end()) {
        *in->mutable_type() = *it->second;
      } else {
        const auto& inits = model_.graph().initializer();
        auto init = std::find_if(inits.begin(), inits.end(), [&](const onnx::TensorProto& t) { return t.name() == name; });
        if (init == inits.end()) fail("node " + where + ": its body reads " + q(name) + ", whose type is unknown");
        in->mutable_type()->mutable_tensor_type()->set_elem_type(init->data_type());
      }
      // The outer tensor's shape varies per run; the runtime gives it when it loads the body.
      in->mutable_type()->mutable_tensor_type()->clear_shape();
    }
    return m.SerializeAsString();
  }

  // Constant-node attributes other than `value` (opset 12+) as TensorData.
  static std::shared_ptr<const TensorData> constant_value(const Attributes& attrs) {
    for (const Attribute& a : attrs.all()) {
      auto d = std::make_shared<TensorData>();
      auto put = [&](DType t, const auto& values, std::vector<int64_t> shape) {
        using T = typename std::decay_t<decltype(values)>::value_type;
        d->dtype = t;
        d->shape = std::move(shape);
        d->bytes.resize(values.size() * sizeof(T));
        std::memcpy(d->bytes.data(), values.data(), d->bytes.size());
      };
      if (a.name == "value" && a.tensor) return a.tensor;
      if (a.name == "value_float") put(DType::Float, std::vector<float>{a.f}, {});
      else if (a.name == "value_floats") put(DType::Float, a.floats, {static_cast<int64_t>(a.floats.size())});
      else if (a.name == "value_int") put(DType::Int64, std::vector<int64_t>{a.i}, {});
      else if (a.name == "value_ints") put(DType::Int64, a.ints, {static_cast<int64_t>(a.ints.size())});
      else if (a.name == "value_string") {
        d->dtype = DType::String;
        d->strings = {a.s};
      } else if (a.name == "value_strings") {
        d->dtype = DType::String;
        d->shape = {static_cast<int64_t>(a.strings.size())};
        d->strings = a.strings;
      } else {
        continue;
      }
      return d;
    }
    return nullptr;
  }

  void apply_type(Tensor& t, const onnx::TypeProto& type) {
    if (!type.has_tensor_type()) return;
    const auto& tt = type.tensor_type();
    if (dtype_valid(tt.elem_type())) t.dtype = static_cast<DType>(tt.elem_type());
    if (!tt.has_shape()) return;
    t.rank_known = true;
    t.shape.clear();
    for (const auto& d : tt.shape().dim()) t.shape.push_back(d.has_dim_value() && d.dim_value() >= 0 ? d.dim_value() : kUnknownDim);
  }

  TensorId add_tensor(const std::string& name, TensorKind kind) {
    auto [it, fresh] = ids_.emplace(name, static_cast<TensorId>(graph_.tensors.size()));
    if (fresh) {
      Tensor t;
      t.name = name;
      t.kind = kind;
      if (auto ti = types_.find(name); ti != types_.end()) apply_type(t, *ti->second);
      graph_.tensors.push_back(std::move(t));
    }
    return it->second;
  }

  void build_graph() {
    const auto& g = model_.graph();
    graph_.source = source_;
    graph_.ir_version = model_.ir_version();
    graph_.producer_name = model_.producer_name();
    graph_.producer_version = model_.producer_version();
    graph_.name = g.name();
    graph_.doc = model_.doc_string().empty() ? g.doc_string() : model_.doc_string();
    for (const auto& o : model_.opset_import())
      if (o.domain() != kUnregisteredDomain) graph_.opsets.push_back({normalize_domain(o.domain()), o.version()});
    for (const auto& m : model_.metadata_props()) graph_.metadata.emplace_back(m.key(), m.value());

    for (const auto& vi : g.value_info()) types_.emplace(vi.name(), &vi.type());
    for (const auto& vi : g.output()) types_[vi.name()] = &vi.type();
    for (const auto& vi : g.input()) types_[vi.name()] = &vi.type();

    std::unordered_set<std::string> inits;
    for (const auto& init : g.initializer()) inits.insert(init.name());
    for (const auto& in : g.input()) {
      if (inits.count(in.name())) continue;
      graph_.inputs.push_back(add_tensor(in.name(), TensorKind::Input));
    }
    for (int i = 0; i < g.initializer_size(); ++i) {
      const auto& init = g.initializer(i);
      TensorId id = add_tensor(init.name(), TensorKind::Initializer);
      Tensor& t = graph_.tensors[id];
      t.data = decode(init, "initializer " + q(init.name()), /*initializer=*/true);
      t.dtype = t.data->dtype;
      t.shape = t.data->shape;
      t.rank_known = true;
      // The proto's copy is no longer needed (the checker and shape inference are done): free
      // it now rather than with the loader, so the weights are not held twice.
      onnx::TensorProto& done = *model_.mutable_graph()->mutable_initializer(i);
      std::string().swap(*done.mutable_raw_data());
      done.clear_raw_data();
      done.clear_float_data();
      done.clear_int64_data();
      done.clear_int32_data();
      done.clear_double_data();
      done.clear_uint64_data();
    }

    graph_.nodes.reserve(g.node_size());
    for (int k = 0; k < g.node_size(); ++k) {
      const auto& p = g.node(k);
      Node node;
      node.name = p.name().empty() ? p.op_type() + "_" + std::to_string(k) : p.name();
      node.op_type = p.op_type();
      node.domain = normalize_domain(p.domain());
      if (auto it = unregistered_.find(k); it != unregistered_.end()) {
        node.domain = normalize_domain(it->second);
        node.has_schema = false;
      }
      node.opset = graph_.opset_version(node.domain);
      const std::string where = node_label(p, k);
      std::vector<Attribute> attrs;
      for (const auto& a : p.attribute()) attrs.push_back(decode_attribute(a, where));
      node.attributes = Attributes(std::move(attrs));
      const auto id = static_cast<NodeId>(graph_.nodes.size());
      for (const auto& in : p.input()) {
        if (in.empty()) {
          node.inputs.push_back(kNone);
          continue;
        }
        auto it = ids_.find(in);
        if (it == ids_.end()) fail("node " + where + " reads tensor " + q(in) + " before it is produced");
        node.inputs.push_back(it->second);
        graph_.tensors[it->second].consumers.push_back(id);
      }
      // Control-flow bodies read outer tensors by name: they become extra inputs of the node,
      // after its own, in the order of the graph attributes' lists (Attribute::strings).
      for (const Attribute& a : node.attributes.all()) {
        if (a.kind != Attribute::Kind::Graph) continue;
        for (const auto& name : a.strings) {
          auto it = ids_.find(name);
          if (it == ids_.end()) fail("node " + where + ": its body reads tensor " + q(name) + " before it is produced");
          node.inputs.push_back(it->second);
          graph_.tensors[it->second].consumers.push_back(id);
        }
      }
      const bool constant = node.op_type == "Constant" && node.domain.empty();
      for (const auto& out : p.output()) {
        if (out.empty()) {
          node.outputs.push_back(kNone);
          continue;
        }
        TensorId tid = add_tensor(out, constant ? TensorKind::Constant : TensorKind::Activation);
        Tensor& t = graph_.tensors[tid];
        t.producer = id;
        if (constant) {
          t.data = constant_value(node.attributes);
          if (t.data) {
            t.dtype = t.data->dtype;
            t.shape = t.data->shape;
            t.rank_known = true;
          }
        }
        node.outputs.push_back(tid);
      }
      graph_.nodes.push_back(std::move(node));
    }
    for (const auto& out : g.output()) {
      TensorId id = add_tensor(out.name(), TensorKind::Activation);
      graph_.tensors[id].is_output = true;
      graph_.outputs.push_back(id);
    }
    for (const Tensor& t : graph_.tensors) {
      if (!t.rank_known || std::any_of(t.shape.begin(), t.shape.end(), [](int64_t d) { return d < 0; })) continue;
      const auto n = element_count(t.shape);
      const auto esize = static_cast<int64_t>(std::max<size_t>(1, dtype_size(t.dtype)));
      if (!n || *n > std::numeric_limits<int64_t>::max() / esize)
        fail("tensor " + q(t.name) +
             (t.producer == kNone ? std::string() : " (output of node " + q(graph_.nodes[t.producer].name) + ")") +
             " has shape " + shape_string(t.shape) + ", whose size overflows");
    }
    graph_.rebuild_index();
    assign_layers(graph_);
  }

  std::string source_;
  fs::path base_dir_;
  const LoadOptions& options_;
  onnx::ModelProto model_;
  Graph graph_;
  std::unordered_map<int, std::string> unregistered_;  // node index -> original domain
  // External data of large main-graph initializers, by name, until build_graph() takes it.
  static constexpr int64_t kAsideBytes = int64_t{1} << 20;
  std::unordered_map<std::string, std::vector<std::byte>> aside_;
  // Legacy ops renamed into kUnregisteredDomain while the checker runs: index -> (domain, op_type).
  std::unordered_map<int, std::pair<std::string, std::string>> hidden_from_checker_;
  std::unordered_map<std::string, int64_t> resolved_dims_;   // symbolic input dim name -> value
  std::unordered_set<std::string> used_dims_;
  std::unordered_map<std::string, const onnx::TypeProto*> types_;
  std::unordered_map<std::string, TensorId> ids_;
};

}  // namespace

Graph load_model_from_memory(std::span<const std::byte> bytes, std::string_view source, const LoadOptions& options,
                             const fs::path& base_dir) {
  return Loader(source, base_dir, options).run(bytes);
}

Graph load_model(const fs::path& path, const LoadOptions& options) {
  // The size is checked before reading: a 9 GiB file is refused without being read.
  const std::vector<std::byte> bytes =
      read_regular_file(path, static_cast<uint64_t>(INT_MAX), "of protobuf; store the weights as external data");
  return load_model_from_memory(bytes, path.string(), options, path.parent_path().empty() ? fs::path(".") : path.parent_path());
}

TensorData read_tensor_pb(const fs::path& path, std::string* name) {
  return parse_tensor_pb(read_regular_file(path, static_cast<uint64_t>(INT_MAX), "of protobuf"), path.string(), name);
}

TensorData parse_tensor_pb(std::span<const std::byte> bytes, const std::string& source, std::string* name) {
  onnx::TensorProto t;
  if (bytes.empty() || bytes.size() > static_cast<size_t>(INT_MAX) || !t.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())) ||
      (t.dims_size() == 0 && !t.has_data_type()))
    throw ModelError(source + ": not a serialized ONNX TensorProto");
  if (name) *name = t.name();
  LoadOptions options;
  const fs::path path(source);
  Loader loader(source, path.parent_path().empty() ? fs::path(".") : path.parent_path(), options);
  return loader.tensor(t);
}

std::string model_text_to_bytes(std::string_view text) {
  onnx::ModelProto model;
  const std::string source(text);  // the parser keeps a pointer into it
  onnx::OnnxParser parser(source.c_str());
  auto status = parser.Parse(model);
  if (!status.IsOK()) throw ModelError("<text>: " + one_line(status.ErrorMessage()));
  return model.SerializeAsString();
}

Graph load_model_from_text(std::string_view text, const LoadOptions& options) {
  const std::string bytes = model_text_to_bytes(text);
  return load_model_from_memory(std::as_bytes(std::span(bytes.data(), bytes.size())), "<text>", options);
}

}  // namespace nnxr::model
