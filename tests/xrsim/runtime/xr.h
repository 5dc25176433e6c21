// The OpenXR and Vulkan headers as the runtime sees them: no xr* prototypes (the runtime's entry
// points must never bind to the loader's exported symbols), Vulkan platform types on.
#pragma once

#include <vulkan/vulkan.h>

#define XR_NO_PROTOTYPES 1
#define XR_USE_GRAPHICS_API_VULKAN 1
#include <openxr/openxr.h>
#include <openxr/openxr_platform.h>
#include <openxr/openxr_reflection.h>
