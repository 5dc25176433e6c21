// Connectors of the weighted and windowed ops (Conv, ConvTranspose, Gemm, MatMul, pooling)
// against brute force: every input element against every weight position, by the op's
// definition.
#include "connect_support.h"

using namespace nnxr;
using namespace nnxr::scene;
using namespace nnxr::scene::test;

namespace {

std::string dims_text(const Dims& d) {
  std::string s;
  for (size_t i = 0; i < d.size(); ++i) s += (i ? "," : "") + std::to_string(d[i]);
  return s;
}

struct ConvCase {
  Dims x, w;  // X [N, C, in...], W [M, C/group, k...]
  int group = 1;
  Dims strides, dils, pads;  // empty: defaults
  std::string auto_pad;      // "" = NOTSET
};

// Output dims and begin pads by the ONNX definition.
void conv_geometry(const ConvCase& c, Dims& out, Dims& pb, Dims& st, Dims& dl) {
  const size_t S = c.x.size() - 2;
  st = c.strides.empty() ? Dims(S, 1) : c.strides;
  dl = c.dils.empty() ? Dims(S, 1) : c.dils;
  out.assign(S, 0);
  pb.assign(S, 0);
  for (size_t i = 0; i < S; ++i) {
    const int64_t in = c.x[2 + i], k = c.w[2 + i], ek = (k - 1) * dl[i] + 1;
    if (c.auto_pad == "SAME_UPPER" || c.auto_pad == "SAME_LOWER") {
      out[i] = (in + st[i] - 1) / st[i];
      const int64_t total = std::max<int64_t>(0, (out[i] - 1) * st[i] + ek - in);
      pb[i] = c.auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
    } else {
      const int64_t b = c.pads.empty() ? 0 : c.pads[i], e = c.pads.empty() ? 0 : c.pads[i + S];
      pb[i] = b;
      out[i] = (in + b + e - ek) / st[i] + 1;
    }
  }
}

void check_conv(const ConvCase& c, int k = 4) {
  Dims out, pb, st, dl;
  conv_geometry(c, out, pb, st, dl);
  Dims ys{c.x[0], c.w[0]};
  ys.insert(ys.end(), out.begin(), out.end());
  std::string attrs = "group=" + std::to_string(c.group);
  if (!c.strides.empty()) attrs += ", strides=[" + dims_text(c.strides) + "]";
  if (!c.dils.empty()) attrs += ", dilations=[" + dims_text(c.dils) + "]";
  if (!c.pads.empty()) attrs += ", pads=[" + dims_text(c.pads) + "]";
  if (!c.auto_pad.empty()) attrs += ", auto_pad=\"" + c.auto_pad + "\"";
  const std::string text = model_text("(float[" + dims_text(c.x) + "] X) => (float[" + dims_text(ys) + "] Y) <" + init("W", c.w, 7) + "> { Y = Conv<" +
                                      attrs + ">(X, W) }");
  Fixture f(text);
  ASSERT_EQ(f.shape("Y"), ys);
  const float* X = f.data("X");
  const float* W = f.data("W");
  const int64_t C = c.x[1], M = c.w[0], Cg = C / c.group, Mg = M / c.group;
  const Dims xin(c.x.begin() + 2, c.x.end()), kd(c.w.begin() + 2, c.w.end());
  const size_t S = xin.size();
  check(
      f, "Y",
      [&](int64_t o, std::vector<Cand>& cands) {
        const Dims oi = unravel(o, ys);
        const int64_t n = oi[0], m = oi[1];
        for (int64_t e = 0; e < count(c.x); ++e) {
          const Dims xi = unravel(e, c.x);
          if (xi[0] != n || xi[1] / Cg != m / Mg) continue;
          for (int64_t q = 0; q < count(kd); ++q) {
            const Dims ki = unravel(q, kd);
            bool hit = true;
            for (size_t d = 0; d < S; ++d) hit = hit && oi[2 + d] * st[d] - pb[d] + ki[d] * dl[d] == xi[2 + d];
            if (hit) cands.push_back({0, e, W[(m * Cg + xi[1] % Cg) * count(kd) + q] * X[e]});
          }
        }
      },
      k);
}

}  // namespace

