// Instance, system, view configurations, paths, strings and the event queue.
#include "tests/xrsim/runtime/state.h"
#include "tests/xrsim/xrsim.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

namespace xrsim::api {
namespace {

struct Extension {
  const char* name;
  uint32_t version;
};
const Extension kExtensions[] = {
    {XR_KHR_VULKAN_ENABLE2_EXTENSION_NAME, XR_KHR_vulkan_enable2_SPEC_VERSION},
    {XR_KHR_COMPOSITION_LAYER_DEPTH_EXTENSION_NAME, XR_KHR_composition_layer_depth_SPEC_VERSION},
};

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

// The extensions offered: all of kExtensions, without XR_KHR_composition_layer_depth when
// NNXR_XRSIM_NO_DEPTH_LAYER is set to a non-empty value other than 0.
std::vector<Extension> offered_extensions() {
  const std::string no_depth = env(kEnvNoDepthLayer);
  std::vector<Extension> out;
  for (const Extension& e : kExtensions)
    if (no_depth.empty() || no_depth == "0" || std::strcmp(e.name, XR_KHR_COMPOSITION_LAYER_DEPTH_EXTENSION_NAME) != 0)
      out.push_back(e);
  return out;
}

void copy_name(char* dst, size_t size, const std::string& src) {
  std::snprintf(dst, size, "%s", src.c_str());
}

}  // namespace

XrResult EnumerateInstanceExtensionProperties(const char* layer_name, uint32_t capacity, uint32_t* count_output,
                                              XrExtensionProperties* properties) {
  return guarded("xrEnumerateInstanceExtensionProperties", [&]() -> XrResult {
    if (layer_name != nullptr && layer_name[0] != '\0') return XR_ERROR_API_LAYER_NOT_PRESENT;
    const std::vector<Extension> offered = offered_extensions();
    const uint32_t n = static_cast<uint32_t>(offered.size());
    if (capacity > 0 && properties == nullptr) return XR_ERROR_VALIDATION_FAILURE;
    for (uint32_t i = 0; i < std::min(capacity, n); ++i)
      if (properties[i].type != XR_TYPE_EXTENSION_PROPERTIES) return XR_ERROR_VALIDATION_FAILURE;
    return two_call(capacity, count_output, n, [&](uint32_t i) {
      copy_name(properties[i].extensionName, XR_MAX_EXTENSION_NAME_SIZE, offered[i].name);
      properties[i].extensionVersion = offered[i].version;
    });
  });
}

XrResult CreateInstance(const XrInstanceCreateInfo* info, XrInstance* out) {
  return guarded("xrCreateInstance", [&]() -> XrResult {
    if (info == nullptr || out == nullptr || info->type != XR_TYPE_INSTANCE_CREATE_INFO) return XR_ERROR_VALIDATION_FAILURE;
    if (info->createFlags != 0) return XR_ERROR_VALIDATION_FAILURE;
    if (XR_VERSION_MAJOR(info->applicationInfo.apiVersion) != 1) return XR_ERROR_API_VERSION_UNSUPPORTED;
    if (info->applicationInfo.applicationName[0] == '\0') return XR_ERROR_NAME_INVALID;
    if (info->enabledExtensionCount > 0 && info->enabledExtensionNames == nullptr) return XR_ERROR_VALIDATION_FAILURE;

    auto inst = std::make_unique<Instance>();
    for (uint32_t i = 0; i < info->enabledExtensionCount; ++i) {
      const char* name = info->enabledExtensionNames[i];
      if (name == nullptr) return XR_ERROR_VALIDATION_FAILURE;
      if (std::strcmp(name, XR_KHR_VULKAN_ENABLE2_EXTENSION_NAME) == 0) inst->ext_vulkan2 = true;
      else if (std::strcmp(name, XR_KHR_COMPOSITION_LAYER_DEPTH_EXTENSION_NAME) == 0) {
        if (offered_extensions().size() == std::size(kExtensions)) inst->ext_depth = true;
        else return XR_ERROR_EXTENSION_NOT_PRESENT;
      }
      else if (std::strcmp(name, XR_EXT_DEBUG_UTILS_EXTENSION_NAME) == 0) continue;  // implemented by the loader
      else return XR_ERROR_EXTENSION_NOT_PRESENT;
    }

    if (std::string script = env(kEnvScript); !script.empty()) {
      std::string error;
      auto parsed = Script::load(script, &error);
      if (!parsed) {
        std::fprintf(stderr, "xrsim: %s\n", error.c_str());
        return XR_ERROR_INITIALIZATION_FAILED;
      }
      inst->script = std::move(*parsed);
    }
    inst->record_path = env(kEnvRecord);
    inst->capture_dir = env(kEnvCaptureDir);
    if (!inst->capture_dir.empty() && !std::filesystem::is_directory(inst->capture_dir)) {
      std::fprintf(stderr, "xrsim: %s: %s is not a directory\n", kEnvCaptureDir, inst->capture_dir.c_str());
      return XR_ERROR_INITIALIZATION_FAILED;
    }
    inst->system_away = inst->script.no_headset_calls();
    inst->app_name = info->applicationInfo.applicationName;
    Registry& r = Registry::get();
    inst->id = r.new_id();
    r.last_instance = inst->id;
    *out = handle_of<XrInstance>(inst->id);
    r.instances.emplace(inst->id, std::move(inst));
    return XR_SUCCESS;
  });
}

XrResult DestroyInstance(XrInstance instance) {
  return guarded("xrDestroyInstance", [&]() -> XrResult {
    Registry& r = Registry::get();
    Instance* inst = find(r.instances, instance);
    if (inst == nullptr) return XR_ERROR_HANDLE_INVALID;
    for (uint64_t s : std::vector<uint64_t>(inst->sessions)) destroy_session(r, s);
    for (uint64_t a : std::vector<uint64_t>(inst->action_sets)) destroy_action_set(r, a);
    if (!inst->record_path.empty() && !inst->record.write(inst->record_path, inst->frames_submitted))
      std::fprintf(stderr, "xrsim: cannot write the record to %s\n", inst->record_path.c_str());
    r.instances.erase(inst->id);
    return XR_SUCCESS;
  });
}

XrResult GetInstanceProperties(XrInstance instance, XrInstanceProperties* props) {
  return guarded("xrGetInstanceProperties", [&]() -> XrResult {
    if (find(Registry::get().instances, instance) == nullptr) return XR_ERROR_HANDLE_INVALID;
    if (props == nullptr || props->type != XR_TYPE_INSTANCE_PROPERTIES) return XR_ERROR_VALIDATION_FAILURE;
    props->runtimeVersion = XR_MAKE_VERSION(0, 1, 0);
    copy_name(props->runtimeName, XR_MAX_RUNTIME_NAME_SIZE, "nnxr xrsim");
    return XR_SUCCESS;
  });
}

XrResult PollEvent(XrInstance instance, XrEventDataBuffer* buffer) {
  return guarded("xrPollEvent", [&]() -> XrResult {
    Registry& r = Registry::get();
    Instance* inst = find(r.instances, instance);
    if (inst == nullptr) return XR_ERROR_HANDLE_INVALID;
    if (buffer == nullptr || buffer->type != XR_TYPE_EVENT_DATA_BUFFER) return XR_ERROR_VALIDATION_FAILURE;
    if (inst->events_lost > 0) {
      XrEventDataBuffer b{};
      auto& e = reinterpret_cast<XrEventDataEventsLost&>(b);
      e.type = XR_TYPE_EVENT_DATA_EVENTS_LOST;
      e.lostEventCount = inst->events_lost;
      inst->events_lost = 0;
      *buffer = b;
      return XR_SUCCESS;
    }
    if (inst->events.empty()) return XR_EVENT_UNAVAILABLE;
    XrEventDataBuffer event = inst->events.front();
    inst->events.pop_front();
    if (event.type == XR_TYPE_EVENT_DATA_SESSION_STATE_CHANGED) {
      const auto& e = reinterpret_cast<const XrEventDataSessionStateChanged&>(event);
      if (Session* s = find(r.sessions, e.session)) {
        s->state = e.state;
        if (e.state == XR_SESSION_STATE_LOSS_PENDING) s->lost = true;
        uint64_t frame = inst->frames_waited == 0 ? 0 : inst->frames_waited - 1;
        inst->record.add("state " + std::to_string(frame) + " " + session_state_name(e.state));
      }
    }
    *buffer = event;
    return XR_SUCCESS;
  });
}

XrResult ResultToString(XrInstance instance, XrResult value, char buffer[XR_MAX_RESULT_STRING_SIZE]) {
  return guarded("xrResultToString", [&]() -> XrResult {
    if (find(Registry::get().instances, instance) == nullptr) return XR_ERROR_HANDLE_INVALID;
    if (buffer == nullptr) return XR_ERROR_VALIDATION_FAILURE;
    std::string name = result_name(value);
    if (name == "XR_UNKNOWN_RESULT")
      name = (value >= 0 ? "XR_UNKNOWN_SUCCESS_" : "XR_UNKNOWN_FAILURE_") + std::to_string(static_cast<int>(value));
    copy_name(buffer, XR_MAX_RESULT_STRING_SIZE, name);
    return XR_SUCCESS;
  });
}

XrResult StructureTypeToString(XrInstance instance, XrStructureType value, char buffer[XR_MAX_STRUCTURE_NAME_SIZE]) {
  return guarded("xrStructureTypeToString", [&]() -> XrResult {
    if (find(Registry::get().instances, instance) == nullptr) return XR_ERROR_HANDLE_INVALID;
    if (buffer == nullptr) return XR_ERROR_VALIDATION_FAILURE;
    const char* name = nullptr;
    switch (value) {
#define XRSIM_CASE(n, v) \
  case n:                \
    name = #n;           \
    break;
      XR_LIST_ENUM_XrStructureType(XRSIM_CASE)
#undef XRSIM_CASE
      default:
        break;
    }
    copy_name(buffer, XR_MAX_STRUCTURE_NAME_SIZE,
              name ? std::string(name) : "XR_UNKNOWN_STRUCTURE_TYPE_" + std::to_string(static_cast<int>(value)));
    return XR_SUCCESS;
  });
}

// ---- system --------------------------------------------------------------------------------------

XrResult GetSystem(XrInstance instance, const XrSystemGetInfo* info, XrSystemId* system) {
  return guarded("xrGetSystem", [&]() -> XrResult {
    Instance* inst = find(Registry::get().instances, instance);
    if (inst == nullptr) return XR_ERROR_HANDLE_INVALID;
    if (info == nullptr || system == nullptr || info->type != XR_TYPE_SYSTEM_GET_INFO) return XR_ERROR_VALIDATION_FAILURE;
    if (info->formFactor == XR_FORM_FACTOR_HANDHELD_DISPLAY) return XR_ERROR_FORM_FACTOR_UNSUPPORTED;
    if (info->formFactor != XR_FORM_FACTOR_HEAD_MOUNTED_DISPLAY) return XR_ERROR_VALIDATION_FAILURE;
    if (inst->system_away != 0) {  // no headset (yet, or since a scripted loss)
      if (inst->system_away > 0) --inst->system_away;
      return XR_ERROR_FORM_FACTOR_UNAVAILABLE;
    }
    *system = kSystemId;
    return XR_SUCCESS;
  });
}

XrResult GetSystemProperties(XrInstance instance, XrSystemId system, XrSystemProperties* props) {
  return guarded("xrGetSystemProperties", [&]() -> XrResult {
    if (find(Registry::get().instances, instance) == nullptr) return XR_ERROR_HANDLE_INVALID;
    if (system != kSystemId) return XR_ERROR_SYSTEM_INVALID;
    if (props == nullptr || props->type != XR_TYPE_SYSTEM_PROPERTIES) return XR_ERROR_VALIDATION_FAILURE;
    props->systemId = kSystemId;
    props->vendorId = 0x4e4e;
    copy_name(props->systemName, XR_MAX_SYSTEM_NAME_SIZE, "nnxr simulated headset");
    props->graphicsProperties = {kMaxImageSize, kMaxImageSize, kMaxLayers};
    props->trackingProperties = {XR_TRUE, XR_TRUE};
    return XR_SUCCESS;
  });
}

XrResult EnumerateEnvironmentBlendModes(XrInstance instance, XrSystemId system, XrViewConfigurationType type,
                                        uint32_t capacity, uint32_t* count_output, XrEnvironmentBlendMode* modes) {
  return guarded("xrEnumerateEnvironmentBlendModes", [&]() -> XrResult {
    if (find(Registry::get().instances, instance) == nullptr) return XR_ERROR_HANDLE_INVALID;
    if (system != kSystemId) return XR_ERROR_SYSTEM_INVALID;
    if (type != XR_VIEW_CONFIGURATION_TYPE_PRIMARY_STEREO) return XR_ERROR_VIEW_CONFIGURATION_TYPE_UNSUPPORTED;
    if (capacity > 0 && modes == nullptr) return XR_ERROR_VALIDATION_FAILURE;
    return two_call(capacity, count_output, 1, [&](uint32_t) { modes[0] = XR_ENVIRONMENT_BLEND_MODE_OPAQUE; });
  });
}

XrResult EnumerateViewConfigurations(XrInstance instance, XrSystemId system, uint32_t capacity,
                                     uint32_t* count_output, XrViewConfigurationType* types) {
  return guarded("xrEnumerateViewConfigurations", [&]() -> XrResult {
    if (find(Registry::get().instances, instance) == nullptr) return XR_ERROR_HANDLE_INVALID;
    if (system != kSystemId) return XR_ERROR_SYSTEM_INVALID;
    if (capacity > 0 && types == nullptr) return XR_ERROR_VALIDATION_FAILURE;
    return two_call(capacity, count_output, 1, [&](uint32_t) { types[0] = XR_VIEW_CONFIGURATION_TYPE_PRIMARY_STEREO; });
  });
}

XrResult GetViewConfigurationProperties(XrInstance instance, XrSystemId system, XrViewConfigurationType type,
                                        XrViewConfigurationProperties* props) {
  return guarded("xrGetViewConfigurationProperties", [&]() -> XrResult {
    if (find(Registry::get().instances, instance) == nullptr) return XR_ERROR_HANDLE_INVALID;
    if (system != kSystemId) return XR_ERROR_SYSTEM_INVALID;
    if (props == nullptr || props->type != XR_TYPE_VIEW_CONFIGURATION_PROPERTIES) return XR_ERROR_VALIDATION_FAILURE;
    if (type != XR_VIEW_CONFIGURATION_TYPE_PRIMARY_STEREO) return XR_ERROR_VIEW_CONFIGURATION_TYPE_UNSUPPORTED;
    props->viewConfigurationType = type;
    props->fovMutable = XR_TRUE;
    return XR_SUCCESS;
  });
}

XrResult EnumerateViewConfigurationViews(XrInstance instance, XrSystemId system, XrViewConfigurationType type,
                                         uint32_t capacity, uint32_t* count_output, XrViewConfigurationView* views) {
  return guarded("xrEnumerateViewConfigurationViews", [&]() -> XrResult {
    Instance* inst = find(Registry::get().instances, instance);
    if (inst == nullptr) return XR_ERROR_HANDLE_INVALID;
    if (system != kSystemId) return XR_ERROR_SYSTEM_INVALID;
    if (type != XR_VIEW_CONFIGURATION_TYPE_PRIMARY_STEREO) return XR_ERROR_VIEW_CONFIGURATION_TYPE_UNSUPPORTED;
    if (capacity > 0 && views == nullptr) return XR_ERROR_VALIDATION_FAILURE;
    for (uint32_t i = 0; i < std::min(capacity, 2u); ++i)
      if (views[i].type != XR_TYPE_VIEW_CONFIGURATION_VIEW) return XR_ERROR_VALIDATION_FAILURE;
    return two_call(capacity, count_output, 2, [&](uint32_t i) {
      views[i].recommendedImageRectWidth = inst->script.view_width();
      views[i].recommendedImageRectHeight = inst->script.view_height();
      views[i].maxImageRectWidth = kMaxImageSize;
      views[i].maxImageRectHeight = kMaxImageSize;
      views[i].recommendedSwapchainSampleCount = 1;
      views[i].maxSwapchainSampleCount = 1;
    });
  });
}

// ---- paths ---------------------------------------------------------------------------------------

XrResult StringToPath(XrInstance instance, const char* string, XrPath* path) {
  return guarded("xrStringToPath", [&]() -> XrResult {
    Instance* inst = find(Registry::get().instances, instance);
    if (inst == nullptr) return XR_ERROR_HANDLE_INVALID;
    if (string == nullptr || path == nullptr) return XR_ERROR_VALIDATION_FAILURE;
    XrPath p = inst->paths.intern(string);
    if (p == XR_NULL_PATH) return XR_ERROR_PATH_FORMAT_INVALID;
    *path = p;
    return XR_SUCCESS;
  });
}

XrResult PathToString(XrInstance instance, XrPath path, uint32_t capacity, uint32_t* count_output, char* buffer) {
  return guarded("xrPathToString", [&]() -> XrResult {
    Instance* inst = find(Registry::get().instances, instance);
    if (inst == nullptr) return XR_ERROR_HANDLE_INVALID;
    const std::string* s = inst->paths.lookup(path);
    if (s == nullptr) return XR_ERROR_PATH_INVALID;
    return string_two_call(*s, capacity, count_output, buffer);
  });
}

}  // namespace xrsim::api
