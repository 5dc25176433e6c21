// The desktop viewer under a private Xvfb with lavapipe and the Vulkan validation layer: the
// window opens, draws and closes with no validation error; keys change thresholds and the draw
// counts; clicks select; F12 writes a picture of the network; `nnxr view` prints its --stats line,
// falls back to offscreen without a display, and refuses --xr.
#include <limits>
#include <stb_image.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

#include "assets/assets.h"
#include "engine/annotations.h"
#include "engine/camera.h"
#include "engine/desktop.h"
#include "model/load.h"
#include "model/runtime/runtime.h"
#include "model/tensor_io.h"
#include "model/scene/focus.h"
#include "model/scene/scene.h"
#include "tests/engine/desktop_support.h"
#include "tests/support/json_line.h"
#include "tests/support/random_feeds.h"
#include "tests/support/run_nnxr.h"

namespace nnxr::engine {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

model::Graph digits() {
  return model::load_model_from_memory(assets::default_model().bytes, "digits.onnx");
}

// Deterministic pseudo-random inputs for every graph input (float32 only).
Feeds random_feeds(const model::Graph& g) { return test::random_feeds(g, 7, 0, 1); }

ViewerOptions test_options() { return test::desktop_test_options(640, 400, 200'000); }

using test::frames_until;

bool settle(DesktopViewer& v) {
  return frames_until(v, [&] { return v.state().settled(); });
}

TEST(Desktop, OpensDrawsAndClosesWithoutValidationErrors) {
  REQUIRE_DISPLAY();
  ViewStats stats;
  {
    DesktopViewer v(test_options());
    v.load({"digits", digits}, random_feeds);
    ASSERT_TRUE(settle(v)) << "the scene never appeared";
    for (int i = 0; i < 10; ++i) ASSERT_TRUE(v.frame());
    stats = v.stats();
    // The title shows the model, the filter state and the frame time.
    const std::string title = v.state().title();
    EXPECT_NE(title.find("digits"), std::string::npos) << title;
    EXPECT_NE(title.find("neurons q≥0,"), std::string::npos) << title;
    EXPECT_NE(title.find("connections q≥0.5"), std::string::npos) << title;
    EXPECT_NE(title.find(" ms"), std::string::npos) << title;
    EXPECT_EQ(title.find("error"), std::string::npos) << title;
    EXPECT_EQ(v.validation_errors(), 0u);
  }
  EXPECT_EQ(stats.model, "digits");
  EXPECT_GE(stats.frames, 10u);
  EXPECT_GE(stats.frames_total, stats.frames);
  EXPECT_GT(stats.resident_neurons, 0u);
  EXPECT_GT(stats.drawn_neurons, 0u);
  EXPECT_GT(stats.first_scene_ms, 0);
  EXPECT_TRUE(stats.errors.empty());
  EXPECT_GT(stats.cpu_median_ms, 0);
  EXPECT_GE(stats.cpu_p99_ms, stats.cpu_median_ms);
}

TEST(Desktop, ThresholdKeysChangeTheDrawCounts) {
  REQUIRE_DISPLAY();
  DesktopViewer v(test_options());
  v.load({"digits", digits}, random_feeds);
  ASSERT_TRUE(settle(v));
  const ViewStats before = v.stats();
  ASSERT_GT(before.drawn_neurons, 0u);
  // Raise the neuron threshold 10 rungs (q = 0.5): about half of each tensor's neurons remain.
  for (int i = 0; i < 10; ++i) v.key(Key::RightBracket, Press::Down);
  v.key(Key::RightBracket, Press::Up);
  ASSERT_TRUE(frames_until(v, [&] { return v.state().filter_applied() >= v.state().filter_requested(); }));
  const ViewStats raised = v.stats();
  EXPECT_NEAR(raised.neuron_threshold, 0.5f, 1e-6);
  EXPECT_LT(raised.drawn_neurons, before.drawn_neurons);
  EXPECT_GT(raised.drawn_neurons, before.drawn_neurons / 4);
  EXPECT_EQ(raised.resident_neurons, before.resident_neurons);  // a filter never rebuilds
  // Connections: the period key raises their threshold; counts fall.
  for (int i = 0; i < 8; ++i) v.key(Key::Period, Press::Down);
  ASSERT_TRUE(frames_until(v, [&] { return v.state().filter_applied() >= v.state().filter_requested(); }));
  const ViewStats conn = v.stats();
  EXPECT_GT(conn.connection_threshold, before.connection_threshold);
  if (before.drawn_connections > 0) {
    EXPECT_LT(conn.drawn_connections, before.drawn_connections);
  }
  EXPECT_EQ(conn.drawn_neurons, raised.drawn_neurons);
  // Back down to zero: everything resident is drawn again.
  for (int i = 0; i < 30; ++i) v.key(Key::LeftBracket, Press::Down);
  ASSERT_TRUE(frames_until(v, [&] { return v.state().filter_applied() >= v.state().filter_requested(); }));
  EXPECT_EQ(v.stats().drawn_neurons, before.resident_neurons);
  EXPECT_EQ(v.validation_errors(), 0u);
}

// The middle element of the digits model's block nearest the camera at the home view (640x400)
// that shows clear of the filter menu at the right edge (a click there presses the menu), where
// it appears, and that element. The nearest block is in front of every other along its ray.
struct OnScreen {
  float x = 0, y = 0;
  std::string tensor;
  int64_t element = 0;
};
OnScreen nearest_neuron(const DesktopViewer& v, const model::Graph& g) {
  const scene::Layout layout = scene::Layout::build(g, {});
  DesktopViewer& viewer = const_cast<DesktopViewer&>(v);
  const FlyCamera& c = viewer.interaction().camera();
  const FilterMenu menu{viewer.interaction().op_counts().size()};
  const FilterMenu::Placement placed = menu.desktop(640, 400);
  OnScreen best;
  float best_depth = std::numeric_limits<float>::infinity();
  for (const scene::Block& block : layout.blocks()) {
    const int64_t elements = block.tiles * block.tile_h * block.tile_w;
    const auto p = layout.position(block.tensor, elements / 2);
    const glm::vec4 clip = c.projection(640.0f / 400.0f) * c.view() * glm::vec4(p[0], p[1], p[2], 1);
    const float x = (clip.x / clip.w + 1) * 0.5f * 640, y = (clip.y / clip.w + 1) * 0.5f * 400;
    const bool on_screen = clip.w > 0 && x >= 0 && x < 640 && y >= 0 && y < 400;
    const bool on_menu = x >= placed.origin.x && x < placed.origin.x + menu.size().x * placed.scale &&
                         y >= placed.origin.y && y < placed.origin.y + menu.size().y * placed.scale;
    if (on_screen && !on_menu && clip.w < best_depth) {
      best_depth = clip.w;
      best = {x, y, g.tensors[block.tensor].name, elements / 2};
    }
  }
  EXPECT_FALSE(best.tensor.empty()) << "no block shows clear of the filter menu";
  return best;
}

TEST(Desktop, ClickingANeuronSelectsIt) {
  REQUIRE_DISPLAY();
  const model::Graph g = digits();
  DesktopViewer v(test_options());
  v.load({"digits", digits}, random_feeds);
  ASSERT_TRUE(settle(v));
  const OnScreen n = nearest_neuron(v, g);
  v.click(Button::Left, Press::Down, n.x, n.y);
  v.click(Button::Left, Press::Up, n.x, n.y);
  ASSERT_TRUE(frames_until(v, [&] { return v.interaction().selection().has_value() && !v.worker().progress().busy; }));
  const SelectionState& s = *v.interaction().selection();
  EXPECT_EQ(s.tensor_name, n.tensor);
  EXPECT_EQ(s.element, n.element);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(v.frame());  // the highlight draws
  EXPECT_EQ(v.validation_errors(), 0u);
  // A click into empty space clears it.
  v.click(Button::Left, Press::Down, 2, 2);
  ASSERT_TRUE(frames_until(v, [&] { return !v.interaction().selection().has_value(); }));
}

// Saves a screenshot of the next frame and loads it as RGBA.
std::vector<unsigned char> shoot(DesktopViewer& v, const std::string& name) {
  static int count = 0;
  const std::string path = name + "-" + std::to_string(++count) + ".png";
  v.screenshot(path);
  std::vector<unsigned char> out;
  const auto limit = std::chrono::steady_clock::now() + 30s;
  while (std::chrono::steady_clock::now() < limit && v.last_screenshot() != path)
    if (!v.frame()) return out;
  int w = 0, h = 0, n = 0;
  unsigned char* px = stbi_load(path.c_str(), &w, &h, &n, 4);
  if (!px) return out;
  out.assign(px, px + size_t(w) * h * 4);
  stbi_image_free(px);
  fs::remove(path);
  return out;
}

size_t pixels_differing(const std::vector<unsigned char>& a, const std::vector<unsigned char>& b) {
  size_t n = 0;
  for (size_t i = 0; i + 3 < std::min(a.size(), b.size()); i += 4)
    if (std::abs(a[i] - b[i]) + std::abs(a[i + 1] - b[i + 1]) + std::abs(a[i + 2] - b[i + 2]) > 24) ++n;
  return n;
}

// A change of the swapchain's colour format replaces the renderer. The viewer state must set the
// selection's highlight on the new renderer (it kept a reference to the old one: a
// heap-use-after-free under ASan at the next selection change) and show it there.
TEST(Desktop, ReplacingTheRendererKeepsTheHighlightOnTheNewOne) {
  REQUIRE_DISPLAY();
  const model::Graph g = digits();
  DesktopViewer v(test_options());
  v.load({"digits", digits}, random_feeds);
  ASSERT_TRUE(settle(v));
  const std::string path = (fs::temp_directory_path() / ("nnxr-rebuild-" + std::to_string(getpid()))).string();
  const std::vector<unsigned char> plain = shoot(v, path);
  const OnScreen n = nearest_neuron(v, g);
  v.click(Button::Left, Press::Down, n.x, n.y);
  v.click(Button::Left, Press::Up, n.x, n.y);
  ASSERT_TRUE(frames_until(v, [&] { return v.interaction().selection().has_value() && !v.worker().progress().busy; }));
  const std::vector<unsigned char> highlighted = shoot(v, path);
  ASSERT_FALSE(plain.empty());
  ASSERT_EQ(highlighted.size(), plain.size());
  ASSERT_GT(pixels_differing(plain, highlighted), 100u) << "the highlight dims the rest of the network";

  v.rebuild_renderer();
  const std::vector<unsigned char> rebuilt = shoot(v, path);
  ASSERT_EQ(rebuilt.size(), plain.size());
  EXPECT_LT(pixels_differing(highlighted, rebuilt), 20u) << "the new renderer shows the same highlight";

  // Selection changes after the replacement go to the new renderer (and never to the old one).
  v.click(Button::Left, Press::Down, 2, 2);
  ASSERT_TRUE(frames_until(v, [&] { return !v.interaction().selection().has_value(); }));
  const std::vector<unsigned char> cleared = shoot(v, path);
  EXPECT_LT(pixels_differing(plain, cleared), 20u) << "clearing the selection removes the highlight";
  v.click(Button::Left, Press::Down, n.x, n.y);
  ASSERT_TRUE(frames_until(v, [&] { return v.interaction().selection().has_value() && !v.worker().progress().busy; }));
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(v.frame());
  EXPECT_EQ(v.validation_errors(), 0u);
}

// The focus follows the mouse (WorkerOptions::follow_view): with a focus of the tensor pointed at
// and the nearest in view, moving the cursor over a block the view's centre did not choose makes
// its points resident (a click there selects a resident neuron at once); when the cursor leaves
// the window the view's centre chooses again.
TEST(Desktop, TheFocusFollowsTheMouseCursor) {
  REQUIRE_DISPLAY();
  const model::Graph g = digits();
  const scene::Layout layout = scene::Layout::build(g, {});
  ViewerOptions o = test_options();
  o.worker.follow_view = true;
  o.worker.focus_points = 1;
  o.worker.scene.connections_per_tensor = scene::kFocusConnectionsPerTensor;
  o.worker.scene.points_per_tensor = scene::kFocusPointsPerTensor;
  DesktopViewer v(o);
  v.load({"digits", digits}, random_feeds);
  auto has = [](const std::vector<std::string>& names, const std::string& name) {
    return std::find(names.begin(), names.end(), name) != names.end();
  };
  // No cursor yet: the view's centre ray and the nearest block in view choose.
  ASSERT_TRUE(frames_until(v, [&] { return !v.stats().focus.empty() && v.state().settled(); }));
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(v.frame());
  ASSERT_TRUE(frames_until(v, [&] { return v.state().settled(); }));
  const std::vector<std::string> before = v.stats().focus;
  // A block the centre did not choose, on screen and clear of the filter menu, that the ray
  // through one of its elements picks (the middle one first; the home view frames the blocks
  // closely, so that a block's middle may stand behind the block before it or under the menu).
  const FlyCamera& c = v.interaction().camera();
  const WorldTransform world = v.interaction().world();
  const FilterMenu menu{v.interaction().op_counts().size()};
  const FilterMenu::Placement placed = menu.desktop(640, 400);
  std::string name;
  float x = 0, y = 0;
  for (const scene::Block& block : layout.blocks()) {
    if (has(before, g.tensors[block.tensor].name)) continue;
    for (const int64_t element : {block.elements / 2, block.elements / 4, 3 * block.elements / 4, int64_t{0}, block.elements - 1}) {
      const auto p = layout.position(block.tensor, element);
      const glm::vec4 clip = c.projection(640.0f / 400.0f) * c.view() * world.matrix() * glm::vec4(p[0], p[1], p[2], 1);
      x = (clip.x / clip.w + 1) * 0.5f * 640, y = (clip.y / clip.w + 1) * 0.5f * 400;
      if (clip.w <= 0 || x < 0 || x >= 640 || y < 0 || y >= 400) continue;
      if (x >= placed.origin.x && x < placed.origin.x + menu.size().x * placed.scale && y >= placed.origin.y &&
          y < placed.origin.y + menu.size().y * placed.scale)
        continue;
      const Ray r = world.to_network(c.ray_through(x, y, 640, 400));
      const auto hit = layout.pick({r.origin.x, r.origin.y, r.origin.z}, {r.direction.x, r.direction.y, r.direction.z},
                                   4 * layout.options().neuron_spacing);
      if (hit && hit->tensor == block.tensor) {
        name = g.tensors[block.tensor].name;
        break;
      }
    }
    if (!name.empty()) break;
  }
  ASSERT_FALSE(name.empty()) << "every block on screen is in the first focus";

  v.move_cursor(x, y);
  ASSERT_TRUE(frames_until(v, [&] { return has(v.stats().focus, name) && v.state().settled(); })) << name;
  const ViewStats moved = v.stats();
  // Resident: the focus's tensors and the tensors feeding them, whole (digits is small):
  // focus_elements with one connection per focus tensor, less those connections.
  EXPECT_EQ(moved.resident_neurons, scene::focus_elements(g, layout, moved.focus, 1, 1) - moved.focus.size());
  EXPECT_GT(moved.resident_connections, 0u);

  // The cursor leaves the window: the view's centre chooses again.
  v.move_cursor(-1, -1);
  ASSERT_TRUE(frames_until(v, [&] { return !has(v.stats().focus, name) && v.state().settled(); }));
  EXPECT_EQ(v.stats().focus, before);

  // Back over it and clicked: its neuron is resident, so it is selected (and highlighted) at once.
  v.move_cursor(x, y);
  ASSERT_TRUE(frames_until(v, [&] { return has(v.stats().focus, name) && v.state().settled(); }));
  v.click(Button::Left, Press::Down, x, y);
  v.click(Button::Left, Press::Up, x, y);
  ASSERT_TRUE(frames_until(v, [&] { return v.interaction().selection().has_value() && !v.worker().progress().busy; }));
  EXPECT_EQ(v.interaction().selection()->tensor_name, name);
  EXPECT_TRUE(v.interaction().selection()->neuron.has_value());
  EXPECT_EQ(v.validation_errors(), 0u);
}

// The window opens on the picture `render` writes at its size: the home view is the camera
// render frames the blocks' corners with (engine/camera.h frame_clear, the overview preset, clear
// of the panels drawn over the picture: here the window's, with its filter menu), not one of the
// layout's bounding box.
TEST(Desktop, TheHomeViewIsRendersCamera) {
  REQUIRE_DISPLAY();
  const model::Graph g = digits();
  const scene::Layout layout = scene::Layout::build(g, {});
  ViewerOptions o = test_options();
  // The digit beside the network, as the view shows an image input (app/view.cpp).
  o.worker.words.complete = [](const model::Graph& graph, int64_t, ViewWords& w) {
    w.picture = InputPicture{graph.tensors[graph.inputs[0]].name, {}};
  };
  DesktopViewer v(o);
  v.load({"digits", digits}, random_feeds);
  ASSERT_TRUE(frames_until(v, [&] { return v.state().settled(); }));
  std::vector<glm::vec3> corners;
  for (const scene::Block& b : layout.blocks())
    add_corners(corners, glm::vec3(b.min[0], b.min[1], b.min[2]), glm::vec3(b.max[0], b.max[1], b.max[2]));
  // Framed clear of the panels over the window as render frames clear of its own (frame_clear),
  // with the input picture's points when the view shows one.
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(v.frame());
  ASSERT_EQ(v.state().home_window(), glm::vec2(640, 400));
  // The picture's points are annotate()'s billboard's (picture_to_frame), as render frames them.
  ASSERT_EQ(v.state().home_picture().size(), 8u);
  const scene::Block* input = layout.block(g.inputs[0]);
  ASSERT_NE(input, nullptr);
  const glm::vec3 centre = 0.5f * (v.state().home_picture().front() + v.state().home_picture().back());
  EXPECT_LT(centre.x, input->min[0]);  // before the input's block
  EXPECT_NEAR(centre.y, 0.5f * (input->min[1] + input->max[1]), 1e-4f);
  corners.insert(corners.end(), v.state().home_picture().begin(), v.state().home_picture().end());
  const Camera render = frame_clear(CameraPreset::Overview, corners, {640, 400}, v.state().home_panels());
  const FlyCamera& c = v.interaction().camera();
  EXPECT_LT(glm::length(c.position - render.eye), 1e-4f * glm::length(render.target - render.eye));
  EXPECT_LT(glm::length(c.forward() - glm::normalize(render.target - render.eye)), 1e-4f);
  EXPECT_FLOAT_EQ(c.fov_y, render.fov_y);
  // The box's framing differs for this network (its corners are empty): the test tells them apart.
  const auto lo = layout.bounds_min(), hi = layout.bounds_max();
  const Camera box = frame_bounds(CameraPreset::Overview, {lo[0], lo[1], lo[2]}, {hi[0], hi[1], hi[2]}, 640.0f / 400.0f);
  EXPECT_GT(glm::length(box.eye - render.eye), 1e-2f * glm::length(render.target - render.eye));
}

// Selection messages go to stderr: stdout is kept for the --stats line.
TEST(Desktop, SelectingPrintsNothingOnStdout) {
  REQUIRE_DISPLAY();
  const model::Graph g = digits();
  DesktopViewer v(test_options());
  v.load({"digits", digits}, random_feeds);
  ASSERT_TRUE(settle(v));
  const OnScreen n = nearest_neuron(v, g);
  testing::internal::CaptureStdout();
  v.click(Button::Left, Press::Down, n.x, n.y);
  const bool selected =
      frames_until(v, [&] { return v.interaction().selection().has_value() && !v.worker().progress().busy; });
  v.click(Button::Left, Press::Down, 2, 2);
  const bool cleared = frames_until(v, [&] { return !v.interaction().selection().has_value(); });
  const std::string out = testing::internal::GetCapturedStdout();
  ASSERT_TRUE(selected);
  ASSERT_TRUE(cleared);
  EXPECT_EQ(out, "");
}

TEST(Desktop, ScreenshotShowsTheNetwork) {
  REQUIRE_DISPLAY();
  const fs::path dir = fs::temp_directory_path() / ("nnxr-desktop-" + std::to_string(getpid()));
  fs::create_directories(dir);
  ViewerOptions o = test_options();
  o.screenshot_dir = dir.string();
  DesktopViewer v(o);
  v.load({"digits", digits}, random_feeds);
  ASSERT_TRUE(settle(v));
  v.key(Key::F12, Press::Down);  // F12, as the user would
  ASSERT_TRUE(frames_until(v, [&] { return !v.last_screenshot().empty(); }));
  const std::string path = v.last_screenshot();
  EXPECT_EQ(fs::path(path).parent_path(), dir);
  int w = 0, h = 0, n = 0;
  unsigned char* px = stbi_load(path.c_str(), &w, &h, &n, 4);
  ASSERT_NE(px, nullptr) << path;
  EXPECT_EQ(w, 640);
  EXPECT_EQ(h, 400);
  // The background is a dark blue-grey; the network is lit. Count pixels clearly above it.
  const unsigned char* bg = px + 0;  // top-left corner: background at the home view
  size_t lit = 0;
  for (int i = 0; i < w * h; ++i) {
    const unsigned char* q = px + i * 4;
    if (std::abs(q[0] - bg[0]) + std::abs(q[1] - bg[1]) + std::abs(q[2] - bg[2]) > 60) ++lit;
  }
  stbi_image_free(px);
  EXPECT_GT(lit, 200u) << "the screenshot " << path << " shows almost nothing";
  EXPECT_LT(lit, size_t(w * h) / 2) << path;
  EXPECT_EQ(v.validation_errors(), 0u);
  if (!HasFailure()) fs::remove_all(dir);
}

TEST(Desktop, ResizeRecreatesTheSwapchain) {
  REQUIRE_DISPLAY();
  DesktopViewer v(test_options());
  v.load({"digits", digits}, random_feeds);
  ASSERT_TRUE(settle(v));
  v.set_window_size(500, 300);
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(v.frame());
  const std::string path = (fs::temp_directory_path() / ("nnxr-resize-" + std::to_string(getpid()) + ".png")).string();
  v.screenshot(path);
  ASSERT_TRUE(frames_until(v, [&] { return !v.last_screenshot().empty(); }));
  int w = 0, h = 0, n = 0;
  ASSERT_TRUE(stbi_info(path.c_str(), &w, &h, &n)) << path;
  EXPECT_EQ(w, 500);
  EXPECT_EQ(h, 300);
  fs::remove(path);
  EXPECT_EQ(v.validation_errors(), 0u);
}

// Offscreen frames are retired as soon as they are drawn, so scenes published while no frame is
// drawn never wait for one: two rebuilds after the last frame both publish.
TEST(Offscreen, PublishesWhileNoFrameIsDrawnDoNotWait) {
  ViewerOptions o = test_options();
  o.max_frames = 2;
  OffscreenViewer v(o);
  v.load({"digits", digits}, random_feeds);
  v.run();
  (void)v.worker().take_events();
  // Polled, not waited for: a blocked worker fails the test, and the viewer's destructor
  // releases it.
  auto settles = [&] {
    const auto limit = std::chrono::steady_clock::now() + 30s;
    while (v.worker().progress().busy && std::chrono::steady_clock::now() < limit) std::this_thread::sleep_for(10ms);
    return !v.worker().progress().busy;
  };
  v.worker().set_input(random_feeds);
  ASSERT_TRUE(settles()) << "the first publish waited for a frame";
  v.worker().set_input(random_feeds);
  ASSERT_TRUE(settles()) << "the second publish waited for a frame";
  std::vector<uint64_t> generations;
  for (const WorkerEvent& e : v.worker().take_events())
    if (auto* b = std::get_if<SceneBuilt>(&e)) generations.push_back(b->generation);
  // Each input of the same shape publishes a refresh of the scene in place, then the exact
  // build that follows once the worker is idle: four publishes, none of them waited for.
  EXPECT_EQ(generations, (std::vector<uint64_t>{2, 3, 4, 5}));
  EXPECT_EQ(v.validation_errors(), 0u);
}

// ---- the command line ---------------------------------------------------------------------------

using Result = nnxr::test::RunResult;

Result nnxr(const std::string& args, const std::string& env = "") { return nnxr::test::run_nnxr(args, env); }

// The value after "key": in a one-line JSON object (numbers only).
double json_number(const std::string& json, const std::string& key) {
  const auto at = json.find("\"" + key + "\":");
  if (at == std::string::npos) return NAN;
  return std::strtod(json.c_str() + at + key.size() + 3, nullptr);
}

std::string last_line(const std::string& s) {
  std::string t = s;
  while (!t.empty() && t.back() == '\n') t.pop_back();
  const auto nl = t.rfind('\n');
  return nl == std::string::npos ? t : t.substr(nl + 1);
}

TEST(ViewCli, DesktopFramesStatsPrintsOneJsonLine) {
  REQUIRE_DISPLAY();
  const Result r = nnxr("view --desktop --frames 5 --stats --budget 100000 --width 320 --height 200 --validation");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nnxr::test::one_json_line(r.out), "");
  const std::string json = last_line(r.out);
  ASSERT_EQ(json.front(), '{') << r.out;
  ASSERT_EQ(json.back(), '}') << r.out;
  EXPECT_NE(json.find(R"("mode":"desktop")"), std::string::npos) << json;
  // The frame's wall time beside the frame thread's CPU time: never less.
  const auto wall = json.find(R"("wall_ms":{"median":)");
  ASSERT_NE(wall, std::string::npos) << json;
  EXPECT_GE(json_number(json.substr(wall), "median") * 1.02, json_number(json, "median")) << json;
  EXPECT_GE(json_number(json.substr(wall), "p99"), json_number(json.substr(wall), "median")) << json;
  EXPECT_NE(json.find(R"x("model":"digits (embedded)")x"), std::string::npos) << json;
  EXPECT_EQ(json_number(json, "frames"), 5) << json;
  EXPECT_GT(json_number(json, "median"), 0) << json;
  EXPECT_GT(json_number(json, "neurons"), 0) << json;  // resident, first in the line
  EXPECT_NE(json.find(R"("thresholds":{"neuron":0,"connection":0.5)"), std::string::npos) << json;
  EXPECT_NE(json.find(R"("scale":1)"), std::string::npos) << json;
  EXPECT_NE(json.find(R"("selected":null)"), std::string::npos) << json;
  EXPECT_NE(json.find(R"("errors":[])"), std::string::npos) << json;
  EXPECT_NE(json.find(R"("validation_errors":0)"), std::string::npos) << json;
  EXPECT_EQ(r.err.find("headset"), std::string::npos) << "--desktop asked for the window: " << r.err;
}

TEST(ViewCli, WithoutADisplayItRendersOffscreen) {
  const fs::path png = fs::temp_directory_path() / ("nnxr-offscreen-" + std::to_string(getpid()) + ".png");
  const Result r = nnxr("view --frames 3 --stats --budget 100000 --width 320 --height 200 --out '" + png.string() + "'",
                        "env -u DISPLAY -u WAYLAND_DISPLAY XR_RUNTIME_JSON=/nonexistent/runtime.json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("not using a headset: no OpenXR runtime"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("no display"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(png.string()), std::string::npos) << "says where the PNG goes: " << r.err;
  const std::string json = last_line(r.out);
  EXPECT_NE(json.find(R"("mode":"offscreen")"), std::string::npos) << json;
  EXPECT_EQ(json_number(json, "frames"), 3) << json;
  EXPECT_GT(json_number(json, "neurons"), 0) << json;
  int w = 0, h = 0, n = 0;
  ASSERT_TRUE(stbi_info(png.string().c_str(), &w, &h, &n)) << png;
  EXPECT_EQ(w, 320);
  EXPECT_EQ(h, 200);
  fs::remove(png);
}

// A model of more than 4,096 laid-out tensors (the scene buffers' starting size): a chain of
// 4,500 Relu nodes on a [1, 4] tensor, written by Python's onnx package at test time.
TEST(ViewCli, AModelOfMoreTensorsThanTheStartingSizeIsShown) {
  const fs::path dir = fs::temp_directory_path() / ("nnxr-chain-" + std::to_string(getpid()));
  fs::create_directories(dir);
  const fs::path model = dir / "chain.onnx";
  const std::string script =
      "import onnx, sys\n"
      "from onnx import helper, TensorProto\n"
      "n = 4500\n"
      "nodes = [helper.make_node('Relu', ['t%d' % i], ['t%d' % (i + 1)]) for i in range(n)]\n"
      "g = helper.make_graph(nodes, 'chain', [helper.make_tensor_value_info('t0', TensorProto.FLOAT, [1, 4])],\n"
      "                      [helper.make_tensor_value_info('t%d' % n, TensorProto.FLOAT, [1, 4])])\n"
      "onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid('', 13)]), sys.argv[1])\n";
  std::ofstream(dir / "make.py") << script;
  ASSERT_EQ(std::system(("/usr/bin/python3 '" + (dir / "make.py").string() + "' '" + model.string() + "'").c_str()), 0);
  const fs::path png = dir / "chain.png";
  const Result r = nnxr("view '" + model.string() + "' --random 1 --frames 2 --stats --width 64 --height 64 --out '" +
                            png.string() + "'",
                        "env -u DISPLAY -u WAYLAND_DISPLAY XR_RUNTIME_JSON=/nonexistent/runtime.json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find("segments exceed"), std::string::npos) << r.err;
  EXPECT_EQ(nnxr::test::one_json_line(r.out), "");
  const std::string json = last_line(r.out);
  EXPECT_NE(json.find(R"("errors":[])"), std::string::npos) << json;
  EXPECT_GE(json_number(json, "neurons"), 4501 * 4) << json;  // resident: every tensor
  EXPECT_TRUE(fs::exists(png));
  fs::remove_all(dir);
}

// The view's worker runs inference with the command's limits: a Loop of trip count 1e9 stops at
// --max-loop-iterations, and --timeout ends it through the runtime's deadline, not only through
// the process watchdog (which would exit 2 s later without the node's name).
TEST(ViewCli, TheWorkersInferenceStopsAtTheLoopCapAndTheTimeout) {
  const fs::path dir = fs::temp_directory_path() / ("nnxr-view-loop-" + std::to_string(getpid()));
  fs::create_directories(dir);
  const fs::path model = dir / "loop.onnx";
  std::ofstream(dir / "make.py") << "import onnx, onnx.parser, sys\n"
                                    "m = onnx.parser.parse_model('''\n"
                                    "<ir_version: 8, opset_import: [\"\" : 13]>\n"
                                    "g (float[2] X) => (float[2] S) {\n"
                                    "  M = Constant <value = int64 {1000000000}> ()\n"
                                    "  C = Constant <value = bool {1}> ()\n"
                                    "  S = Loop (M, C, X) <body = b (int64 i, bool c, float[2] s) => (bool co, float[2] so) {\n"
                                    "    co = Identity(c)\n"
                                    "    so = Neg(s)\n"
                                    "  }>\n"
                                    "}''')\n"
                                    "onnx.save(m, sys.argv[1])\n";
  ASSERT_EQ(std::system(("/usr/bin/python3 '" + (dir / "make.py").string() + "' '" + model.string() + "'").c_str()), 0);
  const std::string env = "env -u DISPLAY -u WAYLAND_DISPLAY XR_RUNTIME_JSON=/nonexistent/runtime.json";
  const std::string common = "view '" + model.string() + "' --random 1 --frames 1 --stats --width 64 --height 64 --out '" +
                             (dir / "v.png").string() + "'";
  auto t0 = std::chrono::steady_clock::now();
  Result r = nnxr(common + " --max-loop-iterations 5000", env);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 30);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("stopped after 5000 iterations"), std::string::npos) << r.err;
  EXPECT_NE(last_line(r.out).find("stopped after 5000 iterations"), std::string::npos) << r.out;  // in the JSON's errors
  t0 = std::chrono::steady_clock::now();
  // 4 s leave room for starting up on a loaded machine; the watchdog would end it at 6 s.
  r = nnxr(common + " --max-loop-iterations 2000000000 --timeout 4", env);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 5.9);  // before the watchdog
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("passed its time limit in node"), std::string::npos) << r.err;
  fs::remove_all(dir);
}

