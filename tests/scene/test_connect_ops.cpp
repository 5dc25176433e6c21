// Connectors of the element-wise, index-mapping, reduction, normalisation and resize ops against
// brute force, and the registry's coverage of every op the runtime supports.
#include <set>

#include "connect_support.h"

using namespace nnxr;
using namespace nnxr::scene;
using namespace nnxr::scene::test;

TEST(ConnectRegistry, EverySupportedOpHasAConnectorOrIsListedWithout) {
  const auto without = ops_without_connector();
  const std::set<std::string_view> listed(without.begin(), without.end());
  EXPECT_EQ(listed.size(), without.size()) << "duplicates in ops_without_connector()";
  for (const std::string& op : runtime::supported_ops()) {
    const bool has = find_connector("", op) != nullptr;
    EXPECT_TRUE(has != (listed.count(op) > 0)) << op << (has ? " has a connector and is listed without one" : " has neither a connector nor a listing");
  }
  for (std::string_view op : without) EXPECT_TRUE(runtime::has_kernel("", op)) << op << " is listed but has no kernel";
  EXPECT_EQ(find_connector("com.example", "Conv"), nullptr);
  EXPECT_NE(find_connector("ai.onnx", "Conv"), nullptr);
}

TEST(Connect, UnaryAndActivation) {
  Fixture f(model_text("(float[2,3,4] X) => (float[2,3,4] Y, float[2,3,4] Z) { R = Relu(X) Y = Sigmoid(R) Z = Clip(X) }"));
  const float* R = f.data("R");
  const float* X = f.data("X");
  check(f, "Y", [&](int64_t o, std::vector<Cand>& c) { c.push_back({0, o, R[o]}); });
  check(f, "Z", [&](int64_t o, std::vector<Cand>& c) { c.push_back({0, o, X[o]}); });
}

TEST(Connect, WeightInputIsNeverASource) {
  // Identity of an initializer: the output has no source.
  Fixture f(model_text("(float[2] X) => (float[2] Y) <" + init("W", {2}, 1) + "> { V = Identity(W) Y = Add(X, V) }"));
  const auto [node, slot] = f.producer("V");
  ASSERT_NE(node, nullptr);
  TopK top(4, 0, 2);
  find_connector("", "Identity")(f.node_values(*node), slot, top);
  EXPECT_EQ(top.kept(0).size(), 0u);
  EXPECT_EQ(top.candidates(), 0u);
  // Add(X, V): V is computed from a weight only, so it is a weight too: X alone feeds Y.
  const float* X = f.data("X");
  check(f, "Y", [&](int64_t o, std::vector<Cand>& c) { c.push_back({0, o, X[o]}); });
}

TEST(Connect, BinaryBroadcasting) {
  Fixture f(model_text("(float[2,1,3] A, float[4,1] B) => (float[2,4,3] S, float[2,4,3] D, float[2,4,3] P, float[2,4,3] Q, float[2,1,3] M) <" +
                       init("W", {3}, 5) + "> { S = Add(A, B) D = Sub(A, B) P = Mul(A, B) Q = Div(A, B) M = Mul(W, A) }"));
  const float* A = f.data("A");
  const float* B = f.data("B");
  const float* W = f.data("W");
  const Dims ys{2, 4, 3};
  auto ia = [&](int64_t o) {
    const Dims i = unravel(o, ys);
    return i[0] * 3 + i[2];
  };
  auto ib = [&](int64_t o) { return unravel(o, ys)[1]; };
  check(f, "S", [&](int64_t o, std::vector<Cand>& c) {
    c.push_back({0, ia(o), A[ia(o)]});
    c.push_back({1, ib(o), B[ib(o)]});
  }, 1);
  check(f, "D", [&](int64_t o, std::vector<Cand>& c) {
    c.push_back({0, ia(o), A[ia(o)]});
    c.push_back({1, ib(o), -B[ib(o)]});
  });
  check(f, "P", [&](int64_t o, std::vector<Cand>& c) {
    c.push_back({0, ia(o), B[ib(o)] * A[ia(o)]});
    c.push_back({1, ib(o), A[ia(o)] * B[ib(o)]});
  });
  check(f, "Q", [&](int64_t o, std::vector<Cand>& c) {
    c.push_back({0, ia(o), A[ia(o)] / B[ib(o)]});
    c.push_back({1, ib(o), A[ia(o)] / B[ib(o)]});
  });
  check(f, "M", [&](int64_t o, std::vector<Cand>& c) { c.push_back({1, o, W[o % 3] * A[o]}); });
}

