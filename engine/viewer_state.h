// What the frame thread knows about the viewer beyond the GPU: the interaction state, what the
// worker has published (model, resident and drawn counts, errors, progress), the selection, and
// per-frame timings. Shared by the desktop window and the offscreen loop; owns no Vulkan object.
//
// Threads: frame thread only. The Worker and Interaction it is handed outlive it; the Renderer
// it is handed (it sets the selection's highlight there) must stay alive until rebind() hands it
// another one or the ViewerState is destroyed.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/frame_times.h"
#include "engine/interaction.h"
#include "engine/overlay.h"
#include "engine/renderer.h"
#include "engine/worker.h"

namespace nnxr::engine {

// The numbers `--frames N --stats` prints.
struct ViewStats {
  uint64_t frames = 0;        // frames drawn once the scene was shown (or loading failed)
  uint64_t frames_total = 0;  // including the frames drawn while loading
  double cpu_median_ms = 0, cpu_p99_ms = 0;  // frame-thread CPU time per frame
  // Wall time per frame, waits on the GPU included: the frame's whole cost (a CPU rasteriser
  // draws on other threads), not only the frame thread's own work.
  double wall_median_ms = 0, wall_p99_ms = 0;
  double first_frame_ms = 0;                 // from viewer start to the first frame submitted
  double first_scene_ms = 0;                 // ... to the first frame that drew a scene (0: none)
  uint64_t resident_neurons = 0, resident_connections = 0;
  uint64_t drawn_neurons = 0, drawn_connections = 0;
  uint64_t activations_total = 0, activations_shown = 0;  // of laid-out tensors; shown as images
  std::vector<std::string> focus;  // tensors with points and connections (empty: every tensor)
  WorldTransform world;
  float neuron_threshold = 0, connection_threshold = 0;
  FilterSummary filter;
  std::optional<SelectionState> selection;
  std::vector<std::string> errors;
  uint64_t validation_errors = 0;
  std::string model;
  // Several inputs (WorkerOptions::inputs): the one shown, how many, its name; the median time
  // from a switch (or a compare flip) to the first frame that drew its scene (0: none yet).
  size_t input_index = 0, input_count = 0;
  std::string input_file;
  double input_switch_ms = 0;
  uint64_t input_switches = 0;
  std::string compare_show;  // compare mode: "A", "B" or "A-B"; empty otherwise
  double compare_flip_ms = 0;
  uint64_t compare_flips = 0;
};

// Compare mode: above the network (bounds lo..hi in network space, placed by `world`), the
// divergence of A and B along its depth, scaled to its largest value, and the tensors that
// changed most.
void draw_divergence(OverlayBuilder& overlay, const CompareSummary& summary, glm::vec3 lo, glm::vec3 hi,
                     const glm::mat4& world);

class ViewerState {
 public:
  using Clock = std::chrono::steady_clock;
  ViewerState(Worker& worker, Interaction& interaction, Renderer& renderer);

  // The frame loop replaced its renderer (e.g. the swapchain's format changed): highlights go to
  // `renderer` from now on, and the current one is set there at once. The old renderer is not
  // touched again and may already be gone.
  void rebind(Renderer& renderer);

  // Frame stage "take in published results": worker events → interaction, highlight, messages.
  // `aspect` frames the home view of a newly loaded model. Never blocks.
  void take_in(float aspect);
  // The desktop's home view, clear of the panels drawn over the window (`window` pixels; `panels`:
  // the view's text panels and the filter menu, engine/interaction.h panel_rects), as `render`
  // frames clear of its own (engine/camera.h frame_clear). Each frame: the home is framed again
  // when a panel lies outside every rectangle it was framed clear of since the model came (the
  // prediction and the legend appear with the first scene; a legend that narrows again does not
  // move it back; a panel that grew replaces its smaller self) or the window's size changed, and the camera goes there only while it stands at
  // the home (Interaction::at_home). The headset has no panels over its view and never calls it.
  // `picture`: what the input picture beside the network needs framed (SceneBuffers::
  // picture_points, as `render` frames it; a new one frames the home again).
  void frame_home(glm::vec2 window, std::span<const ScreenRect> panels, std::span<const glm::vec3> picture = {});
  // What the home view was last framed clear of (pixels of home_window()).
  const std::vector<ScreenRect>& home_panels() const { return home_panels_; }
  glm::vec2 home_window() const { return home_window_; }
  // What the home view frames: the corners of the blocks a hiding filter shows (every block's
  // when it shows them all, or dims the rest, or shows none) and, with every block, the words
  // over them; as `render` frames.
  const std::vector<glm::vec3>& home_points() const { return home_points_; }
  // The input picture's points the home was last framed with (frame_home), besides home_points().
  const std::vector<glm::vec3>& home_picture() const { return home_picture_; }
  // Passes a desktop command on (filter change → worker, pick ray → worker).
  void apply(const Command& command);
  // The world-space ray the user points along (desktop: through the mouse; headset: the aim
  // ray): the legend follows the tensor under it. At most one request every 50 ms reaches the
  // worker, and only when the ray moved.
  void hover(const Ray& world_ray);
  // Whether a selection is also written to stderr as a line (the headset's default); the desktop
  // window shows it in its selection panel instead.
  void set_print_selection(bool print) { print_selection_ = print; }
  // Frame stage "update uniforms".
  FrameParams frame_params(float aspect) const;
  // Tells the worker where the viewer looks (the eye's world-space view and projection; the
  // world transform and the selection are the interaction's) and what it points at (`aim`, a
  // world-space ray: the mouse cursor's on the desktop, the controller's aim ray in the headset;
  // nullopt: none, the view's centre ray stands in), so that it re-chooses the focus
  // (WorkerOptions::follow_view). Posts only when the view or the aim moved noticeably; never
  // blocks.
  void follow_view(const glm::mat4& view, const glm::mat4& projection, const std::optional<Ray>& aim = std::nullopt);

