// The Vulkan instance and device the engine renders with.
//
// Two ways in:
//  - The engine creates them: Instance(options), then Device(instance, options). Used by the
//    desktop window and the offscreen renderer.
//  - Someone else creates them from create-infos the engine supplies (XR_KHR_vulkan_enable2: the
//    OpenXR runtime calls vkCreateInstance/vkCreateDevice): instance_create_info() and
//    device_create_info() describe what the engine needs; Instance::adopt() and Device::adopt()
//    then take the handles the runtime made.
//
// What the engine needs (requirements()): Vulkan 1.1 or newer; device features multiview,
// drawIndirectFirstInstance, multiDrawIndirect, shaderInt64, dynamicRendering (core in 1.3, else
// VK_KHR_dynamic_rendering + its dependencies) and bufferDeviceAddress (core in 1.2, else
// VK_KHR_buffer_device_address; the scene shaders read element arrays through 64-bit addresses);
// one graphics queue. A device lacking any of them is not chosen, and the error names what it
// lacks.
//
// Errors are VulkanError exceptions with one clear line: no Vulkan loader, no driver (ICD), no
// suitable device (and why each candidate was rejected), a failed call. Nothing here exits.
//
// Threading: Instance and Device are created and destroyed on one thread; afterwards their const
// accessors may be used from any thread. VkQueue submission is externally synchronised: only
// the frame thread submits to queue() (one-shot uploads on other threads must lock
// queue_mutex()).
#pragma once

#include <vulkan/vulkan.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine/vk.h"

namespace nnxr::engine {

struct InstanceOptions {
  // Turns on VK_LAYER_KHRONOS_validation and a debug messenger that counts errors and prints
  // them to stderr. Also on when the environment variable NNXR_VULKAN_VALIDATION=1. Missing
  // layer: VulkanError.
  bool validation = false;
  std::vector<std::string> extensions;  // extra instance extensions (e.g. the window system's)
  std::string application_name = "nnxr";
};

// Minimum API version the engine asks for and accepts.
inline constexpr uint32_t kMinApiVersion = VK_API_VERSION_1_1;

// Owns (or borrows) a VkInstance and the validation messenger. Movable.
class Instance {
 public:
  explicit Instance(const InstanceOptions& options);
  // Adopts an instance created by someone else from instance_create_info(options). If `owned`,
  // the destructor destroys it (XR_KHR_vulkan_enable2: the application destroys what the runtime
  // created). Installs the validation messenger when options asked for validation.
  static Instance adopt(VkInstance instance, const InstanceOptions& options, bool owned);

  Instance(Instance&&) noexcept;
  Instance& operator=(Instance&&) noexcept;
  ~Instance();

  VkInstance get() const;
  uint32_t api_version() const;  // the version the instance was created with
  bool validation() const;
  // Validation messages of severity ERROR (and WARNING) seen so far, from any thread.
  uint64_t validation_errors() const;
  uint64_t validation_warnings() const;

