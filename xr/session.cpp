#include "xr/session.h"

#include <vulkan/vulkan.h>

#define XR_USE_GRAPHICS_API_VULKAN 1
#include <openxr/openxr.h>
#include <openxr/openxr_platform.h>
#include <time.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <optional>
#include <thread>

#include <glm/gtc/matrix_transform.hpp>
#include <glm/gtc/quaternion.hpp>

#include "engine/device.h"
#include "engine/memory.h"
#include "engine/mirror.h"
#include "engine/renderer.h"
#include "engine/scene_buffers.h"
#include "engine/vk.h"
#include "engine/overlay.h"
#include "xr/bindings.h"
#include "xr/feedback.h"
#include "xr/gestures.h"

namespace nnxr::xr {
namespace {

using namespace engine;

constexpr uint32_t kFramesInFlight = 2;
constexpr VkFormat kDepthFormat = VK_FORMAT_D32_SFLOAT;  // the private depth image's
// Depth swapchain formats in order of preference: depth-only formats, whose layouts the renderer's
// DEPTH_ATTACHMENT_OPTIMAL covers.
constexpr VkFormat kDepthSwapchainFormats[] = {VK_FORMAT_D32_SFLOAT, VK_FORMAT_D16_UNORM};
constexpr float kNear = 0.05f, kFar = 200.0f;

double thread_cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) * 1e-6;
}

std::string result_string(XrInstance instance, XrResult r) {
  if (instance == XR_NULL_HANDLE) {  // xrResultToString needs an instance
    switch (r) {
      case XR_ERROR_RUNTIME_UNAVAILABLE: return "XR_ERROR_RUNTIME_UNAVAILABLE";
      case XR_ERROR_RUNTIME_FAILURE: return "XR_ERROR_RUNTIME_FAILURE";
      case XR_ERROR_INITIALIZATION_FAILED: return "XR_ERROR_INITIALIZATION_FAILED";
      case XR_ERROR_API_VERSION_UNSUPPORTED: return "XR_ERROR_API_VERSION_UNSUPPORTED";
      case XR_ERROR_EXTENSION_NOT_PRESENT: return "XR_ERROR_EXTENSION_NOT_PRESENT";
      case XR_ERROR_API_LAYER_NOT_PRESENT: return "XR_ERROR_API_LAYER_NOT_PRESENT";
      default: return "XrResult " + std::to_string(r);
    }
  }
  char buf[XR_MAX_RESULT_STRING_SIZE] = {};
  if (instance == XR_NULL_HANDLE || XR_FAILED(xrResultToString(instance, r, buf))) return "XrResult " + std::to_string(r);
  return buf;
}

const char* state_name(XrSessionState s) {
  switch (s) {
    case XR_SESSION_STATE_IDLE: return "IDLE";
    case XR_SESSION_STATE_READY: return "READY";
    case XR_SESSION_STATE_SYNCHRONIZED: return "SYNCHRONIZED";
    case XR_SESSION_STATE_VISIBLE: return "VISIBLE";
    case XR_SESSION_STATE_FOCUSED: return "FOCUSED";
    case XR_SESSION_STATE_STOPPING: return "STOPPING";
    case XR_SESSION_STATE_LOSS_PENDING: return "LOSS_PENDING";
    case XR_SESSION_STATE_EXITING: return "EXITING";
    default: return "UNKNOWN";
  }
}

glm::vec3 to_glm(const XrVector3f& v) { return {v.x, v.y, v.z}; }
glm::quat to_glm(const XrQuaternionf& q) { return {q.w, q.x, q.y, q.z}; }

// Eye → Vulkan clip for an OpenXR field of view (asymmetric; Y down; depth 0..1).
glm::mat4 projection(const XrFovf& fov) {
  const float l = std::tan(fov.angleLeft), r = std::tan(fov.angleRight);
  const float u = std::tan(fov.angleUp), d = std::tan(fov.angleDown);
  const float w = r - l, h = d - u;  // h < 0: flips Y for Vulkan
  glm::mat4 p(0.0f);
  p[0][0] = 2.0f / w;
  p[1][1] = 2.0f / h;
  p[2][0] = (r + l) / w;
  p[2][1] = (u + d) / h;
  p[2][2] = -kFar / (kFar - kNear);
  p[2][3] = -1.0f;
  p[3][2] = -(kFar * kNear) / (kFar - kNear);
  return p;
}

glm::mat4 view_of(const XrPosef& pose) {
  const glm::mat4 eye = glm::translate(glm::mat4(1.0f), to_glm(pose.position)) * glm::mat4_cast(to_glm(pose.orientation));
  return glm::inverse(eye);
}

template <class F>
F proc(XrInstance instance, const char* name) {
  PFN_xrVoidFunction f = nullptr;
  if (XR_FAILED(xrGetInstanceProcAddr(instance, name, &f)) || !f) throw std::runtime_error(std::string("OpenXR: ") + name + " is not available");
  return reinterpret_cast<F>(f);
}

}  // namespace

struct XrViewer::Impl {
  ViewerOptions options;

  // OpenXR handles: destroyed explicitly in ~Impl (session objects, then the instance) before the
  // Vulkan objects below, which the runtime may use until then.
  XrInstance instance = XR_NULL_HANDLE;
  XrSystemId system = XR_NULL_SYSTEM_ID;
  XrSession session = XR_NULL_HANDLE;
  XrSpace space = XR_NULL_HANDLE;
  XrSwapchain swapchain = XR_NULL_HANDLE;
  XrSwapchain depth_swapchain = XR_NULL_HANDLE;  // with XR_KHR_composition_layer_depth
  XrActionSet action_set = XR_NULL_HANDLE;
  std::array<XrAction, static_cast<size_t>(ActionId::Count)> xr_actions{};
  std::array<XrPath, 2> hand_paths{};
  std::array<XrSpace, 2> grip_spaces{}, aim_spaces{};

