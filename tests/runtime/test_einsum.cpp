// Einsum against hand-written loops on random shapes (matmul, batched matmul with and without the
// BLAS path, transpose, sums, trace, diagonal, outer product, ellipsis broadcasting, implicit
// output, three operands, integers) and its errors on bad equations and shapes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <random>

#include "support.h"

using namespace nnxr;
using namespace nnxr::runtime;

namespace {

std::string model_text(const std::string& eq, const std::vector<std::string>& ins, const std::vector<std::vector<int64_t>>& shapes,
                       const std::string& type = "float") {
  std::string args, params;
  for (size_t i = 0; i < ins.size(); ++i) {
    args += (i ? ", " : "") + ins[i];
    std::string dims;
    for (size_t d = 0; d < shapes[i].size(); ++d) dims += (d ? "," : "") + std::to_string(shapes[i][d]);
    params += std::string(i ? ", " : "") + type + "[" + dims + "] " + ins[i];
  }
  // The output's rank, declared with symbolic dims: letters of the output term (or, implicitly,
  // letters that occur once) plus the broadcast ellipsis rank.
  std::string lhs = eq, rhs;
  const bool expl = eq.find("->") != std::string::npos;
  if (expl) {
    lhs = eq.substr(0, eq.find("->"));
    rhs = eq.substr(eq.find("->") + 2);
  }
  size_t erank = 0, term = 0, letters = 0;
  bool ellipsis = false;
  for (size_t i = 0; i <= lhs.size(); ++i) {
    if (i == lhs.size() || lhs[i] == ',') {
      if (ellipsis && term < shapes.size()) erank = std::max(erank, shapes[term].size() - letters);
      ++term, letters = 0, ellipsis = false;
    } else if (lhs[i] == '.') {
      ellipsis = true;
    } else if (std::isalpha(static_cast<unsigned char>(lhs[i]))) {
      ++letters;
    }
  }
  size_t out_rank = 0;
  if (expl) {
    for (char c : rhs) out_rank += std::isalpha(static_cast<unsigned char>(c)) ? 1 : 0;
    if (rhs.find("...") != std::string::npos) out_rank += erank;
  } else {
    for (char c : lhs)
      if (std::isalpha(static_cast<unsigned char>(c)) && std::count(lhs.begin(), lhs.end(), c) == 1) ++out_rank;
    out_rank += erank;
  }
  std::string odims;
  for (size_t d = 0; d < out_rank; ++d) odims += (d ? ",O" : "O") + std::to_string(d);
  return R"(<ir_version: 8, opset_import: ["" : 13]> g ()" + params + ") => (" + type + (odims.empty() ? "" : "[" + odims + "]") + R"( Y) {
      Y = Einsum <equation = ")" + eq + R"("> ()" + args + R"() })";
}

// Runs the equation on float inputs; returns Y and its shape.
std::pair<std::vector<float>, std::vector<int64_t>> run(const std::string& eq, const std::vector<std::pair<std::vector<int64_t>, std::vector<float>>>& ins) {
  std::vector<std::string> names;
  std::vector<std::vector<int64_t>> shapes;
  for (size_t i = 0; i < ins.size(); ++i) {
    names.push_back("I" + std::to_string(i));
    shapes.push_back(ins[i].first);
  }
  Session s(test::plan_from_text(model_text(eq, names, shapes)));
  for (size_t i = 0; i < ins.size(); ++i) test::feed_f(s, names[i], ins[i].first, ins[i].second);
  s.run();
  return {test::values<float>(s, "Y"), test::shape_of(s, "Y")};
}

void expect_near(const std::vector<float>& got, const std::vector<double>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-4 * (1 + std::fabs(want[i]))) << what << " element " << i;
}

int64_t rnd(std::mt19937& rng, int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); }

}  // namespace

