// Graph-level helpers: element counts, shape strings, attributes, layer assignment.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "model/graph.h"
#include "model/load.h"

namespace nnxr::model {
namespace {

TEST(ElementCount, MultipliesKnownDims) {
  const std::vector<int64_t> dims{1, 3, 224, 224};
  EXPECT_EQ(element_count(dims), 150528);
  EXPECT_EQ(element_count(std::vector<int64_t>{}), 1);  // a scalar
  EXPECT_EQ(element_count(std::vector<int64_t>{4, 0, 7}), 0);
}

TEST(ElementCount, UnknownOrOverflowingIsNullopt) {
  EXPECT_FALSE(element_count(std::vector<int64_t>{2, kUnknownDim}).has_value());
  EXPECT_FALSE(element_count(std::vector<int64_t>{int64_t{1} << 40, int64_t{1} << 40}).has_value());
  EXPECT_TRUE(element_count(std::vector<int64_t>{int64_t{1} << 31, int64_t{1} << 31}).has_value());
}

TEST(ShapeString, MarksUnknownDims) {
  EXPECT_EQ(shape_string(std::vector<int64_t>{1, kUnknownDim, 8}), "[1, ?, 8]");
  EXPECT_EQ(shape_string(std::vector<int64_t>{}), "[]");
}

TEST(Attributes, TypedGettersFallBack) {
  Attribute axis{.name = "axis", .kind = Attribute::Kind::Int, .i = -1};
  Attribute pads{.name = "pads", .kind = Attribute::Kind::Ints, .ints = {1, 1, 1, 1}};
  Attributes attrs({axis, pads});
  EXPECT_EQ(attrs.get_int("axis", 0), -1);
  EXPECT_EQ(attrs.get_int("missing", 7), 7);
  EXPECT_EQ(attrs.get_ints("pads"), (std::vector<int64_t>{1, 1, 1, 1}));
  EXPECT_EQ(attrs.get_float("axis", 2.5f), 2.5f);  // wrong kind: fallback
  EXPECT_EQ(attrs.find("nope"), nullptr);
}

// Layers on a graph with a branch and a merge:
//   X -> A=Relu -> B=Sigmoid -> D=Add(B, C) -> E=Relu
//   X -> C=Tanh ------------/
TEST(Layers, LongestPathFromInputs) {
  Graph g = load_model_from_text(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2,3] X) => (float[2,3] E) {
      A = Relu(X)
      B = Sigmoid(A)
      C = Tanh(X)
      D = Add(B, C)
      E = Relu(D)
    })");
  auto layer = [&](const char* name) { return g.tensors[g.find(name)].layer; };
  EXPECT_EQ(layer("X"), 0);
  EXPECT_EQ(layer("A"), 1);
  EXPECT_EQ(layer("B"), 2);
  EXPECT_EQ(layer("C"), 1);
  EXPECT_EQ(layer("D"), 3);
  EXPECT_EQ(layer("E"), 4);
  EXPECT_EQ(g.layer_count, 5);
  for (const Node& n : g.nodes) EXPECT_EQ(n.layer, g.tensors[n.outputs[0]].layer) << n.name;
}

TEST(Layers, InitializersAndConstantsAreLayerZero) {
  Graph g = load_model_from_text(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2] X) => (float[2] Z) <float[2] W = {1.0, 2.0}> {
      K = Constant<value = float[2] {3.0, 4.0}>()
      Y = Mul(X, W)
      Z = Add(Y, K)
    })");
  EXPECT_EQ(g.tensors[g.find("W")].layer, 0);
  EXPECT_EQ(g.tensors[g.find("K")].layer, 0);
  EXPECT_EQ(g.tensors[g.find("Y")].layer, 1);
  EXPECT_EQ(g.tensors[g.find("Z")].layer, 2);
  EXPECT_EQ(g.tensors[g.find("K")].kind, TensorKind::Constant);
  EXPECT_EQ(g.tensors[g.find("W")].kind, TensorKind::Initializer);
}

TEST(Layers, NodeWithoutInputsThatIsNotConstantIsLayerOne) {
  Graph g = load_model_from_text(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2] X) => (float[2] Y) {
      S = Constant<value_ints = [2]>()
      R = RandomUniform<shape = [2], dtype = 1>()
      Y = Add(X, R)
    })");
  EXPECT_EQ(g.tensors[g.find("S")].layer, 0);
  EXPECT_EQ(g.tensors[g.find("R")].layer, 1);
  EXPECT_EQ(g.tensors[g.find("Y")].layer, 2);
}

}  // namespace
}  // namespace nnxr::model
