// Loading valid models: the graph's tensors, nodes, shapes, symbolic dims, external data,
// ordering, legacy and unknown operators.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cstring>

#include "model/load.h"
#include "model/ops.h"
#include "tests/support/model_bytes.h"

namespace nnxr::model {
namespace {

constexpr const char* kConvNet = R"(
  <ir_version: 8, opset_import: ["" : 13], producer_name: "unit-test">
  convnet (float[1,1,8,8] image) => (float[1,10] probs)
  <float[4,1,3,3] w1 = {0,0,0,0,0,0,0,0,0, 0,0,0,0,0,0,0,0,0, 0,0,0,0,0,0,0,0,0, 0,0,0,0,0,0,0,0,0},
   float[4] b1 = {0,0,0,0}, int64[2] flat = {1, -1}, float[64,10] w2 = {}> {
    conv = Conv<kernel_shape = [3,3], strides = [2,2], pads = [1,1,1,1]>(image, w1, b1)
    act = Relu(conv)
    flat_act = Reshape(act, flat)
    logits = MatMul(flat_act, w2)
    probs = Softmax<axis = 1>(logits)
  })";

TEST(Load, BuildsTensorsNodesAndLinks) {
  // w2 is declared empty in the text; give it real data at the protobuf level.
  std::string bytes = test::edited_model(kConvNet, [](onnx::ModelProto& m) {
    for (auto& init : *m.mutable_graph()->mutable_initializer())
      if (init.name() == "w2")
        for (int i = 0; i < 640; ++i) init.add_float_data(0.5f);
  });
  Graph g = load_model_from_memory(std::as_bytes(std::span(bytes.data(), bytes.size())), "convnet.onnx");
  EXPECT_EQ(g.producer_name, "unit-test");
  EXPECT_EQ(g.ir_version, 8);
  ASSERT_EQ(g.opsets.size(), 1u);
  EXPECT_EQ(g.opsets[0].version, 13);
  ASSERT_EQ(g.nodes.size(), 5u);
  ASSERT_EQ(g.inputs.size(), 1u);  // initializers are not inputs
  EXPECT_EQ(g.tensors[g.inputs[0]].name, "image");
  ASSERT_EQ(g.outputs.size(), 1u);
  EXPECT_TRUE(g.tensors[g.outputs[0]].is_output);

  const Tensor& conv = g.tensors[g.find("conv")];
  EXPECT_EQ(conv.dtype, DType::Float);
  EXPECT_EQ(conv.shape, (std::vector<int64_t>{1, 4, 4, 4}));
  EXPECT_EQ(conv.kind, TensorKind::Activation);
  ASSERT_NE(conv.producer, kNone);
  EXPECT_EQ(g.nodes[conv.producer].op_type, "Conv");
  ASSERT_EQ(conv.consumers.size(), 1u);
  EXPECT_EQ(g.nodes[conv.consumers[0]].op_type, "Relu");

  // Reshape's target comes from an initializer: shape inference resolves it.
  EXPECT_EQ(g.tensors[g.find("flat_act")].shape, (std::vector<int64_t>{1, 64}));
  EXPECT_EQ(g.tensors[g.find("probs")].shape, (std::vector<int64_t>{1, 10}));

  const Tensor& w2 = g.tensors[g.find("w2")];
  ASSERT_TRUE(w2.data);
  EXPECT_EQ(w2.data->as<float>().size(), 640u);
  EXPECT_EQ(w2.data->as<float>()[639], 0.5f);
  const Tensor& flat = g.tensors[g.find("flat")];
  ASSERT_TRUE(flat.data);
  EXPECT_EQ(flat.dtype, DType::Int64);
  EXPECT_EQ(flat.data->as<int64_t>()[1], -1);

  const Node& conv_node = g.nodes[conv.producer];
  EXPECT_EQ(conv_node.attributes.get_ints("strides"), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(conv_node.name, "Conv_0");  // unnamed nodes get "<op>_<index>"
  EXPECT_TRUE(g.warnings.empty());
}

TEST(Load, SymbolicDimsDefaultToOneWithAWarning) {
  Graph g = load_model_from_text(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[N, 3] X) => (float[N, 3] Y) { Y = Relu(X) })");
  EXPECT_EQ(g.tensors[g.find("X")].shape, (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(g.tensors[g.find("Y")].shape, (std::vector<int64_t>{1, 3}));
  ASSERT_EQ(g.warnings.size(), 1u);
  EXPECT_NE(g.warnings[0].find("--dim N="), std::string::npos) << g.warnings[0];
}

TEST(Load, SymbolicImageDimsDefaultTo224) {
  // Rank-4 float inputs are NCHW images: 1×1 would vanish after the first pooling.
  Graph g = load_model_from_text(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[N, 3, H, W] X, int64[A, B, C, D] I) => (float[N, 3, H, W] Y, int64[A, B, C, D] J) { Y = Relu(X)  J = Identity(I) })");
  EXPECT_EQ(g.tensors[g.find("X")].shape, (std::vector<int64_t>{1, 3, 224, 224}));
  EXPECT_EQ(g.tensors[g.find("I")].shape, (std::vector<int64_t>{1, 1, 1, 1}));
  ASSERT_EQ(g.warnings.size(), 7u);
  EXPECT_NE(g.warnings[1].find("using 224 (set it with --dim H=N)"), std::string::npos) << g.warnings[1];
}

TEST(Load, DimOptionSetsSymbolicDims) {
  LoadOptions options;
  options.dims["N"] = 5;
  Graph g = load_model_from_text(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[N, 3] X) => (float[N, 3] Y) { Y = Relu(X) })", options);
  EXPECT_EQ(g.tensors[g.find("Y")].shape, (std::vector<int64_t>{5, 3}));
  EXPECT_TRUE(g.warnings.empty());
}

TEST(Load, UnusedDimOptionWarns) {
  LoadOptions options;
  options.dims["batch"] = 5;
  Graph g = load_model_from_text(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2, 3] X) => (float[2, 3] Y) { Y = Relu(X) })", options);
  ASSERT_EQ(g.warnings.size(), 1u);
  EXPECT_NE(g.warnings[0].find("batch"), std::string::npos);
}

