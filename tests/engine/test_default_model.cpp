// The default model through the real pipeline: inference, layout, Scene::build into the scene
// buffers, a filter, an offscreen render (validation on); and `nnxr render` end to end.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "assets/assets.h"
#include "engine/camera.h"
#include "engine/offscreen.h"
#include "engine/renderer.h"
#include "engine/scene_buffers.h"
#include "model/load.h"
#include "model/runtime/runtime.h"
#include "tests/engine/vulkan_env.h"

namespace nnxr::engine {
namespace {

TEST(DefaultModel, RendersItsNeuronsInTheColourMap) {
  auto env = test::VulkanEnv::create();
  if (!env) GTEST_SKIP();
  const assets::Asset asset = assets::default_model();
  auto plan = runtime::Plan::build(model::load_model_from_memory(asset.bytes, "digits.onnx"));
  runtime::Session session(plan);
  const model::Graph& g = plan->graph();
  const model::Tensor& input = g.tensors[g.inputs[0]];
  std::vector<float> pixels(64);
  for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = float((i * 7) % 5) - 2;  // fixed, signed
  std::vector<int64_t> shape = input.shape;
  session.set_input(0, model::DType::Float, shape, std::as_bytes(std::span(pixels)));
  session.run();

  const scene::Layout layout = scene::Layout::build(g, {});
  SceneBuffers buffers(*env->device, {.element_budget = 100'000, .max_segments = 64, .frames_in_flight = 1});
  const scene::Scene scene = scene::Scene::build(g, layout, scene::activations_of(session), {}, buffers);
  ASSERT_GT(scene.stats().neurons, 1000u);
  ASSERT_EQ(buffers.generation(), 1u);
  buffers.write_counts(scene.counts({.connection_threshold = 0.5f}));

  const RendererConfig config{.frames_in_flight = 1};
  Renderer renderer(*env->device, buffers, config);
  Offscreen offscreen(*env->device, config, {320, 180});
  const auto lo = layout.bounds_min(), hi = layout.bounds_max();
  const Camera camera = frame_bounds(CameraPreset::Overview, {lo[0], lo[1], lo[2]}, {hi[0], hi[1], hi[2]}, 320.f / 180);
  FrameParams params;
  params.view[0] = camera.view();
  params.projection[0] = camera.projection(320.f / 180);
  params.neuron_size = layout.options().neuron_spacing * 0.8f;
  params.connections = false;  // neurons only: every lit pixel is a neuron colour
  const RgbaImage image = offscreen.render(renderer, buffers, params);
  env->device->wait_idle();

  const uint8_t* bg = image.at(0, 0);
  size_t lit = 0, red = 0, blue = 0, other = 0;
  for (uint32_t y = 0; y < image.height; ++y)
    for (uint32_t x = 0; x < image.width; ++x) {
      const uint8_t* p = image.at(x, y);
      if (test::near_colour(p, bg, 3)) continue;
      ++lit;
      if (test::is_red(p)) ++red;
      else if (test::is_blue(p)) ++blue;
      else if (p[0] > 1.6 * p[1] + 20 && p[0] > p[2]) ++red;  // weaker positive: reddish grey
      else if (p[2] > p[0] + 20) ++blue;
      else ++other;  // near-zero grey and anti-aliased edges
    }
  const std::string saved = "image: " + test::save_failure_image(image, "engine_default_model");
  const size_t total = size_t(image.width) * image.height;
  EXPECT_GT(lit, total / 20) << saved;  // the network fills a good part of the frame
  EXPECT_LT(lit, total * 9 / 10) << saved;
  EXPECT_GT(red, lit / 20) << "red " << red << " of " << lit << ' ' << saved;
  EXPECT_GT(blue, 0u) << saved;
  EXPECT_EQ(env->validation_errors(), 0u);
}

int run_nnxr(const std::string& arguments) {
  test::prefer_lavapipe();
  const int status = std::system((std::string(NNXR_BINARY) + " " + arguments + " 2>/dev/null >/dev/null").c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(RenderCommand, WritesAPngAndFailsClearly) {
  const auto out = std::filesystem::temp_directory_path() / "nnxr_render_test.png";
  std::filesystem::remove(out);
  EXPECT_EQ(run_nnxr("render --width 64 --height 48 --out " + out.string()), 0);
  EXPECT_GT(std::filesystem::file_size(out), 100u);
  EXPECT_EQ(run_nnxr("render /nonexistent.onnx --out " + out.string()), 1);
  EXPECT_EQ(run_nnxr("render --camera sideways --out " + out.string()), 2);
  EXPECT_EQ(run_nnxr("render"), 2);  // --out missing
  EXPECT_EQ(run_nnxr("render --out /nonexistent-dir/x.png --width 32 --height 32"), 1);
  std::filesystem::remove(out);
}

}  // namespace
}  // namespace nnxr::engine
