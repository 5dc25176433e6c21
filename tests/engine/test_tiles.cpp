// Activation images: the image a run writes (halves, max-|a| pyramids, quantiles) and offscreen
// renders of tensors with known values, checked by pixels (validation on).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "engine/offscreen.h"
#include "engine/renderer.h"
#include "engine/scene_buffers.h"
#include "engine/worker.h"
#include "model/half.h"
#include "model/load.h"
#include "model/scene/focus.h"
#include "model/scene/tiles.h"
#include "tests/engine/vulkan_env.h"

namespace nnxr::engine {
namespace {

// One input X of [1, C, H, W] and Y = Relu(X) one layer behind it.
model::Graph relu_graph(int c, int h, int w) {
  const std::string shape = "[1," + std::to_string(c) + "," + std::to_string(h) + "," + std::to_string(w) + "]";
  return model::load_model_from_text(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float)" + shape + R"( X) => (float)" + shape + R"( Y) {
      Y = Relu(X)
    })");
}

struct KnownRun {
  std::vector<float> x, y;
  std::vector<int64_t> shape;
  scene::Activations acts;
  KnownRun(const model::Graph& g, std::vector<float> values) : x(std::move(values)) {
    shape = g.tensors[g.inputs[0]].shape;
    y = x;
    for (float& v : y) v = std::max(v, 0.f);
    acts.resize(g.tensors.size());
    acts[g.inputs[0]] = {shape, x};
    acts[g.outputs[0]] = {shape, y};
  }
};

std::vector<std::byte> image_of(const scene::Layout& layout, const scene::Activations& acts, scene::ImagesStats& stats) {
  const scene::ImagesStats planned = scene::plan_images(layout);
  std::vector<std::byte> bytes(planned.bytes + 16);
  auto* aligned = reinterpret_cast<std::byte*>((reinterpret_cast<uintptr_t>(bytes.data()) + 15) & ~uintptr_t(15));
  stats = scene::write_images(layout, acts, {aligned, size_t(planned.bytes)}, 2);
  std::vector<std::byte> out(aligned, aligned + planned.bytes);
  return out;
}

template <class T>
T read(const std::vector<std::byte>& bytes, size_t offset) {
  T t;
  std::memcpy(&t, bytes.data() + offset, sizeof t);
  return t;
}

TEST(ActivationImages, HalvesPyramidsAndQuantiles) {
  const model::Graph g = relu_graph(2, 9, 9);
  std::vector<float> x(2 * 81, 0.f);
  x[40] = -7.f;        // channel 0, row 4, column 4
  x[81 + 80] = 3.5f;   // channel 1, last element
  for (int i = 0; i < 9; ++i) x[size_t(81 + i)] = 0.25f * float(i);  // channel 1, row 0
  const KnownRun run(g, x);
  const scene::Layout layout = scene::Layout::build(g, {});
  scene::ImagesStats stats;
  const auto image = image_of(layout, run.acts, stats);
  EXPECT_EQ(stats.activations_total, 2u * 2 * 81);
  EXPECT_EQ(stats.activations_shown, stats.activations_total);
  EXPECT_EQ(stats.tiles, 4u);
  // At most 2 bytes per activation: 14-bit level 0 plus pyramids (1/15 of it for large maps) and
  // tables: about 1.87 bytes (2.15 with 16-bit values).
  const model::Graph wide = relu_graph(64, 56, 56);
  const scene::ImagesStats planned = scene::plan_images(scene::Layout::build(wide, {}));
  EXPECT_EQ(planned.activations_total, 2u * 64 * 56 * 56);
  EXPECT_LE(double(planned.bytes), 2.0 * double(planned.activations_total));
  EXPECT_GE(double(planned.bytes), 1.75 * double(planned.activations_total) * 16 / 15);
  // 14 × 14 maps (pyramids 17/196 of level 0, a 16-byte tile per 196 values): still under 2.
  const scene::ImagesStats small = scene::plan_images(scene::Layout::build(relu_graph(96, 14, 14), {}));
  EXPECT_LE(double(small.bytes), 2.0 * double(small.activations_total));

  const auto header = read<scene::ImagesHeaderGpu>(image, 0);
  EXPECT_EQ(header.tensor_count, 2u);
  EXPECT_EQ(header.tile_count, 4u);
  EXPECT_FLOAT_EQ(header.value_abs_max, 7.f);
  const auto x_block = *layout.block(g.inputs[0]);
  const size_t x_index = size_t(&x_block - &layout.blocks()[0]) == 0 ? 0 : 1;
  (void)x_index;
  // The tiles of X: 9 × 9 each, level 0 its values, one pyramid level (3 × 3: a pixel over the
  // whole tile reads all of it).
  for (uint32_t t = 0; t < 4; ++t) {
    const auto tile = scene::image_tile(image, t);
    EXPECT_EQ(tile.rows, 9u);
    EXPECT_EQ(tile.cols, 9u);
    EXPECT_EQ(tile.valid, 81u);
    EXPECT_EQ(tile.levels, 1u);
    const auto info = read<scene::TensorImageGpu>(image, sizeof(scene::ImagesHeaderGpu) + tile.tensor * sizeof(scene::TensorImageGpu));
    if (info.value_min >= 0) continue;  // Y: checked through X only
    const size_t channel = t % 2;
    auto half = [&](uint32_t i) { return scene::image_value(image, i); };
    for (uint32_t i = 0; i < 81; ++i) EXPECT_EQ(half(tile.data + i), x[channel * 81 + i]);
    // Level 1: 3 × 3 entries over 4 × 4 blocks.
    if (channel == 0) {
      EXPECT_EQ(half(tile.pyramid + 4), -7.f);  // block (1, 1) holds element (4, 4)
      EXPECT_EQ(half(tile.pyramid + 0), 0.f);
    } else {
      EXPECT_EQ(half(tile.pyramid + 8), 3.5f);   // block (2, 2): element (8, 8) alone
      EXPECT_EQ(half(tile.pyramid + 0), 0.75f);  // row 0, columns 0..3
    }
  }
  // Quantiles of X's |a|: 161 zeros of 162, then 7 and 3.5 and 0.25 .. 2: q = 0 is 0; q = 1 keeps nothing.
  for (uint32_t i = 0; i < 2; ++i) {
    const auto info = read<scene::TensorImageGpu>(image, sizeof(scene::ImagesHeaderGpu) + i * sizeof(scene::TensorImageGpu));
    EXPECT_EQ(info.computed, 1u);
    EXPECT_EQ(info.quantiles[0], 0.f);
    EXPECT_TRUE(std::isinf(info.quantiles[64]));
    EXPECT_LE(info.quantiles[32], info.quantiles[54]);
    // Entry 54 (q = 0.9962) keeps 162 − round(161.4) = 1 element: the strongest |a| of X, or of Y = Relu(X).
    EXPECT_EQ(info.quantiles[54], i == 0 ? 7.f : 3.5f);
    EXPECT_TRUE(std::isinf(info.quantiles[55]));
  }
}

// Values keep 8 mantissa bits (rounded to nearest): finer than the 8-bit colours they become.
TEST(ActivationImages, ValuesKeepEightMantissaBitsRounded) {
  const model::Graph g = relu_graph(1, 16, 16);
  std::vector<float> x(256);
  for (size_t i = 0; i < x.size(); ++i) x[i] = (i % 2 ? -1.f : 1.f) * (0.001f + 0.37f * float(i) * float(i));
  const KnownRun run(g, x);
  const scene::Layout layout = scene::Layout::build(g, {});
  scene::ImagesStats stats;
  const auto image = image_of(layout, run.acts, stats);
  const uint32_t x_tile = uint32_t(layout.block(g.inputs[0]) - layout.blocks().data());  // one tile per block
  const auto tile = scene::image_tile(image, x_tile);
  float strongest = 0;
  for (uint32_t i = 0; i < 256; ++i) {
    const float v = scene::image_value(image, tile.data + i);
    EXPECT_EQ(v, scene::image_rounded(x[i]));
    EXPECT_LE(std::abs(v - x[i]), std::abs(x[i]) / 400.f) << i;  // half a step of 1/256, and the half's own rounding
    if (std::abs(v) > std::abs(strongest)) strongest = v;
  }
  // The pyramid's top (4 × 4 above 16 × 16): its strongest entry is the tile's, sign kept.
  ASSERT_EQ(tile.levels, 1u);
  float top = 0;
  for (uint32_t i = 0; i < 16; ++i)
    if (const float e = scene::image_value(image, tile.pyramid + i); std::abs(e) > std::abs(top)) top = e;
  EXPECT_EQ(top, strongest);
  EXPECT_LT(strongest, 0.f);
}

TEST(ActivationImages, UncomputedTensorsAreCountedButNotShown) {
  const model::Graph g = relu_graph(1, 4, 4);
  KnownRun run(g, std::vector<float>(16, 1.f));
  run.acts[g.outputs[0]] = {};
  const scene::Layout layout = scene::Layout::build(g, {});
  scene::ImagesStats stats;
  image_of(layout, run.acts, stats);
  EXPECT_EQ(stats.activations_total, 32u);
  EXPECT_EQ(stats.activations_shown, 16u);
}

// X → A = Relu(X) → B = Sigmoid(A), each [1, 2, 4, 4].
model::Graph chain_graph() {
  return model::load_model_from_text(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,2,4,4] X) => (float[1,2,4,4] B) {
      A = Relu(X)
      B = Sigmoid(A)
    })");
}

