// The layer window and the search in the desktop window, under a private Xvfb with lavapipe and
// the Vulkan validation layer, driven by the keys a user presses: Page Down / End step and narrow
// the window (draw counts, the --stats filter, the walk), `/` opens the search whose matches the
// overlay draws, Enter flies to the match and selects it.
#include <stb_image.h>

#include <chrono>
#include <cstring>
#include <algorithm>
#include <filesystem>
#include <random>

#include <glm/glm.hpp>
#include <gtest/gtest.h>

#include "assets/assets.h"
#include "engine/desktop.h"
#include "model/load.h"
#include "model/scene/scene.h"
#include "tests/engine/desktop_support.h"
#include "tests/support/random_feeds.h"

namespace nnxr::engine {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

model::Graph digits() { return model::load_model_from_memory(assets::default_model().bytes, "digits.onnx"); }

Feeds random_feeds(const model::Graph& g) { return test::random_feeds(g, 7, 0, 1); }

ViewerOptions test_options() { return test::desktop_test_options(640, 400, 200'000); }

using test::frames_until;

bool settle(DesktopViewer& v) { return frames_until(v, [&] { return v.state().settled(); }); }
bool filtered(DesktopViewer& v) {
  return frames_until(v, [&] { return v.state().filter_applied() >= v.state().filter_requested(); });
}

void press(DesktopViewer& v, Key k, int times = 1) {
  for (int i = 0; i < times; ++i) {
    v.key(k, Press::Down);
    v.key(k, Press::Up);
  }
}

// Pixels of a screenshot that are near white (text) within the rectangle [0, w) × [0, h).
size_t white_pixels(const std::string& path, int w, int h) {
  int width = 0, height = 0, n = 0;
  unsigned char* px = stbi_load(path.c_str(), &width, &height, &n, 4);
  if (!px) return 0;
  size_t count = 0;
  for (int y = 0; y < std::min(h, height); ++y)
    for (int x = 0; x < std::min(w, width); ++x) {
      const unsigned char* q = px + (y * width + x) * 4;
      if (q[0] > 200 && q[1] > 200 && q[2] > 200) ++count;
    }
  stbi_image_free(px);
  return count;
}

std::string screenshot(DesktopViewer& v, const std::string& name) {
  const std::string path = (fs::temp_directory_path() / ("nnxr-filters-" + std::to_string(getpid()) + "-" + name + ".png")).string();
  v.screenshot(path);
  frames_until(v, [&] { return v.last_screenshot() == path; });
  return path;
}

TEST(DesktopFilters, PageKeysStepTheLayerWindowAndWalkToIt) {
  REQUIRE_DISPLAY();
  const model::Graph g = digits();
  const scene::Layout layout = scene::Layout::build(g, {});
  auto neurons_in = [&](int lo, int hi) {
    uint64_t n = 0;
    for (const scene::Block& b : layout.blocks())
      if (b.layer >= lo && b.layer <= hi) n += uint64_t(b.elements);
    return n;
  };
  DesktopViewer v(test_options());
  v.load({"digits", digits}, random_feeds);
  ASSERT_TRUE(settle(v));
  const ViewStats before = v.stats();
  EXPECT_EQ(before.filter.layer_min, 0);
  EXPECT_EQ(before.filter.layer_max, 8);
  EXPECT_EQ(before.drawn_neurons, neurons_in(0, 8));

  // End narrows the window to three layers (0..2), Page Down twice steps it to 2..4.
  press(v, Key::End, 6);
  ASSERT_TRUE(filtered(v));
  EXPECT_EQ(v.stats().filter.layer_max, 2);
  EXPECT_EQ(v.stats().drawn_neurons, neurons_in(0, 2));
  const glm::vec3 start = v.interaction().world().translation;
  press(v, Key::PageDown, 2);
  ASSERT_TRUE(v.frame());
  // The walk has begun but not jumped: a frame is a small part of the 300 ms slide.
  EXPECT_TRUE(v.interaction().walking());
  ASSERT_TRUE(filtered(v));
  const ViewStats stepped = v.stats();
  EXPECT_EQ(stepped.filter.layer_min, 2);
  EXPECT_EQ(stepped.filter.layer_max, 4);
  EXPECT_EQ(stepped.filter.mode, "hide");
  EXPECT_EQ(stepped.drawn_neurons, neurons_in(2, 4));
  EXPECT_LT(stepped.drawn_neurons, before.drawn_neurons);
  EXPECT_EQ(stepped.resident_neurons, before.resident_neurons);  // a filter, not a rebuild

  // Within about 300 ms the walk is over and layer 2 stands straight ahead of the camera.
  const auto walk_start = std::chrono::steady_clock::now();
  ASSERT_TRUE(frames_until(v, [&] { return !v.interaction().walking(); }));
  EXPECT_LT(std::chrono::steady_clock::now() - walk_start, 2s);
  EXPECT_NE(v.interaction().world().translation, start);
  glm::vec3 lo(1e9f), hi(-1e9f);
  for (const scene::Block& b : layout.blocks())
    if (b.layer == 2) {
      lo = glm::min(lo, glm::vec3(b.min[0], b.min[1], b.min[2]));
      hi = glm::max(hi, glm::vec3(b.max[0], b.max[1], b.max[2]));
    }
  const FlyCamera& c = v.interaction().camera();
  const glm::vec3 to_layer = v.interaction().world().to_world((lo + hi) * 0.5f) - c.position;
  EXPECT_NEAR(glm::dot(glm::normalize(to_layer), c.forward()), 1.0f, 1e-4f);
  EXPECT_GE(glm::length(to_layer), v.interaction().options().arm_length - 1e-4f);

  // Home widens; R puts everything back.
  press(v, Key::Home);
  ASSERT_TRUE(filtered(v));
  EXPECT_EQ(v.stats().filter.layer_max, 5);
  EXPECT_EQ(v.stats().drawn_neurons, neurons_in(2, 5));
  press(v, Key::R);
  ASSERT_TRUE(filtered(v));
  EXPECT_EQ(v.stats().filter.layer_min, 0);
  EXPECT_EQ(v.stats().filter.layer_max, 8);
  EXPECT_EQ(v.stats().drawn_neurons, before.drawn_neurons);
  EXPECT_EQ(v.validation_errors(), 0u);
}

TEST(DesktopFilters, DimModeStartsFromTheOptionsAndDrawsEverything) {
  REQUIRE_DISPLAY();
  ViewerOptions o = test_options();
  o.filter.layer_min = 8;
  o.filter.outside = scene::Filter::Outside::Dim;
  DesktopViewer v(o);
  v.load({"digits", digits}, random_feeds);
  ASSERT_TRUE(settle(v));
  ASSERT_TRUE(filtered(v));
  const ViewStats s = v.stats();
  EXPECT_EQ(s.filter.mode, "dim");
  EXPECT_EQ(s.filter.layer_min, 8);
  EXPECT_EQ(s.drawn_neurons, s.resident_neurons);  // dimmed, not hidden
  EXPECT_EQ(v.validation_errors(), 0u);
}

TEST(DesktopFilters, SlashSearchesEnterFliesToTheMatchAndSelectsIt) {
  REQUIRE_DISPLAY();
  DesktopViewer v(test_options());
  v.load({"digits", digits}, random_feeds);
  ASSERT_TRUE(settle(v));
  const size_t text_before = white_pixels(screenshot(v, "before"), 320, 120);

  press(v, Key::Slash);
  v.type("/probab");  // the '/' that opened the box arrives as a character first
  const Search& search = v.interaction().search();
  ASSERT_TRUE(search.active());
  EXPECT_EQ(search.query(), "probab");
  ASSERT_FALSE(search.matches().empty());
  EXPECT_EQ(search.entries()[search.matches()[0]].name, "probabilities");
  // While the box is open, W types instead of flying.
  const glm::vec3 eye = v.interaction().camera().position;
  v.key(Key::W, Press::Down);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(v.frame());
  v.key(Key::W, Press::Up);
  EXPECT_EQ(v.interaction().camera().position, eye);
  v.type("x");
  EXPECT_TRUE(search.matches().empty());
  press(v, Key::Backspace);
  EXPECT_EQ(search.query(), "probab");
  // The overlay lists the matches: white text in the top left corner.
  const size_t text_open = white_pixels(screenshot(v, "open"), 320, 120);
  EXPECT_GT(text_open, text_before + 100) << "no search box drawn";

  press(v, Key::Enter);
  EXPECT_FALSE(search.active());
  ASSERT_TRUE(frames_until(v, [&] { return v.interaction().selection().has_value() && !v.interaction().flying(); }));
  EXPECT_EQ(v.interaction().selection()->tensor_name, "probabilities");
  EXPECT_EQ(v.stats().selection->tensor_name, "probabilities");
  // The camera faces the block from its shallow side.
  const scene::Layout layout = scene::Layout::build(digits(), {});
  const scene::Block& last = layout.blocks().back();
  const glm::vec3 centre((last.min[0] + last.max[0]) / 2, (last.min[1] + last.max[1]) / 2, (last.min[2] + last.max[2]) / 2);
  const FlyCamera& c = v.interaction().camera();
  EXPECT_NEAR(glm::dot(glm::normalize(v.interaction().world().to_world(centre) - c.position), c.forward()), 1.0f, 1e-3f);
  const size_t text_closed = white_pixels(screenshot(v, "closed"), 320, 120);
  EXPECT_LT(text_closed, text_open);
  EXPECT_EQ(v.validation_errors(), 0u);
  for (const char* name : {"before", "open", "closed"})
    fs::remove(fs::temp_directory_path() / ("nnxr-filters-" + std::to_string(getpid()) + "-" + name + ".png"));
}


TEST(DesktopFilters, TheFilterPanelIsClickedWithTheMouse) {
  REQUIRE_DISPLAY();
  DesktopViewer v(test_options());
  v.load({"digits", digits}, random_feeds);
  ASSERT_TRUE(settle(v));
  const auto& ops = v.interaction().op_counts();
  ASSERT_EQ(ops.size(), 6u);  // Conv, Relu (2 each), MaxPool, Flatten, Gemm, Softmax
  EXPECT_EQ(ops[0].first, "Conv");
  EXPECT_EQ(ops[0].second, 2);
  const FilterMenu menu{ops.size()};
  const FilterMenu::Placement place = menu.desktop(640, 400);
  const glm::vec2 origin = place.origin, end = place.to_screen(menu.size());
  auto click_row = [&](size_t row) {
    const glm::vec2 p = place.to_screen({FilterMenu::kWidth / 2, menu.row_top(row) + 0.5f * FilterMenu::kLine});
    v.click(Button::Left, Press::Down, p.x, p.y);
    v.click(Button::Left, Press::Up, p.x, p.y);
  };
  const ViewStats before = v.stats();
  // The menu is drawn where clicks look for it: white text on its plate.
  const std::string shot = screenshot(v, "panel");
  int w = 0, h = 0, n = 0;
  unsigned char* px = stbi_load(shot.c_str(), &w, &h, &n, 4);
  ASSERT_NE(px, nullptr);
  size_t text = 0, plate = 0;
  for (int y = int(origin.y); y < int(end.y) && y < h; ++y)
    for (int x = int(origin.x); x < int(end.x) && x < w; ++x) {
      const unsigned char* q = px + (y * w + x) * 4;
      text += q[0] > 200 && q[1] > 200 && q[2] > 200;
      plate += q[2] > q[0] + 20 && q[2] < 130 && q[0] < 80;  // the dark blue plate (sRGB)
    }
  stbi_image_free(px);
  fs::remove(shot);
  EXPECT_GT(plate, size_t((end.x - origin.x) * (end.y - origin.y) / 3)) << "no menu plate";
  EXPECT_GT(text, 200u) << "no panel text";

  click_row(1);  // Conv off
  ASSERT_TRUE(filtered(v));
  ViewStats s = v.stats();
  EXPECT_EQ(s.filter.ops.size(), 5u);
  EXPECT_EQ(std::find(s.filter.ops.begin(), s.filter.ops.end(), "Conv"), s.filter.ops.end());
  EXPECT_LT(s.drawn_neurons, before.drawn_neurons);
  EXPECT_FALSE(v.interaction().selection().has_value());  // a panel click is no pick
  click_row(ops.size() + 1);  // outside: dimmed
  ASSERT_TRUE(filtered(v));
  s = v.stats();
  EXPECT_EQ(s.filter.mode, "dim");
  EXPECT_EQ(s.drawn_neurons, before.drawn_neurons);
  click_row(ops.size() + 4);  // reset
  ASSERT_TRUE(filtered(v));
  s = v.stats();
  EXPECT_TRUE(s.filter.ops.empty());
  EXPECT_EQ(s.filter.mode, "hide");
  EXPECT_EQ(s.drawn_neurons, before.drawn_neurons);
  EXPECT_EQ(v.validation_errors(), 0u);
}

TEST(DesktopFilters, TheMenuIsolatesThePathThatFedTheSelectionOfARealModel) {
  REQUIRE_DISPLAY();
  const fs::path file = fs::path(NNXR_SHARED_MODELS) / "squeezenet1.1-caffe2-op7-fp32.onnx";
  if (!fs::exists(file)) GTEST_SKIP() << file << " is absent";
  DesktopViewer v(test_options());
  v.load({"squeezenet", [file] { return model::load_model(file.string()); }}, random_feeds);
  ASSERT_TRUE(settle(v) || settle(v));  // a real model: up to a minute on a loaded machine
  const ViewStats before = v.stats();
  ASSERT_GT(before.drawn_neurons, 0u);
  // Find fire3's 1x1 expand branch and select it (the search flies there and picks it).
  press(v, Key::Slash);
  v.type("/fire3/expand1x1_2");
  press(v, Key::Enter);
  ASSERT_TRUE(frames_until(v, [&] { return v.interaction().selection().has_value() && !v.interaction().flying(); }));
  ASSERT_EQ(v.interaction().selection()->tensor_name, "fire3/expand1x1_2");
  // The menu's "isolate its path" row.
  const FilterMenu menu{v.interaction().op_counts().size()};
  const glm::vec2 p = menu.desktop(640, 400).to_screen({FilterMenu::kWidth / 2, menu.row_top(menu.ops + 3) + 0.5f * FilterMenu::kLine});
  v.click(Button::Left, Press::Down, p.x, p.y);
  v.click(Button::Left, Press::Up, p.x, p.y);
  ASSERT_TRUE(filtered(v));
  const ViewStats s = v.stats();
  // The branch, the input, the stem, fire2 whole, fire3's squeeze and the branch's conv; not
  // fire3's 3x3 branch beside it, nor anything deeper.
  const std::vector<std::string> want{"fire3/expand1x1_2", "data_0", "conv1_1", "conv1_2", "pool1_1",
                                      "fire2/squeeze1x1_1", "fire2/squeeze1x1_2", "fire2/expand1x1_1", "fire2/expand3x3_1",
                                      "fire2/expand1x1_2", "fire2/expand3x3_2", "fire2/concat_1", "fire3/squeeze1x1_1",
                                      "fire3/squeeze1x1_2", "fire3/expand1x1_1"};
  EXPECT_EQ(s.filter.tensors, want);
  EXPECT_EQ(s.filter.mode, "hide");
  EXPECT_GT(s.drawn_neurons, 0u);
  EXPECT_LT(s.drawn_neurons, before.drawn_neurons);
  EXPECT_EQ(s.selection->tensor_name, "fire3/expand1x1_2");  // the selection stays
  EXPECT_EQ(v.validation_errors(), 0u);
}

}  // namespace
}  // namespace nnxr::engine
