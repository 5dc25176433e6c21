// Layout: where every element of every laid-out tensor stands (DESIGN.md "Layout").
//
// Axes: X is depth (layers in order, layer_spacing apart; layers without laid-out tensors take no
// room, and very deep graphs get a narrower spacing), Y is up, Z is to the right of a viewer
// looking down +X.
// A tensor's shape folds to `tiles` tiles of tile_h × tile_w (leading dims of size 1 are dropped;
// the last two dims make a tile, the dims before them count tiles; vectors, 1×1 tiles and rows
// become one near-square tile). Tiles sit in a near-square grid, row-major from the top left, with
// a gap that grows with the tile so that feature maps read as separate images. A channels-last
// image input ([1, H, W, 3|4]) is one H × W·C tile with C columns to a neuron spacing: the picture
// at its aspect, each pixel's channels side by side within it. Blocks of the same
// layer stand side by side along Z, the row centred on Z = 0; each block is centred on Y = 0.
// Weight blocks (LayoutOptions::weights) stand half a layer before their first consumer.
// A chain of 64 slots or more far longer than it is wide and tall (over 16 times: the tiny BERT's 1,318 slots of 7x8
// maps made a 33 m line 0.2 m thick; the shared CNNs, detectors and small transformers are under
// 10) wraps into rows like lines of text: every row runs along +X from the same start, the next
// row below it, breaking where the name hierarchy changes group (encoder.layer.N), at half the
// depth pitch. Render frames the group labels over its first row too (engine words_to_frame).
#include <algorithm>
#include <chrono>
#include <cmath>

#include "model/scene/labels.h"
#include "model/scene/scene.h"

