// Plan/Session behaviour: every tensor kept and reachable, unsupported ops, input checks,
// threads, and the ops list of model/ops.cpp agreeing with the kernel registry.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "model/half.h"
#include "model/ops.h"
#include "support.h"

using namespace nnxr;
using namespace nnxr::runtime;

TEST(RuntimeSession, RegistryMatchesOpsList) {
  for (const auto& op : supported_ops()) EXPECT_TRUE(model::runtime_supports("", op)) << op << " has a kernel but is missing from model/ops.cpp";
  // And the other way: a graph using every listed op reports none unsupported via the registry.
  for (const char* op : {"Conv", "Gemm", "LSTM", "Resize", "Crop", "ImageScaler", "Affine"}) EXPECT_TRUE(has_kernel("", op)) << op;
  EXPECT_FALSE(model::runtime_supports("", "Multinomial"));
  EXPECT_FALSE(has_kernel("com.microsoft", "Relu"));
}

TEST(RuntimeSession, EveryTensorIsKeptWithProducer) {
  Session s(test::plan_from_text(R"(<ir_version: 8, opset_import: ["" : 13]> g (float[2] X) => (float[2] Y) {
      W = Constant <value = float[2] {1.0, -1.0}> ()
      h = Mul(X, W)
      Y = Relu(h) })"));
  test::feed_f(s, "X", {2}, {3, 4});
  const RunStats st = s.run();
  EXPECT_EQ(st.nodes_run, 3);
  const auto views = s.tensors();
  std::map<std::string, TensorView> by;
  for (const auto& v : views) by[std::string(v.name)] = v;
  ASSERT_TRUE(by.count("X") && by.count("W") && by.count("h") && by.count("Y"));
  EXPECT_EQ(by["h"].node.empty(), false);
  EXPECT_EQ(by["X"].node, "");
  EXPECT_EQ(by["X"].kind, model::TensorKind::Input);
  EXPECT_EQ(by["W"].kind, model::TensorKind::Constant);
  EXPECT_EQ(test::values<float>(s, "h"), (std::vector<float>{3, -4}));
  EXPECT_EQ(test::values<float>(s, "Y"), (std::vector<float>{3, 0}));
  EXPECT_EQ(s.find("nope"), nullptr);
}

TEST(RuntimeSession, UnsupportedOpsRunWhatTheyCanAndReportCounts) {
  auto plan = test::plan_from_text(R"(<ir_version: 8, opset_import: ["" : 12]> g (float[2,2] X) => (float[2,2] A, float[2,2] D, int32[2,2] C) {
      A = Relu(X)
      B = Multinomial <sample_size = 2> (X)
      C = Neg(B)
      E = Multinomial <sample_size = 2> (A)
      D = Neg(A) })");
  ASSERT_EQ(plan->unsupported().size(), 1u);
  EXPECT_EQ(plan->unsupported()[0].op_type, "Multinomial");
  EXPECT_EQ(plan->unsupported()[0].count, 2);
  Session s(plan);
  test::feed_f(s, "X", {2, 2}, {-1, 2, -3, 4});
  try {
    s.run();
    FAIL() << "expected UnsupportedError";
  } catch (const UnsupportedError& e) {
    EXPECT_NE(std::string(e.what()).find("Multinomial x2"), std::string::npos) << e.what();
    ASSERT_EQ(e.ops().size(), 1u);
  }
  EXPECT_EQ(test::values<float>(s, "A"), (std::vector<float>{0, 2, 0, 4}));
  EXPECT_EQ(test::values<float>(s, "D"), (std::vector<float>{0, -2, 0, -4}));
  EXPECT_EQ(s.find("B"), nullptr);
  EXPECT_EQ(s.find("C"), nullptr);
}

