#version 450
#extension GL_GOOGLE_include_directive : require
#include "scene.glsl"

layout(location = 0) in vec4 in_colour;
layout(location = 1) in float in_fog;

layout(location = 0) out vec4 out_colour;

void main() {
  out_colour = vec4(mix(in_colour.rgb, frame.background.rgb, in_fog), in_colour.a * (1.0 - in_fog));
}
