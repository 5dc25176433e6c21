// The runtime's only exported symbol (loader negotiation) and xrGetInstanceProcAddr.
#include "tests/xrsim/runtime/loader_abi.h"
#include "tests/xrsim/runtime/state.h"

#include <cstring>

namespace xrsim::api {
namespace {

struct Entry {
  const char* name;
  PFN_xrVoidFunction function;
  bool vulkan2;  // needs XR_KHR_vulkan_enable2 enabled
};

const Entry kEntries[] = {
#define XRSIM_CORE(name) {"xr" #name, reinterpret_cast<PFN_xrVoidFunction>(&name), false},
#define XRSIM_VK2(name) {"xr" #name, reinterpret_cast<PFN_xrVoidFunction>(&name), true},
    XRSIM_CORE_FUNCTIONS(XRSIM_CORE) XRSIM_VULKAN2_FUNCTIONS(XRSIM_VK2)
#undef XRSIM_CORE
#undef XRSIM_VK2
        {"xrGetInstanceProcAddr", reinterpret_cast<PFN_xrVoidFunction>(&GetInstanceProcAddr), false},
};

}  // namespace

// Not guarded(): the loader asks for every function it knows, so FUNCTION_UNSUPPORTED here is
// routine and is not recorded as an error.
XrResult XRAPI_CALL GetInstanceProcAddr(XrInstance instance, const char* name, PFN_xrVoidFunction* function) {
  std::lock_guard<std::mutex> lock(Registry::get().mutex);
  {
    if (name == nullptr || function == nullptr) return XR_ERROR_VALIDATION_FAILURE;
    *function = nullptr;
    if (instance == XR_NULL_HANDLE) {
      // Only the functions that need no instance can be had without one.
      for (const char* allowed : {"xrEnumerateInstanceExtensionProperties", "xrCreateInstance"})
        if (std::strcmp(name, allowed) == 0)
          for (const Entry& e : kEntries)
            if (std::strcmp(e.name, name) == 0) {
              *function = e.function;
              return XR_SUCCESS;
            }
      if (std::strcmp(name, "xrEnumerateApiLayerProperties") == 0) return XR_ERROR_FUNCTION_UNSUPPORTED;
      return XR_ERROR_HANDLE_INVALID;
    }
    Instance* inst = find(Registry::get().instances, instance);
    if (inst == nullptr) return XR_ERROR_HANDLE_INVALID;
    for (const Entry& e : kEntries) {
      if (std::strcmp(e.name, name) != 0) continue;
      if (e.vulkan2 && !inst->ext_vulkan2) return XR_ERROR_FUNCTION_UNSUPPORTED;
      *function = e.function;
      return XR_SUCCESS;
    }
    return XR_ERROR_FUNCTION_UNSUPPORTED;
  }
}

}  // namespace xrsim::api

extern "C" __attribute__((visibility("default"))) XrResult XRAPI_CALL
xrNegotiateLoaderRuntimeInterface(const XrNegotiateLoaderInfo* loader_info, XrNegotiateRuntimeRequest* request) {
  if (loader_info == nullptr || request == nullptr ||
      loader_info->structType != XR_LOADER_INTERFACE_STRUCT_LOADER_INFO ||
      loader_info->structVersion != kXrLoaderInfoStructVersion ||
      loader_info->structSize != sizeof(XrNegotiateLoaderInfo) ||
      request->structType != XR_LOADER_INTERFACE_STRUCT_RUNTIME_REQUEST ||
      request->structVersion != kXrRuntimeInfoStructVersion || request->structSize != sizeof(XrNegotiateRuntimeRequest))
    return XR_ERROR_INITIALIZATION_FAILED;
  if (loader_info->minInterfaceVersion > kXrCurrentLoaderRuntimeVersion ||
      loader_info->maxInterfaceVersion < kXrCurrentLoaderRuntimeVersion)
    return XR_ERROR_INITIALIZATION_FAILED;
  // The runtime implements API 1.0.
  if (XR_VERSION_MAJOR(loader_info->minApiVersion) > 1 || XR_VERSION_MAJOR(loader_info->maxApiVersion) < 1)
    return XR_ERROR_INITIALIZATION_FAILED;
  request->runtimeInterfaceVersion = kXrCurrentLoaderRuntimeVersion;
  request->runtimeApiVersion = XR_CURRENT_API_VERSION;
  request->getInstanceProcAddr = &xrsim::api::GetInstanceProcAddr;
  return XR_SUCCESS;
}
