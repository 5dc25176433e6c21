// End-to-end: the default model (digits) classifies its sample images, and every shared real model
// runs with deterministic random inputs, giving finite outputs of the graph's shapes.
#define STB_IMAGE_IMPLEMENTATION
#define STBI_ONLY_PNG
#include <stb/stb_image.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <random>

#include "model/load.h"
#include "model/runtime/kernel.h"  // half_to_float / float_to_half
#include "model/runtime/runtime.h"
#include "support.h"

namespace fs = std::filesystem;
using namespace nnxr;
using namespace nnxr::runtime;

namespace {

std::vector<float> load_digit(const fs::path& png) {
  int w = 0, h = 0, n = 0;
  unsigned char* px = stbi_load(png.string().c_str(), &w, &h, &n, 1);
  if (!px) {
    ADD_FAILURE() << "cannot decode " << png;
    return {};
  }
  std::vector<float> v(static_cast<size_t>(w * h));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(px[i]) / 255.f;
  stbi_image_free(px);
  EXPECT_EQ(w, 8);
  EXPECT_EQ(h, 8);
  return v;
}

int argmax(const std::vector<float>& v) { return static_cast<int>(std::max_element(v.begin(), v.end()) - v.begin()); }

}  // namespace

TEST(RuntimeModels, DigitsClassifiesSampleThree) {
  const fs::path assets = fs::path(NNXR_SOURCE_DIR) / "assets";
  Session s(Plan::build(model::load_model(assets / "digits.onnx")));
  const auto x = load_digit(assets / "digit-3.png");
  ASSERT_EQ(x.size(), 64u);
  test::feed_f(s, "digit", {1, 1, 8, 8}, x);
  s.run();
  const auto p = test::values<float>(s, "probabilities");
  ASSERT_EQ(p.size(), 10u);
  EXPECT_EQ(argmax(p), 3);
  double sum = 0;
  for (float f : p) sum += f;
  EXPECT_NEAR(sum, 1.0, 1e-4);
}

TEST(RuntimeModels, DigitsClassifiesAllSamples) {
  const fs::path assets = fs::path(NNXR_SOURCE_DIR) / "assets";
  Session s(Plan::build(model::load_model(assets / "digits.onnx")));
  int correct = 0;
  for (int d = 0; d < 10; ++d) {
    test::feed_f(s, "digit", {1, 1, 8, 8}, load_digit(assets / ("digit-" + std::to_string(d) + ".png")));
    s.run();
    correct += argmax(test::values<float>(s, "probabilities")) == d;
  }
  EXPECT_GE(correct, 9);
}

namespace {

struct ModelCase {
  const char* file;
  std::map<std::string, std::vector<int64_t>, std::less<>> input_shapes;
};

void PrintTo(const ModelCase& c, std::ostream* os) { *os << c.file; }

class SharedModel : public ::testing::TestWithParam<ModelCase> {};

// Feeds deterministic inputs: floats uniform in [0, 1), integers in [0, 2).
void feed_random(Session& s, const model::Graph& g, uint32_t seed) {
  std::mt19937 rng(seed);
  for (size_t k = 0; k < g.inputs.size(); ++k) {
    const model::Tensor& t = g.tensors[g.inputs[k]];
    std::vector<int64_t> shape = t.shape;
    for (auto& d : shape)
      if (d < 0) d = 1;
    const int64_t n = model::element_count(shape).value_or(0);
    std::vector<std::byte> bytes(static_cast<size_t>(n) * model::dtype_size(t.dtype));
    std::uniform_real_distribution<float> uf(0.f, 1.f);
    std::uniform_int_distribution<int> ui(0, 1);
    for (int64_t i = 0; i < n; ++i) {
      std::byte* p = bytes.data() + static_cast<size_t>(i) * model::dtype_size(t.dtype);
      switch (t.dtype) {
        case model::DType::Float: { float f = uf(rng); std::memcpy(p, &f, 4); break; }
        case model::DType::Float16: { uint16_t h = float_to_half(uf(rng)); std::memcpy(p, &h, 2); break; }
        case model::DType::Int32: { int32_t v = ui(rng); std::memcpy(p, &v, 4); break; }
        case model::DType::Int64: { int64_t v = ui(rng); std::memcpy(p, &v, 8); break; }
        case model::DType::Bool: { uint8_t v = static_cast<uint8_t>(ui(rng)); std::memcpy(p, &v, 1); break; }
        default: FAIL() << "input " << t.name << " has an unsupported type";
      }
    }
    s.set_input(k, t.dtype, shape, bytes);
  }
}

bool all_finite(const Value& v) {
  switch (v.dtype()) {
    case model::DType::Float:
      for (float f : v.as<float>())
        if (!std::isfinite(f)) return false;
      return true;
    case model::DType::Float16:
      for (uint16_t h : v.as<uint16_t>())
        if (!std::isfinite(half_to_float(h))) return false;
      return true;
    default: return true;
  }
}

}  // namespace