TEST(RuntimeSession, InputChecks) {
  Session s(test::plan_from_text(R"(<ir_version: 8, opset_import: ["" : 13]> g (float[1,2] X) => (float[1,2] Y) { Y = Relu(X) })"));
  const std::vector<float> two = {1, 2};
  const std::vector<int64_t> ok_shape = {1, 2}, bad_shape = {2, 1};
  EXPECT_THROW(s.run(), RuntimeError);  // X not set
  EXPECT_THROW(s.set_input("Z", model::DType::Float, ok_shape, std::as_bytes(std::span(two))), RuntimeError);
  EXPECT_THROW(s.set_input("X", model::DType::Int32, ok_shape, std::as_bytes(std::span(two))), RuntimeError);
  EXPECT_THROW(s.set_input("X", model::DType::Float, bad_shape, std::as_bytes(std::span(two))), RuntimeError);
  EXPECT_THROW(s.set_input("X", model::DType::Float, ok_shape, std::as_bytes(std::span(two)).subspan(1)), RuntimeError);
  EXPECT_THROW(s.set_input(size_t{1}, model::DType::Float, ok_shape, std::as_bytes(std::span(two))), RuntimeError);
  s.set_input(size_t{0}, model::DType::Float, ok_shape, std::as_bytes(std::span(two)));
  EXPECT_NO_THROW(s.run());
}

TEST(RuntimeSession, FailedRunKeepsEarlierTensorsOnly) {
  Session s(test::plan_from_text(R"(<ir_version: 8, opset_import: ["" : 13]> g (float[3] X, int64[1] I) => (float[1] Y) {
      A = Relu(X)
      Y = Gather(A, I) })"));
  test::feed_f(s, "X", {3}, {1, 2, 3});
  test::feed_i64(s, "I", {1}, {2});
  s.run();
  EXPECT_EQ(test::values<float>(s, "Y"), (std::vector<float>{3}));
  test::feed_i64(s, "I", {1}, {5});
  EXPECT_THROW(s.run(), RuntimeError);
  EXPECT_NE(s.find("A"), nullptr);
  EXPECT_EQ(s.find("Y"), nullptr);  // not a stale value from the previous run
}

TEST(RuntimeSession, ThreadCountsGiveTheSameResult) {
  const auto plan2 = test::plan_from_text(R"(<ir_version: 8, opset_import: ["" : 13]> g (float[2,8,32,32] X, float[16,8,3,3] W) => (float[2,16,16,16] Y) {
      c = Conv <pads = [1, 1, 1, 1], strides = [2, 2]> (X, W)
      m = MaxPool <kernel_shape = [3, 3], pads = [1, 1, 1, 1]> (c)
      Y = Sigmoid(m) })");
  const auto x = test::random_floats(2 * 8 * 32 * 32, 1), w = test::random_floats(16 * 8 * 9, 2);
  std::vector<std::vector<float>> outs;
  for (int t : {1, 2, 3}) {
    Session s(plan2, {.threads = t});
    test::feed_f(s, "X", {2, 8, 32, 32}, x);
    test::feed_f(s, "W", {16, 8, 3, 3}, w);
    s.run();
    outs.push_back(test::values<float>(s, "Y"));
  }
  ASSERT_EQ(outs[0].size(), 2u * 16 * 16 * 16);
  for (size_t i = 0; i < outs[0].size(); ++i) {
    ASSERT_NEAR(outs[0][i], outs[1][i], 1e-5f);
    ASSERT_NEAR(outs[0][i], outs[2][i], 1e-5f);
  }
}

TEST(RuntimeSession, Float16IsUpcastAroundFloatKernels) {
  Session s(test::plan_from_text(R"(<ir_version: 8, opset_import: ["" : 13]> g (float16[3] X) => (float16[3] Y) { Y = Sigmoid(X) })"));
  const std::vector<uint16_t> x = {0x0000, 0x3c00, 0xbc00};  // 0, 1, -1
  test::feed(s, "X", model::DType::Float16, {3}, x);
  s.run();
  const Value* y = s.find("Y");
  ASSERT_NE(y, nullptr);
  EXPECT_EQ(y->dtype(), model::DType::Float16);
  EXPECT_EQ(y->as<uint16_t>()[0], 0x3800);  // 0.5
}

