// Bad input: every way a file can fail to be a usable model ends in one ModelError whose
// message is one line naming the file and the fault. Never a crash (the suite runs under
// ASan and UBSan too).
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <sys/stat.h>

#include <random>

#include "assets/assets.h"
#include "model/load.h"
#include "tests/support/model_bytes.h"

namespace nnxr::model {
namespace {

class BadInput : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = test::temp_dir(::testing::UnitTest::GetInstance()->current_test_info()->name()); }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // Loads `path` expecting a ModelError mentioning `fragment`; returns the message.
  std::string expect_error(const std::filesystem::path& path, std::string_view fragment) {
    try {
      load_model(path);
    } catch (const ModelError& e) {
      const std::string msg = e.what();
      EXPECT_EQ(msg.find('\n'), std::string::npos) << "not one line: " << msg;
      EXPECT_EQ(msg.rfind(path.string(), 0), 0u) << "does not start with the file name: " << msg;
      EXPECT_NE(msg.find(fragment), std::string::npos) << "expected '" << fragment << "' in: " << msg;
      return msg;
    }
    ADD_FAILURE() << path << " loaded, but should have failed with '" << fragment << "'";
    return {};
  }
  std::string expect_error_for(std::string_view bytes, std::string_view fragment) {
    return expect_error(test::write_file(dir_ / "model.onnx", bytes), fragment);
  }

  static std::string default_model_bytes() {
    auto b = assets::default_model().bytes;
    return {reinterpret_cast<const char*>(b.data()), b.size()};
  }

  std::filesystem::path dir_;
};

constexpr const char* kRelu = R"(
  <ir_version: 8, opset_import: ["" : 13]>
  g (float[2] X) => (float[2] Y) { Y = Relu(X) })";

TEST_F(BadInput, MissingFile) { expect_error(dir_ / "nope.onnx", "no such file"); }

TEST_F(BadInput, Directory) { expect_error(dir_, "is a directory"); }

TEST_F(BadInput, EmptyFile) { expect_error_for("", "file is empty"); }

TEST_F(BadInput, TextFile) {
  expect_error_for("Hello, this is a README and not a model.\nSecond line.\n", "ONNX");
  expect_error_for("{\"model\": \"json\", \"layers\": [1, 2, 3]}\n", "ONNX");
}

TEST_F(BadInput, TruncatedModel) {
  const std::string full = default_model_bytes();
  for (size_t cut : {size_t{1}, size_t{7}, size_t{64}, full.size() / 3, full.size() / 2, full.size() - 1})
    expect_error_for(full.substr(0, cut), "");
}

TEST_F(BadInput, RandomBytes) {
  std::mt19937 rng(1234);
  for (int round = 0; round < 20; ++round) {
    std::string bytes(1 + rng() % 4096, '\0');
    for (char& c : bytes) c = static_cast<char>(rng());
    expect_error_for(bytes, "");
  }
}

TEST_F(BadInput, FlippedBytesNeverCrash) {
  const std::string full = default_model_bytes();
  std::mt19937 rng(99);
  for (int round = 0; round < 200; ++round) {
    std::string bytes = full;
    for (int k = 0; k < 4; ++k) bytes[rng() % bytes.size()] = static_cast<char>(rng());
    const auto path = test::write_file(dir_ / "flipped.onnx", bytes);
    try {
      load_model(path);  // a flip inside weight data still loads: fine
    } catch (const ModelError& e) {
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
    }
  }
}

TEST_F(BadInput, Cycle) {
  expect_error_for(model_text_to_bytes(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2] X) => (float[2] B) {
      A = Add(X, B)
      B = Relu(A)
    })"),
                   "cycle");
}

TEST_F(BadInput, DanglingInput) {
  const std::string msg = expect_error_for(model_text_to_bytes(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2] X) => (float[2] Y) { Y = Add(X, Ghost) })"),
                                           "no node, graph input or initializer provides");
  EXPECT_NE(msg.find("'Ghost'"), std::string::npos);
  EXPECT_NE(msg.find("(Add)"), std::string::npos);
}

TEST_F(BadInput, OutputNotProduced) {
  expect_error_for(test::edited_model(kRelu, [](onnx::ModelProto& m) { m.mutable_graph()->mutable_output(0)->set_name("Nope"); }),
                   "graph output 'Nope' is not produced");
}

