// Rendering without a window: an offscreen colour + depth target, read back to RGBA8 pixels, and
// PNG writing. Used by `nnxr render` and the picture tests.
//
// Threading: one thread (it submits to the device queue under Device::queue_mutex() and waits
// for its own fence). Lifetime: the Device outlives it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/memory.h"
#include "engine/renderer.h"
#include "engine/vk.h"

namespace nnxr::engine {

class Device;
class SceneBuffers;
struct SceneFrame;

// Pixels, row-major from the top-left, 4 bytes per pixel (R, G, B, A), sRGB-encoded.
struct RgbaImage {
  uint32_t width = 0, height = 0;
  std::vector<uint8_t> pixels;
  const uint8_t* at(uint32_t x, uint32_t y) const { return &pixels[(size_t(y) * width + x) * 4]; }
};

// Throws std::runtime_error naming the file when it cannot be written.
void write_png(const std::string& path, const RgbaImage& image);

// Reading a colour image back to the host, shared by the offscreen target and the desktop
// screenshot. Records the copy of `image` (one layer of an 8-bit RGBA/BGRA colour image, in
// TRANSFER_SRC_OPTIMAL) into `buffer` (host-visible, width·height·4 bytes), then the
// TRANSFER→HOST barrier after which the host may read the buffer once the submission's fence has
// signalled.
void record_readback(VkCommandBuffer cmd, VkImage image, VkExtent2D extent, VkBuffer buffer);
// The pixels of such a readback as RGBA (BGRA formats swapped); `opaque` sets every alpha to 255.
RgbaImage rgba_from_readback(const void* data, VkExtent2D extent, VkFormat format, bool opaque);

// The colour format is the renderer's (an _SRGB RGBA/BGRA 8-bit format); view_count must be 1.
class Offscreen {
 public:
  Offscreen(const Device& device, const RendererConfig& config, VkExtent2D extent);
  ~Offscreen();
  Offscreen(const Offscreen&) = delete;
  Offscreen& operator=(const Offscreen&) = delete;

  // Acquires the current generation of `scene`, records, submits, waits and retires; returns the
  // image. This object acts as the frame thread of `scene` (its frame serials start at 1), so
  // no other frame thread may use the same SceneBuffers.
  RgbaImage render(Renderer& renderer, SceneBuffers& scene, const FrameParams& params);
  // Renders a frame the caller acquired (and retires after this returns): records, submits and
  // waits. For tests and tools that track generations themselves.
  RgbaImage render(Renderer& renderer, const SceneFrame& frame, const FrameParams& params);

  VkExtent2D extent() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace nnxr::engine
