// The scene: where every neuron stands, which connections carried the most signal, and how much
// of both the current filter shows. Built in model/ (no Vulkan); the engine hands it mapped GPU
// memory to write into through SceneSink.
//
//   Layout layout = Layout::build(graph, {});                    // once per model, input-free
//   Activations acts = activations_of(session);                 // after runtime::Session::run()
//   Scene scene = Scene::build(graph, layout, acts, {.top_k = 8, .budget = 20'000'000}, sink);
//   DrawCounts counts = scene.counts(filter);                   // O(segments · log n)
//   sink.write_counts(counts);
//
// Threading: Layout and Scene are immutable after build and may be read from any thread. Building
// runs on the caller's thread (the engine's worker) plus SceneOptions::threads helpers inside
// build(). The frame thread never calls into this header except through what a sink published.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "model/graph.h"

namespace nnxr::runtime {
class Session;
class Value;
}

namespace nnxr::scene {

// ---- element formats (GPU-facing; shaders/scene.glsl mirrors them, std430) -------------------

// One neuron: position in metres at world scale 1, and its activation. The tensor is known from
// the segment the neuron lies in (the engine passes the segment index as firstInstance).
struct Neuron {
  float x = 0, y = 0, z = 0;
  float value = 0;
};
static_assert(sizeof(Neuron) == 16);

// One kept connection, from a source neuron to a destination neuron.
//   src:    index of the source neuron in the neuron array (global).
//   packed: bits 0..23  index of the destination neuron relative to the first neuron of the
//                       destination tensor's neuron segment (Segment::dst_neuron_first);
//           bits 24..31 the signed contribution w·a (or a), log-quantised by
//                       encode_contribution() against the scene's max |contribution|.
struct Connection {
  uint32_t src = 0;
  uint32_t packed = 0;
};
static_assert(sizeof(Connection) == 8);

inline constexpr uint32_t kMaxSegmentNeurons = 1u << 24;  // dst index range of Connection

// Contribution code: bit 7 = sign, bits 0..6 = m, |c| ≈ max_abs · 2^((m − 127) / 8); m = 0 means
// |c| ≤ max_abs · 2^−15.875 (or zero). Alpha in the shaders is a function of m.
uint8_t encode_contribution(float contribution, float max_abs);
float decode_contribution(uint8_t code, float max_abs);
inline Connection make_connection(uint32_t src, uint32_t dst_local, uint8_t code) {
  return {src, (dst_local & 0xFFFFFFu) | (uint32_t(code) << 24)};
}

// ---- activations ------------------------------------------------------------------------------

// The float data of one tensor after a run (activations, inputs, and weights); float16 tensors
// are converted to float32, which `owned` then holds.
struct TensorValue {
  std::span<const int64_t> shape;
  std::span<const float> data;  // empty: not a float tensor, or not computed
  std::shared_ptr<const std::vector<float>> owned = nullptr;
};
// Indexed by model::TensorId. Views into a runtime::Session: valid while it is unchanged.
using Activations = std::vector<TensorValue>;
Activations activations_of(const runtime::Session& session);
// One value as activations_of() gives it: a view of a float32 value, a float copy of a float16
// one, nothing (empty data and shape) for other types. Valid while `value` is unchanged.
TensorValue tensor_value(const runtime::Value& value);

// ---- layout ------------------------------------------------------------------------------------

struct LayoutOptions {
  float neuron_spacing = 0.004f;  // metres between neighbouring neurons in a feature map (scale 1)
  bool weights = false;           // also lay out weight tensors (initializers) as blocks
  // Also lay out tensors computed from weights and constants alone (weight reshapes, casts,
  // Identity copies, shape arithmetic) and Dropout masks; by default only activations are.
  bool constants = false;
  float layer_spacing = 0.1f;     // metres along X from one layer to the next
};

// Where a tensor's block stands. Positions of single elements come from Layout::position().
struct Block {
  model::TensorId tensor = model::kNone;
  int layer = 0;
  int64_t elements = 0;               // laid out (from the graph's shape, or the run's)
  std::array<float, 3> min{}, max{};  // axis-aligned bounds of the block
  // How elements fold: `tiles` feature-map tiles of tile_h × tile_w, arranged tiles_x × tiles_y.
  int64_t tiles = 1, tile_h = 1, tile_w = 1, tiles_x = 1, tiles_y = 1;
  // Columns to a neuron spacing: a channels-last image input's C (one H × W·C tile, each pixel's
  // C channels side by side within one spacing, so that the picture keeps its aspect); else 1.
  // Rows are always a spacing apart.
  int64_t columns_per_step = 1;
};

// Deterministic positions for every element of every laid-out float tensor (activations, graph
// inputs, and weights when LayoutOptions::weights); X is depth, except that a chain far longer than
// it is wide and tall wraps into rows (each along X from the same start, the next below it, breaks
// where the name hierarchy changes group), so that it reads as a picture rather than a line.
// Depends on the graph and options only, except
// for tensors whose shape the graph leaves unknown (data-dependent shapes): with `run`, those take
// the shape they had in that run (needs_run() says whether any float tensor is such); without it
// they are not laid out.
// Per TensorId: computed from initializers and constants alone (no graph input reaches it), or a
// Dropout mask. Layout leaves these out unless LayoutOptions::constants.
std::vector<bool> constant_tensors(const model::Graph& graph);

// How a tensor of `shape` (`elements` values) folds into tiles: {tiles, tile_h, tile_w}, each tile
// a picture of contiguous elements. Leading 1s are dropped; the last two dims make a tile and the
// dims before them count tiles (C feature maps; a head's T × T attention map; D × H × W volumes
// as D slices); a vector or a C × 1 × 1 map (fully connected) is one near-square tile; rows far
// wider than they are many (BERT's 7 × 128, C × 1 × L) become one near-square tile per row.
std::array<int64_t, 3> fold_of(std::span<const int64_t> shape, int64_t elements);

class Layout {
 public:
  static Layout build(const model::Graph& graph, const LayoutOptions& options, const Activations* run = nullptr);
  // True when some float tensor of `graph` has a shape only a run can tell.
  static bool needs_run(const model::Graph& graph);