TEST(Connect, ConvPlain) { check_conv({.x = {1, 3, 6, 6}, .w = {4, 3, 3, 3}}); }
TEST(Connect, ConvPointwise) { check_conv({.x = {2, 5, 4, 5}, .w = {3, 5, 1, 1}}); }
TEST(Connect, ConvGrouped) { check_conv({.x = {1, 4, 7, 7}, .w = {6, 2, 3, 3}, .group = 2, .pads = {1, 1, 1, 1}}); }
TEST(Connect, ConvDepthwiseStrided) { check_conv({.x = {1, 4, 9, 8}, .w = {4, 1, 3, 3}, .group = 4, .strides = {2, 2}, .pads = {1, 1, 1, 1}}); }
TEST(Connect, ConvDilatedAsymmetricPads) {
  check_conv({.x = {1, 2, 9, 10}, .w = {3, 2, 3, 2}, .strides = {1, 2}, .dils = {2, 3}, .pads = {2, 0, 1, 3}}, 5);
}
TEST(Connect, ConvSameUpper) { check_conv({.x = {1, 2, 7, 6}, .w = {2, 2, 4, 3}, .strides = {2, 2}, .auto_pad = "SAME_UPPER"}); }
TEST(Connect, ConvSameLower) { check_conv({.x = {1, 2, 7, 6}, .w = {2, 2, 4, 3}, .strides = {2, 1}, .auto_pad = "SAME_LOWER"}); }
TEST(Connect, Conv1d) { check_conv({.x = {2, 3, 11}, .w = {4, 3, 3}, .strides = {2}, .pads = {1, 2}}); }
TEST(Connect, Conv3d) { check_conv({.x = {1, 2, 4, 5, 4}, .w = {4, 1, 2, 3, 2}, .group = 2, .strides = {1, 2, 1}, .pads = {1, 1, 0, 0, 1, 1}}); }
TEST(Connect, ConvLongRowsUseTheFastPath) {
  // Rows longer than 8 so the blocked loop runs, with k = 1 and k = 16.
  check_conv({.x = {1, 3, 5, 37}, .w = {2, 3, 3, 3}, .pads = {1, 1, 1, 1}}, 1);
  check_conv({.x = {1, 20, 3, 19}, .w = {2, 20, 1, 1}}, 16);
}

TEST(Connect, ConvPointwiseSkipsWeakBlocks) {
  // Pointwise, grouped, batch 2, 99 positions per plane (blocks of 32 and a partial one), ranges
  // not aligned to blocks. The input is scaled by 1e-3 in a pattern of (channel, block), so that
  // many channels cannot beat a block's weakest kept score and are skipped there.
  const int64_t C = 24, HW = 99, M = 6, Cg = 12;
  std::string scale = "float[1,24,9,11] S = {";
  for (int64_t c = 0; c < C; ++c)
    for (int64_t p = 0; p < HW; ++p) scale += std::string(c + p ? ", " : "") + ((p / 32 + c) % 3 == 0 ? "1" : "0.001");
  scale += "}";
  Fixture f(model_text("(float[2,24,9,11] X) => (float[2,6,9,11] Y) <" + init("W", {M, Cg, 1, 1}, 5) + ", " + scale +
                       "> { Z = Mul(X, S) Y = Conv<group=2>(Z, W) }"));
  const float* Z = f.data("Z");
  const float* W = f.data("W");
  for (const int k : {3, 8})
    check(
        f, "Y",
        [&](int64_t o, std::vector<Cand>& cands) {
          const int64_t p = o % HW, m = (o / HW) % M, n = o / (HW * M), grp = m / (M / 2);
          for (int64_t c = 0; c < Cg; ++c) {
            const int64_t src = (n * C + grp * Cg + c) * HW + p;
            cands.push_back({0, src, W[m * Cg + c] * Z[src]});
          }
        },
        k);
}

