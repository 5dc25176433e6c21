// Activation images (model/scene/tiles.h): planning, the half conversion, max-|a| pyramids and
// per-tensor quantiles of |a|.
#include "model/scene/tiles.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <tuple>
#include <vector>

#include "model/half.h"
#include "model/scene/parallel.h"

namespace nnxr::scene {
namespace {

constexpr uint16_t kEmpty = 0x3FFF;  // a pyramid entry over no element (a NaN: drawn as nothing)

uint64_t div_up(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

// Pyramid levels above level 0 for a rows × cols tile, and the entries they hold.
struct PyramidSize {
  uint32_t levels = 0;
  uint64_t entries = 0;
};
// Levels stop at one of at most 5 × 5 entries: the shader reads up to 5 × 5 entries of the level
// it needs, or of the top one, which then holds all of them.
PyramidSize pyramid_size(uint64_t rows, uint64_t cols) {
  PyramidSize p;
  while (rows > 5 || cols > 5) {
    rows = div_up(rows, 4);
    cols = div_up(cols, 4);
    ++p.levels;
    p.entries += rows * cols;
  }
  return p;
}

// |value| order of codes (NaN above every number).
inline uint16_t magnitude(uint16_t c) { return uint16_t(c & 0x1FFFu); }

// Half bit patterns to codes in place (model/scene/tiles.h): the two low mantissa bits rounded
// off to nearest even; a finite half stays finite, infinities and NaNs stay what they are.
void halves_to_codes(uint16_t* h, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i) {
    const uint32_t x = h[i], mag = x & 0x7FFFu;
    const uint32_t rounded = std::min<uint32_t>((mag + 1 + ((mag >> 2) & 1)) >> 2, 0x1EFFu);
    const uint32_t code_mag = mag < 0x7C00u ? rounded : mag == 0x7C00u ? 0x1F00u : 0x1FFFu;
    h[i] = uint16_t(((x >> 2) & 0x2000u) | code_mag);
  }
}

// `n` codes (n a multiple of 16) packed 14 bits each into 32-bit words from out[0], code i at bit
// 14 i (16 codes fill 7 words exactly).
void pack_codes(const uint16_t* codes, uint64_t n, uint32_t* out) {
  for (uint64_t g = 0; g < n; g += 16, codes += 16, out += 7) {
    uint64_t acc = 0;
    int bits = 0, w = 0;
    for (int j = 0; j < 16; ++j) {
      acc |= uint64_t(codes[j] & 0x3FFFu) << bits;
      bits += 14;
      if (bits >= 32) {
        out[w++] = uint32_t(acc);
        acc >>= 32;
        bits -= 32;
      }
    }
  }
}

// The pyramid's comparison key of a code: larger magnitude first, then positive before negative
// (NaN above every number).
inline uint16_t key_of(uint16_t c) { return uint16_t(((c & 0x1FFFu) << 1) | ((~c >> 13) & 1u)); }
inline uint16_t code_of(uint16_t key) { return uint16_t((key >> 1) | ((~key & 1u) << 13)); }

struct Plan {
  ImagesStats stats;
  uint64_t tiles_offset = 0, data_offset = 0;
  struct TensorPlan {
    const Block* block = nullptr;
    uint64_t data = 0;      // index of the tensor's first half
    uint64_t pyramid = 0;   // index of its first tile's pyramid
    uint64_t first_tile = 0;
    PyramidSize per_tile;   // the same for every tile of a block
  };
  std::vector<TensorPlan> tensors;
};

Plan make_plan(const Layout& layout) {
  Plan p;
  const auto& blocks = layout.blocks();
  p.tensors.reserve(blocks.size());
  uint64_t halves = 0, tiles = 0;
  for (const Block& b : blocks) {
    Plan::TensorPlan t;
    t.block = &b;
    t.first_tile = tiles;
    t.data = halves;
    halves += uint64_t(b.elements);
    t.per_tile = pyramid_size(uint64_t(b.tile_h), uint64_t(b.tile_w));
    t.pyramid = halves;
    halves += t.per_tile.entries * uint64_t(b.tiles);
    halves = (halves + 15) & ~uint64_t(15);  // each tensor's codes start at a 32-bit word
    tiles += uint64_t(b.tiles);
    p.stats.activations_total += uint64_t(b.elements);
    p.tensors.push_back(t);
  }
  p.stats.tensors = blocks.size();
  p.stats.tiles = tiles;
  p.tiles_offset = sizeof(ImagesHeaderGpu) + sizeof(TensorImageGpu) * blocks.size();
  p.data_offset = (p.tiles_offset + sizeof(TileGpu) * tiles + 15) & ~uint64_t(15);
  p.stats.bytes = p.data_offset + halves / 16 * 28 + 16;  // 14 bits a code; 16 bytes of slack
  if (halves > 0xFFFFFFFFull) throw std::invalid_argument("activation images: more than 2^32 values");
  return p;
}

float step_of(const Layout& layout) {
  const float s = layout.options().neuron_spacing;
  return s > 0 && std::isfinite(s) ? s : 0.004f;
}

// The picture that names `b`'s tensor when the tensor is laid out as one H × W tile per channel
// of [1, C, H, W], or as one H × W·C tile of [1, H, W, C] with C columns to a spacing (the layout's
// channels-last image input), C 3 or 4; nullptr: the colour map.
const ImagePicture* picture_of_block(const Block& b, const TensorValue& v, std::span<const ImagePicture> pictures) {
  const ImagePicture* p = nullptr;
  for (const ImagePicture& candidate : pictures)
    if (candidate.tensor == b.tensor) p = &candidate;
  if (!p || p->mapping.from_values) return nullptr;
  const auto shape = image_shape(v.shape);
  if (!shape || (shape->channels != 3 && shape->channels != 4)) return nullptr;
  if (shape->nchw ? b.tile_h != shape->height || b.tile_w != shape->width || b.tiles < shape->channels
                  : b.tile_h != shape->height || b.tile_w != shape->width * shape->channels || b.tiles != 1 ||
                        b.columns_per_step != shape->channels)
    return nullptr;
  return p;
}

// One tensor: halves, pyramids, quantiles, tile records.
// The true-colour mapping of `b` when a picture names its tensor and picture_of_block() takes it.
void picture_info(const Block& b, const TensorValue& v, std::span<const ImagePicture> pictures, uint64_t data,
                  TensorImageGpu& info) {
  const ImagePicture* p = picture_of_block(b, v, pictures);
  if (!p) return;
  const auto shape = image_shape(v.shape);
  const PictureMapping& m = p->mapping;
  const float scale = m.scale != 0 ? m.scale : 1.0f;
  info.picture = 1;
  info.picture_base = uint32_t(data);
  // NCHW: channel planes of H · W; NHWC: the channels side by side, C to a pixel.
  info.picture_plane = shape->nchw ? uint32_t(shape->height * shape->width) : 1u;
  for (uint32_t i = 0; i < 3; ++i) {
    const uint32_t ch = m.bgr ? 2 - i : i;  // the tensor's channel shown as display channel i
    const float mean = ch < m.mean.size() ? m.mean[ch] : m.mean.empty() ? 0.0f : m.mean[0];
    const float deviation = ch < m.std.size() ? m.std[ch] : m.std.empty() ? 1.0f : m.std[0];
    info.picture_channels |= ch << (8 * i);
    info.colour_mul[i] = deviation / scale / 255.0f;
    info.colour_add[i] = mean / scale / 255.0f;
  }
}

// `v`: the tensor's values (nullptr: not computed).
void write_tensor(const Layout& layout, const Plan& plan, size_t index, const TensorValue* v, uint32_t tensor_index,
                  std::byte* base, std::span<const ImagePicture> pictures) {
  const Plan::TensorPlan& tp = plan.tensors[index];
  const Block& b = *tp.block;
  const uint64_t n = uint64_t(b.elements);
  // The tensor's codes (level 0, then its tiles' pyramids) are made here, then packed into the
  // image at the word where they start.
  const uint64_t span = ((tp.pyramid + tp.per_tile.entries * uint64_t(b.tiles) + 15) & ~uint64_t(15)) - tp.data;
  thread_local std::vector<uint16_t> scratch;
  if (scratch.size() < span) scratch.resize(span);
  uint16_t* codes = scratch.data();
  uint16_t* data = codes;  // level 0
  TensorImageGpu info;
  info.layer = uint32_t(std::max(0, b.layer));
  info.columns_per_step = uint32_t(std::max<int64_t>(1, b.columns_per_step));
  const bool computed = v && v->data.size() >= n;
  info.computed = computed ? 1 : 0;
  if (computed) {
    picture_info(b, *v, pictures, tp.data, info);
    model::float_to_half(v->data.data(), data, n);
    halves_to_codes(data, n);
    float lo = INFINITY, hi = -INFINITY;
    for (uint64_t i = 0; i < n; ++i) {
      const float x = v->data[i];
      lo = x < lo ? x : lo;
      hi = x > hi ? x : hi;
    }
    info.value_min = std::isfinite(lo) ? lo : 0;
    info.value_max = std::isfinite(hi) ? hi : 0;
    // Quantiles of |a| as drawn (the codes) through a histogram of their 13-bit magnitudes, four
    // interleaved so that runs of one value (Relu's zeros) do not wait on one counter.
    thread_local std::vector<uint32_t> histograms;
    histograms.assign(4 * 0x2000, 0);
    uint32_t* h0 = histograms.data();
    uint32_t *h1 = h0 + 0x2000, *h2 = h1 + 0x2000, *h3 = h2 + 0x2000;
    uint64_t i = 0;
    for (; i + 4 <= n; i += 4) {
      ++h0[magnitude(data[i])];
      ++h1[magnitude(data[i + 1])];
      ++h2[magnitude(data[i + 2])];
      ++h3[magnitude(data[i + 3])];
    }
    for (; i < n; ++i) ++h0[magnitude(data[i])];
    for (uint32_t m = 0; m < 0x2000; ++m) h0[m] += h1[m] + h2[m] + h3[m];
    uint64_t below = 0;  // elements with magnitude < m
    uint32_t m = 0;
    for (int q = 0; q < kImageQuantiles; ++q) {
      const uint64_t rank = uint64_t(std::llround(image_quantile(q) * double(n)));
      if (rank >= n) {
        info.quantiles[q] = INFINITY;  // keeps nothing
        continue;
      }
      while (below + h0[m] <= rank) below += h0[m++];
      info.quantiles[q] = model::half_to_float(uint16_t(m << 2));
    }
  } else {
    std::fill_n(data, n, uint16_t(0));
    for (float& q : info.quantiles) q = INFINITY;
  }
  const uint64_t per_tile = uint64_t(b.tile_h) * uint64_t(b.tile_w);
  info.first_tile = uint32_t(tp.first_tile);
  info.tile_rows = uint32_t(b.tile_h);
  info.tile_cols = uint32_t(b.tile_w);
  info.elements = uint32_t(n);
  info.data = uint32_t(tp.data);
  info.pyramid = uint32_t(tp.pyramid);
  info.levels = tp.per_tile.levels;
  info.pyramid_entries = uint32_t(tp.per_tile.entries);
  std::memcpy(base + sizeof(ImagesHeaderGpu) + sizeof(TensorImageGpu) * index, &info, sizeof info);

  // Tiles and their pyramids.
  std::vector<uint16_t> column_keys;
  for (int64_t t = 0; t < b.tiles; ++t) {
    const uint64_t first = uint64_t(t) * per_tile;
    TileGpu gpu;
    const auto pos = layout.position(b.tensor, int64_t(first));
    gpu.x = pos[0];
    gpu.y = pos[1];
    gpu.z = pos[2];
    gpu.tensor = tensor_index;
    std::memcpy(base + plan.tiles_offset + sizeof(TileGpu) * (tp.first_tile + uint64_t(t)), &gpu, sizeof gpu);
    ImageTile tile;
    tile.valid = uint32_t(std::min<uint64_t>(per_tile, n - std::min(n, first)));
    tile.pyramid = uint32_t(tp.pyramid + uint64_t(t) * tp.per_tile.entries);
    tile.levels = tp.per_tile.levels;

    // Level k from level k − 1 (level 0 being the tile's data), 4 × 4 entries at a time.
    uint64_t rows = b.tile_h, cols = b.tile_w;
    const uint16_t* src = data + first;
    uint64_t src_valid = tile.valid;  // entries of the source level that exist (row-major prefix)
    uint16_t* dst = codes + (tile.pyramid - tp.data);
    for (uint32_t k = 0; k < tile.levels; ++k) {
      const uint64_t r2 = div_up(rows, 4), c2 = div_up(cols, 4);
      if (k == 0 && src_valid == rows * cols) {
        // Level 1 of a whole tile (15/16 of the work): the strongest of each column over four
        // rows, then of four columns, on keys that order by magnitude.
        column_keys.resize(cols);
        for (uint64_t r = 0; r < r2; ++r) {
          const uint16_t* row = src + r * 4 * cols;
          const uint64_t take = std::min<uint64_t>(4, rows - r * 4);
          for (uint64_t c = 0; c < cols; ++c) column_keys[c] = key_of(row[c]);
          for (uint64_t j = 1; j < take; ++j)
            for (uint64_t c = 0; c < cols; ++c) column_keys[c] = std::max(column_keys[c], key_of(row[j * cols + c]));
          for (uint64_t c = 0; c < c2; ++c) {
            uint16_t best = column_keys[c * 4];
            for (uint64_t cc = c * 4 + 1; cc < std::min(cols, c * 4 + 4); ++cc) best = std::max(best, column_keys[cc]);
            dst[r * c2 + c] = code_of(best);
          }
        }
      } else {
        for (uint64_t r = 0; r < r2; ++r)
          for (uint64_t c = 0; c < c2; ++c) {
            uint16_t best = kEmpty;
            int best_key = -1;
            for (uint64_t rr = r * 4; rr < std::min(rows, r * 4 + 4); ++rr)
              for (uint64_t cc = c * 4; cc < std::min(cols, c * 4 + 4); ++cc) {
                const uint64_t i = rr * cols + cc;
                if (i >= src_valid) continue;
                const uint16_t h = src[i];
                if (k > 0 && h == kEmpty) continue;
                if (int(key_of(h)) > best_key) {
                  best_key = key_of(h);
                  best = h;
                }
              }
            dst[r * c2 + c] = best;
          }
      }
      src = dst;
      src_valid = r2 * c2;
      dst += r2 * c2;
      rows = r2;
      cols = c2;
    }
  }
  // Between level 0 and the pyramids, and after them: zeros, then all of it packed.
  std::fill(codes + n, codes + (tp.pyramid - tp.data), uint16_t(0));
  std::fill(codes + (tp.pyramid - tp.data) + tp.per_tile.entries * uint64_t(b.tiles), codes + span, uint16_t(0));
  pack_codes(codes, span, reinterpret_cast<uint32_t*>(base + plan.data_offset) + tp.data / 16 * 7);
}

}  // namespace

float image_value(std::span<const std::byte> image, uint32_t i) {
  ImagesHeaderGpu header;
  std::memcpy(&header, image.data(), sizeof header);
  const uint64_t bit = uint64_t(i) * 14, at = header.data_offset + bit / 32 * 4;
  uint64_t words = 0;
  std::memcpy(&words, image.data() + at, std::min<uint64_t>(8, image.size() - at));
  return model::half_to_float(uint16_t(((words >> (bit % 32)) & 0x3FFFu) << 2));
}

ImageTile image_tile(std::span<const std::byte> image, uint32_t t) {
  ImagesHeaderGpu header;
  std::memcpy(&header, image.data(), sizeof header);
  TileGpu gpu;
  std::memcpy(&gpu, image.data() + header.tiles_offset + sizeof(TileGpu) * t, sizeof gpu);
  TensorImageGpu info;
  std::memcpy(&info, image.data() + sizeof(ImagesHeaderGpu) + sizeof(TensorImageGpu) * gpu.tensor, sizeof info);
  const uint32_t local = t - info.first_tile, per = info.tile_rows * info.tile_cols, first = local * per;
  const float column_step = header.step / float(std::max(1u, info.columns_per_step));
  return {gpu.x, gpu.y, gpu.z, header.step, column_step, info.tile_rows, info.tile_cols, gpu.tensor,
          std::min(per, info.elements - std::min(info.elements, first)), info.data + first,
          info.pyramid + local * info.pyramid_entries, info.levels};
}

float image_rounded(float x) {
  uint16_t h = model::float_to_half(x);
  halves_to_codes(&h, 1);
  return model::half_to_float(uint16_t(h << 2));
}

ImagesStats plan_images(const Layout& layout, const Activations* values) {
  ImagesStats stats = make_plan(layout).stats;
  if (values)
    for (const Block& b : layout.blocks())
      if (b.tensor < values->size() && (*values)[b.tensor].data.size() >= uint64_t(b.elements))
        stats.activations_shown += uint64_t(b.elements);
  return stats;
}

struct ImageWriter::State {
  const Layout& layout;
  Plan plan;
  std::byte* base = nullptr;
  std::span<const ImagePicture> pictures;
  std::vector<uint8_t> written;      // by plan index (bytes: written from several threads)
  std::atomic<int64_t> write_ns{0};  // time spent writing
};

ImageWriter::ImageWriter(const Layout& layout, std::span<std::byte> out, std::span<const ImagePicture> pictures)
    : state_(std::make_unique<State>(layout, make_plan(layout))) {
  State& st = *state_;
  if (out.size() < st.plan.stats.bytes) throw std::invalid_argument("activation images: the buffer is too small");
  if (reinterpret_cast<uintptr_t>(out.data()) % 16) throw std::invalid_argument("activation images: unaligned buffer");
  st.base = out.data();
  st.pictures = pictures;
  st.written.assign(st.plan.tensors.size(), 0);
  // The bytes no tensor writes: the alignment gap before the codes and the slack after them.
  // Zeroed, so that the image is the same bytes whatever the memory held before.
  const uint64_t tiles_end = st.plan.tiles_offset + sizeof(TileGpu) * st.plan.stats.tiles;
  std::memset(st.base + tiles_end, 0, st.plan.data_offset - tiles_end);
  std::memset(st.base + st.plan.stats.bytes - 16, 0, 16);
}

ImageWriter::~ImageWriter() = default;

void ImageWriter::write(model::TensorId tensor, const TensorValue& value) {
  State& st = *state_;
  const Block* b = st.layout.block(tensor);
  if (!b) return;
  const auto start = std::chrono::steady_clock::now();
  const auto index = size_t(b - st.layout.blocks().data());
  write_tensor(st.layout, st.plan, index, &value, uint32_t(index), st.base, st.pictures);
  st.written[index] = 1;
  st.write_ns += std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count();
}

ImagesStats ImageWriter::finish(const Activations& values, int threads) {
  State& st = *state_;
  const auto start = std::chrono::steady_clock::now();
  Plan& plan = st.plan;
  std::byte* base = st.base;
  parallel_for(plan.tensors.size(), threads, [&](size_t i) {
    if (st.written[i]) return;
    const model::TensorId id = plan.tensors[i].block->tensor;
    write_tensor(st.layout, plan, i, id < values.size() ? &values[id] : nullptr, uint32_t(i), base, st.pictures);
    st.written[i] = 1;
  });
  ImagesHeaderGpu header;
  header.tensor_count = uint32_t(plan.tensors.size());
  header.tile_count = uint32_t(plan.stats.tiles);
  header.tiles_offset = uint32_t(plan.tiles_offset);
  header.data_offset = uint32_t(plan.data_offset);
  header.step = step_of(st.layout);
  ImagesStats stats = plan.stats;
  for (size_t i = 0; i < plan.tensors.size(); ++i) {
    TensorImageGpu info;
    std::memcpy(&info, base + sizeof(ImagesHeaderGpu) + sizeof(TensorImageGpu) * i, sizeof info);
    if (info.computed) {
      stats.activations_shown += uint64_t(plan.tensors[i].block->elements);
      header.value_abs_max = std::max({header.value_abs_max, std::abs(info.value_min), std::abs(info.value_max)});
    }
  }
  std::memcpy(base, &header, sizeof header);
  stats.ms = double(st.write_ns.load()) / 1e6 +
             std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return stats;
}

ImagesStats write_images(const Layout& layout, const Activations& values, std::span<std::byte> out, int threads,
                         std::span<const ImagePicture> pictures) {
  return ImageWriter(layout, out, pictures).finish(values, threads);
}

std::vector<uint8_t> image_filter(const model::Graph& graph, const Layout& layout, const Filter& filter) {
  std::vector<model::TensorId> tensors = filter.tensors;
  std::sort(tensors.begin(), tensors.end());
  const uint8_t outside = filter.outside == Filter::Outside::Dim ? 1 : 2;
  std::vector<uint8_t> out;
  out.reserve(layout.blocks().size());
  for (const Block& b : layout.blocks()) {
    bool inside = tensors.empty() || std::binary_search(tensors.begin(), tensors.end(), b.tensor);
    if (inside && !filter.op_types.empty()) {
      const model::Tensor* t = b.tensor < graph.tensors.size() ? &graph.tensors[b.tensor] : nullptr;
      const std::string* op = t && t->producer != model::kNone && t->producer < graph.nodes.size() ? &graph.nodes[t->producer].op_type : nullptr;
      inside = op && std::find(filter.op_types.begin(), filter.op_types.end(), *op) != filter.op_types.end();
    }
    out.push_back(inside ? 0 : outside);
  }
  return out;
}

ImagesStats publish_images(const Layout& layout, const Activations& values, ImageSink& sink, int threads,
                           std::span<const ImagePicture> pictures) {
  const ImagesStats planned = plan_images(layout);
  const std::span<std::byte> memory = sink.image(planned.bytes);
  const ImagesStats stats = write_images(layout, values, memory, threads, pictures);
  sink.publish_image(stats);
  return stats;
}

ImagesStats show_or_publish_images(const Layout& layout, const Activations& values, ImageSink& sink, uint64_t& key,
                                   uint64_t& serial, int threads, std::span<const ImagePicture> pictures) {
  if (std::optional<ImagesStats> kept = sink.show_image(key)) return *kept;
  const ImagesStats stats = publish_images(layout, values, sink, threads, pictures);
  key = ++serial;
  sink.keep_image(key);
  return stats;
}

std::byte* InMemoryImages::Region::aligned() const {
  auto* p = const_cast<std::byte*>(memory.data());
  return p + (16 - reinterpret_cast<uintptr_t>(p) % 16) % 16;
}

std::span<std::byte> InMemoryImages::image(uint64_t bytes) {
  int pick = -1;
  auto rank = [&](int i) {
    const Region& r = regions_[size_t(i)];
    return std::tuple(r.key != 0, r.memory.empty(), r.last_use);
  };
  for (int i = 0; i < int(regions_.size()); ++i) {
    if (i == current_ && regions_.size() > 1) continue;
    if (pick < 0 || rank(i) < rank(pick)) pick = i;
  }
  if (regions_.size() == 1) current_ = -1;
  Region& r = regions_[size_t(pick)];
  r.key = 0;
  if (r.memory.size() < bytes + 16) {
    r.memory = {};
    r.memory.resize(bytes + 16);
  }
  r.bytes = bytes;
  writing_ = pick;
  return {r.aligned(), size_t(bytes)};
}

void InMemoryImages::publish_image(const ImagesStats& stats) {
  if (writing_ < 0) throw std::runtime_error("activation images: publish without an image");
  regions_[size_t(writing_)].stats = stats;
  regions_[size_t(writing_)].last_use = ++clock_;
  current_ = writing_;
  writing_ = -1;
  ++generation;
}

void InMemoryImages::keep_image(uint64_t key) {
  if (current_ >= 0) regions_[size_t(current_)].key = key;
}

std::optional<ImagesStats> InMemoryImages::show_image(uint64_t key) {
  if (key == 0) return std::nullopt;
  for (int i = 0; i < int(regions_.size()); ++i) {
    Region& r = regions_[size_t(i)];
    if (r.key != key) continue;
    if (i != current_) ++generation;
    current_ = i;
    r.last_use = ++clock_;
    return r.stats;
  }
  return std::nullopt;
}

void InMemoryImages::drop_image(uint64_t key) {
  if (key == 0) return;
  for (Region& r : regions_)
    if (r.key == key) r.key = 0;
}

std::span<const std::byte> InMemoryImages::current() const {
  if (current_ < 0) return {};
  const Region& r = regions_[size_t(current_)];
  return {r.aligned(), size_t(r.bytes)};
}

uint64_t InMemoryImages::bytes_allocated() const {
  uint64_t n = 0;
  for (const Region& r : regions_) n += r.memory.size();
  return n;
}

std::vector<model::TensorId> picture_tensors(const Layout& layout, const Activations& values,
                                             std::span<const ImagePicture> pictures) {
  std::vector<model::TensorId> out;
  for (const ImagePicture& p : pictures) {
    const Block* b = p.tensor == model::kNone ? nullptr : layout.block(p.tensor);
    if (b && p.tensor < values.size() && values[p.tensor].data.size() >= uint64_t(b->elements) &&
        picture_of_block(*b, values[p.tensor], pictures))
      out.push_back(p.tensor);
  }
  return out;
}

void drop_points(DrawCounts& counts, std::span<const Segment> segments, std::span<const model::TensorId> tensors) {
  for (size_t i = 0; i < segments.size() && i < counts.neurons.size(); ++i)
    if (std::find(tensors.begin(), tensors.end(), segments[i].tensor) != tensors.end()) counts.neurons[i] = 0;
}

}  // namespace nnxr::scene
