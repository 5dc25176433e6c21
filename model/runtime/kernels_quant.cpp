// Quantization ops: QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear, MatMulInteger,
// QLinearMatMul, ConvInteger, QLinearConv.
//
// Linear quantization: real = (q - zero_point) * scale; q = saturate(round_half_even(real / scale)
// + zero_point) into the range of the quantized type (uint8 or int8; int32 for the dequantized
// input of DequantizeLinear). Scale and zero point are per tensor (one element) or, for
// Quantize/DequantizeLinear, per slice along `axis` (1-D of that axis' size). The integer
// products accumulate in 64 bits exactly; the QLinear ops then requantize with the float factor
// a_scale * b_scale / y_scale.
#include <algorithm>
#include <cmath>
#include <limits>

#include "model/runtime/kernel.h"
#include "model/runtime/kernels_more.h"
#include "model/runtime/spatial.h"

namespace nnxr::runtime {
namespace {

// Integer element i of a uint8/int8/int32 tensor.
int32_t int_at(const Value& v, int64_t i) {
  const auto k = static_cast<size_t>(i);
  switch (v.dtype()) {
    case DType::UInt8: return v.as<uint8_t>()[k];
    case DType::Int8: return v.as<int8_t>()[k];
    case DType::Int32: return v.as<int32_t>()[k];
    default: return 0;
  }
}

void expect_quant_type(const KernelContext& ctx, size_t i, bool int32_ok = false) {
  if (int32_ok) ctx.expect_dtype(i, {DType::UInt8, DType::Int8, DType::Int32});
  else ctx.expect_dtype(i, {DType::UInt8, DType::Int8});
}

// Saturating store of a rounded real into a quantized type.
template <class Q>
Q saturate(float r) {
  if (std::isnan(r)) return Q{0};
  const float lo = static_cast<float>(std::numeric_limits<Q>::min()), hi = static_cast<float>(std::numeric_limits<Q>::max());
  return static_cast<Q>(std::clamp(r, lo, hi));
}

void store_q(Value& y, int64_t i, float r) {
  const auto k = static_cast<size_t>(i);
  if (y.dtype() == DType::UInt8) y.mutable_as<uint8_t>()[k] = saturate<uint8_t>(r);
  else y.mutable_as<int8_t>()[k] = saturate<int8_t>(r);
}

// Per-tensor or per-axis parameters: which parameter element applies to element i of x.
struct QuantParams {
  const Value* scale = nullptr;
  const Value* zero = nullptr;
  int64_t axis_size = 1, inner = 1;  // element i uses parameter (i / inner) % axis_size
  bool per_axis = false;