  std::unique_ptr<Instance> vk_instance;
  std::unique_ptr<Device> device;
  std::unique_ptr<SceneBuffers> scene;
  std::unique_ptr<Renderer> renderer;
  std::unique_ptr<Mirror> mirror;  // desktop window showing the left eye (null: none)
  std::vector<VkImage> images;
  std::vector<ImageView> views;
  std::vector<VkImage> depth_images;   // of depth_swapchain (owned by the runtime)
  std::vector<ImageView> depth_views;  // 2D_ARRAY views of depth_images
  DeviceImage depth;                   // private depth image when there is no depth swapchain
  VkFormat depth_format = kDepthFormat;
  bool depth_extension = false;  // XR_KHR_composition_layer_depth enabled
  CommandPool pool;
  struct Slot {
    VkCommandBuffer cmd = VK_NULL_HANDLE;
    Fence done;
    uint64_t serial = 0;
  };
  std::array<Slot, kFramesInFlight> slots;
  std::unique_ptr<Worker> worker;
  Interaction interaction;
  std::unique_ptr<ViewerState> state;
  Gestures gestures;
  std::array<HandState, 2> hands{};  // this frame's controller state (for the feedback drawing)
  OverlayBuilder overlay;            // this frame's rays, gauges and panel; capacity kept
  WorldTransform world;  // the gesture tracker's copy of the network's transform
  bool placed = false;   // the network was put in front of the user

  VkExtent2D extent{};
  VkFormat format = VK_FORMAT_UNDEFINED;
  XrSessionState session_state = XR_SESSION_STATE_UNKNOWN;
  bool running = false, exit_requested = false, done = false;
  uint64_t frame_index = 0, serial = 0;
  XrTime last_time = 0;
  std::vector<std::string> states;
  std::string runtime, space_name, profile;
  std::vector<double> wait_to_end_ms;  // wall time from xrWaitFrame's return to xrEndFrame's, settled frames

  explicit Impl(const ViewerOptions& o) : options(o) {
    create_instance();
    open_mirror();
    create_vulkan();
    if (mirror) attach_mirror();
    create_session();
    create_actions();
    fit_budget(*device, options);
    scene = std::make_unique<SceneBuffers>(*device, SceneBufferConfig{.element_budget = options.worker.scene.budget,
                                                                      .frames_in_flight = kFramesInFlight});
    renderer = std::make_unique<Renderer>(*device, *scene, RendererConfig{.colour_format = format, .depth_format = depth_format,
                                                                          .view_count = 2, .frames_in_flight = kFramesInFlight});
    pool = create_command_pool(device->get(), device->queue_family(), VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT);
    for (Slot& s : slots) {
      s.cmd = allocate_command_buffer(device->get(), pool.get());
      s.done = create_fence(device->get(), true);
    }
    worker = std::make_unique<Worker>(*scene, options.worker);
    interaction.set_filter(options.filter, options.filter_tensors);
    state = std::make_unique<ViewerState>(*worker, interaction, *renderer);
  }

  ~Impl() {
    if (scene) scene->stop();
    worker.reset();
    if (device) {
      try {
        device->wait_idle();
      } catch (const std::exception& e) {
        std::cerr << "nnxr: " << e.what() << '\n';
      }
    }
    views.clear();
    depth_views.clear();
    for (XrSpace s : grip_spaces)
      if (s != XR_NULL_HANDLE) xrDestroySpace(s);
    for (XrSpace s : aim_spaces)
      if (s != XR_NULL_HANDLE) xrDestroySpace(s);
    if (swapchain != XR_NULL_HANDLE) xrDestroySwapchain(swapchain);
    if (depth_swapchain != XR_NULL_HANDLE) xrDestroySwapchain(depth_swapchain);
    if (space != XR_NULL_HANDLE) xrDestroySpace(space);
    if (action_set != XR_NULL_HANDLE) xrDestroyActionSet(action_set);
    if (session != XR_NULL_HANDLE) xrDestroySession(session);
    if (instance != XR_NULL_HANDLE) xrDestroyInstance(instance);
  }

  void check(XrResult r, const char* call) const {
    if (XR_FAILED(r)) throw std::runtime_error(std::string("OpenXR: ") + call + " failed: " + result_string(instance, r));
  }

  // ---- setup ----------------------------------------------------------------------------------

  void create_instance() {
    // The loader prints its own errors on stderr (e.g. when there is no runtime); nnxr reports
    // them in one line. XR_LOADER_DEBUG set by the user wins.
    setenv("XR_LOADER_DEBUG", "none", 0);
    uint32_t n = 0;
    XrResult r = xrEnumerateInstanceExtensionProperties(nullptr, 0, &n, nullptr);
    if (XR_FAILED(r))
      throw NoHeadsetError("no OpenXR runtime (" + result_string(XR_NULL_HANDLE, r) +
                           "; set XR_RUNTIME_JSON or install one such as Monado or SteamVR)");
    std::vector<XrExtensionProperties> props(n, {XR_TYPE_EXTENSION_PROPERTIES});
    check(xrEnumerateInstanceExtensionProperties(nullptr, n, &n, props.data()), "xrEnumerateInstanceExtensionProperties");
    const bool vulkan2 = std::any_of(props.begin(), props.end(), [](const XrExtensionProperties& p) {
      return std::strcmp(p.extensionName, XR_KHR_VULKAN_ENABLE2_EXTENSION_NAME) == 0;
    });
    if (!vulkan2) throw NoHeadsetError("the OpenXR runtime does not offer " XR_KHR_VULKAN_ENABLE2_EXTENSION_NAME);
    depth_extension = std::any_of(props.begin(), props.end(), [](const XrExtensionProperties& p) {
      return std::strcmp(p.extensionName, XR_KHR_COMPOSITION_LAYER_DEPTH_EXTENSION_NAME) == 0;
    });
    if (!depth_extension)
      std::cerr << "nnxr: the OpenXR runtime does not offer " XR_KHR_COMPOSITION_LAYER_DEPTH_EXTENSION_NAME
                   "; depth stays private to nnxr\n";
    const char* extensions[] = {XR_KHR_VULKAN_ENABLE2_EXTENSION_NAME, XR_KHR_COMPOSITION_LAYER_DEPTH_EXTENSION_NAME};
    XrInstanceCreateInfo ci{XR_TYPE_INSTANCE_CREATE_INFO};
    std::strncpy(ci.applicationInfo.applicationName, "nnxr", XR_MAX_APPLICATION_NAME_SIZE - 1);
    ci.applicationInfo.applicationVersion = 1;
    std::strncpy(ci.applicationInfo.engineName, "nnxr", XR_MAX_ENGINE_NAME_SIZE - 1);
    ci.applicationInfo.apiVersion = XR_MAKE_VERSION(1, 0, 0);
    ci.enabledExtensionCount = depth_extension ? 2 : 1;
    ci.enabledExtensionNames = extensions;
    r = xrCreateInstance(&ci, &instance);
    if (XR_FAILED(r)) throw NoHeadsetError("the OpenXR runtime could not start (xrCreateInstance: " + result_string(XR_NULL_HANDLE, r) + ")");
    XrInstanceProperties ip{XR_TYPE_INSTANCE_PROPERTIES};
    check(xrGetInstanceProperties(instance, &ip), "xrGetInstanceProperties");
    runtime = std::string(ip.runtimeName) + " " + std::to_string(XR_VERSION_MAJOR(ip.runtimeVersion)) + "." +
              std::to_string(XR_VERSION_MINOR(ip.runtimeVersion)) + "." + std::to_string(XR_VERSION_PATCH(ip.runtimeVersion));
    XrSystemGetInfo si{XR_TYPE_SYSTEM_GET_INFO};
    si.formFactor = XR_FORM_FACTOR_HEAD_MOUNTED_DISPLAY;
    r = xrGetSystem(instance, &si, &system);
    if (r == XR_ERROR_FORM_FACTOR_UNAVAILABLE || r == XR_ERROR_FORM_FACTOR_UNSUPPORTED)
      throw NoHeadsetError("OpenXR runtime " + runtime + " has no headset connected (" + result_string(instance, r) + ")");
    check(r, "xrGetSystem");
  }

