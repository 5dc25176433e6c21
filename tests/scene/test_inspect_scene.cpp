// `nnxr inspect --scene`: the report on the default model and an inline model, and usage errors.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "model/load.h"
#include "tests/support/model_bytes.h"
#include "tests/support/run_nnxr.h"

namespace {

namespace fs = std::filesystem;

using Result = nnxr::test::RunResult;

Result nnxr(const std::string& args) { return nnxr::test::run_nnxr(args); }

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

TEST(InspectScene, DefaultModelText) {
  const Result r = nnxr("inspect --scene");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(has(r.out, "digit ")) << r.out;  // the input tensor
  EXPECT_TRUE(has(r.out, "Conv")) << r.out;
  EXPECT_TRUE(has(r.out, "3,668 of 3,668 neurons")) << r.out;
  EXPECT_TRUE(has(r.out, "16 per neuron, 8 per connection")) << r.out;
  EXPECT_TRUE(has(r.out, "scoring")) << r.out;
}

TEST(InspectScene, InlineModelJson) {
  const fs::path dir = nnxr::test::temp_dir("inspect-scene-model");
  const fs::path model = dir / "m.onnx";
  nnxr::test::write_file(model, nnxr::model::model_text_to_bytes(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1,2,3] X) => (float[1,6] F) {
      A = Relu(X)
      B = Sigmoid(X)
      C = Add(A, B)
      F = Flatten(C)
    })"));
  const Result r = nnxr("inspect '" + model.string() + "' --scene --json --random 3 --top-k 1 --budget 1000");
  fs::remove_all(dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(has(r.out, "\"neurons\":30,")) << r.out;
  EXPECT_TRUE(has(r.out, "\"connections\":24,")) << r.out;
  EXPECT_TRUE(has(r.out, "\"connection_candidates\":30,")) << r.out;
  EXPECT_TRUE(has(r.out, "\"bytes_per_neuron\":16")) << r.out;
  EXPECT_TRUE(has(r.out, "\"bytes_per_connection\":8")) << r.out;
  EXPECT_TRUE(has(r.out, "\"resident_bytes\":672,")) << r.out;  // 30·16 + 24·8
  EXPECT_TRUE(has(r.out, "\"name\":\"C\",\"op\":\"Add\"")) << r.out;
  EXPECT_TRUE(has(r.out, "\"ops_without_connector\":[]")) << r.out;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1);  // one JSON object
}

TEST(InspectScene, UsageErrors) {
  EXPECT_EQ(nnxr("inspect --scene --top-k 17").exit_code, 2);
  EXPECT_EQ(nnxr("inspect --scene --budget -1").exit_code, 2);
  const Result r = nnxr("inspect --budget 5");  // scene options need --scene
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(has(r.err, "--budget")) << r.err;
  EXPECT_EQ(nnxr("inspect /nonexistent.onnx --scene").exit_code, 1);
}

}  // namespace
