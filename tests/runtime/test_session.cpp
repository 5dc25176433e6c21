// Plan/Session behaviour: every tensor kept and reachable, unsupported ops, input checks,
// threads, and the ops list of model/ops.cpp agreeing with the kernel registry.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <regex>

#include "kernel_support.h"
#include "model/half.h"
#include "model/ops.h"
#include "support.h"

using namespace nnxr;
using namespace nnxr::runtime;

namespace {

// The float16 bits of f, rounded.
std::vector<uint16_t> halves(const std::vector<float>& f) {
  std::vector<uint16_t> h(f.size());
  model::float_to_half(f.data(), h.data(), f.size());
  return h;
}

// Every tensor of s is a view (Value::view) exactly when `views` names it.
void expect_views_exactly(const Session& s, const std::vector<std::string>& views) {
  for (const auto& t : s.tensors())
    EXPECT_EQ(t.value->is_view(), std::find(views.begin(), views.end(), t.name) != views.end()) << t.name;
}

}  // namespace

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
    EXPECT_EQ(ss.run().nodes_fused, 1);  // s2 in the element-wise chain a2, s2
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

// An InstanceNormalization followed by an activation (fns-candy's Relu), a SiLU's Sigmoid and Mul,
// or an Add of an earlier tensor shaped like its output computes it in its output pass; an Add
// that broadcasts is declined at run time and runs on its own. Every tensor equals what the graph
// with an Identity after each InstanceNormalization gives, at one and two threads.
TEST(RuntimeSession, FusedInstanceNormActivationsMatchSeparateKernels) {
  const char* fused = R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[2,3,9,37] X, float[3] S, float[3] B, float[3,1,1] C) => (float[2,3,9,37] Y) {
      n1 = InstanceNormalization <epsilon = 1e-5> (X, S, B)
      a1 = Relu(n1)
      n2 = InstanceNormalization (a1, S, B)
      g2 = Sigmoid(n2)
      a2 = Mul(n2, g2)
      n3 = InstanceNormalization (a2, S, B)
      a3 = Add(a1, n3)
      n4 = InstanceNormalization (a3, S, B)
      a4 = Add(n4, C)
      n5 = InstanceNormalization (a4, S, B)
      Y = LeakyRelu <alpha = 0.1> (n5) })";
  std::string separate = fused;
  for (const char* n : {"n1", "n2", "n3", "n4", "n5"}) {
    const std::string from = n, id = "i" + from.substr(1);
    const size_t line = separate.find(from + " = Instance");
    const size_t end = separate.find('\n', line);
    separate.insert(end + 1, "      " + id + " = Identity(" + from + ")\n");
    size_t pos = separate.find('\n', separate.find(id + " = Identity"));
    while ((pos = separate.find(from, pos)) != std::string::npos) separate.replace(pos, from.size(), id);
  }
  auto x = test::random_floats(2 * 3 * 9 * 37, 1);
  for (size_t i = 0; i < x.size(); ++i) x[i] += static_cast<float>(i % 3);
  const auto sc = test::random_floats(3, 2), b = test::random_floats(3, 3), c = test::random_floats(3, 4);
  for (int threads : {1, 2}) {
    Session sf(test::plan_from_text(fused), {.threads = threads}), ss(test::plan_from_text(separate), {.threads = threads});
    for (Session* s : {&sf, &ss}) {
      test::feed_f(*s, "X", {2, 3, 9, 37}, x);
      test::feed_f(*s, "S", {3}, sc);
      test::feed_f(*s, "B", {3}, b);
      test::feed_f(*s, "C", {3, 1, 1}, c);
    }
    const RunStats stats = sf.run();
    EXPECT_EQ(stats.nodes_fused, 5);  // a1, g2 and a2, a3, Y (a4 declined: it broadcasts)
    EXPECT_EQ(ss.run().nodes_fused, 0);
    for (const char* name : {"n1", "a1", "n2", "g2", "a2", "n3", "a3", "n4", "a4", "n5", "Y"}) {
      const auto f = test::values<float>(sf, name), r = test::values<float>(ss, name);
      ASSERT_EQ(f.size(), r.size()) << name;
      ASSERT_FALSE(f.empty()) << name;
      for (size_t i = 0; i < f.size(); ++i) EXPECT_NEAR(f[i], r[i], 1e-6f * (1 + std::fabs(r[i]))) << name << " element " << i;
    }
    size_t zeros = 0;
    for (float v : test::values<float>(sf, "a1")) zeros += v == 0.f;
    EXPECT_GT(zeros, 0u);  // the Relu did clamp something
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
    EXPECT_EQ(stats.nodes_fused, 6);  // a1 to a4, and a6 and Y in the element-wise chain late, a6, Y
    EXPECT_EQ(ss.run().nodes_fused, 1);  // Y (a6 reads i6, made after late: the chain starts at a6)
    for (const char* name : {"c1", "a1", "c2", "a2", "c3", "a3", "c4", "a4", "c5", "a5", "c6", "late", "a6", "Y"}) {
      const auto f = test::values<float>(sf, name), r = test::values<float>(ss, name);
      ASSERT_EQ(f.size(), r.size()) << name;
      ASSERT_FALSE(f.empty()) << name;
      for (size_t i = 0; i < f.size(); ++i) EXPECT_NEAR(f[i], r[i], 1e-6f * (1 + std::fabs(r[i]))) << name << " element " << i;
    }
  }
}

// A Concat of Conv outputs along the channels of a batch of one (SqueezeNet's Fire modules): each
// Conv, or the activation fused into it, writes its output straight into its block of the
// Concat's output, which copies nothing for it; the Conv's tensor is still kept, a view of that
// block. Every tensor equals, bit for bit, that of the graph with an Identity before each Concat
// input (which no Conv writes in place), on each instruction set, at one and two threads, in the
// first run and the next. A graph input among the parts, a Concat over a batch of two and a
// tensor two Concats read are copied as before.
class InPlaceConcat : public test::PerIsa {};

