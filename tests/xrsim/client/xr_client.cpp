#include "tests/xrsim/client/xr_client.h"

#include "tests/xrsim/xrsim.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <unistd.h>

namespace xrsim::client {
namespace fs = std::filesystem;

// ---- TestEnv -------------------------------------------------------------------------------------

TestEnv::TestEnv(const std::string& name) {
  dir_ = (fs::temp_directory_path() / ("nnxr-xrsim-" + name + "-" + std::to_string(getpid()))).string();
  fs::remove_all(dir_);
  fs::create_directories(capture_dir());
  setenv("XR_RUNTIME_JSON", NNXR_XRSIM_MANIFEST, 1);
  setenv("XR_API_LAYER_PATH", NNXR_XR_LAYER_DIR, 1);
  setenv(kEnvRecord, record_path().c_str(), 1);
  setenv(kEnvCaptureDir, capture_dir().c_str(), 1);
  setenv("XR_CORE_VALIDATION_EXPORT_TYPE", "text", 1);
  setenv("XR_CORE_VALIDATION_FILE_NAME", (dir_ + "/core_validation.txt").c_str(), 1);
  unsetenv(kEnvScript);
}

TestEnv::~TestEnv() {
  unsetenv(kEnvScript);
  if (!keep_ && !::testing::Test::HasFailure()) {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
}

void TestEnv::set_script(const std::string& text) {
  std::string path = dir_ + "/script.txt";
  std::ofstream(path) << text;
  setenv(kEnvScript, path.c_str(), 1);
}

// ---- Client --------------------------------------------------------------------------------------

namespace {

XRAPI_ATTR XrBool32 XRAPI_CALL xr_message(XrDebugUtilsMessageSeverityFlagsEXT, XrDebugUtilsMessageTypeFlagsEXT,
                                          const XrDebugUtilsMessengerCallbackDataEXT* data, void* user) {
  auto* out = static_cast<std::vector<std::string>*>(user);
  out->push_back(std::string("xr: ") + (data->messageId ? data->messageId : "") + ": " +
                 (data->message ? data->message : ""));
  return XR_FALSE;
}

VKAPI_ATTR VkBool32 VKAPI_CALL vk_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                          VkDebugUtilsMessageTypeFlagsEXT,
                                          const VkDebugUtilsMessengerCallbackDataEXT* data, void* user) {
  if (severity & VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT)
    static_cast<std::vector<std::string>*>(user)->push_back(std::string("vk: ") + (data->pMessage ? data->pMessage : ""));
  return VK_FALSE;
}

template <class F>
F proc(XrInstance instance, const char* name) {
  PFN_xrVoidFunction f = nullptr;
  if (XR_FAILED(xrGetInstanceProcAddr(instance, name, &f))) return nullptr;
  return reinterpret_cast<F>(f);
}

}  // namespace

#define XRSIM_TRY(call)                         \
  do {                                          \
    XrResult xrsim_r = (call);                  \
    if (XR_FAILED(xrsim_r)) return fail(#call, xrsim_r); \
  } while (0)

Client::Client(Options o) : options(o) {}

std::vector<std::string> Client::layer_messages() const {
  std::vector<std::string> out;
  const char* file = std::getenv("XR_CORE_VALIDATION_FILE_NAME");
  if (file == nullptr) return out;
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);)
    if (line.rfind("[VALID_", 0) == 0) out.push_back(line);
  return out;
}

Client::~Client() { destroy_all(); }

std::string Client::result_name(XrResult r) const {
  char buf[XR_MAX_RESULT_STRING_SIZE] = {};
  if (instance != XR_NULL_HANDLE && XR_SUCCEEDED(xrResultToString(instance, r, buf))) return buf;
  return "XrResult " + std::to_string(static_cast<int>(r));
}

XrResult Client::fail(const char* call, XrResult r) {
  error = std::string(call) + ": " + result_name(r);
  return r;
}

