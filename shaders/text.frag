#version 450
#extension GL_GOOGLE_include_directive : require
#include "text.glsl"

// Glyphs: the signed distance field resolved with smoothstep over its screen-space derivative
// (sharp at any scale), with a dark halo so that text reads over bright neurons. Solid quads take
// their colour; colour-map quads show the diverging map (as scene.glsl's diverging()) from −1 at
// the left to +1 at the right.
layout(location = 0) in vec2 in_uv;
layout(location = 1) in vec2 in_local;
layout(location = 2) flat in vec4 in_colour;
layout(location = 3) flat in uint in_fill;
layout(location = 0) out vec4 out_colour;

float texel(ivec2 p) {
  const int i = p.y * int(push.atlas_width) + p.x;
  return float((texels[i >> 2] >> (8 * (i & 3))) & 255u) / 255.0;
}

float sdf(vec2 uv) {
  const vec2 p = uv - 0.5;
  const ivec2 i = ivec2(floor(p));
  const vec2 f = p - floor(p);
  return mix(mix(texel(i), texel(i + ivec2(1, 0)), f.x), mix(texel(i + ivec2(0, 1)), texel(i + ivec2(1, 1)), f.x), f.y);
}

vec3 diverging(float t) {
  t = clamp(t, -1.0, 1.0);
  float a = pow(abs(t), 0.6);
  const vec3 zero = vec3(0.16, 0.16, 0.18);
  const vec3 positive = vec3(1.0, 0.10, 0.04);
  const vec3 negative = vec3(0.03, 0.22, 1.0);
  return mix(zero, t >= 0.0 ? positive : negative, a);
}

void main() {
  if (in_fill == 1u) {
    out_colour = in_colour;
    return;
  }
  if (in_fill == 2u) {
    out_colour = vec4(diverging(in_local.x * 2.0 - 1.0), 1.0);
    return;
  }
  const float d = sdf(in_uv);
  const float w = max(fwidth(d) * 0.7, 1e-3);
  const float text = smoothstep(0.5 - w, 0.5 + w, d);
  const float halo = smoothstep(0.30 - w, 0.30 + w, d) * 0.85;
  const float alpha = text + halo * (1.0 - text);
  if (alpha <= 0.0) discard;
  out_colour = vec4(in_colour.rgb * text / alpha, alpha * in_colour.a);
}
