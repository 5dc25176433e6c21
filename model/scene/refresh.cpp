// Scene::refresh(): the same resident elements with another run's values (scene.h), and the links
// a refreshable build keeps for it.
//
// Neurons: each segment's resident elements are sorted again by the new |value| (an LSD radix
// sort of (key, build slot) pairs: ties stay in the build's order), which gives new ranks; the
// value range is taken over the whole tensor, as build() does. Connections: each
// keeps its link (source segment and element, destination element, factor); its contribution is
// factor · new a_src, and the segment is counting-sorted again on the 16-bit score key (stable in
// link order), with its source and destination renumbered by the new ranks of their build slots. The neurons and
// connections are then written into the sink and published like a build's.
#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <chrono>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <string>
#include <utility>

#include "model/scene/parallel.h"
#include "model/scene/scene_impl.h"

namespace nnxr::scene {
namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

uint32_t neuron_key(float x) { return ~(std::isnan(x) ? 0u : (std::bit_cast<uint32_t>(x) & 0x7FFFFFFFu)); }

// Stable LSD sort of (key << 32 | element) by the key, 11 bits a pass, in a and tmp (no allocation
// once they have the capacity).
void sort_keys(std::vector<uint64_t>& a, std::vector<uint64_t>& tmp) {
  constexpr int kDigit = 11;
  constexpr uint32_t kBins = 1u << kDigit;
  const size_t n = a.size();
  if (n < 2) return;
  tmp.resize(n);
  std::array<std::array<uint32_t, kBins>, 3> hist{};
  for (const uint64_t x : a) {
    const uint32_t k = uint32_t(x >> 32);
    ++hist[0][k & (kBins - 1)];
    ++hist[1][(k >> kDigit) & (kBins - 1)];
    ++hist[2][k >> (2 * kDigit)];
  }
  for (int d = 0; d < 3; ++d) {
    if (std::any_of(hist[size_t(d)].begin(), hist[size_t(d)].end(), [&](uint32_t v) { return v == n; })) continue;
    uint32_t sum = 0;
    for (uint32_t& v : hist[size_t(d)]) sum += std::exchange(v, sum);
    const int shift = 32 + kDigit * d;
    for (const uint64_t x : a) tmp[hist[size_t(d)][(x >> shift) & (kBins - 1)]++] = x;
    a.swap(tmp);
  }
}

// The range of the finite values (0, 0 when there are none), computed on the floats' bits in an
// order that sorts like the numbers: integer min/max, which vectorise (one clone per ISA).
__attribute__((target_clones("avx512f", "avx2", "default"))) std::pair<float, float> value_range(const float* data, size_t n) {
  int32_t lo = std::numeric_limits<int32_t>::max(), hi = std::numeric_limits<int32_t>::min();
  for (size_t i = 0; i < n; ++i) {
    const auto b = std::bit_cast<int32_t>(data[i]);
    const int32_t ordered = b ^ ((b >> 31) & 0x7FFFFFFF);
    const bool finite = (b & 0x7F800000) != 0x7F800000;
    lo = std::min(lo, finite ? ordered : std::numeric_limits<int32_t>::max());
    hi = std::max(hi, finite ? ordered : std::numeric_limits<int32_t>::min());
  }
  if (lo > hi) return {0.f, 0.f};
  auto number = [](int32_t o) { return std::bit_cast<float>(o ^ ((o >> 31) & 0x7FFFFFFF)); };
  return {number(lo), number(hi)};
}

// Segment indices, largest first (balanced parallel loops).
std::vector<size_t> largest_first(const std::vector<Segment>& segments, bool by_connections) {
  std::vector<size_t> idx(segments.size());
  std::iota(idx.begin(), idx.end(), size_t{0});
  auto size = [&](size_t i) { return by_connections ? segments[i].connection_count : uint64_t(segments[i].neuron_total); };
  std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return size(a) > size(b); });
  return idx;
}

}  // namespace

