// Normalisations: BatchNormalization, InstanceNormalization, LayerNormalization, LRN,
// LpNormalization, MeanVarianceNormalization; Softmax, LogSoftmax, Hardmax.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "model/half.h"
#include "model/runtime/compute.h"
#include "model/runtime/kernel.h"

namespace nnxr::runtime {
namespace {

const float* channel_param(const KernelContext& ctx, size_t i, int64_t C, const char* what) {
  const Value& v = ctx.in(i);
  if (v.dtype() != DType::Float) ctx.fail(std::string(what) + " " + ctx.input_name(i) + " must be float32");
  if (v.elements() != C)
    ctx.fail(std::string(what) + " " + ctx.input_name(i) + " has shape " + shape_str(v.shape()) + ", expected [" + std::to_string(C) + "]");
  return v.as<float>().data();
}

// Softmax family over a [outer, axis, inner] view.
enum class SoftKind { Softmax, LogSoftmax, Hardmax };

// The Softmax family on float rows [outer, n, inner] (see softmax_factory).
void soft_rows(KernelContext& ctx, SoftKind kind, const float* px, float* py, int64_t outer, int64_t n, int64_t inner, int64_t grain) {
  {
    ctx.pool().parallel_for(outer * inner, grain, [&](int64_t b, int64_t e) {
      if (kind == SoftKind::Softmax && inner == 1) {  // contiguous rows: the vector kernel
        softmax_rows_f32(px + b * n, py + b * n, e - b, n);
        return;
      }
      for (int64_t r = b; r < e; ++r) {
        const int64_t o = r / inner, i = r % inner;
        const float* xs = px + o * n * inner + i;
        float* ys = py + o * n * inner + i;
        float m = -std::numeric_limits<float>::infinity();
        int64_t arg = 0;
        for (int64_t k = 0; k < n; ++k)
          if (xs[k * inner] > m) {
            m = xs[k * inner];
            arg = k;
          }
        if (kind == SoftKind::Hardmax) {
          for (int64_t k = 0; k < n; ++k) ys[k * inner] = k == arg ? 1.f : 0.f;
          continue;
        }
        double s = 0;
        for (int64_t k = 0; k < n; ++k) {
          const float e2 = std::exp(xs[k * inner] - m);
          if (kind == SoftKind::Softmax) ys[k * inner] = e2;
          s += e2;
        }
        if (kind == SoftKind::Softmax) {
          const float inv = static_cast<float>(1.0 / s);
          for (int64_t k = 0; k < n; ++k) ys[k * inner] *= inv;
        } else {
          const float ls = static_cast<float>(std::log(s));
          for (int64_t k = 0; k < n; ++k) ys[k * inner] = xs[k * inner] - m - ls;
        }
      }
    });
  }
}

std::unique_ptr<Kernel> softmax_factory(const KernelInit& init, SoftKind kind) {
  const bool legacy = init.opset < 13;
  const int64_t axis_attr = init.attrs().get_int("axis", legacy ? 1 : -1);
  return make_kernel([=](KernelContext& ctx) {
    ctx.expect_dtype(0, {DType::Float, DType::Float16});
    const Value& x = ctx.in(0);
    const int64_t rank = static_cast<int64_t>(x.rank());
    int64_t outer, n, inner;
    if (rank == 0) {
      outer = n = inner = 1;
    } else {
      const int64_t axis = norm_axis(ctx, axis_attr, rank);
      const auto d = x.dims();
      if (legacy) {  // flatten to 2-D at axis, normalise each row
        outer = product(std::span<const int64_t>(d).subspan(0, static_cast<size_t>(axis)));
        n = product(std::span<const int64_t>(d).subspan(static_cast<size_t>(axis)));
        inner = 1;
      } else {
        outer = product(std::span<const int64_t>(d).subspan(0, static_cast<size_t>(axis)));
        n = d[static_cast<size_t>(axis)];
        inner = product(std::span<const int64_t>(d).subspan(static_cast<size_t>(axis) + 1));
      }
    }
    Value& y = ctx.out(0);
    const int64_t grain = std::max<int64_t>(1, 4096 / std::max<int64_t>(1, n));
    if (x.dtype() == DType::Float16) {
      y.reset(DType::Float16, x.dims());
      const uint16_t* hx = x.as<uint16_t>().data();
      uint16_t* hy = y.mutable_as<uint16_t>().data();
      if (kind == SoftKind::Softmax && inner == 1) {
        // Rows widened a block at a time into float scratch (in the first-level cache), the float
        // kernel's softmax_rows_f32 on them and each result rounded once: the same bits as the
        // float kernel on the widened tensor. Blocks of a multiple of 16 rows from the start of
        // each part, so that short rows share vector lanes as they do there.
        ctx.pool().parallel_for(outer, grain, [&](int64_t b, int64_t e) {
          const int64_t block = std::max<int64_t>(16, (int64_t{1} << 12) / std::max<int64_t>(1, n) / 16 * 16);
          std::vector<float> in(static_cast<size_t>(std::min(e - b, block) * n)), out(in.size());
          for (int64_t r = b; r < e; r += block) {
            const int64_t rows = std::min(block, e - r);
            const size_t count = static_cast<size_t>(rows * n);
            model::half_to_float(hx + r * n, in.data(), count);
            softmax_rows_f32(in.data(), out.data(), rows, n);
            model::float_to_half(out.data(), hy + r * n, count);
          }
        });
        return;
      }
      // LogSoftmax, Hardmax and strided axes: through float copies of the whole tensor.
      std::vector<float> fx(static_cast<size_t>(x.elements())), fy(fx.size());
      model::half_to_float(hx, fx.data(), fx.size());
      soft_rows(ctx, kind, fx.data(), fy.data(), outer, n, inner, grain);
      model::float_to_half(fy.data(), hy, fy.size());
      return;
    }
    y.reset(DType::Float, x.dims());
    soft_rows(ctx, kind, x.as<float>().data(), y.mutable_as<float>().data(), outer, n, inner, grain);
  });
}

}  // namespace

void register_norm(Registry& r) {
  // float16 read and written by the kernels themselves
  r.add("Softmax", [](const KernelInit& i) { return softmax_factory(i, SoftKind::Softmax); }, false);
  r.add("LogSoftmax", [](const KernelInit& i) { return softmax_factory(i, SoftKind::LogSoftmax); }, false);
  r.add("Hardmax", [](const KernelInit& i) { return softmax_factory(i, SoftKind::Hardmax); }, false);

  r.add("BatchNormalization", [](const KernelInit& init) {
    const float eps = init.attrs().get_float("epsilon", 1e-5f);
    // training_mode: normalise with the batch's statistics (population variance) and output the
    // running statistics updated with `momentum`.
    const bool training = init.attrs().get_int("training_mode", 0) != 0;
    const float momentum = init.attrs().get_float("momentum", 0.9f);
    return make_kernel([eps, training, momentum](KernelContext& ctx) {
      ctx.expect_dtype(0, {DType::Float});
      ctx.expect_min_rank(0, 2);
      const Value& x = ctx.in(0);
      const int64_t N = x.dims()[0], C = x.dims()[1], S = product(std::span<const int64_t>(x.dims()).subspan(2));
      const float* sc = channel_param(ctx, 1, C, "scale");
      const float* bi = channel_param(ctx, 2, C, "bias");
      const float* mu = channel_param(ctx, 3, C, "mean");
      const float* va = channel_param(ctx, 4, C, "var");
      std::vector<float> batch_mean, batch_var;
      if (training) {
        batch_mean.assign(static_cast<size_t>(C), 0.f);
        batch_var.assign(static_cast<size_t>(C), 0.f);
        const float* px = x.as<float>().data();
        const double count = static_cast<double>(N * S);
        for (int64_t c = 0; c < C && count > 0; ++c) {
          double sum = 0, sq = 0;
          for (int64_t n = 0; n < N; ++n)
            for (int64_t i = 0; i < S; ++i) sum += px[(n * C + c) * S + i];
          const double m = sum / count;
          for (int64_t n = 0; n < N; ++n)
            for (int64_t i = 0; i < S; ++i) sq += (px[(n * C + c) * S + i] - m) * (px[(n * C + c) * S + i] - m);
          batch_mean[static_cast<size_t>(c)] = static_cast<float>(m);
          batch_var[static_cast<size_t>(c)] = static_cast<float>(sq / count);
        }
        for (size_t k = 1; k < 3; ++k) {
          if (!ctx.has_output(k)) continue;
          const float* running = k == 1 ? mu : va;
          const std::vector<float>& batch = k == 1 ? batch_mean : batch_var;
          Value& o = ctx.out(k);
          o.reset(DType::Float, {C});
          for (int64_t c = 0; c < C; ++c) o.mutable_as<float>()[static_cast<size_t>(c)] = running[c] * momentum + batch[static_cast<size_t>(c)] * (1 - momentum);
        }
        mu = batch_mean.data();
        va = batch_var.data();
      }
      Value& y = ctx.out(0);
      y.reset(DType::Float, x.dims());
      const float* px = x.as<float>().data();
      float* py = y.mutable_as<float>().data();
      for (int64_t n = 0; n < N; ++n)
        for (int64_t c = 0; c < C; ++c) {
          const float a = sc[c] / std::sqrt(va[c] + eps), b = bi[c] - mu[c] * a;
          const float* xs = px + (n * C + c) * S;
          float* ys = py + (n * C + c) * S;
          for (int64_t i = 0; i < S; ++i) ys[i] = xs[i] * a + b;
        }
      // Optional outputs (running mean/var) in inference: the inputs unchanged.
      for (size_t k = 1; k < 3 && !training; ++k)
        if (ctx.has_output(k)) ctx.out(k).assign(DType::Float, ctx.in(k + 2).dims(), {ctx.in(k + 2).data(), ctx.in(k + 2).byte_size()});
    });
  });

  r.add("InstanceNormalization", [](const KernelInit& init) {
    const float eps = init.attrs().get_float("epsilon", 1e-5f);
    return make_kernel([eps](KernelContext& ctx) {
      ctx.expect_dtype(0, {DType::Float});
      ctx.expect_min_rank(0, 3);
      const Value& x = ctx.in(0);
      const int64_t N = x.dims()[0], C = x.dims()[1], S = product(std::span<const int64_t>(x.dims()).subspan(2));
      const float* sc = channel_param(ctx, 1, C, "scale");
      const float* bi = channel_param(ctx, 2, C, "bias");
      Value& y = ctx.out(0);
      y.reset(DType::Float, x.dims());
      const EpilogueOut act = ctx.fused_epilogue();
      const float* px = x.as<float>().data();
      float* py = y.mutable_as<float>().data();
      // Per plane: the statistics in one read pass (in double), then one pass reading x and
      // writing y and the fused activation.
      ctx.pool().parallel_for(N * C, 1, [&](int64_t b, int64_t e) {
        for (int64_t plane = b; plane < e; ++plane) {
          const int64_t c = plane % C;
          double mean, var;
          plane_moments(px + plane * S, S, mean, var);
          const float a = static_cast<float>(sc[c] / std::sqrt(var + eps)), bb = static_cast<float>(bi[c] - mean * a);
          scale_shift(px + plane * S, py + plane * S, S, a, bb, act, plane * S);
        }
      });
    });
  });

  r.add("LayerNormalization", [](const KernelInit& init) {
    const float eps = init.attrs().get_float("epsilon", 1e-5f);
    const int64_t axis_attr = init.attrs().get_int("axis", -1);
    return make_kernel([=](KernelContext& ctx) {
      ctx.expect_dtype(0, {DType::Float});
      const Value& x = ctx.in(0);
      const int64_t rank = static_cast<int64_t>(x.rank());
      const int64_t axis = norm_axis(ctx, axis_attr, rank);
      const auto d = std::span<const int64_t>(x.dims());
      const int64_t outer = product(d.subspan(0, static_cast<size_t>(axis))), n = product(d.subspan(static_cast<size_t>(axis)));
      const Shape norm_shape(d.begin() + axis, d.end());
      auto param = [&](size_t i) -> std::pair<const float*, Shape> {
        const Value* v = ctx.opt(i);
        if (!v) return {nullptr, {}};
        if (v->dtype() != DType::Float) ctx.fail("input " + ctx.input_name(i) + " must be float32");
        const Shape shapes[2] = {norm_shape, v->dims()};
        if (broadcast_shapes(ctx, shapes) != norm_shape)
          ctx.fail("input " + ctx.input_name(i) + " " + shape_str(v->shape()) + " does not broadcast to " + shape_str(norm_shape));
        return {v->as<float>().data(), v->dims()};
      };
      auto [sc, sc_shape] = param(1);
      auto [bi, bi_shape] = param(2);
      if (!sc) ctx.fail("missing scale input");
      // Expand scale and bias to n elements.
      auto expand = [&](const float* p, const Shape& s) {
        std::vector<float> out(static_cast<size_t>(n), 0.f);
        if (!p) return out;
        const auto st = broadcast_strides(s, norm_shape);
        for (int64_t i = 0; i < n; ++i) {
          int64_t rem = i, off = 0;
          for (size_t k = norm_shape.size(); k-- > 0;) {
            off += (rem % norm_shape[k]) * st[k];
            rem /= norm_shape[k];
          }
          out[static_cast<size_t>(i)] = p[off];
        }
        return out;
      };
      const auto scale = expand(sc, sc_shape), bias = expand(bi, bi_shape);
      Value& y = ctx.out(0);
      y.reset(DType::Float, x.dims());
      Shape stat_shape(d.begin(), d.end());
      for (int64_t k = axis; k < rank; ++k) stat_shape[static_cast<size_t>(k)] = 1;
      float* mean_out = nullptr;
      float* istd_out = nullptr;
      if (ctx.has_output(1)) {
        ctx.out(1).reset(DType::Float, stat_shape);
        mean_out = ctx.out(1).mutable_as<float>().data();
      }
      if (ctx.has_output(2)) {
        ctx.out(2).reset(DType::Float, stat_shape);
        istd_out = ctx.out(2).mutable_as<float>().data();
      }
      const float* px = x.as<float>().data();
      float* py = y.mutable_as<float>().data();
      ctx.pool().parallel_for(outer, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, n)), [&](int64_t b, int64_t e) {
        for (int64_t o = b; o < e; ++o) {
          const float* xs = px + o * n;
          float* ys = py + o * n;
          double mean, var;
          plane_moments(xs, n, mean, var);  // as InstanceNormalization's: one read pass in double lanes
          const double istd = 1.0 / std::sqrt(var + eps);
          for (int64_t i = 0; i < n; ++i) ys[i] = static_cast<float>((xs[i] - mean) * istd) * scale[static_cast<size_t>(i)] + bias[static_cast<size_t>(i)];
          if (mean_out) mean_out[o] = static_cast<float>(mean);
          if (istd_out) istd_out[o] = static_cast<float>(istd);
        }
      });
    });
  });

  r.add("LRN", [](const KernelInit& init) {
    const float alpha = init.attrs().get_float("alpha", 1e-4f), beta = init.attrs().get_float("beta", 0.75f), bias = init.attrs().get_float("bias", 1.f);
    const int64_t size = init.attrs().get_int("size", 0);
    if (size < 1) init.fail("size must be >= 1");
    return make_kernel([=](KernelContext& ctx) {
      ctx.expect_dtype(0, {DType::Float});
      ctx.expect_min_rank(0, 2);
      const Value& x = ctx.in(0);
      const int64_t N = x.dims()[0], C = x.dims()[1], S = product(std::span<const int64_t>(x.dims()).subspan(2));
      Value& y = ctx.out(0);
      y.reset(DType::Float, x.dims());
      const float* px = x.as<float>().data();
      float* py = y.mutable_as<float>().data();
      const int64_t lo_off = (size - 1) / 2, hi_off = size / 2;  // floor / ceil of (size-1)/2
      for (int64_t n = 0; n < N; ++n)
        for (int64_t c = 0; c < C; ++c) {
          const int64_t c0 = std::max<int64_t>(0, c - lo_off), c1 = std::min<int64_t>(C - 1, c + hi_off);
          for (int64_t i = 0; i < S; ++i) {
            double sq = 0;
            for (int64_t k = c0; k <= c1; ++k) {
              const double v = px[(n * C + k) * S + i];
              sq += v * v;
            }
            py[(n * C + c) * S + i] = static_cast<float>(px[(n * C + c) * S + i] / std::pow(bias + alpha / static_cast<double>(size) * sq, beta));
          }
        }
    });
  });

  r.add("LpNormalization", [](const KernelInit& init) {
    const int64_t axis_attr = init.attrs().get_int("axis", -1), p = init.attrs().get_int("p", 2);
    if (p != 1 && p != 2) init.fail("p must be 1 or 2");
    return make_kernel([=](KernelContext& ctx) {
      ctx.expect_dtype(0, {DType::Float});
      const Value& x = ctx.in(0);
      const int64_t axis = norm_axis(ctx, axis_attr, static_cast<int64_t>(x.rank()));
      const auto d = std::span<const int64_t>(x.dims());
      const int64_t outer = product(d.subspan(0, static_cast<size_t>(axis))), n = d[static_cast<size_t>(axis)],
                    inner = product(d.subspan(static_cast<size_t>(axis) + 1));
      Value& y = ctx.out(0);
      y.reset(DType::Float, x.dims());
      const float* px = x.as<float>().data();
      float* py = y.mutable_as<float>().data();
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t i = 0; i < inner; ++i) {
          double s = 0;
          for (int64_t k = 0; k < n; ++k) {
            const double v = px[(o * n + k) * inner + i];
            s += p == 1 ? std::fabs(v) : v * v;
          }
          const double norm = p == 1 ? s : std::sqrt(s);
          for (int64_t k = 0; k < n; ++k)
            py[(o * n + k) * inner + i] = norm == 0 ? 0.f : static_cast<float>(px[(o * n + k) * inner + i] / norm);
        }
    });
  });

  r.add("MeanVarianceNormalization", [](const KernelInit& init) {
    const auto axes_attr = init.attrs().get_ints("axes", {0, 2, 3});
    return make_kernel([=](KernelContext& ctx) {
      ctx.expect_dtype(0, {DType::Float});
      const Value& x = ctx.in(0);
      const int64_t rank = static_cast<int64_t>(x.rank());
      std::vector<bool> reduce(static_cast<size_t>(rank), false);
      for (int64_t a : axes_attr) reduce[static_cast<size_t>(norm_axis(ctx, a, rank))] = true;
      const auto st = strides_of(x.dims());
      // Group elements by their kept-axes index.
      const int64_t total = x.elements();
      std::vector<int64_t> key(static_cast<size_t>(total));
      int64_t groups = 1;
      std::vector<int64_t> kept_stride(static_cast<size_t>(rank), 0);
      for (int64_t k = rank; k-- > 0;)
        if (!reduce[static_cast<size_t>(k)]) {
          kept_stride[static_cast<size_t>(k)] = groups;
          groups *= x.dims()[static_cast<size_t>(k)];
        }
      for (int64_t i = 0; i < total; ++i) {
        int64_t rem = i, kk = 0;
        for (int64_t k = rank; k-- > 0;) {
          kk += (rem % x.dims()[static_cast<size_t>(k)]) * kept_stride[static_cast<size_t>(k)];
          rem /= x.dims()[static_cast<size_t>(k)];
        }
        key[static_cast<size_t>(i)] = kk;
      }
      (void)st;
      std::vector<double> sum(static_cast<size_t>(groups), 0), sq(static_cast<size_t>(groups), 0);
      std::vector<int64_t> cnt(static_cast<size_t>(groups), 0);
      const float* px = x.as<float>().data();
      for (int64_t i = 0; i < total; ++i) {
        const auto g = static_cast<size_t>(key[static_cast<size_t>(i)]);
        sum[g] += px[i];
        sq[g] += static_cast<double>(px[i]) * px[i];
        ++cnt[g];
      }
      Value& y = ctx.out(0);
      y.reset(DType::Float, x.dims());
      float* py = y.mutable_as<float>().data();
      for (int64_t i = 0; i < total; ++i) {
        const auto g = static_cast<size_t>(key[static_cast<size_t>(i)]);
        const double mean = sum[g] / static_cast<double>(cnt[g]), var = sq[g] / static_cast<double>(cnt[g]) - mean * mean;
        py[i] = static_cast<float>((px[i] - mean) / (std::sqrt(std::max(0.0, var)) + 1e-9));
      }
    });
  });
}

}  // namespace nnxr::runtime
