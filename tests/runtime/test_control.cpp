// If, Loop and Scan: bodies that read outer tensors, loop-carried values, scan outputs, and the
// errors of a bad condition.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

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

namespace {
// A Loop of trip count M whose condition stays true, doubling nothing: only the limits end it early.
std::shared_ptr<const Plan> counting_loop() {
  return test::plan_from_text(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (int64 M, float[2] X) => (float[2] S) {
      C = Constant <value = bool {1}> ()
      S = Loop (M, C, X) <body = b (int64 i, bool c, float[2] s) => (bool co, float[2] so) {
        co = Identity(c)
        so = Neg(s)
      }>
    })");
}
}  // namespace

TEST(RuntimeControl, LoopStopsAtTheIterationCap) {
  Session s(counting_loop());
  test::feed_i64(s, "M", {}, {1000000000});
  test::feed_f(s, "X", {2}, {1, 2});
  RunOptions o;
  o.max_loop_iterations = 100;
  try {
    s.run(o);
    FAIL() << "a trip count of 1e9 ran past the cap";
  } catch (const RuntimeError& e) {
    EXPECT_NE(std::string(e.what()).find("stopped after 100 iterations"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("(Loop)"), std::string::npos) << e.what();
  }
  // Under the cap the loop runs to its trip count (an even count: S = X).
  test::feed_i64(s, "M", {}, {100});
  s.run(o);
  EXPECT_EQ(test::values<float>(s, "S"), (std::vector<float>{1, 2}));
}

TEST(RuntimeControl, CancelAndDeadlineStopALoopBetweenIterations) {
  Session s(counting_loop());
  test::feed_i64(s, "M", {}, {1000000000});
  test::feed_f(s, "X", {2}, {1, 2});
  std::atomic<bool> cancel{false};
  RunOptions o;
  o.cancel = &cancel;
  std::thread setter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    cancel = true;
  });
  const auto t0 = std::chrono::steady_clock::now();
  try {
    s.run(o);
    FAIL() << "not cancelled";
  } catch (const CancelledError& e) {
    EXPECT_EQ(e.reason(), CancelledError::Reason::Cancelled);
    EXPECT_NE(e.node().find("(Loop)"), std::string::npos) << e.what();
  }
  setter.join();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));

  RunOptions d;
  d.deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(100);
  try {
    s.run(d);
    FAIL() << "the deadline passed unnoticed";
  } catch (const CancelledError& e) {
    EXPECT_EQ(e.reason(), CancelledError::Reason::TimedOut);
  }
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(4));
  // Already cancelled: the run stops before its first node.
  cancel = true;
  EXPECT_THROW(s.run(o), CancelledError);
}

TEST(RuntimeControl, MemoryCeilingNamesTheNodeOfALoopThatDoublesATensor) {
  auto plan = test::plan_from_text(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (int64 M, float[1] X) => (float[?] S) {
      C = Constant <value = bool {1}> ()
      S = Loop (M, C, X) <body = b (int64 i, bool c, float[?] s) => (bool co, float[?] so) {
        co = Identity(c)
        so = Concat <axis = 0> (s, s)
      }>
    })");
  Session s(plan);
  test::feed_i64(s, "M", {}, {60});
  test::feed_f(s, "X", {1}, {1});
  const uint64_t before = memory_limit();
  set_memory_limit(memory_held() + (64u << 20));
  try {
    s.run();
    set_memory_limit(before);
    FAIL() << "2^60 floats computed";
  } catch (const RuntimeError& e) {
    set_memory_limit(before);
    const std::string m = e.what();
    EXPECT_NE(m.find("memory ceiling"), std::string::npos) << m;
    EXPECT_NE(m.find("(Loop)"), std::string::npos) << m;
  }
  // Within the ceiling the same loop computes: 2^10 ones.
  test::feed_i64(s, "M", {}, {10});
  s.run();
  EXPECT_EQ(test::shape_of(s, "S"), (std::vector<int64_t>{1024}));
}
