// The convolution kernels on the layer shapes of mobilenet_v2 (224x224), with the fused
// Clip(0, 6) epilogue as the runtime runs them: bytes and outputs per second per layer. One
// thread, and two (suffix /t2) for the pointwise layers from 56x56 down, where how the work is
// split between the threads matters most.
//   conv/dw3x3/CxHxW/sS   3x3 depthwise, stride S, pad 1
//   conv/1x1/CxHxW->M     pointwise
//   conv/3x3/CxHxW->M/sS  dense 3x3 (im2col)
//   memory/keep-all/tN    no compute: the memory traffic of keeping mobilenet_v2's activations
//   peak/fma/ISA          a pure-FMA loop (12 independent accumulators) on one thread: the
//                         machine's peak flop/s with that instruction set's widest registers
//   big/3x3|1x1/.../ISA   the 3x3 (stride 1 and 2) and 1x1 layers of ResNet-50 (64-2048
//                         channels) at one thread, on each instruction set the CPU has; counter
//                         peak = their flop/s over that set's peak/fma (both in thread CPU time,
//                         so that time the thread spends descheduled on a loaded machine is left out)
//   squeezenet/...        the same for SqueezeNet 1.1's heaviest convolutions
//   ultraface/...         the same for UltraFace-RFB-320's (dwKxK: depthwise)
//   yunet/...             the same for YuNet's (320x320) 1x1 layers, without an activation as
//                         in the model, and its depthwise layers
//   mobilenet/...         the same for MobileNet v2's stem and its thin (K = 16, 24) 1x1 layers
//   superres/...          the same for super-resolution-core-op11's four convolutions (224x224)
//   fns-candy/...         the same for fns-candy's 9x9 and stride-2 convolutions (800x800, 720x720)
//   .../ISA/im2col        the layers that take the few-channel direct, the thin pointwise or the
//                         row-band (conv_rows) kernel, through the im2col + GEMM path instead (the
//                         one those kernels replace)
//   candy/instnorm/CxHxW[+relu]/ISA  fns-candy's InstanceNormalization planes (statistics, then
//                         the normalised output and the fused Relu): bytes/s of x read twice
//                         and y (and z) written, counter ms = thread CPU time per call
//   candy/convT/CxHxW->M/ISA  fns-candy's two 3x3 stride-2 ConvTranspose layers (same counters
//                         as big/)
//   efficientnet/...      EfficientNet-B0's 1x1 expansions with their fused SiLU (y, the sigmoid
//                         and the product written; same counters as big/), and sigmoid/N/ISA:
//                         the Sigmoid kernel alone over N floats (counter ms, thread CPU time);
//                         efficientnet/dwKxK/...: its depthwise layers, with their SiLU too
//                         (counters GB/s: x read and y, the sigmoid and the product written, per
//                         second of thread CPU time; us: that time per call)
//   lanes/1x1/CxHxW->M+ACT/ISA  the 1x1 layers on 7x7 and 14x14 planes of EfficientNet-B0 and
//                         MobileNet v2 with their fused activation (none, SiLU, Clip(0, 6)), as the
//                         Conv kernel runs them at one thread (the active set's lanes kernel,
//                         gemm_lanes or gemm_lanes_avx2, where lanes_kernel_wins); counters ms =
//                         thread CPU time per call, lanes = 1 where it ran, peak as big/'s
//   squeezenet/maxpool/3x3/CxHxW/ISA  SqueezeNet 1.1's three 3x3 stride-2 max pools (ceil mode:
//                         every window inside), one thread, counter ms = thread CPU time per call
// Compare against the naive reference with --benchmark_filter=naive (much slower).
#include <benchmark/benchmark.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#include <chrono>
#include <cmath>
#include <cstring>
#include <ctime>
#include <map>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "model/runtime/compute.h"
#include "model/runtime/gemm_packed.h"
#include "model/runtime/runtime.h"
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