TEST_P(InPlaceConcat, ConvOutputsWrittenInTheirBlockMatchCopies) {
  const char* in_place = R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,8,9,7] X, float[4,8,1,1] S, float[16,4,1,1] E1, float[16,4,3,3] E3, float[16] B, float[1,16,9,7] X2, float[2,8,9,7] XB)
      => (float[1,48,9,7] Y, float[1,32,9,7] Z, float[2,8,9,7] W2) {
      s = Conv (X, S)
      sr = Relu(s)
      e1 = Conv (sr, E1, B)
      r1 = Relu(e1)
      e3 = Conv <pads = [1, 1, 1, 1]> (sr, E3, B)
      r3 = Relu(e3)
      c5 = Conv (sr, E1)
      cat = Concat <axis = 1> (r1, r3)
      Y = Concat <axis = 1> (c5, X2, e1)
      Z = Concat <axis = -3> (r3, c5)
      b1 = Conv (XB, S)
      b2 = Conv <strides = [1, 1]> (XB, S)
      W2 = Concat <axis = 1> (b1, b2) })";
  std::string copies = in_place;
  for (const std::string from : {"r1, r3", "c5, X2, e1", "r3, c5", "b1, b2"}) {
    std::string to = from;
    for (const std::string t : {"r1", "r3", "c5", "e1", "b1", "b2"})
      if (const size_t at = to.find(t); at != std::string::npos) to.replace(at, t.size(), "i" + t);
    copies.replace(copies.find(from), from.size(), to);
  }
  std::string ids;
  for (const char* t : {"r1", "r3", "c5", "e1", "b1", "b2"}) ids += std::string("i") + t + " = Identity(" + t + ")\n      ";
  copies.insert(copies.find("cat = Concat"), ids);
  const auto x = test::random_floats(8 * 63, 1), s = test::random_floats(32, 2), e1 = test::random_floats(64, 3),
             e3 = test::random_floats(16 * 36, 4), b = test::random_floats(16, 5), x2 = test::random_floats(16 * 63, 6),
             xb = test::random_floats(2 * 8 * 63, 7);
  for (int threads : {1, 2}) {
    Session sp(test::plan_from_text(in_place), {.threads = threads}), sc(test::plan_from_text(copies), {.threads = threads});
    for (Session* ses : {&sp, &sc}) {
      test::feed_f(*ses, "X", {1, 8, 9, 7}, x);
      test::feed_f(*ses, "S", {4, 8, 1, 1}, s);
      test::feed_f(*ses, "E1", {16, 4, 1, 1}, e1);
      test::feed_f(*ses, "E3", {16, 4, 3, 3}, e3);
      test::feed_f(*ses, "B", {16}, b);
      test::feed_f(*ses, "X2", {1, 16, 9, 7}, x2);
      test::feed_f(*ses, "XB", {2, 8, 9, 7}, xb);
    }
    for (int run = 0; run < 2; ++run) {
      sp.run();
      sc.run();
      // r1 and r3 in cat; c5 and e1 in Y (X2 between them, copied); r3 is in cat, so Z copies it,
      // and c5 is in Y, so Z copies it too; b1 and b2 are batches of two.
      for (const char* name : {"r1", "r3", "c5", "e1"}) EXPECT_TRUE(sp.find(name)->is_view()) << name;
      for (const char* name : {"s", "sr", "e3", "b1", "b2", "cat", "Y", "Z", "W2"}) EXPECT_FALSE(sp.find(name)->is_view()) << name;
      // The reference's Identities keep their input's bytes (a view of them, see plan_aliases); nothing else is a view.
      expect_views_exactly(sc, {"ir1", "ir3", "ic5", "ie1", "ib1", "ib2"});
      EXPECT_EQ(sp.find("r1")->data(), sp.find("cat")->data());
      EXPECT_EQ(sp.find("r3")->data(), sp.find("cat")->data() + 16 * 63 * sizeof(float));
      EXPECT_EQ(sp.find("e1")->data(), sp.find("Y")->data() + 32 * 63 * sizeof(float));
      for (const char* name : {"s", "sr", "e1", "r1", "e3", "r3", "c5", "cat", "Y", "Z", "b1", "b2", "W2"}) {
        const auto f = test::values<float>(sp, name), r = test::values<float>(sc, name);
        ASSERT_FALSE(f.empty()) << name;
        ASSERT_EQ(f, r) << name << " (run " << run << ", " << threads << " threads)";
        EXPECT_EQ(sp.find(name)->dims(), sc.find(name)->dims()) << name;
      }
    }
    // A copy of a view owns its bytes.
    const Value copy = *sp.find("r3");
    EXPECT_FALSE(copy.is_view());
    EXPECT_NE(copy.data(), sp.find("r3")->data());
    EXPECT_EQ(0, std::memcmp(copy.data(), sp.find("r3")->data(), copy.byte_size()));
  }
}
NNXR_INSTANTIATE_PER_ISA(InPlaceConcat);

