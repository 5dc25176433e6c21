// If, Loop and Scan: bodies that read outer tensors, loop-carried values, scan outputs, and the
// errors of a bad condition.
#include <gtest/gtest.h>

#include "support.h"

using namespace nnxr;
using namespace nnxr::runtime;

TEST(RuntimeControl, IfReadsOuterTensors) {
  auto plan = test::plan_from_text(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (bool C, float[2] X, float[2] Z) => (float[2] Y) {
      W = Mul(X, Z)
      Y = If (C) <
        then_branch = t () => (float[2] a) { a = Add(W, X) },
        else_branch = e () => (float[2] b) { b = Neg(Z) }>
    })");
  for (bool c : {true, false}) {
    Session s(plan);
    test::feed(s, "C", model::DType::Bool, {}, std::vector<uint8_t>{static_cast<uint8_t>(c)});
    test::feed_f(s, "X", {2}, {1, 2});
    test::feed_f(s, "Z", {2}, {3, 4});
    s.run();
    EXPECT_EQ(test::values<float>(s, "Y"), c ? (std::vector<float>{4, 10}) : (std::vector<float>{-3, -4}));
  }
  // The condition must be a bool scalar.
  auto bad = test::plan_from_text(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (bool[2] C, float[2] X) => (float[2] Y) {
      Y = If (C) <then_branch = t () => (float[2] a) { a = Neg(X) }, else_branch = e () => (float[2] b) { b = Abs(X) }>
    })");
  Session s(bad);
  test::feed(s, "C", model::DType::Bool, {2}, std::vector<uint8_t>{1, 0});
  test::feed_f(s, "X", {2}, {1, 2});
  EXPECT_THROW(s.run(), RuntimeError);
}

TEST(RuntimeControl, LoopCarriesValuesAndStacksScanOutputs) {
  auto plan = test::plan_from_text(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (int64 M, float[2] X, float[2] D) => (float[2] S, float[3,2] T) {
      C = Constant <value = bool {1}> ()
      S, T = Loop (M, C, X) <body = b (int64 i, bool c, float[2] s) => (bool co, float[2] so, float[2] t) {
        co = Identity(c)
        so = Add(s, D)
        t = Identity(so)
      }>
    })");
  Session s(plan);
  test::feed_i64(s, "M", {}, {3});
  test::feed_f(s, "X", {2}, {0, 1});
  test::feed_f(s, "D", {2}, {1, 10});
  s.run();
  EXPECT_EQ(test::values<float>(s, "S"), (std::vector<float>{3, 31}));
  EXPECT_EQ(test::values<float>(s, "T"), (std::vector<float>{1, 11, 2, 21, 3, 31}));
  EXPECT_EQ(test::shape_of(s, "T"), (std::vector<int64_t>{3, 2}));
}

TEST(RuntimeControl, ScanCumulativeSumBothDirections) {
  auto text = [](int dir) {
    return std::string(R"(<ir_version: 8, opset_import: ["" : 13]>
      g (float[2] I, float[3,2] X) => (float[2] S, float[3,2] T) {
        S, T = Scan (I, X) <num_scan_inputs = 1, scan_input_directions = [)") + std::to_string(dir) + R"(],
          body = b (float[2] a, float[2] x) => (float[2] o, float[2] t) { o = Add(a, x) t = Identity(o) }>
      })";
  };
  for (int dir : {0, 1}) {
    Session s(test::plan_from_text(text(dir)));
    test::feed_f(s, "I", {2}, {0, 0});
    test::feed_f(s, "X", {3, 2}, {1, 2, 3, 4, 5, 6});
    s.run();
    EXPECT_EQ(test::values<float>(s, "S"), (std::vector<float>{9, 12}));
    EXPECT_EQ(test::values<float>(s, "T"), dir == 0 ? (std::vector<float>{1, 2, 4, 6, 9, 12}) : (std::vector<float>{5, 6, 8, 10, 9, 12}));
  }
}
