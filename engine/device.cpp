#include "engine/device.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <iostream>

namespace nnxr::engine {
namespace {

constexpr const char* kValidationLayer = "VK_LAYER_KHRONOS_validation";

bool env_flag(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr && value[0] != '\0' && std::strcmp(value, "0") != 0;
}

std::string version_text(uint32_t v) {
  return std::to_string(VK_API_VERSION_MAJOR(v)) + "." + std::to_string(VK_API_VERSION_MINOR(v));
}

bool has_extension(const std::vector<VkExtensionProperties>& available, const std::string& name) {
  return std::any_of(available.begin(), available.end(),
                     [&](const VkExtensionProperties& e) { return name == e.extensionName; });
}

std::vector<VkExtensionProperties> device_extensions(VkPhysicalDevice physical) {
  uint32_t count = 0;
  check(vkEnumerateDeviceExtensionProperties(physical, nullptr, &count, nullptr), "vkEnumerateDeviceExtensionProperties");
  std::vector<VkExtensionProperties> out(count);
  check(vkEnumerateDeviceExtensionProperties(physical, nullptr, &count, out.data()),
        "vkEnumerateDeviceExtensionProperties");
  out.resize(count);
  return out;
}

}  // namespace

// ---- instance ------------------------------------------------------------------------------------

struct Instance::State {
  VkInstance instance = VK_NULL_HANDLE;
  bool owned = true;
  uint32_t api_version = kMinApiVersion;
  bool validation = false;
  VkDebugUtilsMessengerEXT messenger = VK_NULL_HANDLE;
  std::atomic<uint64_t> errors{0}, warnings{0};

  ~State() {
    if (messenger != VK_NULL_HANDLE) {
      auto destroy = reinterpret_cast<PFN_vkDestroyDebugUtilsMessengerEXT>(
          vkGetInstanceProcAddr(instance, "vkDestroyDebugUtilsMessengerEXT"));
      if (destroy) destroy(instance, messenger, nullptr);
    }
    if (owned && instance != VK_NULL_HANDLE) vkDestroyInstance(instance, nullptr);
  }

  static VKAPI_ATTR VkBool32 VKAPI_CALL on_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                   VkDebugUtilsMessageTypeFlagsEXT,
                                                   const VkDebugUtilsMessengerCallbackDataEXT* data, void* user) {
    auto* state = static_cast<State*>(user);
    const char* kind = "info";
    if (severity & VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT) {
      state->errors.fetch_add(1);
      kind = "error";
    } else if (severity & VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT) {
      state->warnings.fetch_add(1);
      kind = "warning";
    }
    std::cerr << "vulkan validation " << kind << ": " << (data && data->pMessage ? data->pMessage : "") << '\n';
    return VK_FALSE;
  }

