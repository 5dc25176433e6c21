// The headset viewer: an OpenXR session that renders the scene in stereo and turns controller
// input into interaction.
//
//   XrViewer viewer(options);            // throws NoHeadsetError when there is no runtime or HMD
//   viewer.load(model_source, input_source);
//   viewer.run();                         // until the session ends or options.max_frames frames
//   XrStats s = viewer.stats();
//
// Setup (XR_KHR_vulkan_enable2): the runtime creates the Vulkan instance and device from the
// engine's create-infos (engine/device.h), which the engine then adopts; one array swapchain of two
// layers at the recommended size is rendered by the engine's multiview renderer in one pass; the
// app space is STAGE when offered, else LOCAL. The frame loop is the engine's (worker results taken
// in, O(1) work per frame) framed by xrWaitFrame / xrBeginFrame / xrEndFrame; the only wait
// between xrWaitFrame and xrEndFrame is for the swapchain image and the frame slot's fence.
//
// Session states: READY begins the session, STOPPING ends it, EXITING and LOSS_PENDING end the
// run (a lost session is not rebuilt; the run ends with a message). With max_frames the viewer
// asks the runtime to exit (xrRequestExitSession) once that many frames showed the scene.
//
// Interaction: the actions and suggested bindings of xr/bindings.h (a profile the runtime rejects
// is logged and skipped), xr/gestures.h for grab, two-hand scale, thumbstick thresholds (with a
// haptic tick per step), trigger select and menu reset.
//
// Not yet: the desktop mirror window, the depth layer (XR_KHR_composition_layer_depth), the
// in-view panel and controller ray drawing.
#pragma once

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/desktop.h"

namespace nnxr::xr {

// No OpenXR runtime, or a runtime without a head-mounted display.
class NoHeadsetError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct XrStats {
  engine::ViewStats view;
  std::vector<std::string> session_states;  // as delivered, e.g. "READY", "FOCUSED"
  std::string runtime;                      // runtime name and version
  std::string space;                        // "STAGE" or "LOCAL"
  std::string profile;                      // active interaction profile of the right hand
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

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace nnxr::xr