// A float16 Conv and its Relu: computed in float in one pass, both tensors rounded to float16;
// bit for bit what the separate kernels give (an Identity in between prevents the fusion).
TEST(RuntimeSession, Float16ConvReluFusedMatchesSeparateKernels) {
  const char* fused = R"(<ir_version: 8, opset_import: ["" : 13]> g (float16[1,3,9,7] X, float16[4,3,3,3] W) => (float16[1,4,9,7] Y) {
      c = Conv <pads = [1, 1, 1, 1]> (X, W)
      Y = Relu(c) })";
  const char* separate = R"(<ir_version: 8, opset_import: ["" : 13]> g (float16[1,3,9,7] X, float16[4,3,3,3] W) => (float16[1,4,9,7] Y) {
      c = Conv <pads = [1, 1, 1, 1]> (X, W)
      i = Identity(c)
      Y = Relu(i) })";
  auto halves = [](const std::vector<float>& f) {
    std::vector<uint16_t> h(f.size());
    model::float_to_half(f.data(), h.data(), f.size());
    return h;
  };
  const auto x = halves(test::random_floats(3 * 9 * 7, 5)), w = halves(test::random_floats(4 * 3 * 9, 6));
  Session sf(test::plan_from_text(fused)), ss(test::plan_from_text(separate));
  for (Session* s : {&sf, &ss}) {
    test::feed(*s, "X", model::DType::Float16, {1, 3, 9, 7}, x);
    test::feed(*s, "W", model::DType::Float16, {4, 3, 3, 3}, w);
    s->run();
  }
  for (const char* name : {"c", "Y"}) {
    const Value *f = sf.find(name), *r = ss.find(name);
    ASSERT_TRUE(f && r) << name;
    ASSERT_EQ(f->dtype(), model::DType::Float16) << name;
    const auto fv = f->as<uint16_t>(), rv = r->as<uint16_t>();
    ASSERT_EQ(fv.size(), 4u * 9 * 7) << name;
    EXPECT_TRUE(std::equal(fv.begin(), fv.end(), rv.begin(), rv.end())) << name;
  }
  size_t zeros = 0;
  for (uint16_t v : sf.find("Y")->as<uint16_t>()) zeros += v == 0;
  EXPECT_GT(zeros, 0u);  // the Relu did clamp something
}

