#include "xr/swapchains.h"

#include <algorithm>
#include <iostream>
#include <string>

namespace nnxr::xr {
namespace {

constexpr VkFormat kColourFormats[] = {VK_FORMAT_R8G8B8A8_SRGB, VK_FORMAT_B8G8R8A8_SRGB};
// Depth swapchain formats in order of preference: depth-only formats.
constexpr VkFormat kDepthSwapchainFormats[] = {VK_FORMAT_D32_SFLOAT, VK_FORMAT_D16_UNORM};
constexpr VkFormat kPrivateDepthFormat = VK_FORMAT_D32_SFLOAT;

}  // namespace

Swapchains::Swapchains(XrInstance instance, XrSystemId system, XrSession session, const engine::Device& device,
                       bool depth_extension, bool transfer_src, SwapchainFormats preferred)
    : instance_(instance) {
  uint32_t n = 0;
  check(instance, xrEnumerateViewConfigurationViews(instance, system, XR_VIEW_CONFIGURATION_TYPE_PRIMARY_STEREO, 0, &n, nullptr),
        "xrEnumerateViewConfigurationViews");
  if (n != 2) throw std::runtime_error("OpenXR: the stereo view configuration has " + std::to_string(n) + " views, not 2");
  std::vector<XrViewConfigurationView> vc(n, {XR_TYPE_VIEW_CONFIGURATION_VIEW});
  check(instance, xrEnumerateViewConfigurationViews(instance, system, XR_VIEW_CONFIGURATION_TYPE_PRIMARY_STEREO, n, &n, vc.data()),
        "xrEnumerateViewConfigurationViews");
  extent_ = {vc[0].recommendedImageRectWidth, vc[0].recommendedImageRectHeight};

  check(instance, xrEnumerateSwapchainFormats(session, 0, &n, nullptr), "xrEnumerateSwapchainFormats");
  std::vector<int64_t> offered(n);
  check(instance, xrEnumerateSwapchainFormats(session, n, &n, offered.data()), "xrEnumerateSwapchainFormats");
  offered.resize(n);
  const auto is_offered = [&](VkFormat f) { return std::find(offered.begin(), offered.end(), int64_t(f)) != offered.end(); };

  if (preferred.colour != VK_FORMAT_UNDEFINED) {
    if (!is_offered(preferred.colour))
      throw std::runtime_error("OpenXR: the runtime no longer offers the swapchain format " + std::to_string(preferred.colour));
    formats_.colour = preferred.colour;
  } else {
    for (VkFormat f : kColourFormats)
      if (formats_.colour == VK_FORMAT_UNDEFINED && is_offered(f)) formats_.colour = f;
  }
  if (formats_.colour == VK_FORMAT_UNDEFINED) throw std::runtime_error("OpenXR: the runtime offers no sRGB 8-bit swapchain format");
  create(session, device, XR_SWAPCHAIN_USAGE_COLOR_ATTACHMENT_BIT | (transfer_src ? XR_SWAPCHAIN_USAGE_TRANSFER_SRC_BIT : 0),
         formats_.colour, VK_IMAGE_ASPECT_COLOR_BIT, colour_);

  if (depth_extension) {
    std::vector<VkFormat> candidates;
    if (preferred.depth != VK_FORMAT_UNDEFINED) candidates.push_back(preferred.depth);
    else candidates.assign(std::begin(kDepthSwapchainFormats), std::end(kDepthSwapchainFormats));
    for (VkFormat f : candidates)
      if (!depth_.handle && is_offered(f)) {
        formats_.depth = f;
        create(session, device, XR_SWAPCHAIN_USAGE_DEPTH_STENCIL_ATTACHMENT_BIT, f, VK_IMAGE_ASPECT_DEPTH_BIT, depth_);
      }
    if (!depth_.handle) std::cerr << "nnxr: the OpenXR runtime offers no depth-only swapchain format; depth stays private to nnxr\n";
  }
  if (!depth_.handle) {
    formats_.depth = preferred.depth != VK_FORMAT_UNDEFINED ? preferred.depth : kPrivateDepthFormat;
    private_depth_ = engine::create_image(device, formats_.depth, extent_, 2, VK_IMAGE_USAGE_DEPTH_STENCIL_ATTACHMENT_BIT,
                                          VK_IMAGE_ASPECT_DEPTH_BIT);
  }
}

// An array swapchain of two layers (one per eye) at the recommended size, its images and a
// 2D_ARRAY view of each.
void Swapchains::create(XrSession session, const engine::Device& device, XrSwapchainUsageFlags usage, VkFormat format,
                        VkImageAspectFlags aspect, ArraySwapchain& out) {
  XrSwapchainCreateInfo sc{XR_TYPE_SWAPCHAIN_CREATE_INFO};
  sc.usageFlags = usage;
  sc.format = format;
  sc.sampleCount = 1;
  sc.width = extent_.width;
  sc.height = extent_.height;
  sc.faceCount = 1;
  sc.arraySize = 2;
  sc.mipCount = 1;
  check(instance_, xrCreateSwapchain(session, &sc, out.handle.out()), "xrCreateSwapchain");
  uint32_t n = 0;
  check(instance_, xrEnumerateSwapchainImages(out.handle.get(), 0, &n, nullptr), "xrEnumerateSwapchainImages");
  std::vector<XrSwapchainImageVulkan2KHR> imgs(n, {XR_TYPE_SWAPCHAIN_IMAGE_VULKAN2_KHR});
  check(instance_, xrEnumerateSwapchainImages(out.handle.get(), n, &n, reinterpret_cast<XrSwapchainImageBaseHeader*>(imgs.data())),
        "xrEnumerateSwapchainImages");
  for (uint32_t i = 0; i < n; ++i) {
    out.images.push_back(imgs[i].image);
    VkImageViewCreateInfo vi{VK_STRUCTURE_TYPE_IMAGE_VIEW_CREATE_INFO};
    vi.image = imgs[i].image;
    vi.viewType = VK_IMAGE_VIEW_TYPE_2D_ARRAY;
    vi.format = format;
    vi.subresourceRange = {aspect, 0, 1, 0, 2};
    VkImageView v = VK_NULL_HANDLE;
    engine::check(vkCreateImageView(device.get(), &vi, nullptr, &v), "vkCreateImageView");
    out.views.emplace_back(device.get(), v);
  }
}

}  // namespace nnxr::xr