// The same in float16 (SqueezeNet_fp16's Fire modules): the Convs computed on float16 bits (with
// their Relu), a depthwise Conv computed in float and rounded into its block, and a Slice, each
// write their block of the Concat's output; a Resize, computed in float temporaries, is copied.
// Every tensor equals, bit for bit, that of the graph with an Identity before each Concat input,
// at one and two threads, in the first run and the next.
TEST(InPlaceConcatFloat16, OutputsWrittenInTheirBlockMatchCopies) {
  const std::string head = R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float16[1,8,8,8] X, float16[4,8,1,1] S, float16[16,4,1,1] E1, float16[16,4,3,3] E3, float16[4,1,3,3] D, float16[1,4,4,4] V)
      => (float16[1,44,8,8] Y) {
      starts = Constant <value = int64[1] {2}> ()
      ends = Constant <value = int64[1] {6}> ()
      axes = Constant <value = int64[1] {1}> ()
      sc = Constant <value = float[4] {1, 1, 2, 2}> ()
      s = Conv (X, S)
      sr = Relu(s)
      e1 = Conv (sr, E1)
      r1 = Relu(e1)
      e3 = Conv <pads = [1, 1, 1, 1]> (sr, E3)
      r3 = Relu(e3)
      dw = Conv <group = 4, pads = [1, 1, 1, 1]> (sr, D)
      sl = Slice (X, starts, ends, axes)
      up = Resize <mode = "nearest"> (V, , sc)
)";
  const std::string in_place = head + "      Y = Concat <axis = 1> (r1, r3, dw, sl, up) }";
  const std::string copies = head +
                             "      i1 = Identity(r1)\n      i3 = Identity(r3)\n      id = Identity(dw)\n      is = Identity(sl)\n"
                             "      iu = Identity(up)\n      Y = Concat <axis = 1> (i1, i3, id, is, iu) }";
  const auto x = halves(test::random_floats(8 * 64, 21)), s = halves(test::random_floats(32, 22)), e1 = halves(test::random_floats(64, 23)),
             e3 = halves(test::random_floats(16 * 36, 24)), d = halves(test::random_floats(36, 25)), v = halves(test::random_floats(64, 26));
  for (int threads : {1, 2}) {
    Session sp(test::plan_from_text(in_place), {.threads = threads}), sc(test::plan_from_text(copies), {.threads = threads});
    for (Session* ses : {&sp, &sc}) {
      test::feed(*ses, "X", model::DType::Float16, {1, 8, 8, 8}, x);
      test::feed(*ses, "S", model::DType::Float16, {4, 8, 1, 1}, s);
      test::feed(*ses, "E1", model::DType::Float16, {16, 4, 1, 1}, e1);
      test::feed(*ses, "E3", model::DType::Float16, {16, 4, 3, 3}, e3);
      test::feed(*ses, "D", model::DType::Float16, {4, 1, 3, 3}, d);
      test::feed(*ses, "V", model::DType::Float16, {1, 4, 4, 4}, v);
    }
    for (int run = 0; run < 2; ++run) {
      sp.run();
      sc.run();
      const char* parts[] = {"r1", "r3", "dw", "sl"};
      const size_t at[] = {0, 16, 32, 36};  // channels of 64 halves
      for (size_t k = 0; k < std::size(parts); ++k) {
        EXPECT_TRUE(sp.find(parts[k])->is_view()) << parts[k];
        EXPECT_EQ(sp.find(parts[k])->data(), sp.find("Y")->data() + at[k] * 64 * sizeof(uint16_t)) << parts[k];
      }
      for (const char* name : {"s", "sr", "e1", "e3", "up", "Y"}) EXPECT_FALSE(sp.find(name)->is_view()) << name;
      // The reference's Identities keep their input's bytes (a view of them, see plan_aliases); nothing else is a view.
      expect_views_exactly(sc, {"i1", "i3", "id", "is", "iu"});
      for (const char* name : {"s", "sr", "e1", "r1", "e3", "r3", "dw", "sl", "up", "Y"}) {
        const Value *f = sp.find(name), *r = sc.find(name);
        ASSERT_TRUE(f && r) << name;
        ASSERT_EQ(f->dtype(), model::DType::Float16) << name;
        const auto fv = f->as<uint16_t>(), rv = r->as<uint16_t>();
        ASSERT_FALSE(fv.empty()) << name;
        EXPECT_TRUE(std::equal(fv.begin(), fv.end(), rv.begin(), rv.end())) << name << " (run " << run << ", " << threads << " threads)";
        EXPECT_EQ(f->dims(), r->dims()) << name;
      }
    }
  }
}

// The other nodes whose kernels write their output in place in a Concat's block: yolox's Focus
// slices (every other row and column), an upsampled map (Resize) and a reshaped tensor. Each is a
// view of its block, and every tensor equals, bit for bit, that of the graph with an Identity
// before each Concat input, in the first run and the next.
TEST(InPlaceConcatWriters, SliceResizeAndReshapeOutputsWrittenInTheirBlockMatchCopies) {
  const std::string head = R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,4,8,8] X, float[1,4,2,2] V, float[1,64] W) => (float[1,24,4,4] Y) {
      axes = Constant <value = int64[2] {2, 3}> ()
      ends = Constant <value = int64[2] {8, 8}> ()
      two = Constant <value = int64[2] {2, 2}> ()
      s00 = Constant <value = int64[2] {0, 0}> ()
      s10 = Constant <value = int64[2] {1, 0}> ()
      s01 = Constant <value = int64[2] {0, 1}> ()
      s11 = Constant <value = int64[2] {1, 1}> ()
      sc = Constant <value = float[4] {1, 1, 2, 2}> ()
      shape = Constant <value = int64[4] {1, 4, 4, 4}> ()
      a = Slice (X, s00, ends, axes, two)
      b = Slice (X, s10, ends, axes, two)
      c = Slice (X, s01, ends, axes, two)
      d = Slice (X, s11, ends, axes, two)
      up = Resize <mode = "nearest"> (V, , sc)
      r = Reshape (W, shape)
)";
  const std::string in_place = head + "      Y = Concat <axis = 1> (a, b, c, d, up, r) }";
  const std::string copies = head +
                             "      ia = Identity(a)\n      ib = Identity(b)\n      ic = Identity(c)\n      id = Identity(d)\n"
                             "      iup = Identity(up)\n      ir = Identity(r)\n      Y = Concat <axis = 1> (ia, ib, ic, id, iup, ir) }";
  const auto x = test::random_floats(4 * 64, 11), v = test::random_floats(16, 12), w = test::random_floats(64, 13);
  Session sp(test::plan_from_text(in_place)), sc(test::plan_from_text(copies));
  for (Session* ses : {&sp, &sc}) {
    test::feed_f(*ses, "X", {1, 4, 8, 8}, x);
    test::feed_f(*ses, "V", {1, 4, 2, 2}, v);
    test::feed_f(*ses, "W", {1, 64}, w);
  }
  for (int run = 0; run < 2; ++run) {
    sp.run();
    sc.run();
    const char* parts[] = {"a", "b", "c", "d", "up", "r"};
    for (size_t k = 0; k < std::size(parts); ++k) {
      EXPECT_TRUE(sp.find(parts[k])->is_view()) << parts[k];
      EXPECT_EQ(sp.find(parts[k])->data(), sp.find("Y")->data() + k * 64 * sizeof(float)) << parts[k];
    }
    // The reference's Identities keep their input's bytes (a view of them, see plan_aliases); nothing else is a view.
    expect_views_exactly(sc, {"ia", "ib", "ic", "id", "iup", "ir"});
    for (const char* name : {"a", "b", "c", "d", "up", "r", "Y"}) {
      const auto f = test::values<float>(sp, name), r = test::values<float>(sc, name);
      ASSERT_FALSE(f.empty()) << name;
      ASSERT_EQ(f, r) << name << " (run " << run << ")";
    }
  }
  // The slices are the Focus layer's: a = X[..., 0::2, 0::2], d = X[..., 1::2, 1::2].
  const auto y = test::values<float>(sp, "Y");
  EXPECT_EQ(y[0], x[0]);
  EXPECT_EQ(y[1], x[2]);
  EXPECT_EQ(y[4], x[16]);
  EXPECT_EQ(y[3 * 64], x[9]);
}

