// The nnxr executable end to end: default model, --json, --dim, usage errors and bad files.
#include <gtest/gtest.h>
#include <sys/wait.h>

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

}  // namespace
