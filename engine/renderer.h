// Records the scene's draws into a command buffer for a render target.
//
//   Renderer renderer(device, scene_buffers, {.colour_format = ..., .view_count = 1});
//   // per frame, frame thread, after waiting on the fence of frame slot `slot`:
//   SceneFrame scene = scene_buffers.acquire(serial);
//   transition colour → COLOR_ATTACHMENT_OPTIMAL, depth → DEPTH_ATTACHMENT_OPTIMAL
//   renderer.record(cmd, target, scene, params, slot);
//   submit with the slot's fence; when it has signalled: scene_buffers.retire(serial)
//
// record() clears the target (loadOp CLEAR to params.background), draws the activation images
// (one quad per tile, depth-tested and -written), neurons (billboards,
// depth-tested and -written), then connections (lines, alpha-blended, depth-tested), then the
// highlight, then the frame's overlay (FrameParams::overlay_*), and leaves the images in the
// attachment layouts. Its CPU cost is O(1) in the number
// of elements: a few binds and one vkCmdDrawIndirect per element kind over all segments.
// Multiview: with view_count > 1 the target's views are 2D_ARRAY views of view_count layers and
// one draw renders every view (gl_ViewIndex selects the view's matrices).
//
// Colours are computed in linear space: use *_SRGB colour formats.
//
// Threading: a Renderer is used by one thread (the frame thread). Lifetime: the Device and the
// SceneBuffers outlive it; the GPU must be done with it before destruction.
#pragma once

#include <vulkan/vulkan.h>

#include <array>
#include <cstdint>
#include <limits>
#include <memory>
#include <span>
#include <vector>

#include <glm/glm.hpp>

#include "engine/memory.h"
#include "engine/overlay.h"
#include "engine/scene_buffers.h"
#include "engine/vk.h"