TEST_F(BadInput, TensorProducedTwice) {
  expect_error_for(model_text_to_bytes(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2] X) => (float[2] Y) {
      Y = Relu(X)
      Y = Neg(X)
    })"),
                   "produced twice");
}

TEST_F(BadInput, ElementCountOverflowsInInference) {
  expect_error_for(model_text_to_bytes(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[4294967296, 4294967296, 8] X) => (float[4294967296, 4294967296, 8] Y) { Y = Relu(X) })"),
                   "overflows");
}

TEST_F(BadInput, ElementCountOverflowsInInitializer) {
  expect_error_for(test::edited_model(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2] X) => (float[2] Y) <float[2] W = {1, 2}> { Y = Add(X, W) })",
                                      [](onnx::ModelProto& m) {
                                        auto* w = m.mutable_graph()->mutable_initializer(0);
                                        w->clear_dims();
                                        w->add_dims(int64_t{1} << 62);
                                        w->add_dims(8);
                                        w->clear_float_data();
                                      }),
                   "overflows");
}

// Found by the fuzzer: a huge declared shape with no typed values must fail before allocating.
TEST_F(BadInput, HugeInitializerWithoutDataAllocatesNothing) {
  expect_error_for(test::edited_model(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2] X) => (float[2] Y) <float[2] W = {1, 2}> { Y = Add(X, W) })",
                                      [](onnx::ModelProto& m) {
                                        auto* w = m.mutable_graph()->mutable_initializer(0);
                                        w->clear_dims();
                                        w->add_dims(int64_t{1} << 40);
                                        w->clear_float_data();
                                        w->add_float_data(1.0f);
                                      }),
                   "holds 1 values, expected 1099511627776");
}

// Found by the fuzzer: libonnx's Conv shape inference divides by the stride.
TEST_F(BadInput, ZeroStrideIsRejectedBeforeShapeInference) {
  expect_error_for(model_text_to_bytes(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1,1,8,8] X) => (float[1,1,8,8] Y) { Y = MaxPool<kernel_shape = [2,2], strides = [0,1]>(X) })"),
                   "attribute 'strides' must be positive, got 0");
  expect_error_for(model_text_to_bytes(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1,4,2,2] X) => (float[1,1,4,4] Y) { Y = DepthToSpace<blocksize = 0>(X) })"),
                   "attribute 'blocksize' must be positive");
}

TEST_F(BadInput, UnknownOperatorDomain) {
  expect_error_for(model_text_to_bytes(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2] X) => (float[2] Y) { Y = com.nowhere.Magic(X) })"),
                   "com.nowhere");
}

TEST_F(BadInput, NegativeInputDimension) {
  expect_error_for(test::edited_model(kRelu,
                                      [](onnx::ModelProto& m) {
                                        m.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(0)->set_dim_value(-3);
                                      }),
                   "negative");
}

TEST_F(BadInput, InvalidDataType) {
  expect_error_for(test::edited_model(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2] X) => (float[2] Y) <float[2] W = {1, 2}> { Y = Add(X, W) })",
                                      [](onnx::ModelProto& m) { m.mutable_graph()->mutable_initializer(0)->set_data_type(77); }),
                   "");
}

TEST_F(BadInput, RawDataOfTheWrongSize) {
  expect_error_for(test::edited_model(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2] X) => (float[2] Y) <float[2] W = {1, 2}> { Y = Add(X, W) })",
                                      [](onnx::ModelProto& m) {
                                        auto* w = m.mutable_graph()->mutable_initializer(0);
                                        w->clear_float_data();
                                        w->set_raw_data(std::string(5, '\1'));
                                      }),
                   "");
}

TEST_F(BadInput, TooFewTypedValues) {
  expect_error_for(test::edited_model(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[3] X) => (float[3] Y) <float[3] W = {1, 2, 3}> { Y = Add(X, W) })",
                                      [](onnx::ModelProto& m) { m.mutable_graph()->mutable_initializer(0)->mutable_float_data()->RemoveLast(); }),
                   "");
}