TEST(RuntimeEinsum, MatmulAndBatchedMatmul) {
  std::mt19937 rng(5);
  for (int iter = 0; iter < 12; ++iter) {
    const int64_t B = rnd(rng, 1, 3), M = rnd(rng, 1, 5), K = rnd(rng, 1, 6), N = rnd(rng, 1, 5);
    const auto a = test::random_floats(static_cast<size_t>(B * M * K), 10 + iter), b = test::random_floats(static_cast<size_t>(B * K * N), 50 + iter);
    // bij,bjk->bik (BLAS path) and the transposed layouts bji,bkj->bik.
    std::vector<double> want(static_cast<size_t>(B * M * N), 0.0);
    for (int64_t p = 0; p < B; ++p)
      for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j)
          for (int64_t k = 0; k < K; ++k) want[static_cast<size_t>((p * M + i) * N + j)] += double(a[static_cast<size_t>((p * M + i) * K + k)]) * b[static_cast<size_t>((p * K + k) * N + j)];
    auto [y, shape] = run("bij, bjk -> bik", {{{B, M, K}, a}, {{B, K, N}, b}});
    EXPECT_EQ(shape, (std::vector<int64_t>{B, M, N}));
    expect_near(y, want, "bij,bjk->bik");
    std::vector<float> at(a.size()), bt(b.size());
    for (int64_t p = 0; p < B; ++p)
      for (int64_t i = 0; i < M; ++i)
        for (int64_t k = 0; k < K; ++k) at[static_cast<size_t>((p * K + k) * M + i)] = a[static_cast<size_t>((p * M + i) * K + k)];
    for (int64_t p = 0; p < B; ++p)
      for (int64_t k = 0; k < K; ++k)
        for (int64_t j = 0; j < N; ++j) bt[static_cast<size_t>((p * N + j) * K + k)] = b[static_cast<size_t>((p * K + k) * N + j)];
    expect_near(run("bki,bjk->bij", {{{B, K, M}, at}, {{B, N, K}, bt}}).first, want, "bki,bjk->bij");
    // Output batch last: not a plain gemm layout, goes through the loop.
    auto [y2, s2] = run("bij,bjk->ikb", {{{B, M, K}, a}, {{B, K, N}, b}});
    EXPECT_EQ(s2, (std::vector<int64_t>{M, N, B}));
    std::vector<double> want2(want.size());
    for (int64_t p = 0; p < B; ++p)
      for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j) want2[static_cast<size_t>((i * N + j) * B + p)] = want[static_cast<size_t>((p * M + i) * N + j)];
    expect_near(y2, want2, "bij,bjk->ikb");
    // Implicit output of a plain matmul.
    if (B == 1) expect_near(run("ij,jk", {{{M, K}, a}, {{K, N}, b}}).first, want, "ij,jk");
  }
}

TEST(RuntimeEinsum, TransposeSumsTraceDiagonalOuter) {
  const auto x = test::random_floats(3 * 4, 1);
  {
    auto [y, s] = run("ij->ji", {{{3, 4}, x}});
    EXPECT_EQ(s, (std::vector<int64_t>{4, 3}));
    std::vector<double> want;
    for (int j = 0; j < 4; ++j)
      for (int i = 0; i < 3; ++i) want.push_back(x[static_cast<size_t>(i * 4 + j)]);
    expect_near(y, want, "transpose");
    expect_near(run("ji", {{{3, 4}, x}}).first, [&] {  // implicit: alphabetical -> ij, a transpose
      std::vector<double> w;
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 3; ++j) w.push_back(x[static_cast<size_t>(j * 4 + i)]);
      return w;
    }(), "implicit transpose");
  }
  {
    std::vector<double> rows(3, 0.0), cols(4, 0.0);
    double all = 0;
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 4; ++j) {
        rows[static_cast<size_t>(i)] += x[static_cast<size_t>(i * 4 + j)];
        cols[static_cast<size_t>(j)] += x[static_cast<size_t>(i * 4 + j)];
        all += x[static_cast<size_t>(i * 4 + j)];
      }
    expect_near(run("ij->i", {{{3, 4}, x}}).first, rows, "row sums");
    expect_near(run("ij->j", {{{3, 4}, x}}).first, cols, "column sums");
    auto [y, s] = run("ij->", {{{3, 4}, x}});
    EXPECT_TRUE(s.empty());
    expect_near(y, {all}, "total");
  }
  {
    const auto m = test::random_floats(2 * 4 * 4, 2);
    std::vector<double> trace(2, 0.0), diag;
    for (int b = 0; b < 2; ++b)
      for (int i = 0; i < 4; ++i) {
        trace[static_cast<size_t>(b)] += m[static_cast<size_t>((b * 4 + i) * 4 + i)];
        diag.push_back(m[static_cast<size_t>((b * 4 + i) * 4 + i)]);
      }
    expect_near(run("bii->b", {{{2, 4, 4}, m}}).first, trace, "batched trace");
    auto [y, s] = run("...ii->...i", {{{2, 4, 4}, m}});
    EXPECT_EQ(s, (std::vector<int64_t>{2, 4}));
    expect_near(y, diag, "ellipsis diagonal");
    expect_near(run("ii", {{{4, 4}, std::vector<float>(m.begin(), m.begin() + 16)}}).first, {trace[0]}, "implicit trace");
  }
  {
    const auto a = test::random_floats(3, 3), b = test::random_floats(5, 4);
    std::vector<double> want;
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 5; ++j) want.push_back(double(a[static_cast<size_t>(i)]) * b[static_cast<size_t>(j)]);
    expect_near(run("i,j->ij", {{{3}, a}, {{5}, b}}).first, want, "outer");
    const auto c = test::random_floats(3, 5);
    double dot = 0;
    for (int i = 0; i < 3; ++i) dot += double(a[static_cast<size_t>(i)]) * c[static_cast<size_t>(i)];
    expect_near(run("i,i", {{{3}, a}, {{3}, c}}).first, {dot}, "inner product");
  }
}

