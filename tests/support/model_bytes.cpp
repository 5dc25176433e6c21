#include "tests/support/model_bytes.h"

#include <onnx/defs/parser.h>
#include <onnx/onnx_pb.h>
#include <unistd.h>

#include <fstream>
#include <stdexcept>

namespace nnxr::test {

std::string edited_model(std::string_view text, const std::function<void(onnx::ModelProto&)>& edit) {
  onnx::ModelProto model;
  const std::string source(text);  // the parser keeps a pointer into it
  onnx::OnnxParser parser(source.c_str());
  auto status = parser.Parse(model);
  if (!status.IsOK()) throw std::runtime_error("bad test model: " + status.ErrorMessage());
  if (edit) edit(model);
  return model.SerializeAsString();
}

std::filesystem::path write_file(const std::filesystem::path& path, std::string_view bytes) {
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path());
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!f) throw std::runtime_error("cannot write " + path.string());
  return path;
}

std::filesystem::path temp_dir(std::string_view name) {
  auto dir = std::filesystem::temp_directory_path() /
             ("nnxr-test-" + std::to_string(::getpid()) + "-" + std::string(name));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

}  // namespace nnxr::test