 private:
  Instance();
  struct State;
  std::unique_ptr<State> state_;
};

// A VkInstanceCreateInfo with everything it points to kept alive; valid while this lives.
struct InstanceCreateInfo {
  VkApplicationInfo app{};
  VkInstanceCreateInfo info{};
  std::vector<std::string> extension_storage, layer_storage;
  std::vector<const char*> extensions, layers;
  InstanceCreateInfo() = default;
  InstanceCreateInfo(const InstanceCreateInfo&) = delete;
  InstanceCreateInfo& operator=(const InstanceCreateInfo&) = delete;
};
// Throws VulkanError if the loader is missing or a requested layer or extension is unavailable.
std::unique_ptr<InstanceCreateInfo> instance_create_info(const InstanceOptions& options);

struct DeviceOptions {
  std::vector<std::string> extensions;  // extra device extensions (e.g. VK_KHR_swapchain)
  // Optional filter: the queue family must also pass it (e.g. present support for a surface).
  bool (*queue_filter)(VkPhysicalDevice, uint32_t family, void* user) = nullptr;
  void* queue_filter_user = nullptr;
  // Substring of the device name to prefer (also from NNXR_VULKAN_DEVICE); otherwise the first
  // suitable discrete GPU, then integrated, then anything else (lavapipe).
  std::string prefer;
};

// A VkDeviceCreateInfo (with queue, extensions and the feature chain) for `physical`, kept alive
// while this lives. queue_family is the graphics family chosen.
struct DeviceCreateInfo {
  uint32_t queue_family = 0;
  float priority = 1.0f;
  VkDeviceQueueCreateInfo queue{};
  VkPhysicalDeviceFeatures2 features{};
  VkPhysicalDeviceMultiviewFeatures multiview{};
  VkPhysicalDeviceDynamicRenderingFeatures dynamic_rendering{};
  VkPhysicalDeviceBufferDeviceAddressFeatures buffer_device_address{};
  // Render targets use DEPTH_ATTACHMENT_OPTIMAL, which needs this feature (core in Vulkan 1.2,
  // else VK_KHR_separate_depth_stencil_layouts).
  VkPhysicalDeviceSeparateDepthStencilLayoutsFeatures separate_depth_stencil_layouts{};
  std::vector<std::string> extension_storage;
  std::vector<const char*> extensions;
  VkDeviceCreateInfo info{};
  DeviceCreateInfo() = default;
  DeviceCreateInfo(const DeviceCreateInfo&) = delete;
  DeviceCreateInfo& operator=(const DeviceCreateInfo&) = delete;
};
// Throws VulkanError naming what `physical` lacks.
std::unique_ptr<DeviceCreateInfo> device_create_info(const Instance& instance, VkPhysicalDevice physical,
                                                     const DeviceOptions& options);
// The best suitable physical device; throws VulkanError listing each device and why it was
// rejected ("no Vulkan device found" when there is none).
VkPhysicalDevice choose_physical_device(const Instance& instance, const DeviceOptions& options);

// The logical device, its graphics queue and the dispatch for calls that differ between 1.3 and
// the KHR extensions. Not movable (other objects keep a reference); hold it by unique_ptr or as a
// member declared before everything that uses it. The Instance must outlive it.
class Device {
 public:
  Device(const Instance& instance, const DeviceOptions& options);
  // Adopts a device created from device_create_info(instance, physical, ...); the queue is
  // (queue_family, 0). If `owned`, the destructor destroys the device.
  static std::unique_ptr<Device> adopt(const Instance& instance, VkPhysicalDevice physical, VkDevice device,
                                       uint32_t queue_family, bool owned);
  ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  const Instance& instance() const { return instance_; }
  VkPhysicalDevice physical() const { return physical_; }
  VkDevice get() const { return device_; }
  VkQueue queue() const { return queue_; }
  uint32_t queue_family() const { return queue_family_; }
  std::mutex& queue_mutex() const { return queue_mutex_; }
  const VkPhysicalDeviceProperties& properties() const { return properties_; }
  const VkPhysicalDeviceMemoryProperties& memory() const { return memory_; }
  std::string name() const { return properties_.deviceName; }
  // Largest single memory allocation and buffer (maxMemoryAllocationSize, maxBufferSize).
  VkDeviceSize max_allocation_size() const { return max_allocation_size_; }
  VkDeviceSize max_buffer_size() const { return max_buffer_size_; }

  // vkCmdBeginRendering / vkCmdEndRendering (core 1.3 or the KHR extension).
  PFN_vkCmdBeginRendering begin_rendering = nullptr;
  PFN_vkCmdEndRendering end_rendering = nullptr;
  // vkGetBufferDeviceAddress (core 1.2 or the KHR extension).
  PFN_vkGetBufferDeviceAddress buffer_device_address = nullptr;

  // Waits until the device is idle (teardown, tests). Throws on device loss.
  void wait_idle() const;

 private:
  struct AdoptTag {};
  Device(const Instance& instance, VkPhysicalDevice physical, VkDevice device, uint32_t queue_family, bool owned,
         AdoptTag);
  void init_dispatch();

  const Instance& instance_;
  VkPhysicalDevice physical_ = VK_NULL_HANDLE;
  VkDevice device_ = VK_NULL_HANDLE;
  bool owned_ = true;
  uint32_t queue_family_ = 0;
  VkQueue queue_ = VK_NULL_HANDLE;
  VkPhysicalDeviceProperties properties_{};
  VkPhysicalDeviceMemoryProperties memory_{};
  VkDeviceSize max_allocation_size_ = 0, max_buffer_size_ = 0;
  mutable std::mutex queue_mutex_;
};

}  // namespace nnxr::engine
