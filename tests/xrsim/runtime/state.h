// The object model of the simulated runtime and the helpers every entry point shares.
//
// Ownership and threads: every object lives in the process-wide Registry, keyed by its handle
// value (a number that is never reused, so a stale handle is always detected). Every entry point
// runs under Registry::mutex (see guarded()), so objects are only touched by one thread at a time.
// A parent's destruction destroys its children (instance -> sessions, action sets; session ->
// spaces, swapchains).
#pragma once

#include "tests/xrsim/runtime/profiles.h"
#include "tests/xrsim/runtime/record.h"
#include "tests/xrsim/runtime/script.h"
#include "tests/xrsim/runtime/xr.h"

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <vector>

namespace xrsim {

inline constexpr XrSystemId kSystemId = 0x5157;
inline constexpr uint32_t kMaxLayers = 16;
inline constexpr uint32_t kMaxImageSize = 2048;
inline constexpr uint32_t kSwapchainImages = 3;

// ---- paths ---------------------------------------------------------------------------------------

class PathTable {
 public:
  // XR_NULL_PATH when the string is not a well-formed path.
  XrPath intern(const std::string& s);
  const std::string* lookup(XrPath p) const;
  static bool well_formed(const std::string& s);

 private:
  std::vector<std::string> strings_;  // XrPath n is strings_[n - 1]
  std::unordered_map<std::string, XrPath> ids_;
};

// ---- objects -------------------------------------------------------------------------------------

struct Action {
  uint64_t id = 0;
  uint64_t set = 0;
  uint64_t instance = 0;
  std::string name, localized;
  XrActionType type = XR_ACTION_TYPE_BOOLEAN_INPUT;
  std::vector<XrPath> subaction_paths;
};

struct ActionSet {
  uint64_t id = 0;
  uint64_t instance = 0;
  std::string name, localized;
  uint32_t priority = 0;
  bool attached = false;  // attached to some session: immutable from then on
  std::vector<uint64_t> actions;
};

// What an action reads once its set is attached to a session.
struct BoundAction {
  std::string name;
  XrActionType type = XR_ACTION_TYPE_BOOLEAN_INPUT;
  std::vector<XrPath> subaction_paths;
  std::vector<std::string> sources;  // binding paths in the active profile
  struct Slot {                      // [0] any subaction path, [1] left, [2] right
    bool active = false;
    bool changed = false;
    float value[2] = {0, 0};
    XrTime last_change = 0;
  } slots[3];
};

struct Session {
  uint64_t id = 0;
  uint64_t instance = 0;
  XrSessionState state = XR_SESSION_STATE_UNKNOWN;         // as delivered to the app
  XrSessionState queued_state = XR_SESSION_STATE_UNKNOWN;  // the latest queued
  bool running = false;
  bool exit_requested = false;
  bool loss_queued = false;
  bool lost = false;  // LOSS_PENDING was delivered
  XrViewConfigurationType view_config = XR_VIEW_CONFIGURATION_TYPE_PRIMARY_STEREO;

  // Frame loop.
  bool waited = false;  // xrWaitFrame returned, xrBeginFrame not yet called
  bool begun = false;   // xrBeginFrame returned, xrEndFrame not yet called
  uint64_t wait_frame = 0;  // frame index of the last xrWaitFrame
  bool synchronized_queued = false;
  bool visible_queued = false;
  // xrWaitFrame paces frames at the display rate: it returns no earlier than this.
  std::chrono::steady_clock::time_point next_wait{};

  // Vulkan (objects on the app's device; the runtime owns pool, fence and staging buffer).
  VkInstance vk_instance = VK_NULL_HANDLE;
  VkPhysicalDevice vk_physical = VK_NULL_HANDLE;
  VkDevice vk_device = VK_NULL_HANDLE;
  VkQueue vk_queue = VK_NULL_HANDLE;
  uint32_t queue_family = 0;
  VkCommandPool vk_pool = VK_NULL_HANDLE;
  VkFence vk_fence = VK_NULL_HANDLE;
  VkBuffer staging = VK_NULL_HANDLE;
  VkDeviceMemory staging_memory = VK_NULL_HANDLE;
  VkDeviceSize staging_size = 0;
  void* staging_map = nullptr;

  std::vector<uint64_t> spaces, swapchains;

