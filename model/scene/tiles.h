// Activation images: every laid-out tensor as image tiles (DESIGN.md "Levels of detail", far).
//
// A tensor's block is `tiles` tiles of tile_h × tile_w (Layout's fold); each tile is drawn as one
// quad whose fragment shader reads the tile's activations as 16-bit floats and applies the colour
// map. What the GPU reads is one contiguous image of the run, written by the worker into memory a
// sink provides (the engine's is persistently mapped, read by device address):
//
//   ImagesHeaderGpu | TensorImageGpu × tensor_count | TileGpu × tile_count | codes
//
// A value is a 14-bit code: the half (IEEE binary16) with its two low mantissa bits rounded off,
// so code << 2 is the half again (8 mantissa bits, a relative step of 1/256 at most: finer than
// the 8-bit colours it becomes). Code i sits at bit 14 i of the codes, little-endian 32-bit words
// (16 codes fill 7 words; each tensor's codes start at a word). Per tensor: its values in element
// order (level 0 of every tile, since a tile's elements are contiguous), then per tile a max-|a|
// pyramid: level k ≥ 1 has ceil(rows / 4^k) × ceil(cols / 4^k) entries, each the value of largest
// magnitude in its 4^k × 4^k block of level 0 (sign kept; positive on a tie), up to the first
// level of at most 5 × 5 entries (none for a tile of at most 5 × 5). A minified pixel reads at
// most 5 × 5 entries of the level whose entries are just smaller than its footprint (or of the
// top level, then all of it) and shows the strongest, so a single strong activation stays
// visible at any distance and there is no moiré. Pyramids cost 1/15 of level 0 (more for small tiles): 1.87 bytes per activation for
// 56 × 56 maps, 1.93 for mobilenet_v2 with its many 7 × 7 maps (16 bytes a tile, 368 a tensor).
//
// Thresholds: each tensor carries 65 quantiles of |a| (at q = image_quantile(i), dense near 1
// where the filter's ladder is: 0.99 and 0.999 fall between entries 50 and 58), so the neuron filter's quantile
// is a push constant the shader turns into the tensor's threshold (linear between two entries);
// a filter change writes nothing here.
//
// Threading: write_images() runs on the caller's thread plus `threads` − 1 helpers; everything
// else is plain functions of their arguments.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "model/scene/labels.h"
#include "model/scene/scene.h"

