// The scene filter on the command line (--layers, --ops, --tensors, --filter-mode) for
// inspect --scene, render and view, on the embedded default model (layers 0..8: digit, Conv, Relu,
// Conv, Relu, MaxPool, Flatten, Gemm, Softmax): what each flag keeps, and a one-line usage error
// with exit status 2 for each bad value.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <regex>
#include <string>

#include "tests/support/run_nnxr.h"

#ifdef NNXR_TEST_ENGINE
#include <unistd.h>

#include <filesystem>

#include <stb_image.h>
#endif

namespace {

using Result = nnxr::test::RunResult;

Result nnxr(const std::string& args, const std::string& env = "") { return nnxr::test::run_nnxr(args, env); }

[[maybe_unused]] int lines(const std::string& s) { return static_cast<int>(std::count(s.begin(), s.end(), '\n')); }

int error_lines(const std::string& err) {
  int n = 0;
  for (size_t at = 0; at < err.size();) {
    const size_t end = std::min(err.find('\n', at), err.size());
    if (err.compare(at, 5, "nnxr:") == 0) ++n;
    else if (err.compare(at, 7, "render:") != 0) n += 100;  // anything else is wrong
    at = end + 1;
  }
  return n;
}

// Tensor name -> neurons, from `inspect --scene --json`.
std::map<std::string, int64_t> tensor_neurons(const std::string& json) {
  std::map<std::string, int64_t> out;
  static const std::regex tensor(R"re(\{"name":"([^"]*)","op":"[^"]*","layer":\d+,"shape":[^}]*?"neurons":(\d+))re");
  for (auto it = std::sregex_iterator(json.begin(), json.end(), tensor); it != std::sregex_iterator(); ++it)
    out[(*it)[1]] = std::stoll((*it)[2]);
  return out;
}

int64_t number_after(const std::string& text, const std::string& key) {
  const size_t at = text.find(key);
  if (at == std::string::npos) return -1;
  return std::stoll(text.substr(at + key.size()));
}

const std::string kConv1 = "/features/features.0/Conv_output_0";
const std::string kRelu1 = "/features/features.1/Relu_output_0";
const std::string kConv2 = "/features/features.2/Conv_output_0";
const std::string kRelu2 = "/features/features.3/Relu_output_0";

TEST(CliFilters, InspectSceneLayersKeepsTheRange) {
  const Result all = nnxr("inspect --scene --json");
  ASSERT_EQ(all.exit_code, 0) << all.err;
  const auto every = tensor_neurons(all.out);
  ASSERT_EQ(every.size(), 9u) << all.out;

  const Result r = nnxr("inspect --scene --json --layers 1:3");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto kept = tensor_neurons(r.out);
  EXPECT_EQ(kept.size(), 3u) << r.out;
  EXPECT_TRUE(kept.count(kConv1) && kept.count(kRelu1) && kept.count(kConv2)) << r.out;
  EXPECT_NE(r.out.find(R"("filter":{"layer_min":1,"layer_max":3,"ops":[],"tensors":[],"mode":"hide"})"), std::string::npos)
      << r.out;
  EXPECT_EQ(number_after(r.out, R"("neurons_shown":)"), every.at(kConv1) + every.at(kRelu1) + every.at(kConv2));

  // A single layer, and ranges open at one end.
  EXPECT_EQ(tensor_neurons(nnxr("inspect --scene --json --layers 8").out).size(), 1u);
  EXPECT_EQ(tensor_neurons(nnxr("inspect --scene --json --layers 6:").out).size(), 3u);
  EXPECT_EQ(tensor_neurons(nnxr("inspect --scene --json --layers=:1").out).size(), 2u);
}

TEST(CliFilters, InspectSceneOpsAndTensors) {
  const Result ops = nnxr("inspect --scene --json --ops Conv,Relu");
  ASSERT_EQ(ops.exit_code, 0) << ops.err;
  const auto kept = tensor_neurons(ops.out);
  EXPECT_EQ(kept.size(), 4u) << ops.out;
  EXPECT_TRUE(kept.count(kConv1) && kept.count(kRelu1) && kept.count(kConv2) && kept.count(kRelu2));
  EXPECT_NE(ops.out.find(R"("ops":["Conv","Relu"])"), std::string::npos) << ops.out;

  const Result tensors = nnxr("inspect --scene --json --tensors probabilities,digit");
  ASSERT_EQ(tensors.exit_code, 0) << tensors.err;
  const auto named = tensor_neurons(tensors.out);
  EXPECT_EQ(named.size(), 2u) << tensors.out;
  EXPECT_TRUE(named.count("probabilities") && named.count("digit"));
  EXPECT_NE(tensors.out.find(R"("tensors":["probabilities","digit"])"), std::string::npos) << tensors.out;
  EXPECT_EQ(number_after(tensors.out, R"("neurons_shown":)"), named.at("probabilities") + named.at("digit"));

  // Flags combine: Relu tensors in layers 3..8 are only the second one.
  const Result both = nnxr("inspect --scene --json --ops Relu --layers 3:8");
  EXPECT_EQ(tensor_neurons(both.out).size(), 1u) << both.out;
  EXPECT_TRUE(tensor_neurons(both.out).count(kRelu2));

  // Text output lists the kept tensors and a filter line.
  const Result text = nnxr("inspect --scene --ops Softmax");
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("filter      layers 0..8, ops Softmax: 10 neurons"), std::string::npos) << text.out;
  EXPECT_EQ(text.out.find("Conv_output"), std::string::npos) << text.out;
}

TEST(CliFilters, DimModeListsEveryTensorAndFlagsTheRest) {
  const Result r = nnxr("inspect --scene --json --layers 8 --filter-mode dim");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(tensor_neurons(r.out).size(), 9u);
  EXPECT_NE(r.out.find(R"("mode":"dim")"), std::string::npos);
  const std::regex dimmed(R"("dimmed":true)"), kept(R"("dimmed":false)");
  EXPECT_EQ(std::distance(std::sregex_iterator(r.out.begin(), r.out.end(), dimmed), std::sregex_iterator()), 8);
  EXPECT_EQ(std::distance(std::sregex_iterator(r.out.begin(), r.out.end(), kept), std::sregex_iterator()), 1);
  EXPECT_EQ(number_after(r.out, R"("neurons_shown":)"), 10);  // the Softmax's ten classes
}

// Each bad value, for each command: exit 2, one line on stderr that says what is wrong.
TEST(CliFilters, BadValuesAreOneLineUsageErrors) {
  const std::pair<std::string, std::string> cases[] = {
      {"--layers 5:2", "the first layer comes after the last"},
      {"--layers a:b", "is not a whole number"},
      {"--layers 1:2:3", "is not a layer range"},
      {"--layers :", "is not a layer range"},
      {"--layers -1:3", "is not a whole number"},
      {"--layers 3:40", "layer 40 does not exist: digits.onnx (embedded default model) has layers 0 to 8"},
      {"--ops Cnv", "has no op 'Cnv' (close: Conv)"},
      {"--ops relu,Gem", "has no op 'relu' (close: Relu)"},
      {"--ops Conv,Attention", "has no op 'Attention'; its ops: Conv, Flatten, Gemm, MaxPool, Relu, Softmax"},
      {"--ops Conv,,Relu", "--ops: 'Conv,,Relu' has an empty name"},
      {"--tensors probabilites", "has no tensor 'probabilites' (close: probabilities)"},
      {"--tensors Relu_output", "has no tensor 'Relu_output' (close: /features/features.1/Relu_output_0, "
                                "/features/features.3/Relu_output_0)"},
      {"--tensors zzzzzzzzzzzz", "has no tensor 'zzzzzzzzzzzz' (and none with a close name)"},
      {"--filter-mode blur", "--filter-mode: 'blur' is not hide or dim"},
      {"--layers", "--layers needs a value"},
  };
  for (const std::string command : {"inspect --scene", "render --out x.png", "view --frames 1"}) {
    for (const auto& [flag, message] : cases) {
      const Result r = nnxr(command + " " + flag, "env -u DISPLAY -u WAYLAND_DISPLAY");
      EXPECT_EQ(r.exit_code, 2) << command << ' ' << flag << ": " << r.err;
      // render says which Vulkan device it uses before it loads the model; that is not an error.
      EXPECT_EQ(error_lines(r.err), 1) << command << ' ' << flag << ": " << r.err;
      EXPECT_NE(r.err.find(message), std::string::npos) << command << ' ' << flag << ": " << r.err;
      EXPECT_EQ(r.out, "") << command << ' ' << flag;
    }
  }
}

#ifdef NNXR_TEST_ENGINE
TEST(CliFilters, RenderDrawsWhatTheFilterShows) {
  const auto every = tensor_neurons(nnxr("inspect --scene --json").out);
  const Result all = nnxr("render --out all.png --width 64 --height 48");
  ASSERT_EQ(all.exit_code, 0) << all.err;
  const Result r = nnxr("render --out some.png --width 64 --height 48 --ops Conv --layers 0:2");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // Only the first Conv output passes both filters; the thresholds keep all its neurons.
  const std::regex shown(R"(, (\d+) neurons, (\d+) connections shown)");
  std::smatch m_all, m_some;
  ASSERT_TRUE(std::regex_search(all.out, m_all, shown)) << all.out;
  ASSERT_TRUE(std::regex_search(r.out, m_some, shown)) << r.out;
  EXPECT_EQ(std::stoll(m_some[1]), every.at(kConv1)) << r.out;
  EXPECT_LT(std::stoll(m_some[1]), std::stoll(m_all[1]));
  EXPECT_LT(std::stoll(m_some[2]), std::stoll(m_all[2]));
}

// Summed brightness above the background of a rendered PNG.
double lit(const std::string& path) {
  int w = 0, h = 0, n = 0;
  unsigned char* px = stbi_load(path.c_str(), &w, &h, &n, 3);
  if (!px) return -1;
  double sum = 0;
  const int background = px[0] + px[1] + px[2];  // a corner pixel
  for (int i = 0; i < w * h; ++i) sum += std::max(0, px[3 * i] + px[3 * i + 1] + px[3 * i + 2] - background);
  stbi_image_free(px);
  return sum;
}

TEST(CliFilters, DimModeDrawsTheRestDimmed) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("nnxr-filters-" + std::to_string(getpid()));
  fs::create_directories(dir);
  const std::string size = " --width 320 --height 180 --connection-threshold 1";
  const Result all = nnxr("render --out '" + (dir / "all.png").string() + "'" + size);
  ASSERT_EQ(all.exit_code, 0) << all.err;
  // Dimmed: the same framing, the same neurons drawn, all but the last layer darker.
  const Result dim = nnxr("render --out '" + (dir / "dim.png").string() + "'" + size + " --layers 8 --filter-mode dim");
  ASSERT_EQ(dim.exit_code, 0) << dim.err;
  const double a = lit((dir / "all.png").string()), d = lit((dir / "dim.png").string());
  ASSERT_GT(a, 0);
  EXPECT_GT(d, 0.03 * a) << "dimmed layers are still drawn";
  EXPECT_LT(d, 0.6 * a) << "dimmed layers are darker";
  const std::regex shown(R"(, (\d+) neurons)");
  std::smatch m_all, m_dim;
  ASSERT_TRUE(std::regex_search(all.out, m_all, shown) && std::regex_search(dim.out, m_dim, shown));
  EXPECT_EQ(m_all[1], m_dim[1]);
  fs::remove_all(dir);
}

