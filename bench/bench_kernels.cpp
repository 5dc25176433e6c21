// The convolution kernels on the layer shapes of mobilenet_v2 (224x224), with the fused
// Clip(0, 6) epilogue as the runtime runs them: bytes and outputs per second per layer. One
// thread, and two (suffix /t2) for the pointwise layers from 56x56 down, where how the work is
// split between the threads matters most.
//   conv/dw3x3/CxHxW/sS   3x3 depthwise, stride S, pad 1
//   conv/1x1/CxHxW->M     pointwise
//   conv/3x3/CxHxW->M/sS  dense 3x3 (im2col)
//   memory/keep-all/tN    no compute: the memory traffic of keeping mobilenet_v2's activations
// Compare against the naive reference with --benchmark_filter=naive (much slower).
#include <benchmark/benchmark.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#include <random>
#include <string>
#include <vector>

#include "model/runtime/compute.h"
#include "model/runtime/value.h"

using namespace nnxr::runtime;

namespace {

// Cache-line aligned, as the runtime's tensors are.
using Floats = std::vector<float, CacheAligned<float>>;

Floats random_floats(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1.f, 1.f);
  Floats v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

ConvGeom geom(int64_t C, int64_t H, int64_t M, int64_t k, int64_t s, int64_t group) {
  ConvGeom g;
  g.C = C;
  g.M = M;
  g.group = group;
  const int64_t p = k / 2;
  g.in = {H, H};
  g.kernel = {k, k};
  g.stride = {s, s};
  g.dilation = {1, 1};
  g.pad_begin = {p, p};
  g.pad_end = {p, p};
  const int64_t o = conv_out_dim(H, k, s, 1, 2 * p);
  g.out = {o, o};
  return g;
}

void run_conv(benchmark::State& state, ConvGeom g, int threads) {
  ThreadPool pool(threads);
  const GemmPool use(pool);
  const int64_t Kdim = g.C / g.group * g.kernel[0] * g.kernel[1];
  const auto x = random_floats(static_cast<size_t>(g.C * g.in[0] * g.in[1]), 1);
  const auto w = random_floats(static_cast<size_t>(g.M * Kdim), 2);
  const auto b = random_floats(static_cast<size_t>(g.M), 3);
  const int64_t n = g.M * g.out[0] * g.out[1];
  Floats y(static_cast<size_t>(n)), z(static_cast<size_t>(n));
  const Epilogue clip{Epilogue::Kind::Clip, 0.f, 6.f, 0.f};
  const EpilogueOut act{&clip, z.data(), nullptr};
  const auto packed = g.group == 1 && gemm_packed_available() ? pack_conv_weights(w.data(), g.M, g.group, Kdim) : std::vector<PackedA>{};
  for (auto _ : state) {
    conv_auto(g, x.data(), w.data(), b.data(), y.data(), pool, act, packed.empty() ? nullptr : &packed);
    benchmark::DoNotOptimize(z.data());
  }
  state.counters["outputs/s"] = benchmark::Counter(static_cast<double>(n), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["flop/s"] = benchmark::Counter(2.0 * static_cast<double>(n * Kdim), benchmark::Counter::kIsIterationInvariantRate);
}

#if defined(__x86_64__) || defined(__i386__)
// Vector stores to act[0, n) and loads of w[0, m) (n and m multiples of 8). Vector stores, as the
// kernels write: a fill of a constant may become a string store, which writes lines differently.
__attribute__((target("avx2"))) float store_and_read(float* act, int64_t n, const float* w, int64_t m) {
  __m256 v = _mm256_set1_ps(1.f), acc = _mm256_setzero_ps();
  for (int64_t i = 0; i < n; i += 8) _mm256_store_ps(act + i, v);
  for (int64_t i = 0; i < m; i += 8) acc = _mm256_max_ps(acc, _mm256_loadu_ps(w + i));
  return _mm_cvtss_f32(_mm256_castps256_ps128(acc));
}
#endif

// The memory traffic that keeping every activation costs, with no compute: each iteration writes
// mobilenet_v2's activations (13,016,656 floats, into the same buffer every time, as a session
// reuses its own) and reads its weights once (3,475,008 floats), in 1 MB steps of both, on a pool
// of `threads`. Where the last-level cache is smaller than the activations (52 MB), every run
// writes them all back to memory and fetches each output line before writing it: this time is a
// floor under a run that keeps them all. A runtime that reuses a few buffers kept in cache does
// not pay it.
void run_keep_all(benchmark::State& state, int threads) {
#if defined(__x86_64__) || defined(__i386__)
  if (!cpu_has_avx2_fma()) return state.SkipWithError("no AVX2");
  constexpr int64_t kActivations = 13'016'656, kWeights = 3'475'008, kStep = int64_t{1} << 18;
  constexpr int64_t kSteps = (kActivations + kStep - 1) / kStep, kWeightStep = (kWeights / kSteps + 7) / 8 * 8;
  ThreadPool pool(threads);
  Floats act(static_cast<size_t>(kActivations));
  const Floats w = random_floats(static_cast<size_t>(kSteps * kWeightStep), 4);
  std::vector<float> folded(static_cast<size_t>(kSteps));
  for (auto _ : state) {
    pool.parallel_for(kSteps, 1, [&](int64_t s0, int64_t s1) {
      for (int64_t s = s0; s < s1; ++s)
        folded[static_cast<size_t>(s)] = store_and_read(act.data() + s * kStep, (std::min(kActivations, (s + 1) * kStep) - s * kStep) / 8 * 8,
                                                        w.data() + s * kWeightStep, kWeightStep);
    });
    benchmark::DoNotOptimize(act.data());
    benchmark::DoNotOptimize(folded.data());
  }
  state.counters["bytes/s"] = benchmark::Counter(4.0 * static_cast<double>(kActivations + kSteps * kWeightStep), benchmark::Counter::kIsIterationInvariantRate);
#else
  state.SkipWithError("x86 only");
  (void)threads;
#endif
}

void register_all() {
  struct Layer {
    int64_t C, H, M, k, s, group;
    int threads = 1;
  };
  const Layer layers[] = {
      {3, 224, 32, 3, 2, 1},     {32, 112, 32, 3, 1, 32},   {96, 112, 96, 3, 2, 96},  {144, 56, 144, 3, 1, 144}, {144, 56, 144, 3, 2, 144},
      {192, 28, 192, 3, 1, 192}, {576, 14, 576, 3, 1, 576}, {960, 7, 960, 3, 1, 960}, {16, 112, 96, 1, 1, 1},    {24, 56, 144, 1, 1, 1},
      {144, 56, 24, 1, 1, 1},    {64, 14, 384, 1, 1, 1},    {960, 7, 320, 1, 1, 1},   {320, 7, 1280, 1, 1, 1},
      {32, 28, 192, 1, 1, 1, 2}, {192, 28, 32, 1, 1, 1, 2}, {64, 14, 384, 1, 1, 1, 2}, {384, 14, 64, 1, 1, 1, 2}, {96, 14, 576, 1, 1, 1, 2},
      {576, 14, 96, 1, 1, 1, 2}, {160, 7, 960, 1, 1, 1, 2}, {960, 7, 160, 1, 1, 1, 2}, {24, 56, 144, 1, 1, 1, 2}, {144, 56, 24, 1, 1, 1, 2},
  };
  for (const Layer& l : layers) {
    const ConvGeom g = geom(l.C, l.H, l.M, l.k, l.s, l.group);
    std::string name = "conv/";
    const std::string shape = std::to_string(l.C) + "x" + std::to_string(l.H) + "x" + std::to_string(l.H);
    if (l.group > 1) name += "dw3x3/" + shape + "/s" + std::to_string(l.s);
    else if (l.k == 1) name += "1x1/" + shape + "->" + std::to_string(l.M);
    else name += std::to_string(l.k) + "x" + std::to_string(l.k) + "/" + shape + "->" + std::to_string(l.M) + "/s" + std::to_string(l.s);
    if (l.threads > 1) name += "/t" + std::to_string(l.threads);
    benchmark::RegisterBenchmark(name.c_str(), run_conv, g, l.threads)->Unit(benchmark::kMicrosecond)->UseRealTime();
  }
  for (int threads : {1, 2})
    benchmark::RegisterBenchmark(("memory/keep-all/t" + std::to_string(threads)).c_str(), run_keep_all, threads)->Unit(benchmark::kMillisecond)->UseRealTime();
}

}  // namespace

int main(int argc, char** argv) {
  register_all();
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