namespace nnxr::scene {

// GPU layout (std430; shaders/tiles.glsl mirrors it).
struct ImagesHeaderGpu {
  uint32_t tensor_count = 0;
  uint32_t tile_count = 0;
  uint32_t tiles_offset = 0;  // bytes from the start of the image to TileGpu 0
  uint32_t data_offset = 0;   // bytes from the start to the codes (a multiple of 16)
  float value_abs_max = 0;    // over every tensor
  float step = 0;             // metres between neighbouring elements (rows go down −Y, columns +Z)
  uint32_t pad[2]{};
};
inline constexpr int kImageQuantiles = 65;
// The quantile of entry i: 1 − (1 − i/64)³ (the shader inverts it: i = 64 · (1 − ∛(1 − q))).
inline double image_quantile(int i) {
  const double r = 1.0 - double(i) / (kImageQuantiles - 1);
  return 1.0 - r * r * r;
}
struct TensorImageGpu {
  float value_min = 0, value_max = 0;
  uint32_t computed = 0;  // 0: the run did not compute it (its tiles stay dark)
  uint32_t layer = 0;
  float quantiles[kImageQuantiles]{};
  // Columns to a neuron spacing (Block::columns_per_step): a channels-last image input's C, its
  // pixels' channels side by side, so that its quad is tile_cols / C steps wide; else 1.
  uint32_t columns_per_step = 1;
  uint32_t pad[2]{};
  // An RGB image input drawn in its true colours (ImagePicture) instead of the colour map: every
  // tile of its channels shows the picture. Display channel i (R, G, B) reads tensor channel
  // (picture_channels >> 8i) & 0xFF at half picture_base + channel · picture_plane + element, and
  // its sRGB value is v · colour_mul[i] + colour_add[i] (the preprocessing undone, in [0, 1]).
  // A channels-last input (one H × W·C tile, picture_plane 1, columns_per_step C): the element is
  // the pixel's first, the tile column rounded down to a multiple of C.
  uint32_t picture = 0;  // 0: the colour map
  uint32_t picture_base = 0, picture_plane = 0, picture_channels = 0;
  float colour_mul[4]{}, colour_add[4]{};
  // The tensor's tiles (every one tile_rows × tile_cols; the last of a fold may hold fewer of the
  // elements): TileGpu first_tile.., level 0 of its local tile j at code data + j · rows · cols,
  // its pyramid (levels above level 0, pyramid_entries in all) at pyramid + j · pyramid_entries.
  uint32_t first_tile = 0, tile_rows = 0, tile_cols = 0, elements = 0;
  uint32_t data = 0, pyramid = 0, levels = 0, pyramid_entries = 0;
};
// One quad: where its element (0, 0), the top-left one, is centred, and its tensor (the rest is
// the tensor's: image_tile()). 16 bytes a tile.
struct TileGpu {
  float x = 0, y = 0, z = 0;
  uint32_t tensor = 0;  // index into the TensorImageGpu table
};
// A tile as the shaders see it (shaders/tiles.glsl tile_at()).
struct ImageTile {
  float x = 0, y = 0, z = 0, step = 0;  // step: between rows
  float column_step = 0;                // between columns: step / TensorImageGpu::columns_per_step
  uint32_t rows = 0, cols = 0, tensor = 0;
  uint32_t valid = 0;    // elements of this tile that exist (the last tile of a fold may be short)
  uint32_t data = 0;     // index of the tile's level 0 among the codes
  uint32_t pyramid = 0;  // index of its level 1 (levels 2.. follow)
  uint32_t levels = 0;   // pyramid levels above level 0
};
static_assert(sizeof(ImagesHeaderGpu) == 32 && sizeof(TensorImageGpu) == 368 && sizeof(TileGpu) == 16);

struct ImagesStats {
  uint64_t bytes = 0;               // of the whole image
  uint64_t tensors = 0, tiles = 0;
  uint64_t activations_total = 0;   // elements of laid-out tensors
  uint64_t activations_shown = 0;   // of those, computed by the run (all drawn as tiles)
  double ms = 0;                    // wall time of write_images()
};

// An image input drawn in its true colours: its tensor and how its values become sRGB bytes (the
// preprocessing undone, as the input picture beside the network; model/scene/labels.h). Taken
// when the tensor is [1, C, H, W] with C 3 or 4 and laid out as one H × W tile per channel, or
// [1, H, W, C] laid out as one H × W·C tile with C columns to a spacing (as the layout lays out a
// channels-last image input: the picture at its aspect); other tensors keep the colour map.
struct ImagePicture {
  model::TensorId tensor = model::kNone;
  PictureMapping mapping;
};

// Value i of an image's codes (written by write_images()), as the shader reads it.
float image_value(std::span<const std::byte> image, uint32_t i);
// Tile t of an image, as the shaders read it.
ImageTile image_tile(std::span<const std::byte> image, uint32_t t);
// `x` as an image holds it (rounded to a code).
float image_rounded(float x);

// Size and counts of the image of `layout` (the layout fixes both); with `values`, also how many
// activations the run computed (activations_shown), without writing anything.
ImagesStats plan_images(const Layout& layout, const Activations* values = nullptr);

// Writes the image of `values` laid out by `layout` into `out` (at least plan_images().bytes,
// 16-byte aligned). Returns the stats. Throws std::invalid_argument when `out` is too small or
// the image would need more than 2^32 values.
ImagesStats write_images(const Layout& layout, const Activations& values, std::span<std::byte> out, int threads = 1,
                         std::span<const ImagePicture> pictures = {});

// write_images() tensor by tensor, for values that come and go (a run that lets its activations
// go as it computes them: runtime::RunOptions::keep): write() each laid-out tensor while its
// values are held, in any order, then finish() writes the rest from `values` and the header. The
// image is the one write_images() writes from the same values. `layout` and `pictures` must
// outlive the writer.
class ImageWriter {
 public:
  // Throws std::invalid_argument when `out` is too small or unaligned (as write_images()).
  ImageWriter(const Layout& layout, std::span<std::byte> out, std::span<const ImagePicture> pictures = {});
  ~ImageWriter();
  ImageWriter(const ImageWriter&) = delete;
  ImageWriter& operator=(const ImageWriter&) = delete;
  // Writes `tensor`'s image from `value` (nothing when the tensor is not laid out). Distinct
  // tensors may be written from several threads at once.
  void write(model::TensorId tensor, const TensorValue& value);
  // Writes every laid-out tensor not written yet from `values` (not computed where they hold
  // none), then the header. Returns the stats (ms: the time spent in write() and here).
  ImagesStats finish(const Activations& values, int threads = 1);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// Where images are written: the engine's implementation is persistently mapped GPU memory
// published by generation (engine/tiles.h). Called from one thread (the writer's).
class ImageSink {
 public:
  virtual ~ImageSink() = default;
  // Memory for the next image, `bytes` long and 16-byte aligned; throws std::runtime_error when
  // it cannot be had.
  virtual std::span<std::byte> image(uint64_t bytes) = 0;
  // Makes the written image the one frames draw from now on.
  virtual void publish_image(const ImagesStats& stats) = 0;
  // How the images of the op-type and tensor filters show, per image tensor (image_filter()); a
  // few bytes per tensor, written on every filter change. By default ignored.
  virtual void write_image_filter(std::span<const uint8_t> /*flags*/) {}
  // Kept images, so that compare mode flips between A, B and A − B without writing: keep_image()
  // tags the image published last with `key` (nonzero); show_image(key) makes that image the one
  // frames draw again by a pointer swap and returns its stats, or nullopt when it is no longer
  // kept (its memory went to another image); drop_image(key) says its values are stale. Writing
  // a new image takes memory holding no kept image first. By default nothing is kept.
  virtual void keep_image(uint64_t /*key*/) {}
  virtual std::optional<ImagesStats> show_image(uint64_t /*key*/) { return std::nullopt; }
  virtual void drop_image(uint64_t /*key*/) {}
};

// Shows the image kept under `key` (ImageSink::show_image, a pointer swap), or writes, publishes
// and keeps the image of `values` under a new key from `serial` (stored in `key`): what the worker
// does for each of A, B and A − B in compare mode.
ImagesStats show_or_publish_images(const Layout& layout, const Activations& values, ImageSink& sink, uint64_t& key,
                                   uint64_t& serial, int threads = 1, std::span<const ImagePicture> pictures = {});

// Images in host memory, `regions` of them with the engine's choice of region (engine/tiles.h):
// for benchmarks and tests of kept images.
class InMemoryImages final : public ImageSink {
 public:
  explicit InMemoryImages(size_t regions = 3) : regions_(regions) {}
  std::span<std::byte> image(uint64_t bytes) override;
  void publish_image(const ImagesStats& stats) override;
  void keep_image(uint64_t key) override;
  std::optional<ImagesStats> show_image(uint64_t key) override;
  void drop_image(uint64_t key) override;
  std::span<const std::byte> current() const;  // the image frames would draw (empty: none)
  uint64_t bytes_allocated() const;
  uint64_t generation = 0;  // incremented by every publish and every swap

