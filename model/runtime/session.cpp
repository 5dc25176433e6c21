// Plan building and the per-run Session.
#include <algorithm>
#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <cstring>
#include <limits>

#include <cblas.h>

// OpenBLAS (pthreads build): stops its worker threads. Not in cblas.h; weak, as other builds lack it.
extern "C" __attribute__((weak)) int blas_thread_shutdown_(void);

#include "model/size_string.h"
#include "model/runtime/compute.h"
#include "model/runtime/kernel.h"

namespace nnxr::runtime {

struct PlanNode {
  const KernelEntry* entry = nullptr;
  std::unique_ptr<Kernel> kernel;
  bool blocked = false;  // unsupported, or reads a tensor that an unsupported node produces
  // Activation fused into this Conv: computed in its output pass, writing the outputs of the
  // nodes in `fused` (the activation, and the Mul of SiLU), which then do not run themselves.
  std::optional<Epilogue> epilogue;
  std::vector<size_t> fused;
  model::TensorId addend = model::kNone;  // a fused Add's other input
  bool fused_away = false;  // this node's outputs are written by the Conv it follows, or by its chain
  // An element-wise chain that starts at this node (chain_run): its steps, this node's first.
  // The other nodes of the chain are fused_away.
  struct ChainIn {
    ChainArg::Kind kind = ChainArg::Kind::Full;
    model::TensorId t = model::kNone;
  };
  struct ChainNode {
    size_t node = 0;
    ChainStep::Op op = ChainStep::Op::Add;
    ChainIn a, b;
  };
  std::vector<ChainNode> chain;
  // A MatMul whose output the chain of node `after` reads: the chain runs on each block of the
  // product's rows or columns right after they are computed (matmul_blas_done), at this node; that chain's
  // first node is then `by_product` and runs only when the MatMul could not take it.
  static constexpr size_t kNoNode = static_cast<size_t>(-1);
  size_t after = kNoNode;
  bool by_product = false;
  // Output 0 is input 0's bytes under another shape (plan_aliases): a view of them at run time.
  bool alias = false;
};

// A tensor written in place in a part of a Concat's output (Value::view): bytes [offset, offset +
// bytes) of tensor `owner`, whose planned shape is the graph's.
struct InPlace {
  model::TensorId owner = model::kNone;
  size_t offset = 0, bytes = 0;
};

struct Plan::Impl {
  model::Graph graph;
  std::vector<PlanNode> nodes;
  std::vector<model::UnsupportedOp> unsupported;
  std::vector<InPlace> in_place;  // by tensor id; empty when no tensor is written in place
};

Plan::Plan(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Plan::~Plan() = default;
const model::Graph& Plan::graph() const { return impl_->graph; }
const std::vector<model::UnsupportedOp>& Plan::unsupported() const { return impl_->unsupported; }

namespace {

bool is_float(const model::Graph& g, model::TensorId t) { return t != model::kNone && g.tensors[t].dtype == DType::Float; }

// The float value of a scalar constant input (initializer or Constant output), if it is one.
std::optional<float> constant_float(const model::Graph& g, const model::Node& n, size_t i) {
  if (i >= n.inputs.size() || n.inputs[i] == model::kNone) return std::nullopt;
  const model::Tensor& t = g.tensors[n.inputs[i]];
  if (t.kind != model::TensorKind::Initializer && t.kind != model::TensorKind::Constant) return std::nullopt;
  if (!t.data || t.data->dtype != DType::Float || t.data->elements() != 1 || t.data->bytes.size() != sizeof(float)) return std::nullopt;
  float v;
  std::memcpy(&v, t.data->bytes.data(), sizeof v);
  return v;
}

// The epilogue computing node `a` from its input 0 alone, if `a` is such an activation. Float16
// tensors: Relu only (the Conv computes in float and rounds y and the activation to float16;
// max(round(y), 0) = round(max(y, 0)), while the other activations of a rounded y differ).
std::optional<Epilogue> activation_of(const model::Graph& g, const model::Node& a, int64_t opset, DType dtype) {
  if (!a.domain.empty() || a.outputs.size() != 1 || a.outputs[0] == model::kNone || g.tensors[a.outputs[0]].dtype != dtype) return std::nullopt;
  Epilogue e;
  if (a.op_type == "Relu" && a.inputs.size() == 1) {
    e.kind = Epilogue::Kind::Relu;
  } else if (dtype != DType::Float) {
    return std::nullopt;
  } else if (a.op_type == "Sigmoid" && a.inputs.size() == 1) {
    e.kind = Epilogue::Kind::Sigmoid;
  } else if (a.op_type == "LeakyRelu" && a.inputs.size() == 1) {
    e.kind = Epilogue::Kind::LeakyRelu;
    e.alpha = static_cast<float>(a.attributes.get_float("alpha", 0.01f));
  } else if (a.op_type == "Clip") {
    // As the Clip kernel: attributes before opset 11, optional constant inputs from 11.
    e.kind = Epilogue::Kind::Clip;
    e.lo = std::numeric_limits<float>::lowest();
    e.hi = std::numeric_limits<float>::max();
    if (opset < 11) {
      if (a.inputs.size() != 1) return std::nullopt;
      e.lo = static_cast<float>(a.attributes.get_float("min", -std::numeric_limits<float>::max()));
      e.hi = static_cast<float>(a.attributes.get_float("max", std::numeric_limits<float>::max()));
    } else {
      if (a.inputs.size() > 3) return std::nullopt;
      for (size_t i = 1; i < a.inputs.size(); ++i) {
        if (a.inputs[i] == model::kNone) continue;
        const auto v = constant_float(g, a, i);
        if (!v) return std::nullopt;
        (i == 1 ? e.lo : e.hi) = *v;
      }
    }
  } else {
    return std::nullopt;
  }
  return e;
}

// The other input of `a` if it is an Add of the float output y of node `conv` and a float tensor
// that has its value before `conv` runs (a graph input, a constant, or an earlier node's output).
std::optional<model::TensorId> addend_of(const model::Graph& g, size_t conv, const model::Node& a, model::TensorId y) {
  if (a.op_type != "Add" || !a.domain.empty() || a.inputs.size() != 2 || a.outputs.size() != 1 || !is_float(g, a.outputs[0]) || !is_float(g, y))
    return std::nullopt;
  const model::TensorId r = a.inputs[0] == y ? a.inputs[1] : a.inputs[0];
  if ((a.inputs[0] != y && a.inputs[1] != y) || r == y || !is_float(g, r)) return std::nullopt;
  const model::NodeId p = g.tensors[r].producer;
  if (p != model::kNone && static_cast<size_t>(p) >= conv) return std::nullopt;
  return r;
}

// Fuses each float Conv with an activation that reads its output (the Conv's output is still
// written: every tensor is kept): Relu, Clip with constant bounds, LeakyRelu, Sigmoid, Sigmoid
// followed by Mul(x, sigmoid(x)) (SiLU), and Add of a tensor computed earlier (the Conv declines
// it at run time when that tensor is not shaped like its output). A float16 Conv: Relu. A float
// InstanceNormalization takes the same activations in its output pass.
void fuse_activations(Plan::Impl& impl) {
  const model::Graph& g = impl.graph;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const model::Node& c = g.nodes[i];
    PlanNode& pc = impl.nodes[i];
    const bool norm = c.op_type == "InstanceNormalization";
    if (pc.blocked || (c.op_type != "Conv" && !norm) || !c.domain.empty() || c.outputs.size() != 1 || c.inputs.empty()) continue;
    const model::TensorId y = c.outputs[0];
    const DType dtype = g.tensors[y].dtype;
    if ((dtype != DType::Float && (dtype != DType::Float16 || norm)) || c.inputs[0] == model::kNone || g.tensors[c.inputs[0]].dtype != dtype) continue;
    for (model::NodeId j : g.tensors[y].consumers) {
      const model::Node& a = g.nodes[j];
      PlanNode& pa = impl.nodes[j];
      if (pa.blocked || pa.fused_away || a.inputs.empty()) continue;
      const int64_t opset = a.opset > 0 ? a.opset : g.opset_version(a.domain);
      auto e = a.inputs[0] == y ? activation_of(g, a, opset, dtype) : std::nullopt;
      if (const auto r = e ? std::nullopt : addend_of(g, i, a, y)) {
        e = Epilogue{Epilogue::Kind::Add};
        pc.addend = *r;
      }
      if (!e) continue;
      pc.epilogue = e;
      pc.fused = {j};
      pa.fused_away = true;
      if (e->kind == Epilogue::Kind::Sigmoid) {
        const model::TensorId sg = a.outputs[0];
        for (model::NodeId k : g.tensors[sg].consumers) {
          const model::Node& m = g.nodes[k];
          if (m.op_type != "Mul" || !m.domain.empty() || m.inputs.size() != 2 || m.outputs.size() != 1 || !is_float(g, m.outputs[0]) ||
              impl.nodes[k].blocked)
            continue;
          if ((m.inputs[0] == y && m.inputs[1] == sg) || (m.inputs[0] == sg && m.inputs[1] == y)) {
            pc.epilogue->kind = Epilogue::Kind::SiLU;
            pc.fused.push_back(k);
            impl.nodes[k].fused_away = true;
            break;
          }
        }
      }
      break;
    }
  }
}

// The Concat inputs that their producer writes straight into the Concat's output, which is then
// not copied: float or float16 tensors whose shapes are all known, concatenated along an axis
// with only 1s before it (each input is then one contiguous block of the output, at a 64-byte
// multiple; without it SqueezeNet_fp16's eight Concats took 0.43 ms a run, with it 0.01 ms:
// AMD EPYC Zen 3, 2 threads), each written by a Conv (its output, or the output of an activation
// fused into it, other than an Add, which the Conv may decline) or by a Slice, Resize or a
// reshaping node (whose kernels write their output's bytes and no others: yolox's Focus slices,
// its upsampled maps and its heads' reshaped outputs), and in place in no other Concat. The
// input stays a tensor of its own: a view of its block. (A kernel that ends up with its output
// elsewhere, a copy or a shared constant, leaves the block to the Concat, which copies what is
// not in place.)
void plan_in_place(Plan::Impl& impl) {
  const model::Graph& g = impl.graph;
  auto known = [&](model::TensorId t, DType dtype) {
    const model::Tensor& x = g.tensors[t];
    return x.dtype == dtype && x.rank_known && x.elements().has_value() && *x.elements() > 0;
  };
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const model::Node& c = g.nodes[i];
    if (impl.nodes[i].blocked || c.op_type != "Concat" || !c.domain.empty() || c.outputs.size() != 1 || c.outputs[0] == model::kNone ||
        c.inputs.size() < 2)
      continue;
    const model::TensorId out = c.outputs[0];
    const DType dtype = g.tensors[out].dtype;
    if ((dtype != DType::Float && dtype != DType::Float16) || !known(out, dtype) ||
        (!impl.in_place.empty() && impl.in_place[out].owner != model::kNone))
      continue;
    const size_t esize = model::dtype_size(dtype);
    const int64_t rank = static_cast<int64_t>(g.tensors[out].shape.size());
    int64_t axis = c.attributes.get_int("axis", 1);
    if (axis < 0) axis += rank;
    if (axis < 0 || axis >= rank) continue;
    bool contiguous = true;
    for (int64_t d = 0; d < axis; ++d) contiguous = contiguous && g.tensors[out].shape[static_cast<size_t>(d)] == 1;
    if (!contiguous) continue;
    size_t offset = 0;
    std::vector<std::pair<model::TensorId, size_t>> parts;
    bool ok = true;
    for (size_t k = 0; ok && k < c.inputs.size(); ++k) {
      const model::TensorId t = c.inputs[k];
      ok = t != model::kNone && known(t, dtype);
      if (!ok) break;
      const size_t bytes = static_cast<size_t>(*g.tensors[t].elements()) * esize;
      const model::NodeId p = g.tensors[t].producer;
      bool writer = false;
      if (p != model::kNone && std::count(c.inputs.begin(), c.inputs.end(), t) == 1 &&
          (impl.in_place.empty() || impl.in_place[t].owner == model::kNone) && t != out && offset % 64 == 0) {
        const model::Node& pn = g.nodes[p];
        const PlanNode& pp = impl.nodes[p];
        static constexpr std::string_view kWriters[] = {"Conv", "Slice", "Resize", "Upsample", "Reshape", "Flatten", "Squeeze", "Unsqueeze"};
        if (!pp.blocked && std::find(std::begin(kWriters), std::end(kWriters), pn.op_type) != std::end(kWriters) && pn.domain.empty() &&
            !pp.fused_away && pn.outputs.size() == 1 && pn.outputs[0] == t)
          writer = true;
        // the output of an activation fused into a Conv
        if (pp.fused_away && pn.outputs.size() == 1)
          for (size_t j = 0; j < impl.nodes.size() && !writer; ++j) {
            const PlanNode& pc = impl.nodes[j];
            if (pc.epilogue && pc.epilogue->kind != Epilogue::Kind::Add && std::find(pc.fused.begin(), pc.fused.end(), static_cast<size_t>(p)) != pc.fused.end())
              writer = true;
          }
      }
      if (writer) parts.emplace_back(t, offset);
      offset += bytes;
    }
    if (!ok || offset != static_cast<size_t>(*g.tensors[out].elements()) * esize || parts.empty()) continue;
    if (impl.in_place.empty()) impl.in_place.resize(g.tensors.size());
    for (const auto& [t, at] : parts)
      impl.in_place[t] = InPlace{out, at, static_cast<size_t>(*g.tensors[t].elements()) * esize};
  }
}

// The nodes whose output 0 is their input 0's bytes, under another shape or none (Reshape,
// Flatten, Squeeze, Unsqueeze, Identity, Dropout at inference): the output is kept as a view of
// the input's bytes instead of a copy of them (the kernel still checks the shape and skips the
// copy onto itself). Only for an input another node computed in this graph (not a graph input,
// which set_input may overwrite before the next run, nor a constant) and an output that is not
// written in place in a Concat. On AMD EPYC Zen 3 at 1 thread, vit_s16_4l's 21 Reshapes took
// 0.81-0.83 ms a run copying and 0.05 ms as views, super-resolution's two 0.53-0.56 and 0.01 ms.
void plan_aliases(Plan::Impl& impl) {
  const model::Graph& g = impl.graph;
  static constexpr std::string_view kSame[] = {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Dropout"};
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const model::Node& n = g.nodes[i];
    PlanNode& pn = impl.nodes[i];
    if (pn.blocked || pn.fused_away || !n.domain.empty() || std::find(std::begin(kSame), std::end(kSame), n.op_type) == std::end(kSame) ||
        n.inputs.empty() || n.outputs.empty() || n.inputs[0] == model::kNone || n.outputs[0] == model::kNone)
      continue;
    const model::Tensor &in = g.tensors[n.inputs[0]], &out = g.tensors[n.outputs[0]];
    if (in.producer == model::kNone || in.kind != model::TensorKind::Activation || in.dtype != out.dtype || model::dtype_size(in.dtype) == 0 ||
        (!impl.in_place.empty() && impl.in_place[n.outputs[0]].owner != model::kNone))
      continue;
    pn.alias = true;
  }
}

// Element-wise chains (chain_run): from a float Add, Sub, Mul, Div, Erf or Pow with the constant
// exponent 2 whose output shape is known, the next such node that reads the chain's last output,
// has the same output shape and whose other input is a tensor of that shape, one value per column
// (a bias), one per row (a LayerNorm's mean) or a single value, computed by the chain or before
// its first node; and so on. Chains of two nodes or more run as one pass at their first node.
void plan_chains(Plan::Impl& impl) {
  using Op = ChainStep::Op;
  using Kind = ChainArg::Kind;
  const model::Graph& g = impl.graph;
  auto static_shape = [&](model::TensorId t) -> const std::vector<int64_t>* {
    if (t == model::kNone) return nullptr;
    const model::Tensor& x = g.tensors[t];
    if (x.dtype != DType::Float || !x.rank_known || !x.elements() || *x.elements() <= 0) return nullptr;
    return &x.shape;
  };
  auto op_of = [&](const model::Node& n) -> std::optional<Op> {
    if (!n.domain.empty() || n.outputs.size() != 1 || n.outputs[0] == model::kNone) return std::nullopt;
    if (n.op_type == "Erf") return n.inputs.size() == 1 && n.inputs[0] != model::kNone ? std::optional(Op::Erf) : std::nullopt;
    if (n.op_type == "Relu") return n.inputs.size() == 1 && n.inputs[0] != model::kNone ? std::optional(Op::Relu) : std::nullopt;
    if (n.op_type == "Softmax") {
      // Over the last axis only (rows of the chain's [rows, n]; before opset 13 the axis flattens
      // what follows it, the same rows when it is the last), and rows of more than 8, which the
      // Softmax kernel takes one at a time.
      const auto* os = static_shape(n.outputs[0]);
      if (n.inputs.size() != 1 || n.inputs[0] == model::kNone || !os || os->empty() || os->back() <= 8) return std::nullopt;
      const int64_t opset = n.opset > 0 ? n.opset : g.opset_version(n.domain), rank = static_cast<int64_t>(os->size());
      int64_t axis = n.attributes.get_int("axis", opset < 13 ? 1 : -1);
      if (axis < 0) axis += rank;
      return axis == rank - 1 ? std::optional(Op::Softmax) : std::nullopt;
    }
    if (n.inputs.size() != 2 || n.inputs[0] == model::kNone || n.inputs[1] == model::kNone) return std::nullopt;
    if (n.op_type == "Add") return Op::Add;
    if (n.op_type == "Sub") return Op::Sub;
    if (n.op_type == "Mul") return Op::Mul;
    if (n.op_type == "Div") return Op::Div;
    if (n.op_type == "Pow" && constant_float(g, n, 1) == 2.f) return Op::Square;
    return std::nullopt;
  };
  // How operand t lines up with an output of shape `out` (right-aligned, as numpy broadcasts).
  auto kind_of = [&](model::TensorId t, const std::vector<int64_t>& out) -> std::optional<Kind> {
    const auto* ts = static_shape(t);
    if (!ts || ts->size() > out.size()) return std::nullopt;
    const size_t off = out.size() - ts->size();
    bool full = true, scalar = true, column = true, row = true;
    for (size_t d = 0; d < out.size(); ++d) {
      const int64_t v = d >= off ? (*ts)[d - off] : 1;
      const bool last = d + 1 == out.size();
      full = full && v == out[d];
      scalar = scalar && v == 1;
      column = column && (last ? v == out[d] : v == 1);
      row = row && (last ? v == 1 : v == out[d]);
    }
    if (full) return Kind::Full;
    if (scalar) return Kind::Scalar;
    if (column) return Kind::Column;
    if (row) return Kind::Row;
    return std::nullopt;
  };
  auto free_node = [&](size_t j) {
    const PlanNode& p = impl.nodes[j];
    return !p.blocked && !p.fused_away && !p.epilogue && p.chain.empty();
  };
  for (size_t h = 0; h < g.nodes.size(); ++h) {
    if (!free_node(h)) continue;
    const auto op_h = op_of(g.nodes[h]);
    const auto* shape = op_h ? static_shape(g.nodes[h].outputs[0]) : nullptr;
    if (!shape || shape->empty()) continue;
    std::vector<model::TensorId> made;  // the chain's outputs so far
    // Operand t of a step: computed by the chain (laid out like its outputs), or before node h.
    auto operand = [&](model::TensorId t, PlanNode::ChainIn& in) {
      if (std::find(made.begin(), made.end(), t) != made.end()) {
        in = {Kind::Full, t};
        return true;
      }
      const model::Tensor& x = g.tensors[t];
      const bool before = x.producer == model::kNone || static_cast<size_t>(x.producer) < h ||
                          ((x.kind == model::TensorKind::Initializer || x.kind == model::TensorKind::Constant) && x.data);
      const auto k = before ? kind_of(t, *shape) : std::nullopt;
      if (!k) return false;
      in = {*k, t};
      return true;
    };
    auto step_of = [&](size_t j, PlanNode::ChainNode& step) {
      const model::Node& n = g.nodes[j];
      const auto op = op_of(n);
      const auto* os = op ? static_shape(n.outputs[0]) : nullptr;
      if (!os || *os != *shape) return false;
      step.node = j;
      step.op = *op;
      if (!operand(n.inputs[0], step.a)) return false;
      if (*op == Op::Erf || *op == Op::Square || *op == Op::Relu || *op == Op::Softmax) return step.a.kind == Kind::Full;
      return operand(n.inputs[1], step.b) && (step.a.kind == Kind::Full || step.b.kind == Kind::Full);
    };
    std::vector<PlanNode::ChainNode> chain(1);
    if (!step_of(h, chain[0])) continue;
    made.push_back(g.nodes[h].outputs[0]);
    for (;;) {
      std::vector<model::NodeId> next(g.tensors[made.back()].consumers.begin(), g.tensors[made.back()].consumers.end());
      std::sort(next.begin(), next.end());
      bool grown = false;
      for (model::NodeId j : next) {
        PlanNode::ChainNode step;
        if (static_cast<size_t>(j) <= h || !free_node(static_cast<size_t>(j)) || !step_of(static_cast<size_t>(j), step)) continue;
        chain.push_back(step);
        made.push_back(g.nodes[static_cast<size_t>(j)].outputs[0]);
        grown = true;
        break;
      }
      if (!grown) break;
    }
    // A float MatMul of the chain's shape whose output the first node reads, when every other
    // tensor the chain reads from before it has its value before that MatMul runs.
    auto product_of = [&](model::TensorId t) -> std::optional<size_t> {
      if (t == model::kNone || std::find(made.begin(), made.end(), t) != made.end()) return std::nullopt;
      const model::NodeId m = g.tensors[t].producer;
      if (m == model::kNone || static_cast<size_t>(m) >= h) return std::nullopt;
      const model::Node& mn = g.nodes[m];
      const PlanNode& pm = impl.nodes[m];
      if (mn.op_type != "MatMul" || !mn.domain.empty() || mn.inputs.size() != 2 || mn.outputs.size() != 1 || mn.outputs[0] != t ||
          !is_float(g, mn.inputs[0]) || !is_float(g, mn.inputs[1]) || pm.blocked || pm.fused_away || pm.epilogue || !pm.chain.empty() ||
          pm.after != PlanNode::kNoNode)
        return std::nullopt;
      const auto* ms = static_shape(t);
      if (!ms || *ms != *shape) return std::nullopt;
      for (const auto& c : chain)
        for (const auto* in : {&c.a, &c.b}) {
          if (in->t == model::kNone || in->t == t || std::find(made.begin(), made.end(), in->t) != made.end()) continue;
          const model::Tensor& x = g.tensors[in->t];
          const bool before = x.producer == model::kNone || x.producer < m ||
                              ((x.kind == model::TensorKind::Initializer || x.kind == model::TensorKind::Constant) && x.data);
          if (!before) return std::nullopt;
        }
      return static_cast<size_t>(m);
    };
    std::optional<size_t> product = product_of(chain[0].a.kind == Kind::Full ? chain[0].a.t : model::kNone);
    if (!product && chain[0].b.kind == Kind::Full) product = product_of(chain[0].b.t);
    if (chain.size() < 2 && !product) continue;
    for (size_t k = 1; k < chain.size(); ++k) impl.nodes[chain[k].node].fused_away = true;
    impl.nodes[h].chain = std::move(chain);
    if (product) {
      impl.nodes[*product].after = h;
      impl.nodes[h].by_product = true;
    }
  }
}

}  // namespace

