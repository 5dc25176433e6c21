// The nnxr executable end to end: default model, --json, --dim, usage errors and bad files.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <chrono>
#include <cstring>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/support/model_bytes.h"
#include "tests/support/run_nnxr.h"

namespace {

namespace fs = std::filesystem;

using Result = nnxr::test::RunResult;
using nnxr::test::slurp;

Result nnxr(const std::string& args) { return nnxr::test::run_nnxr(args); }

int lines(const std::string& s) { return static_cast<int>(std::count(s.begin(), s.end(), '\n')); }

TEST(Cli, InspectWithoutModelShowsTheDefaultModel) {
  Result r = nnxr("inspect");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("digits.onnx"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("digit  float32 [1, 1, 8, 8]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Conv×2"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Softmax×1"), std::string::npos) << r.out;
}

TEST(Cli, InspectJsonListsEveryTensor) {
  Result r = nnxr("inspect --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(lines(r.out), 1);
  EXPECT_NE(r.out.find(R"({"name":"probabilities","dtype":"float32","shape":[1,10],"layer":8,"kind":"activation","op":"Softmax")"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find(R"({"name":"digit","dtype":"float32","shape":[1,1,8,8],"layer":0,"kind":"input","op":null)"),
            std::string::npos);
  EXPECT_NE(r.out.find(R"("layers":9)"), std::string::npos);
  if (std::system("/usr/bin/python3 -c 'import json' 2>/dev/null") == 0) {
    const fs::path dir = nnxr::test::temp_dir("cli-json");
    nnxr::test::write_file(dir / "out.json", r.out);
    const std::string check = "/usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); "
                              "assert len(d[\"tensors\"]) == 15, len(d[\"tensors\"])' '" + (dir / "out.json").string() + "'";
    EXPECT_EQ(std::system(check.c_str()), 0) << "JSON does not parse or has the wrong tensor count";
    fs::remove_all(dir);
  }
}

TEST(Cli, DimOptionReachesTheLoader) {
  const fs::path dir = nnxr::test::temp_dir("cli-dim");
  nnxr::test::write_file(dir / "m.onnx", nnxr::test::edited_model(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[batch, 4] X) => (float[batch, 4] Y) { Y = Relu(X) })", nullptr));
  Result r = nnxr("inspect '" + (dir / "m.onnx").string() + "' --dim batch=6 --json");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find(R"("shape":[6,4])"), std::string::npos) << r.out;
  Result defaulted = nnxr("inspect '" + (dir / "m.onnx").string() + "'");
  EXPECT_EQ(defaulted.exit_code, 0);
  EXPECT_NE(defaulted.err.find("--dim batch=N"), std::string::npos) << defaulted.err;
  fs::remove_all(dir);
}

TEST(Cli, UsageErrorsExitWithTwo) {
  for (const char* args : {"inspect --bogus", "frobnicate", "inspect --dim", "inspect --dim x", "inspect a.onnx b.onnx"}) {
    Result r = nnxr(args);
    EXPECT_EQ(r.exit_code, 2) << args;
    EXPECT_EQ(lines(r.err), 1) << args << ": " << r.err;
    EXPECT_EQ(r.err.rfind("nnxr: ", 0), 0u) << r.err;
  }
}

TEST(Cli, BadFilesGiveOneLineAndExitOne) {
  const fs::path dir = nnxr::test::temp_dir("cli-bad");
  nnxr::test::write_file(dir / "empty.onnx", "");
  nnxr::test::write_file(dir / "text.onnx", "not a model\n");
  for (const fs::path& p : {dir / "missing.onnx", dir, dir / "empty.onnx", dir / "text.onnx"}) {
    Result r = nnxr("inspect '" + p.string() + "'");
    EXPECT_EQ(r.exit_code, 1) << p;
    EXPECT_EQ(lines(r.err), 1) << p << ": " << r.err;
    EXPECT_NE(r.err.find(p.string()), std::string::npos) << r.err;
    EXPECT_EQ(r.out, "");
  }
  fs::remove_all(dir);
}

TEST(Cli, HelpAndVersion) {
  Result help = nnxr("--help");
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.out.find("nnxr inspect"), std::string::npos);
  Result version = nnxr("--version");
  EXPECT_EQ(version.exit_code, 0);
  EXPECT_EQ(version.out.rfind("nnxr ", 0), 0u);
}

TEST(Cli, CommandHelpShowsThatCommandsUsageAndOptions) {
  for (const std::string command : {"inspect", "run", "render", "view"}) {
    Result help = nnxr(command + " --help");
    EXPECT_EQ(help.exit_code, 0) << command;
    EXPECT_EQ(help.out.rfind("usage:\n", 0), 0u) << help.out;
    EXPECT_NE(help.out.find("\n" + command + " "), std::string::npos) << help.out;  // its section
    EXPECT_NE(help.out.find("--"), std::string::npos) << help.out;                  // its options
  }
  EXPECT_NE(nnxr("render -h").out.find("--out FILE.png"), std::string::npos);
  EXPECT_EQ(nnxr("run --help").out.find("\nrender "), std::string::npos);  // not the other sections
}

}  // namespace

namespace {

TEST(CliRun, DefaultModelClassifiesTheSampleDigit) {
  Result r = nnxr("run");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("output probabilities  float32 [1, 10]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("argmax=3"), std::string::npos) << r.out;
}

TEST(CliRun, ImageInputsAreNormalisedFromMetadata) {
  for (int d : {0, 7, 9}) {
    Result r = nnxr("run --input " NNXR_SOURCE_DIR "/assets/digit-" + std::to_string(d) + ".png --json");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("\"argmax\":" + std::to_string(d)), std::string::npos) << r.out;
  }
}

TEST(CliRun, DumpWritesEveryComputedTensorAndAnIndex) {
  const fs::path dir = nnxr::test::temp_dir("cli-dump");
  Result r = nnxr("run --dump '" + dir.string() + "' --repeat 3");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("median="), std::string::npos) << r.out;
  const std::string index = slurp(dir / "index.json");
  EXPECT_EQ(std::count(index.begin(), index.end(), '{'), 8) << index;  // the 8 node outputs
  EXPECT_NE(index.find(R"("name":"probabilities","file":"0007_probabilities.npy","shape":[1,10],"dtype":"float32","node":)"),
            std::string::npos)
      << index;
  const std::string npy = slurp(dir / "0007_probabilities.npy");
  ASSERT_GE(npy.size(), 128u + 40u);
  EXPECT_EQ(npy.substr(0, 6), "\x93NUMPY");
  EXPECT_EQ(npy.size() % 4, 0u);
  fs::remove_all(dir);
}

TEST(CliRun, ProfileListsTimePerOpType) {
  Result r = nnxr("run --repeat 2 --profile");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto at = r.out.find("time per op type (ms per run):\n");
  ASSERT_NE(at, std::string::npos) << r.out;
  // The default model's ops, each once with its node count; shares add up to 100 %.
  for (const char* op : {"Conv", "Relu", "MaxPool", "Gemm", "Softmax"}) EXPECT_NE(r.out.find("  " + std::string(op) + " "), std::string::npos) << op << r.out;
  EXPECT_NE(r.out.find("x2\n"), std::string::npos) << r.out;  // two Conv nodes
  double share = 0;
  std::istringstream lines(r.out.substr(at));
  for (std::string line; std::getline(lines, line);)
    if (const auto pct = line.find('%'); pct != std::string::npos) share += std::stod(line.substr(line.rfind(' ', pct - 1) + 1));
  EXPECT_NEAR(share, 100.0, 1.0) << r.out;
}

// The kernel set that ran is reported; NNXR_ISA lowers it (the portable kernels give the same
// answer), and an unknown name is a warning, not a failure.
TEST(CliRun, ReportsTheKernelSetAndNnxrIsaLowersIt) {
  Result best = nnxr("run --json");
  ASSERT_EQ(best.exit_code, 0) << best.err;
  bool named = false;
  for (const char* isa : {"avx512", "avx2", "portable"}) named |= best.out.find("\"isa\":\"" + std::string(isa) + "\"") != std::string::npos;
  EXPECT_TRUE(named) << best.out;
  Result portable = nnxr::test::run_nnxr("run --json", "NNXR_ISA=portable");
  ASSERT_EQ(portable.exit_code, 0) << portable.err;
  EXPECT_NE(portable.out.find("\"isa\":\"portable\""), std::string::npos) << portable.out;
  EXPECT_NE(portable.out.find("\"argmax\":3"), std::string::npos) << portable.out;
  Result profile = nnxr::test::run_nnxr("run --repeat 1 --profile", "NNXR_ISA=portable");
  ASSERT_EQ(profile.exit_code, 0) << profile.err;
  EXPECT_NE(profile.out.find("kernels: portable (this CPU: "), std::string::npos) << profile.out;
  Result bogus = nnxr::test::run_nnxr("run", "NNXR_ISA=sse9");
  EXPECT_EQ(bogus.exit_code, 0) << bogus.err;
  EXPECT_NE(bogus.err.find("warning: NNXR_ISA=sse9 is not one of avx512, avx2, portable"), std::string::npos) << bogus.err;
}

TEST(CliRun, BadInputsAreOneLineErrors) {
  const fs::path dir = nnxr::test::temp_dir("cli-run-bad");
  nnxr::test::write_file(dir / "junk.npy", "not numpy");
  nnxr::test::write_file(dir / "junk.png", "not a png");
  struct Case {
    std::string args;
    int code;
    const char* fragment;
  } cases[] = {
      {"run --input '" + (dir / "junk.npy").string() + "'", 1, "not a .npy file"},
      {"run --input '" + (dir / "junk.png").string() + "'", 1, "not a readable image"},
      {"run --input '" + (dir / "missing.npy").string() + "'", 1, "no such file"},
      {"run --input nope=x.npy", 2, "has no input 'nope'"},
      {"run --threads -3", 2, "--threads"},
  };
  for (const Case& c : cases) {
    Result r = nnxr(c.args);
    EXPECT_EQ(r.exit_code, c.code) << c.args << ": " << r.err;
    EXPECT_EQ(lines(r.err), 1) << c.args << ": " << r.err;
    EXPECT_NE(r.err.find(c.fragment), std::string::npos) << c.args << ": " << r.err;
  }
  fs::remove_all(dir);
}


// ---- hostile models and inputs (issue 20): each ends in one clean line, never a hang or a signal

// Seconds `nnxr ARGS` took.
double timed(Result& r, const std::string& args, const std::string& env = "") {
  const auto t0 = std::chrono::steady_clock::now();
  r = nnxr::test::run_nnxr(args, env);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::string write_model(const fs::path& dir, const std::string& name, const char* text) {
  return nnxr::test::write_file(dir / name, nnxr::test::edited_model(text, nullptr)).string();
}

// A Loop whose trip count is 1e9 (or absent) and whose condition stays true.
constexpr const char* kEndlessLoop = R"(
  <ir_version: 8, opset_import: ["" : 13]>
  g (float[2] X) => (float[2] S) {
    M = Constant <value = int64 {1000000000}> ()
    C = Constant <value = bool {1}> ()
    S = Loop (M, C, X) <body = b (int64 i, bool c, float[2] s) => (bool co, float[2] so) {
      co = Identity(c)
      so = Neg(s)
    }>
  })";

TEST(CliLimits, LoopWithTripCount1e9StopsAtTheIterationCap) {
  const fs::path dir = nnxr::test::temp_dir("cli-loop-cap");
  const std::string m = write_model(dir, "loop.onnx", kEndlessLoop);
  Result r;
  const double s = timed(r, "run '" + m + "' --random 1 --max-loop-iterations 5000");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("stopped after 5000 iterations"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--max-loop-iterations"), std::string::npos) << r.err;
  EXPECT_LT(s, 30);
  // The default cap ends it too, well within 30 s (a sanitizer build of nnxr runs the loop about
  // eight times slower, so there the bound is scaled).
#if defined(__SANITIZE_ADDRESS__)
  constexpr double kSlowdown = 8;
#else
  constexpr double kSlowdown = 1;
#endif
  const double d = timed(r, "run '" + m + "' --random 1");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("stopped after 1000000 iterations"), std::string::npos) << r.err;
  EXPECT_LT(d, 30 * kSlowdown);
  Result bad = nnxr("run --max-loop-iterations 0");
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
  fs::remove_all(dir);
}

// `inspect` holds external weights once: read into the tensor's own buffer, not into the protobuf
// and then copied (128 MiB of weights peaked at about 2 x 128 MiB + the program before).
TEST(CliLimits, InspectHoldsExternalWeightsOnce) {
  const fs::path dir = nnxr::test::temp_dir("cli-external-once");
  constexpr int64_t kFloats = int64_t{32} << 20;  // 128 MiB
  {
    std::ofstream w(dir / "weights.bin", std::ios::binary);
    const std::vector<float> chunk(1 << 20, 0.25f);
    for (int64_t i = 0; i < kFloats; i += int64_t(chunk.size())) w.write(reinterpret_cast<const char*>(chunk.data()), std::streamsize(chunk.size() * 4));
  }
  const std::string model = nnxr::test::write_file(dir / "m.onnx", nnxr::test::edited_model(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[33554432] X) => (float[33554432] Y) {
      Y = Add (X, W)
    })", [](onnx::ModelProto& m) {
    auto* w = m.mutable_graph()->add_initializer();
    w->set_name("W");
    w->set_data_type(onnx::TensorProto::FLOAT);
    w->add_dims(kFloats);
    w->set_data_location(onnx::TensorProto::EXTERNAL);
    auto* loc = w->add_external_data();
    loc->set_key("location");
    loc->set_value("weights.bin");
  })).string();
  Result r = nnxr("inspect '" + model + "' --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("33554432"), std::string::npos);
  rusage children{};
  ASSERT_EQ(getrusage(RUSAGE_CHILDREN, &children), 0);
  const double peak_mib = double(children.ru_maxrss) / 1024.0;  // the largest child: nnxr
#if !defined(__SANITIZE_ADDRESS__)  // ASan's shadow memory and quarantine change the figure
  EXPECT_LT(peak_mib, 128 * 1.5) << "nnxr inspect peaked at " << peak_mib << " MiB for 128 MiB of weights";
#endif
  EXPECT_GT(peak_mib, 128) << "the weights were read";
  fs::remove_all(dir);
}

