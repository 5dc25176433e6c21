// The OpenXR instance and the Vulkan bootstrap through XR_KHR_vulkan_enable2 (internal to xr/).
//
//   Runtime rt;                                  // throws NoHeadsetError: no runtime, no Vulkan 2
//   XrSystemId sys = rt.find_system();           // XR_NULL_SYSTEM_ID: no headset right now
//   auto [vki, dev] = rt.create_vulkan(sys, …);  // the runtime creates them, the engine adopts them
//   VkPhysicalDevice gpu = rt.prepare_session(sys, *vki);  // before each xrCreateSession (also after a loss)
//   if (gpu != dev->physical()) dev = rt.create_device(sys, *vki, gpu, …);  // the headset moved GPUs
//
// The runtime creates the Vulkan instance and device from the engine's create-infos
// (engine/device.h). find_system() is what the viewer polls after a session loss until the
// headset is back (OpenXR: xrGetSystem fails with XR_ERROR_FORM_FACTOR_UNAVAILABLE meanwhile).
//
// OpenXR functions used here: xrEnumerateInstanceExtensionProperties, xrCreateInstance,
// xrGetInstanceProperties, xrGetSystem, xrGetInstanceProcAddr (xrGetVulkanGraphicsRequirements2KHR,
// xrCreateVulkanInstanceKHR, xrGetVulkanGraphicsDevice2KHR, xrCreateVulkanDeviceKHR),
// xrResultToString, xrDestroyInstance.
//
// Ownership: a Runtime owns its XrInstance; destroy it after every session object and before the
// Vulkan device and instance it created. One thread.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "engine/device.h"
#include "xr/handles.h"

namespace nnxr::xr {

struct VulkanObjects {
  std::unique_ptr<engine::Instance> instance;
  std::unique_ptr<engine::Device> device;
};

class Runtime {
 public:
  // Throws NoHeadsetError (xr/session.h) when there is no runtime or it cannot start.
  Runtime();

  XrInstance get() const { return instance_.get(); }
  const std::string& name() const { return name_; }  // runtime name and version
  bool depth_extension() const { return depth_extension_; }  // XR_KHR_composition_layer_depth on

  // The head-mounted display's system, or XR_NULL_SYSTEM_ID when the runtime has none right now
  // (XR_ERROR_FORM_FACTOR_UNAVAILABLE / _UNSUPPORTED); other failures throw.
  XrSystemId find_system() const;

  VulkanObjects create_vulkan(XrSystemId system, const engine::InstanceOptions& instance_options,
                              const engine::DeviceOptions& device_options) const;
  // A device on `physical` (the one the system names) for the existing Vulkan instance, created
  // by the runtime: the viewer's device when the headset comes back on another GPU.
  std::unique_ptr<engine::Device> create_device(XrSystemId system, const engine::Instance& vk_instance, VkPhysicalDevice physical,
                                                const engine::DeviceOptions& device_options) const;
  // Asks for the graphics requirements (required before xrCreateSession) and returns the
  // physical device the system drives now (after a loss it may not be the viewer's device).
  VkPhysicalDevice prepare_session(XrSystemId system, const engine::Instance& vk_instance) const;

  // check() with this instance's result names.
  XrResult check(XrResult result, const char* call) const { return xr::check(get(), result, call); }

 private:
  InstanceHandle instance_;
  std::string name_;
  bool depth_extension_ = false;
};

}  // namespace nnxr::xr