TEST(Load, InputShapeFillsSymbolicDims) {
  LoadOptions options;
  options.input_shapes["X"] = {7, 3};
  Graph g = load_model_from_text(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[N, 3] X) => (float[N, 3] Y) { Y = Relu(X) })", options);
  EXPECT_EQ(g.tensors[g.find("Y")].shape, (std::vector<int64_t>{7, 3}));
  EXPECT_TRUE(g.warnings.empty());
}

TEST(Load, InputShapeThatContradictsTheModelIsAnError) {
  LoadOptions options;
  options.input_shapes["X"] = {7, 4};
  try {
    load_model_from_text(R"(
      <ir_version: 8, opset_import: ["" : 13]>
      g (float[N, 3] X) => (float[N, 3] Y) { Y = Relu(X) })", options);
    FAIL() << "expected ModelError";
  } catch (const ModelError& e) {
    EXPECT_NE(std::string(e.what()).find("expects shape [7, 3]"), std::string::npos) << e.what();
  }
}

TEST(Load, UnsortedNodesAreSortedWithAWarning) {
  Graph g = load_model_from_text(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2] X) => (float[2] Z) {
      Z = Relu(Y)
      Y = Neg(X)
    })");
  ASSERT_EQ(g.nodes.size(), 2u);
  EXPECT_EQ(g.nodes[0].op_type, "Neg");
  EXPECT_EQ(g.nodes[1].op_type, "Relu");
  EXPECT_EQ(g.tensors[g.find("Z")].layer, 2);
  ASSERT_EQ(g.warnings.size(), 1u);
  EXPECT_NE(g.warnings[0].find("topological"), std::string::npos);
}

TEST(Load, ConstantNodeForms) {
  Graph g = load_model_from_text(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[3] X) => (float[3] Y) {
      F = Constant<value_floats = [1.0, 2.0, 3.0]>()
      I = Constant<value_int = 4>()
      Y = Add(X, F)
    })");
  const Tensor& f = g.tensors[g.find("F")];
  ASSERT_TRUE(f.data);
  EXPECT_EQ(f.shape, (std::vector<int64_t>{3}));
  EXPECT_EQ(f.data->as<float>()[2], 3.0f);
  const Tensor& i = g.tensors[g.find("I")];
  ASSERT_TRUE(i.data);
  EXPECT_TRUE(i.shape.empty());
  EXPECT_EQ(i.data->as<int64_t>()[0], 4);
}

