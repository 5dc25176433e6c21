// The words of the view, model side: short names and groups from exported names, the prediction
// (probabilities kept, logits through softmax, a background class), tensor statistics, and the
// layout leaving out what weights alone compute and Dropout masks; pictures of image tensors with
// the preprocessing undone, image outputs, and detections decoded from a detector's outputs.
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
  // Keras exports number a layer "layer_._2"; only the component before the numbered one is kept.
  EXPECT_EQ(group_of("tf_bert_for_question_answering/bert/encoder/layer_._2/attention/self/MatMul"), "encoder.layer.2");
  EXPECT_EQ(group_of("/model/encoder/layer.2/attention/MatMul"), "encoder.layer.2");
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


// ---- pictures --------------------------------------------------------------------------------

TEST(Labels, ImageShapes) {
  const std::vector<int64_t> nchw{1, 3, 240, 320}, nhwc{1, 32, 32, 3}, grey{1, 1, 28, 28}, scores{1, 1000, 1, 1},
      small{1, 3, 4, 4};
  ASSERT_TRUE(image_shape(nchw));
  EXPECT_TRUE(image_shape(nchw)->nchw);
  EXPECT_EQ(image_shape(nchw)->width, 320);
  ASSERT_TRUE(image_shape(nhwc));
  EXPECT_FALSE(image_shape(nhwc)->nchw);
  EXPECT_EQ(image_shape(nhwc)->channels, 3);
  ASSERT_TRUE(image_shape(grey));
  EXPECT_EQ(image_shape(grey)->channels, 1);
  EXPECT_FALSE(image_shape(scores));
  EXPECT_FALSE(image_shape(small));
}

uint32_t rgb(uint32_t r, uint32_t g, uint32_t b) { return r | g << 8 | b << 16 | 0xff000000u; }

TEST(Labels, PictureUndoesThePreprocessing) {
  // A 16x8 image: left half (200, 100, 50), right half (10, 20, 30), fed as caffe does it
  // (BGR, 0-255 minus the mean 104/117/123) in NCHW.
  const int64_t h = 8, w = 16;
  const float mean[3] = {104, 117, 123};  // of B, G, R
  std::vector<float> v(size_t(3 * h * w));
  for (int64_t y = 0; y < h; ++y)
    for (int64_t x = 0; x < w; ++x) {
      const float r = x < w / 2 ? 200 : 10, g = x < w / 2 ? 100 : 20, b = x < w / 2 ? 50 : 30;
      const float bgr[3] = {b, g, r};
      for (int64_t c = 0; c < 3; ++c) v[size_t((c * h + y) * w + x)] = bgr[c] - mean[c];
    }
  const std::vector<int64_t> shape{1, 3, h, w};
  const TensorValue value{shape, v};
  const PictureMapping caffe{.scale = 1.0f, .mean = {104, 117, 123}, .std = {1}, .bgr = true};
  auto p = picture_of(value, caffe, 64);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->width, 16u);
  EXPECT_EQ(p->height, 8u);
  EXPECT_EQ(p->rgba[0], rgb(200, 100, 50));
  EXPECT_EQ(p->rgba[15], rgb(10, 20, 30));
  // Box-filtered to 8x4: each output pixel averages a 2x2 block.
  p = picture_of(value, caffe, 8);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->width, 8u);
  EXPECT_EQ(p->height, 4u);
  EXPECT_EQ(p->rgba[0], rgb(200, 100, 50));
  EXPECT_EQ(p->rgba[7], rgb(10, 20, 30));

  // ImageNet normalisation in NHWC, one pixel colour: (0.5 - mean) / std per channel.
  const float m[3] = {0.485f, 0.456f, 0.406f}, sd[3] = {0.229f, 0.224f, 0.225f};
  std::vector<float> n(size_t(8 * 8 * 3));
  for (size_t i = 0; i < n.size(); ++i) n[i] = ((i % 3 == 0 ? 255 : i % 3 == 1 ? 128 : 0) / 255.0f - m[i % 3]) / sd[i % 3];
  const std::vector<int64_t> nhwc{1, 8, 8, 3};
  p = picture_of({nhwc, n}, {.scale = 1 / 255.0f, .mean = {0.485f, 0.456f, 0.406f}, .std = {0.229f, 0.224f, 0.225f}}, 64);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->rgba[9], rgb(255, 128, 0));

  // An output in [0, 255] (style transfer) and one in [0, 1] (super-resolution's Y), from the values.
  std::vector<float> out255(size_t(3 * 16 * 16), 240.0f), unit(size_t(16 * 16), 0.5f);
  const std::vector<int64_t> s3{1, 3, 16, 16}, s1{1, 1, 16, 16};
  p = picture_of({s3, out255}, {.from_values = true}, 64);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->rgba[5], rgb(240, 240, 240));
  p = picture_of({s1, unit}, {.from_values = true}, 64);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->rgba[5], rgb(128, 128, 128));
  // Not an image: no picture.
  const std::vector<int64_t> vec{1, 768};
  EXPECT_FALSE(picture_of({vec, std::vector<float>(768)}, {}, 64));
}

