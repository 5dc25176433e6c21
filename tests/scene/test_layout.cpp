// Layout invariants: blocks never overlap, positions are deterministic, distinct within a tensor
// and inside the bounds; feature maps read as images; pick() finds the element a ray points at.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>
#include <span>
#include <string>
#include <tuple>

#include "model/load.h"
#include "model/runtime/runtime.h"
#include "model/scene/labels.h"
#include "model/scene/scene.h"
#include "tests/scene/test_scene_util.h"

namespace nnxr::scene {
namespace {

using model::Graph;

bool overlap(const Block& a, const Block& b) {
  if (a.min[0] != b.min[0]) return false;  // blocks are planar: different X never overlap
  return a.min[1] < b.max[1] && b.min[1] < a.max[1] && a.min[2] < b.max[2] && b.min[2] < a.max[2];
}

void check_invariants(const Graph& g, const Layout& layout, bool check_distinct) {
  const auto& blocks = layout.blocks();
  for (size_t i = 0; i < blocks.size(); ++i)
    for (size_t j = i + 1; j < blocks.size(); ++j)
      EXPECT_FALSE(overlap(blocks[i], blocks[j])) << g.tensors[blocks[i].tensor].name << " and " << g.tensors[blocks[j].tensor].name;
  const auto lo = layout.bounds_min(), hi = layout.bounds_max();
  for (const Block& b : blocks) {
    ASSERT_EQ(layout.block(b.tensor), &b);
    const int64_t n = *g.tensors[b.tensor].elements();
    EXPECT_GE(b.tiles * b.tile_h * b.tile_w, n);
    EXPECT_EQ(b.min[0], b.max[0]);
    std::set<std::tuple<float, float, float>> seen;
    for (int64_t e = 0; e < n; e += check_distinct ? 1 : std::max<int64_t>(1, n / 997)) {
      const auto p = layout.position(b.tensor, e);
      for (int a = 0; a < 3; ++a) {
        EXPECT_GE(p[a], b.min[a] - 1e-5f) << g.tensors[b.tensor].name << " element " << e;
        EXPECT_LE(p[a], b.max[a] + 1e-5f) << g.tensors[b.tensor].name << " element " << e;
        EXPECT_GE(p[a], lo[a]);
        EXPECT_LE(p[a], hi[a]);
      }
      if (check_distinct) {
        EXPECT_TRUE(seen.insert({p[0], p[1], p[2]}).second) << g.tensors[b.tensor].name << " element " << e;
      }
    }
  }
}

TEST(Layout, BranchyGraphInvariants) {
  const Graph g = model::load_model_from_text(test::kBranchy);
  const Layout layout = Layout::build(g, {});
  // Float inputs and activations: X V U A B T W R C D.
  EXPECT_EQ(layout.blocks().size(), 10u);
  check_invariants(g, layout, true);
  // Layers increase along X; blocks are ordered by layer.
  for (size_t i = 1; i < layout.blocks().size(); ++i) EXPECT_LE(layout.blocks()[i - 1].layer, layout.blocks()[i].layer);
  EXPECT_LT(layout.block(g.find("X"))->min[0], layout.block(g.find("A"))->min[0]);
  EXPECT_LT(layout.block(g.find("A"))->min[0], layout.block(g.find("C"))->min[0]);
  // The parallel branches A, B, T, W, R share X and stand side by side.
  for (const char* n : {"B", "T", "W", "R"}) EXPECT_EQ(layout.block(g.find(n))->min[0], layout.block(g.find("A"))->min[0]);
}

TEST(Layout, FeatureMapsAreTiles) {
  const Graph g = model::load_model_from_text(test::kBranchy);
  const Layout layout = Layout::build(g, {.neuron_spacing = 0.01f});
  const Block& x = *layout.block(g.find("X"));  // [1,3,5,7]: 3 tiles of 5×7
  EXPECT_EQ(x.tiles, 3);
  EXPECT_EQ(x.tile_h, 5);
  EXPECT_EQ(x.tile_w, 7);
  EXPECT_EQ(x.tiles_x * x.tiles_y >= 3, true);
  const auto p00 = layout.position(g.find("X"), 0), p01 = layout.position(g.find("X"), 1), p10 = layout.position(g.find("X"), 7);
  EXPECT_NEAR(p01[2] - p00[2], 0.01f, 1e-6f);  // next column: one spacing to the right
  EXPECT_NEAR(p00[1] - p10[1], 0.01f, 1e-6f);  // next row: one spacing down
  EXPECT_EQ(p01[1], p00[1]);
  // The next tile starts more than one spacing away from the last element of the previous one.
  const auto t0_end = layout.position(g.find("X"), 34), t1_start = layout.position(g.find("X"), 35);
  EXPECT_GT(std::abs(t1_start[2] - t0_end[2]) + std::abs(t1_start[1] - t0_end[1]), 0.015f);
  const Block& v = *layout.block(g.find("V"));  // vector [6]: one near-square tile 2×3
  EXPECT_EQ(v.tiles, 1);
  EXPECT_EQ(v.tile_h * v.tile_w >= 6 && v.tile_w <= 3, true);
  const Block& u = *layout.block(g.find("U"));  // [2,3,4]: 2 tiles of 3×4
  EXPECT_EQ(u.tiles, 2);
  EXPECT_EQ(u.tile_h, 3);
  EXPECT_EQ(u.tile_w, 4);
}

// Every rank reads as pictures (scene.h fold_of): {tiles, tile_h, tile_w}.
TEST(Layout, FoldsEveryRankIntoPictures) {
  using F = std::array<int64_t, 3>;
  auto fold = [](std::vector<int64_t> shape) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return fold_of(shape, n);
  };
  EXPECT_EQ(fold({1000}), (F{1, 32, 32}));              // rank 1: one near-square picture
  EXPECT_EQ(fold({1, 1000}), (F{1, 32, 32}));           // logits [1, 1000]
  EXPECT_EQ(fold({1, 1280, 1, 1}), (F{1, 36, 36}));     // a fully connected layer's 1×1 maps
  EXPECT_EQ(fold({1, 64, 56, 56}), (F{64, 56, 56}));    // feature maps
  EXPECT_EQ(fold({1, 12, 197, 197}), (F{12, 197, 197}));  // attention: a head's map is a tile
  EXPECT_EQ(fold({1, 7, 128}), (F{7, 8, 16}));          // BERT: each token a picture, not a line
  EXPECT_EQ(fold({1, 197, 768}), (F{1, 197, 768}));     // ViT tokens × features: one picture
  EXPECT_EQ(fold({1, 32, 1, 100}), (F{32, 10, 10}));    // C × 1 × L: each channel a picture
  EXPECT_EQ(fold({1, 4, 3, 5, 6}), (F{12, 5, 6}));      // rank 5: D slices of H × W per channel
  EXPECT_EQ(fold({2, 3, 4, 5, 6, 7}), (F{120, 6, 7}));  // rank 6
  EXPECT_EQ(fold({1, 3, 1, 13}), (F{3, 1, 13}));        // short rows stay rows
  EXPECT_EQ(fold({1, 2, 97}), (F{1, 2, 97}));           // a prime row has no exact square fold
}

TEST(Layout, Deterministic) {
  const Graph g = model::load_model_from_text(test::kBranchy);
  const Layout a = Layout::build(g, {}), b = Layout::build(g, {});
  ASSERT_EQ(a.blocks().size(), b.blocks().size());
  for (size_t i = 0; i < a.blocks().size(); ++i) {
    EXPECT_EQ(a.blocks()[i].tensor, b.blocks()[i].tensor);
    EXPECT_EQ(a.blocks()[i].min, b.blocks()[i].min);
    EXPECT_EQ(a.blocks()[i].max, b.blocks()[i].max);
    for (int64_t e = 0; e < *g.tensors[a.blocks()[i].tensor].elements(); ++e)
      EXPECT_EQ(a.position(a.blocks()[i].tensor, e), b.position(b.blocks()[i].tensor, e));
  }
}

TEST(Layout, WeightsAreOptionalBlocks) {
  const Graph g = model::load_model_from_text(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1,4] X) => (float[1,2] Y) <float[4,2] W = {1, 2, 3, 4, 5, 6, 7, 8}> {
      Y = MatMul(X, W)
    })");
  EXPECT_EQ(Layout::build(g, {}).block(g.find("W")), nullptr);
  const Layout with = Layout::build(g, {.weights = true});
  ASSERT_NE(with.block(g.find("W")), nullptr);
  EXPECT_LT(with.block(g.find("W"))->min[0], with.block(g.find("Y"))->min[0]);
  check_invariants(g, with, true);
}