  // Bookkeeping for a frame that was submitted and drew `generation` (0: none). `wall_ms`: the
  // frame's wall time as the loop measured it (from its start, waits included); when < 0, the
  // time since the previous frame_done() stands for it.
  void frame_done(double cpu_ms, uint64_t generation, double wall_ms = -1);
  std::string title() const;
  ViewStats stats() const;

  uint64_t filter_requested() const { return filter_requested_; }
  uint64_t filter_applied() const { return filter_applied_; }
  uint64_t scene_generation() const { return generation_; }
  // The corners of the loaded model's blocks (network space; empty before a model is in): what
  // the home view frames, as `render` frames them (engine/camera.h frame_points), and what the
  // headset places (xr/placement.h).
  const std::vector<glm::vec3>& block_corners() const { return corners_; }
  bool failed() const { return !errors_.empty(); }
  // The worker is idle and has shown a scene or failed: what the user asked for is on screen.
  bool settled() const;
  uint64_t settled_frames() const { return cpu_ms_.count(); }
  Clock::time_point start() const { return start_; }

 private:
  void set_highlight(Highlight highlight);

  Worker& worker_;
  Interaction& interaction_;
  Renderer* renderer_;
  Highlight highlight_;  // what renderer_ shows; set again on rebind()
  Clock::time_point start_ = Clock::now();
  std::string model_ = "(loading)";
  float neuron_spacing_ = 0.004f;
  uint64_t generation_ = 0;
  uint64_t resident_neurons_ = 0, resident_connections_ = 0;
  uint64_t drawn_neurons_ = 0, drawn_connections_ = 0;
  uint64_t activations_total_ = 0, activations_shown_ = 0;
  uint64_t filter_requested_ = 0, filter_applied_ = 0;
  uint64_t select_requested_ = 0;
  bool print_selection_ = true;
  std::optional<Ray> last_hover_;
  Clock::time_point last_hover_time_{};
  // The last pick (network space): asked again after a refocus, whose scene has other indices.
  struct Pick {
    std::array<float, 3> origin{}, direction{};
    float radius = 0;
  };
  std::optional<Pick> last_pick_;
  bool loaded_ = false;  // a model is in: views go to the worker
  std::vector<glm::vec3> corners_;  // of the loaded model's blocks
  std::vector<glm::vec3> home_points_;  // what the home view frames
  std::vector<ScreenRect> home_panels_;  // what it was framed clear of, grown as panels grew
  std::vector<glm::vec3> home_picture_;  // the input picture's points it frames too
  glm::vec2 home_window_{0};
  std::optional<scene::FocusView> view_sent_;
  std::vector<std::string> focus_;  // of the scene shown (empty: every tensor)
  std::vector<std::string> errors_;
  std::string last_error_;
  FrameTimes cpu_ms_, wall_ms_;  // of settled frames
  Clock::time_point last_frame_{};
  uint64_t frames_total_ = 0;
  double first_frame_ms_ = 0, first_scene_ms_ = 0;
  double last_cpu_ms_ = 0;
  // Several inputs and compare mode: a switch or flip waits for a scene newer than `generation`
  // that is not the exact build of an earlier input (SceneBuilt::refined); `target` is that
  // scene's generation once posted, and the first frame drawing it ends the wait.
  struct Awaited {
    Clock::time_point start;
    uint64_t generation = 0;
    size_t previous_input = 0;
    bool flip = false;
    uint64_t target = 0;
  };
  size_t input_index_ = 0;
  std::optional<Awaited> awaited_;
  std::vector<double> switch_ms_, flip_ms_;
  std::string input_message_;  // shown in the title: an input that could not be read
  std::optional<CompareSummary> compare_;  // of the scene shown (compare mode)
  mutable OverlayBuilder overlay_;         // the divergence curve and panel, rebuilt per frame
};

}  // namespace nnxr::engine
