#include "engine/offscreen.h"

#include <cstring>
#include <utility>
#include <stdexcept>

#include "engine/device.h"
#include "engine/scene_buffers.h"

namespace nnxr::engine {

void record_readback(VkCommandBuffer cmd, VkImage image, VkExtent2D extent, VkBuffer buffer) {
  VkBufferImageCopy copy{};
  copy.imageSubresource = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1};
  copy.imageExtent = {extent.width, extent.height, 1};
  vkCmdCopyImageToBuffer(cmd, image, VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, buffer, 1, &copy);
  VkBufferMemoryBarrier to_host{VK_STRUCTURE_TYPE_BUFFER_MEMORY_BARRIER};
  to_host.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
  to_host.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
  to_host.srcQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED;
  to_host.dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED;
  to_host.buffer = buffer;
  to_host.size = VK_WHOLE_SIZE;
  vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 0, nullptr, 1, &to_host, 0,
                       nullptr);
}

RgbaImage rgba_from_readback(const void* data, VkExtent2D extent, VkFormat format, bool opaque) {
  RgbaImage image;
  image.width = extent.width;
  image.height = extent.height;
  image.pixels.resize(size_t(extent.width) * extent.height * 4);
  std::memcpy(image.pixels.data(), data, image.pixels.size());
  const bool bgra = format == VK_FORMAT_B8G8R8A8_SRGB || format == VK_FORMAT_B8G8R8A8_UNORM;
  if (bgra || opaque)
    for (size_t i = 0; i < image.pixels.size(); i += 4) {
      if (bgra) std::swap(image.pixels[i], image.pixels[i + 2]);
      if (opaque) image.pixels[i + 3] = 255;
    }
  return image;
}

struct Offscreen::Impl {
  const Device& device;
  RendererConfig config;
  VkExtent2D extent;
  DeviceImage colour, depth;
  MappedBuffer readback;
  CommandPool pool;
  VkCommandBuffer cmd = VK_NULL_HANDLE;
  Fence fence;
  uint64_t serial = 0;

  Impl(const Device& d, const RendererConfig& c, VkExtent2D e) : device(d), config(c), extent(e) {
    colour = create_image(d, c.colour_format, e, 1, VK_IMAGE_USAGE_COLOR_ATTACHMENT_BIT | VK_IMAGE_USAGE_TRANSFER_SRC_BIT,
                          VK_IMAGE_ASPECT_COLOR_BIT);
    depth = create_image(d, c.depth_format, e, 1, VK_IMAGE_USAGE_DEPTH_STENCIL_ATTACHMENT_BIT, VK_IMAGE_ASPECT_DEPTH_BIT);
    readback = create_mapped_buffer(d, VkDeviceSize(e.width) * e.height * 4, VK_BUFFER_USAGE_TRANSFER_DST_BIT);
    pool = create_command_pool(d.get(), d.queue_family(), VK_COMMAND_POOL_CREATE_TRANSIENT_BIT);
    cmd = allocate_command_buffer(d.get(), pool.get());
    fence = create_fence(d.get(), false);
  }
};

Offscreen::Offscreen(const Device& device, const RendererConfig& config, VkExtent2D extent) {
  if (config.view_count != 1) throw std::invalid_argument("offscreen rendering needs a renderer with view_count 1");
  if (extent.width == 0 || extent.height == 0 || extent.width > 16384 || extent.height > 16384)
    throw std::invalid_argument("offscreen image size must be 1..16384 pixels on each side");
  const VkFormat f = config.colour_format;
  if (f != VK_FORMAT_R8G8B8A8_SRGB && f != VK_FORMAT_R8G8B8A8_UNORM && f != VK_FORMAT_B8G8R8A8_SRGB &&
      f != VK_FORMAT_B8G8R8A8_UNORM)
    throw std::invalid_argument("offscreen rendering needs an 8-bit RGBA or BGRA colour format");
  impl_ = std::make_unique<Impl>(device, config, extent);
}

Offscreen::~Offscreen() = default;

VkExtent2D Offscreen::extent() const { return impl_->extent; }

RgbaImage Offscreen::render(Renderer& renderer, SceneBuffers& scene, const FrameParams& params) {
  const uint64_t serial = ++impl_->serial;
  const SceneFrame frame = scene.acquire(serial);
  struct Retire {  // the frame is retired however rendering ends
    SceneBuffers& scene;
    uint64_t serial;
    ~Retire() { scene.retire(serial); }
  } retire{scene, serial};
  return render(renderer, frame, params);
}

RgbaImage Offscreen::render(Renderer& renderer, const SceneFrame& frame, const FrameParams& params) {
  Impl& m = *impl_;
  const VkDevice d = m.device.get();
  check(vkResetCommandPool(d, m.pool.get(), 0), "vkResetCommandPool");
  VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  check(vkBeginCommandBuffer(m.cmd, &begin), "vkBeginCommandBuffer");
  transition_image(m.cmd, m.colour.image.get(), VK_IMAGE_ASPECT_COLOR_BIT, VK_IMAGE_LAYOUT_UNDEFINED,
                   VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL);
  transition_image(m.cmd, m.depth.image.get(), VK_IMAGE_ASPECT_DEPTH_BIT, VK_IMAGE_LAYOUT_UNDEFINED,
                   VK_IMAGE_LAYOUT_DEPTH_ATTACHMENT_OPTIMAL);
  renderer.record(m.cmd, {m.colour.view.get(), m.depth.view.get(), m.extent}, frame, params, 0);
  transition_image(m.cmd, m.colour.image.get(), VK_IMAGE_ASPECT_COLOR_BIT, VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL,
                   VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL);
  record_readback(m.cmd, m.colour.image.get(), m.extent, m.readback.buffer.get());
  check(vkEndCommandBuffer(m.cmd), "vkEndCommandBuffer");

  VkSubmitInfo submit{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  submit.commandBufferCount = 1;
  submit.pCommandBuffers = &m.cmd;
  {
    std::lock_guard lock(m.device.queue_mutex());
    check(vkQueueSubmit(m.device.queue(), 1, &submit, m.fence.get()), "vkQueueSubmit");
  }
  const VkFence fence = m.fence.get();
  check(vkWaitForFences(d, 1, &fence, VK_TRUE, UINT64_MAX), "vkWaitForFences");
  check(vkResetFences(d, 1, &fence), "vkResetFences");

  return rgba_from_readback(m.readback.mapped, m.extent, m.config.colour_format, /*opaque=*/false);
}

}  // namespace nnxr::engine
