#include "engine/vk.h"

namespace nnxr::engine {

const char* result_name(VkResult result) {
  switch (result) {
#define NNXR_RESULT(r) \
  case r:              \
    return #r;
    NNXR_RESULT(VK_SUCCESS)
    NNXR_RESULT(VK_NOT_READY)
    NNXR_RESULT(VK_TIMEOUT)
    NNXR_RESULT(VK_EVENT_SET)
    NNXR_RESULT(VK_EVENT_RESET)
    NNXR_RESULT(VK_INCOMPLETE)
    NNXR_RESULT(VK_ERROR_OUT_OF_HOST_MEMORY)
    NNXR_RESULT(VK_ERROR_OUT_OF_DEVICE_MEMORY)
    NNXR_RESULT(VK_ERROR_INITIALIZATION_FAILED)
    NNXR_RESULT(VK_ERROR_DEVICE_LOST)
    NNXR_RESULT(VK_ERROR_MEMORY_MAP_FAILED)
    NNXR_RESULT(VK_ERROR_LAYER_NOT_PRESENT)
    NNXR_RESULT(VK_ERROR_EXTENSION_NOT_PRESENT)
    NNXR_RESULT(VK_ERROR_FEATURE_NOT_PRESENT)
    NNXR_RESULT(VK_ERROR_INCOMPATIBLE_DRIVER)
    NNXR_RESULT(VK_ERROR_TOO_MANY_OBJECTS)
    NNXR_RESULT(VK_ERROR_FORMAT_NOT_SUPPORTED)
    NNXR_RESULT(VK_ERROR_FRAGMENTED_POOL)
    NNXR_RESULT(VK_ERROR_UNKNOWN)
    NNXR_RESULT(VK_ERROR_OUT_OF_POOL_MEMORY)
    NNXR_RESULT(VK_ERROR_INVALID_EXTERNAL_HANDLE)
    NNXR_RESULT(VK_ERROR_FRAGMENTATION)
    NNXR_RESULT(VK_ERROR_INVALID_OPAQUE_CAPTURE_ADDRESS)
    NNXR_RESULT(VK_PIPELINE_COMPILE_REQUIRED)
    NNXR_RESULT(VK_ERROR_SURFACE_LOST_KHR)
    NNXR_RESULT(VK_ERROR_NATIVE_WINDOW_IN_USE_KHR)
    NNXR_RESULT(VK_SUBOPTIMAL_KHR)
    NNXR_RESULT(VK_ERROR_OUT_OF_DATE_KHR)
    NNXR_RESULT(VK_ERROR_INCOMPATIBLE_DISPLAY_KHR)
    NNXR_RESULT(VK_ERROR_VALIDATION_FAILED_EXT)
#undef NNXR_RESULT
    default:
      return "VkResult(unknown)";
  }
}

Fence create_fence(VkDevice device, bool signaled) {
  VkFenceCreateInfo info{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  if (signaled) info.flags = VK_FENCE_CREATE_SIGNALED_BIT;
  VkFence fence = VK_NULL_HANDLE;
  check(vkCreateFence(device, &info, nullptr, &fence), "vkCreateFence");
  return Fence(device, fence);
}

Semaphore create_semaphore(VkDevice device) {
  VkSemaphoreCreateInfo info{VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO};
  VkSemaphore semaphore = VK_NULL_HANDLE;
  check(vkCreateSemaphore(device, &info, nullptr, &semaphore), "vkCreateSemaphore");
  return Semaphore(device, semaphore);
}

CommandPool create_command_pool(VkDevice device, uint32_t queue_family, VkCommandPoolCreateFlags flags) {
  VkCommandPoolCreateInfo info{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  info.flags = flags;
  info.queueFamilyIndex = queue_family;
  VkCommandPool pool = VK_NULL_HANDLE;
  check(vkCreateCommandPool(device, &info, nullptr, &pool), "vkCreateCommandPool");
  return CommandPool(device, pool);
}

VkCommandBuffer allocate_command_buffer(VkDevice device, VkCommandPool pool) {
  VkCommandBufferAllocateInfo info{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  info.commandPool = pool;
  info.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  info.commandBufferCount = 1;
  VkCommandBuffer cmd = VK_NULL_HANDLE;
  check(vkAllocateCommandBuffers(device, &info, &cmd), "vkAllocateCommandBuffers");
  return cmd;
}

void transition_image(VkCommandBuffer cmd, VkImage image, VkImageAspectFlags aspect, VkImageLayout from,
                      VkImageLayout to) {
  VkImageMemoryBarrier barrier{VK_STRUCTURE_TYPE_IMAGE_MEMORY_BARRIER};
  barrier.srcAccessMask = VK_ACCESS_MEMORY_WRITE_BIT;
  barrier.dstAccessMask = VK_ACCESS_MEMORY_READ_BIT | VK_ACCESS_MEMORY_WRITE_BIT;
  barrier.oldLayout = from;
  barrier.newLayout = to;
  barrier.srcQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED;
  barrier.dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED;
  barrier.image = image;
  barrier.subresourceRange = {aspect, 0, VK_REMAINING_MIP_LEVELS, 0, VK_REMAINING_ARRAY_LAYERS};
  vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, 0, 0, nullptr, 0,
                       nullptr, 1, &barrier);
}

}  // namespace nnxr::engine
