// Signal ops (opset 17): HannWindow, HammingWindow, BlackmanWindow, DFT, STFT, MelWeightMatrix.
//
// Windows of length `size`: w[n] = a0 - a1 cos(2 pi n / N) + a2 cos(4 pi n / N) with N = size
// (periodic, the default) or size - 1 (symmetric). DFT and STFT take real ([..., 1]) or complex
// ([..., 2]) input and give complex output [..., 2]; the transforms are direct sums in double
// (exact twiddles from the index product modulo n).
#include <cmath>
#include <complex>
#include <numbers>

#include "model/runtime/kernel.h"
#include "model/runtime/kernels_more.h"

namespace nnxr::runtime {
namespace {

using cd = std::complex<double>;

// Stores doubles into a float32 or float64 output as `dtype` says (output_datatype attribute).
void store_real(const KernelContext& ctx, Value& y, DType t, const Shape& shape, const std::vector<double>& v) {
  y.reset(t, shape);
  switch (t) {
    case DType::Float: {
      auto o = y.mutable_as<float>();
      for (size_t i = 0; i < v.size(); ++i) o[i] = static_cast<float>(v[i]);
      return;
    }
    case DType::Double: std::copy(v.begin(), v.end(), y.mutable_as<double>().begin()); return;
    default: ctx.fail("output_datatype " + std::string(model::dtype_name(t)) + " is not supported (float32 or float64)");
  }
}

DType output_datatype(const KernelInit& init) {
  const int64_t raw = init.attrs().get_int("output_datatype", 1);
  if (raw != static_cast<int64_t>(DType::Float) && raw != static_cast<int64_t>(DType::Double))
    init.fail("output_datatype " + std::to_string(raw) + " is not supported (float32 or float64)");
  return static_cast<DType>(raw);
}

int64_t scalar_int(const KernelContext& ctx, size_t slot, const char* what) {
  const Value& v = ctx.in(slot);
  if (v.elements() != 1) ctx.fail(std::string(what) + " " + ctx.input_name(slot) + " must hold one value, has shape " + shape_str(v.shape()));
  const auto x = read_ints(ctx, slot);
  return x[0];
}

KernelFactory window(double a0, double a1, double a2) {
  return [=](const KernelInit& init) {
    const DType t = output_datatype(init);
    const bool periodic = init.attrs().get_int("periodic", 1) != 0;
    return make_kernel([=](KernelContext& ctx) {
      const int64_t size = scalar_int(ctx, 0, "size");
      if (size < 0 || size > (int64_t{1} << 24)) ctx.fail("window size " + std::to_string(size) + " is out of range");
      const double N = static_cast<double>(periodic ? size : size - 1);
      std::vector<double> w(static_cast<size_t>(size));
      for (int64_t n = 0; n < size; ++n) {
        const double x = N > 0 ? 2 * std::numbers::pi * static_cast<double>(n) / N : 0.0;
        w[static_cast<size_t>(n)] = a0 - a1 * std::cos(x) + a2 * std::cos(2 * x);
      }
      store_real(ctx, ctx.out(0), t, {size}, w);
    });
  };
}

// Reads element (i, component c) of a [..., 1|2] real/complex float tensor as complex.
struct ComplexIn {
  const Value* v = nullptr;
  bool complex = false;
  cd at(int64_t i) const {
    const auto k = static_cast<size_t>(i);
    if (v->dtype() == DType::Float) {
      auto p = v->as<float>();
      return complex ? cd(p[2 * k], p[2 * k + 1]) : cd(p[k], 0);
    }
    auto p = v->as<double>();
    return complex ? cd(p[2 * k], p[2 * k + 1]) : cd(p[k], 0);
  }
};

// out[k] = sum_j in[j] exp(-+ 2 pi i j k / n) for k < bins, input zero beyond `len`.
void dft_line(const std::vector<cd>& in, int64_t n, int64_t bins, bool inverse, std::vector<cd>& out) {
  out.assign(static_cast<size_t>(bins), cd(0, 0));
  const double sign = inverse ? 1.0 : -1.0;
  const int64_t len = std::min<int64_t>(n, static_cast<int64_t>(in.size()));
  for (int64_t k = 0; k < bins; ++k) {
    cd acc(0, 0);
    for (int64_t j = 0; j < len; ++j) {
      const int64_t m = (j * k) % n;
      const double ang = sign * 2 * std::numbers::pi * static_cast<double>(m) / static_cast<double>(n);
      acc += in[static_cast<size_t>(j)] * cd(std::cos(ang), std::sin(ang));
    }
    out[static_cast<size_t>(k)] = inverse ? acc / static_cast<double>(n) : acc;
  }
}

void store_complex(Value& y, int64_t i, cd v) {
  const auto k = static_cast<size_t>(i);
  if (y.dtype() == DType::Float) {
    auto p = y.mutable_as<float>();
    p[2 * k] = static_cast<float>(v.real());
    p[2 * k + 1] = static_cast<float>(v.imag());
  } else {
    auto p = y.mutable_as<double>();
    p[2 * k] = v.real();
    p[2 * k + 1] = v.imag();
  }
}

void dft(KernelContext& ctx, int64_t axis_attr, bool inverse, bool onesided) {
  ctx.expect_dtype(0, {DType::Float, DType::Double});
  const Value& x = ctx.in(0);
  const int64_t rank = static_cast<int64_t>(x.rank());
  if (rank < 3) ctx.fail("input " + ctx.input_name(0) + " has shape " + shape_str(x.shape()) + ", expected [batch, signal..., 1 or 2]");
  const int64_t last = x.dims().back();
  if (last != 1 && last != 2) ctx.fail("input " + ctx.input_name(0) + " has shape " + shape_str(x.shape()) + "; the last dim must be 1 (real) or 2 (complex)");
  int64_t axis = axis_attr < 0 ? axis_attr + rank : axis_attr;
  if (axis < 1 || axis > rank - 2) ctx.fail("axis " + std::to_string(axis_attr) + " is not a signal dim of input " + shape_str(x.shape()));
  const int64_t len = x.dims()[static_cast<size_t>(axis)];
  int64_t n = len;
  if (ctx.has_input(1) && ctx.in(1).elements() > 0) n = scalar_int(ctx, 1, "dft_length");
  if (n < 1 || n > (int64_t{1} << 24)) ctx.fail("dft_length " + std::to_string(n) + " is outside [1, 2^24]");
  if (onesided && last == 2) ctx.fail("onesided output needs real input");
  if (onesided && inverse) ctx.fail("onesided and inverse cannot both be set");
  const int64_t bins = onesided ? n / 2 + 1 : n;
  Shape os = x.dims();
  os[static_cast<size_t>(axis)] = bins;
  os.back() = 2;
  Value& y = ctx.out(0);
  y.reset(x.dtype(), os);
  const ComplexIn in{&x, last == 2};
  const Shape& xd = x.dims();
  const int64_t outer = product(std::span<const int64_t>(xd).subspan(0, static_cast<size_t>(axis)));
  const int64_t inner = product(std::span<const int64_t>(xd).subspan(static_cast<size_t>(axis) + 1, static_cast<size_t>(rank - axis - 2)));
  std::vector<cd> line(static_cast<size_t>(std::min(len, n))), res;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      for (int64_t j = 0; j < static_cast<int64_t>(line.size()); ++j) line[static_cast<size_t>(j)] = in.at((o * len + j) * inner + i);
      dft_line(line, n, bins, inverse, res);
      for (int64_t k = 0; k < bins; ++k) store_complex(y, (o * bins + k) * inner + i, res[static_cast<size_t>(k)]);
    }
}

void stft(KernelContext& ctx, bool onesided) {
  ctx.expect_dtype(0, {DType::Float, DType::Double});
  const Value& x = ctx.in(0);
  if (x.rank() != 3 || (x.dims()[2] != 1 && x.dims()[2] != 2))
    ctx.fail("signal " + ctx.input_name(0) + " has shape " + shape_str(x.shape()) + ", expected [batch, length, 1 or 2]");
  const int64_t B = x.dims()[0], L = x.dims()[1];
  const bool complex = x.dims()[2] == 2;
  const int64_t step = scalar_int(ctx, 1, "frame_step");
  if (step < 1) ctx.fail("frame_step " + std::to_string(step) + " must be >= 1");
  const Value* win = ctx.has_input(2) && ctx.in(2).elements() > 0 ? &ctx.in(2) : nullptr;
  int64_t frame = -1;
  if (ctx.has_input(3)) frame = scalar_int(ctx, 3, "frame_length");
  if (win) {
    if (win->rank() != 1 || win->dtype() != x.dtype()) ctx.fail("window " + ctx.input_name(2) + " must be 1-D of the signal's element type");
    if (frame >= 0 && frame != win->dims()[0])
      ctx.fail("frame_length " + std::to_string(frame) + " differs from the window length " + std::to_string(win->dims()[0]));
    frame = win->dims()[0];
  }
  if (frame < 1) ctx.fail("frame_length (or a window) is required and must be >= 1");
  if (frame > L) ctx.fail("frame_length " + std::to_string(frame) + " is longer than the signal (" + std::to_string(L) + ")");
  if (onesided && complex) ctx.fail("onesided output needs a real signal");
  const int64_t frames = 1 + (L - frame) / step, bins = onesided ? frame / 2 + 1 : frame;
  Value& y = ctx.out(0);
  y.reset(x.dtype(), {B, frames, bins, 2});
  const ComplexIn in{&x, complex};
  auto w = [&](int64_t j) -> double {
    if (!win) return 1.0;
    return win->dtype() == DType::Float ? win->as<float>()[static_cast<size_t>(j)] : win->as<double>()[static_cast<size_t>(j)];
  };
  std::vector<cd> line(static_cast<size_t>(frame)), res;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t f = 0; f < frames; ++f) {
      for (int64_t j = 0; j < frame; ++j) line[static_cast<size_t>(j)] = in.at(b * L + f * step + j) * w(j);
      dft_line(line, frame, bins, false, res);
      for (int64_t k = 0; k < bins; ++k) store_complex(y, (b * frames + f) * bins + k, res[static_cast<size_t>(k)]);
    }
}