  void install_messenger() {
    auto create = reinterpret_cast<PFN_vkCreateDebugUtilsMessengerEXT>(
        vkGetInstanceProcAddr(instance, "vkCreateDebugUtilsMessengerEXT"));
    if (!create) throw VulkanError("validation requested but VK_EXT_debug_utils is not enabled on the instance", VK_ERROR_EXTENSION_NOT_PRESENT);
    VkDebugUtilsMessengerCreateInfoEXT info{VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
    info.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT;
    info.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT;
    info.pfnUserCallback = &State::on_message;
    info.pUserData = this;
    check(create(instance, &info, nullptr, &messenger), "vkCreateDebugUtilsMessengerEXT");
  }
};

std::unique_ptr<InstanceCreateInfo> instance_create_info(const InstanceOptions& options) {
  uint32_t loader_version = VK_API_VERSION_1_0;
  VkResult r = vkEnumerateInstanceVersion(&loader_version);
  if (r != VK_SUCCESS) throw VulkanError("the Vulkan loader does not work: vkEnumerateInstanceVersion failed: " + std::string(result_name(r)), r);
  if (loader_version < kMinApiVersion)
    throw VulkanError("the Vulkan loader supports only Vulkan " + version_text(loader_version) + "; nnxr needs " +
                          version_text(kMinApiVersion),
                      VK_ERROR_INCOMPATIBLE_DRIVER);

  auto out = std::make_unique<InstanceCreateInfo>();
  out->extension_storage = options.extensions;
  bool validation = options.validation || env_flag("NNXR_VULKAN_VALIDATION");
  if (validation) {
    uint32_t count = 0;
    check(vkEnumerateInstanceLayerProperties(&count, nullptr), "vkEnumerateInstanceLayerProperties");
    std::vector<VkLayerProperties> layers(count);
    check(vkEnumerateInstanceLayerProperties(&count, layers.data()), "vkEnumerateInstanceLayerProperties");
    bool found = std::any_of(layers.begin(), layers.begin() + count,
                             [](const VkLayerProperties& l) { return std::strcmp(l.layerName, kValidationLayer) == 0; });
    if (!found)
      throw VulkanError(std::string("Vulkan validation requested but ") + kValidationLayer +
                            " is not installed (Debian package vulkan-validationlayers)",
                        VK_ERROR_LAYER_NOT_PRESENT);
    out->layer_storage.push_back(kValidationLayer);
    out->extension_storage.push_back(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
  }
  uint32_t count = 0;
  check(vkEnumerateInstanceExtensionProperties(nullptr, &count, nullptr), "vkEnumerateInstanceExtensionProperties");
  std::vector<VkExtensionProperties> available(count);
  check(vkEnumerateInstanceExtensionProperties(nullptr, &count, available.data()), "vkEnumerateInstanceExtensionProperties");
  available.resize(count);
  for (const std::string& e : out->extension_storage)
    if (!has_extension(available, e) && !(validation && e == VK_EXT_DEBUG_UTILS_EXTENSION_NAME))
      throw VulkanError("Vulkan instance extension " + e + " is not available", VK_ERROR_EXTENSION_NOT_PRESENT);
  for (const std::string& e : out->extension_storage) out->extensions.push_back(e.c_str());
  for (const std::string& l : out->layer_storage) out->layers.push_back(l.c_str());

  out->app = {VK_STRUCTURE_TYPE_APPLICATION_INFO};
  out->app.pApplicationName = options.application_name.c_str();
  out->app.applicationVersion = VK_MAKE_API_VERSION(0, 0, 1, 0);
  out->app.pEngineName = "nnxr";
  out->app.engineVersion = VK_MAKE_API_VERSION(0, 0, 1, 0);
  out->app.apiVersion = std::min(loader_version, uint32_t(VK_API_VERSION_1_3));
  out->info = {VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  out->info.pApplicationInfo = &out->app;
  out->info.enabledExtensionCount = uint32_t(out->extensions.size());
  out->info.ppEnabledExtensionNames = out->extensions.data();
  out->info.enabledLayerCount = uint32_t(out->layers.size());
  out->info.ppEnabledLayerNames = out->layers.data();
  return out;
}

Instance::Instance() : state_(std::make_unique<State>()) {}

Instance::Instance(const InstanceOptions& options) : Instance() {
  auto create = instance_create_info(options);
  VkResult r = vkCreateInstance(&create->info, nullptr, &state_->instance);
  if (r == VK_ERROR_INCOMPATIBLE_DRIVER)
    throw VulkanError("no Vulkan driver found (vkCreateInstance: VK_ERROR_INCOMPATIBLE_DRIVER); install one, e.g. "
                      "Mesa's lavapipe (Debian package mesa-vulkan-drivers)",
                      r);
  check(r, "vkCreateInstance");
  state_->api_version = create->app.apiVersion;
  state_->validation = !create->layers.empty();
  if (state_->validation) state_->install_messenger();
}

Instance Instance::adopt(VkInstance instance, const InstanceOptions& options, bool owned) {
  Instance out;
  out.state_->instance = instance;
  out.state_->owned = owned;
  uint32_t loader_version = VK_API_VERSION_1_1;
  vkEnumerateInstanceVersion(&loader_version);
  out.state_->api_version = std::min(loader_version, uint32_t(VK_API_VERSION_1_3));
  out.state_->validation = options.validation || env_flag("NNXR_VULKAN_VALIDATION");
  if (out.state_->validation) out.state_->install_messenger();
  return out;
}

Instance::Instance(Instance&&) noexcept = default;
Instance& Instance::operator=(Instance&&) noexcept = default;
Instance::~Instance() = default;

VkInstance Instance::get() const { return state_->instance; }
uint32_t Instance::api_version() const { return state_->api_version; }
bool Instance::validation() const { return state_->validation; }
uint64_t Instance::validation_errors() const { return state_->errors.load(); }
uint64_t Instance::validation_warnings() const { return state_->warnings.load(); }

// ---- physical device ----------------------------------------------------------------------------

namespace {

struct Candidate {
  VkPhysicalDevice physical = VK_NULL_HANDLE;
  VkPhysicalDeviceProperties properties{};
  uint32_t family = 0;
  std::string problem;  // empty: suitable
};

Candidate examine(const Instance& instance, VkPhysicalDevice physical, const DeviceOptions& options) {
  Candidate c;
  c.physical = physical;
  vkGetPhysicalDeviceProperties(physical, &c.properties);
  uint32_t api = std::min(c.properties.apiVersion, instance.api_version());
  if (api < kMinApiVersion) {
    c.problem = "supports only Vulkan " + version_text(c.properties.apiVersion);
    return c;
  }
  auto extensions = device_extensions(physical);
  for (const std::string& e : options.extensions)
    if (!has_extension(extensions, e)) {
      c.problem = "lacks extension " + e;
      return c;
    }
  bool core_dynamic = api >= VK_API_VERSION_1_3;
  if (!core_dynamic && !has_extension(extensions, VK_KHR_DYNAMIC_RENDERING_EXTENSION_NAME)) {
    c.problem = "lacks dynamic rendering (Vulkan 1.3 or VK_KHR_dynamic_rendering)";
    return c;
  }
  // Buffer device addresses: core in Vulkan 1.2, else VK_KHR_buffer_device_address.
  const bool core_address = api >= VK_API_VERSION_1_2;
  if (!core_address && !has_extension(extensions, VK_KHR_BUFFER_DEVICE_ADDRESS_EXTENSION_NAME)) {
    c.problem = "lacks buffer device addresses (Vulkan 1.2 or VK_KHR_buffer_device_address)";
    return c;
  }
  // DEPTH_ATTACHMENT_OPTIMAL layouts: core in Vulkan 1.2, else VK_KHR_separate_depth_stencil_layouts.
  if (!core_address && !has_extension(extensions, VK_KHR_SEPARATE_DEPTH_STENCIL_LAYOUTS_EXTENSION_NAME)) {
    c.problem = "lacks separate depth/stencil layouts (Vulkan 1.2 or VK_KHR_separate_depth_stencil_layouts)";
    return c;
  }
  VkPhysicalDeviceSeparateDepthStencilLayoutsFeatures depth_layouts{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SEPARATE_DEPTH_STENCIL_LAYOUTS_FEATURES};
  VkPhysicalDeviceBufferDeviceAddressFeatures address{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_BUFFER_DEVICE_ADDRESS_FEATURES};
  address.pNext = &depth_layouts;
  VkPhysicalDeviceDynamicRenderingFeatures dynamic{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DYNAMIC_RENDERING_FEATURES};
  dynamic.pNext = &address;
  VkPhysicalDeviceMultiviewFeatures multiview{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MULTIVIEW_FEATURES};
  multiview.pNext = &dynamic;
  VkPhysicalDeviceFeatures2 features{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  features.pNext = &multiview;
  vkGetPhysicalDeviceFeatures2(physical, &features);
  if (!multiview.multiview) c.problem = "lacks the multiview feature";
  else if (!dynamic.dynamicRendering) c.problem = "lacks the dynamicRendering feature";
  else if (!features.features.drawIndirectFirstInstance) c.problem = "lacks the drawIndirectFirstInstance feature";
  else if (!features.features.multiDrawIndirect) c.problem = "lacks the multiDrawIndirect feature";
  else if (!address.bufferDeviceAddress) c.problem = "lacks the bufferDeviceAddress feature";
  else if (!features.features.shaderInt64) c.problem = "lacks the shaderInt64 feature";
  else if (!depth_layouts.separateDepthStencilLayouts) c.problem = "lacks the separateDepthStencilLayouts feature";
  if (!c.problem.empty()) return c;

  uint32_t count = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(physical, &count, nullptr);
  std::vector<VkQueueFamilyProperties> families(count);
  vkGetPhysicalDeviceQueueFamilyProperties(physical, &count, families.data());
  for (uint32_t i = 0; i < count; ++i) {
    if (!(families[i].queueFlags & VK_QUEUE_GRAPHICS_BIT)) continue;
    if (options.queue_filter && !options.queue_filter(physical, i, options.queue_filter_user)) continue;
    c.family = i;
    return c;
  }
  c.problem = options.queue_filter ? "has no graphics queue that can present" : "has no graphics queue";
  return c;
}

int rank(const VkPhysicalDeviceProperties& p) {
  switch (p.deviceType) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return 0;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return 1;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return 2;
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return 3;
    default: return 4;
  }
}

}  // namespace

VkPhysicalDevice choose_physical_device(const Instance& instance, const DeviceOptions& options) {
  uint32_t count = 0;
  VkResult r = vkEnumeratePhysicalDevices(instance.get(), &count, nullptr);
  if (r == VK_ERROR_INITIALIZATION_FAILED || (r == VK_SUCCESS && count == 0))
    throw VulkanError("no Vulkan device found; install a driver, e.g. Mesa's lavapipe (Debian package mesa-vulkan-drivers)",
                      VK_ERROR_INITIALIZATION_FAILED);
  check(r, "vkEnumeratePhysicalDevices");
  std::vector<VkPhysicalDevice> devices(count);
  check(vkEnumeratePhysicalDevices(instance.get(), &count, devices.data()), "vkEnumeratePhysicalDevices");
  devices.resize(count);

  std::string prefer = options.prefer;
  if (const char* env = std::getenv("NNXR_VULKAN_DEVICE"); prefer.empty() && env) prefer = env;
  std::vector<Candidate> suitable;
  std::string problems;
  for (VkPhysicalDevice d : devices) {
    Candidate c = examine(instance, d, options);
    if (c.problem.empty()) {
      suitable.push_back(c);
    } else {
      problems += problems.empty() ? "" : "; ";
      problems += std::string(c.properties.deviceName) + " " + c.problem;
    }
  }
  if (suitable.empty()) throw VulkanError("no suitable Vulkan device: " + problems, VK_ERROR_FEATURE_NOT_PRESENT);
  auto score = [&](const Candidate& c) {
    bool preferred = !prefer.empty() && std::string(c.properties.deviceName).find(prefer) != std::string::npos;
    return (preferred ? 0 : 10) + rank(c.properties);
  };
  std::stable_sort(suitable.begin(), suitable.end(),
                   [&](const Candidate& a, const Candidate& b) { return score(a) < score(b); });
  return suitable.front().physical;
}

std::unique_ptr<DeviceCreateInfo> device_create_info(const Instance& instance, VkPhysicalDevice physical,
                                                     const DeviceOptions& options) {
  Candidate c = examine(instance, physical, options);
  if (!c.problem.empty())
    throw VulkanError(std::string("Vulkan device ") + c.properties.deviceName + " " + c.problem,
                      VK_ERROR_FEATURE_NOT_PRESENT);
  auto out = std::make_unique<DeviceCreateInfo>();
  out->queue_family = c.family;
  out->queue = {VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  out->queue.queueFamilyIndex = c.family;
  out->queue.queueCount = 1;
  out->queue.pQueuePriorities = &out->priority;

  out->extension_storage = options.extensions;
  uint32_t api = std::min(c.properties.apiVersion, instance.api_version());
  if (api < VK_API_VERSION_1_3) {
    out->extension_storage.push_back(VK_KHR_DYNAMIC_RENDERING_EXTENSION_NAME);
    if (api < VK_API_VERSION_1_2) {
      out->extension_storage.push_back(VK_KHR_DEPTH_STENCIL_RESOLVE_EXTENSION_NAME);
      out->extension_storage.push_back(VK_KHR_CREATE_RENDERPASS_2_EXTENSION_NAME);
      out->extension_storage.push_back(VK_KHR_BUFFER_DEVICE_ADDRESS_EXTENSION_NAME);
      out->extension_storage.push_back(VK_KHR_SEPARATE_DEPTH_STENCIL_LAYOUTS_EXTENSION_NAME);
    }
  }
  for (const std::string& e : out->extension_storage) out->extensions.push_back(e.c_str());

  out->buffer_device_address = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_BUFFER_DEVICE_ADDRESS_FEATURES};
  out->buffer_device_address.bufferDeviceAddress = VK_TRUE;
  out->separate_depth_stencil_layouts = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SEPARATE_DEPTH_STENCIL_LAYOUTS_FEATURES};
  out->separate_depth_stencil_layouts.separateDepthStencilLayouts = VK_TRUE;
  out->buffer_device_address.pNext = &out->separate_depth_stencil_layouts;
  out->dynamic_rendering = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DYNAMIC_RENDERING_FEATURES};
  out->dynamic_rendering.dynamicRendering = VK_TRUE;
  out->dynamic_rendering.pNext = &out->buffer_device_address;
  out->multiview = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MULTIVIEW_FEATURES};
  out->multiview.multiview = VK_TRUE;
  out->multiview.pNext = &out->dynamic_rendering;
  out->features = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  out->features.features.drawIndirectFirstInstance = VK_TRUE;
  out->features.features.multiDrawIndirect = VK_TRUE;
  out->features.features.shaderInt64 = VK_TRUE;
  out->features.pNext = &out->multiview;