  int64_t index(int64_t i) const { return per_axis ? (i / inner) % axis_size : 0; }
  float s(int64_t i) const { return scale->as<float>()[static_cast<size_t>(index(i))]; }
  int32_t z(int64_t i) const { return zero ? int_at(*zero, index(i)) : 0; }
};

QuantParams quant_params(const KernelContext& ctx, int64_t axis, size_t scale_slot, size_t zero_slot) {
  const Value& x = ctx.in(0);
  QuantParams p;
  ctx.expect_dtype(scale_slot, {DType::Float});
  p.scale = &ctx.in(scale_slot);
  p.zero = ctx.opt(zero_slot);
  const int64_t n = p.scale->elements();
  if (p.zero && p.zero->elements() != n)
    ctx.fail("zero point " + ctx.input_name(zero_slot) + " " + shape_str(p.zero->shape()) + " and scale " + ctx.input_name(scale_slot) + " " +
             shape_str(p.scale->shape()) + " differ in size");
  if (p.scale->rank() == 0 || (n == 1 && p.scale->rank() == 1)) return p;
  if (p.scale->rank() != 1) ctx.fail("scale " + ctx.input_name(scale_slot) + " has shape " + shape_str(p.scale->shape()) + "; it must be a scalar or 1-D");
  const int64_t a = norm_axis(ctx, axis, static_cast<int64_t>(x.rank()));
  if (x.dims()[static_cast<size_t>(a)] != n)
    ctx.fail("scale " + ctx.input_name(scale_slot) + " has " + std::to_string(n) + " elements for axis " + std::to_string(a) + " of size " +
             std::to_string(x.dims()[static_cast<size_t>(a)]));
  p.per_axis = true;
  p.axis_size = n;
  p.inner = product(std::span<const int64_t>(x.dims()).subspan(static_cast<size_t>(a) + 1));
  return p;
}

// Output dims and per-batch offsets of a numpy matmul of `as` by `bs` (1-D operands promoted).
struct MatmulGeom {
  Shape out;
  int64_t M = 1, K = 1, N = 1;
  std::vector<int64_t> a_off, b_off;  // element offsets of each batch's matrices
};

MatmulGeom matmul_geom(const KernelContext& ctx, const Shape& as, const Shape& bs) {
  if (as.empty() || bs.empty()) ctx.fail("MatMul operands must have rank >= 1");
  Shape a = as, b = bs;
  if (a.size() == 1) a.insert(a.begin(), 1);
  if (b.size() == 1) b.push_back(1);
  MatmulGeom g;
  g.M = a[a.size() - 2];
  g.K = a.back();
  g.N = b.back();
  if (b[b.size() - 2] != g.K)
    ctx.fail("inputs " + ctx.input_name(0) + " " + shape_str(as) + " and " + ctx.input_name(1) + " " + shape_str(bs) + " cannot be multiplied");
  const Shape ab(a.begin(), a.end() - 2), bb(b.begin(), b.end() - 2);
  const Shape both[2] = {ab, bb};
  const Shape batch = broadcast_shapes(ctx, both);
  const auto sa = broadcast_strides(ab, batch), sb = broadcast_strides(bb, batch);
  const int64_t nb = product(batch);
  for (int64_t i = 0; i < nb; ++i) {
    int64_t rem = i, oa = 0, ob = 0;
    for (size_t d = batch.size(); d-- > 0;) {
      const int64_t idx = rem % batch[d];
      rem /= batch[d];
      oa += idx * sa[d];
      ob += idx * sb[d];
    }
    g.a_off.push_back(oa * g.M * g.K);
    g.b_off.push_back(ob * g.K * g.N);
  }
  g.out = batch;
  if (as.size() > 1) g.out.push_back(g.M);
  if (bs.size() > 1) g.out.push_back(g.N);
  return g;
}

// Zero point of an integer matmul operand: scalar, or 1-D per row (A, length M) / per column (B,
// length N). Returns the per-row/column values.
std::vector<int32_t> matmul_zero(const KernelContext& ctx, size_t slot, int64_t len) {
  std::vector<int32_t> z(static_cast<size_t>(len), 0);
  const Value* v = ctx.opt(slot);
  if (!v) return z;
  expect_quant_type(ctx, slot);
  if (v->elements() == 1) {
    std::fill(z.begin(), z.end(), int_at(*v, 0));
  } else if (v->rank() == 1 && v->elements() == len) {
    for (int64_t i = 0; i < len; ++i) z[static_cast<size_t>(i)] = int_at(*v, i);
  } else {
    ctx.fail("zero point " + ctx.input_name(slot) + " has shape " + shape_str(v->shape()) + "; expected a scalar or [" + std::to_string(len) + "]");
  }
  return z;
}

// acc[batch, m, n] = sum_k (A - za[m]) * (B - zb[n]), exact in int64.
std::vector<int64_t> int_matmul(const KernelContext& ctx, const MatmulGeom& g, size_t a_slot, size_t b_slot, const std::vector<int32_t>& za,
                                const std::vector<int32_t>& zb) {
  const Value &A = ctx.in(a_slot), &B = ctx.in(b_slot);
  const int64_t nb = static_cast<int64_t>(g.a_off.size());
  std::vector<int64_t> acc(static_cast<size_t>(nb * g.M * g.N), 0);
  std::vector<int32_t> a_row(static_cast<size_t>(g.K));
  for (int64_t bi = 0; bi < nb; ++bi)
    for (int64_t m = 0; m < g.M; ++m) {
      for (int64_t k = 0; k < g.K; ++k) a_row[static_cast<size_t>(k)] = int_at(A, g.a_off[static_cast<size_t>(bi)] + m * g.K + k) - za[static_cast<size_t>(m)];
      int64_t* row = acc.data() + (bi * g.M + m) * g.N;
      for (int64_t k = 0; k < g.K; ++k) {
        const int64_t av = a_row[static_cast<size_t>(k)];
        if (av == 0) continue;
        const int64_t boff = g.b_off[static_cast<size_t>(bi)] + k * g.N;
        for (int64_t n = 0; n < g.N; ++n) row[n] += av * (int_at(B, boff + n) - zb[static_cast<size_t>(n)]);
      }
    }
  return acc;
}

// One float factor per output column or a single one.
float scalar_param(const KernelContext& ctx, size_t slot) {
  ctx.expect_dtype(slot, {DType::Float});
  const Value& v = ctx.in(slot);
  if (v.elements() != 1) ctx.fail("scale " + ctx.input_name(slot) + " has shape " + shape_str(v.shape()) + "; expected a scalar");
  return v.as<float>()[0];
}

int32_t scalar_zero(const KernelContext& ctx, size_t slot) {
  const Value* v = ctx.opt(slot);
  if (!v) return 0;
  expect_quant_type(ctx, slot);
  if (v->elements() != 1) ctx.fail("zero point " + ctx.input_name(slot) + " has shape " + shape_str(v->shape()) + "; expected a scalar");
  return int_at(*v, 0);
}

// Output type of a requantizing op: that of its output zero point (uint8 when absent).
DType out_qtype(const KernelContext& ctx, size_t zero_slot) {
  const Value* z = ctx.opt(zero_slot);
  if (!z) return DType::UInt8;
  expect_quant_type(ctx, zero_slot);
  return z->dtype();
}

// Integer convolution of x (uint8/int8) and w (uint8/int8) after subtracting their zero points;
// the padding holds the zero point (0 after subtraction). Returns [N, M, out...] in int64 and the
// geometry.
struct IntConv {
  Shape out_shape;
  std::vector<int64_t> acc;
  int64_t M = 0, P = 0;  // output channels, output pixels per channel
};

IntConv int_conv(const KernelContext& ctx, const SpatialAttrs& at, size_t x_slot, size_t w_slot, int32_t zx, const std::vector<int32_t>& zw) {
  const Value &x = ctx.in(x_slot), &w = ctx.in(w_slot);
  if (x.rank() < 3) ctx.fail("input " + ctx.input_name(x_slot) + " has shape " + shape_str(x.shape()) + ", expected [N, C, spatial...]");
  if (w.rank() != x.rank())
    ctx.fail("weight " + ctx.input_name(w_slot) + " has shape " + shape_str(w.shape()) + ", expected rank " + std::to_string(x.rank()));
  const int64_t N = x.dims()[0], C = x.dims()[1], M = w.dims()[0], group = at.group;
  const Shape in(x.dims().begin() + 2, x.dims().end()), kernel(w.dims().begin() + 2, w.dims().end());
  if (!at.kernel.empty() && at.kernel != kernel)
    ctx.fail("kernel_shape " + shape_str(at.kernel) + " does not match weight " + ctx.input_name(w_slot) + " " + shape_str(w.shape()));
  if (C != w.dims()[1] * group || M % group != 0)
    ctx.fail("input " + ctx.input_name(x_slot) + " " + shape_str(x.shape()) + " and weight " + ctx.input_name(w_slot) + " " + shape_str(w.shape()) +
             " do not agree for group " + std::to_string(group));
  if (zw.size() != 1 && static_cast<int64_t>(zw.size()) != M) ctx.fail("weight zero point has " + std::to_string(zw.size()) + " values for " + std::to_string(M) + " output channels");
  Shape stride, dil, pb, pe, out;
  at.resolve(ctx, in, kernel, stride, dil, pb, pe, out);
  const size_t S = in.size();
  const int64_t Cg = C / group, Mg = M / group, P = product(out), KS = product(kernel), IS = product(in);
  IntConv r;
  r.out_shape = {N, M};
  r.out_shape.insert(r.out_shape.end(), out.begin(), out.end());
  r.acc.assign(static_cast<size_t>(N * M * P), 0);
  r.M = M;
  r.P = P;
  std::vector<int64_t> o(S), k(S);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t m = 0; m < M; ++m) {
      const int64_t grp = m / Mg;
      const int32_t zwm = zw.size() == 1 ? zw[0] : zw[static_cast<size_t>(m)];
      for (int64_t p = 0; p < P; ++p) {
        int64_t rem = p;
        for (size_t d = S; d-- > 0;) {
          o[d] = rem % out[d];
          rem /= out[d];
        }
        int64_t acc = 0;
        for (int64_t kk = 0; kk < KS; ++kk) {
          int64_t r2 = kk, off = 0, mul = 1;
          for (size_t d = S; d-- > 0;) {
            k[d] = r2 % kernel[d];
            r2 /= kernel[d];
          }
          bool inside = true;
          for (size_t d = S; d-- > 0;) {
            const int64_t i = o[d] * stride[d] - pb[d] + k[d] * dil[d];
            if (i < 0 || i >= in[d]) inside = false;
            off += i * mul;
            mul *= in[d];
          }
          if (!inside) continue;
          for (int64_t c = 0; c < Cg; ++c)
            acc += static_cast<int64_t>(int_at(x, (n * C + grp * Cg + c) * IS + off) - zx) * (int_at(w, (m * Cg + c) * KS + kk) - zwm);
        }
        r.acc[static_cast<size_t>((n * M + m) * P + p)] = acc;
      }
    }
  return r;
}

std::vector<int32_t> conv_weight_zero(const KernelContext& ctx, size_t slot) {
  const Value* v = ctx.opt(slot);
  if (!v) return {0};
  expect_quant_type(ctx, slot);
  if (v->rank() > 1) ctx.fail("zero point " + ctx.input_name(slot) + " has shape " + shape_str(v->shape()) + "; expected a scalar or 1-D");
  std::vector<int32_t> z;
  for (int64_t i = 0; i < v->elements(); ++i) z.push_back(int_at(*v, i));
  if (z.empty()) ctx.fail("zero point " + ctx.input_name(slot) + " is empty");
  return z;
}

int32_t wrap_i32(int64_t v) { return static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint64_t>(v))); }

}  // namespace