  const std::vector<Block>& blocks() const;          // laid-out tensors, by layer then tensor id
  const Block* block(model::TensorId tensor) const;  // nullptr: not laid out
  std::array<float, 3> position(model::TensorId tensor, int64_t element) const;
  std::array<float, 3> bounds_min() const;
  std::array<float, 3> bounds_max() const;
  const LayoutOptions& options() const;
  double build_ms() const;  // wall time build() took (reported in BuildStats::layout_ms)

  // Layout-only ray pick: the element of a laid-out tensor nearest to the ray within `radius`
  // metres (O(blocks), never O(elements)).
  struct Hit {
    model::TensorId tensor = model::kNone;
    int64_t element = -1;
    float distance = 0;  // along the ray
  };
  std::optional<Hit> pick(std::array<float, 3> origin, std::array<float, 3> direction, float radius) const;

  Layout();
  ~Layout();
  Layout(Layout&&) noexcept;
  Layout& operator=(Layout&&) noexcept;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// ---- scene ---------------------------------------------------------------------------------------

struct SceneOptions {
  int top_k = 8;                      // incoming connections kept per neuron (1..16)
  // Resident elements, neurons + connections. Neurons come first (all of them, or at least half
  // the budget); each tensor keeps the same fraction of its strongest neurons, then of its
  // strongest connections (policy in build.cpp).
  uint64_t budget = 20'000'000;
  int threads = 1;                    // threads for scoring and sorting, the caller's included
  std::function<void(float)> progress;  // 0..1, called from the building thread; may be empty
  // Points and connections only around a focus (DESIGN.md "Levels of detail"; the activation
  // images show every tensor anyway): these tensors (by name) with their incoming connections,
  // and the tensors feeding them as the connections' sources. Empty: every tensor. build()
  // throws std::invalid_argument for a name the graph lacks.
  std::vector<std::string> focus;
  // Keep what Scene::refresh() needs: per kept connection its source, destination and weight
  // factor (16 bytes on the CPU, plus 4 for its contribution). Off: refresh() throws.
  bool refreshable = false;
  // At most this many connections per tensor (0: no cap), so a focus's connections stay a sketch
  // of what fed it rather than a sheet over its images: the strongest by |contribution| of the
  // top_k candidates of its strongest connections_per_tensor neurons (by |value|), the only ones
  // scored, so the cost per tensor is O(connections_per_tensor) candidates, not O(its neurons).
  uint64_t connections_per_tensor = 0;
  // At most this many points per tensor, its strongest by |value| (0: no cap), so that one huge
  // tensor in a focus is not kept whole (its image shows every activation anyway).
  uint64_t points_per_tensor = 0;
};

// One tensor's elements in an element array, sorted by descending score. Neuron segments and
// connection segments are parallel lists: segment i of both belongs to the same tensor (the
// connections of segment i are the kept incoming connections of that tensor's neurons).
struct Segment {
  model::TensorId tensor = model::kNone;
  int layer = 0;
  uint32_t neuron_first = 0;      // first neuron in the neuron array
  uint32_t neuron_count = 0;      // resident neurons (a prefix of the tensor's neurons by score)
  int64_t neuron_total = 0;       // neurons of the tensor
  uint32_t connection_first = 0;  // first connection in the connection array
  uint32_t connection_count = 0;  // resident connections
  int64_t connection_candidates = 0;  // candidates enumerated (ranges without resident neurons are skipped)
  float value_min = 0, value_max = 0; // range of the activation (for per-tensor colour ranges)
};

// What a filter resolves to: one neuron count and one connection count per segment, each a
// prefix of the segment, and whether the segment is drawn dimmed (outside a Filter::Outside::Dim
// filter). This is all a filter change writes to the GPU.
struct DrawCounts {
  std::vector<uint32_t> neurons;
  std::vector<uint32_t> connections;
  std::vector<uint8_t> dimmed;  // per segment, 1: dimmed; empty: none dimmed
};

struct Filter {
  // Thresholds. Quantile q in [0, 1] keeps, in each segment, the elements scoring above that
  // segment's q-quantile (q = 0.9: each tensor's strongest 10%) — per segment because activation
  // scales differ by orders of magnitude between layers. Absolute keeps score >= threshold.
  // Quantile q keeps exactly n − round(q·n) of a segment's n resident elements. Connections are
  // ordered and compared at 8 significant bits of their score (2^-7 relative); neurons exactly.
  enum class Mode : uint8_t { Quantile, Absolute };
  Mode neuron_mode = Mode::Quantile;
  float neuron_threshold = 0;
  Mode connection_mode = Mode::Quantile;
  float connection_threshold = 0;
  int layer_min = 0;
  int layer_max = std::numeric_limits<int>::max();
  std::vector<std::string> op_types;       // show only tensors produced by these ops; empty = all
  std::vector<model::TensorId> tensors;    // show only these tensors; empty = all
  // What happens to the segments the layer range, op types and tensors leave out: not drawn
  // (Hide), or drawn with the thresholds applied and flagged in DrawCounts::dimmed (Dim).
  enum class Outside : uint8_t { Hide, Dim };
  Outside outside = Outside::Hide;

