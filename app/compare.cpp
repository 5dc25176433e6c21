#include "app/compare.h"

#include <algorithm>
#include <filesystem>
#include <iostream>

namespace nnxr::app {
namespace {

bool is_input_file(const std::filesystem::path& p) {
  std::string ext = p.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  for (const char* e : {".png", ".jpg", ".jpeg", ".bmp", ".gif", ".tga", ".ppm", ".pgm", ".npy", ".pb"})
    if (ext == e) return true;
  return false;
}

}  // namespace

InputSpec parse_input_argument(const std::string& argument, const std::string& option) {
  InputSpec spec;
  const auto eq = argument.find('=');
  if (eq != std::string::npos && eq > 0 && !std::filesystem::exists(argument)) {
    spec.name = argument.substr(0, eq);
    spec.file = argument.substr(eq + 1);
  } else {
    spec.file = argument;
  }
  if (spec.file.empty()) throw UsageError(option + " '" + argument + "' names no file");
  return spec;
}

std::vector<InputSpec> expand_input_directories(std::vector<InputSpec> specs) {
  namespace fs = std::filesystem;
  std::vector<InputSpec> out;
  for (InputSpec& s : specs) {
    std::error_code ec;
    if (s.embedded || !fs::is_directory(s.file, ec)) {
      out.push_back(std::move(s));
      continue;
    }
    std::vector<fs::path> files;
    size_t skipped = 0;
    for (const fs::directory_entry& e : fs::directory_iterator(s.file, ec)) {
      std::error_code fe;
      if (e.is_regular_file(fe) && is_input_file(e.path())) files.push_back(e.path());
      else ++skipped;
    }
    if (ec) throw model::ModelError(s.file + ": cannot be read (" + ec.message() + ")");
    if (files.empty()) throw model::ModelError(s.file + ": no input files in this directory (images, .npy or .pb)");
    if (skipped) std::cerr << "note: " << s.file << ": skipped " << skipped << " entr" << (skipped == 1 ? "y" : "ies") << " that are not input files\n";
    std::sort(files.begin(), files.end());
    for (const fs::path& f : files) out.push_back({.name = s.name, .file = f.string(), .embedded = std::nullopt});
  }
  return out;
}

std::map<std::string, model::TensorData> compare_feeds(const std::string& argument, const model::Graph& graph,
                                                       const std::map<std::string, model::TensorData>& a,
                                                       const ImageOptions& image) {
  const InputSpec spec = parse_input_argument(argument, "--compare");
  std::vector<std::string> names;
  for (auto id : graph.inputs) names.push_back(graph.tensors[id].name);
  const std::string input = spec.name.empty() ? (names.empty() ? std::string() : names[0]) : spec.name;
  const std::string file = spec.file;
  InputSet set({spec}, names);
  auto b = set.resolve(graph, 0, image, /*quiet=*/true);
  std::map<std::string, model::TensorData> out = a;
  const auto it = b.find(input);
  if (it == b.end()) throw model::ModelError("--compare " + file + ": the model has no input to compare");
  const auto ia = a.find(input);
  if (ia != a.end() && (ia->second.shape != it->second.shape || ia->second.dtype != it->second.dtype))
    throw model::ModelError("--compare " + file + ": input B has shape " + model::shape_string(it->second.shape) + " " +
                            std::string(model::dtype_name(it->second.dtype)) + ", input A has " +
                            model::shape_string(ia->second.shape) + " " + std::string(model::dtype_name(ia->second.dtype)) +
                            " (input '" + input + "'): they cannot be compared");
  out[input] = std::move(it->second);
  return out;
}

}  // namespace nnxr::app
