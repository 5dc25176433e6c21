// XR_KHR_vulkan_enable2: the runtime creates the app's VkInstance and VkDevice from the app's create
// infos (it needs no extension of its own) and picks the physical device.
#include "tests/xrsim/runtime/state.h"

#include <algorithm>
#include <vector>

namespace xrsim::api {
namespace {

XrResult check_instance(Instance*& inst, XrInstance instance, XrSystemId system) {
  inst = find(Registry::get().instances, instance);
  if (inst == nullptr) return XR_ERROR_HANDLE_INVALID;
  if (!inst->ext_vulkan2) return XR_ERROR_FUNCTION_UNSUPPORTED;
  if (system != kSystemId) return XR_ERROR_SYSTEM_INVALID;
  return XR_SUCCESS;
}

}  // namespace

XrResult GetVulkanGraphicsRequirements2KHR(XrInstance instance, XrSystemId system,
                                           XrGraphicsRequirementsVulkan2KHR* requirements) {
  return guarded("xrGetVulkanGraphicsRequirements2KHR", [&]() -> XrResult {
    Instance* inst = nullptr;
    if (XrResult r = check_instance(inst, instance, system); XR_FAILED(r)) return r;
    if (requirements == nullptr || requirements->type != XR_TYPE_GRAPHICS_REQUIREMENTS_VULKAN2_KHR)
      return XR_ERROR_VALIDATION_FAILURE;
    requirements->minApiVersionSupported = XR_MAKE_VERSION(1, 0, 0);
    requirements->maxApiVersionSupported = XR_MAKE_VERSION(1, 3, 0);
    inst->graphics_requirements_queried = true;
    return XR_SUCCESS;
  });
}

XrResult CreateVulkanInstanceKHR(XrInstance instance, const XrVulkanInstanceCreateInfoKHR* info,
                                 VkInstance* vk_instance, VkResult* vk_result) {
  return guarded("xrCreateVulkanInstanceKHR", [&]() -> XrResult {
    Instance* inst = nullptr;
    if (info == nullptr || info->type != XR_TYPE_VULKAN_INSTANCE_CREATE_INFO_KHR) return XR_ERROR_VALIDATION_FAILURE;
    if (XrResult r = check_instance(inst, instance, info->systemId); XR_FAILED(r)) return r;
    if (vk_instance == nullptr || vk_result == nullptr || info->createFlags != 0 ||
        info->pfnGetInstanceProcAddr == nullptr || info->vulkanCreateInfo == nullptr)
      return XR_ERROR_VALIDATION_FAILURE;
    if (!inst->graphics_requirements_queried) return XR_ERROR_GRAPHICS_REQUIREMENTS_CALL_MISSING;
    auto create = reinterpret_cast<PFN_vkCreateInstance>(info->pfnGetInstanceProcAddr(VK_NULL_HANDLE, "vkCreateInstance"));
    if (create == nullptr) return XR_ERROR_RUNTIME_FAILURE;
    *vk_result = create(info->vulkanCreateInfo, info->vulkanAllocator, vk_instance);
    return XR_SUCCESS;
  });
}

XrResult GetVulkanGraphicsDevice2KHR(XrInstance instance, const XrVulkanGraphicsDeviceGetInfoKHR* info,
                                     VkPhysicalDevice* device) {
  return guarded("xrGetVulkanGraphicsDevice2KHR", [&]() -> XrResult {
    Instance* inst = nullptr;
    if (info == nullptr || info->type != XR_TYPE_VULKAN_GRAPHICS_DEVICE_GET_INFO_KHR) return XR_ERROR_VALIDATION_FAILURE;
    if (XrResult r = check_instance(inst, instance, info->systemId); XR_FAILED(r)) return r;
    if (device == nullptr || info->vulkanInstance == VK_NULL_HANDLE) return XR_ERROR_VALIDATION_FAILURE;
    if (!inst->graphics_requirements_queried) return XR_ERROR_GRAPHICS_REQUIREMENTS_CALL_MISSING;
    uint32_t count = 0;
    if (vkEnumeratePhysicalDevices(info->vulkanInstance, &count, nullptr) != VK_SUCCESS || count == 0)
      return XR_ERROR_RUNTIME_FAILURE;
    std::vector<VkPhysicalDevice> devices(count);
    if (vkEnumeratePhysicalDevices(info->vulkanInstance, &count, devices.data()) < 0) return XR_ERROR_RUNTIME_FAILURE;
    // Prefer a CPU device (lavapipe): tests must not depend on which GPU a machine has.
    VkPhysicalDevice chosen = devices[0];
    // After a scripted move to another GPU: the first CPU device after the one named before.
    const bool move = inst->gpu_switch_pending && inst->vk_instance == info->vulkanInstance && inst->vk_physical != VK_NULL_HANDLE;
    const auto was = std::find(devices.begin(), devices.end(), inst->vk_physical);
    const size_t start = move && was != devices.end() ? static_cast<size_t>(was - devices.begin()) + 1 : 0;
    for (size_t k = 0; k < devices.size(); ++k) {
      VkPhysicalDevice d = devices[(start + k) % devices.size()];
      VkPhysicalDeviceProperties p;
      vkGetPhysicalDeviceProperties(d, &p);
      if (p.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU) {
        chosen = d;
        break;
      }
    }
    inst->gpu_switch_pending = false;
    inst->vk_instance = info->vulkanInstance;
    inst->vk_physical = chosen;
    *device = chosen;
    return XR_SUCCESS;
  });
}

XrResult CreateVulkanDeviceKHR(XrInstance instance, const XrVulkanDeviceCreateInfoKHR* info, VkDevice* vk_device,
                               VkResult* vk_result) {
  return guarded("xrCreateVulkanDeviceKHR", [&]() -> XrResult {
    Instance* inst = nullptr;
    if (info == nullptr || info->type != XR_TYPE_VULKAN_DEVICE_CREATE_INFO_KHR) return XR_ERROR_VALIDATION_FAILURE;
    if (XrResult r = check_instance(inst, instance, info->systemId); XR_FAILED(r)) return r;
    if (vk_device == nullptr || vk_result == nullptr || info->createFlags != 0 ||
        info->pfnGetInstanceProcAddr == nullptr || info->vulkanCreateInfo == nullptr)
      return XR_ERROR_VALIDATION_FAILURE;
    if (!inst->graphics_requirements_queried) return XR_ERROR_GRAPHICS_REQUIREMENTS_CALL_MISSING;
    if (inst->vk_physical == VK_NULL_HANDLE || info->vulkanPhysicalDevice != inst->vk_physical)
      return XR_ERROR_GRAPHICS_DEVICE_INVALID;
    auto create = reinterpret_cast<PFN_vkCreateDevice>(info->pfnGetInstanceProcAddr(inst->vk_instance, "vkCreateDevice"));
    if (create == nullptr) return XR_ERROR_RUNTIME_FAILURE;
    *vk_result = create(info->vulkanPhysicalDevice, info->vulkanCreateInfo, info->vulkanAllocator, vk_device);
    return XR_SUCCESS;
  });
}

}  // namespace xrsim::api
