// Swapchains: VkImages created on the app's device with memory the runtime allocates, the
// acquire/wait/release cycle, and the capture of submitted colour images to PNG.
//
// Image layouts (XR_KHR_vulkan_enable2): the runtime moves every image to COLOR_ATTACHMENT_OPTIMAL
// (colour) or DEPTH_STENCIL_ATTACHMENT_OPTIMAL (depth) at creation, on the session's queue; the app
// returns images in that layout at release. Capture runs on the same queue after the app's work
// (a barrier orders it after earlier submissions), copies to a host buffer and restores the layout.
#include "tests/xrsim/runtime/state.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>

namespace xrsim {
namespace {

const VkFormat kColourFormats[] = {VK_FORMAT_R8G8B8A8_SRGB, VK_FORMAT_B8G8R8A8_SRGB, VK_FORMAT_R8G8B8A8_UNORM,
                                   VK_FORMAT_B8G8R8A8_UNORM};
const VkFormat kDepthFormats[] = {VK_FORMAT_D32_SFLOAT, VK_FORMAT_D24_UNORM_S8_UINT, VK_FORMAT_D16_UNORM};

bool is_depth(VkFormat f) {
  return std::find(std::begin(kDepthFormats), std::end(kDepthFormats), f) != std::end(kDepthFormats);
}

// The formats offered on `pd`; without the sRGB ones when the script says `srgb off`.
std::vector<VkFormat> supported_formats(VkPhysicalDevice pd, const Instance& inst) {
  std::vector<VkFormat> out;
  for (VkFormat f : kColourFormats) {
    if (!inst.script.srgb_formats() && (f == VK_FORMAT_R8G8B8A8_SRGB || f == VK_FORMAT_B8G8R8A8_SRGB)) continue;
    VkFormatProperties p;
    vkGetPhysicalDeviceFormatProperties(pd, f, &p);
    if (p.optimalTilingFeatures & VK_FORMAT_FEATURE_COLOR_ATTACHMENT_BIT) out.push_back(f);
  }
  for (VkFormat f : kDepthFormats) {
    VkFormatProperties p;
    vkGetPhysicalDeviceFormatProperties(pd, f, &p);
    if (p.optimalTilingFeatures & VK_FORMAT_FEATURE_DEPTH_STENCIL_ATTACHMENT_BIT) out.push_back(f);
  }
  return out;
}

VkImageAspectFlags aspect_of(VkFormat f) {
  if (f == VK_FORMAT_D24_UNORM_S8_UINT) return VK_IMAGE_ASPECT_DEPTH_BIT | VK_IMAGE_ASPECT_STENCIL_BIT;
  return is_depth(f) ? VK_IMAGE_ASPECT_DEPTH_BIT : VK_IMAGE_ASPECT_COLOR_BIT;
}

// Records with `record`, submits on the session's queue and waits for completion.
template <class Record>
bool submit_once(Session& s, Record&& record) {
  VkCommandBufferAllocateInfo ai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  ai.commandPool = s.vk_pool;
  ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  ai.commandBufferCount = 1;
  VkCommandBuffer cb = VK_NULL_HANDLE;
  if (vkAllocateCommandBuffers(s.vk_device, &ai, &cb) != VK_SUCCESS) return false;
  VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  bool ok = vkBeginCommandBuffer(cb, &bi) == VK_SUCCESS;
  if (ok) {
    record(cb);
    ok = vkEndCommandBuffer(cb) == VK_SUCCESS;
  }
  if (ok) {
    VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
    si.commandBufferCount = 1;
    si.pCommandBuffers = &cb;
    ok = vkResetFences(s.vk_device, 1, &s.vk_fence) == VK_SUCCESS &&
         vkQueueSubmit(s.vk_queue, 1, &si, s.vk_fence) == VK_SUCCESS &&
         vkWaitForFences(s.vk_device, 1, &s.vk_fence, VK_TRUE, 30'000'000'000ull) == VK_SUCCESS;
  }
  vkFreeCommandBuffers(s.vk_device, s.vk_pool, 1, &cb);
  return ok;
}

int memory_type(VkPhysicalDevice pd, uint32_t bits, VkMemoryPropertyFlags want) {
  VkPhysicalDeviceMemoryProperties mp;
  vkGetPhysicalDeviceMemoryProperties(pd, &mp);
  for (uint32_t i = 0; i < mp.memoryTypeCount; ++i)
    if ((bits & (1u << i)) && (mp.memoryTypes[i].propertyFlags & want) == want) return static_cast<int>(i);
  return -1;
}

void free_images(Swapchain& sc) {
  for (VkImage img : sc.images) vkDestroyImage(sc.device, img, nullptr);
  for (VkDeviceMemory m : sc.memory) vkFreeMemory(sc.device, m, nullptr);
  sc.images.clear();
  sc.memory.clear();
}

bool ensure_staging(Session& s, VkDeviceSize size) {
  if (s.staging_size >= size) return true;
  if (s.staging != VK_NULL_HANDLE) {
    vkDestroyBuffer(s.vk_device, s.staging, nullptr);
    vkFreeMemory(s.vk_device, s.staging_memory, nullptr);
    s.staging = VK_NULL_HANDLE;
    s.staging_memory = VK_NULL_HANDLE;
    s.staging_map = nullptr;
    s.staging_size = 0;
  }
  VkBufferCreateInfo bi{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  bi.size = size;
  bi.usage = VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  if (vkCreateBuffer(s.vk_device, &bi, nullptr, &s.staging) != VK_SUCCESS) return false;
  VkMemoryRequirements req;
  vkGetBufferMemoryRequirements(s.vk_device, s.staging, &req);
  int type = memory_type(s.vk_physical, req.memoryTypeBits,
                         VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT);
  VkMemoryAllocateInfo ai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  ai.allocationSize = req.size;
  ai.memoryTypeIndex = static_cast<uint32_t>(type);
  if (type < 0 || vkAllocateMemory(s.vk_device, &ai, nullptr, &s.staging_memory) != VK_SUCCESS ||
      vkBindBufferMemory(s.vk_device, s.staging, s.staging_memory, 0) != VK_SUCCESS ||
      vkMapMemory(s.vk_device, s.staging_memory, 0, VK_WHOLE_SIZE, 0, &s.staging_map) != VK_SUCCESS)
    return false;
  s.staging_size = size;
  return true;
}

}  // namespace

void release_session_vulkan(Session& s) {
  if (s.vk_device == VK_NULL_HANDLE) return;
  if (s.staging != VK_NULL_HANDLE) vkDestroyBuffer(s.vk_device, s.staging, nullptr);
  if (s.staging_memory != VK_NULL_HANDLE) vkFreeMemory(s.vk_device, s.staging_memory, nullptr);
  if (s.vk_fence != VK_NULL_HANDLE) vkDestroyFence(s.vk_device, s.vk_fence, nullptr);
  if (s.vk_pool != VK_NULL_HANDLE) vkDestroyCommandPool(s.vk_device, s.vk_pool, nullptr);
  s.staging = VK_NULL_HANDLE;
  s.staging_memory = VK_NULL_HANDLE;
  s.vk_fence = VK_NULL_HANDLE;
  s.vk_pool = VK_NULL_HANDLE;
}

void destroy_swapchain(Registry& r, uint64_t id) {
  auto it = r.swapchains.find(id);
  if (it == r.swapchains.end()) return;
  free_images(*it->second);
  if (auto s = r.sessions.find(it->second->session); s != r.sessions.end()) {
    auto& list = s->second->swapchains;
    list.erase(std::remove(list.begin(), list.end(), id), list.end());
  }
  r.swapchains.erase(it);
}

void capture_view(Instance& inst, Session& s, const Swapchain& sc, const XrSwapchainSubImage& sub, uint64_t frame,
                  uint32_t layer, uint32_t view) {
  bool bgra = sc.format == VK_FORMAT_B8G8R8A8_SRGB || sc.format == VK_FORMAT_B8G8R8A8_UNORM;
  bool rgba = sc.format == VK_FORMAT_R8G8B8A8_SRGB || sc.format == VK_FORMAT_R8G8B8A8_UNORM;
  if (!(bgra || rgba) || sc.sample_count != 1 || !sc.last_released) return;
  const uint32_t w = static_cast<uint32_t>(sub.imageRect.extent.width);
  const uint32_t h = static_cast<uint32_t>(sub.imageRect.extent.height);
  if (!ensure_staging(s, VkDeviceSize{w} * h * 4)) {
    std::fprintf(stderr, "xrsim: cannot allocate the capture buffer\n");
    return;
  }
  VkImage image = sc.images[*sc.last_released];
  VkImageSubresourceRange range{VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, sub.imageArrayIndex, 1};
  bool ok = submit_once(s, [&](VkCommandBuffer cb) {
    VkImageMemoryBarrier to_src{VK_STRUCTURE_TYPE_IMAGE_MEMORY_BARRIER};
    to_src.srcAccessMask = VK_ACCESS_MEMORY_WRITE_BIT;
    to_src.dstAccessMask = VK_ACCESS_TRANSFER_READ_BIT;
    to_src.oldLayout = VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL;
    to_src.newLayout = VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL;
    to_src.srcQueueFamilyIndex = to_src.dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED;
    to_src.image = image;
    to_src.subresourceRange = range;
    vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 0, nullptr, 0,
                         nullptr, 1, &to_src);
    VkBufferImageCopy copy{};
    copy.imageSubresource = {VK_IMAGE_ASPECT_COLOR_BIT, 0, sub.imageArrayIndex, 1};
    copy.imageOffset = {sub.imageRect.offset.x, sub.imageRect.offset.y, 0};
    copy.imageExtent = {w, h, 1};
    vkCmdCopyImageToBuffer(cb, image, VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, s.staging, 1, &copy);
    VkImageMemoryBarrier back = to_src;
    back.srcAccessMask = VK_ACCESS_TRANSFER_READ_BIT;
    back.dstAccessMask = VK_ACCESS_COLOR_ATTACHMENT_WRITE_BIT | VK_ACCESS_COLOR_ATTACHMENT_READ_BIT;
    back.oldLayout = VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL;
    back.newLayout = VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL;
    VkBufferMemoryBarrier host{VK_STRUCTURE_TYPE_BUFFER_MEMORY_BARRIER};
    host.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
    host.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
    host.srcQueueFamilyIndex = host.dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED;
    host.buffer = s.staging;
    host.size = VK_WHOLE_SIZE;
    vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_TRANSFER_BIT,
                         VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT | VK_PIPELINE_STAGE_HOST_BIT, 0, 0, nullptr, 1,
                         &host, 1, &back);
  });
  if (!ok) {
    std::fprintf(stderr, "xrsim: capture of frame %llu failed on the Vulkan queue\n",
                 static_cast<unsigned long long>(frame));
    return;
  }
  std::vector<unsigned char> pixels(size_t{w} * h * 4);
  std::memcpy(pixels.data(), s.staging_map, pixels.size());
  if (bgra)
    for (size_t i = 0; i < pixels.size(); i += 4) std::swap(pixels[i], pixels[i + 2]);
  char name[64];
  std::snprintf(name, sizeof name, "frame%05llu_layer%u_view%u.png", static_cast<unsigned long long>(frame), layer, view);
  std::string file = inst.capture_dir + "/" + name;
  if (!write_png(file, static_cast<int>(w), static_cast<int>(h), pixels.data())) {
    std::fprintf(stderr, "xrsim: cannot write %s\n", file.c_str());
    return;
  }
  inst.record.add("capture " + std::to_string(frame) + " " + std::to_string(layer) + " " + std::to_string(view) + " " +
                  file);
}

}  // namespace xrsim