// view --budget 1e9 is capped by --max-memory: the scene buffers may take half of the ceiling
// (the inferences keep the rest), 48 bytes an element.
TEST(ViewCli, TheBudgetIsCappedByTheMemoryCeiling) {
  const fs::path png = fs::temp_directory_path() / ("nnxr-view-budget-" + std::to_string(getpid()) + ".png");
  const Result r = nnxr("view --budget 1000000000 --max-memory 64M --frames 1 --stats --width 64 --height 48 --out '" + png.string() + "'",
                        "env -u DISPLAY -u WAYLAND_DISPLAY XR_RUNTIME_JSON=/nonexistent/runtime.json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("nnxr: view: budget 1000000000 lowered to 699050: at 48 bytes an element, that is what fits in the 32.0 MiB "
                       "(its share) left under the memory ceiling of 64.0 MiB (--max-memory)"),
            std::string::npos)
      << r.err;
  EXPECT_GT(json_number(last_line(r.out), "neurons"), 0) << r.out;
  fs::remove(png);
}

TEST(ViewCli, BadModelFailsWithOneLine) {
  const Result r = nnxr("view --frames 2 --stats /nonexistent/model.onnx", "env -u DISPLAY -u WAYLAND_DISPLAY");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("/nonexistent/model.onnx"), std::string::npos) << r.err;
  EXPECT_NE(last_line(r.out).find(R"("errors":[")"), std::string::npos) << r.out;
}