constexpr const char* kImageToImage = R"(
<ir_version: 8, opset_import: ["" : 13]>
net (float[1, 3, 32, 32] x) => (float[1, 3, 32, 32] y, float[1, 3072] z) {
  y = Identity(x)
  z = Flatten(x)
}
)";

TEST(Labels, ImageOutputIsFound) {
  const model::Graph g = model::load_model_from_text(kImageToImage);
  Activations acts(g.tensors.size());
  EXPECT_FALSE(image_output(g, acts));  // not computed
  std::vector<float> v(3 * 32 * 32, 0.25f);
  const std::vector<int64_t> shape{1, 3, 32, 32};
  acts[g.find("y")] = {shape, v};
  ASSERT_TRUE(image_output(g, acts));
  EXPECT_EQ(*image_output(g, acts), g.find("y"));
}

// ---- detections ----------------------------------------------------------------------------------

constexpr const char* kFaceDetector = R"(
<ir_version: 8, opset_import: ["" : 13]>
net (float[1, 3, 240, 320] input) => (float[1, 6, 2] scores, float[1, 6, 4] boxes) {
  scores = Constant<value = float[1, 6, 2] {0.9, 0.1, 0.05, 0.95, 0.1, 0.9, 0.2, 0.8, 0.02, 0.98, 0.5, 0.5}>()
  boxes = Constant<value = float[1, 6, 4] {0, 0, 1, 1, 0.1, 0.1, 0.3, 0.3, 0.11, 0.1, 0.31, 0.3, 0.5, 0.5, 0.6, 0.6, 0.7, 0.1, 0.9, 0.4, 0.2, 0.2, 0.4, 0.4}>()
}
)";

TEST(Labels, ScoresAndBoxesDecodeToFaces) {
  model::Graph g = model::load_model_from_text(kFaceDetector);
  g.source = "models/ultraface-RFB-320.onnx";
  std::vector<float> scores{0.9f, 0.1f, 0.05f, 0.95f, 0.1f, 0.9f, 0.2f, 0.8f, 0.02f, 0.98f, 0.5f, 0.5f};
  std::vector<float> boxes{0, 0, 1, 1, 0.1f, 0.1f, 0.3f, 0.3f, 0.11f, 0.1f, 0.31f, 0.3f,
                           0.5f, 0.5f, 0.6f, 0.6f, 0.7f, 0.1f, 0.9f, 0.4f, 0.2f, 0.2f, 0.4f, 0.4f};
  const std::vector<int64_t> ss{1, 6, 2}, bs{1, 6, 4};
  Activations acts(g.tensors.size());
  acts[g.find("scores")] = {ss, scores};
  acts[g.find("boxes")] = {bs, boxes};
  const auto d = detect(g, acts, {});
  ASSERT_TRUE(d);
  EXPECT_EQ(d->format, "scores+boxes");
  EXPECT_EQ(d->candidates, 6);
  EXPECT_EQ(d->noun, "face");
  // Anchor 0 is background, 5 is below 0.7, 2 overlaps 1 (IoU 0.9) and goes: 4, 1, 3 remain.
  ASSERT_EQ(d->boxes.size(), 3u);
  EXPECT_FLOAT_EQ(d->boxes[0].score, 0.98f);
  EXPECT_FLOAT_EQ(d->boxes[0].x0, 0.7f);
  EXPECT_FLOAT_EQ(d->boxes[1].score, 0.95f);
  EXPECT_FLOAT_EQ(d->boxes[2].score, 0.8f);
  EXPECT_EQ(d->boxes[0].name, "face");
  EXPECT_EQ(summary(*d), "3 faces");
  // A lower threshold keeps anchor 5 too (its IoU with anchor 1 is 1/7).
  EXPECT_EQ(detect(g, acts, {}, 0.4f)->boxes.size(), 4u);
  // Any other file name: objects.
  g.source = "detector.onnx";
  EXPECT_EQ(detect(g, acts, {})->noun, "object");
  // A classifier is no detector.
  const model::Graph c = model::load_model_from_text(kClassifier);
  Activations ca(c.tensors.size());
  std::vector<float> probs{0.1f, 0.6f, 0.2f, 0.1f};
  const std::vector<int64_t> shape{1, 4};
  ca[c.find("y")] = {shape, probs};
  EXPECT_FALSE(detect(c, ca, {}));
}