// Element-wise chains: a transformer's MatMul bias + GELU (Add, Div, Erf, Add, Mul, Mul), a bias
// and a residual Add, a LayerNorm's Sub and Pow(2) and its Div, Mul, Add (one value per row, per
// column), and a chain over rows longer than a block, computed in one pass each (the tensors only
// the chain reads staged and streamed out, the others written in place). Every tensor equals,
// bit for bit, that of the same graph with an Identity after each node of a chain (no chain forms
// there), on each instruction set, at one and two threads (the larger chains split over the pool).
class ElementwiseChains : public test::PerIsa {};

// Whether tensor `name` is there and holds the same floats, bit for bit, in sessions a and b.
::testing::AssertionResult same_bits(const Session& a, const Session& b, const char* name) {
  const auto x = test::values<float>(a, name), y = test::values<float>(b, name);
  if (x.empty()) return ::testing::AssertionFailure() << name << " is empty";
  if (x.size() != y.size()) return ::testing::AssertionFailure() << name << ": " << x.size() << " against " << y.size() << " values";
  size_t differ = 0;
  for (size_t i = 0; i < x.size(); ++i) differ += std::memcmp(&x[i], &y[i], sizeof(float)) != 0;
  if (differ != 0) return ::testing::AssertionFailure() << name << ": " << differ << " values differ";
  return ::testing::AssertionSuccess();
}

// `text` with the outputs of `names` read through an Identity by every later node.
std::string through_identities(std::string text, std::initializer_list<const char*> names) {
  for (const std::string name : names) {
    const size_t line = text.find(" " + name + " = ");
    const size_t end = text.find('\n', line);
    const std::string id = "id_" + name;
    text.insert(end + 1, "      " + id + " = Identity(" + name + ")\n");
    const size_t from = text.find('\n', text.find(id + " = Identity")) + 1;
    std::string rest = text.substr(from);
    rest = std::regex_replace(rest, std::regex("([(,] *)" + name + "([,)])"), "$1" + id + "$2");
    text = text.substr(0, from) + rest;
  }
  return text;
}

TEST_P(ElementwiseChains, MatchSeparateKernels) {
  const char* text = R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[2,50,24] X, float[24,700] W1, float[700] B1, float[700,24] W2, float[24] B2, float[24] G, float[24] Bt, float[3,5000] Z, float[5000] C, float[3,1] R)
      => (float[2,50,24] Y, float[3,5000] Z3) {
      sq2 = Constant <value = float {1.41421354}> ()
      one = Constant <value = float {1.0}> ()
      half = Constant <value = float {0.5}> ()
      two = Constant <value = float {2.0}> ()
      eps = Constant <value = float {1e-6}> ()
      m = MatMul(X, W1)
      a = Add(B1, m)
      d = Div(a, sq2)
      e = Erf(d)
      p = Add(e, one)
      q = Mul(a, p)
      gelu = Mul(q, half)
      m2 = MatMul(gelu, W2)
      a2 = Add(B2, m2)
      r = Add(a2, X)
      mu = ReduceMean <axes = [-1]> (r)
      c = Sub(r, mu)
      sq = Pow(c, two)
      v = ReduceMean <axes = [-1]> (sq)
      ve = Add(v, eps)
      sd = Sqrt(ve)
      nrm = Div(c, sd)
      sc = Mul(nrm, G)
      Y = Add(sc, Bt)
      z1 = Mul(Z, C)
      z2 = Sub(R, z1)
      z3 = Erf(z2)
      Z3 = Div(z3, z1) })";
  const std::string separate = through_identities(text, {"m", "a", "d", "e", "p", "q", "gelu", "m2", "a2", "r", "c", "sq", "nrm", "sc", "z1", "z2", "z3"});
  const auto x = test::random_floats(2 * 50 * 24, 1), w1 = test::random_floats(24 * 700, 2, -0.3f, 0.3f), b1 = test::random_floats(700, 3),
             w2 = test::random_floats(700 * 24, 4, -0.1f, 0.1f), b2 = test::random_floats(24, 5), gm = test::random_floats(24, 6),
             bt = test::random_floats(24, 7), z = test::random_floats(3 * 5000, 8, -2.f, 2.f), cz = test::random_floats(5000, 9),
             rz = test::random_floats(3, 10);
  for (int threads : {1, 2}) {
    Session sf(test::plan_from_text(text), {.threads = threads}), ss(test::plan_from_text(separate), {.threads = threads});
    for (Session* ses : {&sf, &ss}) {
      test::feed_f(*ses, "X", {2, 50, 24}, x);
      test::feed_f(*ses, "W1", {24, 700}, w1);
      test::feed_f(*ses, "B1", {700}, b1);
      test::feed_f(*ses, "W2", {700, 24}, w2);
      test::feed_f(*ses, "B2", {24}, b2);
      test::feed_f(*ses, "G", {24}, gm);
      test::feed_f(*ses, "Bt", {24}, bt);
      test::feed_f(*ses, "Z", {3, 5000}, z);
      test::feed_f(*ses, "C", {5000}, cz);
      test::feed_f(*ses, "R", {3, 1}, rz);
    }
    for (int run = 0; run < 2; ++run) {
      const RunStats stats = sf.run();
      // chains: a..gelu (5 fused after a), a2 r (1), c sq (1), nrm sc Y (2), z1 z2 z3 Z3 (3); a and
      // a2 computed on the rows of the MatMuls m and m2 (2)
      EXPECT_EQ(stats.nodes_fused, 14);
      EXPECT_EQ(ss.run().nodes_fused, 0);
      for (const char* name : {"m", "a", "d", "e", "p", "q", "gelu", "m2", "a2", "r", "mu", "c", "sq", "v", "ve", "sd", "nrm", "sc", "Y", "z1", "z2", "z3", "Z3"}) {
        EXPECT_TRUE(same_bits(sf, ss, name)) << threads << " threads, run " << run;
        EXPECT_EQ(sf.find(name)->dims(), ss.find(name)->dims()) << name;
      }
    }
  }
}
NNXR_INSTANTIATE_PER_ISA(ElementwiseChains);