TEST(Connect, ConvTranspose) {
  // X [1, 4, 3, 4], W [4, 3, 3, 2] (C, M/group), group 2 -> M = 6; strides 2, pads, output_padding.
  const Dims xs{1, 4, 3, 4}, ws{4, 3, 3, 2};
  const Dims st{2, 3}, pb{1, 0}, pe{0, 1}, opad{1, 0};
  const int64_t group = 2, C = 4, M = 6, Cg = 2, Mg = 3;
  Dims ys{1, M, 0, 0};
  for (size_t i = 0; i < 2; ++i) ys[2 + i] = st[i] * (xs[2 + i] - 1) + opad[i] + (ws[2 + i] - 1) + 1 - pb[i] - pe[i];
  Fixture f(model_text("(float[1,4,3,4] X) => (float[" + dims_text(ys) + "] Y) <" + init("W", ws, 3) +
                       "> { Y = ConvTranspose<group=2, strides=[2,3], pads=[1,0,0,1], output_padding=[1,0]>(X, W) }"));
  ASSERT_EQ(f.shape("Y"), ys);
  const float* X = f.data("X");
  const float* W = f.data("W");
  (void)group;
  (void)C;
  check(f, "Y", [&](int64_t o, std::vector<Cand>& cands) {
    const Dims oi = unravel(o, ys);
    for (int64_t e = 0; e < count(xs); ++e) {
      const Dims xi = unravel(e, xs);
      if (xi[1] / Cg != oi[1] / Mg) continue;
      for (int64_t kh = 0; kh < ws[2]; ++kh)
        for (int64_t kw = 0; kw < ws[3]; ++kw)
          if (xi[2] * st[0] - pb[0] + kh == oi[2] && xi[3] * st[1] - pb[1] + kw == oi[3])
            cands.push_back({0, e, W[((xi[1] * Mg + oi[1] % Mg) * ws[2] + kh) * ws[3] + kw] * X[e]});
    }
  });
}

namespace {

// Gemm: sources by which side is an initializer.
void check_gemm(bool ta, bool tb, float alpha, bool a_weight, bool b_weight, int64_t M = 5, int64_t K = 19, int64_t N = 11, int k = 4) {
  const Dims as = ta ? Dims{K, M} : Dims{M, K}, bs = tb ? Dims{N, K} : Dims{K, N};
  std::string inputs, inits;
  auto side = [&](const char* name, const Dims& s, bool weight, uint32_t seed) {
    if (weight) inits += std::string(inits.empty() ? "" : ", ") + init(name, s, seed);
    else inputs += std::string(inputs.empty() ? "" : ", ") + "float[" + dims_text(s) + "] " + name;
  };
  side("A", as, a_weight, 11);
  side("B", bs, b_weight, 12);
  inits += std::string(inits.empty() ? "" : ", ") + init("C", {N}, 13);
  const std::string attrs = "transA=" + std::to_string(int(ta)) + ", transB=" + std::to_string(int(tb)) + ", alpha=" + std::to_string(alpha);
  Fixture f(model_text("(" + inputs + ") => (float[" + std::to_string(M) + "," + std::to_string(N) + "] Y) <" + inits + "> { Y = Gemm<" + attrs +
                       ">(A, B, C) }"));
  const float* A = f.data("A");
  const float* B = f.data("B");
  check(
      f, "Y",
      [&](int64_t o, std::vector<Cand>& cands) {
        const int64_t i = o / N, j = o % N;
        for (int64_t kk = 0; kk < K; ++kk) {
          const int64_t ai = ta ? kk * M + i : i * K + kk, bi = tb ? j * K + kk : kk * N + j;
          if (!a_weight) cands.push_back({0, ai, (alpha * B[bi]) * A[ai]});
          if (!b_weight) cands.push_back({1, bi, a_weight ? (alpha * A[ai]) * B[bi] : (alpha * B[bi]) * A[ai]});
        }
      },
      k);
}

}  // namespace

TEST(Connect, GemmActivationTimesWeight) { check_gemm(false, false, 1.f, false, true); }
TEST(Connect, GemmTransposedWeight) { check_gemm(false, true, 0.5f, false, true); }
TEST(Connect, GemmTransposedActivation) { check_gemm(true, true, 2.f, false, true); }
TEST(Connect, GemmTransposedActivationPlainWeight) { check_gemm(true, false, 1.f, false, true, 3, 40, 17, 6); }
TEST(Connect, GemmWeightTimesActivation) { check_gemm(false, false, 1.f, true, false); }
TEST(Connect, GemmTwoActivations) { check_gemm(false, true, 1.f, false, false); }