// Item 18: a 9 GiB model file (sparse) is refused by its size before anything is read.
TEST(CliLimits, AModelOverProtobufsLimitIsRefusedWithoutReadingIt) {
  const fs::path dir = nnxr::test::temp_dir("cli-9g");
  { std::ofstream(dir / "big.onnx"); }
  fs::resize_file(dir / "big.onnx", uint64_t{9} << 30);
  Result r;
  const double s = timed(r, "inspect '" + (dir / "big.onnx").string() + "'");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("is 9.0 GiB, over the 2.0 GiB limit of protobuf"), std::string::npos) << r.err;
  EXPECT_LT(s, 5);
  rusage children{};
  ASSERT_EQ(getrusage(RUSAGE_CHILDREN, &children), 0);
#if !defined(__SANITIZE_ADDRESS__)
  EXPECT_LT(children.ru_maxrss, 256 * 1024) << "KiB";
#endif
  fs::remove_all(dir);
}

// Item 18: a Split into 10,000 outputs made the scene cost 48 B·N² (4.65 GB); one set of values
// per node keeps it linear.
TEST(CliLimits, ASplitIntoTenThousandOutputsBuildsItsSceneInLittleMemory) {
  const fs::path dir = nnxr::test::temp_dir("cli-split");
  const std::string script =
      "import onnx, sys\n"
      "from onnx import helper, TensorProto\n"
      "n = 10000\n"
      "outs = ['y%d' % i for i in range(n)]\n"
      "g = helper.make_graph([helper.make_node('Split', ['x'], outs, axis=1)], 'g',\n"
      "    [helper.make_tensor_value_info('x', TensorProto.FLOAT, [1, n])],\n"
      "    [helper.make_tensor_value_info(o, TensorProto.FLOAT, [1, 1]) for o in outs])\n"
      "onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid('', 13)]), sys.argv[1])\n";
  nnxr::test::write_file(dir / "make.py", script);
  ASSERT_EQ(std::system(("/usr/bin/python3 '" + (dir / "make.py").string() + "' '" + (dir / "split.onnx").string() + "'").c_str()), 0);
  Result r;
  const double s = timed(r, "inspect --scene '" + (dir / "split.onnx").string() + "' --random 1");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("10,000 connections kept"), std::string::npos) << r.out;
  EXPECT_LT(s, 60);
  rusage children{};
  ASSERT_EQ(getrusage(RUSAGE_CHILDREN, &children), 0);