// A MatMul with the chain that reads its output computed on each block of the product as it is
// made (matmul_blas_done): a bias + GELU after a product split by columns (over the pool at two
// threads), a bias + Relu after a product of few columns (whole, then by rows), an attention's
// scores scaled, masked and Softmax-ed per head (the heads over the pool at two threads), the
// same for heads each split over the pool, and one Softmax after a product of 2-D operands.
// Every tensor equals, bit for bit, that of the graph with an Identity after each MatMul and chain
// node, on each instruction set, at one and two threads, in two runs of the session.
class ProductEpilogues : public test::PerIsa {};

TEST_P(ProductEpilogues, MatchSeparateKernels) {
  const char* text = R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,200,64] X, float[64,1536] W1, float[1536] B1, float[64,40] W3, float[40] B3, float[1,8,128,32] Q, float[1,8,32,128] K,
       float[1,1,1,128] Mask, float[1,2,300,64] Q2, float[1,2,64,300] K2, float[30,20] P, float[20,50] V)
      => (float[1,200,1536] Y, float[1,200,40] Y3, float[1,8,128,128] S, float[1,2,300,300] S2, float[30,50] S3) {
      sq2 = Constant <value = float {1.41421354}> ()
      one = Constant <value = float {1.0}> ()
      half = Constant <value = float {0.5}> ()
      scale = Constant <value = float {5.65685415}> ()
      m = MatMul(X, W1)
      a = Add(m, B1)
      d = Div(a, sq2)
      e = Erf(d)
      p = Add(e, one)
      q = Mul(a, p)
      Y = Mul(q, half)
      m3 = MatMul(X, W3)
      a3 = Add(B3, m3)
      Y3 = Relu(a3)
      qk = MatMul(Q, K)
      sc = Div(qk, scale)
      mk = Add(sc, Mask)
      S = Softmax <axis = -1> (mk)
      qk2 = MatMul(Q2, K2)
      sc2 = Mul(qk2, half)
      S2 = Softmax <axis = 3> (sc2)
      pv = MatMul(P, V)
      S3 = Softmax <axis = 1> (pv) })";
  const std::string separate = through_identities(text, {"m", "a", "d", "e", "p", "q", "m3", "a3", "qk", "sc", "mk", "qk2", "sc2", "pv"});
  const auto x = test::random_floats(200 * 64, 1), w1 = test::random_floats(64 * 1536, 2, -0.3f, 0.3f), b1 = test::random_floats(1536, 3),
             w3 = test::random_floats(64 * 40, 4, -0.3f, 0.3f), b3 = test::random_floats(40, 5), qv = test::random_floats(8 * 128 * 32, 6),
             kv = test::random_floats(8 * 32 * 128, 7), mask = test::random_floats(128, 8, -3.f, 0.f), q2 = test::random_floats(2 * 300 * 64, 9),
             k2 = test::random_floats(2 * 64 * 300, 10, -0.5f, 0.5f), pm = test::random_floats(30 * 20, 11), vm = test::random_floats(20 * 50, 12);
  for (int threads : {1, 2}) {
    Session sf(test::plan_from_text(text), {.threads = threads}), ss(test::plan_from_text(separate), {.threads = threads});
    for (Session* ses : {&sf, &ss}) {
      test::feed_f(*ses, "X", {1, 200, 64}, x);
      test::feed_f(*ses, "W1", {64, 1536}, w1);
      test::feed_f(*ses, "B1", {1536}, b1);
      test::feed_f(*ses, "W3", {64, 40}, w3);
      test::feed_f(*ses, "B3", {40}, b3);
      test::feed_f(*ses, "Q", {1, 8, 128, 32}, qv);
      test::feed_f(*ses, "K", {1, 8, 32, 128}, kv);
      test::feed_f(*ses, "Mask", {1, 1, 1, 128}, mask);
      test::feed_f(*ses, "Q2", {1, 2, 300, 64}, q2);
      test::feed_f(*ses, "K2", {1, 2, 64, 300}, k2);
      test::feed_f(*ses, "P", {30, 20}, pm);
      test::feed_f(*ses, "V", {20, 50}, vm);
    }
    for (int run = 0; run < 2; ++run) {
      const RunStats stats = sf.run();
      // with the products: a..Y (6), a3 Y3 (2), sc mk S (3), sc2 S2 (2), S3 (1)
      EXPECT_EQ(stats.nodes_fused, 14);
      EXPECT_EQ(ss.run().nodes_fused, 0);
      for (const char* name : {"m", "a", "d", "e", "p", "q", "Y", "m3", "a3", "Y3", "qk", "sc", "mk", "S", "qk2", "sc2", "S2", "pv", "S3"}) {
        EXPECT_TRUE(same_bits(sf, ss, name)) << threads << " threads, run " << run;
        EXPECT_EQ(sf.find(name)->dims(), ss.find(name)->dims()) << name;
      }
      // and the fused Softmax is a softmax: each row of S3 within 1e-6 of exp(pv - max) / sum in double
      const auto pv = test::values<float>(sf, "pv"), s3 = test::values<float>(sf, "S3");
      ASSERT_EQ(pv.size(), 30u * 50u);
      ASSERT_EQ(s3.size(), pv.size());
      for (size_t r = 0; r < 30; ++r) {
        double mx = -1e30, sum = 0;
        for (size_t c = 0; c < 50; ++c) mx = std::max(mx, double(pv[r * 50 + c]));
        for (size_t c = 0; c < 50; ++c) sum += std::exp(double(pv[r * 50 + c]) - mx);
        for (size_t c = 0; c < 50; ++c) EXPECT_NEAR(s3[r * 50 + c], std::exp(double(pv[r * 50 + c]) - mx) / sum, 1e-6) << r << ", " << c;
      }
    }
  }
}
NNXR_INSTANTIATE_PER_ISA(ProductEpilogues);

