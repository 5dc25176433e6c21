// Scene::trace(): what fed a neuron and what it feeds, from the kept connections.
//
// No reverse index is kept: each step scans the connection segments it touches once (the
// frontier's own segments going back, their consumers' segments going forward). Segments are
// sorted by |contribution|, so the first `fan` connections met per neuron are its strongest.
// Cost per step: O(connections of the touched segments + frontier · log frontier); memory:
// O(frontier).
#include <algorithm>
#include <map>
#include <unordered_set>

#include "model/scene/scene_impl.h"

namespace nnxr::scene {

Trace Scene::trace(uint32_t index, int back, int forward, int fan) const {
  const Impl& im = *impl_;
  Trace t;
  t.selected = neuron(index);
  const size_t seg = size_t(im.segment_of[t.selected.tensor]);
  const SegmentData& sd = im.data[seg];
  t.tensor_name = sd.tensor_name;
  t.node_name = sd.node_name;
  t.op_type = sd.op_type;
  t.index.assign(sd.shape.size(), 0);
  for (int64_t e = t.selected.element, d = int64_t(sd.shape.size()) - 1; d >= 0; --d) {
    const int64_t dim = std::max<int64_t>(sd.shape[size_t(d)], 1);
    t.index[size_t(d)] = e % dim;
    e /= dim;
  }
  t.neurons.push_back(index);
  if (fan <= 0) return t;
  std::unordered_set<uint32_t> seen_neurons{index};
  std::unordered_set<uint32_t> seen_connections;
  auto add_connection = [&](uint32_t c, uint32_t other, std::vector<uint32_t>& next) {
    if (seen_connections.insert(c).second) t.connections.push_back(c);
    if (seen_neurons.insert(other).second) {
      t.neurons.push_back(other);
      next.push_back(other);
    }
  };

  // Back: the strongest incoming connections of each frontier neuron, in its own segment.
  std::vector<uint32_t> frontier{index};
  for (int step = 0; step < back && !frontier.empty(); ++step) {
    std::map<size_t, std::vector<uint32_t>> by_segment;  // segment -> destination ranks
    for (uint32_t n : frontier) {
      const size_t s = im.segment_of_neuron(n);
      by_segment[s].push_back(n - im.segments[s].neuron_first);
    }
    std::vector<uint32_t> next;
    for (auto& [s, dsts] : by_segment) {
      std::sort(dsts.begin(), dsts.end());
      std::vector<int> taken(dsts.size(), 0);
      size_t open = dsts.size();
      const Segment& g = im.segments[s];
      const Connection* conns = im.data[s].connections.data();  // the segment's, from connection_first
      for (uint32_t c = g.connection_first; c < g.connection_first + g.connection_count && open > 0; ++c) {
        const Connection& conn = conns[c - g.connection_first];
        const auto it = std::lower_bound(dsts.begin(), dsts.end(), conn.packed & 0xFFFFFFu);
        if (it == dsts.end() || *it != (conn.packed & 0xFFFFFFu)) continue;
        int& n = taken[size_t(it - dsts.begin())];
        if (n == fan) continue;
        if (++n == fan) --open;
        add_connection(c, conn.src, next);
      }
    }
    frontier = std::move(next);
  }

  // Forward: the strongest outgoing connections of each frontier neuron, in the segments of the
  // tensors computed from its tensor.
  frontier = {index};
  for (int step = 0; step < forward && !frontier.empty(); ++step) {
    std::sort(frontier.begin(), frontier.end());
    std::vector<int> taken(frontier.size(), 0);
    std::vector<uint32_t> consumers;
    for (uint32_t n : frontier)
      for (uint32_t c : im.data[im.segment_of_neuron(n)].consumers)
        if (std::find(consumers.begin(), consumers.end(), c) == consumers.end()) consumers.push_back(c);
    std::sort(consumers.begin(), consumers.end());
    std::vector<uint32_t> next;
    for (uint32_t s : consumers) {
      const Segment& g = im.segments[s];
      const Connection* conns = im.data[s].connections.data();  // the segment's, from connection_first
      for (uint32_t c = g.connection_first; c < g.connection_first + g.connection_count; ++c) {
        const Connection& conn = conns[c - g.connection_first];
        const auto it = std::lower_bound(frontier.begin(), frontier.end(), conn.src);
        if (it == frontier.end() || *it != conn.src) continue;
        int& n = taken[size_t(it - frontier.begin())];
        if (n == fan) continue;
        ++n;
        add_connection(c, g.neuron_first + (conn.packed & 0xFFFFFFu), next);
      }
    }
    frontier = std::move(next);
  }
  return t;
}

std::vector<model::TensorId> upstream_tensors(const model::Graph& graph, const Layout& layout, model::TensorId tensor) {
  std::vector<model::TensorId> out;
  if (tensor >= graph.tensors.size()) return out;
  std::vector<char> seen(graph.tensors.size(), 0);
  std::vector<model::TensorId> stack{tensor};
  seen[tensor] = 1;
  while (!stack.empty()) {
    const model::TensorId t = stack.back();
    stack.pop_back();
    if (t != tensor && layout.block(t)) out.push_back(t);
    const model::NodeId p = graph.tensors[t].producer;
    if (p == model::kNone) continue;
    for (model::TensorId in : graph.nodes[p].inputs)
      if (in != model::kNone && in < seen.size() && !seen[in]) {
        seen[in] = 1;
        stack.push_back(in);
      }
  }
  std::sort(out.begin(), out.end(), [&](model::TensorId a, model::TensorId b) {
    const int la = layout.block(a)->layer, lb = layout.block(b)->layer;
    return la != lb ? la < lb : a < b;
  });
  if (layout.block(tensor)) out.insert(out.begin(), tensor);
  return out;
}

}  // namespace nnxr::scene