std::shared_ptr<const Plan> Plan::build(model::Graph graph) {
  auto impl = std::make_unique<Impl>();
  impl->graph = std::move(graph);
  const model::Graph& g = impl->graph;
  const Registry& reg = registry();
  std::vector<uint8_t> blocked_tensor(g.tensors.size(), 0);
  std::map<std::pair<std::string, std::string>, int> missing;
  impl->nodes.resize(g.nodes.size());
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const model::Node& n = g.nodes[i];
    PlanNode& pn = impl->nodes[i];
    const int64_t opset = n.opset > 0 ? n.opset : g.opset_version(n.domain);
    pn.entry = reg.find(n.domain, n.op_type, opset);
    if (pn.entry) {
      KernelInit init{g, n, opset};
      try {
        pn.kernel = pn.entry->factory(init);
      } catch (const RuntimeError&) {
        throw;
      } catch (const std::exception& e) {
        throw RuntimeError("node " + node_label(n) + ": " + e.what());
      }
    }
    if (!pn.kernel) {
      ++missing[{n.domain, n.op_type}];
      pn.blocked = true;
    }
    for (auto t : n.inputs)
      if (t != model::kNone && blocked_tensor[t]) pn.blocked = true;
    if (pn.blocked)
      for (auto t : n.outputs)
        if (t != model::kNone) blocked_tensor[t] = 1;
  }
  for (const auto& [key, count] : missing) impl->unsupported.push_back({key.first, key.second, count});
  fuse_activations(*impl);
  plan_in_place(*impl);
  plan_aliases(*impl);
  plan_chains(*impl);
  return std::shared_ptr<const Plan>(new Plan(std::move(impl)));
}

