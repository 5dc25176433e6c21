// Test support: runs the nnxr executable (NNXR_BINARY, defined by nnxr_test()) as a user would,
// and returns its exit code, stdout and stderr.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace nnxr::test {

struct RunResult {
  int exit_code = -1;  // 128 + signal when it died of one
  std::string out, err;
};

inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// Runs `nnxr ARGS` in a fresh empty working folder (removed afterwards), stdin from /dev/null,
// with `env` ("NAME=value ...") set for it.
inline RunResult run_nnxr(const std::string& args, const std::string& env = "") {
  namespace fs = std::filesystem;
  static std::atomic<int> counter{0};
  const fs::path dir = fs::temp_directory_path() / ("nnxr-run-" + std::to_string(getpid()) + "-" + std::to_string(counter++));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string cmd = "cd '" + dir.string() + "' && " + env + " '" + NNXR_BINARY + "' " + args + " >out 2>err </dev/null";
  const int status = std::system(cmd.c_str());
  RunResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = slurp(dir / "out");
  r.err = slurp(dir / "err");
  fs::remove_all(dir);
  return r;
}

}  // namespace nnxr::test
