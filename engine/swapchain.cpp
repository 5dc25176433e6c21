#include "engine/swapchain.h"

#include <algorithm>

#include "engine/device.h"

namespace nnxr::engine {

Swapchain::Swapchain(const Device& device, VkSurfaceKHR surface, VkExtent2D extent, SwapchainOptions options)
    : device_(device), surface_(surface), options_(options) {
  create(extent);
}

void Swapchain::recreate(VkExtent2D extent) { create(extent); }

void Swapchain::create(VkExtent2D wanted) {
  VkPhysicalDevice physical = device_.physical();
  VkSurfaceCapabilitiesKHR caps{};
  check(vkGetPhysicalDeviceSurfaceCapabilitiesKHR(physical, surface_, &caps), "vkGetPhysicalDeviceSurfaceCapabilitiesKHR");

  uint32_t n = 0;
  check(vkGetPhysicalDeviceSurfaceFormatsKHR(physical, surface_, &n, nullptr), "vkGetPhysicalDeviceSurfaceFormatsKHR");
  std::vector<VkSurfaceFormatKHR> formats(n);
  check(vkGetPhysicalDeviceSurfaceFormatsKHR(physical, surface_, &n, formats.data()), "vkGetPhysicalDeviceSurfaceFormatsKHR");
  if (formats.empty()) throw VulkanError("the window surface offers no image formats", VK_ERROR_UNKNOWN);
  // sRGB formats: the renderer writes linear colour and the presentation engine encodes it.
  VkSurfaceFormatKHR chosen = formats[0];
  for (VkFormat f : {VK_FORMAT_B8G8R8A8_SRGB, VK_FORMAT_R8G8B8A8_SRGB}) {
    auto it = std::find_if(formats.begin(), formats.end(), [&](const VkSurfaceFormatKHR& s) {
      return s.format == f && s.colorSpace == VK_COLOR_SPACE_SRGB_NONLINEAR_KHR;
    });
    if (it != formats.end()) {
      chosen = *it;
      break;
    }
  }

  check(vkGetPhysicalDeviceSurfacePresentModesKHR(physical, surface_, &n, nullptr), "vkGetPhysicalDeviceSurfacePresentModesKHR");
  std::vector<VkPresentModeKHR> modes(n);
  check(vkGetPhysicalDeviceSurfacePresentModesKHR(physical, surface_, &n, modes.data()), "vkGetPhysicalDeviceSurfacePresentModesKHR");
  present_mode_ = VK_PRESENT_MODE_FIFO_KHR;  // always supported
  if (!options_.vsync)
    for (VkPresentModeKHR m : {VK_PRESENT_MODE_MAILBOX_KHR, VK_PRESENT_MODE_IMMEDIATE_KHR})
      if (std::find(modes.begin(), modes.end(), m) != modes.end()) {
        present_mode_ = m;
        break;
      }

  VkExtent2D extent = caps.currentExtent;
  if (extent.width == 0xFFFFFFFFu) {
    extent.width = std::clamp(wanted.width, caps.minImageExtent.width, caps.maxImageExtent.width);
    extent.height = std::clamp(wanted.height, caps.minImageExtent.height, caps.maxImageExtent.height);
  }
  extent.width = std::max(extent.width, 1u);
  extent.height = std::max(extent.height, 1u);

  uint32_t count = std::max(caps.minImageCount + 1, 2u);
  if (caps.maxImageCount > 0) count = std::min(count, caps.maxImageCount);
  can_copy_ = (caps.supportedUsageFlags & VK_IMAGE_USAGE_TRANSFER_SRC_BIT) != 0;

  VkSwapchainCreateInfoKHR info{VK_STRUCTURE_TYPE_SWAPCHAIN_CREATE_INFO_KHR};
  info.surface = surface_;
  info.minImageCount = count;
  info.imageFormat = chosen.format;
  info.imageColorSpace = chosen.colorSpace;
  info.imageExtent = extent;
  info.imageArrayLayers = 1;
  info.imageUsage = VK_IMAGE_USAGE_COLOR_ATTACHMENT_BIT | (can_copy_ ? VK_IMAGE_USAGE_TRANSFER_SRC_BIT : 0);
  if (options_.transfer_dst) {
    if (!(caps.supportedUsageFlags & VK_IMAGE_USAGE_TRANSFER_DST_BIT))
      throw VulkanError("the window surface's images cannot be copied into", VK_ERROR_FEATURE_NOT_PRESENT);
    info.imageUsage |= VK_IMAGE_USAGE_TRANSFER_DST_BIT;
  }
  info.imageSharingMode = VK_SHARING_MODE_EXCLUSIVE;
  info.preTransform = (caps.supportedTransforms & VK_SURFACE_TRANSFORM_IDENTITY_BIT_KHR) ? VK_SURFACE_TRANSFORM_IDENTITY_BIT_KHR
                                                                                        : caps.currentTransform;
  info.compositeAlpha = VK_COMPOSITE_ALPHA_OPAQUE_BIT_KHR;
  for (VkCompositeAlphaFlagBitsKHR a : {VK_COMPOSITE_ALPHA_OPAQUE_BIT_KHR, VK_COMPOSITE_ALPHA_INHERIT_BIT_KHR,
                                        VK_COMPOSITE_ALPHA_PRE_MULTIPLIED_BIT_KHR, VK_COMPOSITE_ALPHA_POST_MULTIPLIED_BIT_KHR})
    if (caps.supportedCompositeAlpha & a) {
      info.compositeAlpha = a;
      break;
    }
  info.presentMode = present_mode_;
  info.clipped = VK_TRUE;
  info.oldSwapchain = swapchain_.get();

  VkDevice dev = device_.get();
  VkSwapchainKHR handle = VK_NULL_HANDLE;
  check(vkCreateSwapchainKHR(dev, &info, nullptr, &handle), "vkCreateSwapchainKHR");
  // Per-image objects of the old swapchain go first, then the old swapchain itself.
  depth_ = {};
  rendered_.clear();
  views_.clear();
  images_.clear();
  swapchain_ = SwapchainHandle(dev, handle);
  format_ = chosen.format;
  extent_ = extent;

  check(vkGetSwapchainImagesKHR(dev, handle, &n, nullptr), "vkGetSwapchainImagesKHR");
  images_.resize(n);
  check(vkGetSwapchainImagesKHR(dev, handle, &n, images_.data()), "vkGetSwapchainImagesKHR");
  for (VkImage image : images_) {
    VkImageViewCreateInfo v{VK_STRUCTURE_TYPE_IMAGE_VIEW_CREATE_INFO};
    v.image = image;
    v.viewType = VK_IMAGE_VIEW_TYPE_2D;
    v.format = format_;
    v.subresourceRange = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1};
    VkImageView view = VK_NULL_HANDLE;
    check(vkCreateImageView(dev, &v, nullptr, &view), "vkCreateImageView");
    views_.emplace_back(dev, view);
    rendered_.push_back(create_semaphore(dev));
  }
  if (options_.depth)
    depth_ = create_image(device_, options_.depth_format, extent_, 1, VK_IMAGE_USAGE_DEPTH_STENCIL_ATTACHMENT_BIT,
                          VK_IMAGE_ASPECT_DEPTH_BIT);
}

}  // namespace nnxr::engine