TEST(ViewCli, StatsNeedFrames) {
  const Result r = nnxr("view --stats");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--stats needs --frames"), std::string::npos) << r.err;
}


// ---- the blocks keep clear of the panels drawn over the picture --------------------------------

// The default model and, when present, SqueezeNet 1.1 (a tall first block) and the tiny BERT
// (1,318 small blocks wrapped into rows).
struct FramedModel {
  std::string file;  // the title, as the view's and render's
  std::function<model::Graph()> load;
};
std::vector<FramedModel> framed_models() {
  std::vector<FramedModel> out{{"digits.onnx", digits}};
  for (const char* file : {"squeezenet1.1-caffe2-op7-fp32.onnx", "tf-bert-qa-tiny.onnx"}) {
    const fs::path path = fs::path(NNXR_SHARED_MODELS) / file;
    if (fs::exists(path)) out.push_back({file, [path] { return model::load_model(path); }});
  }
  return out;
}

// Random inputs of each input's own type (BERT takes integer ids), symbolic dimensions as 1.
Feeds typed_random_feeds(const model::Graph& g) {
  Feeds feeds;
  model::Mulberry32 rng(42);
  for (const model::TensorId id : g.inputs) {
    std::vector<int64_t> shape = g.tensors[id].shape;
    for (int64_t& d : shape) d = std::max<int64_t>(d, 1);
    feeds[g.tensors[id].name] = model::random_tensor(g.tensors[id].dtype, shape, rng);
  }
  return feeds;
}