// MatMuls whose right operand is a constant (an initializer, packed once where the AVX-512 body
// runs): one with a bias added on its blocks (the Session's product with a chain), one alone (the
// MatMul kernel), one with a batch of left operands. Every tensor equals, bit for bit, that of the
// same graph with the weights fed as inputs (read in place), at one and two threads, in two runs.
class ConstantWeights : public test::PerIsa {};

// The values of v as an ONNX text tensor's list ("1.5,-2,..."), each exactly (9 significant digits).
std::string text_list(const std::vector<float>& v) {
  std::string out;
  char buf[32];
  for (float f : v) {
    std::snprintf(buf, sizeof buf, "%.9g,", static_cast<double>(f));
    out += buf;
  }
  out.pop_back();
  return out;
}

TEST_P(ConstantWeights, MatchFedWeights) {
  const auto x = test::random_floats(197 * 40, 21), w1 = test::random_floats(40 * 100, 22, -0.3f, 0.3f), b1 = test::random_floats(100, 23),
             w2 = test::random_floats(40 * 300, 24, -0.3f, 0.3f), x3 = test::random_floats(2 * 30 * 40, 25);
  const std::string body = R"( {
      m = MatMul(X, W1)
      Y1 = Add(m, B1)
      Y2 = MatMul(X, W2)
      Y3 = MatMul(X3, W2) })";
  const std::string head = "<ir_version: 8, opset_import: [\"\" : 13]>\n";
  const std::string outs = " => (float[1,197,100] Y1, float[1,197,300] Y2, float[2,30,300] Y3)";
  const std::string constant = head + "g (float[1,197,40] X, float[2,30,40] X3)" + outs + "\n<float[40,100] W1 = {" + text_list(w1) + "}, float[100] B1 = {" +
                               text_list(b1) + "}, float[40,300] W2 = {" + text_list(w2) + "}>" + body;
  const std::string fed = head + "g (float[1,197,40] X, float[2,30,40] X3, float[40,100] W1, float[100] B1, float[40,300] W2)" + outs + body;
  for (int threads : {1, 2}) {
    Session sc(test::plan_from_text(constant), {.threads = threads}), sf(test::plan_from_text(fed), {.threads = threads});
    for (Session* ses : {&sc, &sf}) {
      test::feed_f(*ses, "X", {1, 197, 40}, x);
      test::feed_f(*ses, "X3", {2, 30, 40}, x3);
    }
    test::feed_f(sf, "W1", {40, 100}, w1);
    test::feed_f(sf, "B1", {100}, b1);
    test::feed_f(sf, "W2", {40, 300}, w2);
    for (int run = 0; run < 2; ++run) {
      sc.run();
      sf.run();
      for (const char* name : {"m", "Y1", "Y2", "Y3"}) {
        EXPECT_TRUE(same_bits(sc, sf, name)) << threads << " threads, run " << run;
      }
    }
  }
}
NNXR_INSTANTIATE_PER_ISA(ConstantWeights);

