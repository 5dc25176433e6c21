// Offscreen renders of small hand-made scenes, checked by pixels: neuron colours where neurons
// are, background elsewhere, draw counts as prefixes, connections, highlight. Validation on.
#include <gtest/gtest.h>

#include <glm/gtc/matrix_transform.hpp>

#include "engine/camera.h"
#include "engine/offscreen.h"
#include "engine/renderer.h"
#include "engine/scene_buffers.h"
#include "tests/engine/vulkan_env.h"

namespace nnxr::engine {
namespace {

using test::HandScene;

constexpr uint32_t kSize = 128;

class RenderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    env = test::VulkanEnv::create();
    if (!env) GTEST_SKIP();
    buffers = std::make_unique<SceneBuffers>(*env->device, SceneBufferConfig{.element_budget = 1024, .max_segments = 16});
    renderer = std::make_unique<Renderer>(*env->device, *buffers, RendererConfig{});
    offscreen = std::make_unique<Offscreen>(*env->device, RendererConfig{}, VkExtent2D{kSize, kSize});
    params = test::side_view();
  }
  void TearDown() override {
    if (!env) return;
    env->device->wait_idle();
    offscreen.reset();
    renderer.reset();
    buffers.reset();
    EXPECT_EQ(env->validation_errors(), 0u) << "Vulkan validation errors (printed above)";
  }

  // Pixel where the network-space point p lands.
  std::pair<uint32_t, uint32_t> pixel_of(glm::vec3 p) const {
    return test::pixel_of(params, p, kSize);
  }
  const uint8_t* at(const RgbaImage& image, glm::vec3 p) const {
    auto [x, y] = pixel_of(p);
    if (x >= image.width || y >= image.height) {
      ADD_FAILURE() << "point projects outside the image";
      return image.at(0, 0);
    }
    return image.at(x, y);
  }
  RgbaImage render() { return offscreen->render(*renderer, *buffers, params); }

  std::unique_ptr<test::VulkanEnv> env;
  std::unique_ptr<SceneBuffers> buffers;
  std::unique_ptr<Renderer> renderer;
  std::unique_ptr<Offscreen> offscreen;
  FrameParams params;
};

std::string describe(const uint8_t* p) {
  return "(" + std::to_string(p[0]) + "," + std::to_string(p[1]) + "," + std::to_string(p[2]) + ")";
}

// Three rows of three neurons in the plane X = 0: row y = 1 (segment 0) values +1, −1, +1; row
// y = 0 (segment 1) values +10, −10, 0; row y = −1 (segment 2) all +1.
HandScene grid_scene() {
  HandScene s;
  s.add_segment({{0, 1, -1, 1}, {0, 1, 0, -1}, {0, 1, 1, 1}});
  s.add_segment({{0, 0, -1, 10}, {0, 0, 0, -10}, {0, 0, 1, 0}});
  s.add_segment({{0, -1, -1, 1}, {0, -1, 0, 1}, {0, -1, 1, 1}});
  return s;
}

TEST_F(RenderTest, NothingPublishedDrawsBackground) {
  RgbaImage image = render();
  const uint8_t* corner = image.at(0, 0);
  for (uint32_t y = 0; y < kSize; y += 7)
    for (uint32_t x = 0; x < kSize; x += 7)
      ASSERT_TRUE(test::near_colour(image.at(x, y), corner, 0))
          << "pixel " << x << "," << y << " image: " << test::save_failure_image(image, "engine_empty");
}