TEST(Connect, VariadicMeanAndWhere) {
  Fixture f(model_text("(float[3,4] A, float[4] B, float[3,1] C) => (float[3,4] M, float[3,4] W) { M = Mean(A, B, C) G = Greater(A, B) W = Where(G, A, C) }"));
  const float* A = f.data("A");
  const float* B = f.data("B");
  const float* C = f.data("C");
  check(f, "M", [&](int64_t o, std::vector<Cand>& c) {
    c.push_back({0, o, A[o] * (1.f / 3)});
    c.push_back({1, o % 4, B[o % 4] * (1.f / 3)});
    c.push_back({2, o / 4, C[o / 4] * (1.f / 3)});
  });
  check(f, "W", [&](int64_t o, std::vector<Cand>& c) {
    if (A[o] > B[o % 4]) c.push_back({1, o, A[o]});
    else c.push_back({2, o / 4, C[o / 4]});
  });
}

TEST(Connect, BatchNormAndPRelu) {
  Fixture f(model_text("(float[2,3,2,2] X) => (float[2,3,2,2] Y, float[2,3,2,2] P) <" + init("s", {3}, 1) + ", " + init("b", {3}, 2) + ", " +
                       init("m", {3}, 3) + ", float[3] v = {0.5, 1.0, 2.0}, " + init("slope", {3, 1, 1}, 4) +
                       "> { Y = BatchNormalization<epsilon=0.001>(X, s, b, m, v) P = PRelu(X, slope) }"));
  const float* X = f.data("X");
  const float* s = f.data("s");
  const float* v = f.data("v");
  const float* sl = f.data("slope");
  check(f, "Y", [&](int64_t o, std::vector<Cand>& c) {
    const int64_t ch = (o / 4) % 3;
    c.push_back({0, o, (s[ch] / std::sqrt(v[ch] + 0.001f)) * X[o]});
  });
  check(f, "P", [&](int64_t o, std::vector<Cand>& c) { c.push_back({0, o, (X[o] < 0 ? sl[(o / 4) % 3] : 1.f) * X[o]}); });
}

TEST(Connect, ConcatSplitSlice) {
  Fixture f(model_text("(float[2,3,4] A, float[2,2,4] B) => (float[2,5,4] C, float[2,1,4] P, float[2,4,4] Q, float[2,2,2] S) <int64[2] sp = {1, 4}, "
                       "int64[2] st = {-1, 0}, int64[2] en = {-100, 100}, int64[2] ax = {1, 2}, int64[2] step = {-3, 3}> { C = Concat<axis=1>(A, B) "
                       "P, Q = Split<axis=1>(C, sp) S = Slice(C, st, en, ax, step) }"));
  const float* A = f.data("A");
  const float* B = f.data("B");
  const float* C = f.data("C");
  check(f, "C", [&](int64_t o, std::vector<Cand>& c) {
    const Dims i = unravel(o, {2, 5, 4});
    if (i[1] < 3) c.push_back({0, ravel(i, {2, 3, 4}), A[ravel(i, {2, 3, 4})]});
    else c.push_back({1, ravel({i[0], i[1] - 3, i[2]}, {2, 2, 4}), B[ravel({i[0], i[1] - 3, i[2]}, {2, 2, 4})]});
  });
  check(f, "P", [&](int64_t o, std::vector<Cand>& c) {
    const Dims i = unravel(o, {2, 1, 4});
    c.push_back({0, ravel(i, {2, 5, 4}), C[ravel(i, {2, 5, 4})]});
  });
  check(f, "Q", [&](int64_t o, std::vector<Cand>& c) {
    const Dims i = unravel(o, {2, 4, 4});
    const int64_t e = ravel({i[0], i[1] + 1, i[2]}, {2, 5, 4});
    c.push_back({0, e, C[e]});
  });
  // Slice: axis 1 from 4 down by 3 -> rows 4, 1; axis 2 from 0 by 3 -> cols 0, 3.
  ASSERT_EQ(f.shape("S"), (Dims{2, 2, 2}));
  check(f, "S", [&](int64_t o, std::vector<Cand>& c) {
    const Dims i = unravel(o, {2, 2, 2});
    const int64_t e = ravel({i[0], 4 - 3 * i[1], 3 * i[2]}, {2, 5, 4});
    c.push_back({0, e, C[e]});
  });
}