void link_connections(Scene::Impl& im, const Activations& values, int threads) {
  im.refreshable = true;
  uint64_t neurons = 0;
  for (const Segment& s : im.segments) neurons = std::max<uint64_t>(neurons, uint64_t(s.neuron_first) + s.neuron_count);
  im.slot_rank.resize(neurons);
  parallel_for(im.segments.size(), threads, [&](size_t i) {
    const Segment& s = im.segments[i];
    SegmentData& d = im.data[i];
    d.build_order = d.order;
    for (uint32_t r = 0; r < s.neuron_count; ++r) im.slot_rank[s.neuron_first + r] = r;
    d.links.resize(s.connection_count);
    // A refresh rewrites the key runs: room for as many as the segment can have (one per
    // connection, at most one per 16-bit key), so that it never grows them.
    d.connection_runs.reserve(std::min<size_t>(s.connection_count, 65536));
    for (uint32_t c = 0; c < s.connection_count; ++c) {
      const Connection conn = d.connections.data()[c];
      const size_t ss = im.segment_of_neuron(conn.src);
      const uint32_t src_element = im.data[ss].order[conn.src - im.segments[ss].neuron_first];
      const float a = values[im.segments[ss].tensor].data[src_element];
      const float contribution = c < d.contributions.size() ? d.contributions[c] : 0.f;
      const float factor = a != 0 && std::isfinite(a) && std::isfinite(contribution) ? contribution / a : 0.f;
      d.links[c] = {uint32_t(ss), src_element, conn.src, conn.packed & 0xFFFFFFu, std::isfinite(factor) ? factor : 0.f};
    }
    d.contributions.resize(s.connection_count);
    // A source that was exactly 0 tells nothing of its weight. Where every other link of the
    // segment has factor 1 (an op scored by |a|: pooling, activations, Add, Concat, reshapes),
    // so has it; elsewhere (Conv, Gemm, Mul) it keeps 0 until the next build.
    bool unit = false;
    for (const SegmentData::Link& l : d.links) {
      const float a = values[im.segments[l.src_segment].tensor].data[l.src_element];
      if (a == 0 || !std::isfinite(a)) continue;
      unit = l.factor == 1.f;
      if (!unit) break;
    }
    if (unit)
      for (SegmentData::Link& l : d.links)
        if (values[im.segments[l.src_segment].tensor].data[l.src_element] == 0) l.factor = 1.f;
  });
}

