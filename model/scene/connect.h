// Internal to model/scene: the candidate incoming connections of a node's output elements, from
// the op's semantics, offered to a per-element top-K.
//
// One connector function per op type (connect_*.cpp). Scene::build() calls it for one output of a
// node and a range of output elements at a time (ranges are independent, so build() may run them
// on several threads); the connector offers every candidate of every element in the range:
// score |w·a| where a weight exists, |a| otherwise; contribution w·a (or a), signed.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string_view>
#include <vector>

#include "model/graph.h"
#include "model/scene/scene.h"

namespace nnxr::scene {

// The values around one node after a run. inputs[i] / outputs[i] follow Node::inputs / outputs;
// an omitted optional tensor, a non-float tensor or one not computed has empty data.
struct NodeValues {
  const model::Graph& graph;
  const model::Node& node;
  std::vector<TensorValue> inputs;
  std::vector<TensorValue> outputs;
};

// Keeps, for each output element in [begin, end), the k candidates with the highest score.
// Not thread-safe; one per range.
class TopK {
 public:
  struct Entry {
    int64_t src = 0;       // element index in the input tensor
    float score = 0;       // >= 0
    float contribution = 0;
    uint32_t input = 0;    // node input slot the source lies in
  };

  TopK(int k, int64_t begin, int64_t end)
      : k_(k), begin_(begin), end_(end), entries_(size_t(end - begin) * size_t(k)), size_(size_t(end - begin), 0) {}

  int k() const { return k_; }
  int64_t begin() const { return begin_; }
  int64_t end() const { return end_; }
  uint64_t candidates() const { return candidates_; }
  // Counts candidates enumerated in bulk by a connector that skipped offering hopeless ones.
  void count(uint64_t n) { candidates_ += n; }

  // Offers one candidate of output element `out` (begin <= out < end).
  void offer(int64_t out, uint32_t input, int64_t src, float score, float contribution) {
    ++candidates_;
    const size_t row = size_t(out - begin_);
    Entry* e = &entries_[row * size_t(k_)];
    uint8_t& n = size_[row];
    if (n == k_) {
      if (score <= e[k_ - 1].score) return;  // entries are kept sorted, weakest last
      n = uint8_t(k_ - 1);
    }
    int i = n++;
    while (i > 0 && e[i - 1].score < score) {
      e[i] = e[i - 1];
      --i;
    }
    e[i] = {src, score, contribution, input};
  }

  // The kept candidates of `out`, strongest first.
  std::span<const Entry> kept(int64_t out) const {
    const size_t row = size_t(out - begin_);
    return {&entries_[row * size_t(k_)], size_[row]};
  }

 private:
  int k_;
  int64_t begin_, end_;
  uint64_t candidates_ = 0;
  std::vector<Entry> entries_;
  std::vector<uint8_t> size_;
};

// Offers the candidates of output `output` (slot in Node::outputs), elements [top.begin(),
// top.end()). Must not throw for any graph the runtime ran.
using ConnectFn = void (*)(const NodeValues& values, uint32_t output, TopK& top);

// The connector for an op, or nullptr when the op has no connection semantics (its outputs then
// have no incoming connections; `nnxr inspect --scene` lists such ops).
ConnectFn find_connector(std::string_view domain, std::string_view op_type);

}  // namespace nnxr::scene