TEST(Layout, PickFindsTheElementUnderTheRay) {
  const Graph g = model::load_model_from_text(test::kBranchy);
  const Layout layout = Layout::build(g, {});
  for (const char* name : {"X", "A", "T", "C", "W", "R"}) {
    const model::TensorId id = g.find(name);
    const int64_t n = *g.tensors[id].elements();
    for (int64_t e : {int64_t(0), n / 2, n - 1}) {
      const auto p = layout.position(id, e);
      // From in front of the network (lower X), straight along +X, slightly off-centre.
      const auto hit = layout.pick({-1.f, p[1] + 0.0005f, p[2] - 0.0005f}, {1, 0, 0}, 0.0015f);
      ASSERT_TRUE(hit) << name << " " << e;
      // Blocks at lower X come first along the ray; only the first layer's blocks are unobstructed.
      if (layout.block(id)->min[0] == layout.bounds_min()[0]) {
        EXPECT_EQ(hit->tensor, id);
        EXPECT_EQ(hit->element, e);
      }
      EXPECT_NEAR(layout.position(hit->tensor, hit->element)[0] + 1.f, hit->distance, 1e-4f);
    }
  }
  // An oblique ray through one element of the deepest block, from behind (larger X).
  const model::TensorId d = g.find("D");
  const auto p = layout.position(d, 17);
  const std::array<float, 3> dir = {-1.f, 0.2f, 0.1f};
  const std::array<float, 3> origin = {p[0] - 0.5f * dir[0], p[1] - 0.5f * dir[1], p[2] - 0.5f * dir[2]};
  const auto hit = layout.pick(origin, dir, 0.001f);
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit->tensor, d);
  EXPECT_EQ(hit->element, 17);
  EXPECT_FALSE(layout.pick({-1, 100, 100}, {1, 0, 0}, 0.01f));
  EXPECT_FALSE(layout.pick({-1, 0, 0}, {0, 0, 0}, 0.01f));
}