void Scene::refresh(const Layout& layout, const Activations& values, SceneSink& sink, int threads) {
  const auto start = Clock::now();
  Impl& im = *impl_;
  if (!im.refreshable) throw std::logic_error("scene: refresh() needs a build with SceneOptions::refreshable");
  for (const Segment& s : im.segments)
    if (s.tensor >= values.size() || values[s.tensor].data.size() != uint64_t(s.neuron_total))
      throw std::invalid_argument("scene: refresh() with values of another shape for tensor '" +
                                  im.data[size_t(&s - im.segments.data())].tensor_name + "'");
  threads = std::clamp(threads, 1, 256);
  if (im.refresh_scratch.size() < size_t(threads)) {
    // Every slot sized for the largest segment, so that no later refresh grows one, whichever
    // segments its thread happens to take.
    uint32_t largest = 0;
    for (const Segment& s : im.segments) largest = std::max(largest, s.neuron_count);
    im.refresh_scratch.resize(size_t(threads));
    for (RefreshScratch& sc : im.refresh_scratch) {
      sc.keys.reserve(largest);
      sc.tmp.reserve(largest);
      sc.positions.assign(65536, 0);
    }
  }
  const size_t S = im.segments.size();
  // Each parallel item takes a scratch slot for its duration (at most `threads` at once).
  std::vector<std::atomic<bool>> busy(static_cast<size_t>(threads));
  auto take = [&]() -> size_t {
    for (;;)
      for (size_t t = 0; t < busy.size(); ++t) {
        bool expected = false;
        if (busy[t].compare_exchange_weak(expected, true)) return t;
      }
  };

  // ---- neurons: new ranks of the same resident elements ----------------------------------------
  auto t0 = Clock::now();
  const auto neuron_order = largest_first(im.segments, false);
  parallel_for(S, threads, [&](size_t j) {
    const size_t i = neuron_order[j];
    Segment& s = im.segments[i];
    SegmentData& d = im.data[i];
    const std::span<const float> data = values[s.tensor].data;
    const auto [lo, hi] = value_range(data.data(), data.size());
    s.value_min = lo;
    s.value_max = hi;
    const size_t slot = take();
    RefreshScratch& sc = im.refresh_scratch[slot];
    // (key, build slot) of each resident neuron, sorted by the key: ties stay in build order.
    sc.keys.resize(s.neuron_count);
    const uint32_t* built = d.build_order.data();
    for (uint32_t b = 0; b < s.neuron_count; ++b) sc.keys[b] = (uint64_t(neuron_key(data[built[b]])) << 32) | b;
    sort_keys(sc.keys, sc.tmp);
    uint32_t* slot_rank = im.slot_rank.data() + s.neuron_first;
    for (uint32_t r = 0; r < s.neuron_count; ++r) {
      const auto b = uint32_t(sc.keys[r]);
      const uint32_t e = built[b];
      d.order[r] = e;
      d.values[r] = data[e];
      d.rank[e] = r;
      slot_rank[b] = r;
    }
    busy[slot].store(false);
  });
  double sorting_ms = ms_since(t0);

  // ---- contributions, then the connection sort ------------------------------------------------
  t0 = Clock::now();
  std::vector<float> segment_max(S, 0.f);
  const auto connection_order = largest_first(im.segments, true);
  parallel_for(S, threads, [&](size_t j) {
    const size_t i = connection_order[j];
    SegmentData& d = im.data[i];
    float m = 0;
    for (size_t c = 0; c < d.links.size(); ++c) {
      const SegmentData::Link& l = d.links[c];
      const float x = l.factor * values[im.segments[l.src_segment].tensor].data[l.src_element];
      d.contributions[c] = x;
      if (std::isfinite(x) && !d.side_input && !im.data[l.src_segment].side_input) m = std::max(m, std::fabs(x));
    }
    segment_max[i] = m;
  });
  float max_abs = 0;
  for (size_t i = 0; i < S; ++i)
    if (im.segments[i].connection_count > 0) max_abs = std::max(max_abs, segment_max[i]);
  im.max_contribution = max_abs;
  parallel_for(S, threads, [&](size_t j) {
    const size_t i = connection_order[j];
    SegmentData& d = im.data[i];
    d.connection_runs.clear();
    if (d.links.empty()) return;
    const size_t slot = take();
    std::vector<uint32_t>& pos = im.refresh_scratch[slot].positions;
    if (pos.size() != 65536) pos.assign(65536, 0);  // all zero between uses
    auto key = [](float x) { return uint16_t(~score_key(std::isfinite(x) ? std::fabs(x) : 0.f)); };
    uint32_t first = 65535, last = 0;  // the keys' range: only it is scanned and cleared
    for (const float x : d.contributions) {
      const uint16_t k = key(x);
      ++pos[k];
      first = std::min<uint32_t>(first, k);
      last = std::max<uint32_t>(last, k);
    }
    uint32_t sum = 0;
    for (uint32_t v = first; v <= last; ++v)
      if (pos[v] > 0) {
        sum += pos[v];
        d.connection_runs.push_back({uint16_t(~v), sum});
      }
    sum = 0;
    for (uint32_t v = first; v <= last; ++v) sum += std::exchange(pos[v], sum);
    Connection* out = d.connections.data();
    const uint32_t* dst_rank = im.slot_rank.data() + im.segments[i].neuron_first;
    for (size_t c = 0; c < d.links.size(); ++c) {
      const SegmentData::Link& l = d.links[c];
      const float x = d.contributions[c];
      const uint32_t at = pos[key(x)]++;
      out[at] = make_connection(im.segments[l.src_segment].neuron_first + im.slot_rank[l.src_slot], dst_rank[l.dst_slot],
                                encode_contribution_inline(std::isfinite(x) ? x : 0.f, max_abs));
    }
    std::fill(pos.begin() + first, pos.begin() + last + 1, 0u);
    busy[slot].store(false);
  });
  sorting_ms += ms_since(t0);

  // ---- writing -------------------------------------------------------------------------------
  t0 = Clock::now();
  uint64_t neuron_count = 0, connection_count = 0;
  for (const Segment& s : im.segments) {
    neuron_count = std::max<uint64_t>(neuron_count, uint64_t(s.neuron_first) + s.neuron_count);
    connection_count = std::max<uint64_t>(connection_count, uint64_t(s.connection_first) + s.connection_count);
  }
  const std::span<Neuron> neurons = sink.neurons(neuron_count);
  if (neurons.size() < neuron_count) throw std::runtime_error("scene: the sink holds too few neurons for a refresh");
  const std::span<Connection> connections = sink.connections(connection_count);
  if (connections.size() < connection_count) throw std::runtime_error("scene: the sink holds too few connections for a refresh");
  parallel_for(S, threads, [&](size_t j) {
    const size_t i = neuron_order[j];
    const Segment& s = im.segments[i];
    const SegmentData& d = im.data[i];
    for (uint32_t r = 0; r < s.neuron_count; ++r) {
      const auto p = layout.position(s.tensor, d.order[r]);
      neurons[s.neuron_first + r] = {p[0], p[1], p[2], d.values[r]};
    }
    std::copy_n(d.connections.data(), s.connection_count, connections.data() + s.connection_first);
  });
  const DrawCounts counts = this->counts(Filter{});
  sink.publish(im.segments, counts, max_abs);
  im.stats.refreshed = true;
  im.stats.scoring_ms = 0;
  im.stats.sorting_ms = sorting_ms;
  im.stats.writing_ms = ms_since(t0);
  im.stats.total_ms = ms_since(start);
}

}  // namespace nnxr::scene