// ---- Session ---------------------------------------------------------------------------------

struct Session::State {
  std::vector<Value> values;
  std::vector<uint8_t> ready;
  // float32 copies of float16 initializers and constants, made on the first run that needs them
  // (by tensor id; empty until then), so that fp16 weights are converted once, not every run.
  std::vector<Value> upcast_constants;
  // float32 inputs and outputs of a float16 node, reused from node to node and run to run.
  std::vector<Value> temps_in, temps_out, temps_fused;
  int threads = 1;
  bool profile = false;
  std::unique_ptr<ThreadPool> pool;
};

static int resolve_threads(int t) {
  if (t > 0) return t;
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

Session::Session(std::shared_ptr<const Plan> plan, SessionOptions options)
    : plan_(std::move(plan)), state_(std::make_unique<State>()) {
  const model::Graph& g = plan_->graph();
  state_->values.resize(g.tensors.size());
  state_->ready.assign(g.tensors.size(), 0);
  for (size_t i = 0; i < g.tensors.size(); ++i) {
    const model::Tensor& t = g.tensors[i];
    if (t.data && t.data->dtype != DType::String && (t.kind == model::TensorKind::Initializer || t.kind == model::TensorKind::Constant)) {
      state_->values[i].borrow(t.data);
      state_->ready[i] = 1;
    }
  }
  state_->profile = options.profile;
  set_threads(options.threads);
}

Session::~Session() = default;
Session::Session(Session&&) noexcept = default;
Session& Session::operator=(Session&&) noexcept = default;

void Session::set_threads(int threads) {
  threads = resolve_threads(threads);
  if (state_->pool && state_->threads == threads) return;
  state_->threads = threads;
  state_->pool = std::make_unique<ThreadPool>(threads);
}

int Session::threads() const { return state_->threads; }

void Session::set_input(std::string_view name, DType dtype, std::span<const int64_t> shape, std::span<const std::byte> bytes) {
  const model::Graph& g = plan_->graph();
  for (size_t k = 0; k < g.inputs.size(); ++k)
    if (g.tensors[g.inputs[k]].name == name) return set_input(k, dtype, shape, bytes);
  std::string names;
  for (auto id : g.inputs) names += (names.empty() ? "" : ", ") + quoted(g.tensors[id].name);
  throw RuntimeError("graph has no input " + quoted(name) + " (inputs: " + names + ")");
}

void Session::set_input(size_t index, DType dtype, std::span<const int64_t> shape, std::span<const std::byte> bytes) {
  const model::Graph& g = plan_->graph();
  if (index >= g.inputs.size())
    throw RuntimeError("input #" + std::to_string(index) + " does not exist; the graph has " + std::to_string(g.inputs.size()) + " inputs");
  const model::TensorId id = g.inputs[index];
  const model::Tensor& t = g.tensors[id];
  const std::string what = "input " + quoted(t.name);
  if (t.dtype != DType::Undefined && t.dtype != dtype)
    throw RuntimeError(what + " expects element type " + std::string(model::dtype_name(t.dtype)) + ", got " + std::string(model::dtype_name(dtype)));
  if (t.rank_known) {
    bool ok = t.shape.size() == shape.size();
    for (size_t i = 0; ok && i < shape.size(); ++i) ok = t.shape[i] == model::kUnknownDim || t.shape[i] == shape[i];
    if (!ok) throw RuntimeError(what + " expects shape " + shape_str(t.shape) + ", got " + shape_str(shape));
  }
  for (int64_t d : shape)
    if (d < 0) throw RuntimeError(what + ": negative dimension in shape " + shape_str(shape));
  const auto n = model::element_count(shape);
  const size_t elem = model::dtype_size(dtype);
  if (!n || elem == 0 || static_cast<uint64_t>(*n) * elem != bytes.size())
    throw RuntimeError(what + ": " + std::to_string(bytes.size()) + " bytes do not hold a " + std::string(model::dtype_name(dtype)) + " " +
                       shape_str(shape) + " tensor");
  state_->values[id].assign(dtype, std::vector<int64_t>(shape.begin(), shape.end()), bytes);
  state_->ready[id] = 1;
}

namespace {

void check_output(const model::Graph& g, const model::Node& n, model::TensorId id, const Value& v) {
  const model::Tensor& t = g.tensors[id];
  if (v.empty()) throw RuntimeError("node " + node_label(n) + ": produced no value for output " + quoted(t.name));
  if (t.dtype != DType::Undefined && t.dtype != v.dtype())
    throw RuntimeError("node " + node_label(n) + ": output " + quoted(t.name) + " has element type " + std::string(model::dtype_name(v.dtype())) +
                       " but the graph declares " + std::string(model::dtype_name(t.dtype)));
  if (!t.rank_known) return;
  bool ok = t.shape.size() == v.rank();
  for (size_t i = 0; ok && i < t.shape.size(); ++i) ok = t.shape[i] == model::kUnknownDim || t.shape[i] == v.dims()[i];
  if (!ok)
    throw RuntimeError("node " + node_label(n) + ": output " + quoted(t.name) + " has shape " + shape_str(v.shape()) +
                       " but the graph declares " + shape_str(t.shape));
}

// OpenBLAS single-threaded, with the worker threads it started when it was loaded stopped: idle,
// they spin calling sched_yield for a while, taking the cores from the pool's threads. (Once
// single-threaded, OpenBLAS never hands them work again; blas_thread_shutdown_ is the pthreads
// build's own, hence weak: other builds simply keep their threads.)
void single_threaded_blas() {
  static std::once_flag once;
  std::call_once(once, [] {
    openblas_set_num_threads(1);
    if (blas_thread_shutdown_) blas_thread_shutdown_();
  });
}

// float16 <-> float of a whole tensor, split over the pool in blocks of 16K elements.
template <class From, class To>
void convert_on_pool(const Value& src, Value& dst, DType to, ThreadPool& pool, void (*convert)(const From*, To*, size_t)) {
  dst.reset(to, src.dims());
  const From* in = src.as<From>().data();
  To* out = dst.mutable_as<To>().data();
  constexpr int64_t kBlock = 1 << 14;
  pool.parallel_for((src.elements() + kBlock - 1) / kBlock, 2, [&](int64_t b, int64_t e) {
    const int64_t lo = b * kBlock, hi = std::min(src.elements(), e * kBlock);
    convert(in + lo, out + lo, static_cast<size_t>(hi - lo));
  });
}

void to_float(const Value& src, Value& dst, ThreadPool& pool) { convert_on_pool<uint16_t, float>(src, dst, DType::Float, pool, model::half_to_float); }
void to_half(const Value& src, Value& dst, ThreadPool& pool) { convert_on_pool<float, uint16_t>(src, dst, DType::Float16, pool, model::float_to_half); }

// The steps of the element-wise chain that starts at node `pn`, its outputs allocated, or false,
// having changed nothing, when a tensor it reads is not there as planned (the nodes then run one
// by one). `pending` (a MatMul's output the chain follows) is taken as computed.
bool prepare_chain(const model::Graph& g, const PlanNode& pn, std::vector<Value>& values, const std::vector<uint8_t>& ready,
                   model::TensorId pending, std::vector<ChainStep>& steps, int64_t& rows, int64_t& n) {
  const std::vector<int64_t>& shape = g.tensors[g.nodes[pn.chain[0].node].outputs[0]].shape;
  const int64_t elements = product(shape);
  n = shape.back();
  rows = elements / n;
  auto fits = [&](const PlanNode::ChainIn& in) {
    if (in.t == model::kNone || in.t == pending) return true;
    const Value& v = values[in.t];
    if (!ready[in.t] || v.dtype() != DType::Float) return false;
    switch (in.kind) {
      case ChainArg::Kind::Full: return v.elements() == elements;
      case ChainArg::Kind::Column: return v.elements() == n;
      case ChainArg::Kind::Row: return v.elements() == rows;
      case ChainArg::Kind::Scalar: return v.elements() == 1;
    }
    return false;
  };
  std::vector<model::TensorId> made;
  for (const auto& c : pn.chain) {
    // (an input made by the chain is not ready yet)
    for (const auto* in : {&c.a, &c.b})
      if (std::find(made.begin(), made.end(), in->t) == made.end() && !fits(*in)) return false;
    made.push_back(g.nodes[c.node].outputs[0]);
  }
  steps.assign(pn.chain.size(), ChainStep{});
  // A step's output is staged (ChainStep::staged) when only the chain's nodes read it.
  const auto in_chain = [&](model::NodeId j) {
    return std::any_of(pn.chain.begin(), pn.chain.end(), [&](const PlanNode::ChainNode& c) { return static_cast<model::NodeId>(c.node) == j; });
  };
  for (size_t k = 0; k < pn.chain.size(); ++k) {
    const auto& c = pn.chain[k];
    const std::vector<model::NodeId>& readers = g.tensors[g.nodes[c.node].outputs[0]].consumers;
    steps[k].staged = std::all_of(readers.begin(), readers.end(), in_chain);
    Value& out = values[g.nodes[c.node].outputs[0]];
    out.clear();
    out.reset(DType::Float, shape);
    steps[k].op = c.op;
    steps[k].out = out.mutable_as<float>().data();
    // (which earlier step made an operand: made[j] is step j's output)
    const auto from = [&](model::TensorId t) {
      const auto it = std::find(made.begin(), made.begin() + static_cast<std::ptrdiff_t>(k), t);
      return it == made.begin() + static_cast<std::ptrdiff_t>(k) ? -1 : static_cast<int>(it - made.begin());
    };
    steps[k].a = {c.a.kind, values[c.a.t].as<float>().data(), from(c.a.t)};
    if (c.b.t != model::kNone) steps[k].b = {c.b.kind, values[c.b.t].as<float>().data(), from(c.b.t)};
  }
  return true;
}

// Runs the element-wise chain that starts at node `pn` (every output written and checked), or
// returns false as prepare_chain.
bool run_chain(const model::Graph& g, const PlanNode& pn, std::vector<Value>& values, const std::vector<uint8_t>& ready, ThreadPool& pool) {
  std::vector<ChainStep> steps;
  int64_t rows = 0, n = 0;
  if (!prepare_chain(g, pn, values, ready, model::kNone, steps, rows, n)) return false;
  chain_run(steps, rows, n, &pool);
  for (const auto& c : pn.chain) {
    const model::Node& node = g.nodes[c.node];
    check_output(g, node, node.outputs[0], values[node.outputs[0]]);
  }
  return true;
}

// Runs MatMul node `i` and the chain of node `after` on each block of its rows as it is computed
// (matmul_blas_done; every output written and checked), or returns false when an input is not as
// planned (the MatMul then runs alone, and the chain at its own node).
bool run_product(const model::Graph& g, const Plan::Impl& p, size_t i, std::vector<Value>& values, const std::vector<uint8_t>& ready) {
  const model::Node& mn = g.nodes[i];
  const PlanNode& chain = p.nodes[p.nodes[i].after];
  const Value &a = values[mn.inputs[0]], &b = values[mn.inputs[1]];
  if (!ready[mn.inputs[0]] || !ready[mn.inputs[1]] || a.dtype() != DType::Float || b.dtype() != DType::Float || a.rank() == 0 || b.rank() == 0)
    return false;
  std::vector<int64_t> os;
  try {
    os = matmul_shape(a.dims(), b.dims());
  } catch (const std::invalid_argument&) {
    return false;
  }
  const model::TensorId mo = mn.outputs[0];
  if (os != g.tensors[g.nodes[chain.chain[0].node].outputs[0]].shape) return false;
  Value& out = values[mo];
  out.clear();
  out.reset(DType::Float, os);
  std::vector<ChainStep> steps;
  int64_t rows = 0, n = 0;
  if (!prepare_chain(g, chain, values, ready, mo, steps, rows, n)) return false;
  const Kernel* kernel = p.nodes[i].kernel.get();
  matmul_blas_done(a.dims(), a.as<float>().data(), b.dims(), b.as<float>().data(), out.mutable_as<float>().data(),
                   [&](int64_t r0, int64_t r1, int64_t c0, int64_t c1) { chain_block(steps, r0, r1, c0, c1, n); }, !chain_whole_rows(steps),
                   kernel ? kernel->packed_right(b.data()) : nullptr);
  check_output(g, mn, mo, out);
  for (const auto& c : chain.chain) {
    const model::Node& node = g.nodes[c.node];
    check_output(g, node, node.outputs[0], values[node.outputs[0]]);
  }
  return true;
}

}  // namespace

RunStats Session::run(const RunOptions& options) {
  const auto t0 = std::chrono::steady_clock::now();
  const model::Graph& g = plan_->graph();
  const Plan::Impl& p = plan_->impl();
  State& s = *state_;
  for (auto id : g.inputs)
    if (!s.ready[id]) throw RuntimeError("graph input " + quoted(g.tensors[id].name) + " was not set");
  // Forget the previous run's activations (their buffers are kept for reuse).
  for (size_t i = 0; i < g.tensors.size(); ++i)
    if (g.tensors[i].kind == model::TensorKind::Activation && g.tensors[i].producer != model::kNone) s.ready[i] = 0;
  // One set of threads: OpenBLAS runs single-threaded and gemm_blas() splits large products
  // over the session's pool.
  single_threaded_blas();
  const GemmPool gemm_pool(*s.pool);

  RunStats stats;
  if (s.profile) stats.node_ms.assign(g.nodes.size(), 0.0);
  std::vector<const Value*> inputs;
  std::vector<Value*> outputs;
  std::vector<Value>& temps_in = s.temps_in;
  std::vector<Value>& temps_out = s.temps_out;
  // RunOptions::keep: by node, the activations to let go once it has run (no later node reads
  // them; a body's outer tensors are among its node's inputs).
  std::vector<std::vector<model::TensorId>> let_go;
  if (options.keep) {
    std::vector<int64_t> last(g.tensors.size(), -1);
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      for (auto t : g.nodes[i].inputs)
        if (t != model::kNone && t < last.size()) last[t] = int64_t(i);
      for (auto t : g.nodes[i].outputs)
        if (t != model::kNone && t < last.size()) last[t] = std::max(last[t], int64_t(i));
    }
    // A view lives in its owner's bytes: the owner lives as long as the view is read, and is
    // kept when the view is. The output of an alias node (plan_aliases) is a view of its input,
    // taken from the last node back so that a view of a view extends the first owner too; a
    // tensor written in place in a Concat's output is a view of that output.
    std::vector<bool> owner_kept(g.tensors.size(), false);
    auto owns = [&](model::TensorId owner, model::TensorId t) {
      if (owner == model::kNone || owner >= last.size()) return;
      last[owner] = std::max(last[owner], last[t]);
      if ((t < options.keep->size() && (*options.keep)[t]) || owner_kept[t]) owner_kept[owner] = true;
    };
    for (size_t i = g.nodes.size(); i-- > 0;)
      if (p.nodes[i].alias) owns(g.nodes[i].inputs[0], g.nodes[i].outputs[0]);
    for (size_t t = 0; t < p.in_place.size(); ++t) owns(p.in_place[t].owner, model::TensorId(t));
    let_go.resize(g.nodes.size());
    for (size_t t = 0; t < g.tensors.size(); ++t)
      if (last[t] >= 0 && g.tensors[t].kind == model::TensorKind::Activation && g.tensors[t].producer != model::kNone &&
          !(t < options.keep->size() && (*options.keep)[t]) && !owner_kept[t])
        let_go[size_t(last[t])].push_back(model::TensorId(t));
  }
  auto let_go_after = [&](size_t node) {
    if (node >= let_go.size()) return;
    for (model::TensorId t : let_go[node]) {
      s.values[t].release();
      s.ready[t] = 0;
    }
  };
  // The kernels (and the bodies of Loop, Scan and If, which run in sessions of their own) get
  // the limits only: the hooks name tensors of this graph.
  RunOptions limits = options;
  limits.on_ready = nullptr;
  limits.keep = nullptr;
  auto made_ready = [&](model::TensorId t) {
    s.ready[t] = 1;
    if (options.on_ready) options.on_ready(t, s.values[t]);
  };
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const model::Node& n = g.nodes[i];
    const PlanNode& pn = p.nodes[i];
    if (i > 0) let_go_after(i - 1);
    options.check();
    if (pn.blocked) {
      ++stats.nodes_skipped;
      continue;
    }
    if ((pn.fused_away || pn.by_product) && std::all_of(n.outputs.begin(), n.outputs.end(), [&](auto t) { return t == model::kNone || s.ready[t]; })) {
      ++stats.nodes_run;  // written by the Conv it follows, or with the rows of the MatMul it follows
      ++stats.nodes_fused;
      continue;
    }
    inputs.assign(n.inputs.size(), nullptr);
    bool has_half = false;
    for (size_t k = 0; k < n.inputs.size(); ++k) {
      const auto t = n.inputs[k];
      if (t == model::kNone) continue;
      if (!s.ready[t]) throw RuntimeError("node " + node_label(n) + ": input " + quoted(g.tensors[t].name) + " has no value");
      inputs[k] = &s.values[t];
      if (inputs[k]->dtype() == DType::Float16) has_half = true;
    }
    outputs.assign(n.outputs.size(), nullptr);
    for (size_t k = 0; k < n.outputs.size(); ++k)
      if (n.outputs[k] != model::kNone) outputs[k] = &s.values[n.outputs[k]];
    const bool upcast = has_half && pn.entry->upcast_f16;
    if (upcast) {
      temps_in.resize(inputs.size());
      for (size_t k = 0; k < inputs.size(); ++k) {
        if (!inputs[k] || inputs[k]->dtype() != DType::Float16) continue;
        const model::TensorKind kind = g.tensors[n.inputs[k]].kind;
        if (kind == model::TensorKind::Initializer || kind == model::TensorKind::Constant) {
          if (s.upcast_constants.empty()) s.upcast_constants.resize(g.tensors.size());
          Value& cached = s.upcast_constants[n.inputs[k]];
          if (cached.dtype() != DType::Float) to_float(*inputs[k], cached, *s.pool);
          inputs[k] = &cached;
        } else {
          to_float(*inputs[k], temps_in[k], *s.pool);
          inputs[k] = &temps_in[k];
        }
      }
      temps_out.resize(outputs.size());
      for (size_t k = 0; k < outputs.size(); ++k)
        if (outputs[k]) outputs[k] = &temps_out[k];
    }
    // The element-wise chain that starts here, when every tensor it reads is as planned.
    if (!pn.chain.empty() && !upcast) {
      const auto chain_t0 = std::chrono::steady_clock::now();
      if (run_chain(g, pn, s.values, s.ready, *s.pool)) {
        for (const auto& c : pn.chain) made_ready(g.nodes[c.node].outputs[0]);
        if (s.profile) stats.node_ms[i] = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - chain_t0).count();
        ++stats.nodes_run;
        continue;
      }
    }
    // A MatMul with the chain that follows it computed on its rows.
    if (pn.after != PlanNode::kNoNode && !upcast) {
      const auto product_t0 = std::chrono::steady_clock::now();
      if (run_product(g, p, i, s.values, s.ready)) {
        made_ready(n.outputs[0]);
        for (const auto& c : p.nodes[pn.after].chain) made_ready(g.nodes[c.node].outputs[0]);
        if (s.profile) stats.node_ms[i] = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - product_t0).count();
        ++stats.nodes_run;
        continue;
      }
    }
    // A node's outputs are fresh values (a stale value from the previous run must not look valid).
    for (Value* o : outputs)
      if (o && o != nullptr && n.op_type != "Constant") o->clear();
    KernelContext ctx(g, n, inputs, outputs, *s.pool);
    ctx.set_run_options(&limits);
    // The fused activation's outputs (float temporaries when the node computes float16 in float).
    Value* fused_out[2] = {nullptr, nullptr};
    Value* fused_dst[2] = {nullptr, nullptr};
    if (pn.epilogue) {
      s.temps_fused.resize(2);
      for (size_t f = 0; f < pn.fused.size() && f < 2; ++f) {
        fused_dst[f] = &s.values[g.nodes[pn.fused[f]].outputs[0]];
        fused_dst[f]->clear();
        fused_out[f] = upcast ? &s.temps_fused[f] : fused_dst[f];
      }
      const bool addend_ready = pn.addend != model::kNone && s.ready[pn.addend];
      ctx.set_epilogue(&*pn.epilogue, fused_out[0], fused_out[1], addend_ready ? &s.values[pn.addend] : nullptr);
    }
    // Outputs written in place in a Concat's output (not by a float16 node computed in float
    // temporaries: those are rounded into the tensor after the kernel).
    if (!p.in_place.empty() && !upcast) {
      auto place = [&](model::TensorId t) {
        const InPlace& ip = p.in_place[t];
        if (ip.owner == model::kNone) return;
        Value& owner = s.values[ip.owner];
        const model::Tensor& ot = g.tensors[ip.owner];
        owner.reset(ot.dtype, ot.shape);  // the planned size: no reallocation once it has it
        s.values[t].view(owner.mutable_data() + ip.offset, ip.bytes);
      };
      for (auto t : n.outputs)
        if (t != model::kNone) place(t);
      for (size_t f = 0; f < 2; ++f)
        if (fused_dst[f]) place(g.nodes[pn.fused[f]].outputs[0]);
    }
    // Output 0 as a view of input 0's bytes (plan_aliases).
    if (pn.alias && !upcast) {
      Value& in = s.values[n.inputs[0]];  // (owned or a view itself: mutable_data() copies nothing)
      if (!in.is_borrowed() && in.byte_size() > 0) s.values[n.outputs[0]].view(in.mutable_data(), in.byte_size());
    }
    const auto node_t0 = std::chrono::steady_clock::now();
    try {
      pn.kernel->run(ctx);
    } catch (const CancelledError& e) {
      throw CancelledError(e.reason(), node_label(n));  // the outermost node: the one the user knows
    } catch (const RuntimeError&) {
      throw;
    } catch (const MemoryLimitError& e) {
      std::string outs;
      for (auto t : n.outputs)
        if (t != model::kNone) outs += (outs.empty() ? "" : ", ") + quoted(g.tensors[t].name);
      throw RuntimeError("node " + node_label(n) + (outs.empty() ? "" : " computing " + outs) + ": " + e.what());
    } catch (const std::bad_alloc&) {
      throw RuntimeError("node " + node_label(n) + ": out of memory computing its outputs (" + model::size_string(memory_held()) +
                         " held by tensors)");
    } catch (const std::length_error& e) {
      throw RuntimeError("node " + node_label(n) + ": a buffer is too large (" + e.what() + ")");
    } catch (const std::exception& e) {
      throw RuntimeError("node " + node_label(n) + ": " + e.what());
    }
    // A float result computed for a float16 tensor t goes back to float16.
    auto settle = [&](const Value& tmp, model::TensorId t) {
      const DType want = g.tensors[t].dtype;
      if (tmp.dtype() == DType::Float && (want == DType::Float16 || want == DType::Undefined))
        to_half(tmp, s.values[t], *s.pool);
      else
        s.values[t].assign(tmp.dtype(), tmp.dims(), {tmp.data(), tmp.byte_size()});
    };
    for (size_t k = 0; k < n.outputs.size(); ++k) {
      const auto t = n.outputs[k];
      if (t == model::kNone) continue;
      if (upcast) settle(temps_out[k], t);
      check_output(g, n, t, s.values[t]);
      made_ready(t);
    }
    for (size_t f = 0; f < 2 && !ctx.epilogue_declined(); ++f) {
      if (!fused_out[f]) continue;
      const model::Node& fn = g.nodes[pn.fused[f]];
      if (upcast) settle(*fused_out[f], fn.outputs[0]);
      check_output(g, fn, fn.outputs[0], *fused_dst[f]);
      made_ready(fn.outputs[0]);
    }
    if (s.profile) stats.node_ms[i] = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - node_t0).count();
    ++stats.nodes_run;
  }
  if (!g.nodes.empty()) let_go_after(g.nodes.size() - 1);
  stats.milliseconds = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (!p.unsupported.empty()) {
    std::string list;
    for (const auto& u : p.unsupported)
      list += (list.empty() ? "" : ", ") + model::display_name((u.domain.empty() ? "" : u.domain + ".") + u.op_type, 60) + " x" + std::to_string(u.count);
    throw UnsupportedError(g.source + ": unsupported ops: " + list + " (" + std::to_string(stats.nodes_run) + " nodes ran, " +
                               std::to_string(stats.nodes_skipped) + " skipped)",
                           p.unsupported);
  }
  return stats;
}

const Value* Session::value(model::TensorId id) const {
  if (id >= state_->values.size() || !state_->ready[id]) return nullptr;
  return &state_->values[id];
}

const Value* Session::find(std::string_view name) const { return value(plan_->graph().find(name)); }

std::vector<TensorView> Session::tensors() const {
  const model::Graph& g = plan_->graph();
  std::vector<TensorView> out;
  for (size_t i = 0; i < g.tensors.size(); ++i) {
    if (!state_->ready[i]) continue;
    const model::Tensor& t = g.tensors[i];
    TensorView v;
    v.id = static_cast<model::TensorId>(i);
    v.name = t.name;
    v.kind = t.kind;
    if (t.producer != model::kNone) v.node = g.nodes[t.producer].name;
    v.value = &state_->values[i];
    out.push_back(v);
  }
  return out;
}

}  // namespace nnxr::runtime