TEST(Connect, ReshapeFlattenTransposeSqueeze) {
  Fixture f(model_text("(float[2,3,4] X) => (float[6,4] R, float[2,12] F, float[4,2,3] T, float[2,3,4,1] U, float[2,3,4] S) <int64[2] shp = {6, 4}, int64[1] ax = {3}> { "
                       "R = Reshape(X, shp) F = Flatten<axis=1>(X) T = Transpose<perm=[2,0,1]>(X) U = Unsqueeze(X, ax) S = Squeeze(U, ax) }"));
  const float* X = f.data("X");
  const float* U = f.data("U");
  check(f, "R", [&](int64_t o, std::vector<Cand>& c) { c.push_back({0, o, X[o]}); });
  check(f, "F", [&](int64_t o, std::vector<Cand>& c) { c.push_back({0, o, X[o]}); });
  check(f, "U", [&](int64_t o, std::vector<Cand>& c) { c.push_back({0, o, X[o]}); });
  check(f, "S", [&](int64_t o, std::vector<Cand>& c) { c.push_back({0, o, U[o]}); });
  check(f, "T", [&](int64_t o, std::vector<Cand>& c) {
    const Dims t = unravel(o, {4, 2, 3});
    const int64_t e = ravel({t[1], t[2], t[0]}, {2, 3, 4});
    c.push_back({0, e, X[e]});
  });
}

TEST(Connect, ExpandTilePadDepthToSpace) {
  Fixture f(model_text("(float[3,1] X, float[1,8,2,3] Z) => (float[2,3,4] E, float[6,2] T, float[9,4] P, float[1,2,4,6] D) <int64[3] es = {2, 1, 4}, "
                       "int64[2] reps = {2, 2}, int64[4] pads = {1, 1, 2, 1}> { E = Expand(X, es) T = Tile(X, reps) P = Pad<mode=\"reflect\">(X2, pads) "
                       "X2 = Tile(X, reps) D = DepthToSpace<blocksize=2, mode=\"CRD\">(Z) }"));
  const float* X = f.data("X");
  const float* X2 = f.data("X2");
  const float* Z = f.data("Z");
  check(f, "E", [&](int64_t o, std::vector<Cand>& c) { c.push_back({0, unravel(o, {2, 3, 4})[1], X[unravel(o, {2, 3, 4})[1]]}); });
  check(f, "T", [&](int64_t o, std::vector<Cand>& c) { c.push_back({0, (o / 2) % 3, X[(o / 2) % 3]}); });
  check(f, "P", [&](int64_t o, std::vector<Cand>& c) {
    // Reflect of [6, 2] padded by (1, 1) before and (2, 1) after.
    auto refl = [](int64_t i, int64_t n) { return i < 0 ? -i : i >= n ? 2 * (n - 1) - i : i; };
    const int64_t r = refl(o / 4 - 1, 6), col = refl(o % 4 - 1, 2);
    c.push_back({0, r * 2 + col, X2[r * 2 + col]});
  });
  // CRD: out[n, c, h*2+a, w*2+b] = Z[n, c*4 + a*2 + b, h, w].
  check(f, "D", [&](int64_t o, std::vector<Cand>& c) {
    const Dims i = unravel(o, {1, 2, 4, 6});
    const int64_t e = ravel({0, i[1] * 4 + (i[2] % 2) * 2 + i[3] % 2, i[2] / 2, i[3] / 2}, {1, 8, 2, 3});
    c.push_back({0, e, Z[e]});
  });
}