std::vector<std::string> segment_names(const model::Graph& g, const scene::Scene& s) {
  std::vector<std::string> names;
  for (const scene::Segment& seg : s.segments()) names.push_back(g.tensors[seg.tensor].name + (seg.connection_count ? "+" : ""));
  return names;
}

TEST(Focus, PointsAndConnectionsOnlyForTheFocusAndItsSources) {
  const model::Graph g = chain_graph();
  std::vector<std::vector<float>> storage(g.tensors.size());
  scene::Activations acts(g.tensors.size());
  for (size_t i = 0; i < g.tensors.size(); ++i)
    if (g.tensors[i].dtype == model::DType::Float && g.tensors[i].elements()) {
      storage[i].resize(32);
      for (size_t e = 0; e < 32; ++e) storage[i][e] = float(e % 7) - 3.f + 0.1f * float(i);
      acts[i] = {g.tensors[i].shape, storage[i]};
    }
  const scene::Layout layout = scene::Layout::build(g, {});
  scene::InMemorySink sink;
  const scene::Scene all = scene::Scene::build(g, layout, acts, {}, sink);
  EXPECT_EQ(segment_names(g, all), (std::vector<std::string>{"X", "A+", "B+"}));
  // Focus on B: B with its connections, A as their source, nothing of X.
  const scene::Scene on_b = scene::Scene::build(g, layout, acts, {.focus = {"B"}}, sink);
  EXPECT_EQ(segment_names(g, on_b), (std::vector<std::string>{"A", "B+"}));
  EXPECT_EQ(on_b.stats().neurons, 64u);
  EXPECT_EQ(scene::focus_elements(g, layout, {"B"}, 8), 32u * 9 + 32u);
  // The focus moves to A: A and X resident, B not.
  const scene::Scene on_a = scene::Scene::build(g, layout, acts, {.focus = {"A"}}, sink);
  EXPECT_EQ(segment_names(g, on_a), (std::vector<std::string>{"X", "A+"}));
  EXPECT_THROW(scene::Scene::build(g, layout, acts, {.focus = {"nope"}}, sink), std::invalid_argument);
  // Chosen by where the viewer is: from beyond the last layer, B is nearest.
  const auto far = layout.bounds_max();
  EXPECT_EQ(scene::choose_focus(g, layout, {far[0] + 1, 0, 0}, nullptr, 40), (std::vector<std::string>{"B"}));
  EXPECT_EQ(scene::choose_focus(g, layout, {-1, 0, 0}, nullptr, 64), (std::vector<std::string>{"X", "A"}));
  EXPECT_EQ(scene::choose_focus(g, layout, {-1, 0, 0}, [](std::array<float, 3> p) { return p[0] > 0; }, 1),
            (std::vector<std::string>{"A"}));
}

