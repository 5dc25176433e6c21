// The headset frame loop's cost at different resident element counts, measured by
// `nnxr view --xr MODEL --budget N --frames F --stats` against the simulated OpenXR runtime
// (tests/xrsim; no validation layers, no mirror, lavapipe):
//  - frame_cpu_ms: frame-thread CPU time per XR frame (median, p99): polling, input, feedback
//    geometry, uniforms, recording and submitting. Must not grow with the resident count.
//  - wait_to_end_ms: wall time from xrWaitFrame's return to xrEndFrame's return (median, p99). It
//    includes the waits for the swapchain image and the frame slot's fence, i.e. on lavapipe the
//    software raster time of the frame before. The runtime paces xrWaitFrame at 90 Hz; that
//    wait comes before xrWaitFrame returns and is in neither figure.
// The budget is filled by the model's strongest connections (mobilenet_v2 has hundreds of
// millions), so `resident` reaches the budget, unless the device holds fewer: the viewer lowers the
// budget to what one buffer and allocation of the device hold (lavapipe: 2 GiB, 134M elements),
// and `resident` reports what was reached.
// Run: build/bench/bench_xr [--benchmark_filter=1M]. Skips when the shared model is absent.
#include <benchmark/benchmark.h>

#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

namespace {

namespace fs = std::filesystem;

// The number after `key` in the --stats line, looking from where `section` starts (-1: absent).
double number_after(const std::string& json, const std::string& key, const std::string& section = "") {
  const auto from = json.find(section);
  if (from == std::string::npos) return -1;
  const auto at = json.find(key, from);
  return at == std::string::npos ? -1 : std::strtod(json.c_str() + at + key.size(), nullptr);
}

void xr_frames(benchmark::State& state, fs::path model, uint64_t budget, int frames) {
  std::string out;
  for (auto _ : state) {
    const std::string cmd = std::string("XR_RUNTIME_JSON='") + NNXR_XRSIM_MANIFEST + "' '" + NNXR_BINARY + "' view --xr '" +
                            model.string() + "' --random 1 --no-mirror --budget " + std::to_string(budget) +
                            " --frames " + std::to_string(frames) + " --stats 2>/dev/null";
    FILE* p = popen(cmd.c_str(), "r");
    out.clear();
    char buf[8192];
    while (p && fgets(buf, sizeof buf, p)) out += buf;
    const int status = p ? pclose(p) : -1;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return state.SkipWithError(("nnxr view --xr failed: " + out).c_str());
    const double median = number_after(out, "\"median\":", "\"wait_to_end_ms\"");
    state.SetIterationTime(median / 1000.0);
  }
  state.counters["frame_cpu_median_ms"] = number_after(out, "\"median\":", "\"cpu_ms\"");
  state.counters["frame_cpu_p99_ms"] = number_after(out, "\"p99\":", "\"cpu_ms\"");
  state.counters["wait_to_end_median_ms"] = number_after(out, "\"median\":", "\"wait_to_end_ms\"");
  state.counters["wait_to_end_p99_ms"] = number_after(out, "\"p99\":", "\"wait_to_end_ms\"");
  state.counters["resident"] =
      number_after(out, "\"neurons\":", "\"resident\"") + number_after(out, "\"connections\":", "\"resident\"");
  state.counters["frames"] = number_after(out, "\"frames\":");
}

const int registered = [] {
  const fs::path model = fs::path(NNXR_SHARED_MODELS) / "arch/mobilenet_v2-op13.onnx";
  if (!fs::exists(model)) return 0;
  const std::pair<const char*, uint64_t> budgets[] = {{"1M", 1'000'000}, {"20M", 20'000'000}};
  for (const auto& [name, budget] : budgets)
    benchmark::RegisterBenchmark((std::string("xr_frame/mobilenet_v2/resident:") + name).c_str(), xr_frames, model, budget,
                                 budget > 5'000'000 ? 5 : 60)
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond)
        ->Iterations(1);
  return 0;
}();

}  // namespace

BENCHMARK_MAIN();