TEST(Layout, MobileNetSpansARoom) {
  const std::filesystem::path path = std::filesystem::path(NNXR_SHARED_MODELS) / "arch/mobilenet_v2-op13.onnx";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " is absent";
  const Graph g = model::load_model(path);
  const Layout layout = Layout::build(g, {});
  int64_t elements = 0;
  for (const Block& b : layout.blocks()) elements += *g.tensors[b.tensor].elements();
  EXPECT_GT(elements, 13'000'000);
  const auto lo = layout.bounds_min(), hi = layout.bounds_max();
  for (int a = 0; a < 3; ++a) {
    EXPECT_GT(hi[a] - lo[a], 1.f) << "axis " << a;
    EXPECT_LT(hi[a] - lo[a], 16.f) << "axis " << a;
  }
  check_invariants(g, layout, false);
}

}  // namespace
}  // namespace nnxr::scene

namespace nnxr::scene {
namespace {

// A Reshape whose target shape is a graph input: the graph cannot tell Z's shape, a run can. The
// input-free layout leaves Z out; with the run's activations Z is laid out in its run shape, and
// the scene shows all of its neurons.
TEST(Layout, DataDependentShapesAreLaidOutFromTheRun) {
  const auto plan = runtime::Plan::build(model::load_model_from_text(R"(<ir_version: 8, opset_import: ["" : 13]>
      g (float[2,3,4] X, int64[3] S) => (float[?, ?, ?] Z) {
        Y = Relu(X)
        Z = Reshape(Y, S) })"));
  const Graph& g = plan->graph();
  const model::TensorId z = g.find("Z");
  ASSERT_NE(z, model::kNone);
  ASSERT_FALSE(g.tensors[z].elements().has_value());
  EXPECT_TRUE(Layout::needs_run(g));
  runtime::Session s(plan);
  std::vector<float> x(24);
  for (size_t i = 0; i < x.size(); ++i) x[i] = float(i) - 5;
  const std::vector<int64_t> xs = {2, 3, 4}, shape = {4, 3, 2}, ss = {3};
  s.set_input("X", model::DType::Float, xs, std::as_bytes(std::span(x)));
  s.set_input("S", model::DType::Int64, ss, std::as_bytes(std::span(shape)));
  s.run();
  const Activations acts = activations_of(s);

  EXPECT_EQ(Layout::build(g, {}).block(z), nullptr);
  const Layout layout = Layout::build(g, {}, &acts);
  const Block* b = layout.block(z);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->elements, 24);
  EXPECT_EQ(b->tiles, 4);  // 4 tiles of 3×2
  EXPECT_EQ(b->tile_h, 3);
  EXPECT_EQ(b->tile_w, 2);
  EXPECT_EQ(layout.blocks().size(), 3u);  // X, Y, Z

  InMemorySink sink;
  const Scene scene = Scene::build(g, layout, acts, {.top_k = 4, .budget = 1000}, sink);
  EXPECT_TRUE(scene.stats().warnings.empty()) << scene.stats().warnings.front();
  EXPECT_EQ(scene.stats().neurons, 72u);  // X, Y and Z, 24 each
}

}  // namespace
}  // namespace nnxr::scene