  // True when the layer range, op types or tensors leave something out.
  bool selective() const {
    return layer_min > 0 || layer_max != std::numeric_limits<int>::max() || !op_types.empty() || !tensors.empty();
  }
};

// A neuron's identity.
struct NeuronInfo {
  uint32_t neuron = 0;  // index in the neuron array
  model::TensorId tensor = model::kNone;
  int64_t element = 0;  // flat index in the tensor
  float value = 0;
};

// What to highlight for a selected neuron.
struct Trace {
  NeuronInfo selected;
  std::string tensor_name, node_name, op_type;
  std::vector<int64_t> index;          // multi-index of the element in its tensor
  std::vector<uint32_t> neurons;       // neuron array indices (selected first)
  std::vector<uint32_t> connections;   // connection array indices
};

// The path that fed a tensor: the laid-out tensors it was computed from, through any number of
// nodes (also through tensors that are not laid out, such as constants), `tensor` itself first,
// then the rest by layer and id. Graph inputs count; initializers are not laid out. A tensor that
// is not laid out gives its laid-out sources only. O(nodes + tensors upstream).
std::vector<model::TensorId> upstream_tensors(const model::Graph& graph, const Layout& layout, model::TensorId tensor);

struct BuildStats {
  // Wall time per stage. The sink's memory is asked for during scoring (neurons) and sorting
  // (connections), and sorting also writes the neurons; writing copies the connections.
  double layout_ms = 0, scoring_ms = 0, sorting_ms = 0, writing_ms = 0;
  uint64_t neurons = 0, neurons_total = 0;
  uint64_t connections = 0, connection_candidates = 0;
  uint64_t bytes = 0;  // resident bytes written (neurons·16 + connections·8)
  double total_ms = 0;  // wall time of Scene::build()
  uint64_t cpu_bytes = 0;  // memory the Scene keeps on the CPU for filters, find() and trace()
  std::vector<std::string> warnings;  // tensors capped or skipped, one line each
  // Ops (domain-qualified outside ai.onnx) whose laid-out outputs have no connector, with the
  // number of such output tensors.
  std::vector<std::pair<std::string, int>> unconnected_ops;
  // Set by Scene::refresh(): the elements are those of the last build(), with the values and
  // contributions of the refresh (refresh time in total_ms, sorting_ms and writing_ms).
  bool refreshed = false;
};

class SceneSink;

// The CPU side of a built scene: segments, the sorted scores that filters search, and the maps
// between array positions and (tensor, element). Immutable after build().
class Scene {
 public:
  // Scores every candidate connection, keeps the top-K per neuron, fits neurons and connections
  // into the budget (dropping the least important), sorts each segment by score and writes the
  // elements into sink (then publishes them). Throws std::runtime_error when the sink is too
  // small for what the budget keeps.
  static Scene build(const model::Graph& graph, const Layout& layout, const Activations& values,
                     const SceneOptions& options, SceneSink& sink);

