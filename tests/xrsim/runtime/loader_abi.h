// The loader <-> runtime negotiation interface of the OpenXR loader specification ("Runtime
// Interface Negotiation"). Debian's libopenxr-dev does not install the SDK's loader_interfaces.h,
// so the structures the loader passes to xrNegotiateLoaderRuntimeInterface are declared here with
// the layout the specification fixes. Only the runtime side is declared.
#pragma once

#include <openxr/openxr.h>

#include <cstddef>
#include <cstdint>

extern "C" {

enum XrLoaderInterfaceStructs {
  XR_LOADER_INTERFACE_STRUCT_UNINTIALIZED = 0,
  XR_LOADER_INTERFACE_STRUCT_LOADER_INFO,
  XR_LOADER_INTERFACE_STRUCT_API_LAYER_REQUEST,
  XR_LOADER_INTERFACE_STRUCT_RUNTIME_REQUEST,
  XR_LOADER_INTERFACE_STRUCT_API_LAYER_CREATE_INFO,
  XR_LOADER_INTERFACE_STRUCT_API_LAYER_NEXT_INFO,
};

constexpr uint32_t kXrLoaderInfoStructVersion = 1;
constexpr uint32_t kXrRuntimeInfoStructVersion = 1;
constexpr uint32_t kXrCurrentLoaderRuntimeVersion = 1;

struct XrNegotiateLoaderInfo {
  XrLoaderInterfaceStructs structType;  // XR_LOADER_INTERFACE_STRUCT_LOADER_INFO
  uint32_t structVersion;
  size_t structSize;
  uint32_t minInterfaceVersion;
  uint32_t maxInterfaceVersion;
  XrVersion minApiVersion;
  XrVersion maxApiVersion;
};

struct XrNegotiateRuntimeRequest {
  XrLoaderInterfaceStructs structType;  // XR_LOADER_INTERFACE_STRUCT_RUNTIME_REQUEST
  uint32_t structVersion;
  size_t structSize;
  uint32_t runtimeInterfaceVersion;
  XrVersion runtimeApiVersion;
  PFN_xrGetInstanceProcAddr getInstanceProcAddr;
};

}  // extern "C"
