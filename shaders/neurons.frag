// Round neurons with a little spherical shading; highlighted ones get a bright rim (the selected
// one a white rim), then fog towards the background.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "scene.glsl"

layout(constant_id = 0) const bool kHighlight = false;

layout(location = 0) in vec3 in_colour;
layout(location = 1) in vec2 in_corner;
layout(location = 2) in float in_fog;
layout(location = 3) flat in uint in_selected;

layout(location = 0) out vec4 out_colour;

void main() {
  float r2 = dot(in_corner, in_corner);
  if (r2 > 1.0) discard;
  vec3 colour = in_colour * (0.55 + 0.45 * sqrt(1.0 - r2));
  if (kHighlight && r2 > 0.55) colour = in_selected == 1u ? vec3(1.0) : vec3(1.0, 0.85, 0.2);
  out_colour = vec4(mix(colour, frame.background.rgb, in_fog), 1.0);
}