constexpr uint32_t kSize = 128;

class TilesRender : public ::testing::Test {
 protected:
  void SetUp() override {
    env = test::VulkanEnv::create();
    if (!env) GTEST_SKIP();
    buffers = std::make_unique<SceneBuffers>(*env->device, SceneBufferConfig{.element_budget = 1024, .max_segments = 16});
    renderer = std::make_unique<Renderer>(*env->device, *buffers, RendererConfig{});
    offscreen = std::make_unique<Offscreen>(*env->device, RendererConfig{}, VkExtent2D{kSize, kSize});
    params = test::side_view();
    params.neuron_size = 0.01f;  // the images' depth offset stays well inside a layer
  }
  void TearDown() override {
    if (!env) return;
    env->device->wait_idle();
    offscreen.reset();
    renderer.reset();
    buffers.reset();
    EXPECT_EQ(env->validation_errors(), 0u) << "Vulkan validation errors (printed above)";
  }
  RgbaImage render() { return offscreen->render(*renderer, *buffers, params); }
  const uint8_t* at(const RgbaImage& image, glm::vec3 p) const {
    auto [x, y] = test::pixel_of(params, p, kSize);
    EXPECT_LT(x, image.width);
    EXPECT_LT(y, image.height);
    return image.at(std::min(x, image.width - 1), std::min(y, image.height - 1));
  }

  std::unique_ptr<test::VulkanEnv> env;
  std::unique_ptr<SceneBuffers> buffers;
  std::unique_ptr<Renderer> renderer;
  std::unique_ptr<Offscreen> offscreen;
  FrameParams params;
};

std::string describe(const uint8_t* p) {
  return "(" + std::to_string(p[0]) + "," + std::to_string(p[1]) + "," + std::to_string(p[2]) + ")";
}

bool is_grey(const uint8_t* p) {
  return std::abs(int(p[0]) - int(p[2])) < 20 && p[0] > 60 && p[0] < 140;
}

TEST_F(TilesRender, KnownValuesGiveTheKnownImage) {
  // A 4 × 4 feature map, 0.25 m between elements: columns +4, −4, 0, +1 (row 3: +4 everywhere).
  const model::Graph g = relu_graph(1, 4, 4);
  std::vector<float> x(16);
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 4; ++c) x[size_t(r * 4 + c)] = r == 3 ? 4.f : (c == 0 ? 4.f : c == 1 ? -4.f : c == 2 ? 0.f : 1.f);
  const KnownRun run(g, x);
  const scene::Layout layout = scene::Layout::build(g, {.neuron_spacing = 0.25f});
  const scene::ImagesStats stats = scene::publish_images(layout, run.acts, buffers->images());
  EXPECT_EQ(stats.activations_shown, 32u);
  EXPECT_EQ(buffers->images().generation(), 1u);
  RgbaImage image = render();
  const scene::Block& b = *layout.block(g.inputs[0]);
  auto centre = [&](int r, int c) {
    const auto p = layout.position(b.tensor, r * 4 + c);
    return glm::vec3(p[0], p[1], p[2]);
  };
  for (int r = 0; r < 3; ++r) {
    EXPECT_TRUE(test::is_red(at(image, centre(r, 0)))) << describe(at(image, centre(r, 0))) << " " << test::save_failure_image(image, "tiles_known");
    EXPECT_TRUE(test::is_blue(at(image, centre(r, 1)))) << describe(at(image, centre(r, 1))) << " " << test::save_failure_image(image, "tiles_known");
    EXPECT_TRUE(is_grey(at(image, centre(r, 2)))) << describe(at(image, centre(r, 2))) << " " << test::save_failure_image(image, "tiles_known");
    // +1 of a range of 4: red, but darker than +4.
    const uint8_t* weak = at(image, centre(r, 3));
    EXPECT_TRUE(test::is_red(weak)) << describe(weak);
    EXPECT_LT(weak[0], at(image, centre(r, 0))[0]);
  }
  for (int c = 0; c < 4; ++c) EXPECT_TRUE(test::is_red(at(image, centre(3, c)))) << describe(at(image, centre(3, c)));
  // Outside the tile: background.
  uint8_t corner[4];
  std::memcpy(corner, image.at(0, 0), 4);
  EXPECT_TRUE(test::near_colour(at(image, centre(0, 0) + glm::vec3(0, 0.5f, 0)), corner, 2));
  EXPECT_TRUE(test::near_colour(at(image, centre(0, 3) + glm::vec3(0, 0, 0.5f)), corner, 2));

  // The neuron threshold as an absolute |a| of 0.5: the zeros are not drawn, the rest is.
  params.image_threshold_absolute = true;
  params.image_threshold = 0.5f;
  image = render();
  EXPECT_TRUE(test::near_colour(at(image, centre(1, 2)), corner, 2)) << describe(at(image, centre(1, 2))) << describe(corner);
  EXPECT_TRUE(test::is_red(at(image, centre(1, 3))));
  // As a quantile: q = 0.75 keeps the strongest quarter of each tensor (the +4 and −4 of X).
  params.image_threshold_absolute = false;
  params.image_threshold = 0.75f;
  image = render();
  EXPECT_TRUE(test::is_red(at(image, centre(1, 0))));
  EXPECT_TRUE(test::is_blue(at(image, centre(1, 1))));
  EXPECT_TRUE(test::near_colour(at(image, centre(1, 3)), corner, 2)) << describe(at(image, centre(1, 3)));
  // Images off: nothing.
  params.images = false;
  image = render();
  EXPECT_TRUE(test::near_colour(at(image, centre(1, 0)), corner, 2)) << describe(at(image, centre(1, 0))) << describe(corner);
}

