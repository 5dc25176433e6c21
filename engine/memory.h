// Buffers and images with their own dedicated memory, chosen by memory type on purpose. The engine
// makes few, large allocations once (scene regions, count slots, uniforms, render targets), so
// one allocation per resource is the right granularity.
//
// Host-visible buffers are persistently mapped for their whole life and always HOST_COHERENT (no
// flushes needed). Preference: DEVICE_LOCAL|HOST_VISIBLE|HOST_COHERENT when the device has it and
// its heap is large enough (resizable BAR, unified memory, lavapipe), else
// HOST_VISIBLE|HOST_COHERENT; if the first choice fails to allocate, the next is tried.
#pragma once

#include <vulkan/vulkan.h>

#include <cstdint>

#include "engine/vk.h"

namespace nnxr::engine {

class Device;

// A buffer with its memory, persistently mapped. Movable; destroy before the Device.
// Destruction: the buffer, then the memory (which unmaps it).
struct MappedBuffer {
  Memory memory;
  Buffer buffer;
  void* mapped = nullptr;
  VkDeviceSize size = 0;
  bool device_local = false;  // landed in DEVICE_LOCAL memory
  VkDeviceAddress address = 0;  // with VK_BUFFER_USAGE_SHADER_DEVICE_ADDRESS_BIT: the buffer's device address
};

// Throws VulkanError when no host-visible coherent memory can hold `size` bytes. A usage with
// VK_BUFFER_USAGE_SHADER_DEVICE_ADDRESS_BIT allocates with VK_MEMORY_ALLOCATE_DEVICE_ADDRESS_BIT
// and fills `address`.
MappedBuffer create_mapped_buffer(const Device& device, VkDeviceSize size, VkBufferUsageFlags usage);

// A device-local image with its memory and one view (2D, or 2D_ARRAY when layers > 1).
struct DeviceImage {
  Memory memory;
  Image image;
  ImageView view;
  VkFormat format = VK_FORMAT_UNDEFINED;
  VkExtent2D extent{};
  uint32_t layers = 1;
};

DeviceImage create_image(const Device& device, VkFormat format, VkExtent2D extent, uint32_t layers,
                         VkImageUsageFlags usage, VkImageAspectFlags aspect);

// Index of the first memory type in `type_bits` having all of `flags` (and a heap of at least
// `min_heap` bytes), or -1.
int find_memory_type(const VkPhysicalDeviceMemoryProperties& memory, uint32_t type_bits, VkMemoryPropertyFlags flags,
                     VkDeviceSize min_heap = 0);

}  // namespace nnxr::engine
