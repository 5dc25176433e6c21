// Vulkan error reporting and move-only owners for Vulkan handles.
//
// Every Vulkan call whose VkResult is not VK_SUCCESS becomes a VulkanError naming the call and the
// result (check()). Owners destroy their handle in the destructor; a class holding several owners
// declares them in creation order, so members destroy in reverse (children before parents) with
// no hand-written teardown. Owners are plain values: not thread-safe, used by whoever owns them.
#pragma once

#include <vulkan/vulkan.h>

#include <stdexcept>
#include <string>
#include <utility>

namespace nnxr::engine {

// A failed Vulkan call (or a missing Vulkan capability). what(): "vkCreateDevice failed:
// VK_ERROR_INITIALIZATION_FAILED". result() is VK_ERROR_UNKNOWN for capability errors.
class VulkanError : public std::runtime_error {
 public:
  VulkanError(const std::string& message, VkResult result) : std::runtime_error(message), result_(result) {}
  VkResult result() const { return result_; }

 private:
  VkResult result_;
};

const char* result_name(VkResult result);

// Throws VulkanError("<call> failed: <result>") unless result is VK_SUCCESS.
inline void check(VkResult result, const char* call) {
  if (result != VK_SUCCESS) throw VulkanError(std::string(call) + " failed: " + result_name(result), result);
}

// Owner of a handle destroyed with Destroy(device, handle, nullptr) — every device child.
template <typename Handle, auto Destroy>
class DeviceOwner {
 public:
  DeviceOwner() = default;
  DeviceOwner(VkDevice device, Handle handle) : device_(device), handle_(handle) {}
  DeviceOwner(DeviceOwner&& other) noexcept
      : device_(other.device_), handle_(std::exchange(other.handle_, VK_NULL_HANDLE)) {}
  DeviceOwner& operator=(DeviceOwner&& other) noexcept {
    if (this != &other) {
      reset();
      device_ = other.device_;
      handle_ = std::exchange(other.handle_, VK_NULL_HANDLE);
    }
    return *this;
  }
  DeviceOwner(const DeviceOwner&) = delete;
  DeviceOwner& operator=(const DeviceOwner&) = delete;
  ~DeviceOwner() { reset(); }

  void reset() {
    if (handle_ != VK_NULL_HANDLE) Destroy(device_, handle_, nullptr);
    handle_ = VK_NULL_HANDLE;
  }
  Handle get() const { return handle_; }
  VkDevice device() const { return device_; }
  explicit operator bool() const { return handle_ != VK_NULL_HANDLE; }

 private:
  VkDevice device_ = VK_NULL_HANDLE;
  Handle handle_ = VK_NULL_HANDLE;
};

using Buffer = DeviceOwner<VkBuffer, vkDestroyBuffer>;
using Image = DeviceOwner<VkImage, vkDestroyImage>;
using ImageView = DeviceOwner<VkImageView, vkDestroyImageView>;
using Memory = DeviceOwner<VkDeviceMemory, vkFreeMemory>;
using Fence = DeviceOwner<VkFence, vkDestroyFence>;
using Semaphore = DeviceOwner<VkSemaphore, vkDestroySemaphore>;
using CommandPool = DeviceOwner<VkCommandPool, vkDestroyCommandPool>;
using ShaderModule = DeviceOwner<VkShaderModule, vkDestroyShaderModule>;
using Pipeline = DeviceOwner<VkPipeline, vkDestroyPipeline>;
using PipelineLayout = DeviceOwner<VkPipelineLayout, vkDestroyPipelineLayout>;
using DescriptorSetLayout = DeviceOwner<VkDescriptorSetLayout, vkDestroyDescriptorSetLayout>;
using DescriptorPool = DeviceOwner<VkDescriptorPool, vkDestroyDescriptorPool>;

// Creation helpers (throw VulkanError).
Fence create_fence(VkDevice device, bool signaled);
Semaphore create_semaphore(VkDevice device);
CommandPool create_command_pool(VkDevice device, uint32_t queue_family, VkCommandPoolCreateFlags flags);
// Primary command buffers from `pool`; freed with the pool.
VkCommandBuffer allocate_command_buffer(VkDevice device, VkCommandPool pool);

// Records an image layout transition covering all layers and mips of `aspect`, with conservative
// stage masks (ALL_COMMANDS). For render targets: colour and depth must be in
// COLOR_ATTACHMENT_OPTIMAL / DEPTH_ATTACHMENT_OPTIMAL when Renderer::record() runs.
void transition_image(VkCommandBuffer cmd, VkImage image, VkImageAspectFlags aspect, VkImageLayout from,
                      VkImageLayout to);

}  // namespace nnxr::engine
