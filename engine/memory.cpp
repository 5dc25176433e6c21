#include "engine/memory.h"

#include <string>

#include "engine/device.h"

namespace nnxr::engine {

int find_memory_type(const VkPhysicalDeviceMemoryProperties& memory, uint32_t type_bits, VkMemoryPropertyFlags flags,
                     VkDeviceSize min_heap) {
  for (uint32_t i = 0; i < memory.memoryTypeCount; ++i) {
    if (!(type_bits & (1u << i))) continue;
    if ((memory.memoryTypes[i].propertyFlags & flags) != flags) continue;
    if (memory.memoryHeaps[memory.memoryTypes[i].heapIndex].size < min_heap) continue;
    return int(i);
  }
  return -1;
}

namespace {

// Allocates memory for `requirements`, trying the preferred flag sets in order.
Memory allocate(const Device& device, const VkMemoryRequirements& requirements,
                std::initializer_list<VkMemoryPropertyFlags> preferences, VkMemoryPropertyFlags* chosen,
                VkMemoryAllocateFlags allocate_flags = 0) {
  VkResult last = VK_ERROR_OUT_OF_DEVICE_MEMORY;
  for (VkMemoryPropertyFlags flags : preferences) {
    int type = find_memory_type(device.memory(), requirements.memoryTypeBits, flags, requirements.size);
    if (type < 0) continue;
    VkMemoryAllocateFlagsInfo flags_info{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_FLAGS_INFO};
    flags_info.flags = allocate_flags;
    VkMemoryAllocateInfo info{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
    if (allocate_flags != 0) info.pNext = &flags_info;
    info.allocationSize = requirements.size;
    info.memoryTypeIndex = uint32_t(type);
    VkDeviceMemory memory = VK_NULL_HANDLE;
    last = vkAllocateMemory(device.get(), &info, nullptr, &memory);
    if (last == VK_SUCCESS) {
      *chosen = device.memory().memoryTypes[type].propertyFlags;
      return Memory(device.get(), memory);
    }
    if (last != VK_ERROR_OUT_OF_DEVICE_MEMORY && last != VK_ERROR_OUT_OF_HOST_MEMORY) break;
  }
  throw VulkanError("vkAllocateMemory of " + std::to_string(requirements.size >> 20) + " MiB failed: " + result_name(last),
                    last);
}

}  // namespace

MappedBuffer create_mapped_buffer(const Device& device, VkDeviceSize size, VkBufferUsageFlags usage) {
  MappedBuffer out;
  VkBufferCreateInfo info{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  info.size = size;
  info.usage = usage;
  info.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  VkBuffer buffer = VK_NULL_HANDLE;
  check(vkCreateBuffer(device.get(), &info, nullptr, &buffer), "vkCreateBuffer");
  Buffer owner(device.get(), buffer);
  VkMemoryRequirements requirements;
  vkGetBufferMemoryRequirements(device.get(), buffer, &requirements);
  constexpr VkMemoryPropertyFlags host = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  VkMemoryPropertyFlags chosen = 0;
  const bool addressed = (usage & VK_BUFFER_USAGE_SHADER_DEVICE_ADDRESS_BIT) != 0;
  out.memory = allocate(device, requirements, {host | VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, host}, &chosen,
                        addressed ? VK_MEMORY_ALLOCATE_DEVICE_ADDRESS_BIT : 0);
  out.buffer = std::move(owner);
  check(vkBindBufferMemory(device.get(), buffer, out.memory.get(), 0), "vkBindBufferMemory");
  if (addressed) {
    VkBufferDeviceAddressInfo address{VK_STRUCTURE_TYPE_BUFFER_DEVICE_ADDRESS_INFO};
    address.buffer = buffer;
    out.address = device.buffer_device_address(device.get(), &address);
  }
  check(vkMapMemory(device.get(), out.memory.get(), 0, VK_WHOLE_SIZE, 0, &out.mapped), "vkMapMemory");
  out.size = size;
  out.device_local = (chosen & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT) != 0;
  return out;
}

DeviceImage create_image(const Device& device, VkFormat format, VkExtent2D extent, uint32_t layers,
                         VkImageUsageFlags usage, VkImageAspectFlags aspect) {
  DeviceImage out;
  VkImageCreateInfo info{VK_STRUCTURE_TYPE_IMAGE_CREATE_INFO};
  info.imageType = VK_IMAGE_TYPE_2D;
  info.format = format;
  info.extent = {extent.width, extent.height, 1};
  info.mipLevels = 1;
  info.arrayLayers = layers;
  info.samples = VK_SAMPLE_COUNT_1_BIT;
  info.tiling = VK_IMAGE_TILING_OPTIMAL;
  info.usage = usage;
  info.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  info.initialLayout = VK_IMAGE_LAYOUT_UNDEFINED;
  VkImage image = VK_NULL_HANDLE;
  check(vkCreateImage(device.get(), &info, nullptr, &image), "vkCreateImage");
  Image owner(device.get(), image);
  VkMemoryRequirements requirements;
  vkGetImageMemoryRequirements(device.get(), image, &requirements);
  VkMemoryPropertyFlags chosen = 0;
  out.memory = allocate(device, requirements, {VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, 0}, &chosen);
  out.image = std::move(owner);
  check(vkBindImageMemory(device.get(), image, out.memory.get(), 0), "vkBindImageMemory");

  VkImageViewCreateInfo view{VK_STRUCTURE_TYPE_IMAGE_VIEW_CREATE_INFO};
  view.image = image;
  view.viewType = layers > 1 ? VK_IMAGE_VIEW_TYPE_2D_ARRAY : VK_IMAGE_VIEW_TYPE_2D;
  view.format = format;
  view.subresourceRange = {aspect, 0, 1, 0, layers};
  VkImageView handle = VK_NULL_HANDLE;
  check(vkCreateImageView(device.get(), &view, nullptr, &handle), "vkCreateImageView");
  out.view = ImageView(device.get(), handle);
  out.format = format;
  out.extent = extent;
  out.layers = layers;
  return out;
}

}  // namespace nnxr::engine