void make_external(onnx::ModelProto& m, const char* location, const char* length) {
  auto* w = m.mutable_graph()->mutable_initializer(0);
  w->clear_float_data();
  w->set_data_location(onnx::TensorProto::EXTERNAL);
  auto* e = w->add_external_data();
  e->set_key("location");
  e->set_value(location);
  if (length) {
    e = w->add_external_data();
    e->set_key("length");
    e->set_value(length);
  }
}

constexpr const char* kWithWeight = R"(
  <ir_version: 8, opset_import: ["" : 13]>
  g (float[4] X) => (float[4] Y) <float[4] W = {0, 0, 0, 0}> { Y = Add(X, W) })";

TEST_F(BadInput, ExternalDataMissing) {
  expect_error_for(test::edited_model(kWithWeight, [](onnx::ModelProto& m) { make_external(m, "weights.bin", nullptr); }),
                   "does not exist");
}

TEST_F(BadInput, ExternalDataOutsideTheFolder) {
  test::write_file(dir_.parent_path() / "secret.bin", std::string(16, '\0'));
  expect_error_for(test::edited_model(kWithWeight, [](onnx::ModelProto& m) { make_external(m, "../secret.bin", nullptr); }),
                   "outside the model's folder");
  expect_error_for(test::edited_model(kWithWeight, [](onnx::ModelProto& m) { make_external(m, "/etc/passwd", nullptr); }),
                   "outside the model's folder");
  std::filesystem::remove(dir_.parent_path() / "secret.bin");
}

TEST_F(BadInput, ExternalDataPastTheEnd) {
  test::write_file(dir_ / "weights.bin", std::string(8, '\0'));
  expect_error_for(test::edited_model(kWithWeight, [](onnx::ModelProto& m) { make_external(m, "weights.bin", "16"); }),
                   "past the end");
}

TEST_F(BadInput, ExternalDataTooShortForTheShape) {
  test::write_file(dir_ / "weights.bin", std::string(8, '\0'));
  expect_error_for(test::edited_model(kWithWeight, [](onnx::ModelProto& m) { make_external(m, "weights.bin", nullptr); }),
                   "bytes of data");
}

TEST_F(BadInput, ExternalDataThroughASymlinkOutOfTheFolder) {
  // A folder link etc -> /etc beside the model, and a tensor at etc/passwd: the real path is outside.
  std::filesystem::create_directory_symlink("/etc", dir_ / "etc");
  expect_error_for(test::edited_model(kWithWeight, [](onnx::ModelProto& m) { make_external(m, "etc/passwd", "16"); }),
                   "outside the model's folder");
  // A file link to a file outside the folder.
  test::write_file(dir_.parent_path() / "secret.bin", std::string(16, '\0'));
  std::filesystem::create_symlink(dir_.parent_path() / "secret.bin", dir_ / "w.bin");
  expect_error_for(test::edited_model(kWithWeight, [](onnx::ModelProto& m) { make_external(m, "w.bin", nullptr); }),
                   "outside the model's folder");
  std::filesystem::remove(dir_.parent_path() / "secret.bin");
  // A link that stays inside the folder is followed.
  std::filesystem::create_directory(dir_ / "data");
  test::write_file(dir_ / "data" / "real.bin", std::string(16, '\0'));
  std::filesystem::create_symlink("data/real.bin", dir_ / "inside.bin");
  const auto path = test::write_file(
      dir_ / "ok.onnx", test::edited_model(kWithWeight, [](onnx::ModelProto& m) { make_external(m, "inside.bin", nullptr); }));
  EXPECT_NO_THROW(load_model(path));
}

TEST_F(BadInput, ExternalDataThatIsAFifoIsRefusedWithoutBlocking) {
  ASSERT_EQ(mkfifo((dir_ / "w.bin").c_str(), 0600), 0);
  expect_error_for(test::edited_model(kWithWeight, [](onnx::ModelProto& m) { make_external(m, "w.bin", "16"); }), "is a FIFO");
}

