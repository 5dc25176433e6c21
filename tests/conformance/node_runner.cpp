// Runs the ONNX backend node tests (tools/gen-node-tests.sh) through the loader and the runtime
// and compares every output with the expected one at ONNX's tolerances (|a - b| <= atol + rtol*|b|,
// rtol 1e-3, atol 1e-7; NaN matches NaN; integers and bools exactly).
//
//   node_runner DIR [--expected FILE] [--only-expected] [--write-passing FILE]
//
// Prints one line per failing case and "N passed, M failed" at the end. Exits 1 when a case
// listed in --expected does not pass (the list only grows), else 0.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <string>
#include <vector>

#include "model/load.h"
#include "model/runtime/runtime.h"
#include "model/tensor_io.h"

namespace fs = std::filesystem;
using namespace nnxr;

namespace {

bool close(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  if (std::isinf(a) || std::isinf(b)) return a == b;
  return std::fabs(a - b) <= 1e-7 + 1e-3 * std::fabs(b);
}

double element(const std::byte* p, model::DType t, size_t i) {
  auto get = [&](auto tag) {
    decltype(tag) v;
    std::memcpy(&v, p + i * sizeof v, sizeof v);
    return static_cast<double>(v);
  };
  switch (t) {
    case model::DType::Float: return get(float{});
    case model::DType::Double: return get(double{});
    case model::DType::Int64: return get(int64_t{});
    case model::DType::Int32: return get(int32_t{});
    case model::DType::Int16: return get(int16_t{});
    case model::DType::Int8: return get(int8_t{});
    case model::DType::UInt8:
    case model::DType::Bool: return get(uint8_t{});
    case model::DType::UInt16: return get(uint16_t{});
    case model::DType::UInt32: return get(uint32_t{});
    case model::DType::UInt64: return get(uint64_t{});
    default: return NAN;
  }
}

// Empty string: pass; else why not.
std::string run_case(const fs::path& dir) {
  const fs::path data = dir / "test_data_set_0";
  std::vector<model::TensorData> inputs, outputs;
  for (int i = 0; fs::exists(data / ("input_" + std::to_string(i) + ".pb")); ++i)
    inputs.push_back(model::read_tensor_pb(data / ("input_" + std::to_string(i) + ".pb")));
  for (int i = 0; fs::exists(data / ("output_" + std::to_string(i) + ".pb")); ++i)
    outputs.push_back(model::read_tensor_pb(data / ("output_" + std::to_string(i) + ".pb")));
  model::LoadOptions options;
  {
    const model::Graph probe = model::load_model(dir / "model.onnx");
    for (size_t i = 0; i < inputs.size() && i < probe.inputs.size(); ++i)
      options.input_shapes[probe.tensors[probe.inputs[i]].name] = inputs[i].shape;
  }
  auto plan = runtime::Plan::build(model::load_model(dir / "model.onnx", options));
  const model::Graph& g = plan->graph();
  if (inputs.size() != g.inputs.size()) return "the case feeds " + std::to_string(inputs.size()) + " inputs, the model has " + std::to_string(g.inputs.size());
  runtime::Session session(plan);
  for (size_t i = 0; i < inputs.size(); ++i) session.set_input(i, inputs[i].dtype, inputs[i].shape, inputs[i].bytes);
  session.run();
  if (outputs.size() != g.outputs.size()) return "output count differs";
  for (size_t k = 0; k < outputs.size(); ++k) {
    const auto& want = outputs[k];
    const runtime::Value* got = session.value(g.outputs[k]);
    const std::string name = g.tensors[g.outputs[k]].name;
    if (!got || got->empty()) return "output '" + name + "' not computed";
    if (got->dtype() != want.dtype) return "output '" + name + "' is " + std::string(model::dtype_name(got->dtype())) + ", expected " + std::string(model::dtype_name(want.dtype));
    if (!std::equal(got->shape().begin(), got->shape().end(), want.shape.begin(), want.shape.end()))
      return "output '" + name + "' has shape " + model::shape_string(got->shape()) + ", expected " + model::shape_string(want.shape);
    if (want.dtype == model::DType::String) return "string outputs are not compared";
    const size_t n = static_cast<size_t>(got->elements());
    for (size_t i = 0; i < n; ++i) {
      const double a = element(got->data(), got->dtype(), i), b = element(want.bytes.data(), want.dtype, i);
      if (!close(a, b)) return "output '" + name + "' element " + std::to_string(i) + " is " + std::to_string(a) + ", expected " + std::to_string(b);
    }
  }
  return {};
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: node_runner DIR [--expected FILE] [--only-expected] [--write-passing FILE]\n";
    return 2;
  }
  const fs::path root = argv[1];
  std::set<std::string> expected;
  bool only_expected = false;
  std::string write_passing;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--expected" && i + 1 < argc) {
      std::ifstream f(argv[++i]);
      for (std::string line; std::getline(f, line);)
        if (!line.empty() && line[0] != '#') expected.insert(line);
    } else if (a == "--only-expected") {
      only_expected = true;
    } else if (a == "--write-passing" && i + 1 < argc) {
      write_passing = argv[++i];
    } else {
      std::cerr << "node_runner: unknown argument " << a << '\n';
      return 2;
    }
  }
  if (!fs::is_directory(root)) {
    std::cerr << "node_runner: " << root.string() << ": no such folder (run tools/gen-node-tests.sh)\n";
    return 2;
  }
  std::vector<std::string> cases;
  for (const auto& suite : fs::directory_iterator(root))
    if (suite.is_directory())
      for (const auto& c : fs::directory_iterator(suite.path()))
        if (fs::exists(c.path() / "model.onnx")) cases.push_back(suite.path().filename().string() + "/" + c.path().filename().string());
  std::sort(cases.begin(), cases.end());
  int passed = 0, failed = 0, regressions = 0;
  std::vector<std::string> passing;
  for (const std::string& c : cases) {
    if (only_expected && !expected.count(c)) continue;
    std::string why;
    try {
      why = run_case(root / c);
    } catch (const std::exception& e) {
      why = e.what();
    }
    if (why.empty()) {
      ++passed;
      passing.push_back(c);
      continue;
    }
    ++failed;
    const bool regression = expected.count(c) > 0;
    regressions += regression;
    std::cout << (regression ? "REGRESSION " : "fail ") << c << ": " << why.substr(0, 300) << '\n';
  }
  if (!write_passing.empty()) {
    std::ofstream f(write_passing);
    f << "# ONNX backend node tests that pass (tests/conformance/node_runner); this list only grows.\n";
    for (const auto& c : passing) f << c << '\n';
  }
  std::cout << "conformance: " << passed << " of " << (passed + failed) << " cases pass";
  if (!expected.empty()) std::cout << "; " << regressions << " of " << expected.size() << " expected cases fail";
  std::cout << '\n' << passed << " passed, " << failed << " failed\n";
  return regressions ? 1 : 0;
}