// Gemm with constant weights (packed once where the AVX-512 body runs, C added after the product):
// B as it is and transposed, C of every broadcast shape and none, beta 1 and 0.5, 50 rows and 4
// (too few for the packed product), alpha 2 (not packed): within float rounding of the product
// in double.
TEST_P(ConstantWeights, GemmMatchesDouble) {
  constexpr int64_t K = 40, N = 70;
  const auto w = test::random_floats(K * N, 31, -0.5f, 0.5f);
  for (int64_t M : {50, 4})
    for (bool tb : {false, true})
      for (const char* cshape : {"", "70", "1,70", "50,1", "50,70"})
        for (float beta : {1.f, 0.5f})
          for (float alpha : {1.f, 2.f}) {
            std::string cs = cshape;
            if (M == 4 && cs.rfind("50", 0) == 0) cs = "4" + cs.substr(2);
            std::vector<int64_t> cdims;
            for (size_t at = 0; !cs.empty() && at != std::string::npos;) {
              const size_t comma = cs.find(',', at);
              cdims.push_back(std::stoll(cs.substr(at, comma == std::string::npos ? std::string::npos : comma - at)));
              at = comma == std::string::npos ? comma : comma + 1;
            }
            int64_t cn = 1;
            for (int64_t d : cdims) cn *= d;
            const auto x = test::random_floats(static_cast<size_t>(M * K), 32), cv = test::random_floats(static_cast<size_t>(cn), 33);
            char attrs[96];
            std::snprintf(attrs, sizeof attrs, "<transB = %d, alpha = %.1f, beta = %.1f>", tb ? 1 : 0, static_cast<double>(alpha), static_cast<double>(beta));
            const std::string shape_w = tb ? "70,40" : "40,70";
            std::string inits = "<float[" + shape_w + "] W = {" + text_list(w) + "}";
            if (!cs.empty()) inits += ", float[" + cs + "] C = {" + text_list(cv) + "}";
            inits += ">";
            const std::string text = "<ir_version: 8, opset_import: [\"\" : 13]>\ng (float[" + std::to_string(M) + ",40] X) => (float[" + std::to_string(M) +
                                     ",70] Y)\n" + inits + " {\n  Y = Gemm " + attrs + " (X, W" + (cs.empty() ? "" : ", C") + ") }";
            Session s(test::plan_from_text(text), {.threads = 2});
            test::feed_f(s, "X", {M, K}, x);
            s.run();
            const auto y = test::values<float>(s, "Y");
            ASSERT_EQ(y.size(), static_cast<size_t>(M * N));
            const std::string what = std::to_string(M) + " rows, transB " + std::to_string(tb) + ", C [" + cs + "], alpha " + std::to_string(alpha) +
                                     ", beta " + std::to_string(beta);
            for (int64_t i = 0; i < M; ++i)
              for (int64_t j = 0; j < N; ++j) {
                double ref = 0, mag = 0;
                for (int64_t k = 0; k < K; ++k) {
                  const double p = static_cast<double>(x[static_cast<size_t>(i * K + k)]) * w[static_cast<size_t>(tb ? j * K + k : k * N + j)];
                  ref += p;
                  mag += std::fabs(p);
                }
                ref *= alpha;
                if (!cs.empty()) {
                  const int64_t ci = cdims.size() == 2 ? (cdims[0] == 1 ? 0 : i) * cdims[1] + (cdims[1] == 1 ? 0 : j) : j;
                  ref += beta * static_cast<double>(cv[static_cast<size_t>(ci)]);
                }
                ASSERT_NEAR(y[static_cast<size_t>(i * N + j)], ref, 1e-5 * (alpha * mag + 2)) << what << " at " << i << "," << j;
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

// Reshape, Flatten, Squeeze, Unsqueeze, Identity and Dropout keep their output as a view of their
// input's bytes when another node computed the input (plan_aliases): the same bytes under the
// output's shape, through a chain of them, in the first run and the next (with a new input), and
// a graph output among them. A Reshape of a graph input or of an initializer copies. Streamed
// with RunOptions::keep naming only the last of a chain, the chain's first owner (the Relu) stays
// held under it and every tensor the stream saw is the full run's.
TEST(RuntimeSession, ReshapingNodesKeepTheirInputsBytes) {
  const auto plan = test::plan_from_text(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[2,3,4] X) => (float[1,24] F, float[2,12] D, float[2,3,4] G) {
      K = Constant <value = float[2,3,4] {1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24}> ()
      shape = Constant <value = int64[3] {2, 12, 1}> ()
      shape2 = Constant <value = int64[2] {1, -1}> ()
      axes = Constant <value = int64[1] {0}> ()
      r = Relu(X)
      a = Reshape(r, shape)
      q = Squeeze(a, )
      u = Unsqueeze(q, axes)
      F = Flatten <axis = 1> (u)
      i = Identity(r)
      D, mask = Dropout(q)
      G = Identity(i)
      gx = Reshape(X, shape2)
      gk = Reshape(K, shape2)
    })");
  const model::Graph& g = plan->graph();
  for (int pass = 0; pass < 2; ++pass) {
    Session s(plan);
    auto x = test::random_floats(24, 70 + static_cast<uint32_t>(pass));
    std::vector<float> relu(x.size());
    for (int run = 0; run < 2; ++run) {
      if (run == 1) x = test::random_floats(24, 80 + static_cast<uint32_t>(pass));
      for (size_t k = 0; k < x.size(); ++k) relu[k] = std::max(x[k], 0.f);
      test::feed_f(s, "X", {2, 3, 4}, x);
      if (pass == 0) {
        s.run();
        const std::byte* bytes = s.find("r")->data();
        for (const char* name : {"a", "q", "u", "F", "i", "D", "G"}) {
          EXPECT_TRUE(s.find(name)->is_view()) << name;
          EXPECT_EQ(s.find(name)->data(), bytes) << name;
          EXPECT_EQ(test::values<float>(s, name), relu) << name << " (run " << run << ")";
        }
        for (const char* name : {"r", "mask", "gx", "gk"}) EXPECT_FALSE(s.find(name)->is_view()) << name;
        EXPECT_EQ(test::shape_of(s, "a"), (std::vector<int64_t>{2, 12, 1}));
        EXPECT_EQ(test::shape_of(s, "q"), (std::vector<int64_t>{2, 12}));
        EXPECT_EQ(test::shape_of(s, "u"), (std::vector<int64_t>{1, 2, 12}));
        EXPECT_EQ(test::shape_of(s, "F"), (std::vector<int64_t>{1, 24}));
        EXPECT_EQ(test::shape_of(s, "G"), (std::vector<int64_t>{2, 3, 4}));
        EXPECT_EQ(test::values<float>(s, "gx"), x);
        EXPECT_EQ(test::values<float>(s, "gk")[23], 24.f);
        for (uint8_t m : s.find("mask")->as<uint8_t>()) EXPECT_EQ(m, 1);
        // A copy of a view owns its bytes.
        const Value copy = *s.find("F");
        EXPECT_FALSE(copy.is_view());
        EXPECT_EQ(0, std::memcmp(copy.data(), bytes, copy.byte_size()));
      } else {
        // Streamed, keeping F alone: r (the bytes under F) stays held; the rest is let go.
        std::vector<bool> keep(g.tensors.size(), false);
        keep[g.find("F")] = true;
        std::map<std::string, std::vector<float>> seen;
        RunOptions options;
        options.keep = &keep;
        options.on_ready = [&](model::TensorId id, const Value& v) {
          if (v.dtype() == model::DType::Float) seen[g.tensors[id].name] = {v.as<float>().begin(), v.as<float>().end()};
        };
        s.run(options);
        for (const char* name : {"r", "a", "q", "u", "F", "i", "D", "G"}) EXPECT_EQ(seen[name], relu) << name << " (run " << run << ")";
        ASSERT_NE(s.find("F"), nullptr);
        EXPECT_EQ(test::values<float>(s, "F"), relu);
        for (const char* name : {"i", "D", "G", "gx"}) EXPECT_EQ(s.find(name), nullptr) << name;
      }
    }
  }
}

// RunOptions::keep and on_ready: each node output reaches on_ready once, as the full run has it;
// what no later node reads and keep does not name is gone after the run (its memory given back),
// including a tensor read only inside a Loop body (an outer tensor of the body, read at the Loop);
// the body's own tensors never reach the hooks. NonFiniteScan fed from the hooks says what
// non_finite_report() says of the full run.
TEST(RuntimeSession, AStreamedRunLetsGoOfWhatNoLaterNodeReads) {
  const auto plan = test::plan_from_text(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,1,4,4] X) => (float[1,2,4,4] Y, float[1,2,4,4] L) {
      W = Constant <value = float[2,1,1,1] {1.0, -1.0}> ()
      c = Conv(X, W)
      r = Relu(c)
      a = Add(r, c)
      Y = Neg(a)
      M = Constant <value = int64 {3}> ()
      T = Constant <value = bool {1}> ()
      L = Loop(M, T, a) <body = b (int64 i, bool cond, float[1,2,4,4] s) => (bool co, float[1,2,4,4] so) {
        co = Identity(cond)
        so = Add(s, r)
      }>
    })");
  const model::Graph& g = plan->graph();
  std::vector<float> x(16);
  for (size_t i = 0; i < x.size(); ++i) x[i] = float(i) - 7.5f;
  x[5] = INFINITY;  // non-finite values enter at the input
  Session full(plan);
  test::feed_f(full, "X", {1, 1, 4, 4}, x);
  full.run();

  Session streamed(plan);
  test::feed_f(streamed, "X", {1, 1, 4, 4}, x);
  std::vector<bool> keep(g.tensors.size(), false);
  keep[g.find("Y")] = true;
  std::map<std::string, std::vector<float>> seen;
  NonFiniteScan scan(g);
  RunOptions options;
  options.keep = &keep;
  options.on_ready = [&](model::TensorId id, const Value& v) {
    ASSERT_LT(id, g.tensors.size());
    const std::string& name = g.tensors[id].name;
    EXPECT_EQ(seen.count(name), 0u) << name << " reached on_ready twice";
    if (v.dtype() == model::DType::Float) {
      const auto f = v.as<float>();
      seen[name] = {f.begin(), f.end()};
    } else {
      seen[name] = {};  // the Loop's count and condition
    }
    scan.count(id, v);
  };
  const uint64_t held_before = memory_held();
  for (int pass = 0; pass < 2; ++pass) {  // the second run reuses the session
    seen.clear();
    streamed.run(options);
    EXPECT_EQ(memory_held() - held_before, 2 * 16 * sizeof(float)) << "only Y is held after the run";
    for (const char* name : {"c", "r", "a", "Y", "L"}) {
      ASSERT_TRUE(seen.count(name)) << name;
      EXPECT_EQ(seen[name], test::values<float>(full, name)) << name;
    }
    std::vector<std::string> names;
    for (const auto& [name, values] : seen) names.push_back(name);
    EXPECT_EQ(names, (std::vector<std::string>{"L", "M", "T", "W", "Y", "a", "c", "r"}))
        << "the graph's node outputs (Constant nodes' too), not the body's";
    for (const char* name : {"c", "r", "a", "L"}) EXPECT_EQ(streamed.find(name), nullptr) << name;
    EXPECT_EQ(test::values<float>(streamed, "Y"), test::values<float>(full, "Y"));
    EXPECT_EQ(test::values<float>(streamed, "X"), x);  // inputs stay
  }
  for (const TensorView& t : streamed.tensors())
    if (t.node.empty()) scan.count(t.id, *t.value);
  EXPECT_EQ(scan.report(), non_finite_report(full));
  ASSERT_FALSE(scan.report().empty());
  EXPECT_EQ(scan.report()[0], "input 'X' holds 1 Inf of 16 values");
}

