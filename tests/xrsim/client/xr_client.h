// A small OpenXR + Vulkan client for tests of the simulated runtime. It talks to the runtime only
// through the Khronos loader, with the core validation API layer (and, when installed, the Vulkan
// validation layer) on, and collects every validation message.
//
// Ownership: a Client owns every XR and Vulkan object it creates and destroys them in reverse
// order in its destructor (swapchains, spaces, session, instance, then the Vulkan device and
// instance). Single-threaded: use a Client from one thread only.
#pragma once

#include <vulkan/vulkan.h>

#define XR_USE_GRAPHICS_API_VULKAN 1
#include <openxr/openxr.h>
#include <openxr/openxr_platform.h>

#include <array>
#include <string>
#include <vector>

namespace xrsim::client {

inline constexpr const char* kCoreValidationLayer = "XR_APILAYER_LUNARG_core_validation";

// A fresh folder for one test, and the environment the runtime reads: XR_RUNTIME_JSON (the
// built manifest), XR_API_LAYER_PATH (where the core validation layer's manifest is),
// NNXR_XRSIM_RECORD, NNXR_XRSIM_CAPTURE_DIR and the core validation layer's output file
// (XR_CORE_VALIDATION_FILE_NAME) inside the folder, NNXR_XRSIM_SCRIPT unset.
// The folder is removed by the destructor unless a test failed.
class TestEnv {
 public:
  explicit TestEnv(const std::string& name);
  ~TestEnv();
  TestEnv(const TestEnv&) = delete;
  TestEnv& operator=(const TestEnv&) = delete;

  const std::string& dir() const { return dir_; }
  std::string record_path() const { return dir_ + "/record.txt"; }
  std::string capture_dir() const { return dir_ + "/capture"; }
  // Writes a script into the folder and points NNXR_XRSIM_SCRIPT at it.
  void set_script(const std::string& text);
  // Keeps the folder after the test (for looking at captures).
  void keep() { keep_ = true; }

 private:
  std::string dir_;
  bool keep_ = false;
};

struct Swapchain {
  XrSwapchain handle = XR_NULL_HANDLE;
  int64_t format = 0;
  uint32_t width = 0, height = 0, array_size = 1;
  std::vector<VkImage> images;
};

class Client {
 public:
  struct Options {
    bool core_validation = true;   // enable XR_APILAYER_LUNARG_core_validation
    bool depth = false;            // submit depth swapchains through XR_KHR_composition_layer_depth
    bool multiview = false;        // one colour swapchain with 2 array layers instead of one per eye
    int64_t colour_format = VK_FORMAT_R8G8B8A8_UNORM;
  };

  Client() : Client(Options{}) {}
  explicit Client(Options options);
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // Each step returns the first failing XrResult (or XR_SUCCESS); `error` says which call failed.
  XrResult create_instance();
  XrResult create_vulkan();   // xrGetSystem + XR_KHR_vulkan_enable2 instance/device on the runtime's device
  XrResult create_session();  // session, LOCAL or STAGE app space, swapchains of the recommended size
  XrResult start() {          // all three
    XrResult r = create_instance();
    if (XR_SUCCEEDED(r)) r = create_vulkan();
    if (XR_SUCCEEDED(r)) r = create_session();
    return r;
  }

  // Drains the event queue: records states, begins the session on READY, ends it on STOPPING.
  XrResult poll();
  // One frame: wait, begin, clear each eye to its colour when shouldRender (else no layer), end.
  XrResult frame(const std::array<std::array<float, 4>, 2>& colours);
  // poll() + frame() until the session reached `state` (delivered) or `max_frames` frames ran.
  // Frames are only run while the session is running; a frame that fails with
  // XR_ERROR_SESSION_LOST stops them (counted in lost_calls) until the next poll.
  XrResult run_until(XrSessionState state, int max_frames, const std::array<std::array<float, 4>, 2>& colours);

  void destroy_session();  // swapchains, spaces and session (the Vulkan device stays)
  void destroy_all();      // everything, instance last but before the Vulkan objects

  std::string result_name(XrResult r) const;
  // The messages the core validation layer wrote so far (lines "[VALID_ERROR | VUID-… | call]: …"
  // of XR_CORE_VALIDATION_FILE_NAME, which TestEnv sets).
  std::vector<std::string> layer_messages() const;

  Options options;
  std::string error;  // "<call>: <result>" of the last failure
  std::vector<std::string> validation_messages;  // from the loader's messenger and the Vulkan layer
  std::vector<XrSessionState> states;            // delivered session states, in order
  int profile_changes = 0;                       // XrEventDataInteractionProfileChanged received
  int lost_calls = 0;                            // frames that failed with XR_ERROR_SESSION_LOST
  bool layer_listed = false;                     // xrEnumerateApiLayerProperties listed the core layer
  bool vk_validation = false;                    // VK_LAYER_KHRONOS_validation is on

  XrInstance instance = XR_NULL_HANDLE;
  XrDebugUtilsMessengerEXT messenger = XR_NULL_HANDLE;
  XrSystemId system = XR_NULL_SYSTEM_ID;
  XrSession session = XR_NULL_HANDLE;
  XrSessionState state = XR_SESSION_STATE_UNKNOWN;
  bool running = false;
  XrSpace app_space = XR_NULL_HANDLE;
  XrReferenceSpaceType app_space_type = XR_REFERENCE_SPACE_TYPE_LOCAL;
  std::vector<Swapchain> colour;  // one per eye, or one with 2 layers (multiview)
  std::vector<Swapchain> depth;
  XrViewConfigurationView view_config{XR_TYPE_VIEW_CONFIGURATION_VIEW};
  XrTime last_display_time = 0;
  int frames_rendered = 0;

  VkInstance vk_instance = VK_NULL_HANDLE;
  VkDebugUtilsMessengerEXT vk_messenger = VK_NULL_HANDLE;
  VkPhysicalDevice vk_physical = VK_NULL_HANDLE;
  VkDevice vk_device = VK_NULL_HANDLE;
  uint32_t queue_family = 0;
  VkQueue queue = VK_NULL_HANDLE;
  VkCommandPool pool = VK_NULL_HANDLE;
  VkFence fence = VK_NULL_HANDLE;

 private:
  XrResult fail(const char* call, XrResult r);
  XrResult make_swapchain(int64_t format, uint32_t array_size, XrSwapchainUsageFlags usage, Swapchain* out);
  // Acquires, clears (colour or depth) and releases one image; gives its index.
  XrResult render(Swapchain& sc, bool is_depth, const std::array<std::array<float, 4>, 2>& colours);
};

}  // namespace xrsim::client