  // Another input of the same shape, or the other side of a comparison, without a new build:
  // the resident neurons and kept connections stay those build() chose, their values become
  // those of `values` and each contribution w·a is w times the new source activation (w taken at
  // build time as contribution / a; a connection whose source was exactly 0 then keeps 0). Each
  // segment is sorted again by the new scores, so filters stay prefixes, and the elements are
  // written into `sink` and published as a new generation, as build() does. Reuses the scene's
  // own arrays: no allocation beyond the first refresh's scratch (threads × 64K counters).
  // Cost: O(elements of the laid-out tensors) for the value ranges plus O(resident) for the rest
  // (about 1/10 of a build). `layout` must be the build's. Throws std::logic_error when the scene
  // was not built with SceneOptions::refreshable, std::invalid_argument when `values` differ in
  // shape from the build's. Not thread-safe with readers of this Scene (the caller owns it).
  void refresh(const Layout& layout, const Activations& values, SceneSink& sink, int threads = 1);

  const std::vector<Segment>& segments() const;
  const BuildStats& stats() const;
  float max_contribution() const;  // max |contribution| over kept connections but those from or into a side input (build.h)

  DrawCounts counts(const Filter& filter) const;  // O(segments · log n)
  NeuronInfo neuron(uint32_t index) const;  // throws std::out_of_range for a bad index
  std::optional<uint32_t> find(model::TensorId tensor, int64_t element) const;  // nullopt: not resident
  // Connections that fed `neuron` (top contributors, recursively `back` layers) and those it
  // feeds (`forward` layers), at most `fan` per neuron per step. Cost: one scan of the connection
  // segments touched per step (about 15 ms on mobilenet_v2 with 59M connections); throws
  // std::out_of_range for a bad index.
  Trace trace(uint32_t neuron, int back = 3, int forward = 1, int fan = 8) const;

  Scene();
  ~Scene();
  Scene(Scene&&) noexcept;
  Scene& operator=(Scene&&) noexcept;

  struct Impl;  // internal (model/scene/scene_impl.h)

 private:
  friend struct SceneBuilder;  // internal (model/scene/build.h)
  std::unique_ptr<Impl> impl_;
};

// Where a scene is written. The engine implements it over persistently mapped GPU buffers (and
// chooses how generations are kept apart from frames in flight); InMemorySink serves tests and
// tools. Called from one thread (the builder's).
class ImageSink;  // model/scene/tiles.h

class SceneSink {
 public:
  virtual ~SceneSink() = default;
  // Where the activation images of each run go (nullptr: this sink keeps none).
  virtual ImageSink* image_sink() { return nullptr; }
  // Memory for the next generation, at least the requested sizes; the caller fills it. Throws
  // std::runtime_error when it cannot provide that much.
  virtual std::span<Neuron> neurons(uint64_t count) = 0;
  virtual std::span<Connection> connections(uint64_t count) = 0;
  // Makes the written elements, with their segments and first draw counts, one generation that
  // frames may read from now on.
  virtual void publish(std::span<const Segment> segments, const DrawCounts& counts, float max_contribution) = 0;
  // A filter change on the published generation: counts only, no elements.
  virtual void write_counts(const DrawCounts& counts) = 0;
};

class InMemorySink final : public SceneSink {
 public:
  std::span<Neuron> neurons(uint64_t count) override;
  std::span<Connection> connections(uint64_t count) override;
  void publish(std::span<const Segment> segments, const DrawCounts& counts, float max_contribution) override;
  void write_counts(const DrawCounts& counts) override;

  std::vector<Neuron> neuron_data;
  std::vector<Connection> connection_data;
  std::vector<Segment> segments;
  DrawCounts counts;
  float max_contribution = 0;
  uint64_t generation = 0;  // incremented by publish()
};

}  // namespace nnxr::scene
