// A window surface's swapchain: images, views, a depth image of the same size, and one
// "rendered" semaphore per image. Recreated on resize or when presentation reports it out of date.
//
// Ownership: owns the VkSwapchainKHR and everything made for its images; does not own the
// surface or the device (both must outlive it). Frame thread only. Recreating destroys the old
// images: the caller first waits for the frames that used them (their fences).
#pragma once

#include <vulkan/vulkan.h>

#include <cstdint>
#include <vector>

#include "engine/memory.h"
#include "engine/vk.h"

namespace nnxr::engine {

class Device;

using SwapchainHandle = DeviceOwner<VkSwapchainKHR, vkDestroySwapchainKHR>;

// Owner of a VkSurfaceKHR (an instance child).
class Surface {
 public:
  Surface() = default;
  Surface(VkInstance instance, VkSurfaceKHR surface) : instance_(instance), surface_(surface) {}
  Surface(Surface&& o) noexcept : instance_(o.instance_), surface_(std::exchange(o.surface_, VK_NULL_HANDLE)) {}
  Surface& operator=(Surface&& o) noexcept {
    if (this != &o) {
      reset();
      instance_ = o.instance_;
      surface_ = std::exchange(o.surface_, VK_NULL_HANDLE);
    }
    return *this;
  }
  ~Surface() { reset(); }
  void reset() {
    if (surface_ != VK_NULL_HANDLE) vkDestroySurfaceKHR(instance_, surface_, nullptr);
    surface_ = VK_NULL_HANDLE;
  }
  VkSurfaceKHR get() const { return surface_; }

 private:
  VkInstance instance_ = VK_NULL_HANDLE;
  VkSurfaceKHR surface_ = VK_NULL_HANDLE;
};

struct SwapchainOptions {
  bool vsync = true;  // FIFO; otherwise MAILBOX, then IMMEDIATE, when the surface offers them
  VkFormat depth_format = VK_FORMAT_D32_SFLOAT;
  bool depth = true;          // make the depth image (a mirror that only copies into it does not)
  bool transfer_dst = false;  // images also allow TRANSFER_DST (copies and blits into them)
};

class Swapchain {
 public:
  // `extent` is the window's framebuffer size, used when the surface does not fix one.
  // Throws VulkanError.
  Swapchain(const Device& device, VkSurfaceKHR surface, VkExtent2D extent, SwapchainOptions options);
  Swapchain(const Swapchain&) = delete;
  Swapchain& operator=(const Swapchain&) = delete;

  // Rebuilds for a new framebuffer size (the old swapchain is handed to the new one).
  void recreate(VkExtent2D extent);

  VkSwapchainKHR get() const { return swapchain_.get(); }
  VkFormat format() const { return format_; }
  VkExtent2D extent() const { return extent_; }
  uint32_t image_count() const { return static_cast<uint32_t>(images_.size()); }
  VkImage image(uint32_t i) const { return images_[i]; }
  VkImageView view(uint32_t i) const { return views_[i].get(); }
  VkSemaphore rendered(uint32_t i) const { return rendered_[i].get(); }
  const DeviceImage& depth() const { return depth_; }
  bool can_copy() const { return can_copy_; }  // images allow TRANSFER_SRC (screenshots)
  VkPresentModeKHR present_mode() const { return present_mode_; }

 private:
  void create(VkExtent2D extent);

  const Device& device_;
  VkSurfaceKHR surface_;
  SwapchainOptions options_;
  VkFormat format_ = VK_FORMAT_UNDEFINED;
  VkExtent2D extent_{};
  VkPresentModeKHR present_mode_ = VK_PRESENT_MODE_FIFO_KHR;
  bool can_copy_ = false;
  // Member order is destruction order in reverse: per-image objects go before the swapchain.
  SwapchainHandle swapchain_;
  std::vector<VkImage> images_;
  std::vector<ImageView> views_;
  std::vector<Semaphore> rendered_;
  DeviceImage depth_;
};

}  // namespace nnxr::engine