namespace nnxr::engine {

class Device;

inline constexpr uint32_t kMaxViews = 2;
inline constexpr uint32_t kMaxHighlight = 4096;  // highlighted neurons + connections
inline constexpr uint32_t kMaxOverlayVertices = 32768;  // overlay lines + triangles per frame

struct RendererConfig {
  VkFormat colour_format = VK_FORMAT_R8G8B8A8_SRGB;
  VkFormat depth_format = VK_FORMAT_D32_SFLOAT;
  uint32_t view_count = 1;        // 1 (desktop, offscreen) or 2 (stereo multiview)
  uint32_t frames_in_flight = 2;  // frame slots for per-frame uniforms and highlight lists
};

struct RenderTarget {
  VkImageView colour = VK_NULL_HANDLE;  // colour_format; view_count layers
  VkImageView depth = VK_NULL_HANDLE;   // depth_format; view_count layers
  VkExtent2D extent{};
  // Keep the depth values after the pass (e.g. a depth image handed to an OpenXR compositor);
  // false lets the driver discard them.
  bool store_depth = false;
};

enum class ColourRange : uint32_t {
  PerTensor = 0,  // each tensor's own max |value| (from its segment) maps to full colour
  Global = 1,     // FrameParams::value_range (or the generation's max |value| when ≤ 0)
};

enum class PanelPlacement : uint8_t { Hidden, Corners, Planes };

// Everything a frame's draws depend on besides the scene. Plain data.
struct FrameParams {
  std::array<glm::mat4, kMaxViews> view{glm::mat4(1), glm::mat4(1)};        // world → eye
  std::array<glm::mat4, kMaxViews> projection{glm::mat4(1), glm::mat4(1)};  // eye → Vulkan clip
  glm::mat4 world = glm::mat4(1);  // network (layout metres) → world: grab, scale
  glm::vec3 background{0.02f, 0.02f, 0.035f};  // linear RGB; also the fog colour
  ColourRange colour_range = ColourRange::PerTensor;
  float value_range = 0;           // for ColourRange::Global; ≤ 0: the generation's max |value|
  float neuron_size = 0.003f;      // neuron diameter in network metres (scaled by `world`)
  float min_neuron_pixels = 1.5f;  // neurons are never drawn smaller than this diameter
  float connection_alpha = 0.6f;   // alpha of the strongest connection
  float fog_start = 2.0f;          // eye distance in world metres where fog begins
  float fog_end = 40.0f;           // eye distance where only background remains
  bool neurons = true, connections = true;
  // Activation images (engine/tiles.h), drawn behind the neurons. Texels below the neuron
  // threshold are not drawn: a quantile of each tensor's |a|, or an absolute |a|.
  bool images = true;
  // Neurons (not the highlight) grow in from nothing while their diameter on screen goes from
  // half this many pixels to this many, so that far away the images show (0: always drawn).
  float point_fade_pixels = 0;
  // The filter's layer window for the images: tensors outside it are hidden, or dimmed.
  int image_layer_min = 0;
  int image_layer_max = std::numeric_limits<int>::max();
  bool image_dim_outside = false;
  bool image_threshold_absolute = false;
  float image_threshold = 0;
  // When a highlight is shown, the rest of the scene is dimmed by this factor (1: no dimming).
  float dim_unselected = 0.35f;
  // World-space overlay drawn after the scene, depth-tested, alpha-blended, not depth-writing
  // (engine/overlay.h). Read during record() only; at most kMaxOverlayVertices in all (lines
  // first; the rest is dropped).
  std::span<const OverlayVertex> overlay_lines, overlay_triangles;
  // Draw the scene's text (SceneFrame::text: labels, legend, panels; engine/text.h) last, over
  // everything, without depth test.
  bool text = true;
  // Where the screen-space panels (title, prediction, legend, selection) and the filter menu go:
  // the viewport's corners (desktop, render), or planes in the world (the headset, where text
  // fixed to the corners of each eye is neither readable nor comfortable), or nowhere.
  PanelPlacement panels = PanelPlacement::Corners;
  // Planes: canvas pixels (x right, y down from the top left) → world. The panels' canvas is
  // panel_canvas pixels in size, its corners where the panels sit.
  glm::mat4 panel_plane = glm::mat4(1);
  glm::vec2 panel_canvas{1280, 720};
  // The filter menu (engine/interaction.h FilterMenu, composed by the worker when the viewer asks
  // for it): shown or not; on the screen its canvas's top left is at menu_origin (pixels), on
  // planes menu_plane maps it to the world (the left hand).
  bool menu = true;
  glm::vec2 menu_origin{14, 130};
  float menu_scale = 1;  // screen pixels per canvas pixel
  glm::vec2 menu_hover{0, 0};  // canvas y range of the row pointed at, lit (empty: none)
  glm::mat4 menu_plane = glm::mat4(1);
};

// Elements to emphasise (e.g. a selected neuron's trace). Indices are into the neuron and
// connection arrays of `generation`; the highlight is drawn only while that generation is the one
// the frame draws. Kept by the renderer until replaced.
struct Highlight {
  uint64_t generation = 0;
  std::vector<uint32_t> neurons;      // the first one is drawn as "the selected"
  std::vector<uint32_t> connections;
};

class Renderer {
 public:
  // Compiles the pipelines for `config` (throws VulkanError).
  Renderer(const Device& device, const SceneBuffers& scene, const RendererConfig& config);
  ~Renderer();
  Renderer(const Renderer&) = delete;
  Renderer& operator=(const Renderer&) = delete;

  const RendererConfig& config() const;

  // Replaces the highlight (frame thread; takes effect at the next record()). At most
  // kMaxHighlight entries are kept.
  void set_highlight(Highlight highlight);
  void clear_highlight();

  // Records the frame into `cmd` (in the recording state). frame_slot < frames_in_flight; the
  // caller guarantees the previous submission that used frame_slot has completed.
  void record(VkCommandBuffer cmd, const RenderTarget& target, const SceneFrame& scene, const FrameParams& params,
              uint32_t frame_slot);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace nnxr::engine
