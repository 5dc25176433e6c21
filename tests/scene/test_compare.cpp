// Comparing two inputs: divergence and difference of two runs (model/scene/compare.h), and
// `nnxr inspect --scene --compare B`, checked against the same figures computed here from two
// `nnxr run --dump` outputs.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <regex>
#include <string>

#include "assets/assets.h"
#include "model/load.h"
#include "model/runtime/runtime.h"
#include "model/scene/compare.h"
#include "model/tensor_io.h"
#include "tests/support/model_bytes.h"
#include "tests/support/run_nnxr.h"

namespace {

namespace fs = std::filesystem;
using nnxr::scene::Divergence;

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

TEST(Divergence, FiguresByHand) {
  const std::vector<float> a = {3, 4, 0}, b = {0, 4, 3};
  const Divergence d = nnxr::scene::divergence(a, b);
  EXPECT_DOUBLE_EQ(d.norm_a, 5);
  EXPECT_DOUBLE_EQ(d.norm_b, 5);
  EXPECT_DOUBLE_EQ(d.norm_diff, std::sqrt(18.0));
  EXPECT_DOUBLE_EQ(d.rel_l2, std::sqrt(18.0) / 5);
  EXPECT_DOUBLE_EQ(d.cosine, 16.0 / 25);
  const std::vector<float> zero = {0, 0, 0};
  EXPECT_EQ(nnxr::scene::divergence(zero, zero).rel_l2, 0);
  EXPECT_EQ(nnxr::scene::divergence(zero, zero).cosine, 1);
  EXPECT_TRUE(std::isinf(nnxr::scene::divergence(zero, a).rel_l2));
  EXPECT_EQ(nnxr::scene::divergence(a, zero).cosine, 0);
  EXPECT_DOUBLE_EQ(nnxr::scene::divergence(a, a).rel_l2, 0);
  EXPECT_NEAR(nnxr::scene::divergence(a, a).cosine, 1, 1e-15);
}

TEST(Divergence, DifferenceKeepsWeightsAndReusesStorage) {
  nnxr::model::Graph g;
  g.tensors.resize(3);
  g.tensors[0].kind = nnxr::model::TensorKind::Input;
  g.tensors[1].kind = nnxr::model::TensorKind::Initializer;
  g.tensors[2].kind = nnxr::model::TensorKind::Activation;
  const std::vector<int64_t> shape = {2};
  const std::vector<float> xa = {1, 2}, xb = {0.5f, 4}, w = {7, 8}, ya = {-1, 3}, yb = {1, 3};
  const nnxr::scene::Activations a = {{shape, xa}, {shape, w}, {shape, ya}};
  const nnxr::scene::Activations b = {{shape, xb}, {shape, w}, {shape, yb}};
  std::vector<float> storage;
  const auto d = nnxr::scene::difference(g, a, b, storage);
  ASSERT_EQ(d.size(), 3u);
  EXPECT_EQ(std::vector<float>(d[0].data.begin(), d[0].data.end()), (std::vector<float>{0.5f, -2}));
  EXPECT_EQ(d[1].data.data(), w.data());  // weights as they are
  EXPECT_EQ(std::vector<float>(d[2].data.begin(), d[2].data.end()), (std::vector<float>{-2, 0}));
  const float* first = storage.data();
  const auto again = nnxr::scene::difference(g, b, a, storage);  // same shapes: no new allocation
  EXPECT_EQ(storage.data(), first);
  EXPECT_EQ(again[0].data.data(), first);
  EXPECT_EQ(again[2].data[0], 2);
  const auto div = nnxr::scene::divergence(g, a, b);
  EXPECT_TRUE(div[0] && div[2]);
  EXPECT_FALSE(div[1]);  // weights do not diverge
  const auto most = nnxr::scene::most_changed(g, div, 5);
  ASSERT_EQ(most.size(), 1u);  // activations only
  EXPECT_EQ(most[0], 2u);
}

// The difference scene of the digits model on two inputs: every resident neuron holds a_A − a_B
// of its element (read back from the two sessions), and each segment's colour range is that of
// the difference.
TEST(Divergence, DifferenceSceneHoldsTheChange) {
  namespace rt = nnxr::runtime;
  namespace sc = nnxr::scene;
  auto plan = rt::Plan::build(nnxr::model::load_model_from_memory(nnxr::assets::default_model().bytes, "digits.onnx"));
  const auto& g = plan->graph();
  rt::Session a(plan), b(plan);
  const nnxr::model::Tensor& input = g.tensors[g.inputs[0]];
  std::vector<float> xa(static_cast<size_t>(*input.elements())), xb(xa.size());
  for (size_t i = 0; i < xa.size(); ++i) {
    xa[i] = static_cast<float>(i % 7) / 7.0f;
    xb[i] = static_cast<float>((i * 5) % 11) / 11.0f;
  }
  a.set_input(0, nnxr::model::DType::Float, input.shape, std::as_bytes(std::span(xa)));
  b.set_input(0, nnxr::model::DType::Float, input.shape, std::as_bytes(std::span(xb)));
  a.run();
  b.run();
  const sc::Activations va = sc::activations_of(a), vb = sc::activations_of(b);
  std::vector<float> storage;
  const sc::Activations diff = sc::difference(g, va, vb, storage);
  const sc::Layout layout = sc::Layout::build(g, {});
  sc::InMemorySink sink;
  const sc::Scene scene = sc::Scene::build(g, layout, diff, {.top_k = 4, .budget = 1'000'000}, sink);
  ASSERT_GT(sink.neuron_data.size(), 1000u);
  size_t checked = 0;
  for (uint32_t i = 0; i < sink.neuron_data.size(); ++i) {
    const sc::NeuronInfo n = scene.neuron(i);
    const auto* pa = a.value(n.tensor);
    const auto* pb = b.value(n.tensor);
    ASSERT_TRUE(pa && pb);
    const float expected = pa->as<float>()[static_cast<size_t>(n.element)] - pb->as<float>()[static_cast<size_t>(n.element)];
    ASSERT_EQ(sink.neuron_data[i].value, expected) << g.tensors[n.tensor].name << " " << n.element;
    ++checked;
  }
  EXPECT_EQ(checked, sink.neuron_data.size());
  for (const sc::Segment& s : scene.segments()) {
    const auto* pa = a.value(s.tensor);
    const auto* pb = b.value(s.tensor);
    float lo = 0, hi = 0;
    for (size_t e = 0; e < static_cast<size_t>(s.neuron_total); ++e) {
      const float d = pa->as<float>()[e] - pb->as<float>()[e];
      lo = e ? std::min(lo, d) : d;
      hi = e ? std::max(hi, d) : d;
    }
    EXPECT_EQ(s.value_min, lo) << g.tensors[s.tensor].name;
    EXPECT_EQ(s.value_max, hi) << g.tensors[s.tensor].name;
  }
}

// A switch to another input of the same shape reuses every buffer: the session's tensors, the
// difference storage and the sink's element arrays stay where they were (buffer identity).
TEST(Divergence, SwitchingInputsKeepsEveryBuffer) {
  namespace rt = nnxr::runtime;
  namespace sc = nnxr::scene;
  auto plan = rt::Plan::build(nnxr::model::load_model_from_memory(nnxr::assets::default_model().bytes, "digits.onnx"));
  const auto& g = plan->graph();
  rt::Session a(plan), b(plan);
  const nnxr::model::Tensor& input = g.tensors[g.inputs[0]];
  std::vector<float> x0(static_cast<size_t>(*input.elements()), 0.25f), x1(x0.size(), 0.75f), x2(x0.size(), 0.5f);
  a.set_input(0, nnxr::model::DType::Float, input.shape, std::as_bytes(std::span(x0)));
  b.set_input(0, nnxr::model::DType::Float, input.shape, std::as_bytes(std::span(x2)));
  a.run();
  b.run();
  const sc::Layout layout = sc::Layout::build(g, {});
  sc::InMemorySink sink;
  std::vector<float> storage;
  auto build = [&] {
    const sc::Activations d = sc::difference(g, sc::activations_of(a), sc::activations_of(b), storage);
    return sc::Scene::build(g, layout, d, {.top_k = 4, .budget = 100'000}, sink);
  };
  build();
  const sc::Activations before = sc::activations_of(a);
  const float* storage_at = storage.data();
  const auto* neurons_at = sink.neuron_data.data();
  const auto* connections_at = sink.connection_data.data();
  const float first_value = sink.neuron_data[0].value;

  a.set_input(0, nnxr::model::DType::Float, input.shape, std::as_bytes(std::span(x1)));  // the switch
  a.run();
  build();
  const sc::Activations after = sc::activations_of(a);
  ASSERT_EQ(before.size(), after.size());
  size_t same = 0;
  for (size_t id = 0; id < before.size(); ++id) {
    if (before[id].data.empty()) continue;
    EXPECT_EQ(before[id].data.data(), after[id].data.data()) << g.tensors[id].name;
    ++same;
  }
  EXPECT_GT(same, 10u);
  EXPECT_EQ(storage.data(), storage_at);
  EXPECT_EQ(sink.neuron_data.data(), neurons_at);
  EXPECT_EQ(sink.connection_data.data(), connections_at);
  EXPECT_NE(sink.neuron_data[0].value, first_value);  // and the values did change
}

// name -> file of a `run --dump` folder's index.json.
std::map<std::string, fs::path> dump_index(const fs::path& dir) {
  const std::string text = nnxr::test::slurp(dir / "index.json");
  std::map<std::string, fs::path> out;
  const std::regex entry(R"re(\{"name":"([^"]*)","file":"([^"]*)")re");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), entry); it != std::sregex_iterator(); ++it)
    out[(*it)[1]] = dir / (*it)[2].str();
  return out;
}