ConvGeom geom(int64_t C, int64_t H, int64_t M, int64_t k, int64_t s, int64_t group, int64_t W = 0) {
  if (W == 0) W = H;
  ConvGeom g;
  g.C = C;
  g.M = M;
  g.group = group;
  const int64_t p = k / 2;
  g.in = {H, W};
  g.kernel = {k, k};
  g.stride = {s, s};
  g.dilation = {1, 1};
  g.pad_begin = {p, p};
  g.pad_end = {p, p};
  g.out = {conv_out_dim(H, k, s, 1, 2 * p), conv_out_dim(W, k, s, 1, 2 * p)};
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


double thread_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

#if defined(__x86_64__) || defined(__i386__)
// `iters` rounds of 12 independent FMAs on 8- or 16-float registers (FMA latency 4 cycles, two
// pipes: 12 chains keep both busy). Named accumulators, tied to registers by an empty asm each
// round (an array would live in memory). Returns a lane so that nothing is optimised away.
#define NNXR_FMA_LOOP(T, SET1, FMADD, C)                                                                            \
  T a0 = SET1(0.f), a1 = SET1(1e-3f), a2 = SET1(2e-3f), a3 = SET1(3e-3f), a4 = SET1(4e-3f), a5 = SET1(5e-3f);       \
  T a6 = SET1(6e-3f), a7 = SET1(7e-3f), a8 = SET1(8e-3f), a9 = SET1(9e-3f), a10 = SET1(1e-2f), a11 = SET1(1.1e-2f); \
  const T m = SET1(0.999999f), c = SET1(1e-6f);                                                                     \
  for (int64_t it = 0; it < iters; ++it) {                                                                          \
    a0 = FMADD(a0, m, c), a1 = FMADD(a1, m, c), a2 = FMADD(a2, m, c), a3 = FMADD(a3, m, c);                         \
    a4 = FMADD(a4, m, c), a5 = FMADD(a5, m, c), a6 = FMADD(a6, m, c), a7 = FMADD(a7, m, c);                         \
    a8 = FMADD(a8, m, c), a9 = FMADD(a9, m, c), a10 = FMADD(a10, m, c), a11 = FMADD(a11, m, c);                     \
    __asm__ volatile("" : "+" C(a0), "+" C(a1), "+" C(a2), "+" C(a3), "+" C(a4), "+" C(a5), "+" C(a6), "+" C(a7),  \
                     "+" C(a8), "+" C(a9), "+" C(a10), "+" C(a11));                                                 \
  }                                                                                                                 \
  alignas(64) float lanes[sizeof(T) / 4];                                                                           \
  std::memcpy(lanes, &a0, sizeof a0);                                                                               \
  float sum = lanes[0];                                                                                             \
  for (T v : {a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11}) {                                                      \
    std::memcpy(lanes, &v, sizeof v);                                                                               \
    sum += lanes[0];                                                                                                \
  }                                                                                                                 \
  return sum;

__attribute__((target("avx2,fma"))) float fma_loop_avx2(int64_t iters) { NNXR_FMA_LOOP(__m256, _mm256_set1_ps, _mm256_fmadd_ps, "x") }
__attribute__((target("avx512f,avx2,fma"))) float fma_loop_avx512(int64_t iters) { NNXR_FMA_LOOP(__m512, _mm512_set1_ps, _mm512_fmadd_ps, "v") }
#undef NNXR_FMA_LOOP
#endif

// flop per round of the FMA loop of `isa` (0 where there is none).
double fma_flop_per_iter(Isa isa) { return isa == Isa::Avx512 ? 12 * 16 * 2 : isa == Isa::Avx2 ? 12 * 8 * 2 : 0; }
float fma_loop(Isa isa, int64_t iters) {
#if defined(__x86_64__) || defined(__i386__)
  if (isa == Isa::Avx512) return fma_loop_avx512(iters);
  if (isa == Isa::Avx2) return fma_loop_avx2(iters);
#endif
  (void)isa;
  (void)iters;
  return 0;
}

// The peak flop/s of one thread with `isa`: the best of 5 runs of 20M flop or so (thread CPU time).
double peak_flops(Isa isa) {
  static std::map<Isa, double> known;
  if (auto it = known.find(isa); it != known.end()) return it->second;
  const int64_t iters = 100'000;
  double best = 0;
  for (int r = 0; r < 5; ++r) {
    const double t0 = thread_seconds();
    benchmark::DoNotOptimize(fma_loop(isa, iters));
    const double t = thread_seconds() - t0;
    if (t > 0) best = std::max(best, fma_flop_per_iter(isa) * static_cast<double>(iters) / t);
  }
  return known[isa] = best;
}

void run_peak(benchmark::State& state, Isa isa) {
  if (isa > cpu_isa()) return state.SkipWithError((std::string("this CPU has no ") + isa_name(isa)).c_str());
  const int64_t iters = 1'000'000;
  for (auto _ : state) benchmark::DoNotOptimize(fma_loop(isa, iters));
  state.counters["flop/s"] = benchmark::Counter(fma_flop_per_iter(isa) * static_cast<double>(iters), benchmark::Counter::kIsIterationInvariantRate);
}

// One big layer at one thread on `isa`: flop/s and its fraction of that set's FMA peak. With
// `im2col`, conv_im2col whatever conv_auto would take (the GEMM path the direct and thin kernels
// replace).
// `kind`: the fused activation (Relu; SiLU writes z2 too), or none (y only).
void run_big_act(benchmark::State& state, ConvGeom g, Isa isa, bool im2col, std::optional<Epilogue::Kind> kind) {
  if (isa > cpu_isa()) return state.SkipWithError((std::string("this CPU has no ") + isa_name(isa)).c_str());
  const Isa previous = active_isa();
  set_active_isa(isa);
  ThreadPool pool(1);
  const GemmPool use(pool);
  const int64_t Kdim = g.C / g.group * g.kernel[0] * g.kernel[1];
  const auto x = random_floats(static_cast<size_t>(g.C * g.in[0] * g.in[1]), 1);
  const auto w = random_floats(static_cast<size_t>(g.M * Kdim), 2);
  const auto b = random_floats(static_cast<size_t>(g.M), 3);
  const int64_t n = g.M * g.out[0] * g.out[1];
  Floats y(static_cast<size_t>(n)), z(kind ? static_cast<size_t>(n) : 0), z2(kind == Epilogue::Kind::SiLU ? static_cast<size_t>(n) : 0);
  const Epilogue e{kind.value_or(Epilogue::Kind::Relu)};
  const EpilogueOut act = kind ? EpilogueOut{&e, z.data(), z2.empty() ? nullptr : z2.data()} : EpilogueOut{};
  const bool depthwise = g.group > 1 && g.group == g.C && g.M == g.C;
  const auto packed = gemm_packed_available() && !depthwise ? pack_conv_weights(w.data(), g.M, g.group, Kdim) : std::vector<PackedA>{};
  const double peak = peak_flops(isa);
  ConvRowsCache rows_cache;  // conv_rows' packed weights kept across calls, as a Conv node keeps them
  double seconds = 0;
  for (auto _ : state) {
    const double t0 = thread_seconds();
    if (im2col) conv_im2col(g, x.data(), w.data(), b.data(), y.data(), pool, act, packed.empty() ? nullptr : &packed);
    else conv_auto(g, x.data(), w.data(), b.data(), y.data(), pool, act, packed.empty() ? nullptr : &packed, &rows_cache);
    seconds += thread_seconds() - t0;
    benchmark::DoNotOptimize(z.data());
  }
  set_active_isa(previous);
  const double flop = 2.0 * static_cast<double>(n * Kdim);
  state.counters["flop/s"] = benchmark::Counter(flop, benchmark::Counter::kIsIterationInvariantRate);
  if (seconds > 0 && peak > 0) state.counters["peak"] = flop * static_cast<double>(state.iterations()) / seconds / peak;
  if (depthwise && seconds > 0) {
    // Depthwise layers are bound by memory, not FMAs: x read once, y and the epilogue's outputs
    // written (thread CPU time; compare with memory/keep-all's bytes/s).
    const double bytes = 4.0 * static_cast<double>(x.size() + y.size() + z.size() + z2.size());
    state.counters["GB/s"] = bytes * static_cast<double>(state.iterations()) / seconds * 1e-9;
    state.counters["us"] = 1e6 * seconds / static_cast<double>(state.iterations());
  }
}

void run_big(benchmark::State& state, ConvGeom g, Isa isa, bool im2col) { run_big_act(state, g, isa, im2col, Epilogue::Kind::Relu); }

// InstanceNormalization's two passes over C planes of H x W (as its kernel runs them, one thread):
// plane_moments, then scale_shift with a fused Relu when `relu`.
void run_instnorm(benchmark::State& state, int64_t C, int64_t H, bool relu, Isa isa) {
  if (isa > cpu_isa()) return state.SkipWithError((std::string("this CPU has no ") + isa_name(isa)).c_str());
  const Isa previous = active_isa();
  set_active_isa(isa);
  const int64_t S = H * H;
  const auto x = random_floats(static_cast<size_t>(C * S), 5);
  Floats y(x.size()), z(x.size());
  const Epilogue e{Epilogue::Kind::Relu};
  const EpilogueOut act = relu ? EpilogueOut{&e, z.data(), nullptr} : EpilogueOut{};
  double seconds = 0;
  for (auto _ : state) {
    const double t0 = thread_seconds();
    for (int64_t c = 0; c < C; ++c) {
      double mean, var;
      plane_moments(x.data() + c * S, S, mean, var);
      const float a = static_cast<float>(1.0 / std::sqrt(var + 1e-5));
      scale_shift(x.data() + c * S, y.data() + c * S, S, a, static_cast<float>(-mean * a), act, c * S);
    }
    seconds += thread_seconds() - t0;
    benchmark::DoNotOptimize(y.data());
    benchmark::DoNotOptimize(z.data());
  }
  set_active_isa(previous);
  state.counters["bytes/s"] = benchmark::Counter(4.0 * static_cast<double>(C * S * (relu ? 4 : 3)), benchmark::Counter::kIsIterationInvariantRate);
  if (state.iterations() > 0) state.counters["ms"] = 1e3 * seconds / static_cast<double>(state.iterations());
}

// The 3x3 stride-2 max pool of C planes of H x H (windows inside: OH = (H - 3) / 2 + 1), as
// MaxPool runs it, one thread.
void run_max_pool(benchmark::State& state, int64_t C, int64_t H, Isa isa) {
  if (isa > cpu_isa()) return state.SkipWithError((std::string("this CPU has no ") + isa_name(isa)).c_str());
  const Isa previous = active_isa();
  set_active_isa(isa);
  const int64_t O = (H - 3) / 2 + 1;
  const auto x = random_floats(static_cast<size_t>(C * H * H), 6);
  Floats y(static_cast<size_t>(C * O * O));
  double seconds = 0;
  for (auto _ : state) {
    const double t0 = thread_seconds();
    max_pool_s2_float(x.data(), C, 3, H, H, y.data(), O, O);
    seconds += thread_seconds() - t0;
    benchmark::DoNotOptimize(y.data());
  }
  set_active_isa(previous);
  state.counters["bytes/s"] = benchmark::Counter(4.0 * static_cast<double>(C * (H * H + O * O)), benchmark::Counter::kIsIterationInvariantRate);
  if (state.iterations() > 0) state.counters["ms"] = 1e3 * seconds / static_cast<double>(state.iterations());
}

// A 3x3 stride-2 ConvTranspose with no padding (fns-candy's upsampling layers), one thread.
void run_conv_transpose(benchmark::State& state, int64_t C, int64_t H, int64_t M, Isa isa) {
  if (isa > cpu_isa()) return state.SkipWithError((std::string("this CPU has no ") + isa_name(isa)).c_str());
  const Isa previous = active_isa();
  set_active_isa(isa);
  ThreadPool pool(1);
  const GemmPool use(pool);
  ConvGeom g;
  g.C = C;
  g.M = M;
  g.in = {H, H};
  g.kernel = {3, 3};
  g.stride = {2, 2};
  g.dilation = {1, 1};
  g.pad_begin = {0, 0};
  g.pad_end = {-1, -1};  // output_shape one past the full size, as fns-candy's
  g.out = {2 * H + 2, 2 * H + 2};
  const auto x = random_floats(static_cast<size_t>(C * H * H), 1);
  const auto w = random_floats(static_cast<size_t>(C * M * 9), 2);
  const auto b = random_floats(static_cast<size_t>(M), 3);
  Floats y(static_cast<size_t>(M * g.out[0] * g.out[1]));
  double seconds = 0;
  for (auto _ : state) {
    const double t0 = thread_seconds();
    conv_transpose_gemm(g, x.data(), w.data(), b.data(), y.data(), pool);
    seconds += thread_seconds() - t0;
    benchmark::DoNotOptimize(y.data());
  }
  set_active_isa(previous);
  const double flop = 2.0 * static_cast<double>(C * H * H * M * 9);
  state.counters["flop/s"] = benchmark::Counter(flop, benchmark::Counter::kIsIterationInvariantRate);
  if (state.iterations() > 0) state.counters["ms"] = 1e3 * seconds / static_cast<double>(state.iterations());
}

// The Sigmoid kernel over n floats in [-8, 8] (one thread).
void run_sigmoid(benchmark::State& state, int64_t n, Isa isa) {
  if (isa > cpu_isa()) return state.SkipWithError((std::string("this CPU has no ") + isa_name(isa)).c_str());
  const Isa previous = active_isa();
  set_active_isa(isa);
  Floats x = random_floats(static_cast<size_t>(n), 7), y(static_cast<size_t>(n));
  for (auto& v : x) v *= 8.f;
  double seconds = 0;
  for (auto _ : state) {
    const double t0 = thread_seconds();
    sigmoid_f32(x.data(), y.data(), n);
    seconds += thread_seconds() - t0;
    benchmark::DoNotOptimize(y.data());
  }
  set_active_isa(previous);
  state.counters["outputs/s"] = benchmark::Counter(static_cast<double>(n), benchmark::Counter::kIsIterationInvariantRate);
  if (state.iterations() > 0) state.counters["ms"] = 1e3 * seconds / static_cast<double>(state.iterations());
}

// Whether conv_auto takes the few-channel direct, the thin pointwise or the row-band kernel for g
// on some instruction set (those layers also get an /im2col row: the GEMM path they replace).
bool takes_thin_kernel(const ConvGeom& g) {
  if (cpu_isa() < Isa::Avx2) return false;
  const Isa previous = active_isa();
  set_active_isa(Isa::Avx2);
  const bool applies = conv_direct_applies(g) || conv_pointwise_thin_applies(g) || conv_rows_applies(g);
  set_active_isa(previous);
  return applies;
}

// One 1x1 layer at one thread on `isa`, with epilogue e (null: none), as the Conv kernel runs it:
// thread CPU ms per call, and whether gemm_lanes took it.
void run_lanes_layer(benchmark::State& state, ConvGeom g, Isa isa, const Epilogue* e) {
  if (isa > cpu_isa()) return state.SkipWithError((std::string("this CPU has no ") + isa_name(isa)).c_str());
  const Isa previous = active_isa();
  set_active_isa(isa);
  ThreadPool pool(1);
  const GemmPool use(pool);
  const int64_t Kdim = g.C, P = g.out[0] * g.out[1];
  const auto x = random_floats(static_cast<size_t>(g.C * g.in[0] * g.in[1]), 1);
  const auto w = random_floats(static_cast<size_t>(g.M * Kdim), 2);
  const auto b = random_floats(static_cast<size_t>(g.M), 3);
  const int64_t n = g.M * P;
  Floats y(static_cast<size_t>(n)), z(e ? static_cast<size_t>(n) : 0), z2(e && e->kind == Epilogue::Kind::SiLU ? static_cast<size_t>(n) : 0);
  const EpilogueOut act{e, z.empty() ? nullptr : z.data(), z2.empty() ? nullptr : z2.data()};
  const auto packed = gemm_packed_available() ? pack_conv_weights(w.data(), g.M, g.group, Kdim) : std::vector<PackedA>{};
  double seconds = 0;
  for (auto _ : state) {
    const double t0 = thread_seconds();
    conv_auto(g, x.data(), w.data(), b.data(), y.data(), pool, act, packed.empty() ? nullptr : &packed);
    seconds += thread_seconds() - t0;
    benchmark::DoNotOptimize(y.data());
  }
  const bool lanes = !packed.empty() && lanes_kernel_wins(g.M, P, Kdim);
  set_active_isa(previous);
  const double flop = 2.0 * static_cast<double>(n * Kdim), peak = peak_flops(isa);
  state.counters["flop/s"] = benchmark::Counter(flop, benchmark::Counter::kIsIterationInvariantRate);
  if (seconds > 0 && peak > 0) state.counters["peak"] = flop * static_cast<double>(state.iterations()) / seconds / peak;
  state.counters["ms"] = state.iterations() ? 1e3 * seconds / static_cast<double>(state.iterations()) : 0;
  state.counters["lanes"] = lanes ? 1 : 0;
}

// The 1x1 layers of EfficientNet-B0 and MobileNet v2 (224x224) on 7x7 and 14x14 planes.
void register_lanes() {
  static const Epilogue silu{Epilogue::Kind::SiLU}, clip{Epilogue::Kind::Clip, 0.f, 6.f, 0.f};
  struct Layer {
    int64_t C, H, M;
    const Epilogue* e;
    const char* act;
  };
  const Layer layers[] = {{192, 7, 1152, &silu, "silu"}, {1152, 7, 320, nullptr, "none"}, {112, 14, 672, &silu, "silu"},
                          {672, 14, 112, nullptr, "none"}, {160, 7, 960, &clip, "clip"},  {960, 7, 160, nullptr, "none"}};
  for (Isa isa : {Isa::Avx2, Isa::Avx512})
    for (const Layer& l : layers) {
      const std::string name = "lanes/1x1/" + std::to_string(l.C) + "x" + std::to_string(l.H) + "x" + std::to_string(l.H) + "->" + std::to_string(l.M) + "+" +
                               l.act + "/" + isa_name(isa);
      benchmark::RegisterBenchmark(name.c_str(), run_lanes_layer, geom(l.C, l.H, l.M, 1, 1, 1), isa, l.e)->Unit(benchmark::kMicrosecond);
    }
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
  for (Isa isa : {Isa::Avx2, Isa::Avx512})
    benchmark::RegisterBenchmark((std::string("peak/fma/") + isa_name(isa)).c_str(), run_peak, isa)->Unit(benchmark::kMillisecond);
  // ResNet-50's 3x3 and 1x1 layers (stride 2 in the 3x3 of each stage's first block, and in the 1x1
  // downsample of the last stage, 1024 -> 2048 onto 7x7).
  const Layer big[] = {
      {64, 56, 64, 3, 1, 1},     {128, 28, 128, 3, 1, 1},  {256, 14, 256, 3, 1, 1},   {512, 7, 512, 3, 1, 1},
      {128, 56, 128, 3, 2, 1},   {256, 28, 256, 3, 2, 1},  {512, 14, 512, 3, 2, 1},   {64, 56, 256, 1, 1, 1},
      {256, 56, 64, 1, 1, 1},    {512, 28, 128, 1, 1, 1},  {128, 28, 512, 1, 1, 1},   {1024, 14, 256, 1, 1, 1},
      {256, 14, 1024, 1, 1, 1},  {2048, 7, 512, 1, 1, 1},  {512, 7, 2048, 1, 1, 1},  {1024, 14, 2048, 1, 2, 1},
  };
  // MobileNet v2's stem (K = 27) and its 1x1 expands of 16 and 24 channels (224x224 input).
  const Layer mobilenet[] = {{3, 224, 32, 3, 2, 1}, {16, 112, 96, 1, 1, 1}, {24, 56, 144, 1, 1, 1}};
  // SqueezeNet 1.1's heaviest convolutions (224x224 input): the stem (K = 27), the 3x3 and 1x1
  // expands of the first fire modules (K = 144 and 16) and the classifier (512 -> 1000 on 13x13).
  const Layer squeeze[] = {{3, 224, 64, 3, 2, 1}, {16, 55, 64, 3, 1, 1}, {16, 55, 64, 1, 1, 1}, {32, 27, 128, 3, 1, 1}, {64, 13, 256, 3, 1, 1}, {512, 13, 1000, 1, 1, 1}};
  // super-resolution-core-op11's convolutions (224x224, 1 -> 64 5x5, then 3x3 64 -> 64 -> 32 -> 9).
  const Layer superres[] = {{1, 224, 64, 5, 1, 1}, {64, 224, 64, 3, 1, 1}, {64, 224, 32, 3, 1, 1}, {32, 224, 9, 3, 1, 1}};
  // fns-candy's largest convolutions (its 720x720 input reflect-padded to 800x800): the 9x9 3 -> 16
  // stem, the 9x9 16 -> 3 output layer on 720x720, the two 3x3 stride-2 layers and a 3x3 64 -> 64 of
  // its residual blocks (196 columns: tiles along the rows end to end, 198 lanes a row, not 208).
  const Layer fns[] = {{3, 800, 16, 9, 1, 1}, {16, 720, 3, 9, 1, 1}, {16, 800, 32, 3, 2, 1}, {32, 400, 64, 3, 2, 1}, {64, 196, 64, 3, 1, 1}};
  const std::pair<const char*, std::span<const Layer>> nets[] = {
      {"squeezenet/", squeeze}, {"mobilenet/", mobilenet}, {"superres/", superres}, {"fns-candy/", fns}};
  for (const auto& [net, net_layers] : nets)
    for (Isa isa : {Isa::Avx2, Isa::Avx512})
      for (const Layer& l : net_layers) {
        const ConvGeom g = geom(l.C, l.H, l.M, l.k, l.s, 1);
        const std::string name = net + std::to_string(l.k) + "x" + std::to_string(l.k) + "/" + std::to_string(l.C) + "x" + std::to_string(l.H) +
                                 "x" + std::to_string(l.H) + "->" + std::to_string(l.M) + "/s" + std::to_string(l.s) + "/" + isa_name(isa);
        benchmark::RegisterBenchmark(name.c_str(), run_big, g, isa, false)->Unit(benchmark::kMillisecond);
        if (takes_thin_kernel(g)) benchmark::RegisterBenchmark((name + "/im2col").c_str(), run_big, g, isa, true)->Unit(benchmark::kMillisecond);
      }
  // UltraFace-RFB-320's heaviest convolutions (240x320 input): the stem (K = 27, stride 2), the
  // 16 -> 32 1x1 (K = 16) and the 3x3 depthwise layers on 120x160, and its other 1x1 layers of 32
  // input channels, all with their Relu.
  struct Wide {
    int64_t C, H, W, M, k, s, group;
  };
  const Wide ultraface[] = {{3, 240, 320, 16, 3, 2, 1}, {16, 120, 160, 32, 1, 1, 1}, {16, 120, 160, 16, 3, 1, 16}, {32, 120, 160, 32, 3, 2, 32},
                            {32, 60, 80, 32, 3, 1, 32}, {32, 60, 80, 64, 1, 1, 1},  {32, 60, 80, 32, 1, 1, 1},   {32, 30, 40, 64, 1, 1, 1}};
  for (Isa isa : {Isa::Avx2, Isa::Avx512})
    for (const Wide& l : ultraface) {
      const std::string name = "ultraface/" + std::string(l.group > 1 ? "dw" : "") + std::to_string(l.k) + "x" + std::to_string(l.k) + "/" +
                               std::to_string(l.C) + "x" + std::to_string(l.H) + "x" + std::to_string(l.W) + "->" + std::to_string(l.M) + "/s" +
                               std::to_string(l.s) + "/" + isa_name(isa);
      const ConvGeom g = geom(l.C, l.H, l.M, l.k, l.s, l.group, l.W);
      benchmark::RegisterBenchmark(name.c_str(), run_big, g, isa, false)->Unit(benchmark::kMicrosecond);
      if (takes_thin_kernel(g)) benchmark::RegisterBenchmark((name + "/im2col").c_str(), run_big, g, isa, true)->Unit(benchmark::kMicrosecond);
    }
  // YuNet's (320x320 input) 1x1 layers, which have no activation, and its 3x3 depthwise layers
  // with their Relu.
  const Wide yunet[] = {{16, 160, 160, 16, 1, 1, 1}, {32, 80, 80, 64, 1, 1, 1}, {64, 40, 40, 64, 1, 1, 1}, {32, 40, 40, 32, 1, 1, 1},
                        {16, 160, 160, 16, 3, 1, 16}, {64, 80, 80, 64, 3, 1, 64}, {32, 40, 40, 32, 3, 1, 32}};
  for (Isa isa : {Isa::Avx2, Isa::Avx512})
    for (const Wide& l : yunet) {
      const std::string name = "yunet/" + std::string(l.group > 1 ? "dw" : "") + std::to_string(l.k) + "x" + std::to_string(l.k) + "/" +
                               std::to_string(l.C) + "x" + std::to_string(l.H) + "x" + std::to_string(l.W) + "->" + std::to_string(l.M) + "/" + isa_name(isa);
      const ConvGeom g = geom(l.C, l.H, l.M, l.k, l.s, l.group, l.W);
      if (l.group > 1) benchmark::RegisterBenchmark(name.c_str(), run_big, g, isa, false)->Unit(benchmark::kMicrosecond);
      else benchmark::RegisterBenchmark(name.c_str(), run_big_act, g, isa, false, std::nullopt)->Unit(benchmark::kMicrosecond);
    }
  // EfficientNet-B0's depthwise layers (224x224 input), with the SiLU that follows each.
  const Layer efficientnet[] = {{32, 112, 32, 3, 1, 32},    {96, 112, 96, 3, 2, 96},    {144, 56, 144, 3, 1, 144},  {144, 56, 144, 5, 2, 144},
                                {240, 28, 240, 5, 1, 240},  {240, 28, 240, 3, 2, 240},  {480, 14, 480, 3, 1, 480},  {480, 14, 480, 5, 1, 480},
                                {672, 14, 672, 5, 1, 672},  {672, 14, 672, 5, 2, 672},  {1152, 7, 1152, 5, 1, 1152}, {1152, 7, 1152, 3, 1, 1152}};
  for (Isa isa : {Isa::Avx2, Isa::Avx512})
    for (const Layer& l : efficientnet) {
      const std::string name = "efficientnet/dw" + std::to_string(l.k) + "x" + std::to_string(l.k) + "/" + std::to_string(l.C) + "x" + std::to_string(l.H) +
                               "x" + std::to_string(l.H) + "/s" + std::to_string(l.s) + "/" + isa_name(isa);
      benchmark::RegisterBenchmark(name.c_str(), run_big_act, geom(l.C, l.H, l.M, l.k, l.s, l.group), isa, false, Epilogue::Kind::SiLU)->Unit(benchmark::kMicrosecond);
    }
  // MobileNet v2's depthwise layers (224x224 input), with a Relu for its Clip.
  const Layer mobilenet_dw[] = {{32, 112, 32, 3, 1, 32},   {96, 112, 96, 3, 2, 96},   {144, 56, 144, 3, 1, 144}, {144, 56, 144, 3, 2, 144},
                                {192, 28, 192, 3, 1, 192}, {192, 28, 192, 3, 2, 192}, {384, 14, 384, 3, 1, 384}, {576, 14, 576, 3, 2, 576},
                                {960, 7, 960, 3, 1, 960}};
  for (Isa isa : {Isa::Avx2, Isa::Avx512})
    for (const Layer& l : mobilenet_dw) {
      const std::string name = "mobilenet/dw3x3/" + std::to_string(l.C) + "x" + std::to_string(l.H) + "x" + std::to_string(l.H) + "/s" +
                               std::to_string(l.s) + "/" + isa_name(isa);
      benchmark::RegisterBenchmark(name.c_str(), run_big, geom(l.C, l.H, l.M, l.k, l.s, l.group), isa, false)->Unit(benchmark::kMicrosecond);
    }
  for (Isa isa : {Isa::Portable, Isa::Avx2, Isa::Avx512})
    for (const Layer& l : big) {
      const std::string name = "big/" + std::to_string(l.k) + "x" + std::to_string(l.k) + "/" + std::to_string(l.C) + "x" + std::to_string(l.H) + "x" +
                               std::to_string(l.H) + "->" + std::to_string(l.M) + "/s" + std::to_string(l.s) + "/" + isa_name(isa);
      benchmark::RegisterBenchmark(name.c_str(), run_big, geom(l.C, l.H, l.M, l.k, l.s, 1), isa, false)->Unit(benchmark::kMillisecond);
    }
  // fns-candy (720x720 input): the planes of its InstanceNormalization layers, and its ConvTranspose.
  struct Norm {
    int64_t C, H;
    bool relu;
  };
  const Norm norms[] = {{16, 800, true}, {32, 400, true}, {64, 198, true}, {64, 196, false}, {32, 360, true}, {16, 720, true}};
  for (Isa isa : {Isa::Avx2, Isa::Avx512})
    for (const auto& [C, H] : {std::pair<int64_t, int64_t>{64, 111}, {128, 55}, {256, 27}})
      benchmark::RegisterBenchmark(("squeezenet/maxpool/3x3/" + std::to_string(C) + "x" + std::to_string(H) + "x" + std::to_string(H) + "/" + isa_name(isa)).c_str(),
                                   run_max_pool, C, H, isa)
          ->Unit(benchmark::kMicrosecond);
  for (Isa isa : {Isa::Portable, Isa::Avx2, Isa::Avx512}) {
    for (const Norm& l : norms)
      benchmark::RegisterBenchmark(("candy/instnorm/" + std::to_string(l.C) + "x" + std::to_string(l.H) + "x" + std::to_string(l.H) + (l.relu ? "+relu/" : "/") +
                                    isa_name(isa))
                                       .c_str(),
                                   run_instnorm, l.C, l.H, l.relu, isa)
          ->Unit(benchmark::kMillisecond);
    for (const Layer& l : {Layer{64, 180, 32, 3, 2, 1}, Layer{32, 360, 16, 3, 2, 1}})
      benchmark::RegisterBenchmark(("candy/convT/" + std::to_string(l.C) + "x" + std::to_string(l.H) + "x" + std::to_string(l.H) + "->" + std::to_string(l.M) +
                                    "/" + isa_name(isa))
                                       .c_str(),
                                   run_conv_transpose, l.C, l.H, l.M, isa)
          ->Unit(benchmark::kMillisecond);
  }
  // EfficientNet-B0 (224x224): its 1x1 expansions with the fused SiLU, and the sigmoid alone.
  for (Isa isa : {Isa::Portable, Isa::Avx2, Isa::Avx512}) {
    for (const Layer& l : {Layer{16, 112, 96, 1, 1, 1}, Layer{24, 56, 144, 1, 1, 1}, Layer{40, 28, 240, 1, 1, 1}, Layer{112, 14, 672, 1, 1, 1}}) {
      const std::string name = "efficientnet/1x1/" + std::to_string(l.C) + "x" + std::to_string(l.H) + "x" + std::to_string(l.H) + "->" +
                               std::to_string(l.M) + "+silu/" + isa_name(isa);
      benchmark::RegisterBenchmark(name.c_str(), run_big_act, geom(l.C, l.H, l.M, 1, 1, 1), isa, false, Epilogue::Kind::SiLU)->Unit(benchmark::kMicrosecond);
    }
    benchmark::RegisterBenchmark(("efficientnet/sigmoid/1204224/" + std::string(isa_name(isa))).c_str(), run_sigmoid, int64_t{96 * 112 * 112}, isa)
        ->Unit(benchmark::kMicrosecond);
  }
  register_lanes();
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