constexpr const char* kYolox = R"(
<ir_version: 8, opset_import: ["" : 13]>
net (float[1, 3, 64, 64] images, float[1, 84, 7] raw) => (float[1, 84, 7] output) {
  output = Identity(raw)
}
)";

TEST(Labels, YoloxGridDecodes) {
  // 64x64: grids 8x8 + 4x4 + 2x2 = 84 cells; 2 classes.
  const model::Graph g = model::load_model_from_text(kYolox);
  std::vector<float> out(84 * 7, 0.0f);
  // Cell (3, 2) of stride 8 (index 2 * 8 + 3): centre ((0.5 + 3) * 8, (0.5 + 2) * 8) = (28, 20),
  // size exp(log 2) * 8 = 16; objectness 0.9, class 1 at 0.8.
  float* r = out.data() + (2 * 8 + 3) * 7;
  r[0] = 0.5f, r[1] = 0.5f, r[2] = std::log(2.0f), r[3] = std::log(2.0f), r[4] = 0.9f, r[5] = 0.1f, r[6] = 0.8f;
  const std::vector<int64_t> shape{1, 84, 7}, in{1, 3, 64, 64};
  Activations acts(g.tensors.size());
  acts[g.find("output")] = {shape, out};
  const std::vector<std::string> names{"cat", "dog"};
  const auto d = detect(g, acts, names);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->format, "yolox");
  EXPECT_EQ(d->classes, 2);
  EXPECT_EQ(class_count(g, acts), 2);
  ASSERT_EQ(d->boxes.size(), 1u);
  EXPECT_EQ(d->boxes[0].name, "dog");
  EXPECT_EQ(summary(*d), "1 dog");
  EXPECT_NEAR(d->boxes[0].score, 0.72f, 1e-5);
  EXPECT_NEAR(d->boxes[0].x0, 20.0f / 64, 1e-5);
  EXPECT_NEAR(d->boxes[0].y1, 28.0f / 64, 1e-5);
}

// YuNet's twelve outputs over a 64x64 input: per stride (8, 16, 32: grids 8x8, 4x4, 2x2) class
// and objectness scores [1, cells, 1], boxes [1, cells, 4] and landmarks [1, cells, 10]. The
// outputs come in another order than the model's, so the decode goes by shape and name.
constexpr const char* kYunet = R"(
<ir_version: 8, opset_import: ["" : 13]>
net (float[1, 3, 64, 64] input, float[1, 64, 1] a8, float[1, 16, 1] a16, float[1, 4, 1] a32, float[1, 64, 1] b8,
     float[1, 16, 1] b16, float[1, 4, 1] b32, float[1, 64, 4] c8, float[1, 16, 4] c16, float[1, 4, 4] c32,
     float[1, 64, 10] d8, float[1, 16, 10] d16, float[1, 4, 10] d32)
    => (float[1, 64, 10] kps_8, float[1, 16, 10] kps_16, float[1, 4, 10] kps_32, float[1, 64, 4] bbox_8,
        float[1, 16, 4] bbox_16, float[1, 4, 4] bbox_32, float[1, 64, 1] cls_8, float[1, 16, 1] cls_16,
        float[1, 4, 1] cls_32, float[1, 64, 1] obj_8, float[1, 16, 1] obj_16, float[1, 4, 1] obj_32) {
  kps_8 = Identity(d8)
  kps_16 = Identity(d16)
  kps_32 = Identity(d32)
  bbox_8 = Identity(c8)
  bbox_16 = Identity(c16)
  bbox_32 = Identity(c32)
  cls_8 = Identity(a8)
  cls_16 = Identity(a16)
  cls_32 = Identity(a32)
  obj_8 = Identity(b8)
  obj_16 = Identity(b16)
  obj_32 = Identity(b32)
}
)";

