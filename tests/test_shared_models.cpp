// Integration: every model in ../shared/models and ../shared/models/arch loads, its shapes agree
// with onnx's own Python shape inference, and its activation counts match the reference counts
// measured with onnxruntime (../shared/models/MODELS.md). Skipped when the folder is absent.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <sstream>

#include "model/load.h"
#include "tests/support/shared_models.h"

namespace nnxr::model {
namespace {

namespace fs = std::filesystem;

std::vector<fs::path> shared_models() { return test::shared_model_paths(); }

// Symbolic dims as the reference measurements set them (MODELS.md): 1, except YuNet's 320x320.
std::map<std::string, int64_t, std::less<>> dims_for(const fs::path& model) {
  if (model.filename() == "face_detection_yunet.onnx") return {{"height", 320}, {"width", 320}};
  return {};
}

std::string run(const std::string& command) {
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(command.c_str(), "r"), pclose);
  if (!pipe) return {};
  std::string out;
  std::array<char, 65536> buf{};
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), pipe.get())) > 0) out.append(buf.data(), n);
  return out;
}

bool python_onnx_available() {
  static const bool ok = run("/usr/bin/python3 -c 'import onnx; print(\"ok\")' 2>/dev/null") == "ok\n";
  return ok;
}

class SharedModel : public ::testing::TestWithParam<fs::path> {};

TEST_P(SharedModel, ShapesAgreeWithOnnxShapeInference) {
  const fs::path path = GetParam();
  LoadOptions options;
  options.dims = dims_for(path);
  const Graph g = load_model(path, options);
  ASSERT_FALSE(g.nodes.empty());
  for (TensorId id : g.outputs) EXPECT_NE(g.tensors[id].producer, kNone);

  if (!python_onnx_available()) GTEST_SKIP() << "python3-onnx is not installed: shapes not compared";
  std::string command = "/usr/bin/python3 " NNXR_SOURCE_DIR "/tools/onnx-shapes.py '" + path.string() + "'";
  for (const auto& [name, value] : options.dims) command += " " + name + "=" + std::to_string(value);
  std::istringstream lines(run(command + " 2>/dev/null"));
  int compared = 0;
  for (std::string line; std::getline(lines, line);) {
    std::istringstream fields(line);
    std::string name, dtype, shape;
    std::getline(fields, name, '\t');
    std::getline(fields, dtype, '\t');
    std::getline(fields, shape, '\t');
    const TensorId id = g.find(name);
    ASSERT_NE(id, kNone) << "onnx knows tensor '" << name << "' that nnxr does not";
    const Tensor& t = g.tensors[id];
    if (shape == "-" || shape.find('?') != std::string::npos) continue;  // onnx does not know it either
    EXPECT_EQ(std::string(dtype_name(t.dtype)), dtype) << name;
    ASSERT_TRUE(t.rank_known) << name << ": onnx infers " << shape << ", nnxr has no shape";
    std::string ours;
    for (size_t i = 0; i < t.shape.size(); ++i) ours += (i ? "," : "") + std::to_string(t.shape[i]);
    EXPECT_EQ(ours, shape) << "tensor " << name;
    ++compared;
  }
  EXPECT_GT(compared, 0) << "no tensor compared for " << path;
}

// Float activation elements per model, measured with onnxruntime (MODELS.md: "activations (every
// node output, ORT): N float elements"; Constant nodes left out).
const std::map<std::string, int64_t> kReferenceActivations = {
    {"cifar10-imageclassifier.onnx", 56'890},
    {"face_detection_yunet.onnx", 6'653'800},
    {"fns-candy.onnx", 194'837'952},
    {"HAR-CNN.onnx", 47'244},
    {"KWS-DNN_S.onnx", 1'138},
    {"mnist-8.onnx", 32'884},
    {"mnist-cnn-pytorch.onnx", 88'074},
    {"squeezenet_cifar10.onnx", 117'554},
    {"super-resolution-core-op11.onnx", 17'862'656},
    {"ultraface-RFB-320.onnx", 6'531'960},
    {"yolox_nano.onnx", 31'680'402},
    {"mobilenet_v2-op13.onnx", 13'016'656},  // arch/ARCH.md
    {"squeezenet1_1-op13.onnx", 6'963'584},
    {"lstm2-op13.onnx", 36'362},
};

TEST_P(SharedModel, ActivationCountMatchesReference) {
  const fs::path path = GetParam();
  auto it = kReferenceActivations.find(path.filename().string());
  if (it == kReferenceActivations.end())
    GTEST_SKIP() << "no reference count, or shapes that only a run can tell (data-dependent or an unset Dropout mask)";
  LoadOptions options;
  options.dims = dims_for(path);
  const Graph g = load_model(path, options);
  int64_t total = 0;
  for (const Tensor& t : g.tensors) {
    if (t.kind != TensorKind::Activation || t.producer == kNone || !dtype_is_float(t.dtype)) continue;
    const auto n = t.elements();
    ASSERT_TRUE(n.has_value()) << t.name << " has an unknown shape";
    total += *n;
  }
  EXPECT_EQ(total, it->second);
}

TEST_P(SharedModel, LayersFollowTheDefinition) {
  const Graph g = load_model(GetParam(), LoadOptions{.dims = dims_for(GetParam())});
  for (const Node& n : g.nodes) {
    int expected = 0;
    if (n.op_type != "Constant") {
      for (TensorId in : n.inputs)
        if (in != kNone) expected = std::max(expected, g.tensors[in].layer);
      ++expected;
    }
    EXPECT_EQ(n.layer, expected) << n.name;
    for (TensorId out : n.outputs)
      if (out != kNone) {
        EXPECT_EQ(g.tensors[out].layer, expected) << g.tensors[out].name;
      }
  }
}

std::string test_name(const ::testing::TestParamInfo<fs::path>& info) {
  std::string name = info.param.stem().string();
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return name;
}

INSTANTIATE_TEST_SUITE_P(Models, SharedModel, ::testing::ValuesIn(shared_models()), test_name);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(SharedModel);

TEST(SharedModels, FolderPresentOrSkipped) {
  if (shared_models().empty()) GTEST_SKIP() << "no models in " << NNXR_SHARED_MODELS << ": integration tests skipped";
  EXPECT_GE(shared_models().size(), 10u);
}

}  // namespace
}  // namespace nnxr::model
