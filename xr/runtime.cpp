#include "xr/runtime.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <iostream>

#include "engine/vk.h"
#include "xr/session.h"

namespace nnxr::xr {

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
  if (XR_FAILED(xrResultToString(instance, r, buf))) return "XrResult " + std::to_string(r);
  return buf;
}

XrResult check(XrInstance instance, XrResult r, const char* call) {
  if (r == XR_ERROR_SESSION_LOST) throw SessionLostError(std::string("OpenXR: ") + call + ": XR_ERROR_SESSION_LOST");
  if (XR_FAILED(r)) throw std::runtime_error(std::string("OpenXR: ") + call + " failed: " + result_string(instance, r));
  return r;
}

namespace {

template <class F>
F proc(XrInstance instance, const char* name) {
  PFN_xrVoidFunction f = nullptr;
  if (XR_FAILED(xrGetInstanceProcAddr(instance, name, &f)) || !f) throw std::runtime_error(std::string("OpenXR: ") + name + " is not available");
  return reinterpret_cast<F>(f);
}

bool has_extension(const std::vector<XrExtensionProperties>& props, const char* name) {
  return std::any_of(props.begin(), props.end(), [&](const XrExtensionProperties& p) { return std::strcmp(p.extensionName, name) == 0; });
}

}  // namespace

Runtime::Runtime() {
  // The loader prints its own errors on stderr (e.g. when there is no runtime); nnxr reports
  // them in one line. XR_LOADER_DEBUG set by the user wins.
  setenv("XR_LOADER_DEBUG", "none", 0);
  uint32_t n = 0;
  XrResult r = xrEnumerateInstanceExtensionProperties(nullptr, 0, &n, nullptr);
  if (XR_FAILED(r))
    throw NoHeadsetError("no OpenXR runtime (" + result_string(XR_NULL_HANDLE, r) +
                         "; set XR_RUNTIME_JSON or install one such as Monado or SteamVR)");
  std::vector<XrExtensionProperties> props(n, {XR_TYPE_EXTENSION_PROPERTIES});
  xr::check(XR_NULL_HANDLE, xrEnumerateInstanceExtensionProperties(nullptr, n, &n, props.data()),
            "xrEnumerateInstanceExtensionProperties");
  props.resize(n);
  if (!has_extension(props, XR_KHR_VULKAN_ENABLE2_EXTENSION_NAME))
    throw NoHeadsetError("the OpenXR runtime does not offer " XR_KHR_VULKAN_ENABLE2_EXTENSION_NAME);
  depth_extension_ = has_extension(props, XR_KHR_COMPOSITION_LAYER_DEPTH_EXTENSION_NAME);
  if (!depth_extension_)
    std::cerr << "nnxr: the OpenXR runtime does not offer " XR_KHR_COMPOSITION_LAYER_DEPTH_EXTENSION_NAME
                 "; depth stays private to nnxr\n";
  const char* extensions[] = {XR_KHR_VULKAN_ENABLE2_EXTENSION_NAME, XR_KHR_COMPOSITION_LAYER_DEPTH_EXTENSION_NAME};
  XrInstanceCreateInfo ci{XR_TYPE_INSTANCE_CREATE_INFO};
  std::strncpy(ci.applicationInfo.applicationName, "nnxr", XR_MAX_APPLICATION_NAME_SIZE - 1);
  ci.applicationInfo.applicationVersion = 1;
  std::strncpy(ci.applicationInfo.engineName, "nnxr", XR_MAX_ENGINE_NAME_SIZE - 1);
  ci.applicationInfo.apiVersion = XR_MAKE_VERSION(1, 0, 0);
  ci.enabledExtensionCount = depth_extension_ ? 2 : 1;
  ci.enabledExtensionNames = extensions;
  r = xrCreateInstance(&ci, instance_.out());
  if (XR_FAILED(r))
    throw NoHeadsetError("the OpenXR runtime could not start (xrCreateInstance: " + result_string(XR_NULL_HANDLE, r) + ")");
  // From here on a throw destroys the instance with this object's members.
  XrInstanceProperties ip{XR_TYPE_INSTANCE_PROPERTIES};
  check(xrGetInstanceProperties(get(), &ip), "xrGetInstanceProperties");
  name_ = std::string(ip.runtimeName) + " " + std::to_string(XR_VERSION_MAJOR(ip.runtimeVersion)) + "." +
          std::to_string(XR_VERSION_MINOR(ip.runtimeVersion)) + "." + std::to_string(XR_VERSION_PATCH(ip.runtimeVersion));
}