namespace nnxr::scene {

namespace {

// How one block turns element indices into positions.
struct Placement {
  float x = 0;
  float z0 = 0, y0 = 0;         // the first element of the first tile
  float step = 0;               // neuron spacing (between rows)
  float column_step = 0;        // between columns: step / columns_per_step
  int64_t columns_per_step = 1; // Block::columns_per_step
  float tile_dz = 0, tile_dy = 0;  // tile pitch
  int64_t elements = 0;
  int64_t tile_h = 1, tile_w = 1, tiles = 1, tiles_x = 1;
  int64_t gap = 0;  // in steps
};

struct Fold {
  int64_t tiles = 1, tile_h = 1, tile_w = 1;
  int64_t columns_per_step = 1;  // Block::columns_per_step
};

Fold near_square(int64_t n) {
  const auto w = std::max<int64_t>(1, int64_t(std::ceil(std::sqrt(double(n)))));
  return {1, (n + w - 1) / w, w};
}

// n as h × w exactly with h the largest divisor <= sqrt(n) (1 × n for a prime).
std::pair<int64_t, int64_t> exact_square(int64_t n) {
  for (auto h = int64_t(std::sqrt(double(n))); h > 1; --h)
    if (n % h == 0) return {h, n / h};
  return {1, n};
}

}  // namespace

std::array<int64_t, 3> fold_of(std::span<const int64_t> shape, int64_t elements) {
  auto out = [](Fold f) { return std::array<int64_t, 3>{f.tiles, f.tile_h, f.tile_w}; };
  size_t first = 0;
  while (first + 1 < shape.size() && shape[first] == 1) ++first;
  const auto dims = shape.subspan(first);
  if (dims.size() <= 1) return out(near_square(elements));  // a vector: one picture
  const int64_t h = dims[dims.size() - 2], w = dims[dims.size() - 1];
  if (h <= 0 || w <= 0) return out(near_square(elements));
  if (h * w == 1) return out(near_square(elements));  // C × 1 × 1 (a fully connected layer): one picture
  // Rows much wider than they are many (tokens × features, C × 1 × L, a sequence's channels):
  // each row becomes its own near-square tile, so that a token or a channel reads as a picture
  // rather than a one-pixel line. Exact factors only: a tile's elements stay contiguous.
  if ((h == 1 || w == 1 || w > 8 * h) && std::max(h, w) >= 16) {
    const auto [th, tw] = exact_square(w == 1 ? h : w);
    if (th > 1) return {elements / (th * tw), th, tw};
  }
  if (dims.size() == 2 && (h == 1 || w == 1)) return out(near_square(elements));
  return {elements / (h * w), h, w};  // C tiles of H × W; [heads, T, T]: an attention map a head
}

namespace {

Fold fold(std::span<const int64_t> shape, int64_t elements) {
  const auto f = fold_of(shape, elements);
  return {f[0], f[1], f[2]};
}

// A channels-last image input ([1, H, W, C] or [H, W, C], C 3 or 4): one tile of H rows of W · C
// elements (each row an image row, the channels of each pixel side by side), C columns to a
// neuron spacing so that the picture keeps its aspect, which the images draw as the picture
// (tiles.h ImagePicture); fold() would make H tiles of W × C, which read as no picture. Other
// tensors: fold().
Fold fold_tensor(const model::Graph& graph, model::TensorId id, std::span<const int64_t> shape, int64_t elements) {
  if (std::find(graph.inputs.begin(), graph.inputs.end(), id) != graph.inputs.end())
    if (const auto s = image_shape(shape); s && !s->nchw && (s->channels == 3 || s->channels == 4) && s->height * s->width * s->channels == elements)
      return {1, s->height, s->width * s->channels, s->channels};
  return fold(shape, elements);
}

std::array<float, 3> place(const Placement& p, int64_t e) {
  const int64_t per_tile = p.tile_h * p.tile_w;
  const int64_t t = e / per_tile, rem = e % per_tile;
  const int64_t r = rem / p.tile_w, c = rem % p.tile_w;
  const int64_t tx = t % p.tiles_x, ty = t / p.tiles_x;
  return {p.x, p.y0 - float(ty) * p.tile_dy - float(r) * p.step, p.z0 + float(tx) * p.tile_dz + float(c) * p.column_step};
}

}  // namespace

std::vector<bool> constant_tensors(const model::Graph& graph) {
  std::vector<bool> constant(graph.tensors.size(), false);
  for (model::TensorId id = 0; id < graph.tensors.size(); ++id) {
    const model::TensorKind k = graph.tensors[id].kind;
    constant[id] = k == model::TensorKind::Initializer || k == model::TensorKind::Constant;
  }
  // Nodes are in topological order: a node's outputs are constant when all its inputs are.
  for (const model::Node& n : graph.nodes) {
    bool all = true, any = false;
    for (model::TensorId in : n.inputs)
      if (in != model::kNone && in < constant.size()) {
        any = true;
        all = all && constant[in];
      }
    for (size_t o = 0; o < n.outputs.size(); ++o) {
      const model::TensorId out = n.outputs[o];
      if (out == model::kNone || out >= constant.size()) continue;
      if ((any && all) || (n.op_type == "Dropout" && o == 1)) constant[out] = true;
    }
  }
  return constant;
}

struct Layout::Impl {
  LayoutOptions options;
  std::vector<Block> blocks;
  std::vector<Placement> placements;  // parallel to blocks
  std::vector<int32_t> block_of;      // by TensorId; -1 when not laid out
  std::array<float, 3> min{}, max{};
  double build_ms = 0;
};

Layout::Layout() : impl_(std::make_unique<Impl>()) {}
Layout::~Layout() = default;
Layout::Layout(Layout&&) noexcept = default;
Layout& Layout::operator=(Layout&&) noexcept = default;

const std::vector<Block>& Layout::blocks() const { return impl_->blocks; }
const LayoutOptions& Layout::options() const { return impl_->options; }
std::array<float, 3> Layout::bounds_min() const { return impl_->min; }
std::array<float, 3> Layout::bounds_max() const { return impl_->max; }
double Layout::build_ms() const { return impl_->build_ms; }

bool Layout::needs_run(const model::Graph& graph) {
  return std::any_of(graph.tensors.begin(), graph.tensors.end(), [](const model::Tensor& t) {
    return (t.dtype == model::DType::Float || t.dtype == model::DType::Float16) && (!t.rank_known || !t.elements());
  });
}

const Block* Layout::block(model::TensorId tensor) const {
  if (tensor >= impl_->block_of.size() || impl_->block_of[tensor] < 0) return nullptr;
  return &impl_->blocks[size_t(impl_->block_of[tensor])];
}

std::array<float, 3> Layout::position(model::TensorId tensor, int64_t element) const {
  if (tensor >= impl_->block_of.size() || impl_->block_of[tensor] < 0) return {0, 0, 0};
  const Placement& p = impl_->placements[size_t(impl_->block_of[tensor])];
  return place(p, std::clamp<int64_t>(element, 0, p.elements - 1));
}

Layout Layout::build(const model::Graph& graph, const LayoutOptions& options, const Activations* run) {
  const auto start = std::chrono::steady_clock::now();
  Layout layout;
  Impl& im = *layout.impl_;
  im.options = options;
  const float step = options.neuron_spacing > 0 && std::isfinite(options.neuron_spacing) ? options.neuron_spacing : 0.004f;
  const float pitch = options.layer_spacing > 0 && std::isfinite(options.layer_spacing) ? options.layer_spacing : 25 * step;
  im.block_of.assign(graph.tensors.size(), -1);

  // Which tensors, and at which slot along X (2·layer for activations, one less for weights).
  struct Item {
    int slot;
    model::TensorId id;
    int64_t elements;
    std::span<const int64_t> shape;
  };
  std::vector<Item> items;
  const std::vector<bool> constant = options.constants ? std::vector<bool>() : constant_tensors(graph);
  for (model::TensorId id = 0; id < graph.tensors.size(); ++id) {
    const model::Tensor& t = graph.tensors[id];
    if (t.dtype != model::DType::Float && t.dtype != model::DType::Float16) continue;
    const bool weight_kind = t.kind == model::TensorKind::Initializer || t.kind == model::TensorKind::Constant;
    if (!constant.empty() && constant[id] && !weight_kind) continue;  // derived from weights alone, or a mask
    int64_t n = t.rank_known ? t.elements().value_or(-1) : -1;
    std::span<const int64_t> shape = t.shape;
    if (n < 0 && run && id < run->size() && !(*run)[id].data.empty()) {  // a shape only the run knows
      shape = (*run)[id].shape;
      n = int64_t((*run)[id].data.size());
    }
    if (n <= 0) continue;
    const bool weight = t.kind == model::TensorKind::Initializer || t.kind == model::TensorKind::Constant;
    if (weight) {
      if (!options.weights || t.consumers.empty()) continue;
      int first = std::numeric_limits<int>::max();
      for (model::NodeId c : t.consumers)
        if (c < graph.nodes.size()) first = std::min(first, graph.nodes[c].layer);
      if (first == std::numeric_limits<int>::max()) continue;
      items.push_back({2 * first - 1, id, n, shape});
    } else {
      items.push_back({2 * t.layer, id, n, shape});
    }
  }
  std::stable_sort(items.begin(), items.end(), [](const Item& a, const Item& b) { return a.slot < b.slot; });

  im.min = {INFINITY, INFINITY, INFINITY};
  im.max = {-INFINITY, -INFINITY, -INFINITY};
  const float branch_gap = std::max(0.05f, 12 * step);
  // X keeps the order of layers but gives room only to layers that have blocks (graphs full of
  // integer shape arithmetic have many layers without float tensors), and the whole depth is
  // capped at kMaxDepth metres by narrowing the pitch (never below a quarter of it).
  std::vector<int> slots;
  for (const Item& it : items)
    if (slots.empty() || slots.back() != it.slot) slots.push_back(it.slot);
  float depth_pitch = pitch;
  double steps = 0;  // in pitches: a weight slot is half a pitch before its layer
  for (size_t i = 1; i < slots.size(); ++i) steps += slots[i] - slots[i - 1] == 1 ? 0.5 : 1.0;
  constexpr float kMaxDepth = 20.f;
  if (steps * pitch > kMaxDepth) depth_pitch = std::max(pitch / 4, float(kMaxDepth / steps));
  // First pass: fold every block of each slot and stand them side by side (Z), and give each slot
  // its place along the depth of one long line.
  struct Run {
    size_t first, last;  // items of one slot
    float x = 0;         // along the unwrapped line
    std::vector<Placement> row;
    std::vector<float> widths, heights;
    float total = 0;     // across Z, with the gaps between branches
  };
  std::vector<Run> runs;
  float x = 0;
  for (size_t first = 0; first < items.size();) {
    size_t last = first;
    while (last < items.size() && items[last].slot == items[first].slot) ++last;
    Run run{first, last};
    for (size_t i = first; i < last; ++i) {
      const Fold f = fold_tensor(graph, items[i].id, items[i].shape, items[i].elements);
      Placement p;
      p.step = step;
      p.columns_per_step = f.columns_per_step;
      p.column_step = step / float(f.columns_per_step);
      p.elements = items[i].elements;
      p.tile_h = f.tile_h;
      p.tile_w = f.tile_w;
      p.tiles = f.tiles;
      const int64_t wide = f.tile_w / f.columns_per_step;  // the tile's width in steps
      p.gap = std::max<int64_t>(2, std::max(f.tile_h, wide) / 12);
      p.tile_dz = float(f.tile_w) * p.column_step + float(p.gap) * step;
      p.tile_dy = float(f.tile_h + p.gap) * step;
      const double tx = std::round(std::sqrt(double(f.tiles) * p.tile_dy / p.tile_dz));
      p.tiles_x = std::clamp<int64_t>(int64_t(tx), 1, f.tiles);
      const int64_t tiles_y = (f.tiles + p.tiles_x - 1) / p.tiles_x;
      const float w = float(p.tiles_x) * p.tile_dz - float(p.gap) * step - p.column_step;
      const float h = float(tiles_y) * p.tile_dy - float(p.gap + 1) * step;
      run.row.push_back(p);
      run.widths.push_back(w);
      run.heights.push_back(h);
      run.total += w;
    }
    run.total += branch_gap * float(run.row.size() - 1);
    if (first > 0) x += items[first].slot - items[first - 1].slot == 1 ? 0.5f * depth_pitch : depth_pitch;
    run.x = x;
    runs.push_back(std::move(run));
    first = last;
  }

  // A line far longer than it is wide and tall (a deep chain of small blocks: BERT's 20 m of 7x8
  // maps) wraps into rows, read like lines of text: each row runs along +X from the same start, the
  // next row below it. Rows break where the name hierarchy changes group (encoder.layer.N), near
  // equal lengths, and are as many as make the whole about kAspect times as long as it is tall, the
  // gap between rows leaving room for the rows' labels (about a sixth of a row's length).
  float depth = runs.empty() ? 0.f : runs.back().x;
  float across = 0, tallest = 0;
  for (const Run& r : runs) {
    across = std::max(across, r.total);
    for (float h : r.heights) tallest = std::max(tallest, h);
  }
  std::vector<float> row_x0;   // per run: the x its row starts at
  std::vector<float> row_y;    // per run: its row's centre height
  row_x0.assign(runs.size(), 0.f);
  row_y.assign(runs.size(), 0.f);
  constexpr float kLong = 16.f, kAspect = 1.6f, kRowGap = 0.16f;
  constexpr float kSqueeze = 0.5f;
  constexpr size_t kMinRuns = 64;  // a chain of a few dozen layers stays one line
  const float thick = std::max({across, tallest, step});
  if (depth > kLong * thick && runs.size() >= kMinRuns) {
    // Rows of blocks seen at a slant read as bands anyway: half the pitch makes the rows shorter,
    // so the whole (and each block in the picture) is larger for the same frame.
    for (Run& r : runs) r.x *= kSqueeze;
    depth *= kSqueeze;
    auto gap_of = [&](float length) { return std::max(0.5f * tallest, kRowGap * length); };
    int rows = 1;
    float best = INFINITY;
    for (int r = 1; r <= 64 && size_t(r) * 2 <= runs.size(); ++r) {
      const float length = depth / float(r), height = float(r) * tallest + float(r - 1) * gap_of(length);
      const float miss = std::abs(std::log(length / std::max(height, step) / kAspect));
      if (miss < best) best = miss, rows = r;
    }
    if (rows > 1) {
      // Where the name hierarchy changes group between runs (a candidate row break).
      std::vector<bool> boundary(runs.size(), false);
      std::string previous;
      for (size_t i = 0; i < runs.size(); ++i) {
        const model::Tensor& t = graph.tensors[items[runs[i].first].id];
        const std::string name = t.producer != model::kNone && !graph.nodes[t.producer].name.empty()
                                     ? graph.nodes[t.producer].name
                                     : t.name;
        const std::string g = group_of(name);
        boundary[i] = i > 0 && g != previous;
        previous = g;
      }
      const float length = depth / float(rows);
      std::vector<size_t> starts{0};
      for (int k = 1; k < rows; ++k) {
        const float ideal = float(k) * length;
        size_t nearest = starts.back() + 1, at_group = 0;
        float nearest_d = INFINITY, group_d = INFINITY;
        for (size_t i = starts.back() + 1; i < runs.size(); ++i) {
          const float d = std::abs(runs[i].x - ideal);
          if (d < nearest_d) nearest_d = d, nearest = i;
          if (boundary[i] && d < group_d) group_d = d, at_group = i;
        }
        const size_t start = group_d <= 0.25f * length ? at_group : nearest;
        if (start <= starts.back() || start >= runs.size()) break;
        starts.push_back(start);
      }
      const float pitch_y = tallest + gap_of(length);
      for (size_t k = 0; k < starts.size(); ++k) {
        const size_t end = k + 1 < starts.size() ? starts[k + 1] : runs.size();
        for (size_t i = starts[k]; i < end; ++i) {
          row_x0[i] = runs[starts[k]].x;
          row_y[i] = -float(k) * pitch_y;
        }
      }
    }
  }

  for (size_t ri = 0; ri < runs.size(); ++ri) {
    Run& run = runs[ri];
    const size_t first = run.first;
    std::vector<Placement>& row = run.row;
    const float bx = run.x - row_x0[ri], cy = row_y[ri];
    float z = -run.total / 2;
    for (size_t i = 0; i < row.size(); ++i) {
      Placement& p = row[i];
      p.x = bx;
      p.z0 = z;
      p.y0 = cy + run.heights[i] / 2;
      Block b;
      b.tensor = items[first + i].id;
      b.layer = graph.tensors[b.tensor].layer;
      b.elements = items[first + i].elements;
      // Bounds from the extreme grid corners, computed as place() computes positions.
      const int64_t tiles_y = (p.tiles + p.tiles_x - 1) / p.tiles_x;
      b.min = {bx, p.y0 - float(tiles_y - 1) * p.tile_dy - float(p.tile_h - 1) * p.step, p.z0};
      b.max = {bx, p.y0, p.z0 + float(p.tiles_x - 1) * p.tile_dz + float(p.tile_w - 1) * p.column_step};
      b.tiles = p.tiles;
      b.columns_per_step = p.columns_per_step;
      b.tile_h = p.tile_h;
      b.tile_w = p.tile_w;
      b.tiles_x = p.tiles_x;
      b.tiles_y = (p.tiles + p.tiles_x - 1) / p.tiles_x;
      for (int a = 0; a < 3; ++a) {
        im.min[size_t(a)] = std::min(im.min[size_t(a)], b.min[size_t(a)]);
        im.max[size_t(a)] = std::max(im.max[size_t(a)], b.max[size_t(a)]);
      }
      im.block_of[b.tensor] = int32_t(im.blocks.size());
      im.blocks.push_back(b);
      im.placements.push_back(p);
      z += run.widths[i] + branch_gap;
    }
  }
  if (im.blocks.empty()) im.min = im.max = {0, 0, 0};
  im.build_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return layout;
}

std::optional<Layout::Hit> Layout::pick(std::array<float, 3> origin, std::array<float, 3> direction, float radius) const {
  const float len = std::sqrt(direction[0] * direction[0] + direction[1] * direction[1] + direction[2] * direction[2]);
  if (!(len > 0) || !std::isfinite(len) || !(radius >= 0)) return std::nullopt;
  const std::array<float, 3> d = {direction[0] / len, direction[1] / len, direction[2] / len};
  if (std::abs(d[0]) < 1e-6f) return std::nullopt;  // parallel to every block
  std::optional<Hit> best;
  for (size_t i = 0; i < impl_->blocks.size(); ++i) {
    const Block& b = impl_->blocks[i];
    const Placement& p = impl_->placements[i];
    const float t = (p.x - origin[0]) / d[0];
    if (t < -radius) continue;
    const float y = origin[1] + t * d[1], z = origin[2] + t * d[2];
    const float slack = radius / std::abs(d[0]);  // in-plane reach of the radius for an oblique ray
    if (y < b.min[1] - slack || y > b.max[1] + slack || z < b.min[2] - slack || z > b.max[2] + slack) continue;
    // The element nearest to the hit point in the plane (u in columns, v in rows).
    const double u = (z - p.z0) / p.column_step, v = (p.y0 - y) / p.step;
    const double gap_u = double(p.gap) * double(p.columns_per_step);
    const double pw = double(p.tile_w) + gap_u, ph = double(p.tile_h + p.gap);
    const int64_t tiles_y = (p.tiles + p.tiles_x - 1) / p.tiles_x;
    const int64_t tx = std::clamp<int64_t>(int64_t(std::floor((u + 0.5 * gap_u) / pw)), 0, p.tiles_x - 1);
    const int64_t ty = std::clamp<int64_t>(int64_t(std::floor((v + 0.5 * double(p.gap)) / ph)), 0, tiles_y - 1);
    const int64_t c = std::clamp<int64_t>(std::llround(u - double(tx) * pw), 0, p.tile_w - 1);
    const int64_t r = std::clamp<int64_t>(std::llround(v - double(ty) * ph), 0, p.tile_h - 1);
    const int64_t tile = std::min(ty * p.tiles_x + tx, p.tiles - 1);
    const int64_t e = std::min(tile * p.tile_h * p.tile_w + r * p.tile_w + c, p.elements - 1);
    const auto q = place(p, e);
    const std::array<float, 3> w = {q[0] - origin[0], q[1] - origin[1], q[2] - origin[2]};
    const float along = w[0] * d[0] + w[1] * d[1] + w[2] * d[2];
    if (along < 0) continue;
    const std::array<float, 3> perp = {w[0] - along * d[0], w[1] - along * d[1], w[2] - along * d[2]};
    const float dist = std::sqrt(perp[0] * perp[0] + perp[1] * perp[1] + perp[2] * perp[2]);
    if (dist > radius) continue;
    if (!best || along < best->distance) best = Hit{b.tensor, e, along};
  }
  return best;
}

}  // namespace nnxr::scene
