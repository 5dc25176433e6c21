#version 450
#extension GL_GOOGLE_include_directive : require
#include "scene.glsl"

// World-space overlay vertices (engine/overlay.h OverlayVertex: xyz, then RGBA8 in the fourth
// word), fetched by index from the frame slot's overlay buffer: rays, gauges, panels, text.
layout(set = 0, binding = 2, std430) readonly buffer Overlay { uvec4 overlay[]; };

layout(location = 0) out vec4 out_colour;

void main() {
  const uvec4 v = overlay[gl_VertexIndex];
  gl_Position = frame.projection[gl_ViewIndex] * frame.view[gl_ViewIndex] * vec4(uintBitsToFloat(v.xyz), 1.0);
  out_colour = unpackUnorm4x8(v.w);
}