#if !defined(__SANITIZE_ADDRESS__)
  EXPECT_LT(children.ru_maxrss, 512 * 1024) << "KiB (python and nnxr)";
#endif
  fs::remove_all(dir);
}

// Item 19: attributes and inputs at the ends of int64 give a correct result or one clean line,
// never a silent wrong shape or zeros (and, in the sanitizer build, no UBSan report: a report
// would be a second line on stderr).
TEST(CliArithmetic, Int64ExtremesGiveCorrectShapesOrOneLine) {
  const fs::path dir = nnxr::test::temp_dir("cli-int64");
  // Slice with step INT64_MAX over 10 elements keeps the first one; with step INT64_MIN from the
  // end, the last one.
  const std::string slice = write_model(dir, "slice.onnx", R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[10] X) => (float[?] Y, float[?] Z) {
      st = Constant <value = int64[1] {0}> ()
      en = Constant <value = int64[1] {10}> ()
      ax = Constant <value = int64[1] {0}> ()
      sp = Constant <value = int64[1] {9223372036854775807}> ()
      Y = Slice (X, st, en, ax, sp)
      st2 = Constant <value = int64[1] {-1}> ()
      en2 = Constant <value = int64[1] {-9223372036854775807}> ()
      sp2 = Constant <value = int64[1] {-9223372036854775807}> ()
      Z = Slice (X, st2, en2, ax, sp2)
    })");
  Result r = nnxr("run '" + slice + "' --random 1 --json");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find(R"("name":"Y","dtype":"float32","shape":[1])"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(R"("name":"Z","dtype":"float32","shape":[1])"), std::string::npos) << r.out;
  EXPECT_EQ(r.err, "");
  // Conv with pads of INT64_MAX: the output size overflows; the node fails (it returned zeros).
  const std::string conv = write_model(dir, "conv.onnx", R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1,1,4,4] X, float[1,1,3,3] W) => (float[?,?,?,?] Y) {
      Y = Conv <pads = [9223372036854775807, 0, 9223372036854775807, 0]> (X, W)
    })");
  for (const std::string& m : {conv}) {
    r = nnxr("run '" + m + "' --random 1");
    EXPECT_EQ(r.exit_code, 1) << m << ": " << r.err;
    EXPECT_EQ(lines(r.err), 1) << m << ": " << r.err;
    EXPECT_NE(r.err.find("(Conv)"), std::string::npos) << r.err;
  }
  // Reshape to a shape whose product overflows, and Range across the whole int64 span: one line.
  const std::string reshape = write_model(dir, "reshape.onnx", R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[4] X) => (float[?,?] Y) {
      S = Constant <value = int64[2] {9223372036854775807, 2}> ()
      Y = Reshape (X, S)
    })");
  r = nnxr("run '" + reshape + "' --random 1");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(lines(r.err), 1) << r.err;
  const std::string range = write_model(dir, "range.onnx", R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (int64 A, int64 B) => (int64[?] R) {
      R = Range (A, B, B)
    })");
  r = nnxr("run '" + range + "' --random 1");
  EXPECT_TRUE(r.exit_code == 0 || r.exit_code == 1) << r.err;
  EXPECT_LE(lines(r.err), 1) << r.err;
  fs::remove_all(dir);
}

