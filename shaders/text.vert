#version 450
#extension GL_EXT_multiview : require
#extension GL_GOOGLE_include_directive : require
#include "text.glsl"

// One glyph quad per instance (6 vertices). World glyphs are billboards in eye space whose em
// height in pixels is clamped to [min_px, max_px]; below min_px the whole quad is clipped away.
// Screen glyphs are placed in pixels from a corner of the viewport, the filter menu's at its own
// top left; in the headset both canvases are planes in the world (frame.panel).
layout(location = 0) out vec2 out_uv;         // atlas texels
layout(location = 1) out vec2 out_local;      // 0..1 across the quad
layout(location = 2) flat out vec4 out_colour;
layout(location = 3) flat out uint out_fill;   // Fill, | 4 on the menu's canvas
layout(location = 4) flat out uvec2 out_image;  // pictures: first pixel, width | height << 16
layout(location = 5) out vec2 out_canvas;     // the menu's canvas pixels

// A quad that is not drawn collapses to one point inside the clip volume (no area, no fragments)
// rather than being moved outside it: with such quads outside it, lavapipe (Mesa 22.3) multiview
// rasterised a few of the second view's quads into the first view's layer (gl_ViewIndex 1 in
// their vertex shader, 0 in their fragment shader), so the left eye showed some of the right
// eye's panel text 41 px from its own (tests/xr/test_xr_view.cpp checks that the eyes agree).
const vec4 kNowhere = vec4(0.0, 0.0, 0.0, 1.0);

const vec2 kCorners[6] = vec2[](vec2(0, 0), vec2(1, 0), vec2(1, 1), vec2(0, 0), vec2(1, 1), vec2(0, 1));

void main() {
  const Glyph g = glyphs[gl_InstanceIndex];
  const uint flags = g.uv_rgba_flags.w;
  const vec2 q = kCorners[gl_VertexIndex % 6];
  const vec2 off = g.offset_extent.xy + q * g.offset_extent.zw;  // em, y down
  const vec2 uv0 = vec2(g.uv_rgba_flags.x & 0xffffu, g.uv_rgba_flags.x >> 16);
  const vec2 uv1 = vec2(g.uv_rgba_flags.y & 0xffffu, g.uv_rgba_flags.y >> 16);
  out_uv = mix(uv0, uv1, q);
  out_local = q;
  out_colour = unpackUnorm4x8(g.uv_rgba_flags.z);
  out_fill = ((flags >> 3) & 3u) | ((flags & 32u) != 0u ? 4u : 0u);
  // A picture's first pixel: anchor.z (float bits) on a screen quad, uv[0] on a world quad.
  out_image = uvec2((flags & 1u) != 0u ? floatBitsToUint(g.anchor_em.z) : g.uv_rgba_flags.x, g.uv_rgba_flags.y);
  out_canvas = vec2(0.0);
  if ((flags & 1u) != 0u) {
    const bool menu = (flags & 32u) != 0u;  // on the filter menu's canvas
    if ((push.screen & 1u) == 0u || (menu && (push.screen & 4u) == 0u)) {
      gl_Position = kNowhere;  // panels (or the menu) are off for this target: nothing is drawn
      return;
    }
    const bool planes = (push.screen & 2u) != 0u;
    vec2 px = g.anchor_em.xy + off * g.anchor_em.w;  // the menu: pixels of its own canvas
    out_canvas = px;
    if (!menu) {
      const vec2 size = planes ? frame.canvas.xy : push.viewport;
      const uint corner = (flags >> 1) & 3u;
      const vec2 origin = vec2((corner & 1u) != 0u ? size.x : 0.0, (corner & 2u) != 0u ? size.y : 0.0);
      const vec2 dir = vec2((corner & 1u) != 0u ? -1.0 : 1.0, (corner & 2u) != 0u ? -1.0 : 1.0);
      px = origin + dir * g.anchor_em.xy + off * g.anchor_em.w;
    }
    if (planes) {  // the headset: a canvas is a plane in the world
      gl_Position = frame.projection[gl_ViewIndex] * frame.view[gl_ViewIndex] * frame.panel[menu ? 1 : 0] * vec4(px, 0.0, 1.0);
      return;
    }
    if (menu) px = frame.canvas.zw + px * push.menu_scale;
    gl_Position = vec4(px / push.viewport * 2.0 - 1.0, 0.0, 1.0);
    return;
  }
  vec4 eye = frame.view[gl_ViewIndex] * frame.world * vec4(g.anchor_em.xyz, 1.0);
  const float em = g.anchor_em.w * push.world_scale;
  const float distance = -eye.z;
  const float px = distance > 1e-5 ? em * abs(frame.projection[gl_ViewIndex][1][1]) * 0.5 * push.viewport.y / distance : 0.0;
  const float min_px = float((flags >> 8) & 255u), max_px = float((flags >> 16) & 255u);
  if (!(px >= max(min_px, 1.0))) {
    gl_Position = kNowhere;  // too small: nothing is drawn
    return;
  }
  const float s = px > max_px ? max_px / px : 1.0;
  eye.xy += vec2(off.x, -off.y) * em * s;
  gl_Position = frame.projection[gl_ViewIndex] * eye;
}