  // The mirror window opens before the Vulkan instance, which needs the window system's
  // extensions. No display, or a window system that refuses: no mirror, one line.
  void open_mirror() {
    if (!options.mirror) return;
    if (!display_available()) {
      std::cerr << "nnxr: no display (DISPLAY and WAYLAND_DISPLAY are unset); no desktop mirror\n";
      return;
    }
    try {
      mirror = std::make_unique<Mirror>(options.width, options.height, kFramesInFlight);
    } catch (const NoDisplayError& e) {
      std::cerr << "nnxr: " << e.what() << "; no desktop mirror\n";
    }
  }

  void attach_mirror() {
    try {
      mirror->attach(*vk_instance, *device);
    } catch (const std::exception& e) {  // NoDisplayError, VulkanError
      std::cerr << "nnxr: no desktop mirror: " << e.what() << '\n';
      mirror.reset();
    }
  }

  void create_vulkan() {
    auto get_requirements = proc<PFN_xrGetVulkanGraphicsRequirements2KHR>(instance, "xrGetVulkanGraphicsRequirements2KHR");
    auto create_vk_instance = proc<PFN_xrCreateVulkanInstanceKHR>(instance, "xrCreateVulkanInstanceKHR");
    auto get_device = proc<PFN_xrGetVulkanGraphicsDevice2KHR>(instance, "xrGetVulkanGraphicsDevice2KHR");
    auto create_vk_device = proc<PFN_xrCreateVulkanDeviceKHR>(instance, "xrCreateVulkanDeviceKHR");
    XrGraphicsRequirementsVulkan2KHR req{XR_TYPE_GRAPHICS_REQUIREMENTS_VULKAN2_KHR};
    check(get_requirements(instance, system, &req), "xrGetVulkanGraphicsRequirements2KHR");

    InstanceOptions io{.validation = options.validation};
    if (mirror) io.extensions = mirror->instance_extensions();
    const auto ici = instance_create_info(io);
    XrVulkanInstanceCreateInfoKHR xi{XR_TYPE_VULKAN_INSTANCE_CREATE_INFO_KHR};
    xi.systemId = system;
    xi.pfnGetInstanceProcAddr = &vkGetInstanceProcAddr;
    xi.vulkanCreateInfo = &ici->info;
    VkInstance vki = VK_NULL_HANDLE;
    VkResult vr = VK_SUCCESS;
    check(create_vk_instance(instance, &xi, &vki, &vr), "xrCreateVulkanInstanceKHR");
    engine::check(vr, "vkCreateInstance (through OpenXR)");
    vk_instance = std::make_unique<Instance>(Instance::adopt(vki, io, /*owned=*/true));

    XrVulkanGraphicsDeviceGetInfoKHR gi{XR_TYPE_VULKAN_GRAPHICS_DEVICE_GET_INFO_KHR};
    gi.systemId = system;
    gi.vulkanInstance = vki;
    VkPhysicalDevice physical = VK_NULL_HANDLE;
    check(get_device(instance, &gi, &physical), "xrGetVulkanGraphicsDevice2KHR");
    DeviceOptions dopt;
    if (mirror) dopt.extensions.push_back(Mirror::kDeviceExtension);
    const auto dci = device_create_info(*vk_instance, physical, dopt);
    XrVulkanDeviceCreateInfoKHR xd{XR_TYPE_VULKAN_DEVICE_CREATE_INFO_KHR};
    xd.systemId = system;
    xd.pfnGetInstanceProcAddr = &vkGetInstanceProcAddr;
    xd.vulkanPhysicalDevice = physical;
    xd.vulkanCreateInfo = &dci->info;
    VkDevice vkd = VK_NULL_HANDLE;
    check(create_vk_device(instance, &xd, &vkd, &vr), "xrCreateVulkanDeviceKHR");
    engine::check(vr, "vkCreateDevice (through OpenXR)");
    device = Device::adopt(*vk_instance, physical, vkd, dci->queue_family, /*owned=*/true);
  }