// A Scan over 1e9 steps of an empty slice: the input [1e9, 0] holds no data, so neither the
// memory ceiling nor anything else stops it before the step cap.
TEST(CliLimits, ScanOf1e9StepsIsRefusedAtTheIterationCap) {
  const fs::path dir = nnxr::test::temp_dir("cli-scan-cap");
  const std::string m = write_model(dir, "scan.onnx", R"(
    <ir_version: 8, opset_import: ["" : 16]>
    g (float[1] X) => (float[1] S) {
      shape = Constant <value = int64[2] {1000000000, 0}> ()
      Z = ConstantOfShape (shape)
      S = Scan <num_scan_inputs = 1, body = b (float[1] s, float[0] z) => (float[1] so) {
        so = Neg(s)
      }> (X, Z)
    })");
  Result r;
  const double s = timed(r, "run '" + m + "' --random 1 --max-loop-iterations 5000");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("scans 1000000000 steps, more than the cap of 5000"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("(Scan)"), std::string::npos) << r.err;
  EXPECT_LT(s, 30);
  // The default cap refuses it too, before the first step.
  const double d = timed(r, "run '" + m + "' --random 1");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("more than the cap of 1000000"), std::string::npos) << r.err;
  EXPECT_LT(d, 30);
  // Under the cap the Scan runs: 3 steps of Neg give -X.
  const std::string small = write_model(dir, "scan3.onnx", R"(
    <ir_version: 8, opset_import: ["" : 16]>
    g (float[1] X) => (float[1] S) {
      shape = Constant <value = int64[2] {3, 0}> ()
      Z = ConstantOfShape (shape)
      S = Scan <num_scan_inputs = 1, body = b (float[1] s, float[0] z) => (float[1] so) {
        so = Neg(s)
      }> (X, Z)
    })");
  r = nnxr("run '" + small + "' --random 1 --max-loop-iterations 3");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  r = nnxr("run '" + small + "' --random 1 --max-loop-iterations 2");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("scans 3 steps, more than the cap of 2"), std::string::npos) << r.err;
  fs::remove_all(dir);
}