TEST(Labels, YunetGridDecodesFacesAndLandmarks) {
  model::Graph g = model::load_model_from_text(kYunet);
  const int64_t cells[3] = {64, 16, 4}, strides[3] = {8, 16, 32};
  std::vector<float> cls[3], obj[3], box[3], kps[3];
  std::vector<int64_t> shape1[3], shape4[3], shape10[3];
  for (int s = 0; s < 3; ++s) {
    cls[s].assign(size_t(cells[s]), 0.01f), obj[s].assign(size_t(cells[s]), 0.5f);
    box[s].assign(size_t(cells[s] * 4), 0.0f), kps[s].assign(size_t(cells[s] * 10), 0.0f);
    shape1[s] = {1, cells[s], 1}, shape4[s] = {1, cells[s], 4}, shape10[s] = {1, cells[s], 10};
  }
  // A face at cell (row 1, column 2) of stride 16 (index 1 * 4 + 2 = 6): class 0.81 (above 1 it
  // clamps: objectness 1.3 counts as 1), score sqrt(0.81 * 1) = 0.9; centre ((2 + 0.5) * 16,
  // (1 + 0.25) * 16) = (40, 20), size (2 * 16, 3 * 16) = (32, 48): corners (24, -4) and (56, 44).
  cls[1][6] = 0.81f, obj[1][6] = 1.3f;
  box[1][6 * 4 + 0] = 0.5f, box[1][6 * 4 + 1] = 0.25f, box[1][6 * 4 + 2] = std::log(2.0f), box[1][6 * 4 + 3] = std::log(3.0f);
  for (int p = 0; p < 5; ++p) kps[1][size_t(6 * 10 + 2 * p)] = 0.1f * float(p), kps[1][size_t(6 * 10 + 2 * p + 1)] = 0.5f;
  // The same face seen at stride 8 (cell row 2, column 5: index 21), weaker (sqrt(0.49) = 0.7):
  // centre ((5 + 0) * 8, (2 + 0.5) * 8) = (40, 20), size (32, 48): suppressed by overlap.
  cls[0][21] = 0.49f, obj[0][21] = 1.0f;
  box[0][21 * 4 + 1] = 0.5f, box[0][21 * 4 + 2] = std::log(4.0f), box[0][21 * 4 + 3] = std::log(6.0f);
  // A second face at stride 32, cell (1, 1) (index 3): score sqrt(0.64 * 1) = 0.8, centre
  // (48, 48), size (16, 16); another cell below the threshold (sqrt(0.25) = 0.5).
  cls[2][3] = 0.64f, obj[2][3] = 1.0f;
  box[2][3 * 4 + 0] = 0.5f, box[2][3 * 4 + 1] = 0.5f, box[2][3 * 4 + 2] = std::log(0.5f), box[2][3 * 4 + 3] = std::log(0.5f);
  cls[2][0] = 0.25f, obj[2][0] = 1.0f;
  const std::vector<int64_t> in{1, 3, 64, 64};
  std::vector<float> pixels(3 * 64 * 64, 0.5f);
  Activations acts(g.tensors.size());
  acts[g.find("input")] = {in, pixels};
  for (int s = 0; s < 3; ++s) {
    const std::string k = std::to_string(strides[s]);
    acts[g.find("cls_" + k)] = {shape1[s], cls[s]};
    acts[g.find("obj_" + k)] = {shape1[s], obj[s]};
    acts[g.find("bbox_" + k)] = {shape4[s], box[s]};
    acts[g.find("kps_" + k)] = {shape10[s], kps[s]};
  }
  const auto d = detect(g, acts, {});
  ASSERT_TRUE(d);
  EXPECT_EQ(d->format, "yunet");
  EXPECT_EQ(d->candidates, 84);
  EXPECT_EQ(d->classes, 1);
  EXPECT_EQ(class_count(g, acts), 1);  // not the 64 cells of a score map
  ASSERT_EQ(d->boxes.size(), 2u);
  EXPECT_EQ(summary(*d), "2 faces");
  const Detection& f = d->boxes[0];
  EXPECT_NEAR(f.score, 0.9f, 1e-5);
  EXPECT_NEAR(f.x0, 24.0f / 64, 1e-5);
  EXPECT_NEAR(f.y0, -4.0f / 64, 1e-5);
  EXPECT_NEAR(f.x1, 56.0f / 64, 1e-5);
  EXPECT_NEAR(f.y1, 44.0f / 64, 1e-5);
  ASSERT_EQ(f.points.size(), 5u);
  for (int p = 0; p < 5; ++p) {
    EXPECT_NEAR(f.points[size_t(p)][0], (2 + 0.1f * float(p)) * 16 / 64, 1e-5);
    EXPECT_NEAR(f.points[size_t(p)][1], 1.5f * 16 / 64, 1e-5);
  }
  const Detection& second = d->boxes[1];
  EXPECT_NEAR(second.score, 0.8f, 1e-5);
  EXPECT_NEAR(second.x0, 40.0f / 64, 1e-5);
  EXPECT_NEAR(second.y1, 56.0f / 64, 1e-5);
  // A lower threshold keeps the 0.5 cell; the stride-8 copy still overlaps the first face.
  EXPECT_EQ(detect(g, acts, {}, 0.45f)->boxes.size(), 3u);
  // A cell whose box is not a number is no face.
  cls[0][0] = 1.0f, obj[0][0] = 1.0f, box[0][2] = NAN;
  EXPECT_EQ(detect(g, acts, {})->boxes.size(), 2u);
  cls[0][0] = 0.01f, obj[0][0] = 0.5f, box[0][2] = 0.0f;
  // Without the landmark outputs: boxes without points.
  for (int s = 0; s < 3; ++s) acts[g.find("kps_" + std::to_string(strides[s]))] = {};
  const auto plain = detect(g, acts, {});
  ASSERT_TRUE(plain);
  ASSERT_EQ(plain->boxes.size(), 2u);
  EXPECT_TRUE(plain->boxes[0].points.empty());
  EXPECT_TRUE(output_table(g, acts).empty());  // a recognised detector gets no table
  // One stride missing: no YuNet (and no table either way for the recognised layout above).
  acts[g.find("bbox_32")] = {};
  const auto none = detect(g, acts, {});
  EXPECT_TRUE(!none || none->format != "yunet");
}

