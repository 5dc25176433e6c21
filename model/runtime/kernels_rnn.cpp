// Recurrent layers: LSTM, GRU, RNN (forward, reverse, bidirectional; sequence_lens; layout).
// The input projection of all time steps is one sgemm; each step adds one sgemm with R (LSTM:
// one product per gate and range of hidden units, the ranges split over the pool).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>

#include "model/runtime/compute.h"
#include "model/runtime/exp_lanes.h"
#include "model/runtime/kernel.h"

namespace nnxr::runtime {
// tanh to a few ulp without libm's tanhf (which goes through expm1f: the recurrences' hot spot):
// Cephes' odd polynomial for |x| < 0.625, 1 - 2 / (exp(2|x|) + 1) with the sign of x elsewhere.
float tanh_fast(float x) {
  const float ax = std::fabs(x);
  if (ax < 0.625f) {
    const float z = x * x;
    return x + x * z * ((((-5.70498872745E-3f * z + 2.06390887954E-2f) * z - 5.37397155531E-2f) * z + 1.33314422036E-1f) * z - 3.33332819422E-1f);
  }
  return std::copysign(1.f - 2.f / (std::exp(2.f * ax) + 1.f), x);
}


namespace {

// ---- LSTM's recurrent product: R^T packed, broadcast-FMA over rows of it ----------------------
//
// Each step of an LSTM multiplies the state h [H] by R [4H, H]: a matrix-vector product that
// reads all of R (256 KB at H = 128: from L2, every step) for 4H H multiply-adds. R is packed
// transposed in blocks of 16 units: rt[block][i][k][16] = R[k H + 16 block + u][i] (zero past H),
// so that a block's four gates for one element i of h are 64 consecutive floats and a step reads
// R as one sequential stream per block: one broadcast of h[i] and one vector load of rt per
// vector FMA, no horizontal sums, whole vectors for any H.

constexpr int64_t kUnitPad = 16;
int64_t padded_units(int64_t H) { return (H + kUnitPad - 1) / kUnitPad * kUnitPad; }

// R [dirs, 4H, H] packed as above, directions one after the other (H 4 Hp floats each).
std::vector<float> transpose_recurrent(const float* R, int64_t dirs, int64_t H) {
  const int64_t Hp = padded_units(H), G = 4, blocks = Hp / kUnitPad;
  std::vector<float> rt(static_cast<size_t>(dirs * H * G * Hp), 0.f);
  for (int64_t d = 0; d < dirs; ++d)
    for (int64_t b = 0; b < blocks; ++b)
      for (int64_t k = 0; k < G; ++k)
        for (int64_t u = 0; u < std::min(kUnitPad, H - b * kUnitPad); ++u) {
          const float* src = R + (d * G * H + k * H + b * kUnitPad + u) * H;
          float* dst = rt.data() + ((d * blocks + b) * H * G + k) * kUnitPad + u;
          for (int64_t i = 0; i < H; ++i) dst[i * G * kUnitPad] = src[i];
        }
  return rt;
}

// gh[k Hp + j] = sum_i h[i] R[k H + j][i] for the four gates and the blocks of 16 units that
// [j0, j1) touches. W floats a vector; eight accumulators or more: two blocks at a time with
// 16-float vectors.
template <int W>
[[gnu::always_inline]] inline void recurrent_body(const float* rt, int64_t H, int64_t Hp, const float* h, int64_t j0, int64_t j1, float* gh) {
  using V = typename Lanes<W>::F;
  constexpr int kV = kUnitPad / W;          // vectors per gate and block
  constexpr int kBlocks = kV == 1 ? 2 : 1;  // blocks at a time
  const int64_t step = 4 * kUnitPad;        // floats per element of h in a block
  const int64_t b1 = (j1 + kUnitPad - 1) / kUnitPad;
  for (int64_t b = j0 / kUnitPad; b < b1; b += kBlocks) {
    const int nb = static_cast<int>(std::min<int64_t>(kBlocks, b1 - b));
    V a[kBlocks][4][kV] = {};
    const float* r[kBlocks];
    for (int q = 0; q < kBlocks; ++q) r[q] = rt + (b + std::min(q, nb - 1)) * H * step;
    auto run = [&]<int N>() {
      for (int64_t i = 0; i < H; ++i) {
        const V hv = V{} + h[i];
        for (int q = 0; q < N; ++q)
          for (int k = 0; k < 4; ++k)
            for (int v = 0; v < kV; ++v) {
              V x;
              std::memcpy(&x, r[q] + i * step + k * kUnitPad + v * W, sizeof x);
              a[q][k][v] += hv * x;
            }
      }
    };
    if (nb == kBlocks) run.template operator()<kBlocks>();
    else run.template operator()<1>();
    for (int q = 0; q < nb; ++q)
      for (int k = 0; k < 4; ++k) std::memcpy(gh + k * Hp + (b + q) * kUnitPad, a[q][k], sizeof a[q][k]);
  }
}

#if defined(__x86_64__) || defined(__i386__)
__attribute__((target("avx512f,avx512vl,avx2,fma"))) void recurrent_avx512(const float* rt, int64_t H, int64_t Hp, const float* h, int64_t j0,
                                                                             int64_t j1, float* gh) {
  recurrent_body<16>(rt, H, Hp, h, j0, j1, gh);
}
__attribute__((target("avx2,fma"))) void recurrent_avx2(const float* rt, int64_t H, int64_t Hp, const float* h, int64_t j0, int64_t j1, float* gh) {
  recurrent_body<8>(rt, H, Hp, h, j0, j1, gh);
}
#endif
void recurrent_portable(const float* rt, int64_t H, int64_t Hp, const float* h, int64_t j0, int64_t j1, float* gh) {
  recurrent_body<4>(rt, H, Hp, h, j0, j1, gh);
}

}  // namespace

void lstm_recurrent(const float* rt, int64_t H, const float* h, int64_t j0, int64_t j1, float* gh) {
  const int64_t Hp = padded_units(H);
#if defined(__x86_64__) || defined(__i386__)
  if (cpu_has_avx512()) return recurrent_avx512(rt, H, Hp, h, j0, j1, gh);
  if (cpu_has_avx2_fma()) return recurrent_avx2(rt, H, Hp, h, j0, j1, gh);
#endif
  recurrent_portable(rt, H, Hp, h, j0, j1, gh);
}

std::vector<float> lstm_pack_recurrent(const float* R, int64_t dirs, int64_t H) { return transpose_recurrent(R, dirs, H); }

namespace {

enum class Act { Sigmoid, Tanh, Relu, HardSigmoid, Affine, LeakyRelu, ThresholdedRelu, ScaledTanh, Elu, Softsign, Softplus };

struct ActFn {
  Act kind = Act::Sigmoid;
  float alpha = 0, beta = 0;
  float operator()(float x) const {
    switch (kind) {
      case Act::Sigmoid: return x >= 0 ? 1.f / (1.f + std::exp(-x)) : std::exp(x) / (1.f + std::exp(x));
      case Act::Tanh: return tanh_fast(x);
      case Act::Relu: return std::max(0.f, x);
      case Act::HardSigmoid: return std::clamp(alpha * x + beta, 0.f, 1.f);
      case Act::Affine: return alpha * x + beta;
      case Act::LeakyRelu: return x >= 0 ? x : alpha * x;
      case Act::ThresholdedRelu: return x > alpha ? x : 0.f;
      case Act::ScaledTanh: return alpha * tanh_fast(beta * x);
      case Act::Elu: return x >= 0 ? x : alpha * (std::exp(x) - 1);
      case Act::Softsign: return x / (1 + std::fabs(x));
      case Act::Softplus: return std::log1p(std::exp(x));
    }
    return x;
  }
  // v[i] = f(v[i]) for n values.
  void apply(float* v, int64_t n) const {
    if (kind == Act::Sigmoid) return sigmoid_f32(v, v, n);
    if (kind == Act::Tanh) return tanh_f32(v, v, n);
    for (int64_t i = 0; i < n; ++i) v[i] = (*this)(v[i]);
  }
};

std::vector<ActFn> decode_acts(const KernelInit& init, std::vector<std::string> defaults, int64_t dirs) {
  auto names = init.attrs().find("activations") ? init.attrs().find("activations")->strings : std::vector<std::string>{};
  const auto alphas = init.attrs().get_floats("activation_alpha"), betas = init.attrs().get_floats("activation_beta");
  if (names.empty())
    for (int64_t d = 0; d < dirs; ++d) names.insert(names.end(), defaults.begin(), defaults.end());
  if (names.size() != defaults.size() * static_cast<size_t>(dirs)) init.fail("activations has the wrong number of entries");
  std::vector<ActFn> out;
  for (size_t i = 0; i < names.size(); ++i) {
    ActFn f;
    const std::string& n = names[i];
    if (n == "Sigmoid") f.kind = Act::Sigmoid;
    else if (n == "Tanh") f.kind = Act::Tanh;
    else if (n == "Relu") f.kind = Act::Relu;
    else if (n == "HardSigmoid") { f.kind = Act::HardSigmoid; f.alpha = 0.2f; f.beta = 0.5f; }
    else if (n == "Affine") { f.kind = Act::Affine; f.alpha = 1.f; }
    else if (n == "LeakyRelu") { f.kind = Act::LeakyRelu; f.alpha = 0.01f; }
    else if (n == "ThresholdedRelu") { f.kind = Act::ThresholdedRelu; f.alpha = 1.f; }
    else if (n == "ScaledTanh") { f.kind = Act::ScaledTanh; f.alpha = 1.f; f.beta = 1.f; }
    else if (n == "Elu") { f.kind = Act::Elu; f.alpha = 1.f; }
    else if (n == "Softsign") f.kind = Act::Softsign;
    else if (n == "Softplus") f.kind = Act::Softplus;
    else init.fail("activation " + quoted(n) + " is not supported");
    if (i < alphas.size()) f.alpha = alphas[i];
    if (i < betas.size()) f.beta = betas[i];
    out.push_back(f);
  }
  return out;
}

enum class Cell { LSTM, GRU, RNN };

struct RnnAttrs {
  Cell cell;
  int64_t hidden = 0, dirs = 1;
  bool reverse_only = false, layout1 = false, input_forget = false, linear_before_reset = false;
  float clip = 0;
  std::vector<ActFn> acts;
};

std::unique_ptr<Kernel> rnn_factory(const KernelInit& init, Cell cell) {
  RnnAttrs a;
  a.cell = cell;
  a.hidden = init.attrs().get_int("hidden_size", 0);
  const std::string dir = init.attrs().get_string("direction", "forward");
  if (dir == "bidirectional") a.dirs = 2;
  else if (dir == "reverse") a.reverse_only = true;
  else if (dir != "forward") init.fail("unknown direction " + quoted(dir));
  a.layout1 = init.attrs().get_int("layout", 0) != 0;
  a.input_forget = init.attrs().get_int("input_forget", 0) != 0;
  a.linear_before_reset = init.attrs().get_int("linear_before_reset", 0) != 0;
  a.clip = init.attrs().get_float("clip", 0.f);
  const std::vector<std::string> defaults = cell == Cell::LSTM ? std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"}
                                            : cell == Cell::GRU ? std::vector<std::string>{"Sigmoid", "Tanh"}
                                                                : std::vector<std::string>{"Tanh"};
  a.acts = decode_acts(init, defaults, a.dirs);
  if (a.hidden < 1) init.fail("hidden_size must be >= 1");
  // LSTM: a constant R transposed for lstm_recurrent once, at plan time (else at each run).
  std::shared_ptr<const std::vector<float>> packed_r;
  if (const model::TensorData* r = init.constant_input(2); cell == Cell::LSTM && r && r->dtype == DType::Float && r->shape.size() == 3 &&
                                                             r->shape[0] == a.dirs && r->shape[1] == 4 * a.hidden && r->shape[2] == a.hidden &&
                                                             static_cast<int64_t>(r->bytes.size()) == r->elements() * 4)
    packed_r = std::make_shared<const std::vector<float>>(transpose_recurrent(reinterpret_cast<const float*>(r->bytes.data()), a.dirs, a.hidden));
  return make_kernel([a, packed_r](KernelContext& ctx) {
    for (size_t i : {0, 1, 2}) ctx.expect_dtype(i, {DType::Float});
    ctx.expect_rank(0, 3);
    const Value& xv = ctx.in(0);
    const int64_t H = a.hidden, D = a.dirs;
    const int64_t G = a.cell == Cell::LSTM ? 4 : a.cell == Cell::GRU ? 3 : 1;
    const int64_t S = a.layout1 ? xv.dims()[1] : xv.dims()[0], B = a.layout1 ? xv.dims()[0] : xv.dims()[1], I = xv.dims()[2];
    auto check = [&](size_t i, Shape want) {
      if (ctx.has_input(i) && ctx.in(i).dims() != want)
        ctx.fail("input " + ctx.input_name(i) + " has shape " + shape_str(ctx.in(i).shape()) + ", expected " + shape_str(want));
    };
    check(1, {D, G * H, I});
    check(2, {D, G * H, H});
    check(3, {D, 2 * G * H});
    check(5, a.layout1 ? Shape{B, D, H} : Shape{D, B, H});
    check(6, a.layout1 ? Shape{B, D, H} : Shape{D, B, H});
    if (a.cell == Cell::LSTM) check(7, {D, 3 * H});
    std::vector<int64_t> lens(static_cast<size_t>(B), S);
    if (ctx.has_input(4)) {
      const auto l = read_ints(ctx, 4);
      if (static_cast<int64_t>(l.size()) != B) ctx.fail("sequence_lens must have one value per batch entry");
      for (size_t b = 0; b < l.size(); ++b) {
        if (l[b] < 0 || l[b] > S) ctx.fail("sequence_lens value " + std::to_string(l[b]) + " is out of range");
        lens[b] = l[b];
      }
    }
    // X as [S, B, I].
    std::vector<float> x(static_cast<size_t>(S * B * I));
    const float* px = xv.as<float>().data();
    for (int64_t s = 0; s < S; ++s)
      for (int64_t b = 0; b < B; ++b)
        std::copy_n(px + (a.layout1 ? (b * S + s) : (s * B + b)) * I, I, x.data() + (s * B + b) * I);
    std::vector<float> Y(static_cast<size_t>(S * D * B * H), 0.f), Yh(static_cast<size_t>(D * B * H)), Yc(static_cast<size_t>(D * B * H));
    auto state_in = [&](size_t i, int64_t d, int64_t b) -> const float* {
      if (!ctx.has_input(i)) return nullptr;
      const float* p = ctx.in(i).as<float>().data();
      return p + (a.layout1 ? (b * D + d) : (d * B + b)) * H;
    };
    std::vector<float> gates(static_cast<size_t>(B * G * H));
    // LSTM: R transposed for lstm_recurrent (the plan's, or made now), each step's products per
    // batch entry [G][Hp].
    const int64_t Hp = padded_units(H);
    std::vector<float> own_r;
    const float* rt_all = nullptr;
    if (a.cell == Cell::LSTM) {
      if (!packed_r) own_r = transpose_recurrent(ctx.in(2).as<float>().data(), D, H);
      rt_all = packed_r ? packed_r->data() : own_r.data();
    }
    std::vector<float> xw(static_cast<size_t>(S * B * G * H)), hr(static_cast<size_t>(B * G * Hp)), h(static_cast<size_t>(B * H)), c(static_cast<size_t>(B * H));
    std::vector<float> hn(static_cast<size_t>(B * H));  // LSTM: the state a step writes while h is read
    for (int64_t d = 0; d < D; ++d) {
      const bool rev = a.reverse_only || d == 1;
      const float* W = ctx.in(1).as<float>().data() + d * G * H * I;
      const float* R = ctx.in(2).as<float>().data() + d * G * H * H;
      const float* Wb = ctx.has_input(3) ? ctx.in(3).as<float>().data() + d * 2 * G * H : nullptr;
      const float* Rb = Wb ? Wb + G * H : nullptr;
      const float* P = a.cell == Cell::LSTM && ctx.has_input(7) ? ctx.in(7).as<float>().data() + d * 3 * H : nullptr;
      const ActFn* f = a.acts.data() + d * static_cast<int64_t>(a.acts.size()) / D;
      gemm_blas(false, true, S * B, G * H, I, 1.f, x.data(), I, W, I, 0.f, xw.data(), G * H);
      for (int64_t b = 0; b < B; ++b) {
        const float* h0 = state_in(5, d, b);
        const float* c0 = state_in(6, d, b);
        for (int64_t j = 0; j < H; ++j) {
          h[static_cast<size_t>(b * H + j)] = h0 ? h0[j] : 0.f;
          c[static_cast<size_t>(b * H + j)] = c0 ? c0[j] : 0.f;
        }
      }
      auto clip = [&](float v) { return a.clip > 0 ? std::clamp(v, -a.clip, a.clip) : v; };
      auto clip_range = [&](float* v, int64_t n) {
        for (int64_t j = 0; j < n; ++j) v[j] = std::clamp(v[j], -a.clip, a.clip);
      };
      // Each gate's two biases as one, Wb + Rb (GRU's linear_before_reset keeps its hidden gate's
      // apart).
      std::vector<float> bias(static_cast<size_t>(G * H), 0.f);
      if (Wb)
        for (int64_t i = 0; i < G * H; ++i) bias[static_cast<size_t>(i)] = Wb[i] + Rb[i];
      // LSTM: one step over hidden units [j0, j1) of every batch entry, the recurrent product of
      // those units' rows of the four gates, then their update. It reads h (the previous state)
      // and writes only columns [j0, j1) of hn, c and Y, so ranges of units run in parallel.
      auto lstm_units = [&](int64_t step, int64_t j0, int64_t j1) {
        const int64_t n = j1 - j0;
        for (int64_t b = 0; b < B; ++b) {
          const int64_t len = lens[static_cast<size_t>(b)];
          const float* hb = h.data() + b * H;
          float* hnb = hn.data() + b * H;
          if (step >= len) {  // finished: the state carries over
            std::copy(hb + j0, hb + j1, hnb + j0);
            continue;
          }
          const int64_t t = rev ? len - 1 - step : step;
          const float* gx = xw.data() + (t * B + b) * G * H;
          float* gh = hr.data() + b * G * Hp;  // gate k's unit j at gh[k Hp + j]
          lstm_recurrent(rt_all + d * H * G * Hp, H, hb, j0, j1, gh);
          float* cb = c.data() + b * H;
          // Gate pre-activations into arrays (plain loops the compiler vectorises), the
          // activations over whole arrays (vectorised for Sigmoid and Tanh), then the cell update.
          float* gi = gates.data() + b * G * H;
          float* go = gi + H;
          float* gf = go + H;
          float* gc = gf + H;
          for (const int64_t k : {0, 2, 3}) {  // i, f, c (o waits for the new cell state)
            float* g = gi + k * H;
            for (int64_t j = j0; j < j1; ++j) g[j] = gx[k * H + j] + gh[k * Hp + j] + bias[k * H + j];
          }
          if (P)
            for (int64_t j = j0; j < j1; ++j) {
              gi[j] += P[j] * cb[j];
              gf[j] += P[2 * H + j] * cb[j];
            }
          if (a.clip > 0)
            for (float* g : {gi, gf, gc}) clip_range(g + j0, n);
          f[0].apply(gi + j0, n);
          f[0].apply(gf + j0, n);
          f[1].apply(gc + j0, n);
          for (int64_t j = j0; j < j1; ++j) {
            const float ig = a.input_forget ? 1.f - gf[j] : gi[j];
            const float cn = gf[j] * cb[j] + ig * gc[j];
            cb[j] = cn;
            go[j] = gx[H + j] + gh[Hp + j] + bias[H + j];
            gi[j] = cn;  // (the input gate is used up)
          }
          if (P)
            for (int64_t j = j0; j < j1; ++j) go[j] += P[H + j] * cb[j];
          if (a.clip > 0) clip_range(go + j0, n);
          f[0].apply(go + j0, n);
          f[2].apply(gi + j0, n);
          float* yb = Y.data() + ((t * D + d) * B + b) * H;
          for (int64_t j = j0; j < j1; ++j) hnb[j] = yb[j] = go[j] * gi[j];
        }
      };
      // Blocks of 16 units, split over the pool when a thread gets 32k multiply-adds or more.
      const int64_t unit_blocks = (H + 15) / 16;
      const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 15) / (B * G * H * 16));
      for (int64_t step = 0; step < S; ++step) {
        if (a.cell == Cell::LSTM) {
          ctx.pool().parallel_for(unit_blocks, grain, [&](int64_t u0, int64_t u1) { lstm_units(step, u0 * 16, std::min(H, u1 * 16)); });
          std::swap(h, hn);
          continue;
        }
        // Per batch entry the time index runs over its own length.
        if (a.cell != Cell::GRU || !a.linear_before_reset)
          gemm_blas(false, true, B, G * H, H, 1.f, h.data(), H, R, H, 0.f, hr.data(), G * H);
        for (int64_t b = 0; b < B; ++b) {
          const int64_t len = lens[static_cast<size_t>(b)];
          if (step >= len) continue;
          const int64_t t = rev ? len - 1 - step : step;
          const float* gx = xw.data() + (t * B + b) * G * H;
          float* hb = h.data() + b * H;
          if (a.cell == Cell::GRU) {
            // gates z, r, h
            std::vector<float> hnew(static_cast<size_t>(H));
            const float* gh = hr.data() + b * G * H;
            if (a.linear_before_reset) {
              // (h R_h^T + Rb_h) is multiplied by r after the product.
              std::vector<float> rh(static_cast<size_t>(G * H));
              gemm_blas(false, true, 1, G * H, H, 1.f, hb, H, R, H, 0.f, rh.data(), G * H);
              for (int64_t j = 0; j < H; ++j) {
                const float z = f[0](clip(gx[j] + rh[static_cast<size_t>(j)] + bias[j]));
                const float rr = f[0](clip(gx[H + j] + rh[static_cast<size_t>(H + j)] + bias[H + j]));
                const float hh = f[1](clip(gx[2 * H + j] + (Wb ? Wb[2 * H + j] : 0.f) + rr * (rh[static_cast<size_t>(2 * H + j)] + (Rb ? Rb[2 * H + j] : 0.f))));
                hnew[static_cast<size_t>(j)] = (1 - z) * hh + z * hb[j];
              }
            } else {
              std::vector<float> rhp(static_cast<size_t>(H));
              std::vector<float> rgate(static_cast<size_t>(H));
              for (int64_t j = 0; j < H; ++j) rgate[static_cast<size_t>(j)] = f[0](clip(gx[H + j] + gh[H + j] + bias[H + j]));
              for (int64_t j = 0; j < H; ++j) rhp[static_cast<size_t>(j)] = rgate[static_cast<size_t>(j)] * hb[j];
              std::vector<float> hrh(static_cast<size_t>(H));
              gemm_blas(false, true, 1, H, H, 1.f, rhp.data(), H, R + 2 * H * H, H, 0.f, hrh.data(), H);
              for (int64_t j = 0; j < H; ++j) {
                const float z = f[0](clip(gx[j] + gh[j] + bias[j]));
                const float hh = f[1](clip(gx[2 * H + j] + hrh[static_cast<size_t>(j)] + bias[2 * H + j]));
                hnew[static_cast<size_t>(j)] = (1 - z) * hh + z * hb[j];
              }
            }
            std::copy(hnew.begin(), hnew.end(), hb);
          } else {
            const float* gh = hr.data() + b * H;
            for (int64_t j = 0; j < H; ++j) hb[j] = f[0](clip(gx[j] + gh[j] + bias[j]));
          }
          std::copy_n(hb, H, Y.data() + ((t * D + d) * B + b) * H);
        }
      }
      std::copy(h.begin(), h.end(), Yh.begin() + d * B * H);
      std::copy(c.begin(), c.end(), Yc.begin() + d * B * H);
    }
    auto emit = [&](size_t k, const std::vector<float>& src, Shape seq_layout, bool is_seq) {
      if (!ctx.has_output(k)) return;
      Value& o = ctx.out(k);
      if (!a.layout1) {
        o.assign(DType::Float, std::move(seq_layout), std::as_bytes(std::span(src)));
        return;
      }
      // layout 1: Y [B, S, D, H], Y_h/Y_c [B, D, H]
      if (is_seq) {
        o.reset(DType::Float, {B, S, D, H});
        float* p = o.mutable_as<float>().data();
        for (int64_t s = 0; s < S; ++s)
          for (int64_t d = 0; d < D; ++d)
            for (int64_t b = 0; b < B; ++b) std::copy_n(src.data() + ((s * D + d) * B + b) * H, H, p + ((b * S + s) * D + d) * H);
      } else {
        o.reset(DType::Float, {B, D, H});
        float* p = o.mutable_as<float>().data();
        for (int64_t d = 0; d < D; ++d)
          for (int64_t b = 0; b < B; ++b) std::copy_n(src.data() + (d * B + b) * H, H, p + (b * D + d) * H);
      }
    };
    emit(0, Y, {S, D, B, H}, true);
    emit(1, Yh, {D, B, H}, false);
    if (a.cell == Cell::LSTM) emit(2, Yc, {D, B, H}, false);
  });
}

}  // namespace

void register_rnn(Registry& r) {
  r.add("LSTM", [](const KernelInit& i) { return rnn_factory(i, Cell::LSTM); });
  r.add("GRU", [](const KernelInit& i) { return rnn_factory(i, Cell::GRU); });
  r.add("RNN", [](const KernelInit& i) { return rnn_factory(i, Cell::RNN); });
}

}  // namespace nnxr::runtime