TEST_F(BadInput, ExternalDataInsideASubgraphIsReadBesideTheModel) {
  // The Loop body's initializer keeps its data in w.bin: read like the main graph's.
  const std::string bytes = test::edited_model(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[4] X) => (float[4] S) {
      M = Constant <value = int64 {2}> ()
      C = Constant <value = bool {1}> ()
      S = Loop (M, C, X) <body = b (int64 i, bool c, float[4] s) => (bool co, float[4] so) <float[4] W = {0, 0, 0, 0}> {
        co = Identity(c)
        so = Add(s, W)
      }>
    })",
      [](onnx::ModelProto& m) {
        for (auto& n : *m.mutable_graph()->mutable_node())
          for (auto& a : *n.mutable_attribute())
            if (a.has_g()) {
              auto* w = a.mutable_g()->mutable_initializer(0);
              w->clear_float_data();
              w->set_data_location(onnx::TensorProto::EXTERNAL);
              auto* e = w->add_external_data();
              e->set_key("location");
              e->set_value("w.bin");
            }
      });
  const float w[4] = {1, 2, 3, 4};
  test::write_file(dir_ / "w.bin", std::string_view(reinterpret_cast<const char*>(w), sizeof w));
  const auto path = test::write_file(dir_ / "model.onnx", bytes);
  EXPECT_NO_THROW(load_model(path));
  test::write_file(dir_ / "w.bin", "");
  std::filesystem::remove(dir_ / "w.bin");
  expect_error(path, "does not exist beside the model");
}

TEST_F(BadInput, OpsetNewerThanImplementedIsRefused) {
  const std::string msg = expect_error_for(
      test::edited_model(kRelu, [](onnx::ModelProto& m) { m.mutable_opset_import(0)->set_version(999); }), "ai.onnx opset 999, newer than");
  EXPECT_NE(msg.find("up to "), std::string::npos) << msg;
}

TEST_F(BadInput, SubgraphsNestedPastProtobufsRecursionLimitSaySo) {
  // 40 If nodes, each the then_branch of the one outside it.
  std::string bytes = test::edited_model(kRelu, [](onnx::ModelProto& m) {
    onnx::GraphProto inner;
    inner.set_name("g40");
    for (int level = 39; level >= 0; --level) {
      onnx::GraphProto outer;
      outer.set_name("g" + std::to_string(level));
      auto* n = outer.add_node();
      n->set_op_type("If");
      n->add_input("c");
      n->add_output("y" + std::to_string(level));
      auto* a = n->add_attribute();
      a->set_name("then_branch");
      a->set_type(onnx::AttributeProto::GRAPH);
      *a->mutable_g() = inner;
      inner = std::move(outer);
    }
    auto* n = m.mutable_graph()->add_node();
    n->set_op_type("If");
    n->add_input("X");
    n->add_output("Z");
    auto* a = n->add_attribute();
    a->set_name("then_branch");
    a->set_type(onnx::AttributeProto::GRAPH);
    *a->mutable_g() = inner;
  });
  expect_error_for(bytes, "recursion limit");
}

TEST_F(BadInput, NamesFromTheFileAreEscapedAndShortened) {
  // A node name with a NUL and a terminal escape, and an op_type of 100 KB.
  const std::string msg = expect_error_for(test::edited_model(kRelu, [](onnx::ModelProto& m) {
    auto* n = m.mutable_graph()->mutable_node(0);
    n->set_name(std::string("evil\0name\x1b[2J", sizeof("evil\0name\x1b[2J") - 1));
    n->add_input("nowhere");
    n->set_op_type(std::string(100000, 'A'));
  }), "");
  EXPECT_EQ(msg.find('\x1b'), std::string::npos) << msg;
  EXPECT_NE(msg.find("evil\\x00name\\x1b[2J"), std::string::npos) << msg;
  EXPECT_EQ(msg.find('\0'), std::string::npos);
  EXPECT_LT(msg.size(), 1000u) << msg.size();
}

TEST_F(BadInput, NotAModelButAnotherProtobuf) {
  onnx::TensorProto t;
  t.set_name("just a tensor");
  t.set_data_type(1);
  t.add_dims(2);
  t.add_float_data(1);
  t.add_float_data(2);
  expect_error_for(t.SerializeAsString(), "");
}

TEST(BadInputMemory, TextParserErrorsAreModelErrors) {
  EXPECT_THROW(load_model_from_text("this is not onnx text"), ModelError);
}

}  // namespace
}  // namespace nnxr::model