namespace nnxr::scene {
namespace {

// The height of a block's row: a wrapped layout centres each row's blocks on it.
float row_of(const Block& b) { return 0.5f * (b.min[1] + b.max[1]); }

// A chain of 150 small vectors is a line 15 m long and a centimetre thick: it wraps into rows read
// like lines of text (each from the same start along +X, the next below), in layer order, with no
// block over another; the whole is about 1.6 times as long as it is tall. A short chain stays one row.
TEST(Layout, ALongChainWrapsIntoRowsLikeText) {
  std::string text = "<ir_version: 8, opset_import: [\"\" : 13]>\ng (float[1,8] t0) => (float[1,8] t150) {\n";
  for (int i = 1; i <= 150; ++i) text += "  t" + std::to_string(i) + " = Relu(t" + std::to_string(i - 1) + ")\n";
  text += "}\n";
  const Graph g = model::load_model_from_text(text);
  const Layout layout = Layout::build(g, {});
  const auto& blocks = layout.blocks();
  ASSERT_EQ(blocks.size(), 151u);
  check_invariants(g, layout, true);
  std::vector<float> rows{row_of(blocks[0])};
  for (size_t i = 1; i < blocks.size(); ++i) {
    const Block &a = blocks[i - 1], &b = blocks[i];
    ASSERT_LT(a.layer, b.layer);
    if (std::abs(row_of(b) - row_of(a)) < 1e-5f) {
      EXPECT_GT(b.min[0], a.min[0]) << "within a row, deeper layers stand further along X (block " << i << ")";
    } else {
      EXPECT_LT(row_of(b), row_of(a)) << "the next row is below (block " << i << ")";
      EXPECT_EQ(b.min[0], blocks[0].min[0]) << "every row starts where the first does (block " << i << ")";
      rows.push_back(row_of(b));
    }
  }
  EXPECT_GE(rows.size(), 3u);
  const auto lo = layout.bounds_min(), hi = layout.bounds_max();
  const float length = hi[0] - lo[0], height = hi[1] - lo[1];
  EXPECT_LT(length, 15.0f / 2) << "the line is folded";
  EXPECT_GT(length / height, 1.0f);
  EXPECT_LT(length / height, 3.0f);

  // Ten links: a chain of ordinary length keeps its one line along X.
  std::string shorter = "<ir_version: 8, opset_import: [\"\" : 13]>\ng (float[1,8] t0) => (float[1,8] t10) {\n";
  for (int i = 1; i <= 10; ++i) shorter += "  t" + std::to_string(i) + " = Relu(t" + std::to_string(i - 1) + ")\n";
  shorter += "}\n";
  const Graph h = model::load_model_from_text(shorter);
  const Layout line = Layout::build(h, {});
  for (size_t i = 1; i < line.blocks().size(); ++i) {
    EXPECT_EQ(row_of(line.blocks()[i]), row_of(line.blocks()[0]));
    EXPECT_GT(line.blocks()[i].min[0], line.blocks()[i - 1].min[0]);
  }
}

// The tiny BERT (1,318 slots of 7x8 maps, 33 m in one line) wraps into rows that break between
// encoder layers, and its group labels name every encoder layer, each above its own row.
TEST(Layout, BertWrapsIntoRowsOfEncoderLayers) {
  const std::filesystem::path path = std::filesystem::path(NNXR_SHARED_MODELS) / "tf-bert-qa-tiny.onnx";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " is absent";
  // Many of its shapes come from shape arithmetic only a run tells: run it on a sequence of zeros.
  const auto plan = runtime::Plan::build(model::load_model(path));
  const Graph& g = plan->graph();
  runtime::Session session(plan);
  const std::vector<int64_t> shape{1, 7};
  const std::vector<int32_t> zeros(7, 0);
  for (const char* input : {"input_ids", "attention_mask", "token_type_ids"})
    session.set_input(input, model::DType::Int32, shape, std::as_bytes(std::span(zeros)));
  session.run();
  const Activations acts = activations_of(session);
  const Layout layout = Layout::build(g, {}, &acts);
  const auto& blocks = layout.blocks();
  ASSERT_GT(blocks.size(), 1000u);
  auto group = [&](const Block& b) {
    const model::Tensor& t = g.tensors[b.tensor];
    return group_of(t.producer != model::kNone ? g.nodes[t.producer].name : t.name);
  };
  int rows = 1;
  for (size_t i = 1; i < blocks.size(); ++i) {
    if (std::abs(row_of(blocks[i]) - row_of(blocks[i - 1])) < 1e-5f) continue;
    ++rows;
    EXPECT_LT(row_of(blocks[i]), row_of(blocks[i - 1]));
    EXPECT_NE(group(blocks[i]), group(blocks[i - 1])) << "a row breaks inside " << group(blocks[i]);
    EXPECT_EQ(group(blocks[i]).rfind("encoder.layer.", 0), 0u) << group(blocks[i]);
  }
  EXPECT_GE(rows, 3);
  const auto lo = layout.bounds_min(), hi = layout.bounds_max();
  EXPECT_GT((hi[0] - lo[0]) / (hi[1] - lo[1]), 1.0f);
  EXPECT_LT((hi[0] - lo[0]) / (hi[1] - lo[1]), 3.0f);
  EXPECT_LT(hi[0] - lo[0], 12.0f);

  const Labels labels = make_labels(g, layout);
  std::set<std::string> names;
  std::set<float> heights;
  for (const GroupLabel& l : labels.groups) {
    names.insert(l.name);
    heights.insert(l.anchor[1]);
  }
  for (int n = 0; n < 24; ++n) EXPECT_TRUE(names.count("encoder.layer." + std::to_string(n))) << n;
  EXPECT_EQ(int(heights.size()), rows) << "each row's groups stand above that row";
}

}  // namespace
}  // namespace nnxr::scene
