#include "engine/mirror.h"

#include <algorithm>
#include <stdexcept>

#include "engine/device.h"
#include "engine/glfw_window.h"
#include "engine/swapchain.h"

namespace nnxr::engine {

struct Mirror::Impl {
  // Member order is destruction order in reverse: the swapchain before the surface, the surface
  // before the window, the window before the library.
  GlfwLibrary glfw;
  Window window;
  uint32_t frame_slots;
  const Device* device = nullptr;
  Surface surface;
  std::unique_ptr<Swapchain> swapchain;
  std::vector<Semaphore> acquired;  // per frame slot
  bool stale = false;               // out of date or resized: rebuild in poll()
  uint64_t presented = 0, skipped = 0;

  Impl(uint32_t w, uint32_t h, uint32_t slots) : window(w, h, true), frame_slots(slots) {
    glfwSetWindowTitle(window.get(), "nnxr (headset mirror)");
    glfwSetWindowUserPointer(window.get(), this);
    glfwSetFramebufferSizeCallback(window.get(), [](GLFWwindow* win, int, int) {
      static_cast<Impl*>(glfwGetWindowUserPointer(win))->stale = true;
    });
  }

  VkExtent2D framebuffer() const {
    int w = 0, h = 0;
    glfwGetFramebufferSize(window.get(), &w, &h);
    return {uint32_t(std::max(w, 0)), uint32_t(std::max(h, 0))};
  }
};

Mirror::Mirror(uint32_t width, uint32_t height, uint32_t frame_slots)
    : impl_(std::make_unique<Impl>(width, height, frame_slots)) {}

Mirror::~Mirror() = default;

std::vector<std::string> Mirror::instance_extensions() const { return glfw_instance_extensions(); }

void Mirror::attach(const Instance& instance, const Device& device) {
  Impl& m = *impl_;
  VkSurfaceKHR s = VK_NULL_HANDLE;
  check(glfwCreateWindowSurface(instance.get(), m.window.get(), nullptr, &s), "glfwCreateWindowSurface");
  m.surface = Surface(instance.get(), s);
  VkBool32 supported = VK_FALSE;
  check(vkGetPhysicalDeviceSurfaceSupportKHR(device.physical(), device.queue_family(), s, &supported),
        "vkGetPhysicalDeviceSurfaceSupportKHR");
  if (!supported) throw NoDisplayError("the headset's Vulkan queue cannot present to a desktop window");
  m.device = &device;
  m.swapchain = std::make_unique<Swapchain>(device, s, m.framebuffer(),
                                            SwapchainOptions{.vsync = false, .depth = false, .transfer_dst = true});
  for (uint32_t i = 0; i < m.frame_slots; ++i) m.acquired.push_back(create_semaphore(device.get()));
}

bool Mirror::poll() {
  Impl& m = *impl_;
  glfwPollEvents();
  if (glfwWindowShouldClose(m.window.get())) return false;
  if (m.stale && m.swapchain) {
    const VkExtent2D fb = m.framebuffer();
    if (fb.width > 0 && fb.height > 0) {
      {
        std::lock_guard lock(m.device->queue_mutex());
        check(vkQueueWaitIdle(m.device->queue()), "vkQueueWaitIdle");
      }
      m.swapchain->recreate(fb);
      m.stale = false;
    }
  }
  return true;
}

std::optional<Mirror::Blit> Mirror::record(VkCommandBuffer cmd, VkImage source, uint32_t layer, VkExtent2D extent,
                                           uint32_t slot, const float background[3]) {
  Impl& m = *impl_;
  if (!m.swapchain || m.stale || slot >= m.acquired.size()) return std::nullopt;
  uint32_t image = 0;
  const VkResult r =
      vkAcquireNextImageKHR(m.device->get(), m.swapchain->get(), 0, m.acquired[slot].get(), VK_NULL_HANDLE, &image);
  if (r == VK_NOT_READY || r == VK_TIMEOUT) {
    ++m.skipped;
    return std::nullopt;
  }
  if (r == VK_ERROR_OUT_OF_DATE_KHR) {
    m.stale = true;
    return std::nullopt;
  }
  if (r == VK_SUBOPTIMAL_KHR) m.stale = true;  // this image is still usable
  else check(r, "vkAcquireNextImageKHR");

  const VkImage target = m.swapchain->image(image);
  const VkExtent2D dst = m.swapchain->extent();
  transition_image(cmd, source, VK_IMAGE_ASPECT_COLOR_BIT, VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL,
                   VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL);
  transition_image(cmd, target, VK_IMAGE_ASPECT_COLOR_BIT, VK_IMAGE_LAYOUT_UNDEFINED, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL);
  VkClearColorValue clear{{background[0], background[1], background[2], 1.0f}};
  const VkImageSubresourceRange all{VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1};
  vkCmdClearColorImage(cmd, target, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, &clear, 1, &all);
  transition_image(cmd, target, VK_IMAGE_ASPECT_COLOR_BIT, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL,
                   VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL);  // orders the blit after the clear
  // The largest rectangle of the source's aspect ratio that fits the window, centred.
  const double scale = std::min(double(dst.width) / double(extent.width), double(dst.height) / double(extent.height));
  const int32_t w = std::max(1, int32_t(double(extent.width) * scale)), h = std::max(1, int32_t(double(extent.height) * scale));
  const int32_t x = (int32_t(dst.width) - w) / 2, y = (int32_t(dst.height) - h) / 2;
  VkImageBlit blit{};
  blit.srcSubresource = {VK_IMAGE_ASPECT_COLOR_BIT, 0, layer, 1};
  blit.srcOffsets[1] = {int32_t(extent.width), int32_t(extent.height), 1};
  blit.dstSubresource = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1};
  blit.dstOffsets[0] = {x, y, 0};
  blit.dstOffsets[1] = {x + w, y + h, 1};
  vkCmdBlitImage(cmd, source, VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, target, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, 1, &blit,
                 VK_FILTER_LINEAR);
  transition_image(cmd, target, VK_IMAGE_ASPECT_COLOR_BIT, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, VK_IMAGE_LAYOUT_PRESENT_SRC_KHR);
  transition_image(cmd, source, VK_IMAGE_ASPECT_COLOR_BIT, VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL,
                   VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL);
  return Blit{m.acquired[slot].get(), m.swapchain->rendered(image), image};
}

void Mirror::present(const Blit& blit) {
  Impl& m = *impl_;
  VkPresentInfoKHR present{VK_STRUCTURE_TYPE_PRESENT_INFO_KHR};
  present.waitSemaphoreCount = 1;
  present.pWaitSemaphores = &blit.signal;
  present.swapchainCount = 1;
  const VkSwapchainKHR sc = m.swapchain->get();
  present.pSwapchains = &sc;
  present.pImageIndices = &blit.image;
  const VkResult r = vkQueuePresentKHR(m.device->queue(), &present);
  if (r == VK_ERROR_OUT_OF_DATE_KHR || r == VK_SUBOPTIMAL_KHR) m.stale = true;
  else check(r, "vkQueuePresentKHR");
  ++m.presented;
}

uint64_t Mirror::presented() const { return impl_->presented; }
uint64_t Mirror::skipped() const { return impl_->skipped; }
VkPresentModeKHR Mirror::present_mode() const {
  return impl_->swapchain ? impl_->swapchain->present_mode() : VK_PRESENT_MODE_FIFO_KHR;
}

}  // namespace nnxr::engine
