// The default model through the real pipeline: inference, layout, Scene::build into the scene
// buffers, a filter, an offscreen render (validation on); and `nnxr render` end to end.
#include <gtest/gtest.h>

#include <algorithm>
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
#include "model/scene/tiles.h"
#include "tests/engine/vulkan_env.h"

namespace nnxr::engine {
namespace {

// The frame of a 320x180 picture of the whole layout from the overview camera.
FrameParams overview_320x180(const scene::Layout& layout) {
  const auto lo = layout.bounds_min(), hi = layout.bounds_max();
  const Camera camera = frame_bounds(CameraPreset::Overview, {lo[0], lo[1], lo[2]}, {hi[0], hi[1], hi[2]}, 320.f / 180);
  FrameParams params;
  params.view[0] = camera.view();
  params.projection[0] = camera.projection(320.f / 180);
  params.neuron_size = layout.options().neuron_spacing * 0.8f;
  return params;
}

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
  FrameParams params = overview_320x180(layout);
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

// What `nnxr render` does (app/render.cpp): the run writes each tensor's image as the node
// computing it finishes (scene::ImageWriter from RunOptions::on_ready) and lets go of every
// activation but the focus's and the output (RunOptions::keep). The image is byte for byte, and
// the picture (images, points and connections of the focus) pixel for pixel, the one of a run
// that keeps every activation; the tensors let go hold no memory after the run, the kept ones
// hold their values.
TEST(DefaultModel, AStreamedRunDrawsThePictureOfTheFullRun) {
  auto env = test::VulkanEnv::create();
  if (!env) GTEST_SKIP();
  const assets::Asset asset = assets::default_model();
  auto plan = runtime::Plan::build(model::load_model_from_memory(asset.bytes, "digits.onnx"));
  const model::Graph& g = plan->graph();
  ASSERT_FALSE(scene::Layout::needs_run(g));
  const scene::Layout layout = scene::Layout::build(g, {});
  std::vector<float> pixels(64);
  for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = float((i * 7) % 5) - 2;  // fixed, signed
  const std::vector<int64_t> shape = g.tensors[g.inputs[0]].shape;
  const model::TensorId output = g.outputs[0];
  const std::vector<std::string> focus{g.tensors[output].name};
  const scene::SceneOptions scene_options{.budget = 20'000, .focus = focus};

  SceneBuffers buffers(*env->device, {.element_budget = 20'000, .max_segments = 64, .frames_in_flight = 1});
  const RendererConfig config{.frames_in_flight = 1};
  Renderer renderer(*env->device, buffers, config);
  Offscreen offscreen(*env->device, config, {320, 180});
  FrameParams params = overview_320x180(layout);
  params.min_neuron_pixels = 2.5f;
  params.point_fade_pixels = 3;
  const uint64_t image_bytes = scene::plan_images(layout).bytes;

  // Every activation kept.
  runtime::Session full(plan);
  full.set_input(0, model::DType::Float, shape, std::as_bytes(std::span(pixels)));
  full.run();
  const scene::Activations full_values = scene::activations_of(full);
  std::vector<std::byte> full_image(image_bytes + 16, std::byte{0xCD});  // not what the streamed image starts as
  auto* aligned = reinterpret_cast<std::byte*>((reinterpret_cast<uintptr_t>(full_image.data()) + 15) & ~uintptr_t(15));
  const scene::ImagesStats full_stats = scene::write_images(layout, full_values, {aligned, size_t(image_bytes)});
  scene::publish_images(layout, full_values, buffers.images());
  const scene::Scene full_scene = scene::Scene::build(g, layout, full_values, scene_options, buffers);
  buffers.write_counts(full_scene.counts({}));
  const RgbaImage full_picture = offscreen.render(renderer, buffers, params);
  env->device->wait_idle();

  // Streamed: the focus (the output) and what its connections are scored from kept.
  runtime::Session streamed(plan);
  streamed.set_input(0, model::DType::Float, shape, std::as_bytes(std::span(pixels)));
  std::vector<bool> keep(g.tensors.size(), false);
  keep[output] = true;
  for (model::TensorId t : g.nodes[g.tensors[output].producer].inputs) keep[t] = true;
  const uint64_t held_before = runtime::memory_held();
  const std::span<std::byte> memory = buffers.images().image(image_bytes);
  // Device memory comes with whatever it held: the writer must write every byte of the image,
  // padding included, whatever was there before.
  std::fill(memory.begin(), memory.end(), std::byte{0xAB});
  scene::ImageWriter writer(layout, memory);
  runtime::RunOptions options;
  options.keep = &keep;
  size_t written = 0;
  options.on_ready = [&](model::TensorId id, const runtime::Value& v) {
    writer.write(id, scene::tensor_value(v));
    written += layout.block(id) != nullptr;
  };
  streamed.run(options);
  const scene::Activations values = scene::activations_of(streamed);
  const scene::ImagesStats stats = writer.finish(values);
  EXPECT_EQ(written + g.inputs.size(), layout.blocks().size()) << "every laid-out node output written during the run";
  EXPECT_EQ(stats.activations_shown, stats.activations_total);
  EXPECT_EQ(stats.activations_shown, full_stats.activations_shown);
  ASSERT_EQ(memory.size(), size_t(image_bytes));
  EXPECT_TRUE(std::equal(memory.begin(), memory.end(), aligned)) << "the image differs from the full run's";
  buffers.images().publish_image(stats);
  const scene::Scene scene = scene::Scene::build(g, layout, values, scene_options, buffers);
  EXPECT_EQ(scene.stats().neurons, full_scene.stats().neurons);
  EXPECT_EQ(scene.stats().connections, full_scene.stats().connections);
  EXPECT_GT(scene.stats().connections, 0u);
  buffers.write_counts(scene.counts({}));
  const RgbaImage picture = offscreen.render(renderer, buffers, params);
  env->device->wait_idle();

  // Let go: every activation but the kept ones, their memory given back.
  uint64_t kept_bytes = 0, let_go = 0;
  for (model::TensorId id = 0; id < g.tensors.size(); ++id) {
    const model::Tensor& t = g.tensors[id];
    if (t.producer == model::kNone || t.kind != model::TensorKind::Activation || !full.value(id)) continue;
    if (keep[id]) {
      ASSERT_NE(streamed.value(id), nullptr) << t.name;
      EXPECT_TRUE(std::ranges::equal(values[id].data, full_values[id].data)) << t.name;
      kept_bytes += runtime::buffer_bytes(streamed.value(id)->byte_size());
    } else {
      EXPECT_EQ(streamed.value(id), nullptr) << t.name;
      ++let_go;
    }
  }
  EXPECT_GT(let_go, 5u);
  EXPECT_EQ(runtime::memory_held() - held_before, kept_bytes);

  const std::string saved = "images: " + test::save_failure_image(full_picture, "engine_full_run") + " " +
                            test::save_failure_image(picture, "engine_streamed_run");
  ASSERT_EQ(picture.pixels.size(), full_picture.pixels.size());
  size_t lit = 0, differ = 0;
  const uint8_t* bg = picture.at(0, 0);
  for (size_t i = 0; i < picture.pixels.size(); i += 4) {
    differ += !std::equal(&picture.pixels[i], &picture.pixels[i] + 4, &full_picture.pixels[i]);
    lit += !test::near_colour(&picture.pixels[i], bg, 3);
  }
  EXPECT_EQ(differ, 0u) << saved;
  EXPECT_GT(lit, picture.pixels.size() / 4 / 20) << saved;  // the network fills a good part of the frame
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
