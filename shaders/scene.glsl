// Shared declarations of the scene shaders. Mirrors engine/scene_buffers.h (SceneHeaderGpu,
// SegmentGpu), model/scene/scene.h (Neuron, Connection) and engine/renderer.cpp (FrameUniforms,
// Push), std140/std430.
#extension GL_EXT_multiview : require
#extension GL_EXT_buffer_reference2 : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require

#include "frame.glsl"

// Highlighted neuron indices, then connection indices.
layout(set = 0, binding = 1, std430) readonly buffer Highlight {
  uint neuron_count;
  uint connection_count;
  uint pad0, pad1;
  uint items[];
} highlight;

// Set 1: one element region (one generation): its table, whose header holds the device addresses
// of the generation's elements (read through buffer references, 64-bit address arithmetic).
struct Segment {
  uint neuron_first;
  uint connection_first;
  float value_min, value_max;
  uint layer;
  uint tensor;
  uint pad0, pad1;
};
layout(buffer_reference, std430, buffer_reference_align = 16) readonly buffer NeuronRef { vec4 neuron; };  // xyz, value
layout(buffer_reference, std430, buffer_reference_align = 8) readonly buffer ConnectionRef { uvec2 connection; };  // src, dst|code<<24
layout(set = 1, binding = 0, std430) readonly buffer Table {
  uint64_t neurons;      // address of neuron 0
  uint64_t connections;  // address of connection 0
  uint neuron_count;
  uint connection_count;
  uint segment_count;
  float max_contribution;
  float value_min, value_max, value_abs_max;
  uint pad;
  Segment segments[];
} table;

layout(push_constant) uniform Push {
  uint colour_range;   // 0: per tensor, 1: global
  float value_range;   // global range; <= 0: the generation's max |value|
  float dim;           // colour factor for the non-highlighted scene
  uint pad;
} push;

// firstInstance of a scene draw: the segment index, and bit 30 when the filter draws the segment
// dimmed (engine/scene_buffers.h kDimmedSegmentBit).
const uint kDimmedSegmentBit = 0x40000000u;
const float kFilterDim = 0.18;  // colour (and connection alpha) factor of a dimmed segment
uint instance_segment(int instance) { return uint(instance) & ~kDimmedSegmentBit; }
float instance_dim(int instance) { return (uint(instance) & kDimmedSegmentBit) != 0u ? kFilterDim : 1.0; }

// The value range that maps to full colour for a segment.
float colour_range(uint segment) {
  if (push.colour_range == 1u) {
    float r = push.value_range > 0.0 ? push.value_range : table.value_abs_max;
    return r > 0.0 ? r : 1.0;
  }
  Segment s = table.segments[segment];
  float r = max(abs(s.value_min), abs(s.value_max));
  return r > 0.0 ? r : 1.0;
}

// Segment holding neuron n / connection c (segments are in ascending array order).
uint segment_of_neuron(uint n) {
  uint lo = 0u, hi = table.segment_count;
  while (hi - lo > 1u) {
    uint mid = (lo + hi) / 2u;
    if (table.segments[mid].neuron_first <= n) lo = mid; else hi = mid;
  }
  return lo;
}
uint segment_of_connection(uint c) {
  uint lo = 0u, hi = table.segment_count;
  while (hi - lo > 1u) {
    uint mid = (lo + hi) / 2u;
    if (table.segments[mid].connection_first <= c) lo = mid; else hi = mid;
  }
  return lo;
}

// Neuron n / connection c of the generation (clamped to the elements written).
vec4 neuron_at(uint n) {
  uint i = min(n, max(table.neuron_count, 1u) - 1u);
  return NeuronRef(table.neurons + uint64_t(i) * uint64_t(16)).neuron;
}
uvec2 connection_at(uint c) {
  uint i = min(c, max(table.connection_count, 1u) - 1u);
  return ConnectionRef(table.connections + uint64_t(i) * uint64_t(8)).connection;
}