void mel_weight_matrix(KernelContext& ctx, DType t) {
  const int64_t mels = scalar_int(ctx, 0, "num_mel_bins"), dft_length = scalar_int(ctx, 1, "dft_length"), rate = scalar_int(ctx, 2, "sample_rate");
  const double lo = read_scalar(ctx, 3), hi = read_scalar(ctx, 4);
  if (mels < 1 || mels > (1 << 16)) ctx.fail("num_mel_bins " + std::to_string(mels) + " is out of range");
  if (dft_length < 1 || dft_length > (1 << 24)) ctx.fail("dft_length " + std::to_string(dft_length) + " is out of range");
  if (rate < 1) ctx.fail("sample_rate " + std::to_string(rate) + " must be >= 1");
  if (!(lo >= 0 && hi > lo && hi <= static_cast<double>(rate))) ctx.fail("the edge frequencies must satisfy 0 <= lower < upper <= sample_rate");
  const int64_t spec_bins = dft_length / 2 + 1;
  auto to_mel = [](double hz) { return 2595 * std::log10(1 + hz / 700); };
  const double lo_mel = to_mel(lo), hi_mel = to_mel(hi);
  // The mel band edges are spaced over num_mel_bins + 2 steps (the reference's spacing).
  const double step = (hi_mel - lo_mel) / static_cast<double>(mels + 2);
  std::vector<int64_t> edge(static_cast<size_t>(mels + 2));
  for (int64_t i = 0; i < mels + 2; ++i) {
    const double hz = 700 * (std::pow(10.0, (static_cast<double>(i) * step + lo_mel) / 2595) - 1);
    edge[static_cast<size_t>(i)] = std::clamp<int64_t>(static_cast<int64_t>(std::floor(static_cast<double>(dft_length + 1) * hz / static_cast<double>(rate))), 0, spec_bins - 1);
  }
  std::vector<double> w(static_cast<size_t>(spec_bins * mels), 0.0);
  for (int64_t i = 0; i < mels; ++i) {
    const int64_t l = edge[static_cast<size_t>(i)], c = edge[static_cast<size_t>(i + 1)], h = edge[static_cast<size_t>(i + 2)];
    if (c == l) {
      w[static_cast<size_t>(c * mels + i)] = 1;
    } else {
      for (int64_t j = l; j <= c; ++j) w[static_cast<size_t>(j * mels + i)] = static_cast<double>(j - l) / static_cast<double>(c - l);
    }
    if (h > c)
      for (int64_t j = c; j < h; ++j) w[static_cast<size_t>(j * mels + i)] = static_cast<double>(h - j) / static_cast<double>(h - c);
  }
  store_real(ctx, ctx.out(0), t, {spec_bins, mels}, w);
}

}  // namespace

void register_signal(Registry& r) {
  r.add("HannWindow", window(0.5, 0.5, 0.0));
  r.add("HammingWindow", window(25.0 / 46.0, 21.0 / 46.0, 0.0));
  r.add("BlackmanWindow", window(0.42, 0.5, 0.08));
  r.add("DFT", [](const KernelInit& init) {
    const int64_t axis = init.attrs().get_int("axis", 1);
    const bool inverse = init.attrs().get_int("inverse", 0) != 0, onesided = init.attrs().get_int("onesided", 0) != 0;
    return make_kernel([=](KernelContext& ctx) { dft(ctx, axis, inverse, onesided); });
  });
  r.add("STFT", [](const KernelInit& init) {
    const bool onesided = init.attrs().get_int("onesided", 1) != 0;
    return make_kernel([=](KernelContext& ctx) { stft(ctx, onesided); });
  });
  r.add("MelWeightMatrix", [](const KernelInit& init) {
    const DType t = output_datatype(init);
    return make_kernel([t](KernelContext& ctx) { mel_weight_matrix(ctx, t); });
  });
}

}  // namespace nnxr::runtime