// An 8x8 picture as a Caffe model takes it ([1, 3, 8, 8], BGR 0-255 minus the mean 104/117/123):
// rows 0-3 kPictureTop, rows 4-7 kPictureBottom (sRGB bytes).
constexpr uint8_t kPictureTop[3] = {40, 200, 60}, kPictureBottom[3] = {60, 80, 220};
std::vector<float> two_colour_caffe_picture() {
  const float mean[3] = {104, 117, 123};  // B, G, R
  std::vector<float> x(3 * 64);
  for (int ch = 0; ch < 3; ++ch)  // tensor channel ch is display channel 2 - ch (BGR)
    for (int r = 0; r < 8; ++r)
      for (int c = 0; c < 8; ++c) x[size_t(ch * 64 + r * 8 + c)] = float((r < 4 ? kPictureTop : kPictureBottom)[2 - ch]) - mean[ch];
  return x;
}

// An RGB image input is drawn in its true colours (the preprocessing undone: Caffe's BGR 0-255
// minus the mean here), every channel's tile showing the picture; without the picture it is in
// the colour map.
TEST_F(TilesRender, AnImageInputShowsItsTrueColours) {
  const model::Graph g = relu_graph(3, 8, 8);
  // Rows 0-3 green (40, 200, 60), rows 4-7 blue (60, 80, 220), as sRGB bytes.
  const uint8_t* top = kPictureTop;
  const uint8_t* bottom = kPictureBottom;
  const std::vector<float> x = two_colour_caffe_picture();
  const KnownRun run(g, x);
  const scene::Layout layout = scene::Layout::build(g, {.neuron_spacing = 0.08f});
  const scene::Block& b = *layout.block(g.inputs[0]);
  ASSERT_EQ(b.tiles, 3);
  auto centre = [&](int ch, int r, int c) {
    const auto p = layout.position(b.tensor, ch * 64 + r * 8 + c);
    return glm::vec3(p[0], p[1], p[2]);
  };
  params.neuron_size = 0.001f;
  const scene::ImagePicture caffe{g.inputs[0], {.scale = 1.0f, .mean = {104, 117, 123}, .std = {}, .bgr = true}};
  scene::publish_images(layout, run.acts, buffers->images(), 1, std::span(&caffe, 1));
  RgbaImage image = render();
  for (int ch = 0; ch < 3; ++ch)
    for (int r : {1, 2, 5, 6})
      for (int c : {2, 5}) {
        const uint8_t* p = at(image, centre(ch, r, c));
        const uint8_t* want = r < 4 ? top : bottom;
        EXPECT_TRUE(test::near_colour(p, want, 8)) << "channel " << ch << " row " << r << ": " << describe(p) << " want "
                                                   << describe(want) << " " << test::save_failure_image(image, "tiles_picture");
      }
  // The same values without the picture: the colour map (no green anywhere in it).
  scene::publish_images(layout, run.acts, buffers->images(), 1);
  image = render();
  for (int ch = 0; ch < 3; ++ch) {
    const uint8_t* p = at(image, centre(ch, 1, 2));
    EXPECT_FALSE(test::near_colour(p, top, 30)) << describe(p);
  }
}

