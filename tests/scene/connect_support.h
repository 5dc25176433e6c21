// Test support for the connectors: runs a small model given as ONNX text on random inputs and
// compares a connector's top-K with a brute-force enumeration of every candidate.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "model/load.h"
#include "model/runtime/runtime.h"
#include "model/runtime/value.h"
#include "model/scene/connect.h"

namespace nnxr::scene::test {

using Dims = std::vector<int64_t>;

inline std::string model_text(std::string_view signature_and_body, int opset = 13) {
  return "<ir_version: 8, opset_import: [\"\" : " + std::to_string(opset) + "]> g " + std::string(signature_and_body);
}

// "float[2,3] name = {...}" with values from a fixed seed (for initializers).
inline std::string init(std::string_view name, const Dims& shape, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1.f, 1.f);
  int64_t n = 1;
  std::string s = "float[";
  for (size_t i = 0; i < shape.size(); ++i) {
    s += (i ? "," : "") + std::to_string(shape[i]);
    n *= shape[i];
  }
  s += "] " + std::string(name) + " = {";
  for (int64_t i = 0; i < n; ++i) s += (i ? ", " : "") + std::to_string(d(rng));
  return s + "}";
}

// A run of a model: float graph inputs get random values (seeded), int64 inputs the given ones.
class Fixture {
 public:
  explicit Fixture(std::string_view text, std::map<std::string, std::vector<int64_t>> ints = {}, uint32_t seed = 1)
      : plan_(runtime::Plan::build(model::load_model_from_text(text))), session_(plan_) {
    const model::Graph& g = plan_->graph();
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> d(-2.f, 2.f);
    for (model::TensorId id : g.inputs) {
      const model::Tensor& t = g.tensors[id];
      if (t.dtype == model::DType::Float) {
        std::vector<float> v(size_t(t.elements().value_or(0)));
        for (float& x : v) x = d(rng);
        session_.set_input(t.name, t.dtype, t.shape, std::as_bytes(std::span(v)));
      } else {
        const auto& v = ints.at(t.name);
        Dims shape = t.shape;
        session_.set_input(t.name, model::DType::Int64, shape, std::as_bytes(std::span(v)));
      }
    }
    session_.run();
  }

  const model::Graph& graph() const { return plan_->graph(); }

  TensorValue value(model::TensorId id) const {
    const runtime::Value* v = session_.value(id);
    if (!v) return {};
    TensorValue t{v->shape(), {}};
    if (v->dtype() == model::DType::Float) t.data = v->as<float>();
    return t;
  }
  std::span<const int64_t> ints(model::TensorId id) const {
    const runtime::Value* v = session_.value(id);
    if (!v || v->dtype() != model::DType::Int64) return {};
    return v->as<int64_t>();
  }

  // The node producing `tensor`, and the output slot.
  std::pair<const model::Node*, uint32_t> producer(std::string_view tensor) const {
    const model::Graph& g = graph();
    const model::TensorId id = g.find(tensor);
    if (id == model::kNone || g.tensors[id].producer == model::kNone) return {nullptr, 0};
    const model::Node& n = g.nodes[g.tensors[id].producer];
    for (uint32_t i = 0; i < n.outputs.size(); ++i)
      if (n.outputs[i] == id) return {&n, i};
    return {nullptr, 0};
  }

  NodeValues node_values(const model::Node& n, bool with_ints = false) const {
    NodeValues nv{graph(), n, {}, {}};
    for (model::TensorId id : n.inputs) {
      nv.inputs.push_back(id == model::kNone ? TensorValue{} : value(id));
      if (with_ints) nv.int_inputs.push_back(id == model::kNone ? std::span<const int64_t>{} : ints(id));
    }
    for (model::TensorId id : n.outputs) nv.outputs.push_back(id == model::kNone ? TensorValue{} : value(id));
    return nv;
  }

  const float* data(std::string_view tensor) const { return value(graph().find(tensor)).data.data(); }
  Dims shape(std::string_view tensor) const {
    const auto s = value(graph().find(tensor)).shape;
    return {s.begin(), s.end()};
  }

 private:
  std::shared_ptr<const runtime::Plan> plan_;
  runtime::Session session_;
};

struct Cand {
  uint32_t input;
  int64_t src;
  float contribution;
};
// Appends every candidate of output element `out`.
using Brute = std::function<void(int64_t out, std::vector<Cand>& cands)>;

