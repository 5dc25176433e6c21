// Internal to model/scene: what a built Scene keeps on the CPU (filters, find(), trace()).
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "model/scene/pages.h"
#include "model/scene/scene.h"

namespace nnxr::scene {

// A connection's score as kept for filtering: the upper 16 bits of the float |score| (sign,
// exponent and 7 mantissa bits), so keys order like scores to within 2^-7 relative. Two bytes per
// connection instead of four, and a two-pass radix sort. NaN scores never reach a key.
inline uint16_t score_key(float score) {
  if (!(score > 0)) return 0;
  return uint16_t(std::bit_cast<uint32_t>(score) >> 16);
}

// The half-step boundaries 2^((j + 0.5)/8), j = 0..7, of an octave [1, 2), looked up by the top 7
// mantissa bits: an interval of width 1/128 holds at most one boundary (they are 0.09 or more
// apart), so the steps below m are the interval's count of boundaries at or below its start, plus
// one if m reaches the boundary inside it (split = 2: none inside).
struct HalfSteps {
  uint8_t below[128];
  float split[128];
};

constexpr HalfSteps make_half_steps() {
  constexpr float kBoundaries[8] = {1.0442738f, 1.1387886f, 1.2418578f, 1.3542555f,
                                    1.4768261f, 1.6104903f, 1.7562522f, 1.9152066f};
  HalfSteps t{};
  for (int j = 0; j < 128; ++j) {
    const float lo = 1.f + float(j) / 128.f, hi = 1.f + float(j + 1) / 128.f;
    t.below[j] = 0;
    t.split[j] = 2.f;
    for (float h : kBoundaries) {
      if (h <= lo) ++t.below[j];
      else if (h < hi) t.split[j] = h;
    }
  }
  return t;
}

inline constexpr HalfSteps kHalfSteps = make_half_steps();

// encode_contribution() (scene.h), inline for the build's per-connection loop. level = 127 +
// 8·log2(|c| / max_abs) rounded on the float's bits: the exponent gives whole octaves, the
// mantissa is compared with the half-step boundaries 2^((j + 0.5)/8) of its octave.
inline uint8_t encode_contribution_inline(float contribution, float max_abs) {
  if (!(max_abs > 0) || !std::isfinite(max_abs) || std::isnan(contribution)) return 0;
  const uint8_t sign = std::signbit(contribution) ? 0x80 : 0;
  const float r = std::fabs(contribution) / max_abs;
  if (!(r >= 0x1p-126f)) return r > 0 ? sign : 0;  // far below the smallest code (or zero)
  if (r >= 1) return uint8_t(sign | 127);
  const uint32_t bits = std::bit_cast<uint32_t>(r);
  const int octave = int(bits >> 23) - 127;  // r = m · 2^octave, m in [1, 2)
  const float m = std::bit_cast<float>((bits & 0x7FFFFFu) | 0x3F800000u);
  const uint32_t j = (bits >> 16) & 0x7Fu;
  const int steps = kHalfSteps.below[j] + (m >= kHalfSteps.split[j]);
  const int level = 127 + 8 * octave + steps;
  return level <= 0 ? sign : uint8_t(sign | (level > 127 ? 127 : level));
}

// A run of equal score keys in a connection segment (keys descend along the segment): the
// connections before `end` (counted from the segment's first) whose key is >= `key` end here.
// Filters search these instead of one key per connection: a segment has at most 65536 runs and
// in practice a few thousand, where it has up to millions of connections.
struct KeyRun {
  uint16_t key;
  uint32_t end;
};

struct SegmentData {
  std::string tensor_name, node_name, op_type;  // node/op empty for graph inputs and weights
  std::vector<int64_t> shape;
  std::vector<uint32_t> rank;   // by element: position in the |value| order (resident iff < neuron_count)
  std::vector<uint32_t> order;  // by resident neuron: its element
  std::vector<float> values;    // by resident neuron: its activation (sorted by |value|, descending)
  std::vector<KeyRun> connection_runs;    // the resident connections' score_key runs, descending
  // The resident connections as written to the sink: the first Segment::connection_count
  // entries (the array may be larger; its memory past them is given back).
  PageArray<Connection> connections;
  std::vector<uint32_t> consumers;        // segments of tensors computed from this one
  // A side input feeding many far layers (build.h far_side_input): its connections (into its near
  // consumers only) and those into it are drawn at full strength and do not set the scene's
  // contribution scale, which its large values (an attention mask's -10000) would leave every
  // other line far below.
  bool side_input = false;
  // SceneOptions::refreshable only: per resident connection, in the order of the build's sort,
  // its source and destination elements and weight factor (contribution = factor · a_src), and
  // its contribution as of the last build or refresh (refresh.cpp).
  // Neurons are named by their build slot: their index in the neuron array as built
  // (Scene::Impl::slot_rank maps a slot to its current rank).
  struct Link {
    uint32_t src_segment = 0, src_element = 0;
    uint32_t src_slot = 0;  // global build slot of the source
    uint32_t dst_slot = 0;  // build slot of the destination, relative to the segment's first
    float factor = 0;
  };
  std::vector<Link> links;
  std::vector<float> contributions;
  std::vector<uint32_t> build_order;  // by build slot (relative): its element
};

// Scratch a refresh reuses from one call to the next (one per helper thread).
struct RefreshScratch {
  std::vector<uint64_t> keys, tmp;  // neuron sort
  std::vector<uint32_t> positions;  // 65536 counters of the connection sort
};

struct Scene::Impl {
  std::vector<Segment> segments;
  std::vector<SegmentData> data;          // parallel to segments
  std::vector<int32_t> segment_of;        // by TensorId; -1: no segment
  BuildStats stats;
  float max_contribution = 0;
  bool refreshable = false;
  std::vector<uint32_t> slot_rank;  // by global build slot: the neuron's rank in its segment now
  std::vector<RefreshScratch> refresh_scratch;  // grown by the first refresh

  // The segment holding neuron `index` (which must be < the neuron count).
  size_t segment_of_neuron(uint32_t index) const;
};

// SceneOptions::refreshable: fills every segment's links from its resident connections and the
// contributions the build kept, and marks the scene refreshable (refresh.cpp).
void link_connections(Scene::Impl& im, const Activations& values, int threads);

}  // namespace nnxr::scene