TEST(Load, LegacyOpsHaveShapes) {
  Graph g = load_model_from_text(R"(
    <ir_version: 3, opset_import: ["" : 7]>
    g (float[1,3,10,12] X) => (float[1,3,6,7] Y) {
      S = ImageScaler<scale = 0.5, bias = [1.0, 2.0, 3.0]>(X)
      Y = Crop<border = [2, 1, 3, 3]>(S)
    })");
  EXPECT_EQ(g.tensors[g.find("S")].shape, (std::vector<int64_t>{1, 3, 10, 12}));
  EXPECT_EQ(g.tensors[g.find("Y")].shape, (std::vector<int64_t>{1, 3, 6, 7}));
  EXPECT_TRUE(g.warnings.empty());
}

TEST(Load, UnknownOpInDefaultDomainLoadsWithAWarning) {
  Graph g = load_model_from_text(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2] X) => (float[2] Z) {
      Y = FancyActivation(X)
      Z = Relu(Y)
    })");
  ASSERT_EQ(g.nodes.size(), 2u);
  EXPECT_FALSE(g.nodes[0].has_schema);
  EXPECT_EQ(g.nodes[0].domain, "");  // reported in its own domain, not the checker's stand-in
  EXPECT_FALSE(g.tensors[g.find("Y")].rank_known);
  ASSERT_FALSE(g.warnings.empty());
  EXPECT_NE(g.warnings[0].find("FancyActivation"), std::string::npos);
  auto unsupported = unsupported_ops(g);
  EXPECT_TRUE(std::any_of(unsupported.begin(), unsupported.end(),
                          [](const UnsupportedOp& u) { return u.op_type == "FancyActivation" && u.count == 1; }));
}

TEST(Load, CustomDomainWithImportLoads) {
  Graph g = load_model_from_text(R"(
    <ir_version: 8, opset_import: ["" : 13, "com.example" : 1]>
    g (float[2] X) => (float[2] Z) {
      Y = com.example.Fancy(X)
      Z = Relu(Y)
    })");
  EXPECT_EQ(g.nodes[0].domain, "com.example");
  EXPECT_EQ(g.nodes[0].opset, 1);
  EXPECT_EQ(g.opset_version("com.example"), 1);
}

TEST(Load, ExternalDataBesideTheFile) {
  const auto dir = test::temp_dir("external");
  std::string weights(4 * sizeof(float), '\0');
  const float values[4] = {1.f, 2.f, 3.f, 4.f};
  std::memcpy(weights.data(), values, sizeof values);
  test::write_file(dir / "weights.bin", std::string(8, 'x') + weights);  // data at offset 8
  const std::string bytes = test::edited_model(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[4] X) => (float[4] Y) <float[4] W = {0, 0, 0, 0}> { Y = Add(X, W) })",
                                               [](onnx::ModelProto& m) {
                                                 auto* w = m.mutable_graph()->mutable_initializer(0);
                                                 w->clear_float_data();
                                                 w->set_data_location(onnx::TensorProto::EXTERNAL);
                                                 auto add = [&](const char* k, const char* v) {
                                                   auto* e = w->add_external_data();
                                                   e->set_key(k);
                                                   e->set_value(v);
                                                 };
                                                 add("location", "weights.bin");
                                                 add("offset", "8");
                                                 add("length", "16");
                                               });
  const auto path = test::write_file(dir / "model.onnx", bytes);
  Graph g = load_model(path);
  const Tensor& w = g.tensors[g.find("W")];
  ASSERT_TRUE(w.data);
  ASSERT_EQ(w.data->as<float>().size(), 4u);
  EXPECT_EQ(w.data->as<float>()[0], 1.f);
  EXPECT_EQ(w.data->as<float>()[3], 4.f);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace nnxr::model