// A Conv followed by an activation is fused (the activation computed in the Conv's output pass);
// both tensors are still kept and equal what the separate kernels give. The reference graph puts
// an Identity between the Conv and each activation, which prevents the fusion.
TEST(RuntimeSession, FusedConvActivationsMatchSeparateKernels) {
  const char* fused = R"(<ir_version: 8, opset_import: ["" : 13]> g (float[1,3,9,7] X, float[4,3,3,3] W, float[4] B, float[4,1,3,3] D) => (float[1,4,9,7] Y) {
      lo = Constant <value = float {0.0}> ()
      hi = Constant <value = float {0.5}> ()
      c1 = Conv <pads = [1, 1, 1, 1]> (X, W, B)
      a1 = Clip(c1, lo, hi)
      c2 = Conv <pads = [1, 1, 1, 1], group = 4> (a1, D)
      a2 = Relu(c2)
      s2 = Add(c2, a2)
      c3 = Conv <pads = [1, 1, 1, 1], group = 4> (s2, D, B)
      g3 = Sigmoid(c3)
      a3 = Mul(c3, g3)
      c4 = Conv <strides = [2, 2], pads = [1, 1, 1, 1]> (X, W)
      a4 = LeakyRelu <alpha = 0.1> (c4)
      c5 = Conv <pads = [1, 1, 1, 1], group = 4> (a3, D, B)
      a5 = Sigmoid(c5)
      Y = Add(a5, a3) })";
  std::string separate = fused;
  for (const char* c : {"c1", "c2", "c3", "c4", "c5"}) {
    // "aN = Op(cN" -> "aN = Op(iN" with "iN = Identity(cN)" before it (Mul/Add read iN too).
    const std::string from = std::string(c), id = "i" + from.substr(1);
    const size_t line = separate.find(from + " = Conv");
    const size_t end = separate.find('\n', line);
    separate.insert(end + 1, "      " + id + " = Identity(" + from + ")\n");
    size_t pos = separate.find('\n', separate.find(id + " = Identity"));
    while ((pos = separate.find(from, pos)) != std::string::npos) separate.replace(pos, from.size(), id);
  }
  const auto x = test::random_floats(3 * 9 * 7, 1), w = test::random_floats(4 * 3 * 9, 2), b = test::random_floats(4, 3),
             d = test::random_floats(4 * 9, 4);
  for (int threads : {1, 2}) {
    Session sf(test::plan_from_text(fused), {.threads = threads}), ss(test::plan_from_text(separate), {.threads = threads});
    for (Session* s : {&sf, &ss}) {
      test::feed_f(*s, "X", {1, 3, 9, 7}, x);
      test::feed_f(*s, "W", {4, 3, 3, 3}, w);
      test::feed_f(*s, "B", {4}, b);
      test::feed_f(*s, "D", {4, 1, 3, 3}, d);
    }
    const RunStats stats = sf.run();
    EXPECT_EQ(stats.nodes_run, 15);
    EXPECT_EQ(stats.nodes_fused, 6);  // a1, a2, g3 and a3, a4, a5
    EXPECT_EQ(ss.run().nodes_fused, 0);
    for (const char* name : {"c1", "a1", "c2", "a2", "s2", "c3", "g3", "a3", "c4", "a4", "c5", "a5", "Y"}) {
      const auto f = test::values<float>(sf, name), r = test::values<float>(ss, name);
      ASSERT_EQ(f.size(), r.size()) << name;
      ASSERT_FALSE(f.empty()) << name;
      for (size_t i = 0; i < f.size(); ++i) EXPECT_NEAR(f[i], r[i], 1e-6f * (1 + std::fabs(r[i]))) << name << " element " << i;
    }
    EXPECT_EQ(sf.find("a1")->dims(), (std::vector<int64_t>{1, 4, 9, 7}));
    EXPECT_EQ(sf.find("a4")->dims(), (std::vector<int64_t>{1, 4, 5, 4}));
  }
}