// "" when every corner of every block (of `only`, when given) lands inside the window of
// `window` pixels through `view_projection` and outside every rectangle; else what failed.
std::string corners_clear(const scene::Layout& layout, const glm::mat4& view_projection, glm::vec2 window,
                          std::span<const ScreenRect> rects, const std::function<bool(const scene::Block&)>& only = {}) {
  for (const scene::Block& b : layout.blocks()) {
    if (only && !only(b)) continue;
    std::vector<glm::vec3> corners;
    add_corners(corners, {b.min[0], b.min[1], b.min[2]}, {b.max[0], b.max[1], b.max[2]});
    for (const glm::vec3& p : corners) {
      const glm::vec4 c = view_projection * glm::vec4(p, 1.0f);
      const glm::vec2 px{(c.x / c.w + 1) * 0.5f * window.x, (c.y / c.w + 1) * 0.5f * window.y};
      std::ostringstream at;
      at << "tensor " << b.tensor << "'s corner at (" << px.x << ", " << px.y << ")";
      if (!(c.w > 0) || px.x < 0 || px.x > window.x || px.y < 0 || px.y > window.y) return at.str() + " is off screen";
      for (const ScreenRect& r : rects)
        if (r.contains(px))
          return at.str() + " is under the panel (" + std::to_string(r.min.x) + ", " + std::to_string(r.min.y) + ")-(" +
                 std::to_string(r.max.x) + ", " + std::to_string(r.max.y) + ")";
    }
  }
  return "";
}