void register_quant(Registry& r) {
  r.add("QuantizeLinear", [](const KernelInit& init) {
    const int64_t axis = init.attrs().get_int("axis", 1);
    return make_kernel([axis](KernelContext& ctx) {
      ctx.expect_dtype(0, {DType::Float, DType::Int32});
      const Value& x = ctx.in(0);
      const QuantParams p = quant_params(ctx, axis, 1, 2);
      if (p.zero) expect_quant_type(ctx, 2);
      Value& y = ctx.out(0);
      y.reset(p.zero ? p.zero->dtype() : DType::UInt8, x.dims());
      for (int64_t i = 0; i < x.elements(); ++i) {
        const float v = x.dtype() == DType::Float ? x.as<float>()[static_cast<size_t>(i)] : static_cast<float>(x.as<int32_t>()[static_cast<size_t>(i)]);
        store_q(y, i, std::nearbyint(v / p.s(i)) + static_cast<float>(p.z(i)));
      }
    });
  });
  r.add("DequantizeLinear", [](const KernelInit& init) {
    const int64_t axis = init.attrs().get_int("axis", 1);
    return make_kernel([axis](KernelContext& ctx) {
      expect_quant_type(ctx, 0, true);
      const Value& x = ctx.in(0);
      const QuantParams p = quant_params(ctx, axis, 1, 2);
      if (p.zero) {
        expect_quant_type(ctx, 2, true);
        if (p.zero->dtype() != x.dtype()) ctx.fail("zero point " + ctx.input_name(2) + " and input " + ctx.input_name(0) + " differ in element type");
      }
      Value& y = ctx.out(0);
      y.reset(DType::Float, x.dims());
      auto out = y.mutable_as<float>();
      for (int64_t i = 0; i < x.elements(); ++i)
        out[static_cast<size_t>(i)] = static_cast<float>(static_cast<int64_t>(int_at(x, i)) - p.z(i)) * p.s(i);
    });
  });
  r.add("DynamicQuantizeLinear", [](const KernelInit&) {
    return make_kernel([](KernelContext& ctx) {
      ctx.expect_dtype(0, {DType::Float});
      const Value& x = ctx.in(0);
      auto xs = x.as<float>();
      float lo = 0, hi = 0;  // the range always includes 0
      for (float v : xs) {
        if (std::isnan(v)) continue;
        lo = std::min(lo, v);
        hi = std::max(hi, v);
      }
      const float scale = (hi - lo) / 255.f;
      const float zero = scale > 0 ? std::clamp(std::nearbyint((0.f - lo) / scale), 0.f, 255.f) : 0.f;
      Value& y = ctx.out(0);
      y.reset(DType::UInt8, x.dims());
      auto ys = y.mutable_as<uint8_t>();
      for (size_t i = 0; i < xs.size(); ++i) ys[i] = scale > 0 ? saturate<uint8_t>(std::nearbyint(xs[i] / scale) + zero) : uint8_t{0};
      if (ctx.has_output(1)) {
        ctx.out(1).reset(DType::Float, {});
        ctx.out(1).mutable_as<float>()[0] = scale;
      }
      if (ctx.has_output(2)) {
        ctx.out(2).reset(DType::UInt8, {});
        ctx.out(2).mutable_as<uint8_t>()[0] = static_cast<uint8_t>(zero);
      }
    });
  });
  r.add("MatMulInteger", [](const KernelInit&) {
    return make_kernel([](KernelContext& ctx) {
      expect_quant_type(ctx, 0);
      expect_quant_type(ctx, 1);
      const MatmulGeom g = matmul_geom(ctx, ctx.in(0).dims(), ctx.in(1).dims());
      const auto acc = int_matmul(ctx, g, 0, 1, matmul_zero(ctx, 2, g.M), matmul_zero(ctx, 3, g.N));
      Value& y = ctx.out(0);
      y.reset(DType::Int32, g.out);
      auto ys = y.mutable_as<int32_t>();
      for (size_t i = 0; i < acc.size(); ++i) ys[i] = wrap_i32(acc[i]);
    });
  });
  r.add("QLinearMatMul", [](const KernelInit&) {
    return make_kernel([](KernelContext& ctx) {
      expect_quant_type(ctx, 0);
      expect_quant_type(ctx, 3);
      const MatmulGeom g = matmul_geom(ctx, ctx.in(0).dims(), ctx.in(3).dims());
      const float as = scalar_param(ctx, 1), bs = scalar_param(ctx, 4), ys = scalar_param(ctx, 6);
      const std::vector<int32_t> za(static_cast<size_t>(g.M), scalar_zero(ctx, 2)), zb(static_cast<size_t>(g.N), scalar_zero(ctx, 5));
      const int32_t zy = scalar_zero(ctx, 7);
      const auto acc = int_matmul(ctx, g, 0, 3, za, zb);
      Value& y = ctx.out(0);
      y.reset(out_qtype(ctx, 7), g.out);
      const float factor = as * bs / ys;
      for (size_t i = 0; i < acc.size(); ++i) store_q(y, static_cast<int64_t>(i), std::nearbyint(static_cast<float>(acc[i]) * factor) + static_cast<float>(zy));
    });
  });
  r.add("ConvInteger", [](const KernelInit& init) {
    const SpatialAttrs at = SpatialAttrs::decode(init);
    return make_kernel([at](KernelContext& ctx) {
      expect_quant_type(ctx, 0);
      expect_quant_type(ctx, 1);
      const IntConv c = int_conv(ctx, at, 0, 1, scalar_zero(ctx, 2), conv_weight_zero(ctx, 3));
      Value& y = ctx.out(0);
      y.reset(DType::Int32, c.out_shape);
      auto ys = y.mutable_as<int32_t>();
      for (size_t i = 0; i < c.acc.size(); ++i) ys[i] = wrap_i32(c.acc[i]);
    });
  });
  r.add("QLinearConv", [](const KernelInit& init) {
    const SpatialAttrs at = SpatialAttrs::decode(init);
    return make_kernel([at](KernelContext& ctx) {
      expect_quant_type(ctx, 0);
      expect_quant_type(ctx, 3);
      const float xs = scalar_param(ctx, 1), ys = scalar_param(ctx, 6);
      ctx.expect_dtype(4, {DType::Float});
      const Value& ws = ctx.in(4);
      const IntConv c = int_conv(ctx, at, 0, 3, scalar_zero(ctx, 2), conv_weight_zero(ctx, 5));
      if (ws.elements() != 1 && ws.elements() != c.M)
        ctx.fail("weight scale " + ctx.input_name(4) + " has " + std::to_string(ws.elements()) + " values for " + std::to_string(c.M) + " output channels");
      const Value* bias = ctx.opt(8);
      if (bias) {
        ctx.expect_dtype(8, {DType::Int32});
        if (bias->elements() != c.M) ctx.fail("bias " + ctx.input_name(8) + " has shape " + shape_str(bias->shape()) + ", expected [" + std::to_string(c.M) + "]");
      }
      const int32_t zy = scalar_zero(ctx, 7);
      Value& y = ctx.out(0);
      y.reset(out_qtype(ctx, 7), c.out_shape);
      for (size_t i = 0; i < c.acc.size(); ++i) {
        const int64_t m = (static_cast<int64_t>(i) / c.P) % c.M;
        const float w_scale = ws.as<float>()[ws.elements() == 1 ? 0 : static_cast<size_t>(m)];
        const int64_t acc = c.acc[i] + (bias ? bias->as<int32_t>()[static_cast<size_t>(m)] : 0);
        store_q(y, static_cast<int64_t>(i), std::nearbyint(static_cast<float>(acc) * (xs * w_scale / ys)) + static_cast<float>(zy));
      }
    });
  });
}

}  // namespace nnxr::runtime