  // Actions.
  bool attached = false;
  std::vector<uint64_t> attached_sets;
  std::string active_profile;  // empty: no profile active
  std::map<uint64_t, BoundAction> bound;  // by action id
};

struct Space {
  uint64_t id = 0;
  uint64_t session = 0;
  bool is_action = false;
  XrReferenceSpaceType reference = XR_REFERENCE_SPACE_TYPE_LOCAL;
  uint64_t action = 0;
  XrPath subaction = XR_NULL_PATH;
  Pose offset;  // poseInReferenceSpace / poseInActionSpace
};

struct Swapchain {
  uint64_t id = 0;
  uint64_t session = 0;
  XrSwapchainCreateFlags create_flags = 0;
  XrSwapchainUsageFlags usage = 0;
  VkFormat format = VK_FORMAT_UNDEFINED;
  uint32_t width = 0, height = 0, array_size = 1, face_count = 1, mip_count = 1, sample_count = 1;
  VkDevice device = VK_NULL_HANDLE;
  std::vector<VkImage> images;
  std::vector<VkDeviceMemory> memory;
  std::deque<uint32_t> acquired;        // acquired, not yet waited, oldest first
  std::optional<uint32_t> waited;       // waited, not yet released
  std::optional<uint32_t> last_released;
  uint32_t next_acquire = 0;
  uint32_t acquired_total = 0;          // for static swapchains (one acquire only)
  bool colour = true;
};

struct Instance {
  uint64_t id = 0;
  std::string app_name;
  bool ext_vulkan2 = false, ext_depth = false;
  Script script;
  std::string record_path, capture_dir;
  RecordWriter record;
  PathTable paths;
  std::deque<XrEventDataBuffer> events;
  uint32_t events_lost = 0;
  uint64_t frames_waited = 0;  // the next xrWaitFrame's frame index
  uint64_t frames_submitted = 0;
  int64_t system_away = 0;  // xrGetSystem calls still to fail with FORM_FACTOR_UNAVAILABLE (-1: all)
  bool graphics_requirements_queried = false;
  VkInstance vk_instance = VK_NULL_HANDLE;      // from xrGetVulkanGraphicsDevice2KHR
  VkPhysicalDevice vk_physical = VK_NULL_HANDLE;
  bool gpu_switch_pending = false;  // a loss happened and the script moves the headset to another GPU
  // Suggested bindings: profile path -> (action id, binding path), in suggestion order of profiles.
  std::vector<std::pair<std::string, std::vector<std::pair<uint64_t, std::string>>>> suggested;
  std::vector<uint64_t> sessions, action_sets;
};

// ---- registry ------------------------------------------------------------------------------------

class Registry {
 public:
  static Registry& get();
  // Writes the live-object report (NNXR_XRSIM_LIVE) when the runtime is unloaded or the process
  // ends.
  ~Registry();

  std::mutex mutex;
  std::unordered_map<uint64_t, std::unique_ptr<Instance>> instances;
  std::unordered_map<uint64_t, std::unique_ptr<Session>> sessions;
  std::unordered_map<uint64_t, std::unique_ptr<Space>> spaces;
  std::unordered_map<uint64_t, std::unique_ptr<Swapchain>> swapchains;
  std::unordered_map<uint64_t, std::unique_ptr<ActionSet>> action_sets;
  std::unordered_map<uint64_t, std::unique_ptr<Action>> actions;
  uint64_t last_instance = 0;  // errors are recorded into this instance's record

  uint64_t new_id() { return next_id_++; }
  void note_error(const char* function, XrResult result);

 private:
  uint64_t next_id_ = 0x100;
};

template <class H>
uint64_t id_of(H handle) {
  return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(handle));
}
template <class H>
H handle_of(uint64_t id) {
  return reinterpret_cast<H>(static_cast<uintptr_t>(id));
}
template <class T, class H>
T* find(std::unordered_map<uint64_t, std::unique_ptr<T>>& table, H handle) {
  auto it = table.find(id_of(handle));
  return it == table.end() ? nullptr : it->second.get();
}

// Runs an entry point's body under the registry lock, turning exceptions into XrResults and
// recording every error returned.
template <class F>
XrResult guarded(const char* function, F&& body) {
  Registry& r = Registry::get();
  std::lock_guard<std::mutex> lock(r.mutex);
  XrResult result = XR_ERROR_RUNTIME_FAILURE;
  try {
    // A function the script says fails (`fail xrName`) does nothing and returns RUNTIME_FAILURE.
    auto inst = r.instances.find(r.last_instance);
    if (inst != r.instances.end() && inst->second->script.fails(function)) result = XR_ERROR_RUNTIME_FAILURE;
    else result = body();
  } catch (const std::bad_alloc&) {
    result = XR_ERROR_OUT_OF_MEMORY;
  } catch (...) {
    result = XR_ERROR_RUNTIME_FAILURE;
  }
  if (XR_FAILED(result)) r.note_error(function, result);
  return result;
}

// ---- shared helpers ------------------------------------------------------------------------------