namespace xrsim::api {
namespace {

XrResult lookup_swapchain(XrSwapchain handle, Swapchain*& sc, Session*& s) {
  Registry& r = Registry::get();
  sc = find(r.swapchains, handle);
  if (sc == nullptr) return XR_ERROR_HANDLE_INVALID;
  s = r.sessions.at(sc->session).get();
  return XR_SUCCESS;
}

}  // namespace

XrResult EnumerateSwapchainFormats(XrSession session, uint32_t capacity, uint32_t* count_output, int64_t* formats) {
  return guarded("xrEnumerateSwapchainFormats", [&]() -> XrResult {
    Session* s = find(Registry::get().sessions, session);
    if (s == nullptr) return XR_ERROR_HANDLE_INVALID;
    if (capacity > 0 && formats == nullptr) return XR_ERROR_VALIDATION_FAILURE;
    std::vector<VkFormat> list = supported_formats(s->vk_physical, *Registry::get().instances.at(s->instance));
    return two_call(capacity, count_output, static_cast<uint32_t>(list.size()),
                    [&](uint32_t i) { formats[i] = list[i]; });
  });
}

XrResult CreateSwapchain(XrSession session, const XrSwapchainCreateInfo* info, XrSwapchain* out) {
  return guarded("xrCreateSwapchain", [&]() -> XrResult {
    Registry& r = Registry::get();
    Session* s = find(r.sessions, session);
    if (s == nullptr) return XR_ERROR_HANDLE_INVALID;
    if (info == nullptr || out == nullptr || info->type != XR_TYPE_SWAPCHAIN_CREATE_INFO)
      return XR_ERROR_VALIDATION_FAILURE;
    if (s->lost) return XR_ERROR_SESSION_LOST;
    constexpr XrSwapchainCreateFlags kKnownCreate =
        XR_SWAPCHAIN_CREATE_PROTECTED_CONTENT_BIT | XR_SWAPCHAIN_CREATE_STATIC_IMAGE_BIT;
    if (info->createFlags & ~kKnownCreate) return XR_ERROR_VALIDATION_FAILURE;
    if (info->createFlags & XR_SWAPCHAIN_CREATE_PROTECTED_CONTENT_BIT) return XR_ERROR_FEATURE_UNSUPPORTED;
    std::vector<VkFormat> formats = supported_formats(s->vk_physical, *r.instances.at(s->instance));
    auto format = static_cast<VkFormat>(info->format);
    if (std::find(formats.begin(), formats.end(), format) == formats.end()) return XR_ERROR_SWAPCHAIN_FORMAT_UNSUPPORTED;
    if (info->width == 0 || info->height == 0 || info->width > kMaxImageSize || info->height > kMaxImageSize ||
        info->arraySize == 0 || info->mipCount == 0 || info->sampleCount == 0)
      return XR_ERROR_VALIDATION_FAILURE;
    if (info->faceCount != 1 && info->faceCount != 6) return XR_ERROR_VALIDATION_FAILURE;
    if (info->faceCount == 6 || info->sampleCount != 1) return XR_ERROR_FEATURE_UNSUPPORTED;
    if (info->arraySize > 16) return XR_ERROR_FEATURE_UNSUPPORTED;

    const bool depth = is_depth(format);
    VkImageUsageFlags usage = depth ? VK_IMAGE_USAGE_DEPTH_STENCIL_ATTACHMENT_BIT
                                    : VK_IMAGE_USAGE_COLOR_ATTACHMENT_BIT | VK_IMAGE_USAGE_TRANSFER_SRC_BIT;
    VkImageCreateFlags flags = 0;
    const XrSwapchainUsageFlags u = info->usageFlags;
    if (u & XR_SWAPCHAIN_USAGE_COLOR_ATTACHMENT_BIT) usage |= VK_IMAGE_USAGE_COLOR_ATTACHMENT_BIT;
    if (u & XR_SWAPCHAIN_USAGE_DEPTH_STENCIL_ATTACHMENT_BIT) usage |= VK_IMAGE_USAGE_DEPTH_STENCIL_ATTACHMENT_BIT;
    if (u & XR_SWAPCHAIN_USAGE_UNORDERED_ACCESS_BIT) usage |= VK_IMAGE_USAGE_STORAGE_BIT;
    if (u & XR_SWAPCHAIN_USAGE_TRANSFER_SRC_BIT) usage |= VK_IMAGE_USAGE_TRANSFER_SRC_BIT;
    if (u & XR_SWAPCHAIN_USAGE_TRANSFER_DST_BIT) usage |= VK_IMAGE_USAGE_TRANSFER_DST_BIT;
    if (u & XR_SWAPCHAIN_USAGE_SAMPLED_BIT) usage |= VK_IMAGE_USAGE_SAMPLED_BIT;
    if (u & XR_SWAPCHAIN_USAGE_MUTABLE_FORMAT_BIT) flags |= VK_IMAGE_CREATE_MUTABLE_FORMAT_BIT;
    if (depth && (u & XR_SWAPCHAIN_USAGE_COLOR_ATTACHMENT_BIT)) return XR_ERROR_FEATURE_UNSUPPORTED;
    if (!depth && (u & XR_SWAPCHAIN_USAGE_DEPTH_STENCIL_ATTACHMENT_BIT)) return XR_ERROR_FEATURE_UNSUPPORTED;

    VkImageFormatProperties fp;
    if (vkGetPhysicalDeviceImageFormatProperties(s->vk_physical, format, VK_IMAGE_TYPE_2D, VK_IMAGE_TILING_OPTIMAL,
                                                 usage, flags, &fp) != VK_SUCCESS ||
        fp.maxArrayLayers < info->arraySize || fp.maxMipLevels < info->mipCount)
      return XR_ERROR_FEATURE_UNSUPPORTED;

    auto sc = std::make_unique<Swapchain>();
    sc->id = r.new_id();
    sc->session = s->id;
    sc->create_flags = info->createFlags;
    sc->usage = info->usageFlags;
    sc->format = format;
    sc->width = info->width;
    sc->height = info->height;
    sc->array_size = info->arraySize;
    sc->face_count = info->faceCount;
    sc->mip_count = info->mipCount;
    sc->sample_count = info->sampleCount;
    sc->device = s->vk_device;
    sc->colour = !depth;
    const uint32_t count = (info->createFlags & XR_SWAPCHAIN_CREATE_STATIC_IMAGE_BIT) ? 1 : kSwapchainImages;
    for (uint32_t i = 0; i < count; ++i) {
      VkImageCreateInfo ci{VK_STRUCTURE_TYPE_IMAGE_CREATE_INFO};
      ci.flags = flags;
      ci.imageType = VK_IMAGE_TYPE_2D;
      ci.format = format;
      ci.extent = {info->width, info->height, 1};
      ci.mipLevels = info->mipCount;
      ci.arrayLayers = info->arraySize;
      ci.samples = VK_SAMPLE_COUNT_1_BIT;
      ci.tiling = VK_IMAGE_TILING_OPTIMAL;
      ci.usage = usage;
      ci.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
      ci.initialLayout = VK_IMAGE_LAYOUT_UNDEFINED;
      VkImage image = VK_NULL_HANDLE;
      if (vkCreateImage(s->vk_device, &ci, nullptr, &image) != VK_SUCCESS) {
        free_images(*sc);
        return XR_ERROR_RUNTIME_FAILURE;
      }
      sc->images.push_back(image);
      VkMemoryRequirements req;
      vkGetImageMemoryRequirements(s->vk_device, image, &req);
      int type = memory_type(s->vk_physical, req.memoryTypeBits, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
      if (type < 0) type = memory_type(s->vk_physical, req.memoryTypeBits, 0);
      VkMemoryAllocateInfo ai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
      ai.allocationSize = req.size;
      ai.memoryTypeIndex = static_cast<uint32_t>(type);
      VkDeviceMemory memory = VK_NULL_HANDLE;
      if (type < 0 || vkAllocateMemory(s->vk_device, &ai, nullptr, &memory) != VK_SUCCESS) {
        free_images(*sc);
        return XR_ERROR_RUNTIME_FAILURE;
      }
      sc->memory.push_back(memory);
      if (vkBindImageMemory(s->vk_device, image, memory, 0) != VK_SUCCESS) {
        free_images(*sc);
        return XR_ERROR_RUNTIME_FAILURE;
      }
    }
    const VkImageLayout layout =
        depth ? VK_IMAGE_LAYOUT_DEPTH_STENCIL_ATTACHMENT_OPTIMAL : VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL;
    bool ok = submit_once(*s, [&](VkCommandBuffer cb) {
      std::vector<VkImageMemoryBarrier> barriers;
      for (VkImage image : sc->images) {
        VkImageMemoryBarrier b{VK_STRUCTURE_TYPE_IMAGE_MEMORY_BARRIER};
        b.srcAccessMask = 0;
        b.dstAccessMask = depth ? VK_ACCESS_DEPTH_STENCIL_ATTACHMENT_WRITE_BIT : VK_ACCESS_COLOR_ATTACHMENT_WRITE_BIT;
        b.oldLayout = VK_IMAGE_LAYOUT_UNDEFINED;
        b.newLayout = layout;
        b.srcQueueFamilyIndex = b.dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED;
        b.image = image;
        b.subresourceRange = {aspect_of(format), 0, info->mipCount, 0, info->arraySize};
        barriers.push_back(b);
      }
      VkPipelineStageFlags dst = depth ? VK_PIPELINE_STAGE_EARLY_FRAGMENT_TESTS_BIT | VK_PIPELINE_STAGE_LATE_FRAGMENT_TESTS_BIT
                                       : VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT;
      vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, dst, 0, 0, nullptr, 0, nullptr,
                           static_cast<uint32_t>(barriers.size()), barriers.data());
    });
    if (!ok) {
      free_images(*sc);
      return XR_ERROR_RUNTIME_FAILURE;
    }
    Instance& inst = *r.instances.at(s->instance);
    inst.record.add("swapchain " + std::to_string(info->format) + " " + std::to_string(info->width) + " " +
                    std::to_string(info->height) + " " + std::to_string(info->arraySize) + " " +
                    std::to_string(info->sampleCount) + " " + std::to_string(info->mipCount) + " " +
                    std::to_string(count));
    s->swapchains.push_back(sc->id);
    *out = handle_of<XrSwapchain>(sc->id);
    r.swapchains.emplace(sc->id, std::move(sc));
    return XR_SUCCESS;
  });
}

XrResult DestroySwapchain(XrSwapchain swapchain) {
  return guarded("xrDestroySwapchain", [&]() -> XrResult {
    Registry& r = Registry::get();
    if (find(r.swapchains, swapchain) == nullptr) return XR_ERROR_HANDLE_INVALID;
    destroy_swapchain(r, id_of(swapchain));
    return XR_SUCCESS;
  });
}

XrResult EnumerateSwapchainImages(XrSwapchain swapchain, uint32_t capacity, uint32_t* count_output,
                                  XrSwapchainImageBaseHeader* images) {
  return guarded("xrEnumerateSwapchainImages", [&]() -> XrResult {
    Swapchain* sc;
    Session* s;
    if (XrResult res = lookup_swapchain(swapchain, sc, s); XR_FAILED(res)) return res;
    if (capacity > 0 && images == nullptr) return XR_ERROR_VALIDATION_FAILURE;
    auto* vk = reinterpret_cast<XrSwapchainImageVulkan2KHR*>(images);
    const uint32_t n = static_cast<uint32_t>(sc->images.size());
    for (uint32_t i = 0; i < std::min(capacity, n); ++i)
      if (vk[i].type != XR_TYPE_SWAPCHAIN_IMAGE_VULKAN2_KHR) return XR_ERROR_VALIDATION_FAILURE;
    return two_call(capacity, count_output, n, [&](uint32_t i) { vk[i].image = sc->images[i]; });
  });
}

XrResult AcquireSwapchainImage(XrSwapchain swapchain, const XrSwapchainImageAcquireInfo* info, uint32_t* index) {
  return guarded("xrAcquireSwapchainImage", [&]() -> XrResult {
    Swapchain* sc;
    Session* s;
    if (XrResult res = lookup_swapchain(swapchain, sc, s); XR_FAILED(res)) return res;
    if ((info != nullptr && info->type != XR_TYPE_SWAPCHAIN_IMAGE_ACQUIRE_INFO) || index == nullptr)
      return XR_ERROR_VALIDATION_FAILURE;
    if (s->lost) return XR_ERROR_SESSION_LOST;
    const uint32_t n = static_cast<uint32_t>(sc->images.size());
    if ((sc->create_flags & XR_SWAPCHAIN_CREATE_STATIC_IMAGE_BIT) && sc->acquired_total > 0)
      return XR_ERROR_CALL_ORDER_INVALID;
    // Every image is acquired or waited and none released yet: nothing is left to hand out.
    if (sc->acquired.size() + (sc->waited ? 1 : 0) >= n) return XR_ERROR_CALL_ORDER_INVALID;
    *index = sc->next_acquire;
    sc->acquired.push_back(sc->next_acquire);
    sc->next_acquire = (sc->next_acquire + 1) % n;
    ++sc->acquired_total;
    return XR_SUCCESS;
  });
}

XrResult WaitSwapchainImage(XrSwapchain swapchain, const XrSwapchainImageWaitInfo* info) {
  return guarded("xrWaitSwapchainImage", [&]() -> XrResult {
    Swapchain* sc;
    Session* s;
    if (XrResult res = lookup_swapchain(swapchain, sc, s); XR_FAILED(res)) return res;
    if (info == nullptr || info->type != XR_TYPE_SWAPCHAIN_IMAGE_WAIT_INFO) return XR_ERROR_VALIDATION_FAILURE;
    if (s->lost) return XR_ERROR_SESSION_LOST;
    if (sc->acquired.empty() || sc->waited) return XR_ERROR_CALL_ORDER_INVALID;
    sc->waited = sc->acquired.front();
    sc->acquired.pop_front();
    return XR_SUCCESS;
  });
}

XrResult ReleaseSwapchainImage(XrSwapchain swapchain, const XrSwapchainImageReleaseInfo* info) {
  return guarded("xrReleaseSwapchainImage", [&]() -> XrResult {
    Swapchain* sc;
    Session* s;
    if (XrResult res = lookup_swapchain(swapchain, sc, s); XR_FAILED(res)) return res;
    if (info != nullptr && info->type != XR_TYPE_SWAPCHAIN_IMAGE_RELEASE_INFO) return XR_ERROR_VALIDATION_FAILURE;
    if (s->lost) return XR_ERROR_SESSION_LOST;
    if (!sc->waited) return XR_ERROR_CALL_ORDER_INVALID;
    sc->last_released = sc->waited;
    sc->waited.reset();
    return XR_SUCCESS;
  });
}

}  // namespace xrsim::api