// A channels-last image input [1, H, W, 3] is laid out as one H × W·3 tile, each row an image row
// with each pixel's channels side by side (3 columns to a neuron spacing), and drawn in its true
// colours there at its aspect: all three columns of a pixel show that pixel's colour (here three
// quadrant colours of an 8 × 14 picture, as sRGB bytes / 255), the picture is W / H as wide as it
// is tall on the screen, and a ray through a channel's point picks that channel; without the
// picture it is in the colour map.
TEST_F(TilesRender, AChannelsLastImageInputShowsItsTrueColours) {
  constexpr int kH = 8, kW = 14;
  const model::Graph g = model::load_model_from_text(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,8,14,3] X) => (float[1,8,14,3] Y) {
      Y = Relu(X)
    })");
  const uint8_t colours[3][3] = {{40, 200, 60}, {220, 60, 40}, {60, 80, 220}};
  auto colour_at = [&](int r, int c) { return colours[r < kH / 2 ? (c < kW / 2 ? 0 : 1) : 2]; };
  std::vector<float> x(kH * kW * 3);
  for (int r = 0; r < kH; ++r)
    for (int c = 0; c < kW; ++c)
      for (int k = 0; k < 3; ++k) x[size_t((r * kW + c) * 3 + k)] = float(colour_at(r, c)[k]) / 255.0f;
  const KnownRun run(g, x);
  constexpr float kSpacing = 0.15f;
  const scene::Layout layout = scene::Layout::build(g, {.neuron_spacing = kSpacing});
  const scene::Block& b = *layout.block(g.inputs[0]);
  ASSERT_EQ(b.tiles, 1);
  ASSERT_EQ(b.tile_h, kH);
  ASSERT_EQ(b.tile_w, kW * 3);
  ASSERT_EQ(b.columns_per_step, 3);
  EXPECT_EQ(layout.block(g.outputs[0])->tiles, kH);  // not an input: rows of W × 3 as before
  EXPECT_EQ(layout.block(g.outputs[0])->columns_per_step, 1);
  // Rows a spacing apart, a pixel's channels a third of one: the block spans (W − 1/3) spacings.
  EXPECT_NEAR(b.max[1] - b.min[1], float(kH - 1) * kSpacing, 1e-4f);
  EXPECT_NEAR(b.max[2] - b.min[2], (float(kW) - 1.0f / 3) * kSpacing, 1e-4f);
  auto centre = [&](int r, int c, int k) {
    const auto p = layout.position(b.tensor, (r * kW + c) * 3 + k);
    return glm::vec3(p[0], p[1], p[2]);
  };
  EXPECT_NEAR(centre(0, 1, 0).z - centre(0, 0, 0).z, kSpacing, 1e-5f);
  EXPECT_NEAR(centre(0, 0, 1).z - centre(0, 0, 0).z, kSpacing / 3, 1e-5f);
  // The image tells the shaders the same (X is the first block: tile 0).
  ASSERT_EQ(&b, &layout.blocks()[0]);
  scene::ImagesStats stats;
  const auto bytes = image_of(layout, run.acts, stats);
  EXPECT_FLOAT_EQ(scene::image_tile(bytes, 0).column_step, kSpacing / 3);
  EXPECT_FLOAT_EQ(scene::image_tile(bytes, 1).column_step, kSpacing);  // Y's first row
  // A ray from the camera through a channel's point picks that element.
  const glm::vec3 eye{-5, 0, 0};
  for (int r : {0, 3, 7})
    for (int c : {0, 6, 13})
      for (int k = 0; k < 3; ++k) {
        const glm::vec3 d = centre(r, c, k) - eye;
        const auto hit = layout.pick({eye.x, eye.y, eye.z}, {d.x, d.y, d.z}, kSpacing * 0.75f);
        ASSERT_TRUE(hit.has_value());
        EXPECT_EQ(hit->tensor, b.tensor);
        EXPECT_EQ(hit->element, (r * kW + c) * 3 + k) << "row " << r << " column " << c << " channel " << k;
      }
  params.neuron_size = 0.001f;
  const scene::ImagePicture unit{g.inputs[0], {.scale = 1.0f / 255.0f, .mean = {}, .std = {}, .bgr = false}};
  scene::publish_images(layout, run.acts, buffers->images(), 1, std::span(&unit, 1));
  RgbaImage image = render();
  for (int r : {1, 2, 5, 6})
    for (int c : {1, 5, 8, 12})
      for (int k = 0; k < 3; ++k) {
        const uint8_t* p = at(image, centre(r, c, k));
        EXPECT_TRUE(test::near_colour(p, colour_at(r, c), 8)) << "row " << r << " column " << c << " channel " << k << ": " << describe(p)
                                                              << " want " << describe(colour_at(r, c)) << " "
                                                              << test::save_failure_image(image, "tiles_nhwc_picture");
      }
  // The picture alone (Y not computed: nothing drawn of it): its extent on the screen, head on,
  // is W / H as wide as it is tall.
  scene::Activations input_only = run.acts;
  input_only[g.outputs[0]] = {};
  scene::publish_images(layout, input_only, buffers->images(), 1, std::span(&unit, 1));
  image = render();
  uint8_t background[4];
  std::memcpy(background, image.at(0, 0), 4);
  uint32_t x0 = kSize, x1 = 0, y0 = kSize, y1 = 0;
  for (uint32_t py = 0; py < kSize; ++py)
    for (uint32_t px = 0; px < kSize; ++px)
      if (!test::near_colour(image.at(px, py), background, 8)) {
        x0 = std::min(x0, px), x1 = std::max(x1, px);
        y0 = std::min(y0, py), y1 = std::max(y1, py);
      }
  ASSERT_LT(x0, x1);
  ASSERT_LT(y0, y1);
  const double width = double(x1 - x0 + 1), height = double(y1 - y0 + 1);
  EXPECT_GT(height, 30.0);  // large enough for a pixel to be a few per cent
  EXPECT_NEAR(width / height, double(kW) / kH, 0.05 * kW / kH)
      << width << " x " << height << " pixels " << test::save_failure_image(image, "tiles_nhwc_aspect");
  scene::publish_images(layout, run.acts, buffers->images(), 1);
  image = render();
  const uint8_t* p = at(image, centre(1, 1, 1));
  EXPECT_FALSE(test::near_colour(p, colour_at(1, 1), 30)) << describe(p);
}