 private:
  struct Region {
    std::vector<std::byte> memory;
    uint64_t bytes = 0, key = 0, last_use = 0;
    ImagesStats stats;
    std::byte* aligned() const;
  };
  std::vector<Region> regions_;
  int current_ = -1, writing_ = -1;
  uint64_t clock_ = 0;
};

// Per laid-out block (the image's tensor table, in layout order), what the filter's op types and
// tensors do to its image: 0 shown, 1 dimmed, 2 hidden, by Filter::outside. The layer window is
// left to the frame (it applies at once, without the worker). O(blocks).
std::vector<uint8_t> image_filter(const model::Graph& graph, const Layout& layout, const Filter& filter);

// The tensors of `pictures` that the images draw as pictures (every tile of the tensor shows the
// picture: ImagePicture's conditions hold for `layout` and `values`).
std::vector<model::TensorId> picture_tensors(const Layout& layout, const Activations& values,
                                             std::span<const ImagePicture> pictures);
// Takes the points of `tensors` out of `counts` (their neuron counts 0; `segments` are the scene's,
// parallel to the counts). With picture_tensors(): up close a picture stays a picture rather than
// the colour map's points fading in over it. Picking and the selection highlight do not read the
// counts, so such a tensor's neurons are still selected and highlighted. O(segments · tensors).
void drop_points(DrawCounts& counts, std::span<const Segment> segments, std::span<const model::TensorId> tensors);

// Plans, writes and publishes: what the worker does after each inference.
ImagesStats publish_images(const Layout& layout, const Activations& values, ImageSink& sink, int threads = 1,
                           std::span<const ImagePicture> pictures = {});

}  // namespace nnxr::scene
