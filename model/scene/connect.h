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
#include <limits>
#include <memory>
#include <mutex>
#include <span>
#include <string_view>
#include <vector>

#include "model/graph.h"
#include "model/scene/scene.h"

namespace nnxr::scene {

// Data a connector derives once per node from the node's inputs and shares between the ranges
// and outputs it is called for: the first call to need it computes it under `once`.
struct NodeMemo {
  std::once_flag once;
  std::vector<float> data;
};

// The values around one node after a run. inputs[i] / outputs[i] follow Node::inputs / outputs;
// an omitted optional tensor, a non-float tensor or one not computed has empty data.
// int_inputs (optional, may be left empty): the contents of int64 inputs, indexed like inputs.
// Connectors that need indices, pads or slice bounds read constant tensors from the graph first,
// then int_inputs; without either they offer nothing (Slice, Pad) or recover the index by value
// (Gather*, Trilu, Where).
struct NodeValues {
  const model::Graph& graph;
  const model::Node& node;
  std::vector<TensorValue> inputs;
  std::vector<TensorValue> outputs;
  std::vector<std::span<const int64_t>> int_inputs = {};
  std::shared_ptr<NodeMemo> memo = std::make_shared<NodeMemo>();  // shared by copies
};

// Keeps, for each output element in [begin, end), the k candidates with the highest score (of
// candidates tied with the k-th, any may be kept). Not thread-safe; one per range.
//
// A full row is unordered with its weakest score and slot cached (threshold() is one load; an
// insert overwrites the weakest entry and rescans k contiguous scores); kept() orders the row on
// demand, ties in the order offered.
class TopK {
 public:
  struct Entry {
    int64_t src = 0;       // element index in the input tensor
    float score = 0;       // >= 0
    float contribution = 0;
    uint32_t input = 0;    // node input slot the source lies in
    uint32_t seq = 0;      // insertion order within the range (ties: the earlier one ranks first)
  };

  TopK(int k, int64_t begin, int64_t end) { reset(k, begin, end); }

  // Starts over for another range, reusing the buffers (no allocation when they are big enough).
  void reset(int k, int64_t begin, int64_t end) {
    k_ = k;
    begin_ = begin;
    end_ = end;
    candidates_ = 0;
    rank_ = nullptr;
    sparse_ = false;
    const size_t rows = size_t(end - begin);
    if (entries_.size() < rows * size_t(k)) entries_.resize(rows * size_t(k));
    size_.assign(rows, 0);
    if (scores_.size() < rows * size_t(k)) scores_.resize(rows * size_t(k));
    if (floor_.size() < rows) floor_.resize(rows), weak_.resize(rows);
    seq_ = 0;
  }

  // Restricts scoring to the outputs with rank[out] < resident (rank indexed by output element):
  // the others are not resident, so their candidates are counted but need not be scored.
  // threshold() is +inf for them and offer() drops them; per-output connector loops skip them
  // after counting. `sparse`: at most a quarter of the range is wanted, so a per-output path beats
  // a bulk one.
  void want_only(const uint32_t* rank, uint32_t resident, bool sparse) {
    rank_ = rank;
    resident_ = resident;
    sparse_ = sparse;
  }
  bool wanted(int64_t out) const { return !rank_ || rank_[out] < resident_; }
  bool sparse() const { return sparse_; }

  int k() const { return k_; }
  int64_t begin() const { return begin_; }
  int64_t end() const { return end_; }
  uint64_t candidates() const { return candidates_; }
  // Counts candidates enumerated in bulk by a connector that skipped offering hopeless ones.
  void count(uint64_t n) { candidates_ += n; }

  // Offers one candidate of output element `out` (begin <= out < end). A NaN score is counted
  // but never kept.
  void offer(int64_t out, uint32_t input, int64_t src, float score, float contribution) {
    ++candidates_;
    if (!(score >= 0) || !wanted(out)) return;
    insert(out, input, src, score, contribution);
  }

  // The score a candidate of `out` must exceed to be kept: the weakest kept score once k are
  // kept, -1 before. Connectors that enumerate in bulk compare against it, call insert() for the
  // few that pass and count() for all.
  float threshold(int64_t out) const {
    if (!wanted(out)) return std::numeric_limits<float>::infinity();
    const size_t row = size_t(out - begin_);
    return size_[row] == k_ ? floor_[row] : -1.f;
  }

  // offer() without counting the candidate; the caller counts it with count().
  void insert(int64_t out, uint32_t input, int64_t src, float score, float contribution) {
    const size_t row = size_t(out - begin_);
    Entry* e = &entries_[row * size_t(k_)];
    float* s = &scores_[row * size_t(k_)];
    uint8_t& n = size_[row];
    int at = n;
    if (n < k_) {
      ++n;
    } else {
      if (score <= floor_[row]) return;
      at = weak_[row];
    }
    e[at] = {src, score, contribution, input, seq_++};
    s[at] = score;
    if (n == k_) {  // find the weakest: branch-free over k contiguous scores
      int w = 0;
      float m = s[0];
      for (int i = 1; i < k_; ++i) {
        w = s[i] < m ? i : w;
        m = std::min(m, s[i]);
      }
      weak_[row] = uint8_t(w);
      floor_[row] = m;
    }
  }

  // The kept candidates of `out` in no particular order (deterministic for a given offer order).
  std::span<const Entry> kept_unordered(int64_t out) const {
    const size_t row = size_t(out - begin_);
    return {&entries_[row * size_t(k_)], size_[row]};
  }

  // The kept candidates of `out`, strongest first (ties: offered first). Orders the row.
  std::span<const Entry> kept(int64_t out) const {
    const size_t row = size_t(out - begin_);
    Entry* e = &entries_[row * size_t(k_)];
    for (int i = 1; i < size_[row]; ++i) {
      const Entry x = e[i];
      int j = i;
      for (; j > 0 && ranks_before(x, e[j - 1]); --j) e[j] = e[j - 1];
      e[j] = x;
    }
    return {e, size_[row]};
  }

 private:
  static bool ranks_before(const Entry& a, const Entry& b) { return a.score > b.score || (a.score == b.score && a.seq < b.seq); }

  int k_ = 0;
  int64_t begin_ = 0, end_ = 0;
  uint64_t candidates_ = 0;
  mutable std::vector<Entry> entries_;  // k per row; kept() orders a row in place
  std::vector<uint8_t> size_;
  std::vector<float> scores_;   // k per row: the entries' scores, contiguous for the weakest-scan
  std::vector<float> floor_;    // per full row: its weakest score
  std::vector<uint8_t> weak_;   // per full row: the slot of its weakest entry
  uint32_t seq_ = 0;          // wraps after 2^32 inserts: only the order of exact ties changes
  const uint32_t* rank_ = nullptr;
  uint32_t resident_ = 0;
  bool sparse_ = false;
};

// Offers the candidates of output `output` (slot in Node::outputs), elements [top.begin(),
// top.end()). Must not throw for any graph the runtime ran.
using ConnectFn = void (*)(const NodeValues& values, uint32_t output, TopK& top);

// The connector for an op, or nullptr when the op has no connection semantics (its outputs then
// have no incoming connections; `nnxr inspect --scene` lists such ops).
ConnectFn find_connector(std::string_view domain, std::string_view op_type);

// Ops of the "" domain that have a kernel but deliberately no connector, because no output
// element stems from particular input elements (Shape, Range, ...) or because no output is ever
// float32 (comparisons, logic). Every op runtime::supported_ops() lists is either here or has a
// connector (tests check it).
std::span<const std::string_view> ops_without_connector();

}  // namespace nnxr::scene