TEST(Connect, GatherWithConstantAndRuntimeIndices) {
  Fixture f(model_text("(float[5,3] X, int64[2,2] I) => (float[2,2,3] G, float[5,2] H, float[2,3] N) <int64[2] ci = {2, -1}, int64[1] ax = {1}> { "
                       "G = Gather(X, I) H = Gather<axis=1>(X, ci) J = Unsqueeze(ci, ax) N = GatherND(X, J) }"),
            {{"I", {4, 0, 0, 2}}});
  const float* X = f.data("X");
  const int64_t I[] = {4, 0, 0, 2};
  // Runtime indices: found by value without int_inputs, read with them.
  for (bool with_ints : {false, true})
    check(f, "G", [&](int64_t o, std::vector<Cand>& c) { c.push_back({0, I[o / 3] * 3 + o % 3, X[I[o / 3] * 3 + o % 3]}); }, 4, with_ints);
  check(f, "H", [&](int64_t o, std::vector<Cand>& c) {
    const int64_t col = (o % 2) == 0 ? 2 : 2;
    c.push_back({0, (o / 2) * 3 + col, X[(o / 2) * 3 + col]});
  });
  // GatherND with J = [[2], [-1]]: rows 2 and 4.
  check(f, "N", [&](int64_t o, std::vector<Cand>& c) {
    const int64_t row = o / 3 == 0 ? 2 : 4;
    c.push_back({0, row * 3 + o % 3, X[row * 3 + o % 3]});
  });
}

TEST(Connect, ReduceSoftmaxLayerNorm) {
  Fixture f(model_text("(float[2,3,4] X) => (float[2,1,4] S, float[3] M, float[2,3,4] P, float[2,3,4] L, float[2,3,1] A) <int64[1] ax = {1}, " + init("g", {3, 4}, 9) +
                       "> { S = ReduceSum(X, ax) X2 = Identity(X) M = ReduceMean<axes=[0,2], keepdims=0>(X2) P = Softmax<axis=1>(X) "
                       "L = LayerNormalization<axis=1>(X, g) A = ReduceMax<axes=[2]>(X) }"));
  const float* X = f.data("X");
  const float* X2 = f.data("X2");
  const float* g = f.data("g");
  check(f, "S", [&](int64_t o, std::vector<Cand>& c) {
    for (int64_t e = 0; e < 24; ++e)
      if (e / 12 == o / 4 && e % 4 == o % 4) c.push_back({0, e, X[e]});
  });
  check(f, "M", [&](int64_t o, std::vector<Cand>& c) {
    for (int64_t e = 0; e < 24; ++e)
      if ((e / 4) % 3 == o) c.push_back({0, e, (1.f / 8) * X2[e]});
  });
  check(f, "A", [&](int64_t o, std::vector<Cand>& c) {
    for (int64_t e = 0; e < 24; ++e)
      if (e / 4 == o) c.push_back({0, e, X[e]});
  });
  // Softmax: a logit weighted by its share of the line, a·p (p: the output at its place).
  const float* P = f.data("P");
  for (int k : {2, 16})
    check(f, "P", [&](int64_t o, std::vector<Cand>& c) {
      for (int64_t e = 0; e < 24; ++e)
        if (e / 12 == o / 12 && e % 4 == o % 4) c.push_back({0, e, X[e] * P[e]});
    }, k);
  check(f, "L", [&](int64_t o, std::vector<Cand>& c) {
    for (int64_t e = 0; e < 24; ++e)
      if (e / 12 == o / 12) c.push_back({0, e, g[o % 12] * X[e]});
  });
}