TEST_F(RenderTest, NeuronColoursWhereNeuronsAreBackgroundElsewhere) {
  HandScene s = grid_scene();
  s.write(*buffers);
  RgbaImage image = render();
  const std::string saved = "image: " + test::save_failure_image(image, "engine_grid");
  const uint8_t* bg = image.at(0, 0);
  EXPECT_LT(bg[0], 60) << saved;
  // Row 1: red, blue, red. Row 0: red, blue, grey. Row −1: red ×3.
  EXPECT_TRUE(test::is_red(at(image, {0, 1, -1}))) << describe(at(image, {0, 1, -1})) << saved;
  EXPECT_TRUE(test::is_blue(at(image, {0, 1, 0}))) << describe(at(image, {0, 1, 0})) << saved;
  EXPECT_TRUE(test::is_red(at(image, {0, 1, 1}))) << saved;
  EXPECT_TRUE(test::is_red(at(image, {0, 0, -1}))) << saved;
  EXPECT_TRUE(test::is_blue(at(image, {0, 0, 0}))) << saved;
  const uint8_t* grey = at(image, {0, 0, 1});
  EXPECT_TRUE(!test::is_red(grey) && !test::is_blue(grey) && grey[0] > bg[0] + 20 &&
              std::abs(int(grey[0]) - int(grey[2])) < 20)
      << describe(grey) << saved;
  for (float z : {-1.f, 0.f, 1.f}) EXPECT_TRUE(test::is_red(at(image, {0, -1, z}))) << z << saved;
  // Between neurons: background.
  for (glm::vec3 p : {glm::vec3(0, 0.5f, 0.5f), glm::vec3(0, -0.5f, -0.5f), glm::vec3(0, 1.45f, 0)})
    EXPECT_TRUE(test::near_colour(at(image, p), bg, 2)) << describe(at(image, p)) << saved;
  // Left of the left column in screen space is −Z (looking down +X with Y up, +Z is right).
  auto [left_x, left_y] = pixel_of({0, 0, -1});
  auto [right_x, right_y] = pixel_of({0, 0, 1});
  EXPECT_LT(left_x, right_x);
  EXPECT_EQ(left_y, right_y);
}

TEST_F(RenderTest, CountsArePrefixesOfSegments) {
  HandScene s = grid_scene();
  s.write(*buffers);
  scene::DrawCounts counts = s.counts;
  counts.neurons[2] = 1;  // row −1: only its first neuron
  counts.neurons[0] = 0;  // row 1: nothing
  buffers->write_counts(counts);
  EXPECT_EQ(buffers->last_count_bytes(), 3u * 2 * sizeof(VkDrawIndirectCommand));
  RgbaImage image = render();
  const std::string saved = "image: " + test::save_failure_image(image, "engine_counts");
  const uint8_t* bg = image.at(0, 0);
  EXPECT_TRUE(test::is_red(at(image, {0, -1, -1}))) << saved;
  EXPECT_TRUE(test::near_colour(at(image, {0, -1, 0}), bg, 2)) << saved;
  EXPECT_TRUE(test::near_colour(at(image, {0, -1, 1}), bg, 2)) << saved;
  for (float z : {-1.f, 0.f, 1.f}) EXPECT_TRUE(test::near_colour(at(image, {0, 1, z}), bg, 2)) << saved;
  EXPECT_TRUE(test::is_blue(at(image, {0, 0, 0}))) << saved;
}

// More segments than the buffers were made for: the tables and draw commands grow (each region
// and count slot when it is next written) and every segment is drawn, through a renderer made
// before they grew. The grid scene with each neuron its own segment: 9 segments, room for 2.
TEST_F(RenderTest, SegmentsBeyondTheStartingSizeGrowTheTables) {
  HandScene grid = grid_scene();
  HandScene s;
  for (const scene::Neuron& n : grid.neurons) s.add_segment({n});
  SceneBuffers small(*env->device, SceneBufferConfig{.element_budget = 1024, .max_segments = 2});
  Renderer r(*env->device, small, RendererConfig{});
  const uint64_t before = small.bytes_allocated();
  for (int generation = 1; generation <= 3; ++generation) {  // region A, B, then A again
    s.write(small);
    ASSERT_EQ(small.generation(), uint64_t(generation));
    RgbaImage image = offscreen->render(r, small, params);
    const std::string saved = "image: " + test::save_failure_image(image, "engine_grown");
    EXPECT_TRUE(test::is_red(at(image, {0, 1, -1}))) << saved;
    EXPECT_TRUE(test::is_blue(at(image, {0, 1, 0}))) << saved;
    EXPECT_TRUE(test::is_blue(at(image, {0, 0, 0}))) << saved;
    for (float z : {-1.f, 0.f, 1.f}) EXPECT_TRUE(test::is_red(at(image, {0, -1, z}))) << z << " " << saved;
  }
  EXPECT_GT(small.bytes_allocated(), before);
  // Counts for all nine segments: the last one (row −1, z = 1) can be switched off alone.
  scene::DrawCounts counts = s.counts;
  counts.neurons[8] = 0;
  small.write_counts(counts);
  RgbaImage image = offscreen->render(r, small, params);
  EXPECT_TRUE(test::near_colour(at(image, {0, -1, 1}), image.at(0, 0), 2)) << test::save_failure_image(image, "engine_grown_counts");
  EXPECT_TRUE(test::is_red(at(image, {0, -1, 0})));
}

