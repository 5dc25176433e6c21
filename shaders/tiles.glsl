// Declarations of the activation-image shaders. Mirrors model/scene/tiles.h (ImagesHeaderGpu,
// TensorImageGpu, TileGpu, std430) and engine/pipelines.h (TilePushConstants). The image is read
// through buffer references from the address in the push constants.
#extension GL_EXT_multiview : require
#extension GL_EXT_buffer_reference2 : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require

#include "frame.glsl"

layout(push_constant) uniform TilePush {
  uint64_t image;       // address of the ImagesHeaderGpu
  uint colour_range;    // 0: per tensor, 1: global
  float value_range;    // global range; <= 0: the image's max |value|
  float dim;            // colour factor (highlight shown elsewhere)
  uint threshold_mode;  // 0: quantile of |a| per tensor, 1: absolute |a|
  float threshold;
  uint outside;         // tensors outside [layer_min, layer_max]: 0 hidden, 1 dimmed
  int layer_min, layer_max;
  uint64_t filter_flags;  // op/tensor filter flags: count, then per tensor 0 shown, 1 dimmed, 2 hidden; 0: none
} push;

layout(buffer_reference, std430, buffer_reference_align = 16) readonly buffer ImageHeader {
  uint tensor_count;
  uint tile_count;
  uint tiles_offset;
  uint data_offset;
  float value_abs_max;
  float step;
  uint pad0, pad1;
};
layout(buffer_reference, std430, buffer_reference_align = 16) readonly buffer TensorImage {
  float value_min, value_max;
  uint computed;
  uint layer;
  float quantiles[65];
  uint columns_per_step;  // a channels-last image input's C (its quad tile_cols / C steps wide); else 1
  uint pad_q0, pad_q1;
  uint picture;  // 1: an RGB image input in its true colours (model/scene/tiles.h)
  uint picture_base, picture_plane, picture_channels;
  vec4 colour_mul, colour_add;
  uint first_tile, tile_rows, tile_cols, elements;
  uint data, pyramid, levels, pyramid_entries;
};
layout(buffer_reference, std430, buffer_reference_align = 16) readonly buffer TileRef {
  vec3 origin;  // centre of element (0, 0)
  uint tensor;
};
// A tile with what its tensor says of it (model/scene/tiles.h ImageTile).
struct Tile {
  vec4 origin_step;  // xyz: centre of element (0, 0); w: step
  uvec4 shape;       // rows, cols, tensor, valid
  uvec4 data;        // level 0 index, pyramid index, levels, pad
};
layout(buffer_reference, std430, buffer_reference_align = 4) readonly buffer HalfPair { uint bits; };
layout(buffer_reference, std430, buffer_reference_align = 4) readonly buffer FilterWord { uint value; };

// The op/tensor filter's flag of image tensor i (0 when none is written or i is beyond it).
uint filter_flag(uint i) {
  if (push.filter_flags == 0ul || i >= FilterWord(push.filter_flags).value) return 0u;
  return FilterWord(push.filter_flags + 4ul * uint64_t(i + 1u)).value;
}

const uint kTensorBytes = 368u;
const uint kTileBytes = 16u;

ImageHeader image_header() { return ImageHeader(push.image); }
TensorImage tensor_at(uint i) { return TensorImage(push.image + 32ul + uint64_t(i) * uint64_t(kTensorBytes)); }
Tile tile_at(uint t) {
  TileRef r = TileRef(push.image + uint64_t(image_header().tiles_offset) + uint64_t(t) * uint64_t(kTileBytes));
  uint i = r.tensor;
  TensorImage tensor = tensor_at(i);
  uint local = t - tensor.first_tile, rows = tensor.tile_rows, cols = tensor.tile_cols;
  uint first = local * rows * cols;
  Tile tile;
  tile.origin_step = vec4(r.origin, image_header().step);
  tile.shape = uvec4(rows, cols, i, min(rows * cols, tensor.elements - min(tensor.elements, first)));
  tile.data = uvec4(tensor.data + first, tensor.pyramid + local * tensor.pyramid_entries, tensor.levels, 0u);
  return tile;
}

// Value i of the image's codes (model/scene/tiles.h): 14 bits at bit 14 i, the half without its
// two low mantissa bits.
float half_at(uint i) {
  uint64_t bit = uint64_t(i) * 14ul;
  uint64_t words = push.image + uint64_t(image_header().data_offset) + (bit >> 5) * 4ul;
  uint shift = uint(bit & 31ul);
  uint v = HalfPair(words).bits >> shift;
  if (shift > 18u) v |= HalfPair(words + 4ul).bits << (32u - shift);
  return unpackHalf2x16((v & 0x3FFFu) << 2).x;
}