namespace {

// MatMul with numpy broadcasting; `a_weight`/`b_weight` make a side an initializer.
void check_matmul(const Dims& as, const Dims& bs, bool a_weight, bool b_weight, int k = 4) {
  std::string inputs, inits;
  auto side = [&](const char* name, const Dims& s, bool weight, uint32_t seed) {
    if (weight) inits += std::string(inits.empty() ? "" : ", ") + init(name, s, seed);
    else inputs += std::string(inputs.empty() ? "" : ", ") + "float[" + dims_text(s) + "] " + name;
  };
  side("A", as, a_weight, 21);
  side("B", bs, b_weight, 22);
  // Output shape by numpy rules.
  Dims a2 = as, b2 = bs;
  if (a2.size() == 1) a2.insert(a2.begin(), 1);
  if (b2.size() == 1) b2.push_back(1);
  const size_t r = std::max(a2.size(), b2.size());
  while (a2.size() < r) a2.insert(a2.begin(), 1);
  while (b2.size() < r) b2.insert(b2.begin(), 1);
  Dims full(r);  // broadcast [batch..., M, N]
  for (size_t d = 0; d + 2 < r; ++d) full[d] = std::max(a2[d], b2[d]);
  full[r - 2] = a2[r - 2];
  full[r - 1] = b2[r - 1];
  const int64_t K = a2[r - 1];
  Dims ys(full.begin(), full.end() - 2);
  if (as.size() > 1) ys.push_back(full[r - 2]);
  if (bs.size() > 1) ys.push_back(full[r - 1]);
  const std::string sig = "(" + inputs + ") => (float[" + dims_text(ys) + "] Y)";
  Fixture f(model_text(sig + (inits.empty() ? "" : " <" + inits + ">") + " { Y = MatMul(A, B) }"));
  ASSERT_EQ(f.shape("Y"), ys);
  const float* A = f.data("A");
  const float* B = f.data("B");
  check(
      f, "Y",
      [&](int64_t o, std::vector<Cand>& cands) {
        const Dims oi = unravel(o, full);  // same flat order as ys
        Dims ai(r), bi(r);
        for (size_t d = 0; d + 2 < r; ++d) {
          ai[d] = a2[d] == 1 ? 0 : oi[d];
          bi[d] = b2[d] == 1 ? 0 : oi[d];
        }
        for (int64_t kk = 0; kk < K; ++kk) {
          ai[r - 2] = oi[r - 2];
          ai[r - 1] = kk;
          bi[r - 2] = kk;
          bi[r - 1] = oi[r - 1];
          const int64_t ea = ravel(ai, a2), eb = ravel(bi, b2);
          if (!a_weight) cands.push_back({0, ea, B[eb] * A[ea]});
          if (!b_weight) cands.push_back({1, eb, a_weight ? A[ea] * B[eb] : B[eb] * A[ea]});
        }
      },
      k);
}

}  // namespace

TEST(Connect, MatMulWeight) { check_matmul({2, 3, 17}, {17, 12}, false, true); }
TEST(Connect, MatMulBatchedBroadcast) { check_matmul({2, 1, 4, 9}, {3, 9, 5}, false, false); }
TEST(Connect, MatMulWeightOnTheLeft) { check_matmul({6, 10}, {2, 10, 7}, true, false); }
TEST(Connect, MatMulOneDimensional) {
  check_matmul({13}, {3, 13, 4}, false, true);
  check_matmul({2, 5, 13}, {13}, false, false);
}

