// A generation larger than a storage-buffer descriptor may address on many devices (128 MiB):
// ten million neurons and a few connections, published through the SceneSink interface and
// rendered offscreen. The neurons and connections drawn lie beyond the first 128 MiB of the
// region, so the pixels show that the shaders reach them (by device address, 64-bit offsets).
// Draw counts keep the GPU's share small: only a handful of elements is drawn. Validation on.
#include <gtest/gtest.h>

#include <algorithm>

#include "engine/offscreen.h"
#include "engine/renderer.h"
#include "engine/scene_buffers.h"
#include "tests/engine/vulkan_env.h"

namespace nnxr::engine {
namespace {

constexpr uint32_t kSize = 96;
constexpr uint32_t kNeurons = 10'000'000;
constexpr uint64_t kDescriptorRange = uint64_t(128) << 20;

class LargeSceneTest : public ::testing::Test {
 protected:
  void SetUp() override {
    env = test::VulkanEnv::create();
    if (!env) GTEST_SKIP();
    params = test::side_view();
    params.connection_alpha = 1.0f;
  }
  void TearDown() override {
    if (!env) return;
    env->device->wait_idle();
    EXPECT_EQ(env->validation_errors(), 0u) << "Vulkan validation errors (printed above)";
  }
  std::pair<uint32_t, uint32_t> pixel_of(glm::vec3 p) const {
    return test::pixel_of(params, p, kSize);
  }
  // Whether a pixel within two of where p lands satisfies pred (lines are one pixel wide).
  bool near(const RgbaImage& image, glm::vec3 p, bool (*pred)(const uint8_t*)) const {
    auto [cx, cy] = pixel_of(p);
    for (int dy = -2; dy <= 2; ++dy)
      for (int dx = -2; dx <= 2; ++dx) {
        const uint32_t x = cx + dx, y = cy + dy;
        if (x < image.width && y < image.height && pred(image.at(x, y))) return true;
      }
    return false;
  }

  std::unique_ptr<test::VulkanEnv> env;
  FrameParams params;
};

TEST_F(LargeSceneTest, ElementsBeyondTheFirst128MiBAreDrawn) {
  // Segment 0: neurons 0 .. kNeurons − 4, only the first drawn (blue, at y = 1). Segment 1: the
  // last three neurons (red; byte offsets past 128 MiB) and one connection from the first of them
  // to the last (red line), stored at the end of the region.
  constexpr uint32_t kLast = 3;
  constexpr uint32_t kFirstOfLast = kNeurons - kLast;
  static_assert(uint64_t(kFirstOfLast) * sizeof(scene::Neuron) > kDescriptorRange);
  const SceneBufferConfig config{.element_budget = kNeurons + 16, .max_segments = 4, .frames_in_flight = 1};
  ASSERT_LE(config.element_budget, max_element_budget(*env->device));
  auto buffers = std::make_unique<SceneBuffers>(*env->device, config);
  EXPECT_GT(buffers->bytes_allocated(), 2 * kDescriptorRange);

  std::span<scene::Neuron> neurons = buffers->neurons(kNeurons);
  std::fill(neurons.begin(), neurons.begin() + kFirstOfLast, scene::Neuron{0, 20, 0, -1});  // off-screen
  neurons[0] = {0, 1, 0, -1};
  neurons[kFirstOfLast + 0] = {0, -1, -1, 1};
  neurons[kFirstOfLast + 1] = {0, -1, 0.5f, 1};
  neurons[kFirstOfLast + 2] = {0, 0.2f, 1.5f, 1};
  std::span<scene::Connection> connections = buffers->connections(2);
  connections[0] = scene::make_connection(1, 0, scene::encode_contribution(-1.0f, 1.0f));  // not drawn
  connections[1] = scene::make_connection(kFirstOfLast, 2, scene::encode_contribution(1.0f, 1.0f));

  std::vector<scene::Segment> segments(2);
  segments[0].tensor = 0;
  segments[0].neuron_first = 0;
  segments[0].neuron_count = segments[0].neuron_total = kFirstOfLast;
  segments[0].connection_first = 0;
  segments[0].connection_count = segments[0].connection_candidates = 1;
  segments[0].value_min = segments[0].value_max = -1;
  segments[1].tensor = 1;
  segments[1].layer = 1;
  segments[1].neuron_first = kFirstOfLast;
  segments[1].neuron_count = segments[1].neuron_total = kLast;
  segments[1].connection_first = 1;
  segments[1].connection_count = segments[1].connection_candidates = 1;
  segments[1].value_min = segments[1].value_max = 1;
  scene::DrawCounts counts{.neurons = {1, kLast}, .connections = {0, 1}};
  buffers->publish(segments, counts, 1.0f);

  Renderer renderer(*env->device, *buffers, RendererConfig{.frames_in_flight = 1});
  Offscreen offscreen(*env->device, RendererConfig{.frames_in_flight = 1}, VkExtent2D{kSize, kSize});
  RgbaImage image = offscreen.render(renderer, *buffers, params);
  const std::string saved = "image: " + test::save_failure_image(image, "engine_large_scene");
  EXPECT_TRUE(near(image, {0, 1, 0}, test::is_blue)) << saved;
  EXPECT_TRUE(near(image, {0, -1, -1}, test::is_red)) << saved;
  EXPECT_TRUE(near(image, {0, -1, 0.5f}, test::is_red)) << saved;
  EXPECT_TRUE(near(image, {0, 0.2f, 1.5f}, test::is_red)) << saved;
  // The drawn connection's midpoint.
  EXPECT_TRUE(near(image, {0, -0.4f, 0.25f}, test::is_red)) << saved;

  // Hiding the last segment's neurons by count leaves background where they were.
  counts.neurons[1] = 0;
  counts.connections[1] = 0;
  buffers->write_counts(counts);
  image = offscreen.render(renderer, *buffers, params);
  EXPECT_FALSE(near(image, {0, -1, -1}, test::is_red)) << test::save_failure_image(image, "engine_large_scene_hidden");
  EXPECT_TRUE(near(image, {0, 1, 0}, test::is_blue)) << test::save_failure_image(image, "engine_large_scene_hidden");
  env->device->wait_idle();
}

}  // namespace
}  // namespace nnxr::engine
