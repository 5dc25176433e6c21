// Test and benchmark support: the real models in the shared folder (NNXR_SHARED_MODELS, set by
// the build) and its arch/ sub-folder, sorted; empty when the folder is absent.
#pragma once

#include <algorithm>
#include <filesystem>
#include <vector>

namespace nnxr::test {

inline std::vector<std::filesystem::path> shared_model_paths() {
  namespace fs = std::filesystem;
  std::vector<fs::path> out;
  for (const char* sub : {"", "arch"}) {
    const fs::path dir = fs::path(NNXR_SHARED_MODELS) / sub;
    if (!fs::is_directory(dir)) continue;
    for (const auto& e : fs::directory_iterator(dir))
      if (e.path().extension() == ".onnx") out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace nnxr::test
