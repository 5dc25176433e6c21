// The desktop viewer: a GLFW window with a Vulkan swapchain, the fly-through controls and the
// frame loop; and the same loop without a window, drawing offscreen.
//
//   DesktopViewer viewer(options);             // throws NoDisplayError without a display
//   viewer.load(model, input);                 // handed to the worker; returns at once
//   while (viewer.frame()) {}                  // or viewer.run()
//   ViewStats stats = viewer.stats();
//
// A frame is a sequence of named stages: poll events, read input, take in published results,
// update uniforms, record, submit (and present). Its CPU cost does not depend on the scene size;
// it never waits on the worker, only on the GPU fence of the frame slot it reuses.
//
// Ownership and threads: a viewer owns its window, Vulkan instance and device, scene buffers,
// renderer and worker; create, use and destroy it on one thread (the frame thread; GLFW wants it
// to be the main thread). Only one DesktopViewer may exist at a time (GLFW is process-global).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "engine/interaction.h"
#include "engine/viewer_state.h"
#include "engine/worker.h"

namespace nnxr::engine {

// No window can be opened: no display, or the window system refused. The caller may fall back
// to offscreen rendering.
class NoDisplayError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct ViewerOptions {
  uint32_t width = 1280, height = 720;
  bool validation = false;   // Vulkan validation layer (also NNXR_VULKAN_VALIDATION=1)
  bool vsync = true;         // desktop: FIFO presentation; off: MAILBOX/IMMEDIATE when offered
  bool visible = true;       // desktop: show the window (tests may hide it)
  bool mirror = true;        // headset: show the left eye in a desktop window when there is a display
  uint64_t max_frames = 0;   // run(): stop after this many frames (0: until closed)
  std::string screenshot_dir = ".";  // F12 writes nnxr-<n>.png here
  std::string final_screenshot;      // run() with max_frames: the last frame is also saved here
  WorkerOptions worker;      // worker.scene.budget also sizes the scene buffers
  // The layer window, op types, tensors and dim/hide to start with (and return to on reset);
  // filter_tensors names filter.tensors. Thresholds come from the interaction's defaults.
  scene::Filter filter;
  std::vector<std::string> filter_tensors;
  // Budget on a software renderer (lavapipe) unless the budget was chosen explicitly: drawing
  // millions of elements there takes seconds per frame.
  bool budget_explicit = false;
  uint64_t software_budget = 300'000;
};

// True when a window system is reachable at all (DISPLAY or WAYLAND_DISPLAY set).
bool display_available();

class Device;
// Lowers options.worker.scene.budget to what `device` can hold, and on a CPU device (lavapipe) to
// options.software_budget unless the budget was chosen explicitly; says so on stderr.
void fit_budget(const Device& device, ViewerOptions& options);

class DesktopViewer {
 public:
  explicit DesktopViewer(const ViewerOptions& options);
  ~DesktopViewer();
  DesktopViewer(const DesktopViewer&) = delete;
  DesktopViewer& operator=(const DesktopViewer&) = delete;

  void load(ModelSource model, InputSource input);
  // Runs one frame. Returns false once the window was asked to close.
  bool frame();
  // Frames until the window closes or options.max_frames were drawn; then waits for the GPU.
  void run();

  // The same paths as the window's callbacks, for scripted input.
  void key(Key key, Press press);
  void click(Button button, Press press, float x, float y);
  void move_cursor(float x, float y);  // as the window's cursor callback gets it (window pixels)
  void type(std::string_view text);  // characters, as the window's character callback gets them
  // Called with the paths of files dropped on the window (e.g. to set an input image).
  void on_drop(std::function<void(const std::vector<std::string>&)> handler);
  // Asks the window system for another window size (the swapchain follows when it is granted).
  void set_window_size(uint32_t width, uint32_t height);
  // Rebuilds the swapchain and the renderer now, as a change of the surface's colour format does
  // (the window moved to a display of another format). For tests: window systems seldom do it.
  void rebuild_renderer();
  // Saves the next frame's image as a PNG (after it is drawn; see frame()). Returns nothing;
  // the path is printed and kept in last_screenshot().
  void screenshot(std::string path);
  const std::string& last_screenshot() const;

  ViewStats stats() const;
  Worker& worker();
  Interaction& interaction();
  const ViewerState& state() const;
  uint64_t validation_errors() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Without a window: the same worker, interaction and frame stages drawing into an offscreen
// target. run() draws max_frames frames (at least one), waiting first for the worker's first
// scene (or failure), so that scripted headless runs are deterministic; write_png() saves the
// last frame.
class OffscreenViewer {
 public:
  explicit OffscreenViewer(const ViewerOptions& options);
  ~OffscreenViewer();
  OffscreenViewer(const OffscreenViewer&) = delete;
  OffscreenViewer& operator=(const OffscreenViewer&) = delete;

  void load(ModelSource model, InputSource input);
  void run();
  void key(Key key, Press press);
  void write_png(const std::string& path) const;
  ViewStats stats() const;
  Worker& worker();
  Interaction& interaction();
  uint64_t validation_errors() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace nnxr::engine