// Up close the input's points would cover its picture with the colour map: the tensors drawn as
// pictures (scene::picture_tensors) have their points taken out of the draw counts
// (scene::drop_points), so the picture's true colours show where the points were; the other
// tensors keep their points, and a selected input neuron is still highlighted over the picture.
TEST_F(TilesRender, AnImageInputsPointsLeaveItsPictureAlone) {
  const model::Graph g = relu_graph(3, 8, 8);
  const uint8_t* top = kPictureTop;
  const uint8_t* bottom = kPictureBottom;
  const std::vector<float> x = two_colour_caffe_picture();
  const KnownRun run(g, x);
  const scene::Layout layout = scene::Layout::build(g, {.neuron_spacing = 0.08f});
  const scene::Block& b = *layout.block(g.inputs[0]);
  ASSERT_EQ(b.tiles, 3);
  auto centre = [&](model::TensorId t, int ch, int r, int c) {
    const auto p = layout.position(t, ch * 64 + r * 8 + c);
    return glm::vec3(p[0], p[1], p[2]);
  };
  const scene::ImagePicture caffe{g.inputs[0], {.scale = 1.0f, .mean = {104, 117, 123}, .std = {}, .bgr = true}};
  scene::publish_images(layout, run.acts, buffers->images(), 1, std::span(&caffe, 1));
  const scene::Scene sc = scene::Scene::build(g, layout, run.acts, {}, *buffers);
  ASSERT_EQ(sc.segments().size(), 2u);
  const size_t xs = sc.segments()[0].tensor == g.inputs[0] ? 0 : 1, ys = 1 - xs;
  ASSERT_EQ(sc.segments()[xs].neuron_count, 192u);
  params.neuron_size = 0.06f;   // points nearly as wide as the spacing: they cover the element centres
  params.point_fade_pixels = 0;  // always drawn, as when the viewer is close
  // X → Y's connections run along this view's rays, onto the element centres: not drawn here
  // (they are lines of the network, not the colour map's points, and stay in the viewer).
  params.connections = false;
  const std::vector<std::pair<int, int>> places = {{1, 2}, {2, 5}, {5, 2}, {6, 5}};

  // All points drawn: the colour map covers the picture (no green where the top rows are).
  scene::DrawCounts counts = sc.counts({});
  buffers->write_counts(counts);
  RgbaImage image = render();
  int covered = 0;
  for (int ch = 0; ch < 3; ++ch)
    for (auto [r, c] : places) covered += !test::near_colour(at(image, centre(b.tensor, ch, r, c)), r < 4 ? top : bottom, 8);
  EXPECT_EQ(covered, 12) << test::save_failure_image(image, "tiles_picture_points");

  // The picture's points taken out: the true colours at every place, Y's points still counted.
  const std::vector<model::TensorId> pictured = scene::picture_tensors(layout, run.acts, std::span(&caffe, 1));
  ASSERT_EQ(pictured, std::vector<model::TensorId>{g.inputs[0]});
  EXPECT_TRUE(scene::picture_tensors(layout, run.acts, {}).empty());
  scene::drop_points(counts, sc.segments(), pictured);
  EXPECT_EQ(counts.neurons[xs], 0u);
  EXPECT_EQ(counts.neurons[ys], sc.segments()[ys].neuron_count);
  buffers->write_counts(counts);
  image = render();
  for (int ch = 0; ch < 3; ++ch)
    for (auto [r, c] : places) {
      const uint8_t* p = at(image, centre(b.tensor, ch, r, c));
      const uint8_t* want = r < 4 ? top : bottom;
      EXPECT_TRUE(test::near_colour(p, want, 8)) << "channel " << ch << " row " << r << ": " << describe(p) << " want "
                                                 << describe(want) << " " << test::save_failure_image(image, "tiles_picture_no_points");
    }
  // Y's points are drawn (Y is right behind X in this view): with the images off, X's negative B
  // element (60 − 104) is not a blue point, and behind its positive G element (200 − 117) is Y's
  // red point.
  params.images = false;
  image = render();
  const uint8_t* g_place = at(image, centre(b.tensor, 1, 1, 2));
  const uint8_t* b_place = at(image, centre(b.tensor, 0, 1, 2));
  EXPECT_TRUE(test::is_red(g_place)) << describe(g_place) << " " << test::save_failure_image(image, "tiles_picture_y");
  EXPECT_FALSE(test::is_blue(b_place)) << describe(b_place) << " " << test::save_failure_image(image, "tiles_picture_y");
  params.images = true;

  // An input neuron is still picked and highlighted over the picture (its rim white, its centre
  // the colour map, not the picture's green).
  const glm::vec3 selected = centre(b.tensor, 1, 1, 2);
  const auto hit = layout.pick({selected.x - 1.0f, selected.y, selected.z}, {1, 0, 0}, 0.01f);
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ(hit->tensor, g.inputs[0]);
  EXPECT_EQ(hit->element, 64 + 8 + 2);
  const std::optional<uint32_t> n = sc.find(g.inputs[0], 64 + 8 + 2);
  ASSERT_TRUE(n.has_value());
  renderer->set_highlight({.generation = buffers->generation(), .neurons = {*n}, .connections = {}});
  image = render();
  const uint8_t* lit = at(image, selected);
  EXPECT_TRUE(test::is_red(lit)) << describe(lit) << " " << test::save_failure_image(image, "tiles_picture_highlight");
  bool white = false;
  for (int i = 0; i <= 20; ++i) {
    const uint8_t* q = at(image, selected + glm::vec3(0, 0.05f * float(i) * 1.8f * params.neuron_size, 0));
    white = white || (q[0] > 240 && q[1] > 240 && q[2] > 240);
  }
  EXPECT_TRUE(white) << test::save_failure_image(image, "tiles_picture_highlight");
  renderer->clear_highlight();
}