// Tensor buffers of 1 MB and more lie on whole 2 MB pages (candidates for transparent huge pages)
// and hold those whole pages of the memory ceiling; smaller ones lie on a cache line and hold their
// own size. A buffer whose pages would pass the ceiling is refused, though its own bytes would fit.
TEST(RuntimeMemory, LargeBuffersLieOnWholeHugePages) {
  constexpr size_t kMiB = size_t{1} << 20;
  EXPECT_EQ(buffer_bytes(4000), 4000u);
  EXPECT_EQ(buffer_bytes(kMiB - 1), kMiB - 1);
  EXPECT_EQ(buffer_bytes(kMiB), 2 * kMiB);
  EXPECT_EQ(buffer_bytes(2 * kMiB), 2 * kMiB);
  EXPECT_EQ(buffer_bytes(2 * kMiB + 1), 4 * kMiB);
  const uint64_t before = memory_held();
  {
    std::vector<float, CacheAligned<float>> small(1000), large(3 * kMiB / sizeof(float));
    EXPECT_EQ(reinterpret_cast<uintptr_t>(small.data()) % 64, 0u);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(large.data()) % (2 * kMiB), 0u);
    EXPECT_EQ(memory_held() - before, 4000u + 4 * kMiB);
    large.back() = 1.f;
    EXPECT_EQ(std::count(large.begin(), large.end(), 0.f), static_cast<std::ptrdiff_t>(large.size() - 1));
  }
  EXPECT_EQ(memory_held(), before);
  const uint64_t limit = memory_limit();
  set_memory_limit(before + 3 * kMiB + kMiB / 2);
  EXPECT_THROW((std::vector<float, CacheAligned<float>>(3 * kMiB / sizeof(float))), MemoryLimitError);
  EXPECT_NO_THROW((std::vector<float, CacheAligned<float>>(kMiB / 2 / sizeof(float))));
  set_memory_limit(limit);
  EXPECT_EQ(memory_held(), before);
}

}  // namespace
}  // namespace nnxr::runtime
