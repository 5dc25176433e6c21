// Declarations shared by every scene pipeline (shaders/scene.glsl for neurons and connections,
// shaders/tiles.glsl for activation images): the per-frame uniforms (engine/pipelines.h
// FrameUniforms, std140), the colour map and fog.

// Set 0: per frame slot.
layout(set = 0, binding = 0, std140) uniform FrameUniforms {
  mat4 view[2];        // world → eye, per view
  mat4 projection[2];  // eye → clip, per view
  mat4 world;          // network → world
  vec4 background;     // rgb: background and fog colour (linear)
  vec4 sizes;          // x: neuron radius (world m), y: min radius (px), z: viewport height (px), w: connection alpha
  vec4 fog;            // x: start, y: end (eye distance, world m), z: point fade-in diameter (px, 0: off)
  mat4 panel[2];       // text only (shaders/text.glsl): canvas pixels → world
  vec4 canvas;         // text only
} frame;

// Diverging colour map, t in [-1, 1]: negative blue, zero grey, positive red (linear RGB).
vec3 diverging(float t) {
  t = clamp(t, -1.0, 1.0);
  float a = pow(abs(t), 0.6);
  const vec3 zero = vec3(0.16, 0.16, 0.18);
  const vec3 positive = vec3(1.0, 0.10, 0.04);
  const vec3 negative = vec3(0.03, 0.22, 1.0);
  return mix(zero, t >= 0.0 ? positive : negative, a);
}

float fog_factor(float eye_distance) {
  return clamp((eye_distance - frame.fog.x) / max(frame.fog.y - frame.fog.x, 1e-6), 0.0, 1.0);
}

