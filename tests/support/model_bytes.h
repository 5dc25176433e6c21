// Test support: ONNX models built from the text syntax and then altered at the protobuf level,
// for cases the text syntax cannot express (hostile or external-data files).
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <string_view>

namespace onnx {
class ModelProto;
}

namespace nnxr::test {

// Parses ONNX text into a ModelProto, applies `edit`, and returns the serialized bytes.
std::string edited_model(std::string_view text, const std::function<void(onnx::ModelProto&)>& edit);

// Writes `bytes` to `path` (creating folders) and returns the path.
std::filesystem::path write_file(const std::filesystem::path& path, std::string_view bytes);

// A fresh empty folder under the system temp folder, unique per test.
std::filesystem::path temp_dir(std::string_view name);

}  // namespace nnxr::test
