// Connector throughput on a real model: every Conv (or every node) of mobilenet_v2 scored with
// top-8, in ranges of 4096 outputs, on one thread. Reports candidates per second.
#include <benchmark/benchmark.h>

#include <filesystem>
#include <memory>
#include <vector>

#include "model/load.h"
#include "model/runtime/runtime.h"
#include "model/runtime/value.h"
#include "model/scene/connect.h"

namespace {

using namespace nnxr;

struct Loaded {
  std::shared_ptr<const runtime::Plan> plan;
  std::unique_ptr<runtime::Session> session;
};

const Loaded* mobilenet() {
  static const std::unique_ptr<Loaded> m = []() -> std::unique_ptr<Loaded> {
    const std::filesystem::path p = std::filesystem::path(NNXR_SHARED_MODELS) / "arch" / "mobilenet_v2-op13.onnx";
    if (!std::filesystem::exists(p)) return nullptr;
    auto l = std::make_unique<Loaded>();
    l->plan = runtime::Plan::build(model::load_model(p));
    l->session = std::make_unique<runtime::Session>(l->plan);
    const model::Graph& g = l->plan->graph();
    for (model::TensorId id : g.inputs) {
      const auto& t = g.tensors[id];
      std::vector<float> x(size_t(t.elements().value_or(0)));
      for (size_t i = 0; i < x.size(); ++i) x[i] = float((i * 2654435761u) % 1000) / 500.f - 1.f;
      l->session->set_input(t.name, t.dtype, t.shape, std::as_bytes(std::span(x)));
    }
    l->session->run();
    return l;
  }();
  return m.get();
}

scene::TensorValue value_of(const runtime::Session& s, model::TensorId id) {
  const runtime::Value* v = id == model::kNone ? nullptr : s.value(id);
  if (!v) return {};
  scene::TensorValue t{v->shape(), {}};
  if (v->dtype() == model::DType::Float) t.data = v->as<float>();
  return t;
}

void run_nodes(benchmark::State& state, bool conv_only) {
  const Loaded* m = mobilenet();
  if (!m) {
    state.SkipWithError("mobilenet_v2-op13.onnx not found under NNXR_SHARED_MODELS");
    return;
  }
  const model::Graph& g = m->plan->graph();
  uint64_t candidates = 0, outputs = 0;
  for (auto _ : state) {
    for (const model::Node& n : g.nodes) {
      if (conv_only && n.op_type != "Conv") continue;
      const scene::ConnectFn fn = scene::find_connector(n.domain, n.op_type);
      if (!fn) continue;
      scene::NodeValues nv{g, n, {}, {}};
      for (model::TensorId id : n.inputs) nv.inputs.push_back(value_of(*m->session, id));
      for (model::TensorId id : n.outputs) nv.outputs.push_back(value_of(*m->session, id));
      for (uint32_t o = 0; o < nv.outputs.size(); ++o) {
        int64_t total = 1;
        for (int64_t d : nv.outputs[o].shape) total *= d;
        for (int64_t b = 0; b < total; b += 4096) {
          scene::TopK top(8, b, std::min<int64_t>(total, b + 4096));
          fn(nv, o, top);
          candidates += top.candidates();
          benchmark::DoNotOptimize(top.kept(b).data());
        }
        outputs += uint64_t(total);
      }
    }
  }
  state.counters["candidates"] = benchmark::Counter(double(candidates), benchmark::Counter::kAvgIterations);
  state.counters["outputs"] = benchmark::Counter(double(outputs), benchmark::Counter::kAvgIterations);
  state.counters["cand/s"] = benchmark::Counter(double(candidates), benchmark::Counter::kIsRate);
}

void BM_MobileNetV2Conv(benchmark::State& state) { run_nodes(state, true); }
void BM_MobileNetV2AllNodes(benchmark::State& state) { run_nodes(state, false); }
BENCHMARK(BM_MobileNetV2Conv)->Unit(benchmark::kMillisecond)->MinTime(1.0);
BENCHMARK(BM_MobileNetV2AllNodes)->Unit(benchmark::kMillisecond)->MinTime(1.0);

}  // namespace

BENCHMARK_MAIN();