namespace {

struct PoolCase {
  std::string op;
  Dims x, kernel, strides, pads;
  bool ceil = false, include_pad = false;
};

void check_pool(const PoolCase& c) {
  const size_t S = c.kernel.size();
  const Dims in(c.x.begin() + 2, c.x.end());
  const Dims st = c.strides.empty() ? Dims(S, 1) : c.strides;
  Dims ys{c.x[0], c.x[1]}, pb(S, 0), pe(S, 0);
  for (size_t i = 0; i < S; ++i) {
    if (!c.pads.empty()) {
      pb[i] = c.pads[i];
      pe[i] = c.pads[i + S];
    }
    const int64_t span = in[i] + pb[i] + pe[i] - c.kernel[i];
    int64_t o = (c.ceil ? (span + st[i] - 1) / st[i] : span / st[i]) + 1;
    if (c.ceil && (o - 1) * st[i] >= in[i] + pb[i]) --o;
    ys.push_back(o);
  }
  std::string attrs = "kernel_shape=[" + dims_text(c.kernel) + "]";
  if (!c.strides.empty()) attrs += ", strides=[" + dims_text(c.strides) + "]";
  if (!c.pads.empty()) attrs += ", pads=[" + dims_text(c.pads) + "]";
  if (c.ceil) attrs += ", ceil_mode=1";
  if (c.include_pad) attrs += ", count_include_pad=1";
  Fixture f(model_text("(float[" + dims_text(c.x) + "] X) => (float[" + dims_text(ys) + "] Y) { Y = " + c.op + "<" + attrs + ">(X) }"));
  ASSERT_EQ(f.shape("Y"), ys);
  const float* X = f.data("X");
  check(f, "Y", [&](int64_t o, std::vector<Cand>& cands) {
    const Dims oi = unravel(o, ys);
    size_t first = cands.size();
    int64_t padded = 1;  // window positions inside the padded input
    for (size_t d = 0; d < S; ++d) {
      int64_t cnt = 0;
      for (int64_t j = 0; j < c.kernel[d]; ++j) cnt += oi[2 + d] * st[d] - pb[d] + j < in[d] + pe[d];
      padded *= cnt;
    }
    for (int64_t e = 0; e < count(c.x); ++e) {
      const Dims xi = unravel(e, c.x);
      if (xi[0] != oi[0] || xi[1] != oi[1]) continue;
      bool inside = true;
      for (size_t d = 0; d < S; ++d) {
        const int64_t j = xi[2 + d] - (oi[2 + d] * st[d] - pb[d]);
        inside = inside && j >= 0 && j < c.kernel[d];
      }
      if (inside) cands.push_back({0, e, X[e]});
    }
    if (c.op == "AveragePool") {
      const float div = float(c.include_pad ? padded : int64_t(cands.size() - first));
      for (size_t i = first; i < cands.size(); ++i) cands[i].contribution = cands[i].contribution / div;
    }
  });
}

}  // namespace

TEST(Connect, MaxPoolPadsStrides) { check_pool({"MaxPool", {1, 2, 7, 7}, {3, 3}, {2, 2}, {1, 1, 1, 1}}); }
TEST(Connect, MaxPoolCeilMode) { check_pool({"MaxPool", {1, 2, 8, 7}, {3, 2}, {2, 2}, {}, true}); }
TEST(Connect, AveragePoolExcludePad) { check_pool({"AveragePool", {2, 3, 6, 5}, {3, 3}, {2, 1}, {1, 0, 1, 2}}); }
TEST(Connect, AveragePoolIncludePadCeil) { check_pool({"AveragePool", {1, 2, 7, 6}, {2, 3}, {2, 2}, {1, 1, 0, 1}, true, true}); }
TEST(Connect, LpPool1d) { check_pool({"LpPool", {1, 3, 9}, {3}, {2}, {1, 1}}); }

TEST(Connect, GlobalAveragePool) {
  Fixture f(model_text("(float[2,3,5,4] X) => (float[2,3,1,1] Y) { Y = GlobalAveragePool(X) }"));
  const float* X = f.data("X");
  check(f, "Y", [&](int64_t o, std::vector<Cand>& cands) {
    for (int64_t e = o * 20; e < (o + 1) * 20; ++e) cands.push_back({0, e, X[e] / 20.f});
  });
}

TEST(Connect, GlobalMaxPool) {
  Fixture f(model_text("(float[1,4,3,3] X) => (float[1,4,1,1] Y) { Y = GlobalMaxPool(X) }"));
  const float* X = f.data("X");
  check(f, "Y", [&](int64_t o, std::vector<Cand>& cands) {
    for (int64_t e = o * 9; e < (o + 1) * 9; ++e) cands.push_back({0, e, X[e]});
  });
}