TEST_P(SharedModel, RunsWithFiniteOutputs) {
  const fs::path path = fs::path(NNXR_SHARED_MODELS) / GetParam().file;
  if (!fs::exists(path)) GTEST_SKIP() << path << " is absent (the shared models folder is not here)";
  model::LoadOptions opts;
  opts.input_shapes = GetParam().input_shapes;
  const auto plan = Plan::build(model::load_model(path, opts));
  const model::Graph& g = plan->graph();
  EXPECT_TRUE(plan->unsupported().empty());
  Session s(plan, {.threads = 2});
  feed_random(s, g, 1234);
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_NO_THROW(s.run());
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::printf("[ model    ] %s: %zu nodes, %.2f ms (2 threads)\n", GetParam().file, g.nodes.size(), ms);
  for (auto id : g.outputs) {
    const model::Tensor& t = g.tensors[id];
    const Value* v = s.value(id);
    ASSERT_NE(v, nullptr) << t.name;
    EXPECT_TRUE(all_finite(*v)) << t.name;
    if (t.rank_known) {
      ASSERT_EQ(v->rank(), t.shape.size()) << t.name;
      for (size_t i = 0; i < t.shape.size(); ++i) {
        if (t.shape[i] >= 0) {
          EXPECT_EQ(v->dims()[i], t.shape[i]) << t.name;
        }
      }
    }
  }
  // Every node output is kept and reachable by name.
  size_t kept = 0;
  for (const auto& tv : s.tensors()) kept += tv.value != nullptr;
  size_t produced = 0;
  for (const auto& n : g.nodes)
    for (auto o : n.outputs) produced += o != model::kNone;
  EXPECT_GE(kept, produced);
  // A second run reuses the buffers and gives the same outputs.
  std::vector<std::vector<std::byte>> first;
  for (auto id : g.outputs) first.emplace_back(s.value(id)->data(), s.value(id)->data() + s.value(id)->byte_size());
  s.run();
  for (size_t k = 0; k < g.outputs.size(); ++k) {
    const Value* v = s.value(g.outputs[k]);
    EXPECT_TRUE(v->byte_size() == first[k].size() && std::memcmp(v->data(), first[k].data(), first[k].size()) == 0) << "run 2 differs";
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shared, SharedModel,
    ::testing::Values(ModelCase{"cifar10-imageclassifier.onnx", {}}, ModelCase{"face_detection_yunet.onnx", {{"input", {1, 3, 320, 320}}}},
                      ModelCase{"fns-candy.onnx", {}}, ModelCase{"HAR-CNN.onnx", {}}, ModelCase{"KWS-DNN_S.onnx", {}},
                      ModelCase{"mnist-8.onnx", {}}, ModelCase{"mnist-cnn-pytorch.onnx", {}}, ModelCase{"squeezenet1.1-caffe2-op7-fp32.onnx", {}},
                      ModelCase{"squeezenet_cifar10.onnx", {}}, ModelCase{"SqueezeNet_fp16.onnx", {}},
                      ModelCase{"super-resolution-core-op11.onnx", {}}, ModelCase{"tf-bert-qa-tiny.onnx", {}},
                      ModelCase{"ultraface-RFB-320.onnx", {}}, ModelCase{"yolox_nano.onnx", {}}, ModelCase{"arch/lstm2-op13.onnx", {}},
                      ModelCase{"arch/mobilenet_v2-op13.onnx", {}}, ModelCase{"arch/squeezenet1_1-op13.onnx", {}},
                      ModelCase{"arch/transformer_encoder2-op13.onnx", {}}),
    [](const ::testing::TestParamInfo<ModelCase>& info) {
      std::string n = fs::path(info.param.file).stem().string();
      for (auto& c : n)
        if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
      return n;
    });

// The fp16 SqueezeNet and its fp32 conversion agree (same weights rounded to fp16).
TEST(RuntimeModels, SqueezeNetFp16MatchesFp32) {
  const fs::path dir = NNXR_SHARED_MODELS;
  if (!fs::exists(dir / "SqueezeNet_fp16.onnx") || !fs::exists(dir / "squeezenet1.1-caffe2-op7-fp32.onnx"))
    GTEST_SKIP() << "shared models are absent";
  Session s16(Plan::build(model::load_model(dir / "SqueezeNet_fp16.onnx")), {.threads = 2});
  Session s32(Plan::build(model::load_model(dir / "squeezenet1.1-caffe2-op7-fp32.onnx")), {.threads = 2});
  auto x = test::random_floats(3 * 224 * 224, 7, 0.f, 255.f);
  std::vector<uint16_t> xh(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    xh[i] = float_to_half(x[i]);
    x[i] = half_to_float(xh[i]);
  }
  test::feed(s16, "data_0", model::DType::Float16, {1, 3, 224, 224}, xh);
  test::feed_f(s32, "data_0", {1, 3, 224, 224}, x);
  s16.run();
  s32.run();
  const auto& g = s32.plan().graph();
  const std::string out = g.tensors[g.outputs[0]].name;
  const auto p32 = test::values<float>(s32, out);
  const Value* v16 = s16.find(s16.plan().graph().tensors[s16.plan().graph().outputs[0]].name);
  ASSERT_NE(v16, nullptr);
  ASSERT_EQ(v16->elements(), static_cast<int64_t>(p32.size()));
  int a16 = 0, a32 = 0;
  for (size_t i = 0; i < p32.size(); ++i) {
    if (half_to_float(v16->as<uint16_t>()[i]) > half_to_float(v16->as<uint16_t>()[static_cast<size_t>(a16)])) a16 = static_cast<int>(i);
    if (p32[i] > p32[static_cast<size_t>(a32)]) a32 = static_cast<int>(i);
  }
  EXPECT_EQ(a16, a32);
}