TEST(CliLimits, TimeoutEndsARunCleanly) {
  const fs::path dir = nnxr::test::temp_dir("cli-timeout");
  const std::string m = write_model(dir, "loop.onnx", kEndlessLoop);
  Result r;
  const double s = timed(r, "run '" + m + "' --random 1 --max-loop-iterations 2000000000 --timeout 0.5");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("timed out after 0.5 s (--timeout)"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("(Loop)"), std::string::npos) << r.err;
  EXPECT_LT(s, 3);
  EXPECT_EQ(nnxr("run --timeout -1").exit_code, 2);
  fs::remove_all(dir);
}

TEST(CliLimits, CtrlCEndsARunInsideALoopWithinASecond) {
  const fs::path dir = nnxr::test::temp_dir("cli-sigint");
  const std::string m = write_model(dir, "loop.onnx", kEndlessLoop);
  // timeout(1) sends SIGINT after 0.5 s and passes nnxr's own exit status on.
  Result r;
  const double s = timed(r, "run '" + m + "' --random 1 --max-loop-iterations 2000000000", "exec timeout --preserve-status -s INT 0.5");
  EXPECT_EQ(r.exit_code, 130) << r.err;
  EXPECT_EQ(lines(r.err), 1) << r.err;
  EXPECT_EQ(r.err.rfind("nnxr: interrupted", 0), 0u) << r.err;
  EXPECT_LT(s, 1.5);
  fs::remove_all(dir);
}