// A Conv followed by an Add of a tensor shaped like its output (a residual connection) computes
// the sum in its output pass, at one and two threads, on every conv path (pointwise, im2col,
// depthwise 3x3, general depthwise); an Add that broadcasts (a per-channel bias) is declined at run
// time and runs on its own, as does one whose other input is computed after the Conv. All values
// equal those of the graph with an Identity between each Conv and its Add.
TEST(RuntimeSession, FusedConvAddMatchesSeparateKernels) {
  const char* fused = R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[2,4,9,7] X, float[4,4,1,1] P, float[4,4,3,3] W, float[4] B2, float[4,1,3,3] D, float[4,1,5,5] E, float[4,1,1] B) => (float[2,4,9,7] Y) {
      c1 = Conv (X, P)
      a1 = Add(c1, X)
      c2 = Conv <pads = [1, 1, 1, 1]> (a1, W, B2)
      a2 = Add(X, c2)
      c3 = Conv <pads = [1, 1, 1, 1], group = 4> (a2, D)
      a3 = Add(c3, a1)
      c4 = Conv <pads = [2, 2, 2, 2], group = 4> (a3, E)
      a4 = Add(c4, a2)
      c5 = Conv (a4, P)
      a5 = Add(c5, B)
      c6 = Conv (a5, P)
      late = Relu(a5)
      a6 = Add(c6, late)
      Y = Add(a6, a4) })";
  std::string separate = fused;
  for (const char* c : {"c1", "c2", "c3", "c4", "c5", "c6"}) {
    // "aN = Add(...cN...)" reads "iN = Identity(cN)" instead.
    const std::string from = c, id = "i" + from.substr(1), add = "a" + from.substr(1) + " = Add(";
    const size_t line = separate.find(add);
    separate.insert(line, id + " = Identity(" + from + ")\n      ");
    const size_t at = separate.find(add), end = separate.find('\n', at);
    const size_t pos = separate.find(from, at);
    ASSERT_LT(pos, end) << from;
    separate.replace(pos, from.size(), id);
  }
  const auto x = test::random_floats(2 * 4 * 9 * 7, 1), p = test::random_floats(16, 2), w = test::random_floats(4 * 4 * 9, 3),
             d = test::random_floats(4 * 9, 4), e = test::random_floats(4 * 25, 5), b = test::random_floats(4, 6), b2 = test::random_floats(4, 7);
  for (int threads : {1, 2}) {
    Session sf(test::plan_from_text(fused), {.threads = threads}), ss(test::plan_from_text(separate), {.threads = threads});
    for (Session* s : {&sf, &ss}) {
      test::feed_f(*s, "X", {2, 4, 9, 7}, x);
      test::feed_f(*s, "P", {4, 4, 1, 1}, p);
      test::feed_f(*s, "W", {4, 4, 3, 3}, w);
      test::feed_f(*s, "D", {4, 1, 3, 3}, d);
      test::feed_f(*s, "E", {4, 1, 5, 5}, e);
      test::feed_f(*s, "B", {4, 1, 1}, b);
      test::feed_f(*s, "B2", {4}, b2);
    }
    const RunStats stats = sf.run();
    EXPECT_EQ(stats.nodes_run, 14);
    EXPECT_EQ(stats.nodes_fused, 4);  // a1 to a4
    EXPECT_EQ(ss.run().nodes_fused, 0);
    for (const char* name : {"c1", "a1", "c2", "a2", "c3", "a3", "c4", "a4", "c5", "a5", "c6", "late", "a6", "Y"}) {
      const auto f = test::values<float>(sf, name), r = test::values<float>(ss, name);
      ASSERT_EQ(f.size(), r.size()) << name;
      ASSERT_FALSE(f.empty()) << name;
      for (size_t i = 0; i < f.size(); ++i) EXPECT_NEAR(f[i], r[i], 1e-6f * (1 + std::fabs(r[i]))) << name << " element " << i;
    }
  }
}

namespace nnxr::runtime {
namespace {

TEST(RuntimeSession, NonFiniteReportNamesWhereNaNAndInfEnter) {
  Session s(test::plan_from_text(R"(<ir_version: 8, opset_import: ["" : 13]> g (float[3] X, float[3] Z) => (float[3] Y) {
      Q = Div(X, Z)
      R = Relu(Q)
      Y = Add(R, X) })"));
  test::feed_f(s, "X", {3}, {1, 2, 3});
  test::feed_f(s, "Z", {3}, {1, 2, 4});
  s.run();
  EXPECT_TRUE(non_finite_report(s).empty());

  test::feed_f(s, "Z", {3}, {0, 2, 4});  // 1 / 0 = Inf in Q; R and Y inherit it and are not listed
  s.run();
  auto lines = non_finite_report(s);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0], "node 'Div_0' (Div) computed 1 Inf of 3 values in 'Q' from finite inputs") << lines[0];

  test::feed_f(s, "X", {3}, {std::nanf(""), 2, 3});
  s.run();
  lines = non_finite_report(s);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0], "input 'X' holds 1 NaN of 3 values") << lines[0];
  EXPECT_EQ(non_finite_report(s, 0), (std::vector<std::string>{"... and 1 more tensors where non-finite values appear"}));
}

}  // namespace
}  // namespace nnxr::runtime
