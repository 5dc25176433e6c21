// Activation images: one quad per tile (a feature map, or a row block of a sequence), six vertices
// per tile, vertex index = 6 * tile + corner. The quad covers the tile's elements edge to edge,
// pushed back along the view ray by 1.5 neuron radii so that neurons drawn at the same elements
// stay in front. The tensor's colour scale and |a| threshold go to the fragment shader flat.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "tiles.glsl"

layout(location = 0) out vec2 out_uv;  // column, row in texels (0..cols, 0..rows)
layout(location = 1) out float out_fog;
layout(location = 2) flat out uint out_tile;
layout(location = 3) flat out float out_scale;
layout(location = 4) flat out float out_threshold;
layout(location = 5) flat out float out_dim;

const vec2 kCorners[6] = vec2[](vec2(0, 0), vec2(1, 0), vec2(1, 1), vec2(0, 0), vec2(1, 1), vec2(0, 1));

void main() {
  uint t = uint(gl_VertexIndex) / 6u;
  vec2 corner = kCorners[uint(gl_VertexIndex) % 6u];
  Tile tile = tile_at(t);
  vec4 o = tile.origin_step;
  float step = o.w;
  uint rows = tile.shape.x, cols = tile.shape.y;
  TensorImage tensor = tensor_at(tile.shape.z);
  // Columns are step / columns_per_step apart (a channels-last image input: C to a pixel).
  float column_step = step / float(max(tensor.columns_per_step, 1u));
  vec3 p = vec3(o.x, o.y + 0.5 * step - corner.y * float(rows) * step,
                o.z - 0.5 * column_step + corner.x * float(cols) * column_step);
  vec4 eye = frame.view[gl_ViewIndex] * (frame.world * vec4(p, 1.0));
  float d = length(eye.xyz);
  if (d > 0.0) eye.xyz += eye.xyz / d * (1.5 * frame.sizes.x);
  gl_Position = frame.projection[gl_ViewIndex] * eye;
  out_uv = corner * vec2(float(cols), float(rows));
  out_fog = fog_factor(d);
  out_tile = t;

  out_dim = push.dim;
  uint flag = filter_flag(tile.shape.z);  // the op types and tensors: written by the worker
  if (int(tensor.layer) < push.layer_min || int(tensor.layer) > push.layer_max) flag = max(flag, push.outside == 0u ? 2u : 1u);
  if (flag == 2u) {
    gl_Position = vec4(0.0, 0.0, 0.0, 1.0);  // hidden by the filter: no area
    return;
  }
  if (flag == 1u) out_dim *= 0.18;  // as shaders/scene.glsl kFilterDim
  float range;
  if (push.colour_range == 1u) range = push.value_range > 0.0 ? push.value_range : image_header().value_abs_max;
  else range = max(abs(tensor.value_min), abs(tensor.value_max));
  out_scale = range > 0.0 ? range : 1.0;
  float threshold;
  if (tensor.computed == 0u) {
    threshold = 1.0 / 0.0;  // not computed: nothing to show
  } else if (push.threshold_mode == 1u) {
    threshold = push.threshold;
  } else {
    float f = 64.0 * (1.0 - pow(1.0 - clamp(push.threshold, 0.0, 1.0), 1.0 / 3.0));  // model/scene/tiles.h
    uint i0 = min(uint(floor(f)), 64u), i1 = min(i0 + 1u, 64u);
    float a = tensor.quantiles[i0], b = tensor.quantiles[i1], w = f - float(i0);
    threshold = w <= 0.0 ? a : (isinf(b) ? b : mix(a, b, w));
  }
  out_threshold = threshold;
}