TEST(CliLimits, MemoryCeilingNamesTheNodeOfALoopThatDoublesATensor) {
  const fs::path dir = nnxr::test::temp_dir("cli-doubling");
  const std::string m = write_model(dir, "double.onnx", R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1] X) => (float[?] S) {
      M = Constant <value = int64 {64}> ()
      C = Constant <value = bool {1}> ()
      S = Loop (M, C, X) <body = b (int64 i, bool c, float[?] s) => (bool co, float[?] so) {
        co = Identity(c)
        so = Concat <axis = 0> (s, s)
      }>
    })");
  Result r = nnxr("run '" + m + "' --random 1 --max-memory 256M");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("memory ceiling of 256.0 MiB"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("(Loop)"), std::string::npos) << r.err;
  EXPECT_EQ(nnxr("run --max-memory lots").exit_code, 2);
  fs::remove_all(dir);
}

TEST(CliInputs, SpecialFilesAreRefusedAtOnce) {
  const fs::path dir = nnxr::test::temp_dir("cli-special");
  ASSERT_EQ(mkfifo((dir / "fifo.npy").c_str(), 0600), 0);
  fs::create_symlink("/dev/zero", dir / "zero.npy");
  fs::create_directory(dir / "folder.pb");
  fs::create_symlink("/dev/zero", dir / "zero.png");
  struct Case {
    std::string path;
    const char* fragment;
  } cases[] = {
      {(dir / "fifo.npy").string(), "is a FIFO, not a file"},
      {(dir / "zero.npy").string(), "is a character device, not a file"},
      {(dir / "folder.pb").string(), "is a directory, not a file"},
      {(dir / "zero.png").string(), "is a character device, not a file"},
  };
  for (const Case& c : cases) {
    Result r;
    const double s = timed(r, "run --input '" + c.path + "'");
    EXPECT_EQ(r.exit_code, 1) << c.path << ": " << r.err;
    EXPECT_EQ(lines(r.err), 1) << r.err;
    EXPECT_NE(r.err.find(c.fragment), std::string::npos) << r.err;
    EXPECT_LT(s, 10);
  }
  // As a model as well.
  Result r = nnxr("inspect '" + (dir / "fifo.npy").string() + "'");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("is a FIFO"), std::string::npos) << r.err;
  fs::remove_all(dir);
}

