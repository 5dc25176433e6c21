// The eye images of one session (internal to xr/): one array swapchain of two layers (one per eye)
// at the recommended size for colour, rendered by the engine's multiview renderer in one pass, and
// for depth either a second array swapchain of two depth layers (XR_KHR_composition_layer_depth;
// D32_SFLOAT, else D16_UNORM, as offered), which each projection view hands to the compositor, or
// a private depth image.
//
// Formats: colour R8G8B8A8_SRGB, else B8G8R8A8_SRGB; `preferred` (the renderer's formats when a
// lost session is rebuilt) wins when the runtime offers it, and a colour format other than it is
// an error then (the renderer's pipelines are built for one format).
//
// OpenXR functions used here: xrEnumerateViewConfigurationViews, xrEnumerateSwapchainFormats,
// xrCreateSwapchain, xrEnumerateSwapchainImages, xrDestroySwapchain.
//
// Ownership: each swapchain's image views are destroyed before the swapchain (their images belong
// to the runtime); destroy Swapchains before its session and before the Vulkan device, after the
// device has finished every frame that used them. One thread.
#pragma once

#include <vector>

#include "engine/device.h"
#include "engine/memory.h"
#include "engine/vk.h"
#include "xr/handles.h"

namespace nnxr::xr {

struct ArraySwapchain {
  SwapchainHandle handle;
  std::vector<VkImage> images;            // owned by the runtime
  std::vector<engine::ImageView> views;   // 2D_ARRAY views of images (destroyed before handle)
};

struct SwapchainFormats {
  VkFormat colour = VK_FORMAT_UNDEFINED;  // UNDEFINED: no preference
  VkFormat depth = VK_FORMAT_UNDEFINED;
};

class Swapchains {
 public:
  // `transfer_src`: the colour images are also blitted from (the desktop mirror).
  Swapchains(XrInstance instance, XrSystemId system, XrSession session, const engine::Device& device, bool depth_extension,
             bool transfer_src, SwapchainFormats preferred);

  VkExtent2D extent() const { return extent_; }
  SwapchainFormats formats() const { return formats_; }
  const ArraySwapchain& colour() const { return colour_; }
  // The depth swapchain, or null when depth is the private image.
  const ArraySwapchain* depth_swapchain() const { return depth_.handle ? &depth_ : nullptr; }
  const engine::DeviceImage& private_depth() const { return private_depth_; }

 private:
  void create(XrSession session, const engine::Device& device, XrSwapchainUsageFlags usage, VkFormat format,
              VkImageAspectFlags aspect, ArraySwapchain& out);

  XrInstance instance_;
  VkExtent2D extent_{};
  SwapchainFormats formats_;
  ArraySwapchain colour_;
  ArraySwapchain depth_;
  engine::DeviceImage private_depth_;
};

}  // namespace nnxr::xr