// The viewer's worker does the same with the input picture of its words: the drawn neuron count
// (what --stats reports as drawn) leaves out the input's points, the resident count keeps them,
// and a ray still selects an input neuron. Without a picture the input keeps its points.
TEST_F(TilesRender, TheWorkerDrawsNoPointsOverThePicture) {
  const model::Graph g = relu_graph(3, 8, 8);
  const scene::Layout layout = scene::Layout::build(g, {});
  const model::TensorId input = g.inputs[0];
  const InputSource caffe_input = [](const model::Graph& graph) {
    Feeds feeds;
    const model::Tensor& t = graph.tensors[graph.inputs[0]];
    model::TensorData d;
    d.dtype = model::DType::Float;
    d.shape = t.shape;
    d.bytes.resize(size_t(d.elements()) * 4);
    for (size_t i = 0; i < size_t(d.elements()); ++i) {
      const float v = float(i % 64 < 32 ? 90 : 160) - 117.f;
      std::memcpy(d.bytes.data() + 4 * i, &v, 4);
    }
    feeds[t.name] = std::move(d);
    return feeds;
  };
  for (const bool picture : {true, false}) {
    WorkerOptions o;
    o.print_progress = false;
    o.scene.budget = 1000;
    if (picture) o.words.picture = InputPicture{g.tensors[input].name, {.scale = 1.0f, .mean = {104, 117, 123}, .std = {}, .bgr = true}};
    Worker w(*buffers, o);
    w.load({"relu", [&] { return g; }}, caffe_input);
    w.wait_idle();
    uint64_t resident = 0, drawn = 0;
    for (WorkerEvent& e : w.take_events()) {
      if (auto* b = std::get_if<SceneBuilt>(&e)) resident = b->neurons;
      if (auto* c = std::get_if<CountsApplied>(&e)) drawn = c->neurons;
    }
    EXPECT_EQ(resident, 384u) << "picture " << picture;
    EXPECT_EQ(drawn, picture ? 192u : 384u) << "picture " << picture;
    // A filter change keeps the input's points out.
    w.filter(scene::Filter{});
    w.wait_idle();
    uint64_t filtered = 0;
    for (WorkerEvent& e : w.take_events())
      if (auto* c = std::get_if<CountsApplied>(&e)) filtered = c->neurons;
    EXPECT_EQ(filtered, picture ? 192u : 384u) << "picture " << picture;
    // An input neuron is still selected.
    const auto p = layout.position(input, 70);
    const uint64_t serial = w.select({p[0] - 0.05f, p[1], p[2]}, {1, 0, 0}, 0.0005f);
    w.wait_idle();
    std::optional<Selection> selected;
    for (WorkerEvent& e : w.take_events())
      if (auto* sel = std::get_if<Selected>(&e); sel && sel->serial == serial) selected = sel->selection;
    ASSERT_TRUE(selected.has_value()) << "picture " << picture;
    EXPECT_EQ(selected->tensor, input);
    EXPECT_EQ(selected->element, 70);
  }
}

// Compare mode keeps A's, B's and A − B's images resident, one region each: showing one again is a
// pointer swap (no write, no allocation), drawn at once; a new input drops A's and A − B's and
// writes the new A where one of them was, B's staying. Without kept images two regions suffice.
TEST_F(TilesRender, KeptImagesFlipByAPointerSwap) {
  const model::Graph g = relu_graph(1, 4, 4);
  const scene::Layout layout = scene::Layout::build(g, {.neuron_spacing = 0.25f});
  const scene::Block& b = *layout.block(g.inputs[0]);
  const auto p = layout.position(b.tensor, 5);
  const glm::vec3 element(p[0], p[1], p[2]);
  const KnownRun a(g, std::vector<float>(16, 4.f)), bb(g, std::vector<float>(16, -4.f));
  ActivationImages& images = buffers->images();
  // Without keeping: four writes, two regions.
  for (int i = 0; i < 4; ++i) scene::publish_images(layout, a.acts, images);
  const uint64_t region = images.bytes_allocated() / 2;
  EXPECT_EQ(images.bytes_allocated(), 2 * region);

  uint64_t key_a = 0, key_b = 0, key_d = 0, serial = 0;
  scene::show_or_publish_images(layout, a.acts, images, key_a, serial);
  scene::show_or_publish_images(layout, bb.acts, images, key_b, serial);
  scene::show_or_publish_images(layout, a.acts, images, key_d, serial);  // "A − B"
  EXPECT_EQ(serial, 3u);
  EXPECT_EQ(images.bytes_allocated(), 3 * region);
  // Flips: swaps only.
  for (int round = 0; round < 3; ++round) {
    const uint64_t generation = images.generation();
    scene::show_or_publish_images(layout, bb.acts, images, key_b, serial);
    EXPECT_EQ(images.generation(), generation + 1);
    EXPECT_TRUE(test::is_blue(at(render(), element)));
    scene::show_or_publish_images(layout, a.acts, images, key_a, serial);
    EXPECT_TRUE(test::is_red(at(render(), element)));
  }
  EXPECT_EQ(serial, 3u);  // nothing written
  EXPECT_EQ(images.bytes_allocated(), 3 * region);
  EXPECT_EQ(images.show_image(key_d)->activations_total, 32u);
  // A new input: A and A − B are stale; the new A goes into one of their regions, B stays kept.
  images.drop_image(key_a), images.drop_image(key_d);
  key_a = key_d = 0;
  scene::show_or_publish_images(layout, bb.acts, images, key_a, serial);
  EXPECT_EQ(serial, 4u);
  EXPECT_FALSE(images.show_image(key_d));
  ASSERT_TRUE(images.show_image(key_b));
  EXPECT_TRUE(test::is_blue(at(render(), element)));
  EXPECT_EQ(images.bytes_allocated(), 3 * region);
}