  void create_session() {
    XrGraphicsBindingVulkan2KHR binding{XR_TYPE_GRAPHICS_BINDING_VULKAN2_KHR};
    binding.instance = vk_instance->get();
    binding.physicalDevice = device->physical();
    binding.device = device->get();
    binding.queueFamilyIndex = device->queue_family();
    binding.queueIndex = 0;
    XrSessionCreateInfo ci{XR_TYPE_SESSION_CREATE_INFO};
    ci.next = &binding;
    ci.systemId = system;
    check(xrCreateSession(instance, &ci, &session), "xrCreateSession");

    uint32_t n = 0;
    check(xrEnumerateReferenceSpaces(session, 0, &n, nullptr), "xrEnumerateReferenceSpaces");
    std::vector<XrReferenceSpaceType> types(n);
    check(xrEnumerateReferenceSpaces(session, n, &n, types.data()), "xrEnumerateReferenceSpaces");
    const bool stage = std::find(types.begin(), types.end(), XR_REFERENCE_SPACE_TYPE_STAGE) != types.end();
    space_name = stage ? "STAGE" : "LOCAL";
    if (!stage) std::cerr << "nnxr: the OpenXR runtime offers no STAGE space; using LOCAL\n";
    XrReferenceSpaceCreateInfo rs{XR_TYPE_REFERENCE_SPACE_CREATE_INFO};
    rs.referenceSpaceType = stage ? XR_REFERENCE_SPACE_TYPE_STAGE : XR_REFERENCE_SPACE_TYPE_LOCAL;
    rs.poseInReferenceSpace.orientation.w = 1;
    check(xrCreateReferenceSpace(session, &rs, &space), "xrCreateReferenceSpace");

    check(xrEnumerateViewConfigurationViews(instance, system, XR_VIEW_CONFIGURATION_TYPE_PRIMARY_STEREO, 0, &n, nullptr),
          "xrEnumerateViewConfigurationViews");
    if (n != 2) throw std::runtime_error("OpenXR: the stereo view configuration has " + std::to_string(n) + " views, not 2");
    std::vector<XrViewConfigurationView> vc(n, {XR_TYPE_VIEW_CONFIGURATION_VIEW});
    check(xrEnumerateViewConfigurationViews(instance, system, XR_VIEW_CONFIGURATION_TYPE_PRIMARY_STEREO, n, &n, vc.data()),
          "xrEnumerateViewConfigurationViews");
    extent = {vc[0].recommendedImageRectWidth, vc[0].recommendedImageRectHeight};

    check(xrEnumerateSwapchainFormats(session, 0, &n, nullptr), "xrEnumerateSwapchainFormats");
    std::vector<int64_t> formats(n);
    check(xrEnumerateSwapchainFormats(session, n, &n, formats.data()), "xrEnumerateSwapchainFormats");
    for (VkFormat f : {VK_FORMAT_R8G8B8A8_SRGB, VK_FORMAT_B8G8R8A8_SRGB})
      if (format == VK_FORMAT_UNDEFINED && std::find(formats.begin(), formats.end(), int64_t(f)) != formats.end()) format = f;
    if (format == VK_FORMAT_UNDEFINED) throw std::runtime_error("OpenXR: the runtime offers no sRGB 8-bit swapchain format");
    create_array_swapchain(XR_SWAPCHAIN_USAGE_COLOR_ATTACHMENT_BIT | (mirror ? XR_SWAPCHAIN_USAGE_TRANSFER_SRC_BIT : 0), format,
                           VK_IMAGE_ASPECT_COLOR_BIT, swapchain, images, views);
    if (depth_extension) {
      for (VkFormat f : kDepthSwapchainFormats)
        if (depth_swapchain == XR_NULL_HANDLE && std::find(formats.begin(), formats.end(), int64_t(f)) != formats.end()) {
          depth_format = f;
          create_array_swapchain(XR_SWAPCHAIN_USAGE_DEPTH_STENCIL_ATTACHMENT_BIT, f, VK_IMAGE_ASPECT_DEPTH_BIT, depth_swapchain,
                                 depth_images, depth_views);
        }
      if (depth_swapchain == XR_NULL_HANDLE)
        std::cerr << "nnxr: the OpenXR runtime offers no depth-only swapchain format; depth stays private to nnxr\n";
    }
    if (depth_swapchain == XR_NULL_HANDLE) {
      depth_format = kDepthFormat;
      depth = create_image(*device, depth_format, extent, 2, VK_IMAGE_USAGE_DEPTH_STENCIL_ATTACHMENT_BIT, VK_IMAGE_ASPECT_DEPTH_BIT);
    }
  }

  // An array swapchain of two layers (one per eye) at the recommended size, its images and a
  // 2D_ARRAY view of each. The depth one is submitted with each projection view
  // (XrCompositionLayerDepthInfoKHR) so that the compositor can reproject with depth.
  void create_array_swapchain(XrSwapchainUsageFlags usage, VkFormat f, VkImageAspectFlags aspect, XrSwapchain& out,
                              std::vector<VkImage>& out_images, std::vector<ImageView>& out_views) {
    XrSwapchainCreateInfo sc{XR_TYPE_SWAPCHAIN_CREATE_INFO};
    sc.usageFlags = usage;
    sc.format = f;
    sc.sampleCount = 1;
    sc.width = extent.width;
    sc.height = extent.height;
    sc.faceCount = 1;
    sc.arraySize = 2;
    sc.mipCount = 1;
    check(xrCreateSwapchain(session, &sc, &out), "xrCreateSwapchain");
    uint32_t n = 0;
    check(xrEnumerateSwapchainImages(out, 0, &n, nullptr), "xrEnumerateSwapchainImages");
    std::vector<XrSwapchainImageVulkan2KHR> imgs(n, {XR_TYPE_SWAPCHAIN_IMAGE_VULKAN2_KHR});
    check(xrEnumerateSwapchainImages(out, n, &n, reinterpret_cast<XrSwapchainImageBaseHeader*>(imgs.data())),
          "xrEnumerateSwapchainImages");
    for (const auto& img : imgs) {
      out_images.push_back(img.image);
      VkImageViewCreateInfo vi{VK_STRUCTURE_TYPE_IMAGE_VIEW_CREATE_INFO};
      vi.image = img.image;
      vi.viewType = VK_IMAGE_VIEW_TYPE_2D_ARRAY;
      vi.format = f;
      vi.subresourceRange = {aspect, 0, 1, 0, 2};
      VkImageView v = VK_NULL_HANDLE;
      engine::check(vkCreateImageView(device->get(), &vi, nullptr, &v), "vkCreateImageView");
      out_views.emplace_back(device->get(), v);
    }
  }