  out->info = {VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  out->info.pNext = &out->features;
  out->info.queueCreateInfoCount = 1;
  out->info.pQueueCreateInfos = &out->queue;
  out->info.enabledExtensionCount = uint32_t(out->extensions.size());
  out->info.ppEnabledExtensionNames = out->extensions.data();
  return out;
}

// ---- device ---------------------------------------------------------------------------------------

Device::Device(const Instance& instance, const DeviceOptions& options) : instance_(instance) {
  physical_ = choose_physical_device(instance, options);
  auto create = device_create_info(instance, physical_, options);
  check(vkCreateDevice(physical_, &create->info, nullptr, &device_), "vkCreateDevice");
  queue_family_ = create->queue_family;
  init_dispatch();
}

Device::Device(const Instance& instance, VkPhysicalDevice physical, VkDevice device, uint32_t queue_family, bool owned,
               AdoptTag)
    : instance_(instance), physical_(physical), device_(device), owned_(owned), queue_family_(queue_family) {
  init_dispatch();
}

std::unique_ptr<Device> Device::adopt(const Instance& instance, VkPhysicalDevice physical, VkDevice device,
                                      uint32_t queue_family, bool owned) {
  return std::unique_ptr<Device>(new Device(instance, physical, device, queue_family, owned, AdoptTag{}));
}

void Device::init_dispatch() {
  vkGetPhysicalDeviceProperties(physical_, &properties_);
  vkGetPhysicalDeviceMemoryProperties(physical_, &memory_);
  vkGetDeviceQueue(device_, queue_family_, 0, &queue_);
  uint32_t api = std::min(properties_.apiVersion, instance_.api_version());
  const bool core = api >= VK_API_VERSION_1_3;
  // Largest single buffer and allocation (maintenance3 is core in 1.1, maintenance4 in 1.3).
  VkPhysicalDeviceMaintenance4Properties maintenance4{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_4_PROPERTIES};
  VkPhysicalDeviceMaintenance3Properties maintenance3{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES};
  if (api >= VK_API_VERSION_1_3) maintenance3.pNext = &maintenance4;
  VkPhysicalDeviceProperties2 properties2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  properties2.pNext = &maintenance3;
  vkGetPhysicalDeviceProperties2(physical_, &properties2);
  max_allocation_size_ = maintenance3.maxMemoryAllocationSize;
  max_buffer_size_ = api >= VK_API_VERSION_1_3 ? maintenance4.maxBufferSize : max_allocation_size_;
  const bool core_address = api >= VK_API_VERSION_1_2;
  buffer_device_address = reinterpret_cast<PFN_vkGetBufferDeviceAddress>(
      vkGetDeviceProcAddr(device_, core_address ? "vkGetBufferDeviceAddress" : "vkGetBufferDeviceAddressKHR"));
  begin_rendering = reinterpret_cast<PFN_vkCmdBeginRendering>(
      vkGetDeviceProcAddr(device_, core ? "vkCmdBeginRendering" : "vkCmdBeginRenderingKHR"));
  end_rendering = reinterpret_cast<PFN_vkCmdEndRendering>(
      vkGetDeviceProcAddr(device_, core ? "vkCmdEndRendering" : "vkCmdEndRenderingKHR"));
  const char* missing = !begin_rendering || !end_rendering ? "vkCmdBeginRendering (dynamic rendering not enabled)"
                        : !buffer_device_address ? "vkGetBufferDeviceAddress (buffer device addresses not enabled)"
                                                 : nullptr;
  if (missing) {
    if (owned_) vkDestroyDevice(device_, nullptr);
    device_ = VK_NULL_HANDLE;
    throw VulkanError(std::string("Vulkan device has no ") + missing, VK_ERROR_EXTENSION_NOT_PRESENT);
  }
}

Device::~Device() {
  if (owned_ && device_ != VK_NULL_HANDLE) vkDestroyDevice(device_, nullptr);
}

void Device::wait_idle() const {
  std::lock_guard lock(queue_mutex_);
  check(vkDeviceWaitIdle(device_), "vkDeviceWaitIdle");
}

}  // namespace nnxr::engine
