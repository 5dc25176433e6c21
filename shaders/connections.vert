// Connections as lines, pulled from the generation's connections by device address: two vertices
// per connection (source, destination), instance index = the destination's segment
// (firstInstance). Colour is the sign of the contribution, alpha its quantised magnitude.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "scene.glsl"

layout(constant_id = 0) const bool kHighlight = false;

layout(location = 0) out vec4 out_colour;
layout(location = 1) out float out_fog;

void main() {
  uint item = uint(gl_VertexIndex) >> 1u;
  uint end = uint(gl_VertexIndex) & 1u;
  uint c, segment;
  float filter_dim = 1.0;
  if (kHighlight) {
    c = highlight.items[highlight.neuron_count + item];
    segment = segment_of_connection(c);
  } else {
    c = item;
    segment = instance_segment(gl_InstanceIndex);
    filter_dim = instance_dim(gl_InstanceIndex);
  }
  uvec2 connection = connection_at(c);
  uint code = connection.y >> 24u;
  uint n = end == 0u ? connection.x : table.segments[segment].neuron_first + (connection.y & 0xFFFFFFu);
  vec4 neuron = neuron_at(n);
  vec4 eye = frame.view[gl_ViewIndex] * (frame.world * vec4(neuron.xyz, 1.0));
  gl_Position = frame.projection[gl_ViewIndex] * eye;

  // Code: bit 7 sign, bits 0..6 m with |c| ≈ max · 2^((m − 127) / 8).
  float strength = clamp((float(code & 127u) - 40.0) / 87.0, 0.0, 1.0);
  float sign_ = (code & 128u) != 0u ? -1.0 : 1.0;
  vec3 colour = diverging(sign_ * (0.35 + 0.65 * strength));
  float alpha = frame.sizes.w * strength * strength;
  if (kHighlight) {
    colour = mix(colour, vec3(1.0, 0.85, 0.2), 0.5);
    alpha = 1.0;
  } else {
    colour *= push.dim * filter_dim;
    alpha *= filter_dim;
  }
  out_colour = vec4(colour, alpha);
  out_fog = fog_factor(length(eye.xyz));
}