  void create_actions() {
    check(xrStringToPath(instance, "/user/hand/left", &hand_paths[0]), "xrStringToPath");
    check(xrStringToPath(instance, "/user/hand/right", &hand_paths[1]), "xrStringToPath");
    XrActionSetCreateInfo si{XR_TYPE_ACTION_SET_CREATE_INFO};
    std::strcpy(si.actionSetName, "nnxr");
    std::strcpy(si.localizedActionSetName, "nnxr");
    check(xrCreateActionSet(instance, &si, &action_set), "xrCreateActionSet");
    for (const ActionDef& a : actions()) {
      XrActionCreateInfo ai{XR_TYPE_ACTION_CREATE_INFO};
      std::strncpy(ai.actionName, std::string(a.name).c_str(), XR_MAX_ACTION_NAME_SIZE - 1);
      std::strncpy(ai.localizedActionName, std::string(a.localized_name).c_str(), XR_MAX_LOCALIZED_ACTION_NAME_SIZE - 1);
      switch (a.type) {
        case ActionType::Float: ai.actionType = XR_ACTION_TYPE_FLOAT_INPUT; break;
        case ActionType::Boolean: ai.actionType = XR_ACTION_TYPE_BOOLEAN_INPUT; break;
        case ActionType::Vector2: ai.actionType = XR_ACTION_TYPE_VECTOR2F_INPUT; break;
        case ActionType::Pose: ai.actionType = XR_ACTION_TYPE_POSE_INPUT; break;
        case ActionType::Vibration: ai.actionType = XR_ACTION_TYPE_VIBRATION_OUTPUT; break;
      }
      ai.countSubactionPaths = 2;
      ai.subactionPaths = hand_paths.data();
      check(xrCreateAction(action_set, &ai, &xr_actions[static_cast<size_t>(a.id)]), "xrCreateAction");
    }
    int accepted = 0;
    for (const ProfileDef& p : profiles()) {
      XrPath profile_path = XR_NULL_PATH;
      check(xrStringToPath(instance, std::string(p.path).c_str(), &profile_path), "xrStringToPath");
      std::vector<XrActionSuggestedBinding> b;
      for (const BindingDef& d : p.bindings) {
        XrPath path = XR_NULL_PATH;
        check(xrStringToPath(instance, std::string(d.path).c_str(), &path), "xrStringToPath");
        b.push_back({xr_actions[static_cast<size_t>(d.action)], path});
      }
      XrInteractionProfileSuggestedBinding sb{XR_TYPE_INTERACTION_PROFILE_SUGGESTED_BINDING};
      sb.interactionProfile = profile_path;
      sb.countSuggestedBindings = static_cast<uint32_t>(b.size());
      sb.suggestedBindings = b.data();
      const XrResult r = xrSuggestInteractionProfileBindings(instance, &sb);
      if (XR_FAILED(r)) std::cerr << "nnxr: the OpenXR runtime rejects " << p.path << " (" << result_string(instance, r) << "); skipped\n";
      else ++accepted;
    }
    if (accepted == 0) std::cerr << "nnxr: no controller profile was accepted; controllers do nothing\n";
    XrSessionActionSetsAttachInfo at{XR_TYPE_SESSION_ACTION_SETS_ATTACH_INFO};
    at.countActionSets = 1;
    at.actionSets = &action_set;
    check(xrAttachSessionActionSets(session, &at), "xrAttachSessionActionSets");
    for (int h = 0; h < 2; ++h) {
      XrActionSpaceCreateInfo ac{XR_TYPE_ACTION_SPACE_CREATE_INFO};
      ac.subactionPath = hand_paths[size_t(h)];
      ac.poseInActionSpace.orientation.w = 1;
      ac.action = xr_actions[static_cast<size_t>(ActionId::GripPose)];
      check(xrCreateActionSpace(session, &ac, &grip_spaces[size_t(h)]), "xrCreateActionSpace");
      ac.action = xr_actions[static_cast<size_t>(ActionId::AimPose)];
      check(xrCreateActionSpace(session, &ac, &aim_spaces[size_t(h)]), "xrCreateActionSpace");
    }
  }

  // ---- events ---------------------------------------------------------------------------------

  void poll_events() {
    for (;;) {
      XrEventDataBuffer ev{XR_TYPE_EVENT_DATA_BUFFER};
      const XrResult r = xrPollEvent(instance, &ev);
      check(r, "xrPollEvent");
      if (r == XR_EVENT_UNAVAILABLE) return;
      if (ev.type == XR_TYPE_EVENT_DATA_SESSION_STATE_CHANGED) {
        const auto& e = reinterpret_cast<const XrEventDataSessionStateChanged&>(ev);
        session_state = e.state;
        states.push_back(state_name(e.state));
        switch (e.state) {
          case XR_SESSION_STATE_READY: {
            XrSessionBeginInfo bi{XR_TYPE_SESSION_BEGIN_INFO};
            bi.primaryViewConfigurationType = XR_VIEW_CONFIGURATION_TYPE_PRIMARY_STEREO;
            check(xrBeginSession(session, &bi), "xrBeginSession");
            running = true;
            break;
          }
          case XR_SESSION_STATE_STOPPING:
            check(xrEndSession(session), "xrEndSession");
            running = false;
            break;
          case XR_SESSION_STATE_EXITING: done = true; break;
          case XR_SESSION_STATE_LOSS_PENDING:
            std::cerr << "nnxr: the OpenXR session was lost (headset disconnected?); exiting\n";
            running = false;
            done = true;
            break;
          default: break;
        }
      } else if (ev.type == XR_TYPE_EVENT_DATA_INSTANCE_LOSS_PENDING) {
        std::cerr << "nnxr: the OpenXR runtime is going away; exiting\n";
        running = false;
        done = true;
      } else if (ev.type == XR_TYPE_EVENT_DATA_INTERACTION_PROFILE_CHANGED) {
        XrInteractionProfileState ps{XR_TYPE_INTERACTION_PROFILE_STATE};
        if (XR_SUCCEEDED(xrGetCurrentInteractionProfile(session, hand_paths[1], &ps)) && ps.interactionProfile != XR_NULL_PATH) {
          char buf[XR_MAX_PATH_LENGTH] = {};
          uint32_t len = 0;
          if (XR_SUCCEEDED(xrPathToString(instance, ps.interactionProfile, sizeof buf, &len, buf))) profile = buf;
        }
      }
    }
  }