// The op-type and tensor filters reach the images through a few bytes per tensor
// (scene::image_filter → ActivationImages::write_image_filter): hidden, dimmed, shown again.
TEST_F(TilesRender, OpAndTensorFiltersHideOrDimImages) {
  // X (input) → Relu → Y; X all −4 (blue), so Y, behind X in this view, is all 0 (grey).
  const model::Graph g = relu_graph(1, 4, 4);
  std::vector<float> x(16, -4.f);
  const KnownRun run(g, x);
  const scene::Layout layout = scene::Layout::build(g, {.neuron_spacing = 0.25f});
  scene::publish_images(layout, run.acts, buffers->images());
  const scene::Block& b = *layout.block(g.inputs[0]);
  const auto c = layout.position(b.tensor, 5);
  const glm::vec3 p(c[0], c[1], c[2]);
  RgbaImage image = render();
  uint8_t shown[4], corner[4];
  std::memcpy(shown, at(image, p), 4);
  std::memcpy(corner, image.at(0, 0), 4);
  ASSERT_TRUE(test::is_blue(shown)) << describe(shown);

  scene::Filter only_relu;
  only_relu.op_types = {"Relu"};
  const std::vector<uint8_t> hide = scene::image_filter(g, layout, only_relu);
  ASSERT_EQ(hide.size(), layout.blocks().size());
  for (size_t i = 0; i < hide.size(); ++i)
    EXPECT_EQ(hide[i], layout.blocks()[i].tensor == g.inputs[0] ? 2 : 0) << "block " << i;  // X is not a Relu's
  buffers->images().write_image_filter(hide);
  image = render();
  EXPECT_TRUE(is_grey(at(image, p))) << describe(at(image, p)) << " " << test::save_failure_image(image, "tiles_filter_hide");  // Y's zeros
  EXPECT_FALSE(test::near_colour(at(image, p), corner, 2));

  only_relu.outside = scene::Filter::Outside::Dim;
  buffers->images().write_image_filter(scene::image_filter(g, layout, only_relu));
  image = render();
  const uint8_t* dim = at(image, p);
  EXPECT_TRUE(dim[2] > dim[0] && dim[2] < shown[2] / 2) << describe(dim) << " vs " << describe(shown) << " "
                                                        << test::save_failure_image(image, "tiles_filter_dim");

  scene::Filter by_tensor;  // the tensor filter: only X
  by_tensor.tensors = {g.inputs[0]};
  buffers->images().write_image_filter(scene::image_filter(g, layout, by_tensor));
  image = render();
  EXPECT_TRUE(test::near_colour(at(image, p), shown, 2)) << describe(at(image, p));
  buffers->images().write_image_filter(scene::image_filter(g, layout, scene::Filter{}));
  image = render();
  EXPECT_TRUE(test::near_colour(at(image, p), shown, 2)) << describe(at(image, p));
}

TEST_F(TilesRender, MinifiedTileKeepsASingleStrongValueVisible) {
  // 512 × 512 zeros but one −9 at (300, 77): the map is about 20 pixels wide, so a pixel covers
  // some 25 × 25 elements and the one strong value must still colour one of them.
  const int n = 512;
  const model::Graph g = relu_graph(1, n, n);
  std::vector<float> x(size_t(n) * n, 0.f);
  x[size_t(300 * n + 77)] = -9.f;
  const KnownRun run(g, x);
  const scene::Layout layout = scene::Layout::build(g, {.neuron_spacing = 1.f / 512});
  scene::publish_images(layout, run.acts, buffers->images());
  const RgbaImage image = render();
  const scene::Block& b = *layout.block(g.inputs[0]);
  const auto p = layout.position(b.tensor, 300 * n + 77);
  int blue = 0, grey = 0;
  for (uint32_t y = 0; y < kSize; ++y)
    for (uint32_t xx = 0; xx < kSize; ++xx) {
      blue += test::is_blue(image.at(xx, y)) ? 1 : 0;
      grey += is_grey(image.at(xx, y)) ? 1 : 0;
    }
  EXPECT_GE(blue, 1) << test::save_failure_image(image, "tiles_minified");
  EXPECT_LE(blue, 4) << test::save_failure_image(image, "tiles_minified");  // one pixel (two where the footprint straddles)
  EXPECT_GT(grey, 200) << test::save_failure_image(image, "tiles_minified");  // the zeros
  EXPECT_TRUE(test::is_blue(at(image, {p[0], p[1], p[2]}))) << describe(at(image, {p[0], p[1], p[2]})) << " " << test::save_failure_image(image, "tiles_minified");
}

}  // namespace
}  // namespace nnxr::engine