XrResult Client::create_instance() {
  uint32_t n = 0;
  XRSIM_TRY(xrEnumerateApiLayerProperties(0, &n, nullptr));
  std::vector<XrApiLayerProperties> layers(n, {XR_TYPE_API_LAYER_PROPERTIES});
  XRSIM_TRY(xrEnumerateApiLayerProperties(n, &n, layers.data()));
  for (const auto& l : layers) layer_listed = layer_listed || std::strcmp(l.layerName, kCoreValidationLayer) == 0;
  if (options.core_validation && !layer_listed) {
    error = std::string(kCoreValidationLayer) + " is not installed (package openxr-layer-corevalidation)";
    return XR_ERROR_API_LAYER_NOT_PRESENT;
  }

  std::vector<const char*> ext = {XR_KHR_VULKAN_ENABLE2_EXTENSION_NAME, XR_EXT_DEBUG_UTILS_EXTENSION_NAME};
  if (options.depth) ext.push_back(XR_KHR_COMPOSITION_LAYER_DEPTH_EXTENSION_NAME);
  const char* layer_names[] = {kCoreValidationLayer};
  XrInstanceCreateInfo ci{XR_TYPE_INSTANCE_CREATE_INFO};
  std::strcpy(ci.applicationInfo.applicationName, "xrsim-test");
  std::strcpy(ci.applicationInfo.engineName, "nnxr");
  ci.applicationInfo.apiVersion = XR_CURRENT_API_VERSION;
  ci.enabledApiLayerCount = options.core_validation ? 1 : 0;
  ci.enabledApiLayerNames = layer_names;
  ci.enabledExtensionCount = static_cast<uint32_t>(ext.size());
  ci.enabledExtensionNames = ext.data();
  XRSIM_TRY(xrCreateInstance(&ci, &instance));

  // Messages of the loader. (The core validation layer of Debian 12 does not call messengers; it
  // writes to XR_CORE_VALIDATION_FILE_NAME, read by layer_messages().)
  auto create = proc<PFN_xrCreateDebugUtilsMessengerEXT>(instance, "xrCreateDebugUtilsMessengerEXT");
  if (create == nullptr) return fail("xrGetInstanceProcAddr(xrCreateDebugUtilsMessengerEXT)", XR_ERROR_FUNCTION_UNSUPPORTED);
  XrDebugUtilsMessengerCreateInfoEXT mi{XR_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
  mi.messageSeverities = XR_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | XR_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
  mi.messageTypes = XR_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT | XR_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                    XR_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT | XR_DEBUG_UTILS_MESSAGE_TYPE_CONFORMANCE_BIT_EXT;
  mi.userCallback = xr_message;
  mi.userData = &validation_messages;
  XRSIM_TRY(create(instance, &mi, &messenger));
  return XR_SUCCESS;
}

XrResult Client::create_vulkan() {
  XrSystemGetInfo si{XR_TYPE_SYSTEM_GET_INFO};
  si.formFactor = XR_FORM_FACTOR_HEAD_MOUNTED_DISPLAY;
  XRSIM_TRY(xrGetSystem(instance, &si, &system));
  uint32_t n = 0;
  XRSIM_TRY(xrEnumerateViewConfigurationViews(instance, system, XR_VIEW_CONFIGURATION_TYPE_PRIMARY_STEREO, 0, &n, nullptr));
  std::vector<XrViewConfigurationView> views(n, {XR_TYPE_VIEW_CONFIGURATION_VIEW});
  XRSIM_TRY(xrEnumerateViewConfigurationViews(instance, system, XR_VIEW_CONFIGURATION_TYPE_PRIMARY_STEREO, n, &n,
                                              views.data()));
  view_config = views.at(0);

  auto requirements = proc<PFN_xrGetVulkanGraphicsRequirements2KHR>(instance, "xrGetVulkanGraphicsRequirements2KHR");
  auto create_instance = proc<PFN_xrCreateVulkanInstanceKHR>(instance, "xrCreateVulkanInstanceKHR");
  auto get_device = proc<PFN_xrGetVulkanGraphicsDevice2KHR>(instance, "xrGetVulkanGraphicsDevice2KHR");
  auto create_device = proc<PFN_xrCreateVulkanDeviceKHR>(instance, "xrCreateVulkanDeviceKHR");
  if (!requirements || !create_instance || !get_device || !create_device)
    return fail("xrGetInstanceProcAddr(XR_KHR_vulkan_enable2)", XR_ERROR_FUNCTION_UNSUPPORTED);
  XrGraphicsRequirementsVulkan2KHR req{XR_TYPE_GRAPHICS_REQUIREMENTS_VULKAN2_KHR};
  XRSIM_TRY(requirements(instance, system, &req));

  uint32_t layer_count = 0;
  vkEnumerateInstanceLayerProperties(&layer_count, nullptr);
  std::vector<VkLayerProperties> vk_layers(layer_count);
  vkEnumerateInstanceLayerProperties(&layer_count, vk_layers.data());
  for (const auto& l : vk_layers) vk_validation = vk_validation || std::strcmp(l.layerName, "VK_LAYER_KHRONOS_validation") == 0;
  const char* vk_layer = "VK_LAYER_KHRONOS_validation";
  const char* vk_ext = VK_EXT_DEBUG_UTILS_EXTENSION_NAME;
  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.pApplicationName = "xrsim-test";
  app.apiVersion = VK_API_VERSION_1_1;
  VkInstanceCreateInfo vci{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  vci.pApplicationInfo = &app;
  vci.enabledLayerCount = vk_validation ? 1 : 0;
  vci.ppEnabledLayerNames = &vk_layer;
  vci.enabledExtensionCount = vk_validation ? 1 : 0;
  vci.ppEnabledExtensionNames = &vk_ext;
  XrVulkanInstanceCreateInfoKHR xci{XR_TYPE_VULKAN_INSTANCE_CREATE_INFO_KHR};
  xci.systemId = system;
  xci.pfnGetInstanceProcAddr = vkGetInstanceProcAddr;
  xci.vulkanCreateInfo = &vci;
  VkResult vr = VK_ERROR_UNKNOWN;
  XRSIM_TRY(create_instance(instance, &xci, &vk_instance, &vr));
  if (vr != VK_SUCCESS) return fail("vkCreateInstance", XR_ERROR_RUNTIME_FAILURE);
  if (vk_validation) {
    auto make = reinterpret_cast<PFN_vkCreateDebugUtilsMessengerEXT>(
        vkGetInstanceProcAddr(vk_instance, "vkCreateDebugUtilsMessengerEXT"));
    VkDebugUtilsMessengerCreateInfoEXT mi{VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
    mi.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT;
    mi.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT;
    mi.pfnUserCallback = vk_message;
    mi.pUserData = &validation_messages;
    if (make == nullptr || make(vk_instance, &mi, nullptr, &vk_messenger) != VK_SUCCESS)
      return fail("vkCreateDebugUtilsMessengerEXT", XR_ERROR_RUNTIME_FAILURE);
  }

  XrVulkanGraphicsDeviceGetInfoKHR gi{XR_TYPE_VULKAN_GRAPHICS_DEVICE_GET_INFO_KHR};
  gi.systemId = system;
  gi.vulkanInstance = vk_instance;
  XRSIM_TRY(get_device(instance, &gi, &vk_physical));

  uint32_t families = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(vk_physical, &families, nullptr);
  std::vector<VkQueueFamilyProperties> props(families);
  vkGetPhysicalDeviceQueueFamilyProperties(vk_physical, &families, props.data());
  queue_family = families;
  for (uint32_t i = 0; i < families; ++i)
    if (props[i].queueFlags & VK_QUEUE_GRAPHICS_BIT) {
      queue_family = i;
      break;
    }
  if (queue_family == families) return fail("no graphics queue family", XR_ERROR_RUNTIME_FAILURE);
  float priority = 1.0f;
  VkDeviceQueueCreateInfo qci{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  qci.queueFamilyIndex = queue_family;
  qci.queueCount = 1;
  qci.pQueuePriorities = &priority;
  VkDeviceCreateInfo dci{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  dci.queueCreateInfoCount = 1;
  dci.pQueueCreateInfos = &qci;
  XrVulkanDeviceCreateInfoKHR xdi{XR_TYPE_VULKAN_DEVICE_CREATE_INFO_KHR};
  xdi.systemId = system;
  xdi.pfnGetInstanceProcAddr = vkGetInstanceProcAddr;
  xdi.vulkanPhysicalDevice = vk_physical;
  xdi.vulkanCreateInfo = &dci;
  XRSIM_TRY(create_device(instance, &xdi, &vk_device, &vr));
  if (vr != VK_SUCCESS) return fail("vkCreateDevice", XR_ERROR_RUNTIME_FAILURE);
  vkGetDeviceQueue(vk_device, queue_family, 0, &queue);
  VkCommandPoolCreateInfo pci{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  pci.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  pci.queueFamilyIndex = queue_family;
  VkFenceCreateInfo fci{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  if (vkCreateCommandPool(vk_device, &pci, nullptr, &pool) != VK_SUCCESS ||
      vkCreateFence(vk_device, &fci, nullptr, &fence) != VK_SUCCESS)
    return fail("vkCreateCommandPool/vkCreateFence", XR_ERROR_RUNTIME_FAILURE);
  return XR_SUCCESS;
}

XrResult Client::make_swapchain(int64_t format, uint32_t array_size, XrSwapchainUsageFlags usage, Swapchain* out) {
  XrSwapchainCreateInfo ci{XR_TYPE_SWAPCHAIN_CREATE_INFO};
  ci.usageFlags = usage;
  ci.format = format;
  ci.sampleCount = 1;
  ci.width = view_config.recommendedImageRectWidth;
  ci.height = view_config.recommendedImageRectHeight;
  ci.faceCount = 1;
  ci.arraySize = array_size;
  ci.mipCount = 1;
  XRSIM_TRY(xrCreateSwapchain(session, &ci, &out->handle));
  out->format = format;
  out->width = ci.width;
  out->height = ci.height;
  out->array_size = array_size;
  uint32_t n = 0;
  XRSIM_TRY(xrEnumerateSwapchainImages(out->handle, 0, &n, nullptr));
  std::vector<XrSwapchainImageVulkan2KHR> images(n, {XR_TYPE_SWAPCHAIN_IMAGE_VULKAN2_KHR});
  XRSIM_TRY(xrEnumerateSwapchainImages(out->handle, n, &n, reinterpret_cast<XrSwapchainImageBaseHeader*>(images.data())));
  for (const auto& i : images) out->images.push_back(i.image);
  return XR_SUCCESS;
}

XrResult Client::create_session() {
  XrGraphicsBindingVulkan2KHR binding{XR_TYPE_GRAPHICS_BINDING_VULKAN2_KHR};
  binding.instance = vk_instance;
  binding.physicalDevice = vk_physical;
  binding.device = vk_device;
  binding.queueFamilyIndex = queue_family;
  binding.queueIndex = 0;
  XrSessionCreateInfo ci{XR_TYPE_SESSION_CREATE_INFO};
  ci.next = &binding;
  ci.systemId = system;
  XRSIM_TRY(xrCreateSession(instance, &ci, &session));
  states.clear();
  state = XR_SESSION_STATE_UNKNOWN;

  uint32_t n = 0;
  XRSIM_TRY(xrEnumerateReferenceSpaces(session, 0, &n, nullptr));
  std::vector<XrReferenceSpaceType> spaces(n);
  XRSIM_TRY(xrEnumerateReferenceSpaces(session, n, &n, spaces.data()));
  app_space_type = XR_REFERENCE_SPACE_TYPE_LOCAL;
  for (auto t : spaces)
    if (t == XR_REFERENCE_SPACE_TYPE_STAGE) app_space_type = t;
  XrReferenceSpaceCreateInfo si{XR_TYPE_REFERENCE_SPACE_CREATE_INFO};
  si.referenceSpaceType = app_space_type;
  si.poseInReferenceSpace.orientation.w = 1;
  XRSIM_TRY(xrCreateReferenceSpace(session, &si, &app_space));

  XRSIM_TRY(xrEnumerateSwapchainFormats(session, 0, &n, nullptr));
  std::vector<int64_t> formats(n);
  XRSIM_TRY(xrEnumerateSwapchainFormats(session, n, &n, formats.data()));
  auto offered = [&](int64_t f) { return std::find(formats.begin(), formats.end(), f) != formats.end(); };
  if (!offered(options.colour_format)) return fail("colour format not offered", XR_ERROR_SWAPCHAIN_FORMAT_UNSUPPORTED);
  const XrSwapchainUsageFlags colour_usage = XR_SWAPCHAIN_USAGE_COLOR_ATTACHMENT_BIT | XR_SWAPCHAIN_USAGE_TRANSFER_DST_BIT;
  const XrSwapchainUsageFlags depth_usage =
      XR_SWAPCHAIN_USAGE_DEPTH_STENCIL_ATTACHMENT_BIT | XR_SWAPCHAIN_USAGE_TRANSFER_DST_BIT;
  const uint32_t count = options.multiview ? 1 : 2;
  const uint32_t layers = options.multiview ? 2 : 1;
  for (uint32_t i = 0; i < count; ++i) {
    colour.emplace_back();
    XrResult r = make_swapchain(options.colour_format, layers, colour_usage, &colour.back());
    if (XR_FAILED(r)) return r;
    if (options.depth) {
      if (!offered(VK_FORMAT_D32_SFLOAT)) return fail("D32 depth not offered", XR_ERROR_SWAPCHAIN_FORMAT_UNSUPPORTED);
      depth.emplace_back();
      r = make_swapchain(VK_FORMAT_D32_SFLOAT, layers, depth_usage, &depth.back());
      if (XR_FAILED(r)) return r;
    }
  }
  return XR_SUCCESS;
}

XrResult Client::poll() {
  for (;;) {
    XrEventDataBuffer event{XR_TYPE_EVENT_DATA_BUFFER};
    XrResult r = xrPollEvent(instance, &event);
    if (r == XR_EVENT_UNAVAILABLE) return XR_SUCCESS;
    if (XR_FAILED(r)) return fail("xrPollEvent", r);
    if (event.type == XR_TYPE_EVENT_DATA_INTERACTION_PROFILE_CHANGED) {
      ++profile_changes;
      continue;
    }
    if (event.type != XR_TYPE_EVENT_DATA_SESSION_STATE_CHANGED) continue;
    const auto& e = reinterpret_cast<const XrEventDataSessionStateChanged&>(event);
    if (e.session != session) continue;
    state = e.state;
    states.push_back(e.state);
    if (e.state == XR_SESSION_STATE_READY) {
      XrSessionBeginInfo bi{XR_TYPE_SESSION_BEGIN_INFO};
      bi.primaryViewConfigurationType = XR_VIEW_CONFIGURATION_TYPE_PRIMARY_STEREO;
      XRSIM_TRY(xrBeginSession(session, &bi));
      running = true;
    } else if (e.state == XR_SESSION_STATE_STOPPING) {
      XRSIM_TRY(xrEndSession(session));
      running = false;
    } else if (e.state == XR_SESSION_STATE_EXITING || e.state == XR_SESSION_STATE_LOSS_PENDING) {
      running = false;
    }
  }
}

XrResult Client::render(Swapchain& sc, bool is_depth, const std::array<std::array<float, 4>, 2>& colours) {
  uint32_t index = 0;
  XrSwapchainImageAcquireInfo ai{XR_TYPE_SWAPCHAIN_IMAGE_ACQUIRE_INFO};
  XRSIM_TRY(xrAcquireSwapchainImage(sc.handle, &ai, &index));
  XrSwapchainImageWaitInfo wi{XR_TYPE_SWAPCHAIN_IMAGE_WAIT_INFO};
  wi.timeout = XR_INFINITE_DURATION;
  XRSIM_TRY(xrWaitSwapchainImage(sc.handle, &wi));

  VkCommandBufferAllocateInfo cai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  cai.commandPool = pool;
  cai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  cai.commandBufferCount = 1;
  VkCommandBuffer cb = VK_NULL_HANDLE;
  if (vkAllocateCommandBuffers(vk_device, &cai, &cb) != VK_SUCCESS) return fail("vkAllocateCommandBuffers", XR_ERROR_RUNTIME_FAILURE);
  VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  vkBeginCommandBuffer(cb, &bi);
  const VkImageLayout attach =
      is_depth ? VK_IMAGE_LAYOUT_DEPTH_STENCIL_ATTACHMENT_OPTIMAL : VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL;
  const VkImageAspectFlags aspect = is_depth ? VK_IMAGE_ASPECT_DEPTH_BIT : VK_IMAGE_ASPECT_COLOR_BIT;
  VkImageMemoryBarrier b{VK_STRUCTURE_TYPE_IMAGE_MEMORY_BARRIER};
  b.srcAccessMask = is_depth ? VK_ACCESS_DEPTH_STENCIL_ATTACHMENT_WRITE_BIT : VK_ACCESS_COLOR_ATTACHMENT_WRITE_BIT;
  b.dstAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
  b.oldLayout = attach;
  b.newLayout = VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL;
  b.srcQueueFamilyIndex = b.dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED;
  b.image = sc.images.at(index);
  b.subresourceRange = {aspect, 0, 1, 0, sc.array_size};
  vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 0, nullptr, 0, nullptr,
                       1, &b);
  for (uint32_t layer = 0; layer < sc.array_size; ++layer) {
    VkImageSubresourceRange range{aspect, 0, 1, layer, 1};
    if (is_depth) {
      VkClearDepthStencilValue v{1.0f, 0};
      vkCmdClearDepthStencilImage(cb, b.image, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, &v, 1, &range);
    } else {
      // One colour per eye: the layer of a multiview swapchain, else the swapchain's eye.
      size_t eye = sc.array_size == 2 ? layer : static_cast<size_t>(&sc - colour.data());
      VkClearColorValue v;
      std::memcpy(v.float32, colours.at(eye).data(), sizeof v.float32);
      vkCmdClearColorImage(cb, b.image, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, &v, 1, &range);
    }
  }
  VkImageMemoryBarrier back = b;
  back.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
  back.dstAccessMask = b.srcAccessMask;
  back.oldLayout = VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL;
  back.newLayout = attach;
  vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, 0, 0, nullptr, 0, nullptr,
                       1, &back);
  vkEndCommandBuffer(cb);
  VkSubmitInfo submit{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  submit.commandBufferCount = 1;
  submit.pCommandBuffers = &cb;
  vkResetFences(vk_device, 1, &fence);
  bool ok = vkQueueSubmit(queue, 1, &submit, fence) == VK_SUCCESS &&
            vkWaitForFences(vk_device, 1, &fence, VK_TRUE, 30'000'000'000ull) == VK_SUCCESS;
  vkFreeCommandBuffers(vk_device, pool, 1, &cb);
  if (!ok) return fail("vkQueueSubmit", XR_ERROR_RUNTIME_FAILURE);
  XrSwapchainImageReleaseInfo ri{XR_TYPE_SWAPCHAIN_IMAGE_RELEASE_INFO};
  XRSIM_TRY(xrReleaseSwapchainImage(sc.handle, &ri));
  return XR_SUCCESS;
}

XrResult Client::frame(const std::array<std::array<float, 4>, 2>& colours) {
  XrFrameWaitInfo wi{XR_TYPE_FRAME_WAIT_INFO};
  XrFrameState fs{XR_TYPE_FRAME_STATE};
  XRSIM_TRY(xrWaitFrame(session, &wi, &fs));
  XrFrameBeginInfo bi{XR_TYPE_FRAME_BEGIN_INFO};
  XRSIM_TRY(xrBeginFrame(session, &bi));
  last_display_time = fs.predictedDisplayTime;

  std::array<XrCompositionLayerProjectionView, 2> views{};
  std::array<XrCompositionLayerDepthInfoKHR, 2> depths{};
  XrCompositionLayerProjection layer{XR_TYPE_COMPOSITION_LAYER_PROJECTION};
  const XrCompositionLayerBaseHeader* layers[] = {reinterpret_cast<XrCompositionLayerBaseHeader*>(&layer)};
  XrFrameEndInfo ei{XR_TYPE_FRAME_END_INFO};
  ei.displayTime = fs.predictedDisplayTime;
  ei.environmentBlendMode = XR_ENVIRONMENT_BLEND_MODE_OPAQUE;
  if (fs.shouldRender) {
    XrViewLocateInfo li{XR_TYPE_VIEW_LOCATE_INFO};
    li.viewConfigurationType = XR_VIEW_CONFIGURATION_TYPE_PRIMARY_STEREO;
    li.displayTime = fs.predictedDisplayTime;
    li.space = app_space;
    XrViewState vs{XR_TYPE_VIEW_STATE};
    std::array<XrView, 2> located{{{XR_TYPE_VIEW}, {XR_TYPE_VIEW}}};
    uint32_t n = 0;
    XRSIM_TRY(xrLocateViews(session, &li, &vs, 2, &n, located.data()));
    for (auto& sc : colour) {
      XrResult r = render(sc, false, colours);
      if (XR_FAILED(r)) return r;
    }
    for (auto& sc : depth) {
      XrResult r = render(sc, true, colours);
      if (XR_FAILED(r)) return r;
    }
    for (uint32_t eye = 0; eye < 2; ++eye) {
      const uint32_t sci = options.multiview ? 0 : eye;
      views[eye] = {XR_TYPE_COMPOSITION_LAYER_PROJECTION_VIEW};
      views[eye].pose = located[eye].pose;
      views[eye].fov = located[eye].fov;
      views[eye].subImage.swapchain = colour[sci].handle;
      views[eye].subImage.imageRect = {{0, 0}, {static_cast<int32_t>(colour[sci].width), static_cast<int32_t>(colour[sci].height)}};
      views[eye].subImage.imageArrayIndex = options.multiview ? eye : 0;
      if (options.depth) {
        depths[eye] = {XR_TYPE_COMPOSITION_LAYER_DEPTH_INFO_KHR};
        depths[eye].subImage = views[eye].subImage;
        depths[eye].subImage.swapchain = depth[sci].handle;
        depths[eye].minDepth = 0;
        depths[eye].maxDepth = 1;
        depths[eye].nearZ = 0.05f;
        depths[eye].farZ = 100.0f;
        views[eye].next = &depths[eye];
      }
    }
    layer.space = app_space;
    layer.viewCount = 2;
    layer.views = views.data();
    ei.layerCount = 1;
    ei.layers = layers;
    ++frames_rendered;
  }
  XRSIM_TRY(xrEndFrame(session, &ei));
  return XR_SUCCESS;
}

XrResult Client::run_until(XrSessionState target, int max_frames, const std::array<std::array<float, 4>, 2>& colours) {
  for (int i = 0; i < max_frames; ++i) {
    XrResult r = poll();
    if (XR_FAILED(r)) return r;
    if (std::find(states.begin(), states.end(), target) != states.end()) return XR_SUCCESS;
    if (!running) continue;
    r = frame(colours);
    if (r == XR_ERROR_SESSION_LOST) {  // before LOSS_PENDING was polled: keep polling for it
      running = false;
      ++lost_calls;
      continue;
    }
    if (XR_FAILED(r)) return r;
  }
  XrResult r = poll();
  if (XR_FAILED(r)) return r;
  if (std::find(states.begin(), states.end(), target) != states.end()) return XR_SUCCESS;
  error = "state not reached within " + std::to_string(max_frames) + " frames";
  return XR_TIMEOUT_EXPIRED;
}

void Client::destroy_session() {
  if (vk_device != VK_NULL_HANDLE) vkDeviceWaitIdle(vk_device);
  for (auto& sc : colour) xrDestroySwapchain(sc.handle);
  for (auto& sc : depth) xrDestroySwapchain(sc.handle);
  colour.clear();
  depth.clear();
  if (app_space != XR_NULL_HANDLE) xrDestroySpace(app_space);
  app_space = XR_NULL_HANDLE;
  if (session != XR_NULL_HANDLE) xrDestroySession(session);
  session = XR_NULL_HANDLE;
  running = false;
}

void Client::destroy_all() {
  destroy_session();
  if (messenger != XR_NULL_HANDLE) {
    if (auto destroy = proc<PFN_xrDestroyDebugUtilsMessengerEXT>(instance, "xrDestroyDebugUtilsMessengerEXT"))
      destroy(messenger);
    messenger = XR_NULL_HANDLE;
  }
  if (instance != XR_NULL_HANDLE) xrDestroyInstance(instance);
  instance = XR_NULL_HANDLE;
  if (vk_device != VK_NULL_HANDLE) {
    vkDestroyFence(vk_device, fence, nullptr);
    vkDestroyCommandPool(vk_device, pool, nullptr);
    vkDestroyDevice(vk_device, nullptr);
    vk_device = VK_NULL_HANDLE;
  }
  if (vk_messenger != VK_NULL_HANDLE) {
    auto destroy = reinterpret_cast<PFN_vkDestroyDebugUtilsMessengerEXT>(
        vkGetInstanceProcAddr(vk_instance, "vkDestroyDebugUtilsMessengerEXT"));
    if (destroy) destroy(vk_instance, vk_messenger, nullptr);
    vk_messenger = VK_NULL_HANDLE;
  }
  if (vk_instance != VK_NULL_HANDLE) vkDestroyInstance(vk_instance, nullptr);
  vk_instance = VK_NULL_HANDLE;
}

}  // namespace xrsim::client