TEST(Connect, InstanceNormLrnCumSum) {
  Fixture f(model_text("(float[2,3,2,3] X) => (float[2,3,2,3] I, float[2,3,2,3] L, float[2,3,2,3] C, float[2,3,2,3] R) <" + init("s", {3}, 4) + ", " +
                       init("b", {3}, 5) + ", int64[1] ax = {1}> { I = InstanceNormalization(X, s, b) L = LRN<size=3>(X) C = CumSum(X, ax) "
                       "R = CumSum<exclusive=1, reverse=1>(X, ax) }"));
  const float* X = f.data("X");
  const float* s = f.data("s");
  check(f, "I", [&](int64_t o, std::vector<Cand>& c) {
    for (int64_t e = (o / 6) * 6; e < (o / 6 + 1) * 6; ++e) c.push_back({0, e, s[(o / 6) % 3] * X[e]});
  });
  check(f, "L", [&](int64_t o, std::vector<Cand>& c) {
    const int64_t ch = (o / 6) % 3;
    for (int64_t k = std::max<int64_t>(0, ch - 1); k <= std::min<int64_t>(2, ch + 1); ++k) {
      const int64_t e = o + (k - ch) * 6;
      c.push_back({0, e, X[e]});
    }
  });
  check(f, "C", [&](int64_t o, std::vector<Cand>& c) {
    const int64_t ch = (o / 6) % 3;
    for (int64_t k = 0; k <= ch; ++k) c.push_back({0, o + (k - ch) * 6, X[o + (k - ch) * 6]});
  }, 2);
  check(f, "R", [&](int64_t o, std::vector<Cand>& c) {
    const int64_t ch = (o / 6) % 3;
    for (int64_t k = ch + 1; k < 3; ++k) c.push_back({0, o + (k - ch) * 6, X[o + (k - ch) * 6]});
  }, 2);
}

namespace {

// Source coordinate along one axis by the ONNX Resize definition.
double source_coord(const std::string& mode, int64_t o, int64_t in, int64_t out) {
  const double scale = double(out) / double(in);
  if (mode == "align_corners") return out == 1 ? 0 : double(o) * double(in - 1) / double(out - 1);
  if (mode == "asymmetric") return double(o) / scale;
  return (double(o) + 0.5) / scale - 0.5;  // half_pixel
}

void check_resize(const std::string& mode, const std::string& coord, const std::string& nearest_mode, const Dims& xs, const Dims& ys) {
  const std::string attrs = "mode=\"" + mode + "\", coordinate_transformation_mode=\"" + coord + "\", nearest_mode=\"" + nearest_mode + "\"";
  Fixture f(model_text("(float[" + [&] {
    std::string s;
    for (size_t i = 0; i < xs.size(); ++i) s += (i ? "," : "") + std::to_string(xs[i]);
    return s;
  }() + "] X) => (float[" + std::to_string(ys[0]) + "," + std::to_string(ys[1]) + "," + std::to_string(ys[2]) + "," + std::to_string(ys[3]) +
                       "] Y) <int64[4] sz = {" + std::to_string(ys[0]) + "," + std::to_string(ys[1]) + "," + std::to_string(ys[2]) + "," +
                       std::to_string(ys[3]) + "}> { Y = Resize<" + attrs + ">(X, , , sz) }"));
  ASSERT_EQ(f.shape("Y"), ys);
  const float* X = f.data("X");
  check(f, "Y", [&](int64_t o, std::vector<Cand>& c) {
    const Dims oi = unravel(o, ys);
    // Per axis: (index, weight) pairs.
    std::vector<std::vector<std::pair<int64_t, double>>> taps(4);
    for (size_t d = 0; d < 4; ++d) {
      if (xs[d] == ys[d]) {
        taps[d] = {{oi[d], 1.0}};
        continue;
      }
      double x = source_coord(coord, oi[d], xs[d], ys[d]);
      if (mode == "nearest") {
        int64_t i = nearest_mode == "floor" ? int64_t(std::floor(x)) : nearest_mode == "ceil" ? int64_t(std::ceil(x))
                    : nearest_mode == "round_prefer_ceil" ? int64_t(std::floor(x + 0.5)) : int64_t(std::ceil(x - 0.5));
        taps[d] = {{std::clamp<int64_t>(i, 0, xs[d] - 1), 1.0}};
      } else {
        x = std::clamp(x, 0.0, double(xs[d] - 1));
        const int64_t lo = int64_t(std::floor(x));
        const float w1 = float(x - double(lo));
        taps[d] = {{lo, 1.0 - w1}};
        if (w1 != 0.f) taps[d].push_back({std::min(lo + 1, xs[d] - 1), w1});
      }
    }
    for (auto [a, wa] : taps[0])
      for (auto [b, wb] : taps[1])
        for (auto [h, wh] : taps[2])
          for (auto [w, ww] : taps[3]) {
            double wt = 1;
            for (double t : {wa, wb, wh, ww})
              if (t != 1.0) wt *= t;
            if (wt == 0) continue;
            const int64_t e = ravel({a, b, h, w}, xs);
            c.push_back({0, e, float(wt) * X[e]});
          }
  });
}

}  // namespace