  // ---- input ----------------------------------------------------------------------------------

  float float_state(ActionId id, int hand) {
    XrActionStateGetInfo gi{XR_TYPE_ACTION_STATE_GET_INFO};
    gi.action = xr_actions[static_cast<size_t>(id)];
    gi.subactionPath = hand_paths[size_t(hand)];
    XrActionStateFloat s{XR_TYPE_ACTION_STATE_FLOAT};
    check(xrGetActionStateFloat(session, &gi, &s), "xrGetActionStateFloat");
    return s.isActive ? s.currentState : 0.0f;
  }

  std::array<HandState, 2> read_hands(XrTime time) {
    XrActiveActionSet active{action_set, XR_NULL_PATH};
    XrActionsSyncInfo sync{XR_TYPE_ACTIONS_SYNC_INFO};
    sync.countActiveActionSets = 1;
    sync.activeActionSets = &active;
    const XrResult r = xrSyncActions(session, &sync);
    check(r, "xrSyncActions");
    std::array<HandState, 2> out{};
    if (r == XR_SESSION_NOT_FOCUSED) return out;
    for (int h = 0; h < 2; ++h) {
      HandState& hs = out[size_t(h)];
      XrSpaceLocation grip{XR_TYPE_SPACE_LOCATION}, aim{XR_TYPE_SPACE_LOCATION};
      check(xrLocateSpace(grip_spaces[size_t(h)], space, time, &grip), "xrLocateSpace");
      check(xrLocateSpace(aim_spaces[size_t(h)], space, time, &aim), "xrLocateSpace");
      constexpr XrSpaceLocationFlags valid = XR_SPACE_LOCATION_POSITION_VALID_BIT | XR_SPACE_LOCATION_ORIENTATION_VALID_BIT;
      hs.tracked = (grip.locationFlags & valid) == valid;
      hs.grip = {to_glm(grip.pose.position), to_glm(grip.pose.orientation)};
      hs.aim = (aim.locationFlags & valid) == valid ? Pose{to_glm(aim.pose.position), to_glm(aim.pose.orientation)} : hs.grip;
      hs.squeeze = float_state(ActionId::Grab, h);
      hs.trigger = float_state(ActionId::Select, h);
      XrActionStateGetInfo gi{XR_TYPE_ACTION_STATE_GET_INFO};
      gi.subactionPath = hand_paths[size_t(h)];
      gi.action = xr_actions[static_cast<size_t>(ActionId::Stick)];
      XrActionStateVector2f v{XR_TYPE_ACTION_STATE_VECTOR2F};
      check(xrGetActionStateVector2f(session, &gi, &v), "xrGetActionStateVector2f");
      if (v.isActive) hs.thumbstick = {v.currentState.x, v.currentState.y};
      gi.action = xr_actions[static_cast<size_t>(ActionId::Menu)];
      XrActionStateBoolean b{XR_TYPE_ACTION_STATE_BOOLEAN};
      check(xrGetActionStateBoolean(session, &gi, &b), "xrGetActionStateBoolean");
      hs.menu = b.isActive && b.currentState;
    }
    return out;
  }

  void haptic_tick(int hand) {
    XrHapticActionInfo hi{XR_TYPE_HAPTIC_ACTION_INFO};
    hi.action = xr_actions[static_cast<size_t>(ActionId::Haptic)];
    hi.subactionPath = hand_paths[size_t(hand)];
    XrHapticVibration v{XR_TYPE_HAPTIC_VIBRATION};
    v.duration = 20'000'000;  // 20 ms
    v.frequency = XR_FREQUENCY_UNSPECIFIED;
    v.amplitude = 0.5f;
    check(xrApplyHapticFeedback(session, &hi, reinterpret_cast<const XrHapticBaseHeader*>(&v)), "xrApplyHapticFeedback");
  }

  // The network in front of the user once its bounds are known: layer depth along −Z from 1 m
  // ahead, centred at 1.3 m height, scale 1.
  void place_network() {
    const glm::vec3 lo = interaction.bounds_min(), hi = interaction.bounds_max();
    const glm::vec3 c = 0.5f * (lo + hi);
    world = {};
    world.rotation = glm::angleAxis(glm::radians(90.0f), glm::vec3(0, 1, 0));  // network +X → world −Z
    world.translation = glm::vec3(0, 1.3f, -1.0f) - world.rotation * glm::vec3(lo.x, c.y, c.z);
    placed = true;
  }

  void apply_world() {
    engine::WorldTransform w;
    w.translation = world.translation;
    w.rotation = world.rotation;
    w.scale = world.scale;
    interaction.set_world(w);
  }

  void interact(XrTime time) {
    hands = read_hands(time);
    const double dt = last_time ? std::clamp(double(time - last_time) * 1e-9, 0.0, 0.1) : 0.0;
    last_time = time;
    const GestureEvents ev = gestures.update(hands, dt, world);
    if (ev.reset) place_network();
    apply_world();
    bool filter = false;
    if (ev.neuron_steps) filter |= interaction.step_neuron_threshold(ev.neuron_steps);
    if (ev.connection_steps) filter |= interaction.step_connection_threshold(ev.connection_steps);
    for (int h = 0; h < 2; ++h)
      if (ev.haptic_tick[size_t(h)]) haptic_tick(h);
    Command cmd;
    cmd.filter_changed = filter;
    if (ev.select_hand) {
      const Pose& aim = hands[size_t(*ev.select_hand)].aim;
      cmd.select = Ray{aim.position, glm::normalize(aim.orientation * glm::vec3(0, 0, -1))};
    }
    if (cmd.filter_changed || cmd.select) state->apply(cmd);
  }

