// Test support: checks that a program's stdout is exactly one line holding one JSON value, by
// parsing it with Python's json module (Debian's /usr/bin/python3).
#pragma once

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace nnxr::test {

// Empty when `out` is one line ending in '\n' that parses as JSON; else what is wrong.
inline std::string one_json_line(const std::string& out) {
  namespace fs = std::filesystem;
  static std::atomic<int> counter{0};
  const fs::path file = fs::temp_directory_path() / ("nnxr-json-" + std::to_string(getpid()) + "-" + std::to_string(counter++));
  std::ofstream(file, std::ios::binary) << out;
  const std::string cmd = "/usr/bin/python3 -c 'import json, sys\n"
                          "s = open(sys.argv[1]).read()\n"
                          "assert s.endswith(\"\\n\") and s.count(\"\\n\") == 1, \"not exactly one line\"\n"
                          "json.loads(s)' '" + file.string() + "' >/dev/null 2>&1";
  const int status = std::system(cmd.c_str());
  fs::remove(file);
  return status == 0 ? "" : "stdout is not exactly one JSON line: [" + out + "]";
}

}  // namespace nnxr::test
