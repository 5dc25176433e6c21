// Shared declarations of the text shaders. Mirrors engine/text.h (GlyphGpu) and
// engine/pipelines.h (FrameUniforms, TextPush).

// Set 0: per frame slot (as scene.glsl).
layout(set = 0, binding = 0, std140) uniform FrameUniforms {
  mat4 view[2];
  mat4 projection[2];
  mat4 world;
  vec4 background;
  vec4 sizes;
  vec4 fog;
  mat4 panel[2];  // canvas pixels → world: [0] the view's panels, [1] the filter menu (headset)
  vec4 canvas;    // xy: the panels' canvas size (px); zw: the menu's top left on the screen (px)
} frame;

// Set 1: the text buffer's glyph quads and the SDF atlas (8-bit texels, four to a word).
struct Glyph {
  vec4 anchor_em;      // xyz anchor, w em
  vec4 offset_extent;  // xy offset (em), zw extent (em)
  uvec4 uv_rgba_flags; // x: u0 | v0 << 16, y: u1 | v1 << 16, z: RGBA8, w: flags
};
layout(set = 1, binding = 0, std430) readonly buffer Glyphs { Glyph glyphs[]; };
layout(set = 1, binding = 1, std430) readonly buffer Atlas { uint texels[]; };
// The same buffer as 32-bit words: pictures (Fill::Image) are RGBA8 pixels after the glyph slots.
layout(set = 1, binding = 0, std430) readonly buffer Pixels { uint pixels[]; };

layout(push_constant) uniform TextPush {
  vec2 viewport;      // pixels
  float world_scale;  // of frame.world
  uint atlas_width;   // texels
  uint screen;        // bit 0: screen-space glyphs (panels, menu) drawn; bit 1: on the planes of
                      // frame.panel (else in the viewport); bit 2: the menu is shown
  float menu_scale;   // on the screen: screen pixels per menu canvas pixel
  vec2 hover;         // the menu's plate is lit between these canvas y (the row pointed at)
} push;