// `render`'s camera (app/render.cpp): the blocks' corners and the words over a wrapped layout,
// framed clear of the panels annotate() draws over its picture (title with a note line, the input
// picture, the prediction and the legend of a real run), at render's default 1600x900 and at a
// small 800x450, in every preset: every block corner is on screen and under no panel, and so is
// the input picture's billboard where annotate() draws one; the camera framed from the deciding
// points (frame_clear's default) puts every point within a pixel of where the camera framed from
// all of them does.
TEST(Desktop, RendersCameraKeepsEveryBlockClearOfThePanels) {
  for (const FramedModel& m : framed_models()) {
    auto plan = runtime::Plan::build(m.load());
    const model::Graph& g = plan->graph();
    runtime::Session session(plan);
    for (const auto& [name, t] : typed_random_feeds(g)) session.set_input(name, t.dtype, t.shape, t.bytes);
    session.run();
    const scene::Activations values = scene::activations_of(session);
    const scene::Layout layout = scene::Layout::build(g, {}, &values);
    std::vector<glm::vec3> points;
    for (const scene::Block& b : layout.blocks())
      add_corners(points, {b.min[0], b.min[1], b.min[2]}, {b.max[0], b.max[1], b.max[2]});
    for (const glm::vec3& p : words_to_frame(g, layout)) points.push_back(p);
    AnnotationOptions notes;
    notes.words.title = m.file + "  (random input, seed 42)";
    notes.words.notes.push_back("image: the model's preprocessing metadata (scale 0.003921, mean 0)");
    const model::Tensor& input = g.tensors[g.inputs[0]];
    if (input.shape.size() == 4) notes.words.picture = InputPicture{input.name, {}};
    // The input picture beside the network (annotate()'s billboard), framed as render frames it.
    const auto billboard = picture_billboard(g, layout, values, notes.words);
    EXPECT_EQ(billboard.has_value(), input.shape.size() == 4) << m.file;
    if (billboard)
      for (const glm::vec3& p : picture_to_frame(*billboard)) points.push_back(p);
    for (const glm::vec2 window : {glm::vec2(1600, 900), glm::vec2(800, 450)}) {
      notes.viewport = window;
      TextBuilder text(Font::builtin());
      const std::vector<ScreenRect> rects = panel_rects(annotate(text, g, layout, values, notes), window);
      ASSERT_GE(rects.size(), 3u) << m.file << ": title, prediction and legend at least";
      for (const CameraPreset preset : {CameraPreset::Overview, CameraPreset::Front, CameraPreset::Side, CameraPreset::Top}) {
        const Camera camera = frame_clear(preset, points, window, rects);
        const float aspect = window.x / window.y;
        // Framed from the points that decide it, as from every point within a pixel.
        const Camera whole = frame_clear(preset, points, window, rects, kFrameFovY, false);
        const std::vector<glm::vec2> a = project_points(camera, points, window), b = project_points(whole, points, window);
        float apart = 0;
        for (size_t i = 0; i < a.size(); ++i) apart = std::max(apart, glm::length(a[i] - b[i]));
        EXPECT_LE(apart, 1.0f) << m.file << " at " << window.x << "x" << window.y << ", preset " << int(preset);
        EXPECT_EQ(corners_clear(layout, camera.projection(aspect) * camera.view(), window, rects), "")
            << m.file << " at " << window.x << "x" << window.y << ", preset " << int(preset);
        if (!billboard) continue;
        // The picture's quad (eye-space right and up, its full size: the 160 px cap only shrinks it
        // about its centre) lands on screen and under no panel.
        const glm::mat4 view = camera.view();
        const glm::vec3 right{view[0][0], view[1][0], view[2][0]}, up{view[0][1], view[1][1], view[2][1]};
        const glm::mat4 vp = camera.projection(aspect) * view;
        glm::vec2 lo(1e9f), hi(-1e9f);
        for (const float sx : {-0.5f, 0.5f})
          for (const float sy : {-0.5f, 0.5f}) {
            const glm::vec3 p = billboard->centre + billboard->em * (sx * billboard->aspect * right + sy * up);
            const glm::vec4 c = vp * glm::vec4(p, 1.0f);
            ASSERT_GT(c.w, 0.0f);
            const glm::vec2 px{(c.x / c.w + 1) * 0.5f * window.x, (c.y / c.w + 1) * 0.5f * window.y};
            lo = glm::min(lo, px), hi = glm::max(hi, px);
          }
        EXPECT_GE(lo.x, 0.0f) << m.file << " at " << window.x << "x" << window.y << ", preset " << int(preset);
        EXPECT_GE(lo.y, 0.0f) << m.file << " at " << window.x << "x" << window.y << ", preset " << int(preset);
        EXPECT_LE(hi.x, window.x) << m.file << " at " << window.x << "x" << window.y << ", preset " << int(preset);
        EXPECT_LE(hi.y, window.y) << m.file << " at " << window.x << "x" << window.y << ", preset " << int(preset);
        EXPECT_GT(hi.x - lo.x, 10.0f) << m.file << ": the picture shows";
        for (const ScreenRect& r : rects)
          EXPECT_FALSE(lo.x < r.max.x && hi.x > r.min.x && lo.y < r.max.y && hi.y > r.min.y)
              << m.file << " at " << window.x << "x" << window.y << ", preset " << int(preset) << ": the picture (" << lo.x
              << ", " << lo.y << ")-(" << hi.x << ", " << hi.y << ") overlaps the panel (" << r.min.x << ", " << r.min.y
              << ")-(" << r.max.x << ", " << r.max.y << ")";
      }
    }
  }
}

