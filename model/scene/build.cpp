// Scene::build(): rank neurons, score candidate connections through the connectors, fit the
// budget, sort each segment and write it into the sink.
//
// Budget policy (elements = neurons + connections <= SceneOptions::budget):
//   1. Neurons first. Connections can need at most top_k per neuron of a tensor whose op has a
//      connector (C_max). Neurons get min(all, max(budget/2, budget - C_max)): every neuron when
//      the budget allows, and never less than half of the budget while connections compete.
//   2. When neurons must be cut, every tensor keeps the same fraction of its neurons, its strongest
//      by |activation| (per tensor, because activation scales differ by orders of magnitude
//      between layers; largest remainders settle the rounding).
//   3. A kept connection needs both its neurons resident; the others are dropped before counting.
//      The remaining budget goes to connections the same way: each tensor keeps the same fraction
//      of its candidates-after-top-K, its strongest by |contribution|.
// Cost: neurons and connections are ordered by stable LSD radix sorts (O(n) per segment, segments
// in parallel); the budget cut is a prefix of those orders, so nothing is O(total log total).
// Memory: connections kept by top-K with both ends resident (8 bytes each, before the connection
// budget) wait in their segment's connection array, which the sort then overwrites with the
// resident ones and the scene keeps (the sort writes into a scratch array and exchanges it with
// the segment's). Transient: 1 byte per scored output, one sort buffer per thread (8 bytes per
// resident connection of the largest segment it sorts) and one TopK buffer per thread
// (chunk · k · 24 bytes).
#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstring>
#include <map>
#include <mutex>
#include <numeric>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <utility>

#include "model/scene/build.h"
#include "model/scene/parallel.h"
#include "model/scene/radix.h"
#include "model/scene/scene_impl.h"

namespace nnxr::scene {

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

constexpr int64_t kChunk = 8192;  // output elements per scoring task

// A kept connection before encoding: global source neuron and contribution. Its destination is
// implicit: the task's counts say how many of its entries belong to each output element.
struct Pending {
  uint32_t src;
  float contribution;
};
// Pending entries wait in the segment's connection array (bit copies).
static_assert(sizeof(Pending) == sizeof(Connection) && std::is_trivially_copyable_v<Pending>);

struct Task {
  size_t segment;
  int64_t begin, end;
  uint64_t counts_first;  // where the task's counts start in the build's count array
};

struct TaskResult {
  size_t kept_first = 0;  // where the task's kept connections start in its segment's array
  size_t kept_size = 0;   // in output element order
  uint64_t candidates = 0;
  float max_abs = 0;  // max |contribution| of kept
};

// Splits `budget` over `counts` in proportion, each share <= its count, the sum == min(budget,
// total); largest fractional remainders (then lower index) get the units left by rounding down.
std::vector<uint64_t> apportion(const std::vector<uint64_t>& counts, uint64_t budget) {
  const uint64_t total = std::accumulate(counts.begin(), counts.end(), uint64_t{0});
  if (total <= budget) return counts;
  std::vector<uint64_t> share(counts.size());
  std::vector<std::pair<double, size_t>> rest;
  uint64_t given = 0;
  const long double ratio = static_cast<long double>(budget) / static_cast<long double>(total);
  for (size_t i = 0; i < counts.size(); ++i) {
    const long double exact = static_cast<long double>(counts[i]) * ratio;
    share[i] = std::min<uint64_t>(counts[i], uint64_t(std::floor(exact)));
    given += share[i];
    rest.push_back({double(exact - static_cast<long double>(share[i])), i});
  }
  std::stable_sort(rest.begin(), rest.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  for (size_t j = 0; given < budget && j < rest.size(); ++j)
    if (share[rest[j].second] < counts[rest[j].second]) ++share[rest[j].second], ++given;
  for (size_t i = counts.size(); given > budget && i-- > 0;)  // rounding overshoot (never in practice)
    while (given > budget && share[i] > 0) --share[i], --given;
  return share;
}

// Scratch buffers handed from one parallel item to the next (at most one per thread at a time),
// so that a build faults its scratch memory in once rather than once per segment.
template <class T>
class ScratchPool {
 public:
  T take() {
    std::lock_guard lock(mutex_);
    if (free_.empty()) return T{};
    T t = std::move(free_.back());
    free_.pop_back();
    return t;
  }
  void give(T&& t) {
    std::lock_guard lock(mutex_);
    free_.push_back(std::move(t));
  }

 private:
  std::mutex mutex_;
  std::vector<T> free_;
};

}  // namespace

bool far_side_input(const model::Graph& graph, const Layout& layout, model::TensorId source, const model::Node& consumer) {
  if (source >= graph.tensors.size()) return false;
  // The layers of the source's consumers that lay something out (a Shape or a comparison draws no
  // line), nearest first.
  std::vector<int> layers;
  for (model::NodeId c : graph.tensors[source].consumers) {
    if (c >= graph.nodes.size()) continue;
    const model::Node& n = graph.nodes[c];
    if (std::any_of(n.outputs.begin(), n.outputs.end(), [&](model::TensorId o) { return o != model::kNone && layout.block(o); }))
      layers.push_back(n.layer);
  }
  if (layers.empty()) return false;
  const int nearest = *std::min_element(layers.begin(), layers.end());
  const auto far = std::count_if(layers.begin(), layers.end(), [&](int l) { return l > nearest + kSideInputReach; });
  return far > kSideInputFarConsumers && consumer.layer > nearest + kSideInputReach;
}

namespace {

// Segment indices, largest work first, for balanced parallel loops.
std::vector<size_t> by_size(const std::vector<uint64_t>& sizes) {
  std::vector<size_t> idx(sizes.size());
  std::iota(idx.begin(), idx.end(), size_t{0});
  std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return sizes[a] > sizes[b]; });
  return idx;
}

}  // namespace

