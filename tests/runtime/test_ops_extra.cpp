// The ops of kernels_quant/detection/signal/extra.cpp on bad inputs: every one fails with a
// RuntimeError naming the node, never a crash. And a few results the conformance cases do not
// cover (per-axis quantization round trip, NMS score threshold, Unique without sorting).
#include <gtest/gtest.h>

#include "support.h"

using namespace nnxr;
using namespace nnxr::runtime;

namespace {

std::string model13(const std::string& body) { return R"(<ir_version: 8, opset_import: ["" : 17]> g )" + body; }

// Runs `body` with the given float inputs; returns the error text ("" when it ran).
std::string error_of(const std::string& body, const std::vector<std::tuple<std::string, std::vector<int64_t>, std::vector<float>>>& inputs,
                     const std::vector<std::tuple<std::string, std::vector<int64_t>, std::vector<int64_t>>>& int_inputs = {}) {
  try {
    Session s(test::plan_from_text(model13(body)));
    for (const auto& [name, shape, v] : inputs) test::feed_f(s, name, shape, v);
    for (const auto& [name, shape, v] : int_inputs) test::feed_i64(s, name, shape, v);
    s.run();
  } catch (const RuntimeError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(RuntimeOpsExtra, BadInputsFailNamingTheNode) {
  // NonMaxSuppression: boxes without 4 coordinates.
  EXPECT_NE(error_of("(float[1,2,3] B, float[1,1,2] S) => (int64[N,3] Y) { Y = NonMaxSuppression(B, S) }",
                     {{"B", {1, 2, 3}, std::vector<float>(6, 0.f)}, {"S", {1, 1, 2}, {1, 2}}})
                .find("NonMaxSuppression"),
            std::string::npos);
  // Unique: axis out of range.
  EXPECT_NE(error_of("(float[2,2] X) => (float[A,B] Y) { Y = Unique <axis = 3> (X) }", {{"X", {2, 2}, {1, 2, 3, 4}}}).find("out of range"),
            std::string::npos);
  // Compress: condition longer than the axis.
  EXPECT_NE(error_of("(float[2] X, bool[3] C) => (float[N] Y) { Y = Compress <axis = 0> (X, C) }", {{"X", {2}, {1, 2}}}).size(), 0u);
  // QuantizeLinear: per-axis scale of the wrong length.
  EXPECT_NE(error_of("(float[2,3] X, float[2] S) => (uint8[2,3] Y) { Y = QuantizeLinear <axis = 1> (X, S) }",
                     {{"X", {2, 3}, std::vector<float>(6, 1.f)}, {"S", {2}, {1, 1}}})
                .find("QuantizeLinear"),
            std::string::npos);
  // GridSample: grid without (x, y) pairs.
  EXPECT_NE(error_of("(float[1,1,2,2] X, float[1,2,2,3] G) => (float[1,1,2,2] Y) { Y = GridSample(X, G) }",
                     {{"X", {1, 1, 2, 2}, {1, 2, 3, 4}}, {"G", {1, 2, 2, 3}, std::vector<float>(12, 0.f)}})
                .size(),
            0u);
  // DFT: the axis must be a signal axis.
  EXPECT_NE(error_of("(float[1,4,1] X) => (float[A,B,C] Y) { Y = DFT <axis = 2> (X) }", {{"X", {1, 4, 1}, {1, 2, 3, 4}}}).find("axis"),
            std::string::npos);
  // RoiAlign: batch index outside the batch.
  EXPECT_NE(error_of("(float[1,1,4,4] X, float[1,4] R, int64[1] I) => (float[1,1,1,1] Y) { Y = RoiAlign(X, R, I) }",
                     {{"X", {1, 1, 4, 4}, std::vector<float>(16, 1.f)}, {"R", {1, 4}, {0, 0, 2, 2}}}, {{"I", {1}, {3}}})
                .find("batch index"),
            std::string::npos);
  // MaxUnpool: an index past the output.
  EXPECT_NE(error_of("(float[1,1,1,1] X, int64[1,1,1,1] I) => (float[1,1,2,2] Y) { Y = MaxUnpool <kernel_shape = [2, 2], strides = [2, 2]> (X, I) }",
                     {{"X", {1, 1, 1, 1}, {5}}}, {{"I", {1, 1, 1, 1}, {4}}})
                .find("outside"),
            std::string::npos);
  // Det: not square.
  EXPECT_NE(error_of("(float[2,3] X) => (float Y) { Y = Det(X) }", {{"X", {2, 3}, std::vector<float>(6, 1.f)}}).size(), 0u);
  // ReverseSequence: a length past the time axis.
  EXPECT_NE(error_of("(float[2,2] X, int64[2] L) => (float[2,2] Y) { Y = ReverseSequence <batch_axis = 1, time_axis = 0> (X, L) }",
                     {{"X", {2, 2}, {1, 2, 3, 4}}}, {{"L", {2}, {1, 5}}})
                .find("sequence length"),
            std::string::npos);
}

TEST(RuntimeOpsExtra, QuantizeDequantizePerAxisRoundTrip) {
  Session s(test::plan_from_text(model13(R"((float[2,3] X, float[3] S, int8[3] Z) => (int8[2,3] Q, float[2,3] Y) {
      Q = QuantizeLinear <axis = 1> (X, S, Z)
      Y = DequantizeLinear <axis = 1> (Q, S, Z) })")));
  test::feed_f(s, "X", {2, 3}, {1.f, -2.f, 300.f, 0.5f, 2.5f, -1000.f});
  test::feed_f(s, "S", {3}, {0.5f, 1.f, 2.f});
  test::feed(s, "Z", model::DType::Int8, {3}, std::vector<int8_t>{0, 1, -1});
  s.run();
  // round half to even, then saturate to [-128, 127]
  EXPECT_EQ(test::values<int8_t>(s, "Q"), (std::vector<int8_t>{2, -1, 127, 1, 3, -128}));
  EXPECT_EQ(test::values<float>(s, "Y"), (std::vector<float>{1.f, -2.f, 256.f, 0.5f, 2.f, -254.f}));
}

TEST(RuntimeOpsExtra, NmsScoreThresholdAndUniqueUnsorted) {
  Session s(test::plan_from_text(model13(R"((float[1,3,4] B, float[1,1,3] S, int64[1] M, float[1] I, float[1] T) => (int64[N,3] Y) {
      Y = NonMaxSuppression(B, S, M, I, T) })")));
  test::feed_f(s, "B", {1, 3, 4}, {0, 0, 1, 1, 0, 0.1f, 1, 1.1f, 0, 5, 1, 6});
  test::feed_f(s, "S", {1, 1, 3}, {0.9f, 0.8f, 0.2f});
  test::feed_i64(s, "M", {1}, {10});
  test::feed_f(s, "I", {1}, {0.5f});
  test::feed_f(s, "T", {1}, {0.3f});
  s.run();
  EXPECT_EQ(test::values<int64_t>(s, "Y"), (std::vector<int64_t>{0, 0, 0}));  // box 1 overlaps box 0; box 2 scores too low

  Session u(test::plan_from_text(model13(R"((float[6] X) => (float[N] Y, int64[N] I, int64[6] V, int64[N] C) {
      Y, I, V, C = Unique <sorted = 0> (X) })")));
  test::feed_f(u, "X", {6}, {3, 1, 3, 2, 1, 3});
  u.run();
  EXPECT_EQ(test::values<float>(u, "Y"), (std::vector<float>{3, 1, 2}));
  EXPECT_EQ(test::values<int64_t>(u, "I"), (std::vector<int64_t>{0, 1, 3}));
  EXPECT_EQ(test::values<int64_t>(u, "V"), (std::vector<int64_t>{0, 1, 0, 2, 1, 0}));
  EXPECT_EQ(test::values<int64_t>(u, "C"), (std::vector<int64_t>{3, 2, 1}));
}

TEST(RuntimeOpsExtra, RandomOpsSeededRangesAndShapes) {
  auto plan = test::plan_from_text(model13(R"((float[3,4] P) => (float[3,4] B, float[2,5] U, double[3,4] N, float[3,4] Z, float[3,4] O) {
      B = Bernoulli <seed = 3.0> (P)
      U = RandomUniform <shape = [2, 5], low = -2.0, high = 3.0, seed = 1.0> ()
      N = RandomNormalLike <dtype = 11, mean = 5.0, scale = 0.0> (P)
      zero = Constant <value = float[3,4] {0,0,0,0,0,0,0,0,0,0,0,0}> ()
      one = Constant <value = float[3,4] {1,1,1,1,1,1,1,1,1,1,1,1}> ()
      Z = Bernoulli (zero)
      O = Bernoulli (one) })"));
  std::vector<float> first_b, first_u;
  for (int run = 0; run < 2; ++run) {
    Session s(plan);
    test::feed_f(s, "P", {3, 4}, std::vector<float>(12, 0.5f));
    s.run();
    const auto b = test::values<float>(s, "B"), u = test::values<float>(s, "U");
    for (float v : b) EXPECT_TRUE(v == 0.f || v == 1.f);
    for (float v : u) EXPECT_TRUE(v >= -2.f && v <= 3.f) << v;
    EXPECT_EQ(test::values<double>(s, "N"), std::vector<double>(12, 5.0));
    EXPECT_EQ(test::values<float>(s, "Z"), std::vector<float>(12, 0.f));
    EXPECT_EQ(test::values<float>(s, "O"), std::vector<float>(12, 1.f));
    if (run == 0) {
      first_b = b;
      first_u = u;
    } else {  // a seed makes every run the same
      EXPECT_EQ(b, first_b);
      EXPECT_EQ(u, first_u);
    }
  }
  // A probability outside [0, 1] is an error naming the node.
  EXPECT_NE(error_of("(float[2] P) => (float[2] B) { B = Bernoulli(P) }", {{"P", {2}, {0.5f, 2.f}}}).find("Bernoulli"), std::string::npos);
}

TEST(RuntimeOpsExtra, MaxRoiPoolBins) {
  Session s(test::plan_from_text(model13(R"((float[1,1,4,4] X, float[2,5] R) => (float[2,1,2,2] Y) {
      Y = MaxRoiPool <pooled_shape = [2, 2]> (X, R) })")));
  std::vector<float> x(16);
  for (int i = 0; i < 16; ++i) x[static_cast<size_t>(i)] = static_cast<float>(i);
  test::feed_f(s, "X", {1, 1, 4, 4}, x);
  test::feed_f(s, "R", {2, 5}, {0, 0, 0, 3, 3, 0, 1, 1, 2, 2});
  s.run();
  // Whole image: 2x2 bins of 2x2 cells; the second roi covers rows/cols 1..2, one cell per bin.
  EXPECT_EQ(test::values<float>(s, "Y"), (std::vector<float>{5, 7, 13, 15, 5, 6, 9, 10}));
  EXPECT_NE(error_of("(float[1,1,2,2] X, float[1,5] R) => (float[1,1,1,1] Y) { Y = MaxRoiPool <pooled_shape = [1, 1]> (X, R) }",
                     {{"X", {1, 1, 2, 2}, {1, 2, 3, 4}}, {"R", {1, 5}, {3, 0, 0, 1, 1}}})
                .find("batch"),
            std::string::npos);
}