inline Dims unravel(int64_t flat, const Dims& shape) {
  Dims idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = flat % shape[d];
    flat /= shape[d];
  }
  return idx;
}
inline int64_t ravel(const Dims& idx, const Dims& shape) {
  int64_t f = 0;
  for (size_t d = 0; d < shape.size(); ++d) f = f * shape[d] + idx[d];
  return f;
}
inline int64_t count(const Dims& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

inline bool close(float a, float b) { return a == b || std::fabs(a - b) <= 1e-6f * std::max(std::fabs(a), std::fabs(b)); }

// Runs the connector of the node producing `tensor` over its elements in a few ranges and
// compares each element's kept set with the brute-force top-k, and the candidate count.
inline void check(const Fixture& f, std::string_view tensor, const Brute& brute, int k = 4, bool with_ints = false) {
  const auto [node, slot] = f.producer(tensor);
  ASSERT_NE(node, nullptr) << tensor;
  const ConnectFn fn = find_connector(node->domain, node->op_type);
  ASSERT_NE(fn, nullptr) << node->op_type;
  const NodeValues nv = f.node_values(*node, with_ints);
  const int64_t n = count(f.shape(tensor));
  ASSERT_GT(n, 0);
  const int64_t cuts[] = {0, n / 3, std::min(n, n / 3 + 1), n};
  uint64_t got_candidates = 0, want_candidates = 0;
  int64_t with_sources = 0;
  std::vector<Cand> cands;
  for (int part = 0; part < 3; ++part) {
    if (cuts[part] >= cuts[part + 1]) continue;
    TopK top(k, cuts[part], cuts[part + 1]);
    fn(nv, slot, top);
    got_candidates += top.candidates();
    for (int64_t out = cuts[part]; out < cuts[part + 1]; ++out) {
      cands.clear();
      brute(out, cands);
      want_candidates += cands.size();
      std::vector<Cand> sorted = cands;
      std::stable_sort(sorted.begin(), sorted.end(), [](const Cand& a, const Cand& b) { return std::fabs(a.contribution) > std::fabs(b.contribution); });
      const auto kept = top.kept(out);
      const size_t want_n = std::min(sorted.size(), size_t(k));
      ASSERT_EQ(kept.size(), want_n) << node->op_type << " output " << out;
      if (want_n) ++with_sources;
      for (size_t i = 0; i < kept.size(); ++i) {
        const float ref = std::fabs(sorted[i].contribution);
        EXPECT_TRUE(close(kept[i].score, ref)) << node->op_type << " output " << out << " rank " << i << ": score " << kept[i].score << ", want " << ref;
        // The kept entry is a real candidate with that score and contribution.
        const auto it = std::find_if(cands.begin(), cands.end(), [&](const Cand& c) { return c.input == kept[i].input && c.src == kept[i].src; });
        ASSERT_NE(it, cands.end()) << node->op_type << " output " << out << ": (input " << kept[i].input << ", src " << kept[i].src << ") is not a candidate";
        EXPECT_TRUE(close(kept[i].contribution, it->contribution)) << node->op_type << " output " << out << " src " << kept[i].src;
        EXPECT_TRUE(close(kept[i].score, std::fabs(it->contribution)));
      }
      // Every candidate strictly stronger than the k-th must be kept (ties may go either way).
      if (want_n == size_t(k))
        for (const Cand& c : sorted) {
          if (!(std::fabs(c.contribution) > std::fabs(sorted[size_t(k) - 1].contribution) * (1 + 1e-6f))) break;
          const bool found = std::any_of(kept.begin(), kept.end(), [&](const TopK::Entry& e) { return e.input == c.input && e.src == c.src; });
          EXPECT_TRUE(found) << node->op_type << " output " << out << ": missing (input " << c.input << ", src " << c.src << ")";
        }
    }
  }
  EXPECT_EQ(got_candidates, want_candidates) << node->op_type;
  EXPECT_GT(with_sources, 0) << node->op_type << ": no output has a source";

  // Restricted to resident outputs (TopK::want_only), sparse (1 in 7) and dense (1 in 2): the
  // wanted outputs keep exactly what they keep unrestricted, the others nothing, and the
  // candidate count stays that of every output.
  TopK full(k, 0, n);
  fn(nv, slot, full);
  for (const uint32_t every : {7u, 2u}) {
    std::vector<uint32_t> rank(static_cast<size_t>(n));
    uint32_t resident = 0;
    for (int64_t out = 0; out < n; ++out) rank[size_t(out)] = (out % every == 1) ? resident++ : uint32_t(n);
    TopK top(k, 0, n);
    top.want_only(rank.data(), resident, every > 4);
    fn(nv, slot, top);
    EXPECT_EQ(top.candidates(), full.candidates()) << node->op_type << ", 1 in " << every << " resident";
    for (int64_t out = 0; out < n; ++out) {
      const auto kept = top.kept(out), want = full.kept(out);
      if (rank[size_t(out)] >= resident) {
        EXPECT_TRUE(kept.empty()) << node->op_type << " output " << out << " is not resident but kept " << kept.size();
        continue;
      }
      ASSERT_EQ(kept.size(), want.size()) << node->op_type << " output " << out << ", 1 in " << every << " resident";
      for (size_t i = 0; i < kept.size(); ++i)
        EXPECT_TRUE(kept[i].src == want[i].src && kept[i].input == want[i].input && close(kept[i].score, want[i].score))
            << node->op_type << " output " << out << " rank " << i << ", 1 in " << every << " resident";
    }
  }
}

}  // namespace nnxr::scene::test