TEST(CliRun, DumpNeverWritesThroughAPlantedSymlink) {
  const fs::path dir = nnxr::test::temp_dir("cli-dump-link");
  const fs::path victim = nnxr::test::write_file(dir / "victim.txt", "precious\n");
  fs::create_directories(dir / "dump");
  fs::create_symlink(victim, dir / "dump" / "0000_conv1.npy");
  fs::create_symlink(victim, dir / "dump" / "index.json");
  Result r = nnxr("run --dump '" + (dir / "dump").string() + "'");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(slurp(victim), "precious\n");
  EXPECT_FALSE(fs::is_symlink(dir / "dump" / "index.json"));
  const std::string index = slurp(dir / "dump" / "index.json");
  EXPECT_NE(index.find("0000_"), std::string::npos) << index;
  fs::remove_all(dir);
}

TEST(CliRender, OutputPathIsCheckedBeforeAnyWork) {
  const fs::path dir = nnxr::test::temp_dir("cli-render-out");
  struct Case {
    std::string out;
    const char* fragment;
  } cases[] = {
      {(dir / "missing" / "x.png").string(), "does not exist"},
      {"/dev/full", "is a character device, not a regular file"},
      {dir.string(), "is a directory, not a regular file"},
  };
  for (const Case& c : cases) {
    Result r;
    const double s = timed(r, "render --out '" + c.out + "'");
    if (r.err.find("not available") != std::string::npos) GTEST_SKIP() << "built without the engine";
    EXPECT_EQ(r.exit_code, 1) << c.out << ": " << r.err;
    EXPECT_EQ(lines(r.err), 1) << r.err;
    EXPECT_EQ(r.out, "");
    EXPECT_NE(r.err.find(c.fragment), std::string::npos) << r.err;
    EXPECT_LT(s, 5);
  }
  fs::remove_all(dir);
}


TEST(CliInputs, ImagesArePngOrJpegByContentAndSixteenBitPngsKeepTheirValues) {
  const fs::path dir = nnxr::test::temp_dir("cli-images");
  const fs::path seeds = NNXR_SOURCE_DIR "/tests/fuzz/inputs";
  // A 16-bit PGM (CVE-2021-42716 in stb_image 2.27) and a Radiance HDR file whose RLE scanline
  // ends at EOF (CVE-2021-42715: an endless loop there), named .png: refused by their content.
  fs::copy_file(seeds / "gray16_4x4.pgm", dir / "pgm.png");
  fs::copy_file(seeds / "rle_cut.hdr", dir / "hdr.png");
  fs::copy_file(seeds / "tiny.gif", dir / "gif.jpg");
  for (const auto& [file, kind] : {std::pair{"pgm.png", "a PNM/PAM image"}, {"hdr.png", "a Radiance HDR image"}, {"gif.jpg", "a GIF image"}}) {
    Result r;
    const double s = timed(r, "run --input '" + (dir / file).string() + "'");
    EXPECT_EQ(r.exit_code, 1) << file << ": " << r.err;
    EXPECT_EQ(lines(r.err), 1) << r.err;
    EXPECT_NE(r.err.find(std::string("only PNG and JPEG are read, and this is ") + kind), std::string::npos) << r.err;
    EXPECT_LT(s, 10);
  }
  // A 16-bit grey PNG into a 4x4 input: each value is its high byte / 255.
  const std::string m = write_model(dir, "id.onnx", R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1, 1, 4, 4] X) => (float[1, 1, 4, 4] Y) { Y = Identity(X) })");
  Result r = nnxr("run '" + m + "' --input '" + (seeds / "gray16_4x4.png").string() + "' --dump '" + (dir / "d").string() + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string npy = slurp(dir / "d" / "0000_Y.npy");
  ASSERT_GE(npy.size(), 64u);
  float v[16];
  std::memcpy(v, npy.data() + npy.size() - sizeof v, sizeof v);
  for (int y = 0; y < 4; ++y)
    for (int x = 0; x < 4; ++x) EXPECT_FLOAT_EQ(v[y * 4 + x], static_cast<float>(((x + y) * 8000) >> 8) / 255.0f) << x << "," << y;
  // A JPEG decodes (RGB into the default model's grey input).
  r = nnxr("run --input '" + (seeds / "rgb16x12.jpg").string() + "'");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  fs::remove_all(dir);
}

}  // namespace