TEST(CliFilters, ViewStatsReportTheFilter) {
  const auto every = tensor_neurons(nnxr("inspect --scene --json").out);
  const std::string headless = "env -u DISPLAY -u WAYLAND_DISPLAY";
  const Result r = nnxr("view --frames 1 --stats --width 64 --height 48 --layers 2:4 --ops Relu", headless);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(lines(r.out), 1) << r.out;
  EXPECT_NE(r.out.find(R"("filter":{"layer_min":2,"layer_max":4,"ops":["Relu"],"tensors":[],"mode":"hide"})"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(number_after(r.out, R"("drawn":{"neurons":)"), every.at(kRelu1) + every.at(kRelu2)) << r.out;

  // Dimmed: everything is drawn, the filter is reported as given.
  const Result dim = nnxr("view --frames 1 --stats --width 64 --height 48 --tensors probabilities --filter-mode dim", headless);
  ASSERT_EQ(dim.exit_code, 0) << dim.err;
  EXPECT_NE(dim.out.find(R"("filter":{"layer_min":0,"layer_max":8,"ops":[],"tensors":["probabilities"],"mode":"dim"})"),
            std::string::npos)
      << dim.out;
  int64_t total = 0;
  for (const auto& [name, n] : every) total += n;
  EXPECT_EQ(number_after(dim.out, R"("drawn":{"neurons":)"), total) << dim.out;

  // No filter: the whole model.
  const Result none = nnxr("view --frames 1 --stats --width 64 --height 48", headless);
  EXPECT_NE(none.out.find(R"("filter":{"layer_min":0,"layer_max":8,"ops":[],"tensors":[],"mode":"hide"})"), std::string::npos)
      << none.out;
}

// ---- render's limits and its one-line errors (issue 20) -----------------------------------------

// render --budget is capped by --max-memory as well as by the device: the scene buffers (two
// regions of 16 bytes an element) and the build's arrays count against the ceiling beside the
// run's tensors, and the note saying so comes after the result.
TEST(CliRender, TheBudgetIsCappedByTheMemoryCeiling) {
  // A Relu over 40,000 values: 80,000 neurons and 40,000 connections, 5.5 MiB at 48 bytes each.
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / ("nnxr-render-budget-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const std::string model = (dir / "relu.onnx").string();
  ASSERT_EQ(std::system(("/usr/bin/python3 -c \"import onnx, onnx.parser, sys; onnx.save(onnx.parser.parse_model("
                         "'<ir_version: 8, opset_import: [\\\"\\\" : 13]> g (float[40000] X) => (float[40000] Y) { Y = Relu(X) }'), sys.argv[1])\" '" +
                         model + "'").c_str()),
            0);
  const std::string common = "render '" + model + "' --random 1 --width 64 --height 48 --focus all --budget 1000000000";
  const Result full = nnxr(common + " --out full.png");
  ASSERT_EQ(full.exit_code, 0) << full.err;
  EXPECT_EQ(full.err.find("lowered"), std::string::npos) << full.err;
  const Result r = nnxr(common + " --out capped.png --max-memory 1M");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::regex lowered(R"(render: budget (\d+) lowered to (\d+): at 48 bytes an element, that is what fits in the [0-9.]+ KiB left under the memory ceiling of 1\.0 MiB \(--max-memory\) beside the run's [0-9.]+ KiB)");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.err, m, lowered)) << r.err;
  EXPECT_LE(std::stoll(m[2]) * 48, 1 << 20);
  EXPECT_GT(std::stoll(m[2]), 10000);
  const std::regex resident(R"(points_resident (\d+), connections_resident (\d+))");
  std::smatch a, b;
  ASSERT_TRUE(std::regex_search(full.out, a, resident)) << full.out;
  ASSERT_TRUE(std::regex_search(r.out, b, resident)) << r.out;
  EXPECT_GE(std::stoll(m[1]), std::stoll(a[1]) + std::stoll(a[2])) << "the budget asked for covers the whole focus";
  EXPECT_EQ(std::stoll(a[1]) + std::stoll(a[2]), 120000) << full.out;
  EXPECT_LE(std::stoll(b[1]) + std::stoll(b[2]), std::stoll(m[2])) << r.out;
  EXPECT_GT(std::stoll(b[1]), 0) << r.out;
  // A scene without connections (the input alone) renders; under UBSan this is the null-source
  // memcpy of engine/scene_buffers.cpp that item 19 names (a report would be a line on stderr).
  const Result none = nnxr("render '" + model + "' --random 1 --width 64 --height 48 --focus X --out none.png");
  ASSERT_EQ(none.exit_code, 0) << none.err;
  EXPECT_NE(none.out.find("points_resident 40000, connections_resident 0"), std::string::npos) << none.out;
  EXPECT_EQ(none.err, "");
  std::filesystem::remove_all(dir);
}

// A render that fails prints its one error line and nothing before it: the loader's warning (a
// symbolic input dimension), the input note and the other notes are held until the PNG is
// written. The model: a Loop of trip count 1e9, stopped by --max-loop-iterations.
TEST(CliRender, AFailingRenderPrintsOneLine) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / ("nnxr-render-fail-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const std::string model = (dir / "loop.onnx").string();
  const std::string script = "import onnx, onnx.parser, sys\n"
                             "onnx.save(onnx.parser.parse_model('''\n"
                             "<ir_version: 8, opset_import: [\"\" : 13]>\n"
                             "g (float[N] X) => (float[N] S) {\n"
                             "  M = Constant <value = int64 {1000000000}> ()\n"
                             "  C = Constant <value = bool {1}> ()\n"
                             "  S = Loop (M, C, X) <body = b (int64 i, bool c, float[N] s) => (bool co, float[N] so) {\n"
                             "    co = Identity(c)\n"
                             "    so = Neg(s)\n"
                             "  }>\n"
                             "}'''), sys.argv[1])\n"
                             "onnx.save(onnx.parser.parse_model('''\n"
                             "<ir_version: 8, opset_import: [\"\" : 13]>\n"
                             "g (float[N] X) => (float[N] Y) {\n"
                             "  Y = Relu(X)\n"
                             "}'''), sys.argv[2])\n";
  std::ofstream(dir / "make.py") << script;
  const std::string relu = (dir / "relu.onnx").string();
  ASSERT_EQ(std::system(("/usr/bin/python3 '" + (dir / "make.py").string() + "' '" + model + "' '" + relu + "'").c_str()), 0);
  // A render that succeeds prints the warning (after its result).
  const Result ok = nnxr("render '" + relu + "' --random 1 --out ok.png --width 64 --height 48");
  ASSERT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_NE(ok.out.find("wrote ok.png"), std::string::npos) << ok.out;
  EXPECT_NE(ok.err.find("is symbolic"), std::string::npos) << ok.err;
  // One that fails prints exactly its error line.
  const Result r = nnxr("render '" + model + "' --random 1 --out x.png --width 64 --height 48 --max-loop-iterations 10");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("nnxr: "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("stopped after 10 iterations"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("symbolic"), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "");
  std::filesystem::remove_all(dir);
}

// view --focus: points for the named tensors and those feeding them; all: every tensor; a name
// the model lacks is a one-line error. The images show every activation regardless.
TEST(CliFilters, ViewFocusNamesTheTensorsWithPoints) {
  const auto every = tensor_neurons(nnxr("inspect --scene --json").out);
  const std::string headless = "env -u DISPLAY -u WAYLAND_DISPLAY";
  const Result r = nnxr("view --frames 1 --stats --width 64 --height 48 --focus " + std::string(kRelu2), headless);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(number_after(r.out, R"("focus_tensors":)"), 1) << r.out;
  const int64_t total = number_after(r.out, R"("activations_total":)");
  EXPECT_EQ(number_after(r.out, R"("activations_shown":)"), total) << r.out;
  const int64_t points = number_after(r.out, R"("points_resident":)");
  EXPECT_GE(points, every.at(kRelu2)) << r.out;  // the focus and what feeds it
  EXPECT_LT(points, total) << r.out;

  const Result all = nnxr("view --frames 1 --stats --width 64 --height 48 --focus all", headless);
  ASSERT_EQ(all.exit_code, 0) << all.err;
  EXPECT_EQ(number_after(all.out, R"("focus_tensors":)"), 0) << all.out;
  EXPECT_EQ(number_after(all.out, R"("points_resident":)"), total) << all.out;

  const Result bad = nnxr("view --frames 1 --stats --width 64 --height 48 --focus nope", headless);
  EXPECT_EQ(bad.exit_code, 1) << bad.err;
  EXPECT_NE(bad.err.find("no tensor named 'nope'"), std::string::npos) << bad.err;
}
#endif

}  // namespace
