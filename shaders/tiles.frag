// An activation image's texel: nearest when magnified; when minified, the value of largest
// magnitude over the pixel's footprint, read from the max-|a| pyramid level whose entries are
// just smaller than the footprint (at most 5 x 5 reads), so a single strong activation stays
// visible and nothing shimmers. Below the tensor's threshold, or outside the tensor: nothing.
// An RGB image input (TensorImage.picture) is drawn in its true colours instead, every channel's
// tile showing the picture, whatever the threshold.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "tiles.glsl"

layout(location = 0) in vec2 in_uv;
layout(location = 1) in float in_fog;
layout(location = 2) flat in uint in_tile;
layout(location = 3) flat in float in_scale;
layout(location = 4) flat in float in_threshold;
layout(location = 5) flat in float in_dim;

layout(location = 0) out vec4 out_colour;

vec3 srgb_to_linear(vec3 c) { return mix(c / 12.92, pow((c + 0.055) / 1.055, vec3(2.4)), greaterThan(c, vec3(0.04045))); }

// An RGB image input in its true colours at texel (column, row) of the picture: the three
// channels' values with the preprocessing undone, as sRGB in [0, 1]. A channels-last input
// (columns_per_step = C) has its pixel's channels side by side from the column rounded down to a
// multiple of C.
vec3 picture_texel(TensorImage tensor, uvec2 c, uint cols) {
  uint k = max(tensor.columns_per_step, 1u);
  uint i = tensor.picture_base + c.y * cols + c.x / k * k;
  vec3 rgb;
  for (uint j = 0u; j < 3u; ++j) {
    uint ch = (tensor.picture_channels >> (8u * j)) & 0xFFu;
    float v = half_at(i + ch * tensor.picture_plane);
    rgb[j] = isnan(v) ? 0.0 : v * tensor.colour_mul[j] + tensor.colour_add[j];
  }
  return clamp(rgb, 0.0, 1.0);
}

void main() {
  Tile tile = tile_at(in_tile);
  uint rows = tile.shape.x, cols = tile.shape.y, valid = tile.shape.w;
  TensorImage tensor = tensor_at(tile.shape.z);
  if (tensor.picture != 0u) {
    // The picture, whatever the threshold: the mean of up to 4 x 4 texels over the pixel's
    // footprint (one when magnified).
    vec2 fw = max(fwidth(in_uv), vec2(1e-6));
    int n = int(clamp(ceil(max(fw.x, fw.y)), 1.0, 4.0));
    vec3 sum = vec3(0.0);
    for (int y = 0; y < n; ++y)
      for (int x = 0; x < n; ++x) {
        vec2 uv = in_uv + fw * ((vec2(x, y) + 0.5) / float(n) - 0.5);
        uvec2 c = uvec2(clamp(floor(uv), vec2(0.0), vec2(float(cols) - 1.0, float(rows) - 1.0)));
        sum += srgb_to_linear(picture_texel(tensor, c, cols));
      }
    vec3 colour = sum / float(n * n) * in_dim;
    out_colour = vec4(mix(colour, frame.background.rgb, in_fog), 1.0);
    return;
  }
  uint levels = tile.data.z;
  vec2 fw = fwidth(in_uv);  // texels per pixel
  float k = max(fw.x, fw.y);
  float best = 0.0;
  bool found = false;
  if (k <= 1.0) {
    uvec2 c = uvec2(clamp(floor(in_uv), vec2(0.0), vec2(float(cols) - 1.0, float(rows) - 1.0)));
    uint i = c.y * cols + c.x;
    if (i < valid) {
      best = half_at(tile.data.x + i);
      found = !isnan(best);
    }
  } else {
    // Level L: an entry covers 4^L x 4^L texels of level 0.
    uint level = min(uint(floor(log2(k) * 0.5)), levels);
    uint lr = rows, lc = cols, base = tile.data.x;
    if (level > 0u) {
      base = tile.data.y;
      lr = (rows + 3u) / 4u;
      lc = (cols + 3u) / 4u;
      for (uint j = 1u; j < level; ++j) {
        base += lr * lc;
        lr = (lr + 3u) / 4u;
        lc = (lc + 3u) / 4u;
      }
    }
    float s = exp2(2.0 * float(level));
    ivec2 lo = ivec2(floor((in_uv - 0.5 * fw) / s));
    ivec2 hi = ivec2(floor((in_uv + 0.5 * fw) / s));
    lo = clamp(lo, ivec2(0), ivec2(int(lc) - 1, int(lr) - 1));
    hi = clamp(hi, lo, min(ivec2(int(lc) - 1, int(lr) - 1), lo + ivec2(4)));
    for (int y = lo.y; y <= hi.y; ++y)
      for (int x = lo.x; x <= hi.x; ++x) {
        uint i = uint(y) * lc + uint(x);
        if (level == 0u && i >= valid) continue;
        float v = half_at(base + i);
        if (isnan(v)) continue;
        if (!found || abs(v) > abs(best)) best = v;
        found = true;
      }
  }
  if (!found || !(abs(best) >= in_threshold)) discard;
  vec3 colour = diverging(best / in_scale) * in_dim;
  out_colour = vec4(mix(colour, frame.background.rgb, in_fog), 1.0);
}
