// The scene pipelines and their layouts (engine-private). Descriptor set 0 is per frame slot
// (frame uniforms, highlight list, overlay vertices), set 1 per element region (its segment table,
// whose header holds the device addresses of the neurons and connections); see shaders/scene.glsl.
#pragma once

#include <vulkan/vulkan.h>

#include <glm/glm.hpp>

#include "engine/renderer.h"
#include "engine/vk.h"

namespace nnxr::engine {

class Device;

// std140 mirror of FrameUniforms in shaders/scene.glsl.
struct FrameUniforms {
  glm::mat4 view[kMaxViews];
  glm::mat4 projection[kMaxViews];
  glm::mat4 world;
  glm::vec4 background;
  glm::vec4 sizes;  // neuron radius (world m), min radius (px), viewport height (px), connection alpha
  glm::vec4 fog;    // start, end, point fade-in diameter (px; 0: off)
  // Screen text placed on planes (the headset): canvas pixels → world, [0] the view's panels
  // (title, prediction, legend, selection), [1] the filter menu.
  glm::mat4 panel[2];
  glm::vec4 canvas;  // xy: the panels' canvas size (px); zw: the menu's top left on the screen (px)
};

// Mirror of Push in shaders/scene.glsl.
struct PushConstants {
  uint32_t colour_range = 0;
  float value_range = 0;
  float dim = 1;
  uint32_t pad = 0;
};

// Mirror of TextPush in shaders/text.glsl.
struct TextPush {
  float viewport[2] = {1, 1};
  float world_scale = 1;
  uint32_t atlas_width = 1;
  uint32_t screen = 1;  // text_screen bits: screen-space glyphs (panels, menu) on, on planes, menu shown
  float menu_scale = 1;  // on the screen: screen pixels per menu canvas pixel
  float hover[2] = {0, 0};  // the menu's rows between these canvas y are lit (pointed at)
};
static_assert(sizeof(TextPush) == 32);
namespace text_screen {
inline constexpr uint32_t kOn = 1u, kPlanes = 2u, kMenu = 4u;
}
// Mirror of TilePush in shaders/tiles.glsl.
struct TilePushConstants {
  uint64_t image = 0;  // device address of the activation image
  uint32_t colour_range = 0;
  float value_range = 0;
  float dim = 1;
  uint32_t threshold_mode = 0;  // 0: quantile, 1: absolute
  float threshold = 0;
  uint32_t outside = 0;  // tensors outside the layer window: 0 hidden, 1 dimmed
  int32_t layer_min = 0, layer_max = 0;
  uint64_t filter = 0;  // device address of the op/tensor filter's flags (engine/tiles.h); 0: none
};
static_assert(sizeof(TilePushConstants) == 48);

// Header of the highlight storage buffer; the indices follow.
struct HighlightHeader {
  uint32_t neuron_count = 0, connection_count = 0, pad[2]{};
};

struct Pipelines {
  DescriptorSetLayout frame_layout;   // set 0
  DescriptorSetLayout region_layout;  // set 1
  PipelineLayout layout;
  Pipeline neurons, connections;                          // indirect scene draws
  Pipeline highlight_neurons, highlight_connections;      // highlight list draws
  Pipeline overlay_lines, overlay_triangles;              // world-space overlay (engine/overlay.h)
  // Text (engine/text.h): set 0 as above, set 1 the glyph buffer and the SDF atlas; TextPush.
  DescriptorSetLayout text_set_layout;
  PipelineLayout text_layout;
  Pipeline text;
  PipelineLayout tiles_layout;  // set 0 and TilePushConstants
  Pipeline tiles;               // activation images (engine/tiles.h)
};

Pipelines create_pipelines(const Device& device, const RendererConfig& config);

}  // namespace nnxr::engine