TEST(Connect, ResizeNearest) {
  check_resize("nearest", "asymmetric", "floor", {1, 2, 3, 4}, {1, 2, 7, 9});
  check_resize("nearest", "half_pixel", "round_prefer_floor", {1, 2, 5, 4}, {1, 2, 3, 8});
}
TEST(Connect, ResizeLinear) {
  check_resize("linear", "half_pixel", "round_prefer_floor", {1, 2, 3, 4}, {1, 2, 7, 9});
  check_resize("linear", "align_corners", "round_prefer_floor", {1, 1, 4, 4}, {1, 1, 7, 3});
}

TEST(Connect, TopKAndRecurrent) {
  Fixture f(model_text("(float[2,6] X, float[3,2,4] S) => (float[2,3] V, int64[2,3] I, float[3,1,2,5] Y) <int64[1] k = {3}, " + init("W", {1, 20, 4}, 3) + ", " +
                       init("R", {1, 20, 5}, 4) + "> { V, I = TopK(X, k) Y, H, C = LSTM<hidden_size=5>(S, W, R) }"));
  const float* X = f.data("X");
  const float* S = f.data("S");
  const float* W = f.data("W");
  check(f, "V", [&](int64_t o, std::vector<Cand>& c) {
    for (int64_t e = (o / 3) * 6; e < (o / 3 + 1) * 6; ++e) c.push_back({0, e, X[e]});
  });
  // Y [S=3, D=1, B=2, H=5]: x[t, b, :] through the cell gate (index 3) of W.
  check(f, "Y", [&](int64_t o, std::vector<Cand>& c) {
    const Dims i = unravel(o, {3, 1, 2, 5});
    for (int64_t k = 0; k < 4; ++k) c.push_back({0, (i[0] * 2 + i[2]) * 4 + k, W[(3 * 5 + i[3]) * 4 + k] * S[(i[0] * 2 + i[2]) * 4 + k]});
  });
}

TEST(Connect, BadShapesOfferNothing) {
  Fixture f(model_text("(float[1,2,5,5] X) => (float[1,3,3,3] Y) <" + init("W", {3, 2, 3, 3}, 1) + "> { Y = Conv(X, W) }"));
  const auto [node, slot] = f.producer("Y");
  NodeValues nv = f.node_values(*node);
  const Dims wrong{1, 3, 4, 4};  // does not match the geometry
  nv.outputs[0].shape = wrong;
  nv.outputs[0].data = {};
  TopK top(4, 0, 48);
  find_connector("", "Conv")(nv, slot, top);
  EXPECT_EQ(top.candidates(), 0u);
  // A range past the output's end.
  NodeValues ok = f.node_values(*node);
  TopK past(4, 20, 100);
  find_connector("", "Conv")(ok, slot, past);
  EXPECT_EQ(past.candidates(), 0u);
  // Missing weight.
  ok.inputs[1] = {};
  TopK none(4, 0, 27);
  find_connector("", "Conv")(ok, slot, none);
  EXPECT_EQ(none.candidates(), 0u);
}