// Several outputs in no known format get a table: each output's shape as run and its largest
// values with their flat indices.
TEST(Labels, UnknownOutputsGetATable) {
  const model::Graph g = model::load_model_from_text(R"(
<ir_version: 8, opset_import: ["" : 13]>
net (float[1, 10] x, float[2, 3] p, float[1, 4, 5] q) => (float[2, 3] heat, float[1, 4, 5] offsets) {
  heat = Identity(p)
  offsets = Identity(q)
}
)");
  std::vector<float> heat{0.1f, 0.9f, -1.0f, 0.5f, NAN, 0.7f};
  std::vector<float> offsets(20);
  for (size_t i = 0; i < offsets.size(); ++i) offsets[i] = float(i % 7);  // 6 at 6 and 13, 5 at 5, 12 and 19
  const std::vector<int64_t> hs{2, 3}, os{1, 4, 5};
  Activations acts(g.tensors.size());
  acts[g.find("heat")] = {hs, heat};
  acts[g.find("offsets")] = {os, offsets};
  EXPECT_FALSE(detect(g, acts, {}));
  EXPECT_FALSE(predict(g, acts, {}));
  const auto table = output_table(g, acts, 3);
  ASSERT_EQ(table.size(), 2u);
  EXPECT_EQ(table[0].name, "heat");
  EXPECT_EQ(table[0].shape, "2x3");
  ASSERT_EQ(table[0].top.size(), 3u);
  EXPECT_EQ(table[0].top[0], (std::pair<int64_t, float>{1, 0.9f}));
  EXPECT_EQ(table[0].top[1], (std::pair<int64_t, float>{5, 0.7f}));
  EXPECT_EQ(table[0].top[2], (std::pair<int64_t, float>{3, 0.5f}));  // NaN skipped
  EXPECT_EQ(table[1].shape, "4x5");
  EXPECT_EQ(table[1].top[0], (std::pair<int64_t, float>{6, 6.0f}));  // ties: the first first
  EXPECT_EQ(table[1].top[1], (std::pair<int64_t, float>{13, 6.0f}));
  EXPECT_EQ(table[1].top[2], (std::pair<int64_t, float>{5, 5.0f}));
  EXPECT_EQ(output_table(g, acts, 3, 1).size(), 1u);
  // One output alone: no table (its statistics are in the legend).
  const model::Graph one = model::load_model_from_text(R"(
<ir_version: 8, opset_import: ["" : 13]>
net (float[2, 3] p) => (float[2, 3] heat) {
  heat = Identity(p)
}
)");
  Activations single(one.tensors.size());
  single[one.find("heat")] = {hs, heat};
  EXPECT_TRUE(output_table(one, single).empty());
}

}  // namespace
}  // namespace nnxr::scene