Scene Scene::build(const model::Graph& graph, const Layout& layout, const Activations& values, const SceneOptions& options,
                   SceneSink& sink) {
  return SceneBuilder::build(graph, layout, values, options, sink, &find_connector);
}

Scene SceneBuilder::build(const model::Graph& graph, const Layout& layout, const Activations& values,
                          const SceneOptions& options, SceneSink& sink, ConnectorLookup lookup) {
  const auto start = Clock::now();
  Scene scene;
  Scene::Impl& im = *scene.impl_;
  BuildStats& st = im.stats;
  st.layout_ms = layout.build_ms();
  const int k = std::clamp(options.top_k, 1, 16);
  const int threads = std::clamp(options.threads, 1, 256);
  auto progress = [&](float p) {
    if (options.progress) options.progress(std::clamp(p, 0.f, 1.f));
  };
  progress(0);

  // ---- the focus: its tensors, and those feeding them ----------------------------------------
  std::vector<uint8_t> focus;  // by tensor: 0 out, 1 a source of the focus, 2 in the focus
  if (!options.focus.empty()) {
    focus.assign(graph.tensors.size(), 0);
    for (const std::string& name : options.focus) {
      const auto it = std::find_if(graph.tensors.begin(), graph.tensors.end(),
                                   [&](const model::Tensor& t) { return t.name == name; });
      if (it == graph.tensors.end()) throw std::invalid_argument("no tensor named '" + name + "' to focus on");
      const auto id = model::TensorId(it - graph.tensors.begin());
      focus[id] = 2;
      if (it->producer != model::kNone && it->producer < graph.nodes.size())
        for (model::TensorId in : graph.nodes[it->producer].inputs)
          if (in != model::kNone && in < focus.size()) focus[in] = std::max<uint8_t>(focus[in], 1);
    }
  }

  // ---- segments: one per laid-out tensor with values ------------------------------------------
  im.segment_of.assign(graph.tensors.size(), -1);
  for (const Block& b : layout.blocks()) {
    if (b.tensor >= graph.tensors.size() || b.tensor >= values.size()) continue;
    if (!focus.empty() && focus[b.tensor] == 0) continue;
    const model::Tensor& t = graph.tensors[b.tensor];
    const TensorValue& v = values[b.tensor];
    if (v.data.empty()) continue;
    const auto n = int64_t(v.data.size());
    if (b.elements != n) {
      st.warnings.push_back("tensor '" + t.name + "': " + std::to_string(n) + " values do not match the " +
                            std::to_string(b.elements) + " laid out; not shown");
      continue;
    }
    if (uint64_t(n) > std::numeric_limits<uint32_t>::max()) {
      st.warnings.push_back("tensor '" + t.name + "': " + std::to_string(n) + " elements are too many to index; not shown");
      continue;
    }
    Segment s;
    s.tensor = b.tensor;
    s.layer = b.layer;
    s.neuron_total = n;
    if (n > int64_t(kMaxSegmentNeurons) && !(options.points_per_tensor && options.points_per_tensor <= kMaxSegmentNeurons))
      st.warnings.push_back("tensor '" + t.name + "': " + std::to_string(n) + " neurons, only the strongest " +
                            std::to_string(kMaxSegmentNeurons) + " can be shown");
    SegmentData d;
    d.tensor_name = t.name;
    if (t.producer != model::kNone && t.producer < graph.nodes.size()) {
      d.node_name = graph.nodes[t.producer].name;
      d.op_type = graph.nodes[t.producer].op_type;
    }
    d.shape.assign(v.shape.begin(), v.shape.end());
    im.segment_of[b.tensor] = int32_t(im.segments.size());
    im.segments.push_back(s);
    im.data.push_back(std::move(d));
  }
  const size_t S = im.segments.size();
  for (size_t i = 0; i < S; ++i) {
    const model::Tensor& t = graph.tensors[im.segments[i].tensor];
    for (model::NodeId c : t.consumers) {
      if (c >= graph.nodes.size()) continue;
      for (model::TensorId out : graph.nodes[c].outputs)
        if (out != model::kNone && out < im.segment_of.size() && im.segment_of[out] >= 0) {
          auto& list = im.data[i].consumers;
          if (std::find(list.begin(), list.end(), uint32_t(im.segment_of[out])) == list.end())
            list.push_back(uint32_t(im.segment_of[out]));
        }
    }
  }

  for (size_t i = 0; i < S; ++i) {
    const model::Tensor& t = graph.tensors[im.segments[i].tensor];
    im.data[i].side_input = std::any_of(t.consumers.begin(), t.consumers.end(), [&](model::NodeId c) {
      return c < graph.nodes.size() && far_side_input(graph, layout, im.segments[i].tensor, graph.nodes[c]);
    });
  }

  // Which segments get connections, and from which node output.
  struct Source {
    const model::Node* node = nullptr;
    uint32_t output = 0;
    ConnectFn fn = nullptr;
  };
  std::vector<Source> sources(S);
  std::map<std::string, int> unconnected;
  for (size_t i = 0; i < S; ++i) {
    const model::Tensor& t = graph.tensors[im.segments[i].tensor];
    if (t.producer == model::kNone || t.producer >= graph.nodes.size()) continue;
    if (!focus.empty() && focus[im.segments[i].tensor] != 2) continue;  // a source only
    const model::Node& node = graph.nodes[t.producer];
    const ConnectFn fn = lookup ? lookup(node.domain, node.op_type) : nullptr;
    if (!fn) {
      ++unconnected[node.domain.empty() ? node.op_type : node.domain + "." + node.op_type];
      continue;
    }
    const auto it = std::find(node.outputs.begin(), node.outputs.end(), im.segments[i].tensor);
    sources[i] = {&node, uint32_t(it - node.outputs.begin()), fn};
  }
  st.unconnected_ops.assign(unconnected.begin(), unconnected.end());

  // ---- neurons: the neuron budget, then rank by |value| ---------------------------------------
  // The budget needs only the tensor sizes; each segment then orders just its resident neurons:
  // a histogram of the top 16 key bits finds the bin holding the last resident one, and only the
  // elements up to that bin are sorted (all of them when everything fits).
  auto t0 = Clock::now();
  uint64_t neuron_cap = 0, connection_max = 0;
  std::vector<uint64_t> caps(S);
  for (size_t i = 0; i < S; ++i) {
    caps[i] = std::min<uint64_t>(uint64_t(im.segments[i].neuron_total), kMaxSegmentNeurons);
    if (options.points_per_tensor) caps[i] = std::min(caps[i], options.points_per_tensor);
    neuron_cap += caps[i];
    st.neurons_total += uint64_t(im.segments[i].neuron_total);
    if (sources[i].fn)
      connection_max += options.connections_per_tensor ? std::min(uint64_t(k) * caps[i], options.connections_per_tensor)
                                                       : uint64_t(k) * caps[i];
  }
  const uint64_t budget = options.budget;
  const uint64_t neuron_budget =
      std::min(neuron_cap, std::max(budget / 2, budget - std::min(budget, connection_max)));
  const auto resident = apportion(caps, neuron_budget);
  {
    std::vector<uint64_t> sizes(S);
    for (size_t i = 0; i < S; ++i) sizes[i] = uint64_t(im.segments[i].neuron_total);
    const auto order = by_size(sizes);
    struct SortScratch {
      std::vector<uint64_t> a, tmp;
    };
    ScratchPool<SortScratch> scratch;
    parallel_for(S, threads, [&](size_t j) {
      const size_t i = order[j];
      const auto data = values[im.segments[i].tensor].data;
      const size_t n = data.size(), keep = std::min<size_t>(n, resident[i]);
      // key: ~|value| bits (descending |value|, NaN last), payload: element (ties stay in element
      // order, the sort being stable).
      auto key_of = [&](size_t e) {
        const float x = data[e];
        const uint32_t abs_bits = std::isnan(x) ? 0u : (std::bit_cast<uint32_t>(x) & 0x7FFFFFFFu);
        return ~abs_bits;
      };
      uint32_t last_bin = 0xFFFF;  // elements whose key's top 16 bits are <= last_bin are sorted
      if (keep < n) {
        std::vector<uint32_t> hist(65536, 0);
        for (size_t e = 0; e < n; ++e) ++hist[key_of(e) >> 16];
        size_t sum = 0;
        for (last_bin = 0; last_bin < 0xFFFF && sum + hist[last_bin] < keep; ++last_bin) sum += hist[last_bin];
      }
      SortScratch sc = scratch.take();
      std::vector<uint64_t>& a = sc.a;
      a.clear();
      for (size_t e = 0; e < n; ++e) {
        const uint32_t key = key_of(e);
        if ((key >> 16) <= last_bin) a.push_back((uint64_t(key) << 32) | e);
      }
      radix_sort(a, sc.tmp, [](uint64_t x) { return x >> 32; }, 32, keep);
      SegmentData& d = im.data[i];
      float lo = INFINITY, hi = -INFINITY;
      for (float x : data)
        if (std::isfinite(x)) lo = std::min(lo, x), hi = std::max(hi, x);
      im.segments[i].value_min = lo <= hi ? lo : 0;
      im.segments[i].value_max = lo <= hi ? hi : 0;
      d.rank.assign(n, std::numeric_limits<uint32_t>::max());  // not resident
      d.order.resize(keep);
      d.values.resize(keep);
      for (size_t r = 0; r < keep; ++r) {
        const auto e = uint32_t(a[r]);
        d.order[r] = e;
        d.values[r] = data[e];
        d.rank[e] = uint32_t(r);
      }
      scratch.give(std::move(sc));
    });
  }
  progress(0.1f);
  uint64_t neuron_count = 0;
  for (size_t i = 0; i < S; ++i) {
    Segment& s = im.segments[i];
    s.neuron_first = uint32_t(neuron_count);
    s.neuron_count = uint32_t(resident[i]);
    neuron_count += resident[i];
  }
  if (neuron_count > std::numeric_limits<uint32_t>::max()) throw std::runtime_error("scene: more than 2^32 neurons");
  st.sorting_ms += ms_since(t0);

  // ---- scoring: top-K candidates per resident neuron, in parallel over chunks ------------------
  t0 = Clock::now();
  std::vector<NodeValues> node_values;
  std::vector<int32_t> node_values_of(S, -1);
  std::unordered_map<const model::Node*, int32_t> node_values_by_node;
  std::vector<Task> tasks;
  for (size_t i = 0; i < S; ++i) {
    if (!sources[i].fn || im.segments[i].neuron_count == 0) continue;
    const model::Node& node = *sources[i].node;
    // One NodeValues per node, shared by its output segments: a Split into N outputs would
    // otherwise copy all N outputs' values for each of them (N^2).
    const auto [known, added] = node_values_by_node.try_emplace(&node, int32_t(node_values.size()));
    node_values_of[i] = known->second;
    if (added) {
      NodeValues nv{graph, node, {}, {}};
      for (model::TensorId in : node.inputs) nv.inputs.push_back(in != model::kNone && in < values.size() ? values[in] : TensorValue{});
      for (model::TensorId out : node.outputs) nv.outputs.push_back(out != model::kNone && out < values.size() ? values[out] : TensorValue{});
      node_values.push_back(std::move(nv));
    }
    for (int64_t b = 0; b < im.segments[i].neuron_total; b += kChunk) {
      const int64_t e = std::min(im.segments[i].neuron_total, b + kChunk);
      tasks.push_back({i, b, e, tasks.empty() ? 0 : tasks.back().counts_first + uint64_t(tasks.back().end - tasks.back().begin)});
    }
  }
  // By output element of each task: its entries in the task's kept connections (zero-filled by
  // the kernel, so skipped tasks need not write theirs).
  PageArray<uint8_t> kept_counts(tasks.empty() ? 0 : tasks.back().counts_first + uint64_t(tasks.back().end - tasks.back().begin));
  // Each segment's kept connections wait for the sort in the segment's own connection array
  // (sized for top_k per neuron; only what is written gets memory), packed in the order tasks
  // finish; the sort then orders them in place. So the build faults in memory for its kept
  // connections once, not once for the task results and again for the sorted array.
  std::vector<std::atomic<size_t>> kept_end(S);
  for (size_t i = 0; i < S; ++i)
    if (node_values_of[i] >= 0) im.data[i].connections = PageArray<Connection>(size_t(im.segments[i].neuron_total) * size_t(k));
  // Per node input slot: where its tensor's neurons are (total 0: the slot has no segment).
  struct Slot {
    const uint32_t* rank = nullptr;
    int64_t total = 0;
    uint32_t first = 0, resident = 0;
    bool side = false;  // a side input (SegmentData::side_input): does not set the scale
  };
  std::vector<std::vector<Slot>> slots_of(S);
  for (size_t i = 0; i < S; ++i) {
    if (node_values_of[i] < 0) continue;
    for (model::TensorId in : sources[i].node->inputs) {
      Slot sl;
      if (in != model::kNone && in < im.segment_of.size() && im.segment_of[in] >= 0 &&
          !far_side_input(graph, layout, in, *sources[i].node)) {
        const size_t si = size_t(im.segment_of[in]);
        sl = {im.data[si].rank.data(), im.segments[si].neuron_total, im.segments[si].neuron_first, im.segments[si].neuron_count,
              im.data[si].side_input};
      }
      slots_of[i].push_back(sl);
    }
  }
  std::vector<TaskResult> results(tasks.size());
  // The sink is asked for its memory by this thread while the helpers already work (an in-memory
  // sink zero-fills it, the engine's may wait for frames to retire): the neurons' while they
  // score, the connections' (their count is known after scoring) while they sort.
  std::span<Neuron> neurons;
  std::span<Connection> connections;
  auto acquire_neurons = [&] {
    neurons = sink.neurons(neuron_count);
    if (neurons.size() < neuron_count)
      throw std::runtime_error("scene: the sink holds " + std::to_string(neurons.size()) + " neurons, the scene needs " +
                               std::to_string(neuron_count));
  };
  parallel_for_after(
      tasks.size(), threads, acquire_neurons,
      [&](size_t ti) {
        const Task& task = tasks[ti];
        const size_t i = task.segment;
        const Source& src = sources[i];
        const NodeValues& nv = node_values[size_t(node_values_of[i])];
        // With a connection cap only the tensor's strongest neurons, as many as the cap, are
        // scored: the cap keeps a few connections of the strongest anyway, and scoring them all
        // was most of a focus change (mobilenet_v2: 54M candidates for 28k connections kept).
        const uint32_t dst_resident =
            options.connections_per_tensor
                ? uint32_t(std::min<uint64_t>(im.segments[i].neuron_count, options.connections_per_tensor))
                : im.segments[i].neuron_count;
        const SegmentData& d = im.data[i];
        thread_local TopK top(k, 0, 0);  // reused: its buffers are megabytes
        top.reset(k, task.begin, task.end);
        int64_t wanted = task.end - task.begin;
        if (dst_resident < im.segments[i].neuron_total) {
          wanted = std::count_if(d.rank.begin() + task.begin, d.rank.begin() + task.end,
                                 [&](uint32_t r) { return r < dst_resident; });
          if (wanted == 0) return;  // no resident destination in this range (its candidates are not counted)
          top.want_only(d.rank.data(), dst_resident, wanted * 4 <= task.end - task.begin);
        }
        try {
          src.fn(nv, src.output, top);
        } catch (const std::exception& e) {
          throw std::runtime_error("scene: connections of node '" + src.node->name + "' (" + src.node->op_type + "): " + e.what());
        }
        TaskResult& r = results[ti];
        r.candidates = top.candidates();
        const std::vector<Slot>& slots = slots_of[i];
        thread_local std::vector<Pending> kept;  // reused; copied into the segment's array
        kept.resize(size_t(wanted) * size_t(k));
        uint8_t* const task_counts = kept_counts.data() + task.counts_first;
        size_t n = 0;
        float max_abs = 0;
        for (int64_t out = task.begin; out < task.end; ++out) {
          if (d.rank[size_t(out)] >= dst_resident) continue;
          const size_t before = n;
          for (const TopK::Entry& e : top.kept_unordered(out)) {  // the segment sort orders them
            if (e.input >= slots.size()) continue;
            const Slot& sl = slots[e.input];
            if (uint64_t(e.src) >= uint64_t(sl.total) || !std::isfinite(e.contribution)) continue;  // also: no segment
            const uint32_t rank = sl.rank[size_t(e.src)];
            if (rank >= sl.resident) continue;
            kept[n++] = {sl.first + rank, e.contribution};
            if (!sl.side && !d.side_input) max_abs = std::max(max_abs, std::fabs(e.contribution));
          }
          task_counts[out - task.begin] = uint8_t(n - before);
        }
        r.kept_first = kept_end[i].fetch_add(n, std::memory_order_relaxed);
        r.kept_size = n;
        std::memcpy(static_cast<void*>(im.data[i].connections.data() + r.kept_first), kept.data(), n * sizeof(Pending));
        r.max_abs = max_abs;
      },
      [&](size_t done) { progress(0.1f + 0.7f * float(done) / float(std::max<size_t>(tasks.size(), 1))); });
  st.scoring_ms = ms_since(t0);
  progress(0.8f);

  // ---- connection budget, then sort each segment by |contribution|; the neurons are written --
  // A counting sort on the 16-bit score key, reading the task results in the segment's array and
  // writing the final connections (only the resident prefix) into scratch, which then becomes
  // the segment's array.
  t0 = Clock::now();
  std::vector<uint64_t> kept(S, 0);
  std::vector<float> segment_max(S, 0.f);
  std::vector<std::vector<size_t>> tasks_of(S);
  for (size_t ti = 0; ti < tasks.size(); ++ti) {
    const size_t i = tasks[ti].segment;
    kept[i] += results[ti].kept_size;
    segment_max[i] = std::max(segment_max[i], results[ti].max_abs);
    im.segments[i].connection_candidates += int64_t(results[ti].candidates);
    st.connection_candidates += results[ti].candidates;
    tasks_of[i].push_back(ti);
  }
  std::vector<uint64_t> capped = kept;  // each tensor's strongest few (the sort keeps a prefix)
  if (options.connections_per_tensor)
    for (uint64_t& n : capped) n = std::min(n, options.connections_per_tensor);
  const auto conn_resident = apportion(capped, budget - std::min(budget, neuron_count));
  uint64_t connection_count = 0;
  float max_abs = 0;
  for (size_t i = 0; i < S; ++i) {
    Segment& s = im.segments[i];
    s.connection_first = uint32_t(connection_count);
    s.connection_count = uint32_t(conn_resident[i]);
    connection_count += conn_resident[i];
    // A segment's strongest is resident (but where a side input's lines took its cap: then the scale
    // is a little above what is drawn).
    if (conn_resident[i] > 0) max_abs = std::max(max_abs, segment_max[i]);
  }
  if (connection_count > std::numeric_limits<uint32_t>::max()) throw std::runtime_error("scene: more than 2^32 connections");
  im.max_contribution = max_abs;
  auto acquire_connections = [&] {
    connections = sink.connections(connection_count);
    if (connections.size() < connection_count)
      throw std::runtime_error("scene: the sink holds " + std::to_string(connections.size()) +
                               " connections, the scene needs " + std::to_string(connection_count));
  };
  {
    const auto order = by_size(kept);
    // A segment's connections are sorted into a scratch array that then becomes the segment's;
    // the array they came from is the scratch of a later segment (segments come largest first,
    // so it is big enough, and its pages are already in memory). One per thread at a time.
    ScratchPool<PageArray<Connection>> sorted_scratch;
    std::vector<uint64_t> neuron_sizes(S);
    for (size_t i = 0; i < S; ++i) neuron_sizes[i] = im.segments[i].neuron_count;
    const auto neuron_order = by_size(neuron_sizes);
    // Items [0, S) sort the segments' connections, items [S, 2S) write their neurons into the sink.
    parallel_for_after(2 * S, threads, acquire_connections, [&](size_t j) {
      if (j >= S) {
        const Segment& s = im.segments[neuron_order[j - S]];
        const SegmentData& d = im.data[neuron_order[j - S]];
        for (uint32_t r = 0; r < s.neuron_count; ++r) {
          const auto p = layout.position(s.tensor, d.order[r]);
          neurons[s.neuron_first + r] = {p[0], p[1], p[2], d.values[r]};
        }
        return;
      }
      const size_t i = order[j];
      const size_t n = kept[i], keep = conn_resident[i];
      SegmentData& d = im.data[i];
      if (n == 0) {
        d.connections = {};
        return;
      }
      if (options.refreshable) d.contributions.assign(keep, 0.f);
      // One counting-sort pass on the 16-bit key (descending), stable in destination order;
      // only the resident prefix is written. Small segments: a comparison sort.
      auto key = [](const Pending& p) { return uint16_t(~score_key(std::fabs(p.contribution))); };
      const Connection* pending = d.connections.data();
      // Calls fn(dst, pending) for every entry of task ti, in order.
      auto drain = [&](size_t ti, auto&& fn) {
        const TaskResult& r = results[ti];
        const Task& task = tasks[ti];
        const uint8_t* task_counts = kept_counts.data() + task.counts_first;
        const Connection* p = pending + r.kept_first;
        for (int64_t o = 0; o < task.end - task.begin; ++o) {
          if (task_counts[o] == 0) continue;
          const uint32_t dst = d.rank[size_t(task.begin + o)];
          for (uint8_t c = 0; c < task_counts[o]; ++c) fn(dst, std::bit_cast<Pending>(*p++));
        }
      };
      if (n < 8192) {
        struct Full {
          Pending p;
          uint32_t dst;
        };
        std::vector<Full> a;
        a.reserve(n);
        for (size_t ti : tasks_of[i]) drain(ti, [&](uint32_t dst, const Pending& p) { a.push_back({p, dst}); });
        std::stable_sort(a.begin(), a.end(), [&](const Full& x, const Full& y) { return key(x.p) < key(y.p); });
        Connection* out = d.connections.data();  // its entries are all in `a` now
        for (size_t c = 0; c < keep; ++c) {
          out[c] = make_connection(a[c].p.src, a[c].dst, encode_contribution_inline(a[c].p.contribution, max_abs));
          if (options.refreshable) d.contributions[c] = a[c].p.contribution;
          const auto k2 = uint16_t(~key(a[c].p));
          if (d.connection_runs.empty() || d.connection_runs.back().key != k2) d.connection_runs.push_back({k2, 0});
          d.connection_runs.back().end = uint32_t(c + 1);
        }
        d.connections.discard_after(keep);
        return;
      }
      std::vector<uint32_t> pos(65536, 0);
      for (size_t ti : tasks_of[i])
        for (const Connection& c : std::span(pending + results[ti].kept_first, results[ti].kept_size))
          ++pos[key(std::bit_cast<Pending>(c))];
      // The key runs of the resident prefix follow from the histogram alone.
      uint32_t sum = 0;
      for (uint32_t v = 0; v < 65536 && sum < keep; ++v)
        if (pos[v] > 0) {
          sum += pos[v];
          d.connection_runs.push_back({uint16_t(~v), uint32_t(std::min<size_t>(sum, keep))});
        }
      sum = 0;
      for (uint32_t& v : pos) sum += std::exchange(v, sum);
      PageArray<Connection> sorted = sorted_scratch.take();
      if (sorted.size() < keep) sorted = PageArray<Connection>(keep, true);  // scattered writes: huge pages
      Connection* out = sorted.data();
      for (size_t ti : tasks_of[i])
        drain(ti, [&](uint32_t dst, const Pending& p) {
          const uint32_t at = pos[key(p)]++;
          if (at >= keep) return;
          out[at] = make_connection(p.src, dst, encode_contribution_inline(p.contribution, max_abs));
          if (options.refreshable) d.contributions[at] = p.contribution;
        });
      std::swap(d.connections, sorted);  // the sorted array is the segment's; the pending one, scratch
      d.connections.discard_after(keep);
      sorted_scratch.give(std::move(sorted));
    }, [](size_t) {});
  }
  st.sorting_ms += ms_since(t0);
  progress(0.9f);

  // ---- writing the connections --------------------------------------------------------------
  t0 = Clock::now();
  {
    std::vector<uint64_t> sizes(S);
    for (size_t i = 0; i < S; ++i) sizes[i] = im.segments[i].connection_count;
    const auto order = by_size(sizes);
    parallel_for(S, threads, [&](size_t j) {
      const Segment& s = im.segments[order[j]];
      std::copy_n(im.data[order[j]].connections.data(), s.connection_count, connections.data() + s.connection_first);
    });
  }
  st.writing_ms = ms_since(t0);
  if (options.refreshable) link_connections(im, values, threads);

  st.neurons = neuron_count;
  st.connections = connection_count;
  st.bytes = neuron_count * sizeof(Neuron) + connection_count * sizeof(Connection);
  uint64_t cpu = connection_count * sizeof(Connection) + im.segment_of.size() * sizeof(int32_t);
  for (const SegmentData& d : im.data)
    cpu += d.rank.size() * 4 + d.order.size() * 4 + d.values.size() * 4 + d.connection_runs.size() * sizeof(KeyRun) +
           d.links.size() * sizeof(SegmentData::Link) + d.contributions.size() * 4;
  st.cpu_bytes = cpu;
  const DrawCounts counts = scene.counts(Filter{});
  sink.publish(im.segments, counts, max_abs);
  st.total_ms = ms_since(start);
  progress(1);
  return scene;
}

}  // namespace nnxr::scene
