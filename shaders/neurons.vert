// Neurons as camera-facing billboards, pulled from the generation's neurons by device address:
// six vertices per neuron, vertex index = 6 * neuron + corner, instance index = segment
// (firstInstance). In the highlight variant the neuron comes from the highlight list and is drawn
// larger.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "scene.glsl"

layout(constant_id = 0) const bool kHighlight = false;

layout(location = 0) out vec3 out_colour;
layout(location = 1) out vec2 out_corner;
layout(location = 2) out float out_fog;
layout(location = 3) flat out uint out_selected;

const vec4 kNowhere = vec4(0.0, 0.0, 0.0, 1.0);
const vec2 kCorners[6] = vec2[](vec2(-1, -1), vec2(1, -1), vec2(1, 1), vec2(-1, -1), vec2(1, 1), vec2(-1, 1));

void main() {
  uint item = uint(gl_VertexIndex) / 6u;
  vec2 corner = kCorners[uint(gl_VertexIndex) % 6u];
  uint n, segment;
  float filter_dim = 1.0;
  if (kHighlight) {
    n = highlight.items[item];
    segment = segment_of_neuron(n);
  } else {
    n = item;
    segment = instance_segment(gl_InstanceIndex);
    filter_dim = instance_dim(gl_InstanceIndex);
  }
  vec4 neuron = neuron_at(n);
  vec4 eye = frame.view[gl_ViewIndex] * (frame.world * vec4(neuron.xyz, 1.0));
  mat4 p = frame.projection[gl_ViewIndex];
  vec4 clip = p * eye;
  // Radius in clip units along y: the world size, but never below the minimum pixel radius.
  float scale = kHighlight ? 1.8 : 1.0;
  float min_px = kHighlight ? max(frame.sizes.y * 2.0, 3.0) : frame.sizes.y;
  float radius = max(frame.sizes.x * scale * abs(p[1][1]), min_px * 2.0 / frame.sizes.z * clip.w);
  // Points fade in over the activation images as the viewer approaches: they grow from nothing
  // while their own diameter goes from half of frame.fog.z pixels to frame.fog.z (0: always shown).
  // A point faded out entirely collapses to one point inside the clip volume, as text.vert's
  // kNowhere (no area, no fragments), not at its own position, which may lie outside the volume:
  // lavapipe (Mesa 22.3) multiview drew such primitives of one view into the other view's layer.
  if (!kHighlight && frame.fog.z > 0.0) {
    float px = frame.sizes.x * abs(p[1][1]) / max(clip.w, 1e-9) * frame.sizes.z;
    float grown = smoothstep(0.5 * frame.fog.z, frame.fog.z, px);
    if (!(grown > 0.0)) {
      gl_Position = kNowhere;
      out_colour = vec3(0.0);
      out_corner = corner;
      out_fog = 0.0;
      out_selected = 0u;
      return;
    }
    radius *= grown;
  }
  clip.xy += corner * radius * vec2(abs(p[0][0] / p[1][1]), 1.0);
  gl_Position = clip;

  vec3 colour = diverging(neuron.w / colour_range(segment));
  if (!kHighlight) colour *= push.dim * filter_dim;
  out_colour = colour;
  out_corner = corner;
  out_fog = fog_factor(length(eye.xyz));
  out_selected = (kHighlight && item == 0u) ? 1u : 0u;
}
