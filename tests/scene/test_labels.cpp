// The words of the view, model side: short names and groups from exported names, the prediction
// (probabilities kept, logits through softmax, a background class), tensor statistics, and the
// layout leaving out what weights alone compute and Dropout masks.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "model/load.h"
#include "model/scene/labels.h"
#include "model/scene/scene.h"

namespace nnxr::scene {
namespace {

TEST(Labels, ShortNamesAndGroups) {
  EXPECT_EQ(short_name("/features/features.3/Relu_output_0"), "features.3/Relu");
  EXPECT_EQ(short_name("fire2/squeeze1x1_1"), "fire2/squeeze1x1_1");
  EXPECT_EQ(short_name("conv1_1"), "conv1_1");
  EXPECT_EQ(short_name("a_very_long_tensor_name_that_goes_on_and_on", 12).size(), 12u);
  EXPECT_EQ(group_of("/features/features.3/Relu_output_0"), "features.3");
  EXPECT_EQ(group_of("encoder.layer.2.attention.self.query"), "encoder.layer.2");
  EXPECT_EQ(group_of("/encoder/layer.2/attention/MatMul"), "encoder.layer.2");
  EXPECT_EQ(group_of("fire2/squeeze1x1_1"), "fire2");
  EXPECT_EQ(group_of("conv1_1"), "");
  const std::vector<int64_t> shape{1, 64, 55, 55};
  EXPECT_EQ(shape_text(shape), "64x55x55");
}

TEST(Labels, StatsOfATensor) {
  const std::vector<float> v{0, 0, 1, -2, 5};
  const TensorStats s = stats_of(v);
  EXPECT_EQ(s.count, 5);
  EXPECT_EQ(s.min, -2);
  EXPECT_EQ(s.max, 5);
  EXPECT_FLOAT_EQ(s.mean, 0.8f);
  EXPECT_FLOAT_EQ(s.zero_fraction, 0.4f);
}

constexpr const char* kClassifier = R"(
<ir_version: 8, opset_import: ["" : 13]>
net (float[1, 4] x) => (float[1, 4] y) {
  y = Identity(x)
}
)";

TEST(Labels, PredictionKeepsProbabilitiesAndSoftmaxesLogits) {
  const model::Graph g = model::load_model_from_text(kClassifier);
  std::vector<float> probs{0.1f, 0.6f, 0.2f, 0.1f}, logits{1.0f, 3.0f, 2.0f, -1.0f};
  const std::vector<int64_t> shape{1, 4};
  Activations acts(g.tensors.size());
  acts[g.find("y")] = {shape, probs};
  const std::vector<std::string> names{"cat", "dog", "cow", "owl"};
  auto p = predict(g, acts, names, 3);
  ASSERT_TRUE(p);
  EXPECT_FALSE(p->softmax);
  ASSERT_EQ(p->top.size(), 3u);
  EXPECT_EQ(p->top[0].name, "dog");
  EXPECT_FLOAT_EQ(p->top[0].probability, 0.6f);
  EXPECT_EQ(p->top[1].name, "cow");

  acts[g.find("y")] = {shape, logits};
  p = predict(g, acts, names, 5);
  ASSERT_TRUE(p);
  EXPECT_TRUE(p->softmax);
  ASSERT_EQ(p->top.size(), 4u);
  const double total = std::exp(1.0) + std::exp(3.0) + std::exp(2.0) + std::exp(-1.0);
  EXPECT_NEAR(p->top[0].probability, std::exp(3.0) / total, 1e-5);
  EXPECT_EQ(p->top[0].name, "dog");
  EXPECT_EQ(p->top[3].name, "owl");

  // Three names for four outputs: the first output is the background class.
  const std::vector<std::string> three{"cat", "dog", "cow"};
  p = predict(g, acts, three, 1);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->top[0].index, 1);
  EXPECT_EQ(p->top[0].name, "cat");
  EXPECT_EQ(class_count(g, acts), 4);
}

constexpr const char* kWeightChain = R"(
<ir_version: 8, opset_import: ["" : 13]>
net (float[1, 6] x) => (float[1, 2] y, float[1, 6] d) {
  w = Constant<value = float[6, 2] {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}>()
  wc = Identity(w)
  ws = Shape(wc)
  y = MatMul(x, wc)
  d, mask = Dropout(x)
}
)";

TEST(Labels, LayoutLeavesOutWhatWeightsAloneComputeUnlessAsked) {
  const model::Graph g = model::load_model_from_text(kWeightChain);
  const std::vector<bool> constant = constant_tensors(g);
  EXPECT_TRUE(constant[g.find("wc")]);
  EXPECT_FALSE(constant[g.find("y")]);
  EXPECT_FALSE(constant[g.find("d")]);
  EXPECT_TRUE(constant[g.find("mask")]);
  const Layout shown = Layout::build(g, {});
  EXPECT_EQ(shown.block(g.find("wc")), nullptr);
  EXPECT_NE(shown.block(g.find("y")), nullptr);
  EXPECT_NE(shown.block(g.find("x")), nullptr);
  const Layout all = Layout::build(g, {.constants = true});
  EXPECT_NE(all.block(g.find("wc")), nullptr);
  const Labels labels = make_labels(g, shown);
  ASSERT_EQ(labels.tensors.size(), shown.blocks().size());
  bool saw_matmul = false;
  for (const TensorLabel& l : labels.tensors) saw_matmul = saw_matmul || (l.op == "MatMul" && l.shape == "2");
  EXPECT_TRUE(saw_matmul);
}

}  // namespace
}  // namespace nnxr::scene