  // ---- frames ---------------------------------------------------------------------------------

  void frame() {
    XrFrameWaitInfo wi{XR_TYPE_FRAME_WAIT_INFO};
    XrFrameState fs{XR_TYPE_FRAME_STATE};
    check(xrWaitFrame(session, &wi, &fs), "xrWaitFrame");
    const auto wall_start = std::chrono::steady_clock::now();
    const double cpu_start = thread_cpu_ms();
    XrFrameBeginInfo bi{XR_TYPE_FRAME_BEGIN_INFO};
    check(xrBeginFrame(session, &bi), "xrBeginFrame");
    const uint64_t before = state->scene_generation();
    state->take_in(1.0f);
    if (state->scene_generation() != before && !placed) place_network();
    interact(fs.predictedDisplayTime);

    std::array<XrCompositionLayerProjectionView, 2> pv{};
    std::array<XrCompositionLayerDepthInfoKHR, 2> di{};
    XrCompositionLayerProjection layer{XR_TYPE_COMPOSITION_LAYER_PROJECTION};
    const XrCompositionLayerBaseHeader* layers[] = {reinterpret_cast<const XrCompositionLayerBaseHeader*>(&layer)};
    uint32_t layer_count = 0;
    uint64_t drawn_generation = 0;
    if (fs.shouldRender) {
      XrViewLocateInfo li{XR_TYPE_VIEW_LOCATE_INFO};
      li.viewConfigurationType = XR_VIEW_CONFIGURATION_TYPE_PRIMARY_STEREO;
      li.displayTime = fs.predictedDisplayTime;
      li.space = space;
      XrViewState vs{XR_TYPE_VIEW_STATE};
      std::array<XrView, 2> xv{{{XR_TYPE_VIEW}, {XR_TYPE_VIEW}}};
      uint32_t n = 0;
      check(xrLocateViews(session, &li, &vs, 2, &n, xv.data()), "xrLocateViews");
      constexpr XrViewStateFlags valid = XR_VIEW_STATE_POSITION_VALID_BIT | XR_VIEW_STATE_ORIENTATION_VALID_BIT;
      if (n == 2 && (vs.viewStateFlags & valid) == valid) {
        drawn_generation = render(xv);
        for (uint32_t v = 0; v < 2; ++v) {
          pv[v] = {XR_TYPE_COMPOSITION_LAYER_PROJECTION_VIEW};
          pv[v].pose = xv[v].pose;
          pv[v].fov = xv[v].fov;
          pv[v].subImage.swapchain = swapchain;
          pv[v].subImage.imageRect = {{0, 0}, {int32_t(extent.width), int32_t(extent.height)}};
          pv[v].subImage.imageArrayIndex = v;
          if (depth_swapchain != XR_NULL_HANDLE) {
            di[v] = {XR_TYPE_COMPOSITION_LAYER_DEPTH_INFO_KHR};
            di[v].subImage = pv[v].subImage;
            di[v].subImage.swapchain = depth_swapchain;
            di[v].minDepth = 0.0f;
            di[v].maxDepth = 1.0f;
            di[v].nearZ = kNear;  // projection(): depth 0 at kNear, 1 at kFar
            di[v].farZ = kFar;
            pv[v].next = &di[v];
          }
        }
        layer.space = space;
        layer.viewCount = 2;
        layer.views = pv.data();
        layer_count = 1;
      }
    }
    XrFrameEndInfo ei{XR_TYPE_FRAME_END_INFO};
    ei.displayTime = fs.predictedDisplayTime;
    ei.environmentBlendMode = XR_ENVIRONMENT_BLEND_MODE_OPAQUE;
    ei.layerCount = layer_count;
    ei.layers = layer_count ? layers : nullptr;
    check(xrEndFrame(session, &ei), "xrEndFrame");
    if (layer_count) {
      state->frame_done(thread_cpu_ms() - cpu_start, drawn_generation);
      if (state->settled()) wait_to_end_ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - wall_start).count());
    }
    ++frame_index;
  }

  // Renders both eyes into the acquired swapchain image; returns the scene generation drawn.
  uint64_t render(const std::array<XrView, 2>& xv) {
    uint32_t image = 0;
    XrSwapchainImageAcquireInfo ai{XR_TYPE_SWAPCHAIN_IMAGE_ACQUIRE_INFO};
    check(xrAcquireSwapchainImage(swapchain, &ai, &image), "xrAcquireSwapchainImage");
    XrSwapchainImageWaitInfo wi{XR_TYPE_SWAPCHAIN_IMAGE_WAIT_INFO};
    wi.timeout = XR_INFINITE_DURATION;
    check(xrWaitSwapchainImage(swapchain, &wi), "xrWaitSwapchainImage");
    uint32_t depth_image = 0;
    if (depth_swapchain != XR_NULL_HANDLE) {
      check(xrAcquireSwapchainImage(depth_swapchain, &ai, &depth_image), "xrAcquireSwapchainImage (depth)");
      check(xrWaitSwapchainImage(depth_swapchain, &wi), "xrWaitSwapchainImage (depth)");
    }

    Slot& slot = slots[frame_index % kFramesInFlight];
    VkFence fence = slot.done.get();
    engine::check(vkWaitForFences(device->get(), 1, &fence, VK_TRUE, UINT64_MAX), "vkWaitForFences");
    if (slot.serial) scene->retire(slot.serial);
    slot.serial = ++serial;
    const SceneFrame scene_frame = scene->acquire(slot.serial);

    FrameParams params = state->frame_params(1.0f);
    for (size_t v = 0; v < 2; ++v) {
      params.view[v] = view_of(xv[v].pose);
      params.projection[v] = projection(xv[v].fov);
    }
    overlay.clear();
    FeedbackInput feedback{.hands = hands,
                           .neuron_threshold = interaction.thresholds().neuron(),
                           .connection_threshold = interaction.thresholds().connection(),
                           .selection = interaction.selection() ? &*interaction.selection() : nullptr};
    feedback.head.position = 0.5f * (to_glm(xv[0].pose.position) + to_glm(xv[1].pose.position));
    feedback.head.orientation = to_glm(xv[0].pose.orientation);
    build_feedback(feedback, overlay);
    params.overlay_lines = overlay.lines();
    params.overlay_triangles = overlay.triangles();
    const float extent_m = interaction.extent() * interaction.world().scale;
    params.fog_start = std::max(4.0f, extent_m);
    params.fog_end = std::max(40.0f, extent_m * 4);

    VkCommandBuffer cmd = slot.cmd;
    engine::check(vkResetCommandBuffer(cmd, 0), "vkResetCommandBuffer");
    VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    engine::check(vkBeginCommandBuffer(cmd, &begin), "vkBeginCommandBuffer");
    transition_image(cmd, images[image], VK_IMAGE_ASPECT_COLOR_BIT, VK_IMAGE_LAYOUT_UNDEFINED, VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL);
    const bool xr_depth = depth_swapchain != XR_NULL_HANDLE;
    const VkImage depth_vk = xr_depth ? depth_images[depth_image] : depth.image.get();
    transition_image(cmd, depth_vk, VK_IMAGE_ASPECT_DEPTH_BIT, VK_IMAGE_LAYOUT_UNDEFINED, VK_IMAGE_LAYOUT_DEPTH_ATTACHMENT_OPTIMAL);
    const RenderTarget target{views[image].get(), xr_depth ? depth_views[depth_image].get() : depth.view.get(), extent,
                              /*store_depth=*/xr_depth};
    renderer->record(cmd, target, scene_frame, params, static_cast<uint32_t>(frame_index % kFramesInFlight));
    // The left eye to the desktop mirror, when a window image is free (never waits for one).
    std::optional<Mirror::Blit> blit;
    if (mirror) {
      const float bg[3] = {params.background.r, params.background.g, params.background.b};
      blit = mirror->record(cmd, images[image], 0, extent, static_cast<uint32_t>(frame_index % kFramesInFlight), bg);
    }
    // The runtime takes depth swapchain images back in DEPTH_STENCIL_ATTACHMENT_OPTIMAL.
    if (xr_depth)
      transition_image(cmd, depth_vk, VK_IMAGE_ASPECT_DEPTH_BIT, VK_IMAGE_LAYOUT_DEPTH_ATTACHMENT_OPTIMAL,
                       VK_IMAGE_LAYOUT_DEPTH_STENCIL_ATTACHMENT_OPTIMAL);
    engine::check(vkEndCommandBuffer(cmd), "vkEndCommandBuffer");
    engine::check(vkResetFences(device->get(), 1, &fence), "vkResetFences");
    VkSubmitInfo submit{VK_STRUCTURE_TYPE_SUBMIT_INFO};
    submit.commandBufferCount = 1;
    submit.pCommandBuffers = &cmd;
    const VkPipelineStageFlags wait_stage = VK_PIPELINE_STAGE_TRANSFER_BIT;
    if (blit) {
      submit.waitSemaphoreCount = 1;
      submit.pWaitSemaphores = &blit->wait;
      submit.pWaitDstStageMask = &wait_stage;
      submit.signalSemaphoreCount = 1;
      submit.pSignalSemaphores = &blit->signal;
    }
    {
      std::lock_guard lock(device->queue_mutex());
      engine::check(vkQueueSubmit(device->queue(), 1, &submit, fence), "vkQueueSubmit");
      if (blit) mirror->present(*blit);
    }
    XrSwapchainImageReleaseInfo ri{XR_TYPE_SWAPCHAIN_IMAGE_RELEASE_INFO};
    check(xrReleaseSwapchainImage(swapchain, &ri), "xrReleaseSwapchainImage");
    if (xr_depth) check(xrReleaseSwapchainImage(depth_swapchain, &ri), "xrReleaseSwapchainImage (depth)");
    return scene_frame.generation;
  }

  void run() {
    bool asked_exit = false;
    while (!done) {
      poll_events();
      if (done) break;
      // The mirror's window events (and its rebuild after a resize) come outside the frame timing.
      if (mirror && !mirror->poll() && !asked_exit && running) {
        check(xrRequestExitSession(session), "xrRequestExitSession");  // the mirror window was closed
        asked_exit = true;
      }
      if (!running) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
        continue;
      }
      frame();
      if (options.max_frames && !asked_exit && state->settled_frames() >= options.max_frames) {
        check(xrRequestExitSession(session), "xrRequestExitSession");
        asked_exit = true;
      }
    }
  }
};

