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
layout(location = 4) flat in uvec2 in_image;
layout(location = 5) in vec2 in_canvas;
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

vec3 pixel(ivec2 p, uint width) { return unpackUnorm4x8(pixels[in_image.x + uint(p.y) * width + uint(p.x)]).rgb; }

// A picture's pixel at texel coordinates uv (0..width, 0..height), bilinear.
vec3 picture(vec2 uv) {
  const uint width = in_image.y & 0xffffu, height = in_image.y >> 16;
  const vec2 top = vec2(float(width) - 1.0, float(height) - 1.0);
  const vec2 p = clamp(uv - 0.5, vec2(0.0), top);
  const ivec2 i = ivec2(floor(p));
  const ivec2 j = min(i + ivec2(1), ivec2(top));
  const vec2 f = p - vec2(i);
  return mix(mix(pixel(i, width), pixel(ivec2(j.x, i.y), width), f.x),
             mix(pixel(ivec2(i.x, j.y), width), pixel(j, width), f.x), f.y);
}

// Pictures hold sRGB-encoded bytes (as image files do); the targets are sRGB, so decode here and
// the target encodes them back to the same bytes.
vec3 srgb_to_linear(vec3 c) { return mix(c / 12.92, pow((c + 0.055) / 1.055, vec3(2.4)), greaterThan(c, vec3(0.04045))); }

void main() {
  const uint fill = in_fill & 3u;
  if (fill == 3u) {
    out_colour = vec4(srgb_to_linear(picture(in_local * vec2(float(in_image.y & 0xffffu), float(in_image.y >> 16)))), 1.0);
    return;
  }
  if (fill == 1u) {
    out_colour = in_colour;
    // The menu's row under the pointer is lit.
    if ((in_fill & 4u) != 0u && in_canvas.y >= push.hover.x && in_canvas.y < push.hover.y)
      out_colour.rgb = vec3(0.10, 0.28, 0.62);
    return;
  }
  if (fill == 2u) {
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