// The desktop's home view (640x400, the filter menu at the right): every block corner is on
// screen and under none of the panels the window draws: the view's text panels as the worker
// composed them (what the state framed clear of) and the filter menu where FilterMenu::desktop
// places it (the same placement clicks use).
TEST(Desktop, TheHomeViewKeepsEveryBlockClearOfThePanels) {
  REQUIRE_DISPLAY();
  for (const FramedModel& m : framed_models()) {
    ViewerOptions o = test_options();
    o.worker.words.title = m.file;
    DesktopViewer v(o);
    v.load({m.file, m.load}, typed_random_feeds);
    ASSERT_TRUE(frames_until(v, [&] { return v.state().settled(); })) << m.file;
    for (int i = 0; i < 3; ++i) ASSERT_TRUE(v.frame());
    const glm::vec2 window(640, 400);
    const FilterMenu menu{v.interaction().op_counts().size()};
    const FilterMenu::Placement placed = menu.desktop(window.x, window.y);
    std::vector<ScreenRect> rects = v.state().home_panels();
    // The title (top left), the legend (bottom left) and the filter menu.
    EXPECT_GE(rects.size(), 3u) << m.file;
    rects.push_back({placed.origin, placed.origin + menu.size() * placed.scale});
    EXPECT_EQ(v.state().home_window(), window);
    EXPECT_TRUE(v.interaction().at_home()) << m.file;
    const FlyCamera& c = v.interaction().camera();
    // The blocks as the worker laid them out (their corners: what the home view frames).
    const std::vector<glm::vec3>& corners = v.state().block_corners();
    ASSERT_FALSE(corners.empty());
    const glm::mat4 vp = c.projection(window.x / window.y) * c.view();
    size_t bad = 0;
    std::string first;
    for (size_t i = 0; i < corners.size(); ++i) {
      const glm::vec4 q = vp * glm::vec4(corners[i], 1.0f);
      const glm::vec2 px{(q.x / q.w + 1) * 0.5f * window.x, (q.y / q.w + 1) * 0.5f * window.y};
      const bool off = !(q.w > 0) || px.x < 0 || px.x > window.x || px.y < 0 || px.y > window.y;
      const bool under = std::any_of(rects.begin(), rects.end(), [&](const ScreenRect& r) { return r.contains(px); });
      if (off || under) {
        if (!bad++) first = "(" + std::to_string(px.x) + ", " + std::to_string(px.y) + (off ? ") off screen" : ") under a panel");
      }
    }
    EXPECT_EQ(bad, 0u) << m.file << ": " << first;
    EXPECT_EQ(v.validation_errors(), 0u);
  }
}