// The two-call idiom: with capacity 0 only the count is written; a too small capacity is
// XR_ERROR_SIZE_INSUFFICIENT (count still written); otherwise fill(i) is called for each element.
template <class Fill>
XrResult two_call(uint32_t capacity, uint32_t* count_output, uint32_t count, Fill&& fill) {
  if (count_output == nullptr) return XR_ERROR_VALIDATION_FAILURE;
  *count_output = count;
  if (capacity == 0) return XR_SUCCESS;
  if (capacity < count) return XR_ERROR_SIZE_INSUFFICIENT;
  for (uint32_t i = 0; i < count; ++i) fill(i);
  return XR_SUCCESS;
}

// Copies a string into a fixed char array of a two-call buffer (capacity includes the terminator).
XrResult string_two_call(const std::string& s, uint32_t capacity, uint32_t* count_output, char* buffer);

// The first structure of `type` in a next chain, or nullptr.
const XrBaseInStructure* find_in_chain(const void* next, XrStructureType type);

const char* result_name(XrResult r);
const char* session_state_name(XrSessionState s);
std::string path_string(const Instance& inst, XrPath p);  // "" for an unknown path

bool pose_valid(const XrPosef& p);  // finite position, unit quaternion
Pose to_pose(const XrPosef& p);
XrPosef to_xr(const Pose& p);
Pose compose(const Pose& a, const Pose& b);  // a * b: b expressed in a's frame, in a's parent
Pose inverse(const Pose& p);
Vec3 rotate(const Quat& q, const Vec3& v);

// Frames <-> time.
XrTime frame_time(uint64_t frame);
uint64_t frame_at(XrTime time);

// Events.
void push_event(Instance& inst, const XrEventDataBuffer& event);
void queue_state(Instance& inst, Session& s, XrSessionState state);
// Walks a running session down to STOPPING (exit request by app or script).
void queue_stop(Instance& inst, Session& s);

// Destruction of children, used by the destroy entry points and by parents' destruction.
void destroy_space(Registry& r, uint64_t id);
void destroy_swapchain(Registry& r, uint64_t id);
void destroy_session(Registry& r, uint64_t id);
void destroy_action_set(Registry& r, uint64_t id);

// Capture of submitted colour images (swapchain.cpp).
void capture_view(Instance& inst, Session& s, const Swapchain& sc, const XrSwapchainSubImage& sub, uint64_t frame,
                  uint32_t layer, uint32_t view);
void release_session_vulkan(Session& s);

}  // namespace xrsim

// ---- entry points --------------------------------------------------------------------------------

#define XRSIM_CORE_FUNCTIONS(_)                                                                           \
  _(EnumerateInstanceExtensionProperties)                                                                 \
  _(CreateInstance) _(DestroyInstance) _(GetInstanceProperties) _(PollEvent) _(ResultToString)            \
  _(StructureTypeToString) _(GetSystem) _(GetSystemProperties) _(EnumerateEnvironmentBlendModes)          \
  _(CreateSession) _(DestroySession) _(EnumerateReferenceSpaces) _(CreateReferenceSpace)                  \
  _(GetReferenceSpaceBoundsRect) _(CreateActionSpace) _(LocateSpace) _(DestroySpace)                      \
  _(EnumerateViewConfigurations) _(GetViewConfigurationProperties) _(EnumerateViewConfigurationViews)     \
  _(EnumerateSwapchainFormats) _(CreateSwapchain) _(DestroySwapchain) _(EnumerateSwapchainImages)         \
  _(AcquireSwapchainImage) _(WaitSwapchainImage) _(ReleaseSwapchainImage) _(BeginSession) _(EndSession)   \
  _(RequestExitSession) _(WaitFrame) _(BeginFrame) _(EndFrame) _(LocateViews) _(StringToPath)             \
  _(PathToString) _(CreateActionSet) _(DestroyActionSet) _(CreateAction) _(DestroyAction)                 \
  _(SuggestInteractionProfileBindings) _(AttachSessionActionSets) _(GetCurrentInteractionProfile)         \
  _(GetActionStateBoolean) _(GetActionStateFloat) _(GetActionStateVector2f) _(GetActionStatePose)         \
  _(SyncActions) _(EnumerateBoundSourcesForAction) _(GetInputSourceLocalizedName) _(ApplyHapticFeedback)  \
  _(StopHapticFeedback)

#define XRSIM_VULKAN2_FUNCTIONS(_) \
  _(GetVulkanGraphicsRequirements2KHR) _(CreateVulkanInstanceKHR) _(GetVulkanGraphicsDevice2KHR) _(CreateVulkanDeviceKHR)

namespace xrsim::api {
#define XRSIM_DECLARE(name) std::remove_pointer_t<PFN_xr##name> name;
XRSIM_CORE_FUNCTIONS(XRSIM_DECLARE)
XRSIM_VULKAN2_FUNCTIONS(XRSIM_DECLARE)
#undef XRSIM_DECLARE
XrResult XRAPI_CALL GetInstanceProcAddr(XrInstance instance, const char* name, PFN_xrVoidFunction* function);
}  // namespace xrsim::api