TEST_F(RenderTest, MinimumPixelSizeKeepsTinyNeuronsVisible) {
  HandScene s;
  s.add_segment({{0, 0, 0, 1}});
  s.write(*buffers);
  params.neuron_size = 1e-5f;
  params.min_neuron_pixels = 6;
  RgbaImage image = render();
  EXPECT_TRUE(test::is_red(at(image, {0, 0, 0}))) << test::save_failure_image(image, "engine_min_size");
  params.min_neuron_pixels = 0;
  image = render();
  EXPECT_FALSE(test::is_red(at(image, {0, 0, 0}))) << test::save_failure_image(image, "engine_no_min_size");
}

TEST_F(RenderTest, ConnectionsAreLinesColouredBySign) {
  HandScene s;
  // Segment 0: two sources far apart; segment 1: one destination in the middle, fed by both.
  s.add_segment({{0, 1.5f, -1.5f, 0}, {0, -1.5f, -1.5f, 0}});
  s.add_segment({{0, 0, 1.5f, 0}},
                {scene::make_connection(0, 0, scene::encode_contribution(1.0f, 1.0f)),
                 scene::make_connection(1, 0, scene::encode_contribution(-1.0f, 1.0f))});
  s.write(*buffers);
  params.connection_alpha = 1.0f;
  RgbaImage image = render();
  const std::string saved = "image: " + test::save_failure_image(image, "engine_connections");
  // Midpoints of the two lines, searched in a small window (lines are one pixel wide).
  auto find = [&](glm::vec3 p, bool (*pred)(const uint8_t*)) {
    auto [cx, cy] = pixel_of(p);
    for (int dy = -2; dy <= 2; ++dy)
      for (int dx = -2; dx <= 2; ++dx)
        if (pred(image.at(cx + dx, cy + dy))) return true;
    return false;
  };
  EXPECT_TRUE(find({0, 0.75f, 0}, test::is_red)) << saved;
  EXPECT_TRUE(find({0, -0.75f, 0}, test::is_blue)) << saved;
  EXPECT_FALSE(find({0, 0, -0.75f}, test::is_red)) << saved;
  // Hiding connections by count.
  scene::DrawCounts counts = s.counts;
  counts.connections[1] = 1;
  buffers->write_counts(counts);
  image = render();
  EXPECT_TRUE(find({0, 0.75f, 0}, test::is_red)) << test::save_failure_image(image, "engine_connections_1");
  EXPECT_FALSE(find({0, -0.75f, 0}, test::is_blue)) << test::save_failure_image(image, "engine_connections_1");
}

TEST_F(RenderTest, HighlightRimsSelectionAndDimsTheRest) {
  HandScene s = grid_scene();
  s.write(*buffers);
  RgbaImage before = render();
  renderer->set_highlight({.generation = buffers->generation(), .neurons = {0, 5}, .connections = {}});
  RgbaImage image = render();
  const std::string saved = "image: " + test::save_failure_image(image, "engine_highlight");
  // Neuron 0 at (0, 1, −1): its rim (beyond 0.75 of the enlarged radius) is white.
  auto [cx, cy] = pixel_of({0, 1, -1});
  auto [ex, ey] = pixel_of({0, 1, -1 + 0.2f * 1.8f});  // enlarged radius in screen space
  const uint32_t rim_x = cx + (ex - cx) * 85 / 100;
  const uint8_t* rim = image.at(rim_x, cy);
  EXPECT_TRUE(rim[0] > 240 && rim[1] > 240 && rim[2] > 240) << describe(rim) << " at " << rim_x << saved;
  EXPECT_TRUE(test::is_red(image.at(cx, cy))) << saved;
  // A neuron that is not highlighted is dimmed.
  const uint8_t* was = at(before, {0, -1, 0});
  const uint8_t* now = at(image, {0, -1, 0});
  EXPECT_LT(int(now[0]) + 40, int(was[0])) << describe(was) << " → " << describe(now) << saved;
  // A highlight of another generation is not drawn.
  renderer->set_highlight({.generation = buffers->generation() + 1, .neurons = {0}, .connections = {}});
  image = render();
  EXPECT_TRUE(test::near_colour(at(image, {0, -1, 0}), was, 3)) << test::save_failure_image(image, "engine_stale");
}

TEST_F(RenderTest, GlobalColourRangeUsesOneScale) {
  HandScene s = grid_scene();  // row 1 has |v| = 1, row 0 has |v| = 10
  s.write(*buffers);
  params.colour_range = ColourRange::Global;
  params.value_range = 0;  // the generation's max |value| = 10
  RgbaImage image = render();
  const uint8_t* weak = at(image, {0, 1, -1});
  const uint8_t* strong = at(image, {0, 0, -1});
  EXPECT_TRUE(test::is_red(strong)) << test::save_failure_image(image, "engine_global");
  EXPECT_LT(int(weak[0]) + 30, int(strong[0])) << describe(weak) << " vs " << describe(strong);
}

