// xrsim: a simulated OpenXR runtime for tests, loaded through the real Khronos loader.
//
// How a test uses it
//   1. Point the loader at the runtime: XR_RUNTIME_JSON=<build>/tests/xrsim/nnxr_xrsim.json
//      (the CMake target exposes the path as the compile definition NNXR_XRSIM_MANIFEST when a test
//      links nnxr_xrsim_client).
//   2. Optionally set, before xrCreateInstance (the runtime reads them there):
//        NNXR_XRSIM_SCRIPT       a timeline script (format below); without it the head stands still
//                                at (0, 1.6, 0) in STAGE and no button is pressed.
//        NNXR_XRSIM_RECORD       file the record (format below) is written to at xrDestroyInstance.
//        NNXR_XRSIM_NO_DEPTH_LAYER  set (not "0"): XR_KHR_composition_layer_depth is not offered
//                                (read by xrEnumerateInstanceExtensionProperties and xrCreateInstance).
//        NNXR_XRSIM_LIVE         file that gets one line "live <instances> <sessions> <spaces>
//                                <swapchains> <action sets> <actions>" when the runtime is
//                                unloaded or the process ends: what the app left undestroyed.
//        NNXR_XRSIM_CAPTURE_DIR  existing folder; at every xrEndFrame the colour image of each view
//                                of each projection layer is copied to the host and saved as
//                                frame<NNNNN>_layer<L>_view<V>.png (8-bit RGBA/BGRA formats only;
//                                the stored bytes are written as they are, so an sRGB image gives
//                                an sRGB PNG).
//   3. Talk to it only through the loader (libopenxr_loader), with the API layer
//      XR_APILAYER_LUNARG_core_validation enabled. Debian 12's layer does not call debug-utils
//      messengers; set XR_CORE_VALIDATION_EXPORT_TYPE=text and XR_CORE_VALIDATION_FILE_NAME to
//      collect its messages (client/xr_client.h does all of this).
//
// What it simulates
//   One HMD system (XR_FORM_FACTOR_HEAD_MOUNTED_DISPLAY), PRIMARY_STEREO views of 256x256
//   (changeable by the script), OPAQUE blend, reference spaces VIEW, LOCAL and STAGE, Vulkan through
//   XR_KHR_vulkan_enable2 (the runtime prefers a CPU device, i.e. lavapipe, when there is one), depth
//   layers through XR_KHR_composition_layer_depth (unless NNXR_XRSIM_NO_DEPTH_LAYER), and the interaction profiles
//   khr/simple_controller, oculus/touch_controller, valve/index_controller, htc/vive_controller and
//   microsoft/motion_controller.
//
// Frames and time
//   xrWaitFrame paces frames at the display rate (kFramePeriod): it returns a frame period after
//   the previous one returned, or at once when the app is slower than that. The frame index is the number of xrWaitFrame calls made on the instance before (0-based, kept
//   across sessions). Frame N has predictedDisplayTime kFirstDisplayTime + N * kFramePeriod.
//   Poses asked for at a time T use the script state of frame round((T - kFirstDisplayTime) /
//   kFramePeriod); action states are those of the frame of the last xrWaitFrame when xrSyncActions
//   is called.
//
// Session states
//   xrCreateSession queues IDLE then READY. The first xrWaitFrame of a running session queues
//   SYNCHRONIZED, the next xrEndFrame VISIBLE then FOCUSED. The app-visible state changes when
//   xrPollEvent hands out the event (so xrBeginSession before READY was polled is
//   XR_ERROR_SESSION_NOT_READY). `request_exit` in the script or xrRequestExitSession walks down to
//   STOPPING; xrEndSession then queues IDLE and EXITING. `lose_session` (checked by xrWaitFrame,
//   which still succeeds; `lose_session_at_end`: by xrEndFrame) queues LOSS_PENDING and loses the session at once: every later call on it
//   returns XR_ERROR_SESSION_LOST, also before the app polled the event, as a real runtime may. A
//   new session can be created once xrGetSystem succeeds again. shouldRender is true in VISIBLE
//   and FOCUSED unless the script says `should_render off`.
//
// System
//   xrGetSystem fails with XR_ERROR_FORM_FACTOR_UNAVAILABLE (and xrCreateSession with
//   XR_ERROR_SYSTEM_INVALID) while the headset is away: for the first N calls of an instance with
//   `no_headset N` (all with `no_headset`), and for the N calls after a `lose_session N`.
//
// Simplifications (each documented where it matters)
//   One session per instance (a second xrCreateSession is XR_ERROR_LIMIT_REACHED). A second
//   xrWaitFrame without xrBeginFrame returns XR_ERROR_CALL_ORDER_INVALID instead of blocking.
//   Space velocities are not simulated (velocityFlags 0). The subactionPath of an
//   XrActiveActionSet is validated but every hand of the set is synchronised. Only projection
//   layers are captured.
//
// Script format (text, one command a line, '#' starts a comment; values hold until changed)
//   Options, anywhere before the first `frame` line:
//     stage off                          STAGE is not offered (xrEnumerateReferenceSpaces omits it)
//     prefer_profile /interaction_profiles/khr/simple_controller
//                                        the profile made active when the app suggested it (the
//                                        default choice is oculus/touch_controller when suggested,
//                                        else the first profile the app suggested)
//     view_size 256 256                  recommended per-eye image size
//     no_headset [N]                     "runtime present, no headset": xrGetSystem fails N times
//                                        (without N: always)
//     srgb off                           no sRGB colour swapchain format is offered
//     gpu_after_loss other               after each session loss the headset comes back on
//                                        another GPU: xrGetVulkanGraphicsDevice2KHR names the
//                                        next CPU-type physical device of the app's instance that
//                                        is not the one it named before (with two lavapipe ICDs
//                                        installed, the other one; with one, the same)
//     fail xrFunctionName                that function does nothing and returns
//                                        XR_ERROR_RUNTIME_FAILURE (repeatable)
//   Timeline:
//     frame N                            the following lines take effect at frame N (N ascending;
//                                        lines before the first `frame` belong to frame 0)
//     head px py pz [qx qy qz qw]        head pose in STAGE space (metres, unit quaternion)
//     ipd 0.064                          interpupillary distance in metres
//     grip left|right px py pz [qx qy qz qw]    grip pose of a hand in STAGE space
//     aim left|right px py pz [qx qy qz qw]     aim pose of a hand in STAGE space
//     /user/hand/right/input/squeeze/value 1.0  an input component of the active profile
//     /user/hand/right/input/thumbstick 0 0.8   two values: sets the /x and /y components
//     lose_session [N|forever]           session loss at this frame; the headset is then away for
//                                        N xrGetSystem calls (default 0; forever: never back)
//     lose_session_at_end [N|forever]    the same, but at this frame's xrEndFrame (after it
//                                        succeeded): an app that polls events before its next
//                                        call hears of the loss from LOSS_PENDING first
//     should_render on|off               shouldRender from this frame on (default on)
//     request_exit                       the runtime asks the app to exit at this frame
//   Inputs: an action bound to an identifier without a component (…/input/trigger) reads its
//   /value, else its /click component; a boolean action bound to a /value, /force, /x or /y
//   component is true when the value is above 0.5.
//
// Record format (text, one fact a line, written at xrDestroyInstance)
//   xrsim-record 1
//   state <frame> <XR_SESSION_STATE_…>      each state as delivered by xrPollEvent
//   profile <frame> <interaction profile path>  when a profile became active for the hands
//   swapchain <format> <width> <height> <arraySize> <sampleCount> <mipCount> <imageCount>
//   frame <index> <layerCount> <projectionViews> <depthInfos>   each successful xrEndFrame
//   capture <frame> <layer> <view> <file>
//   haptic <frame> <action name> <output path> <amplitude> <duration ns> <frequency>
//   haptic_stop <frame> <action name> <output path>
//   error <function> <XR_ERROR_…>            each error the runtime itself returned
//   end <frames submitted>
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace xrsim {

inline constexpr const char* kEnvScript = "NNXR_XRSIM_SCRIPT";
inline constexpr const char* kEnvRecord = "NNXR_XRSIM_RECORD";
inline constexpr const char* kEnvCaptureDir = "NNXR_XRSIM_CAPTURE_DIR";
inline constexpr const char* kEnvNoDepthLayer = "NNXR_XRSIM_NO_DEPTH_LAYER";
inline constexpr const char* kEnvLive = "NNXR_XRSIM_LIVE";

inline constexpr int64_t kFirstDisplayTime = 1'000'000'000;  // XrTime of frame 0, ns
inline constexpr int64_t kFramePeriod = 11'111'111;           // 90 Hz, ns
inline constexpr float kLocalOriginHeight = 1.6f;  // LOCAL's origin is this high above STAGE's
inline constexpr uint32_t kDefaultViewSize = 256;
inline constexpr float kDefaultIpd = 0.064f;

// The record of one instance, as read back by a test. Plain data.
struct Record {
  struct State {
    uint64_t frame = 0;
    std::string state;  // e.g. "XR_SESSION_STATE_FOCUSED"
  };
  struct Swapchain {
    int64_t format = 0;
    uint32_t width = 0, height = 0, array_size = 0, sample_count = 0, mip_count = 0, images = 0;
  };
  struct Frame {
    uint64_t index = 0;
    uint32_t layers = 0, projection_views = 0, depth_infos = 0;
  };
  struct Capture {
    uint64_t frame = 0;
    uint32_t layer = 0, view = 0;
    std::string file;
  };
  struct Haptic {
    uint64_t frame = 0;
    std::string action, path;
    bool stop = false;
    float amplitude = 0;
    int64_t duration = 0;
    float frequency = 0;
  };
  struct Error {
    std::string function, result;
  };
  struct Profile {
    uint64_t frame = 0;
    std::string path;
  };

  std::vector<State> states;
  std::vector<Profile> profiles;
  std::vector<Swapchain> swapchains;
  std::vector<Frame> frames;
  std::vector<Capture> captures;
  std::vector<Haptic> haptics;
  std::vector<Error> errors;
  bool complete = false;  // the closing `end` line was read
  uint64_t frames_submitted = 0;

  // True when `state` (e.g. "XR_SESSION_STATE_EXITING") was delivered at least once.
  bool reached(const std::string& state) const;
  // The delivered states in order, without frames.
  std::vector<std::string> state_names() const;
};

// Reads a record file. Returns nullopt and sets *error to one line naming the file and line when
// the file is missing or malformed.
std::optional<Record> read_record(const std::string& path, std::string* error);

}  // namespace xrsim
