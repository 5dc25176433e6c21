// Load time of every shared model (parse, checker, shape inference, graph) and of the embedded
// default model. Run: build/bench/bench_load [--benchmark_filter=mobilenet].
#include <benchmark/benchmark.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

#include "assets/assets.h"
#include "model/load.h"
#include "tests/support/shared_models.h"

namespace {

namespace fs = std::filesystem;

void load_file(benchmark::State& state, const fs::path& path) {
  // Read once: the benchmark measures loading from memory, not the disk cache.
  std::ifstream f(path, std::ios::binary);
  std::vector<char> raw((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const auto bytes = std::as_bytes(std::span(raw.data(), raw.size()));
  nnxr::model::LoadOptions options;
  if (path.filename() == "face_detection_yunet.onnx") options.dims = {{"height", 320}, {"width", 320}};
  size_t tensors = 0;
  for (auto _ : state) {
    auto g = nnxr::model::load_model_from_memory(bytes, path.filename().string(), options, path.parent_path());
    tensors = g.tensors.size();
    benchmark::DoNotOptimize(g);
  }
  state.counters["tensors"] = static_cast<double>(tensors);
  state.counters["MB/s"] = benchmark::Counter(static_cast<double>(raw.size()) * static_cast<double>(state.iterations()) / 1e6,
                                              benchmark::Counter::kIsRate);
}

void load_default(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(nnxr::model::load_model_from_memory(nnxr::assets::default_model().bytes, "digits.onnx"));
}
BENCHMARK(load_default)->Unit(benchmark::kMillisecond);

const int registered = [] {
  for (const fs::path& p : nnxr::test::shared_model_paths())
    benchmark::RegisterBenchmark(("load/" + p.stem().string()).c_str(), load_file, p)->Unit(benchmark::kMillisecond);
  return 0;
}();

}  // namespace

BENCHMARK_MAIN();