// A hiding filter given at the start (as `view --layers 0:2` does) frames the blocks it shows, as
// `render` does: the home view is frame_clear of their corners alone, they are on screen and
// clear of the panels, and they span a larger part of the width than in the whole network's home.
TEST(Desktop, AHidingFilterFramesTheBlocksItShows) {
  REQUIRE_DISPLAY();
  const model::Graph g = digits();
  const scene::Layout layout = scene::Layout::build(g, {});
  ViewerOptions o = test_options();
  o.filter.layer_min = 0;
  o.filter.layer_max = 2;
  o.filter.outside = scene::Filter::Outside::Hide;
  DesktopViewer v(o);
  v.load({"digits", digits}, random_feeds);
  ASSERT_TRUE(frames_until(v, [&] { return v.state().settled(); }));
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(v.frame());
  auto shown = [](const scene::Block& b) { return b.layer <= 2; };
  std::vector<glm::vec3> all, some;
  for (const scene::Block& b : layout.blocks()) {
    add_corners(all, glm::vec3(b.min[0], b.min[1], b.min[2]), glm::vec3(b.max[0], b.max[1], b.max[2]));
    if (shown(b)) add_corners(some, glm::vec3(b.min[0], b.min[1], b.min[2]), glm::vec3(b.max[0], b.max[1], b.max[2]));
  }
  ASSERT_LT(some.size(), all.size());
  ASSERT_GT(some.size(), 0u);
  const glm::vec2 window(640, 400);
  const std::vector<ScreenRect>& panels = v.state().home_panels();
  const Camera expected = frame_clear(CameraPreset::Overview, some, window, panels);
  const FlyCamera& c = v.interaction().camera();
  EXPECT_LT(glm::length(c.position - expected.eye), 1e-4f * glm::length(expected.target - expected.eye));
  EXPECT_LT(glm::length(c.forward() - glm::normalize(expected.target - expected.eye)), 1e-4f);
  const glm::mat4 vp = c.projection(window.x / window.y) * c.view();
  EXPECT_EQ(corners_clear(layout, vp, window, panels, shown), "");
  // The shown blocks' width on screen, here and in the home of the whole network.
  auto span = [&](const Camera& cam) {
    float lo = 1e30f, hi = -1e30f;
    for (const glm::vec2& p : project_points(cam, some, window)) lo = std::min(lo, p.x), hi = std::max(hi, p.x);
    return hi - lo;
  };
  const Camera whole = frame_clear(CameraPreset::Overview, all, window, panels);
  EXPECT_GT(span(expected), 1.3f * span(whole)) << "the shown blocks span " << span(expected) << " px, in the whole network's home "
                                                << span(whole) << " px";
  EXPECT_EQ(v.validation_errors(), 0u);
}

}  // namespace
}  // namespace nnxr::engine