TEST_F(RenderTest, CameraPresetsFrameTheBounds) {
  // A long network along X: every preset must keep all corners inside the image.
  const glm::vec3 lo{0, -0.5f, -1}, hi{8, 0.5f, 1};
  for (const char* name : {"overview", "front", "side", "top"}) {
    auto preset = parse_camera_preset(name);
    ASSERT_TRUE(preset);
    Camera cam = frame_bounds(*preset, lo, hi, 1.5f);
    glm::mat4 vp = cam.projection(1.5f) * cam.view();
    for (int i = 0; i < 8; ++i) {
      glm::vec3 c{(i & 1) ? hi.x : lo.x, (i & 2) ? hi.y : lo.y, (i & 4) ? hi.z : lo.z};
      glm::vec4 clip = vp * glm::vec4(c, 1);
      ASSERT_GT(clip.w, 0) << name;
      EXPECT_LE(std::abs(clip.x / clip.w), 1.0f) << name << " corner " << i;
      EXPECT_LE(std::abs(clip.y / clip.w), 1.0f) << name << " corner " << i;
      EXPECT_GE(clip.z / clip.w, 0.0f) << name;
      EXPECT_LE(clip.z / clip.w, 1.0f) << name;
    }
  }
  EXPECT_FALSE(parse_camera_preset("diagonal"));
}

// Blocks like UltraFace's: a short body of square maps and, past it, a strip four times as tall
// (a [3600, 4] tensor). No preset clips any corner, every preset spans at least half the width
// (turning about the vertical, or the image a quarter), side and top look from directions over
// 45 degrees apart, and the overview turns towards the side when that widens the network.
TEST_F(RenderTest, CameraPresetsFrameATallStripUnclipped) {
  std::vector<glm::vec3> corners;
  auto block = [&](glm::vec3 lo, glm::vec3 hi) {
    for (int i = 0; i < 8; ++i) corners.push_back({(i & 1) ? hi.x : lo.x, (i & 2) ? hi.y : lo.y, (i & 4) ? hi.z : lo.z});
  };
  for (int i = 0; i < 12; ++i) block({0.1f * i, -0.3f, -0.3f}, {0.1f * i + 0.02f, 0.3f, 0.3f});
  block({1.4f, -1.2f, -0.02f}, {1.42f, 1.2f, 0.02f});
  const float aspect = 16.0f / 9.0f;
  glm::vec3 side_dir{0}, top_dir{0};
  for (const char* name : {"overview", "front", "side", "top"}) {
    const Camera cam = frame_points(*parse_camera_preset(name), corners, aspect);
    const glm::mat4 vp = cam.projection(aspect) * cam.view();
    float x_lo = 1, x_hi = -1;
    for (const glm::vec3& c : corners) {
      const glm::vec4 clip = vp * glm::vec4(c, 1);
      ASSERT_GT(clip.w, 0) << name;
      EXPECT_LE(std::abs(clip.x / clip.w), 1.0f) << name;
      EXPECT_LE(std::abs(clip.y / clip.w), 1.0f) << name;
      x_lo = std::min(x_lo, clip.x / clip.w), x_hi = std::max(x_hi, clip.x / clip.w);
    }
    EXPECT_GE(0.5f * (x_hi - x_lo), 0.5f) << name << ": the blocks span under half the width";
    const glm::vec3 dir = glm::normalize(cam.eye - cam.target);
    if (std::string(name) == "side") side_dir = dir;
    if (std::string(name) == "top") top_dir = dir;
    if (std::string(name) == "overview") {
      // Seen from the default 37 degrees off the depth axis the strip's height limits the
      // network to about a quarter of the width; turned towards the side, it spans more.
      EXPECT_GT(dir.z / -dir.x, 1.0f) << "not turned towards the side";
      EXPECT_GT(0.5f * (x_hi - x_lo), 0.35f);
    }
  }
  EXPECT_LT(glm::dot(side_dir, top_dir), std::cos(0.8f)) << "side and top look from nearly the same direction";
}

TEST_F(RenderTest, StereoPipelinesBuild) {
  Renderer stereo(*env->device, *buffers, RendererConfig{.view_count = 2});
  EXPECT_EQ(stereo.config().view_count, 2u);
}

}  // namespace
}  // namespace nnxr::engine
