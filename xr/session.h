// The headset viewer: an OpenXR session that renders the scene in stereo, turns controller input
// into interaction, shows feedback in view and mirrors the left eye on the desktop.
//
//   XrViewer viewer(options);            // throws NoHeadsetError when there is no runtime or HMD
//   viewer.load(model_source, input_source);
//   viewer.run();                         // until the session ends or options.max_frames frames
//   XrStats s = viewer.stats();
//
// Parts: xr/runtime.h (the OpenXR instance and the Vulkan bootstrap through
// XR_KHR_vulkan_enable2), xr/swapchains.h (the eye images), xr/input.h (actions, controller
// state), and here the session's state machine and the frame loop. The engine's objects (device,
// scene buffers, renderer, worker) belong to the viewer, not to a session: they outlive a lost
// session, so the scene stays resident until the headset is back.
//
// Setup: the runtime creates the Vulkan instance and device from the engine's create-infos
// (engine/device.h), which the engine then adopts; one array swapchain of two layers at the
// recommended size is rendered by the engine's multiview renderer in one pass; the app space is
// STAGE when offered, else LOCAL. The frame loop is the engine's (worker results taken in, O(1)
// work per frame) framed by xrWaitFrame / xrBeginFrame / xrEndFrame; the only waits between
// xrWaitFrame and xrEndFrame are for the swapchain images and the frame slot's fence. Frames that
// finished on the GPU are retired to the scene buffers on every pass of the loop, drawn or not,
// so that the worker can publish while the headset shows nothing (shouldRender false, not
// visible, or no session).
//
// Depth: when the runtime offers XR_KHR_composition_layer_depth, a second array swapchain of two
// depth layers (D32_SFLOAT, else D16_UNORM, as offered) is the renderer's depth target and each
// projection view carries an XrCompositionLayerDepthInfoKHR (depth 0..1, nearZ/farZ of the
// projection). Otherwise one line says so and depth stays in a private image.
//
// Session states: READY begins the session, STOPPING ends it, EXITING ends the run, and so does
// the loss of the instance (XR_TYPE_EVENT_DATA_INSTANCE_LOSS_PENDING). The session is lost when
// LOSS_PENDING arrives or any call returns XR_ERROR_SESSION_LOST (which a runtime may do before
// the event is polled): one line says so, the session and everything made for it (swapchains,
// spaces, action set) are destroyed once the device has finished its frames, and xrGetSystem is
// polled every 100 ms until the runtime offers the headset again; then a new session is made on
// the same Vulkan device. The worker, scene buffers and renderer stay meanwhile. A headset back
// on another GPU (xrGetVulkanGraphicsDevice2KHR names another physical device) gets a new device
// from the runtime with new scene buffers, renderer and mirror on it; the worker keeps its model,
// inference and layout and writes the images and the scene into the new buffers. With max_frames the viewer asks the runtime
// to exit (xrRequestExitSession) once that many frames showed the scene, over all sessions.
//
// Interaction: the actions and suggested bindings of xr/bindings.h (a profile the runtime rejects
// is logged and skipped), xr/gestures.h for grab, two-hand scale about the hands' midpoint,
// thumbstick thresholds (with a haptic tick per step), trigger select along the aim ray and menu
// reset. Feedback (xr/feedback.h), drawn by the renderer's overlay pass: each tracked controller's
// aim ray, gauges of both thresholds by the right controller, and a panel with the selected
// neuron's tensor, op, index and value.
//
// Desktop mirror (options.mirror, on unless --no-mirror): with a display, a window
// (engine/mirror.h) shows the left eye, blitted from the eye image in the frame's own command
// buffer and presented without waiting (zero-timeout acquire; a frame with no free window image
// skips the mirror). No display: no mirror, one line. Closing the window ends the session (or,
// while waiting for a lost headset, the run).
//
// OpenXR functions used (with those of runtime.h, swapchains.h and input.h): xrCreateSession,
// xrEnumerateReferenceSpaces, xrCreateReferenceSpace, xrPollEvent, xrBeginSession, xrEndSession,
// xrRequestExitSession, xrWaitFrame, xrBeginFrame, xrLocateViews, xrAcquireSwapchainImage,
// xrWaitSwapchainImage, xrReleaseSwapchainImage, xrEndFrame, xrDestroySpace, xrDestroySession.
//
// Ownership and threads: every OpenXR handle has a move-only owner (xr/handles.h), so a
// constructor that throws part-way frees what it made: session objects (action spaces, action
// set, swapchains with their image views, app space, session), then the OpenXR instance, then the
// Vulkan objects (mirror, renderer, scene buffers, device, instance). Create, run and destroy the
// viewer on one thread (the main thread when the mirror uses GLFW); load() and frames_waited()
// may be called from any thread.
#pragma once

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <glm/glm.hpp>

#include "engine/desktop.h"

namespace nnxr::xr {

// No OpenXR runtime, or a runtime without a head-mounted display.
class NoHeadsetError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct XrStats {
  engine::ViewStats view;
  std::vector<std::string> session_states;  // as delivered, e.g. "READY", "FOCUSED", over all sessions
  uint32_t sessions = 0;                    // sessions created (1 + those made after a loss)
  uint32_t session_losses = 0;              // sessions lost (LOSS_PENDING or XR_ERROR_SESSION_LOST)
  uint32_t gpu_moves = 0;                   // the headset came back on another GPU (device remade)
  uint64_t scene_generation = 0;            // scenes published by the worker and taken in
  std::string runtime;                      // runtime name and version
  std::string space;                        // "STAGE" or "LOCAL"
  std::string profile;                      // active interaction profile of the right hand
  // The board of the view's panels (xr/placement.h place_board): its top left corner and its
  // unit rightward direction in the room (its up is the room's).
  glm::vec3 board_top_left{0}, board_right{1, 0, 0};
  bool depth_layer = false;                 // depth submitted through XR_KHR_composition_layer_depth
  bool mirror = false;                      // a desktop window mirrors the left eye
  uint64_t mirror_presented = 0, mirror_skipped = 0;  // frames shown in it / skipped (no free image)
  // Wall time from xrWaitFrame's return to xrEndFrame's return (frames after the scene is shown).
  double wait_to_end_median_ms = 0, wait_to_end_p99_ms = 0;
};

class XrViewer {
 public:
  explicit XrViewer(const engine::ViewerOptions& options);
  ~XrViewer();
  XrViewer(const XrViewer&) = delete;
  XrViewer& operator=(const XrViewer&) = delete;

  void load(engine::ModelSource model, engine::InputSource input);
  void run();
  XrStats stats() const;
  // xrWaitFrame calls that returned so far, over all sessions (any thread; for watchdogs and tests).
  uint64_t frames_waited() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace nnxr::xr