// Divergence of every tensor in `inspect --scene --compare` JSON, by name.
std::map<std::string, std::pair<double, double>> reported(const std::string& json) {
  std::map<std::string, std::pair<double, double>> out;
  const std::regex entry(R"re(\{"name":"([^"]*)","op"[^{}]*?"divergence":\{"rel_l2":([^,]+),"cosine":([^}]+)\})re");
  for (auto it = std::sregex_iterator(json.begin(), json.end(), entry); it != std::sregex_iterator(); ++it)
    out[(*it)[1]] = {std::stod((*it)[2]), std::stod((*it)[3])};
  return out;
}

// Runs `inspect --scene --compare` and `run --dump` twice on MODEL with inputs A and B, and checks
// every reported tensor's figures against those computed from the dumps (double accumulation,
// independently of model/scene). Returns how many tensors were checked.
size_t check_against_dumps(const std::string& model, const std::string& a, const std::string& b, const fs::path& dir) {
  const auto r = nnxr::test::run_nnxr("inspect " + model + " --scene --json --budget 200000 --input '" + a + "' --compare '" + b + "'");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(has(r.out, "\"compare\":{\"file\":")) << r.out;
  const auto figures = reported(r.out);
  for (const char* which : {"a", "b"}) {
    const auto d = nnxr::test::run_nnxr("run " + model + " --input '" + (which[0] == 'a' ? a : b) + "' --dump '" +
                                        (dir / which).string() + "'");
    EXPECT_EQ(d.exit_code, 0) << d.err;
  }
  const auto ia = dump_index(dir / "a"), ib = dump_index(dir / "b");
  size_t checked = 0;
  for (const auto& [name, fig] : figures) {
    if (!ia.count(name) || !ib.count(name)) continue;  // the input: not dumped
    const auto ta = nnxr::model::read_npy(ia.at(name)), tb = nnxr::model::read_npy(ib.at(name));
    EXPECT_EQ(ta.bytes.size(), tb.bytes.size()) << name;
    if (ta.bytes.size() != tb.bytes.size()) continue;
    const auto* x = reinterpret_cast<const float*>(ta.bytes.data());
    const auto* y = reinterpret_cast<const float*>(tb.bytes.data());
    double xx = 0, yy = 0, xy = 0, dd = 0;
    for (size_t i = 0; i < ta.bytes.size() / sizeof(float); ++i) {
      xx += double(x[i]) * x[i];
      yy += double(y[i]) * y[i];
      xy += double(x[i]) * y[i];
      dd += (double(x[i]) - y[i]) * (double(x[i]) - y[i]);
    }
    if (xx == 0 || yy == 0) continue;
    const double rel = std::sqrt(dd) / std::sqrt(xx), cosine = xy / std::sqrt(xx * yy);
    EXPECT_NEAR(fig.first, rel, 1e-5) << name;
    EXPECT_NEAR(fig.second, cosine, 1e-5) << name;
    ++checked;
  }
  return checked;
}

TEST(CompareCli, DivergenceAgreesWithTwoDumps) {
  const fs::path dir = nnxr::test::temp_dir("compare-dumps");
  const std::string assets = std::string(NNXR_SOURCE_DIR) + "/assets/";
  const size_t checked = check_against_dumps("'" + assets + "digits.onnx'", assets + "digit-3.png", assets + "digit-8.png", dir);
  fs::remove_all(dir);
  EXPECT_GE(checked, 5u);
}

TEST(CompareCli, SharedModelAgreesWithTwoDumps) {
  const fs::path model = fs::path(NNXR_SHARED_MODELS) / "squeezenet1.1-caffe2-op7-fp32.onnx";
  if (!fs::exists(model)) GTEST_SKIP() << model << " is not there";
  const fs::path dir = nnxr::test::temp_dir("compare-shared");
  const std::string assets = std::string(NNXR_SOURCE_DIR) + "/assets/";
  const size_t checked = check_against_dumps("'" + model.string() + "'", assets + "digit-3.png", assets + "digit-8.png", dir);
  fs::remove_all(dir);
  EXPECT_GE(checked, 30u);
}

TEST(CompareCli, TextListsTheMostChanged) {
  const std::string assets = std::string(NNXR_SOURCE_DIR) + "/assets/";
  const auto r = nnxr::test::run_nnxr("inspect --scene --compare '" + assets + "digit-8.png' --show b");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(has(r.out, "the scene shows B")) << r.out;
  EXPECT_TRUE(has(r.out, "most changed")) << r.out;
  EXPECT_TRUE(has(r.out, "rel L2")) << r.out;
}

TEST(CompareCli, BadInput) {
  const fs::path dir = nnxr::test::temp_dir("compare-bad");
  // A model with a symbolic batch: A gives [1,3], B [2,3].
  const fs::path model = dir / "m.onnx";
  nnxr::test::write_file(model, nnxr::model::model_text_to_bytes(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[N,3] X) => (float[N,3] Y) {
      Y = Relu(X)
    })"));
  const std::vector<int64_t> one = {1, 3}, two = {2, 3};
  nnxr::model::write_npy(dir / "one.npy", nnxr::model::DType::Float, one, std::vector<std::byte>(12));
  nnxr::model::write_npy(dir / "two.npy", nnxr::model::DType::Float, two, std::vector<std::byte>(24));
  const auto r = nnxr::test::run_nnxr("inspect '" + model.string() + "' --scene --input '" + (dir / "one.npy").string() +
                                      "' --compare '" + (dir / "two.npy").string() + "'");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_TRUE(has(r.err, "[2, 3]") && has(r.err, "[1, 3]")) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  const auto missing = nnxr::test::run_nnxr("inspect --scene --compare /nonexistent.png");
  EXPECT_EQ(missing.exit_code, 1) << missing.err;
  EXPECT_TRUE(has(missing.err, "/nonexistent.png")) << missing.err;
  EXPECT_EQ(nnxr::test::run_nnxr("inspect --scene --show x --compare x.png").exit_code, 2);
  EXPECT_EQ(nnxr::test::run_nnxr("inspect --scene --show a").exit_code, 2);
  fs::remove_all(dir);
}

}  // namespace
