// OpenXR error reporting and move-only owners for OpenXR handles (internal to xr/).
//
// Every OpenXR call whose XrResult is a failure becomes an exception naming the call and the
// result (check()): XR_ERROR_SESSION_LOST becomes SessionLostError, which the frame loop handles
// as the loss of the session (xr/session.cpp); everything else is a std::runtime_error. Owners
// destroy their handle in the destructor, as engine/vk.h's do for Vulkan: a class holding several
// declares them in creation order, so that members destroy in reverse (children before parents),
// also when its constructor throws part-way. Owners are plain values: not thread-safe.
#pragma once

#include <vulkan/vulkan.h>

#define XR_USE_GRAPHICS_API_VULKAN 1
#include <openxr/openxr.h>
#include <openxr/openxr_platform.h>

#include <stdexcept>
#include <string>
#include <utility>

namespace nnxr::xr {

// A call returned XR_ERROR_SESSION_LOST: the session must be destroyed (and may be recreated).
class SessionLostError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// "XR_ERROR_…" for a result; without an instance (xrResultToString needs one), the name of the
// results xrCreateInstance and the loader give, else "XrResult <n>".
std::string result_string(XrInstance instance, XrResult result);

// Throws SessionLostError for XR_ERROR_SESSION_LOST and std::runtime_error("OpenXR: <call>
// failed: <result>") for any other failure; returns the result (success codes pass through).
XrResult check(XrInstance instance, XrResult result, const char* call);

// Owner of one OpenXR handle destroyed with Destroy(handle).
template <typename Handle, auto Destroy>
class Owner {
 public:
  Owner() = default;
  explicit Owner(Handle handle) : handle_(handle) {}
  Owner(Owner&& other) noexcept : handle_(std::exchange(other.handle_, XR_NULL_HANDLE)) {}
  Owner& operator=(Owner&& other) noexcept {
    if (this != &other) {
      reset();
      handle_ = std::exchange(other.handle_, XR_NULL_HANDLE);
    }
    return *this;
  }
  Owner(const Owner&) = delete;
  Owner& operator=(const Owner&) = delete;
  ~Owner() { reset(); }

  void reset() {
    if (handle_ != XR_NULL_HANDLE) Destroy(handle_);
    handle_ = XR_NULL_HANDLE;
  }
  Handle get() const { return handle_; }
  // For xrCreate*(…, &out): the owner must be empty.
  Handle* out() {
    reset();
    return &handle_;
  }
  explicit operator bool() const { return handle_ != XR_NULL_HANDLE; }

 private:
  Handle handle_ = XR_NULL_HANDLE;
};

using InstanceHandle = Owner<XrInstance, xrDestroyInstance>;
using SessionHandle = Owner<XrSession, xrDestroySession>;
using SpaceHandle = Owner<XrSpace, xrDestroySpace>;
using SwapchainHandle = Owner<XrSwapchain, xrDestroySwapchain>;
using ActionSetHandle = Owner<XrActionSet, xrDestroyActionSet>;  // its actions go with it

}  // namespace nnxr::xr