TEST(RuntimeEinsum, EllipsisBroadcastAndThreeOperands) {
  // "...ij,...jk->...ik" with batch dims [2, 1] and [3]: broadcast to [2, 3].
  const auto a = test::random_floats(2 * 1 * 2 * 3, 7), b = test::random_floats(3 * 3 * 2, 8);
  auto [y, s] = run("...ij,...jk->...ik", {{{2, 1, 2, 3}, a}, {{3, 3, 2}, b}});
  EXPECT_EQ(s, (std::vector<int64_t>{2, 3, 2, 2}));
  std::vector<double> want;
  for (int p = 0; p < 2; ++p)
    for (int q = 0; q < 3; ++q)
      for (int i = 0; i < 2; ++i)
        for (int k = 0; k < 2; ++k) {
          double acc = 0;
          for (int j = 0; j < 3; ++j) acc += double(a[static_cast<size_t>((p * 2 + i) * 3 + j)]) * b[static_cast<size_t>((q * 3 + j) * 2 + k)];
          want.push_back(acc);
        }
  expect_near(y, want, "ellipsis matmul");
  // Three operands: ij,jk,kl->il.
  const auto x = test::random_floats(2 * 3, 11), w = test::random_floats(3 * 4, 12), z = test::random_floats(4 * 2, 13);
  std::vector<double> want3(4, 0.0);
  for (int i = 0; i < 2; ++i)
    for (int l = 0; l < 2; ++l)
      for (int j = 0; j < 3; ++j)
        for (int k = 0; k < 4; ++k)
          want3[static_cast<size_t>(i * 2 + l)] += double(x[static_cast<size_t>(i * 3 + j)]) * w[static_cast<size_t>(j * 4 + k)] * z[static_cast<size_t>(k * 2 + l)];
  expect_near(run("ij,jk,kl->il", {{{2, 3}, x}, {{3, 4}, w}, {{4, 2}, z}}).first, want3, "three operands");
}

TEST(RuntimeEinsum, Integers) {
  Session s(test::plan_from_text(model_text("ij,jk->ik", {"A", "B"}, {{2, 2}, {2, 2}}, "int64")));
  test::feed_i64(s, "A", {2, 2}, {1, 2, 3, 4});
  test::feed_i64(s, "B", {2, 2}, {5, 6, 7, 8});
  s.run();
  EXPECT_EQ(test::values<int64_t>(s, "Y"), (std::vector<int64_t>{19, 22, 43, 50}));
}

TEST(RuntimeEinsum, BadEquationsAndShapesFailNamingTheNode) {
  auto fails = [](const std::string& eq, std::vector<std::vector<int64_t>> shapes) {
    std::vector<std::string> names;
    for (size_t i = 0; i < shapes.size(); ++i) names.push_back("I" + std::to_string(i));
    try {
      Session s(test::plan_from_text(model_text(eq, names, shapes)));
      for (size_t i = 0; i < shapes.size(); ++i) {
        size_t n = 1;
        for (int64_t d : shapes[i]) n *= static_cast<size_t>(d);
        test::feed_f(s, names[i], shapes[i], std::vector<float>(n, 1.f));
      }
      s.run();
    } catch (const RuntimeError& e) {
      EXPECT_NE(std::string(e.what()).find("Einsum"), std::string::npos) << e.what();
      return true;
    } catch (const std::exception&) {  // rejected by the loader's checks first
      return true;
    }
    return false;
  };
  EXPECT_TRUE(fails("ij,jk->ik", {{2, 3}, {4, 5}}));   // j: 3 vs 4
  EXPECT_TRUE(fails("ij->ij", {{2, 3, 4}}));           // rank
  EXPECT_TRUE(fails("ij->k", {{2, 3}}));               // unknown output label
  EXPECT_TRUE(fails("ij->ii", {{2, 2}}));              // repeated output label
  EXPECT_TRUE(fails("i1->i", {{2, 2}}));               // bad character
  EXPECT_TRUE(fails("ii->i", {{2, 3}}));               // diagonal of unequal axes
  EXPECT_TRUE(fails("ij,jk->ik", {{2, 3}}));           // operand count
  EXPECT_TRUE(fails("......->", {{2}}));               // two ellipses
}