XrViewer::XrViewer(const engine::ViewerOptions& options) : impl_(std::make_unique<Impl>(options)) {}
XrViewer::~XrViewer() = default;

void XrViewer::load(engine::ModelSource model, engine::InputSource input) { impl_->worker->load(std::move(model), std::move(input)); }
void XrViewer::run() { impl_->run(); }

XrStats XrViewer::stats() const {
  XrStats s;
  s.view = impl_->state->stats();
  s.view.validation_errors = impl_->vk_instance->validation_errors();
  s.session_states = impl_->states;
  s.runtime = impl_->runtime;
  s.space = impl_->space_name;
  s.profile = impl_->profile;
  s.depth_layer = impl_->depth_swapchain != XR_NULL_HANDLE;
  s.mirror = impl_->mirror != nullptr;
  if (impl_->mirror) {
    s.mirror_presented = impl_->mirror->presented();
    s.mirror_skipped = impl_->mirror->skipped();
  }
  std::vector<double> t = impl_->wait_to_end_ms;
  std::sort(t.begin(), t.end());
  if (!t.empty()) {
    s.wait_to_end_median_ms = t[t.size() / 2];
    s.wait_to_end_p99_ms = t[std::min(t.size() - 1, t.size() * 99 / 100)];
  }
  return s;
}

}  // namespace nnxr::xr