XrSystemId Runtime::find_system() const {
  XrSystemGetInfo si{XR_TYPE_SYSTEM_GET_INFO};
  si.formFactor = XR_FORM_FACTOR_HEAD_MOUNTED_DISPLAY;
  XrSystemId system = XR_NULL_SYSTEM_ID;
  const XrResult r = xrGetSystem(get(), &si, &system);
  if (r == XR_ERROR_FORM_FACTOR_UNAVAILABLE || r == XR_ERROR_FORM_FACTOR_UNSUPPORTED) return XR_NULL_SYSTEM_ID;
  check(r, "xrGetSystem");
  return system;
}

VulkanObjects Runtime::create_vulkan(XrSystemId system, const engine::InstanceOptions& io, const engine::DeviceOptions& dopt) const {
  auto get_requirements = proc<PFN_xrGetVulkanGraphicsRequirements2KHR>(get(), "xrGetVulkanGraphicsRequirements2KHR");
  auto create_vk_instance = proc<PFN_xrCreateVulkanInstanceKHR>(get(), "xrCreateVulkanInstanceKHR");
  auto get_device = proc<PFN_xrGetVulkanGraphicsDevice2KHR>(get(), "xrGetVulkanGraphicsDevice2KHR");
  XrGraphicsRequirementsVulkan2KHR req{XR_TYPE_GRAPHICS_REQUIREMENTS_VULKAN2_KHR};
  check(get_requirements(get(), system, &req), "xrGetVulkanGraphicsRequirements2KHR");

  VulkanObjects out;
  const auto ici = engine::instance_create_info(io);
  XrVulkanInstanceCreateInfoKHR xi{XR_TYPE_VULKAN_INSTANCE_CREATE_INFO_KHR};
  xi.systemId = system;
  xi.pfnGetInstanceProcAddr = &vkGetInstanceProcAddr;
  xi.vulkanCreateInfo = &ici->info;
  VkInstance vki = VK_NULL_HANDLE;
  VkResult vr = VK_SUCCESS;
  check(create_vk_instance(get(), &xi, &vki, &vr), "xrCreateVulkanInstanceKHR");
  engine::check(vr, "vkCreateInstance (through OpenXR)");
  out.instance = std::make_unique<engine::Instance>(engine::Instance::adopt(vki, io, /*owned=*/true));

  XrVulkanGraphicsDeviceGetInfoKHR gi{XR_TYPE_VULKAN_GRAPHICS_DEVICE_GET_INFO_KHR};
  gi.systemId = system;
  gi.vulkanInstance = vki;
  VkPhysicalDevice physical = VK_NULL_HANDLE;
  check(get_device(get(), &gi, &physical), "xrGetVulkanGraphicsDevice2KHR");
  out.device = create_device(system, *out.instance, physical, dopt);
  return out;
}

std::unique_ptr<engine::Device> Runtime::create_device(XrSystemId system, const engine::Instance& vk_instance, VkPhysicalDevice physical,
                                                       const engine::DeviceOptions& dopt) const {
  auto create_vk_device = proc<PFN_xrCreateVulkanDeviceKHR>(get(), "xrCreateVulkanDeviceKHR");
  const auto dci = engine::device_create_info(vk_instance, physical, dopt);
  XrVulkanDeviceCreateInfoKHR xd{XR_TYPE_VULKAN_DEVICE_CREATE_INFO_KHR};
  xd.systemId = system;
  xd.pfnGetInstanceProcAddr = &vkGetInstanceProcAddr;
  xd.vulkanPhysicalDevice = physical;
  xd.vulkanCreateInfo = &dci->info;
  VkDevice vkd = VK_NULL_HANDLE;
  VkResult vr = VK_SUCCESS;
  check(create_vk_device(get(), &xd, &vkd, &vr), "xrCreateVulkanDeviceKHR");
  engine::check(vr, "vkCreateDevice (through OpenXR)");
  return engine::Device::adopt(vk_instance, physical, vkd, dci->queue_family, /*owned=*/true);
}

VkPhysicalDevice Runtime::prepare_session(XrSystemId system, const engine::Instance& vk_instance) const {
  auto get_requirements = proc<PFN_xrGetVulkanGraphicsRequirements2KHR>(get(), "xrGetVulkanGraphicsRequirements2KHR");
  auto get_device = proc<PFN_xrGetVulkanGraphicsDevice2KHR>(get(), "xrGetVulkanGraphicsDevice2KHR");
  XrGraphicsRequirementsVulkan2KHR req{XR_TYPE_GRAPHICS_REQUIREMENTS_VULKAN2_KHR};
  check(get_requirements(get(), system, &req), "xrGetVulkanGraphicsRequirements2KHR");
  XrVulkanGraphicsDeviceGetInfoKHR gi{XR_TYPE_VULKAN_GRAPHICS_DEVICE_GET_INFO_KHR};
  gi.systemId = system;
  gi.vulkanInstance = vk_instance.get();
  VkPhysicalDevice physical = VK_NULL_HANDLE;
  check(get_device(get(), &gi, &physical), "xrGetVulkanGraphicsDevice2KHR");
  return physical;
}

}  // namespace nnxr::xr
