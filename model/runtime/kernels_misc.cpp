// Cast, CastLike, Constant, ConstantOfShape, Range, EyeLike, Resize/Upsample, and the legacy
// ImageScaler and Affine.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <type_traits>

#include "model/runtime/kernel.h"

namespace nnxr::runtime {
namespace {

// Float -> integer without UB: NaN -> 0, out of range saturates.
template <class To>
To from_double(double v) {
  if constexpr (std::is_same_v<To, bool>) {
    return v != 0;
  } else if constexpr (std::is_integral_v<To>) {
    if (std::isnan(v)) return To{0};
    if (v <= static_cast<double>(std::numeric_limits<To>::lowest())) return std::numeric_limits<To>::lowest();
    if (v >= static_cast<double>(std::numeric_limits<To>::max())) return std::numeric_limits<To>::max();
    return static_cast<To>(v);
  } else {
    return static_cast<To>(v);
  }
}

template <class F>
decltype(auto) dispatch_cast(const KernelContext& ctx, DType t, F&& f) {
  return dispatch_types<kFloats | kCommonInts | kOtherInts | kBool>(ctx, t, std::forward<F>(f));
}

void cast_value(const KernelContext& ctx, const Value& x, DType to, Value& y) {
  y.reset(to, x.dims());
  const auto n = static_cast<size_t>(x.elements());
  if (x.dtype() == to) {
    if (n) std::memcpy(y.mutable_data(), x.data(), x.byte_size());
    return;
  }
  // Float16 goes through float.
  if (x.dtype() == DType::Float16) {
    Value tmp;
    tmp.reset(DType::Float, x.dims());
    auto src = x.as<uint16_t>();
    auto f = tmp.mutable_as<float>();
    for (size_t i = 0; i < n; ++i) f[i] = half_to_float(src[i]);
    return cast_value(ctx, tmp, to, y);
  }
  if (to == DType::Float16) {
    Value tmp;
    cast_value(ctx, x, DType::Float, tmp);
    auto f = tmp.as<float>();
    auto dst = y.mutable_as<uint16_t>();
    for (size_t i = 0; i < n; ++i) dst[i] = float_to_half(f[i]);
    return;
  }
  dispatch_cast(ctx, x.dtype(), [&](auto tf) {
    using From = decltype(tf);
    dispatch_cast(ctx, to, [&](auto tt) {
      using To = decltype(tt);
      const From* src = reinterpret_cast<const From*>(x.data());
      auto* dst = reinterpret_cast<std::conditional_t<std::is_same_v<To, bool>, uint8_t, To>*>(y.mutable_data());
      for (size_t i = 0; i < n; ++i) {
        if constexpr (std::is_same_v<From, bool>) {
          dst[i] = static_cast<To>(src[i] ? 1 : 0);
        } else if constexpr (std::is_floating_point_v<From>) {
          dst[i] = from_double<To>(static_cast<double>(src[i]));
        } else if constexpr (std::is_same_v<To, bool>) {
          dst[i] = src[i] != 0;
        } else if constexpr (std::is_integral_v<To>) {
          dst[i] = static_cast<To>(static_cast<std::make_unsigned_t<To>>(src[i]));  // wraps
        } else {
          dst[i] = static_cast<To>(src[i]);
        }
      }
    });
  });
}

// `out` is the output size; `out_w` = scale x in, the length that align_corners, pytorch_half_pixel
// and tf_crop_and_resize divide by (ONNX's reference; equal to `out` when sizes are given).
double coord(const std::string& mode, double x, double scale, int64_t in, int64_t out, double out_w, double roi_start, double roi_end) {
  if (mode == "half_pixel") return (x + 0.5) / scale - 0.5;
  if (mode == "pytorch_half_pixel") return out_w > 1 ? (x + 0.5) / scale - 0.5 : 0.0;
  if (mode == "align_corners") return out_w == 1 ? 0.0 : x * static_cast<double>(in - 1) / (out_w - 1);
  if (mode == "asymmetric") return x / scale;
  if (mode == "tf_half_pixel_for_nn") return (x + 0.5) / scale;
  if (mode == "half_pixel_symmetric") {
    const double adj = static_cast<double>(out) / (scale * static_cast<double>(in));
    const double center = static_cast<double>(in) / 2;
    return center * (1 - adj) + (x + 0.5) / scale - 0.5;
  }
  // tf_crop_and_resize
  if (out_w > 1) return roi_start * static_cast<double>(in - 1) + x * (roi_end - roi_start) * static_cast<double>(in - 1) / (out_w - 1);
  return 0.5 * (roi_start + roi_end) * static_cast<double>(in - 1);
}

int64_t nearest(const std::string& mode, double x) {
  if (mode == "floor") return static_cast<int64_t>(std::floor(x));
  if (mode == "ceil") return static_cast<int64_t>(std::ceil(x));
  if (mode == "round_prefer_ceil") return static_cast<int64_t>(std::floor(x + 0.5));
  // round_prefer_floor
  return static_cast<int64_t>(std::ceil(x - 0.5));
}

struct ResizeAttrs {
  std::string mode = "nearest", coord_mode = "half_pixel", nearest_mode = "round_prefer_floor";
  float cubic_a = -0.75f, extrapolation = 0.f;
  bool exclude_outside = false;
  int opset = 13;
  bool upsample = false;
  std::vector<float> scales_attr;
};

// Per output index along one axis: neighbours and weights.
struct AxisMap {
  std::vector<int64_t> i0, i1;
  std::vector<float> w1;     // weight of i1 (linear), i0 weight = 1 - w1
  std::vector<uint8_t> out;  // outside the input (tf_crop_and_resize -> extrapolation value)
  bool identity = true;
  // cubic: four taps (clamped to the edge) and their weights per output index
  std::vector<std::array<int64_t, 4>> ci;
  std::vector<std::array<float, 4>> cw;
};

// Keys' cubic convolution weights of the taps floor(x) - 1 .. floor(x) + 2 for t = x - floor(x).
std::array<double, 4> cubic_coeffs(double t, double A) {
  auto near = [A](double s) { return ((A + 2) * s - (A + 3)) * s * s + 1; };
  auto far = [A](double s) { return ((A * s - 5 * A) * s + 8 * A) * s - 4 * A; };
  return {far(t + 1), near(t), near(1 - t), far(2 - t)};
}

void resize_run(KernelContext& ctx, const ResizeAttrs& a) {
  const Value& x = ctx.in(0);
  const size_t rank = x.rank();
  std::vector<double> scales(rank, 1.0);
  Shape os = x.dims();
  std::vector<double> roi;
  bool have_sizes = false;
  if (a.upsample) {
    std::vector<double> sc;
    if (a.opset >= 9) {
      const Value& s = ctx.in(1);
      if (s.dtype() != DType::Float) ctx.fail("scales must be float32");
      for (float f : s.as<float>()) sc.push_back(f);
    } else {
      sc.assign(a.scales_attr.begin(), a.scales_attr.end());
    }
    if (sc.size() != rank) ctx.fail("scales has " + std::to_string(sc.size()) + " values for input rank " + std::to_string(rank));
    scales = sc;
  } else if (a.opset < 11) {
    const Value& s = ctx.in(1);
    if (s.dtype() != DType::Float || static_cast<size_t>(s.elements()) != rank) ctx.fail("scales must be float32 with one value per input dim");
    for (size_t i = 0; i < rank; ++i) scales[i] = s.as<float>()[i];
  } else {
    if (ctx.has_input(1) && ctx.in(1).elements() > 0) {
      const Value& rv = ctx.in(1);
      for (int64_t i = 0; i < rv.elements(); ++i)
        roi.push_back(rv.dtype() == DType::Double ? rv.as<double>()[static_cast<size_t>(i)] : rv.as<float>()[static_cast<size_t>(i)]);
    }
    if (ctx.has_input(3) && ctx.in(3).elements() > 0) {
      const auto sizes = read_ints(ctx, 3);
      if (sizes.size() != rank) ctx.fail("sizes has " + std::to_string(sizes.size()) + " values for input rank " + std::to_string(rank));
      for (size_t i = 0; i < rank; ++i) {
        os[i] = sizes[i];
        scales[i] = x.dims()[i] ? static_cast<double>(sizes[i]) / static_cast<double>(x.dims()[i]) : 1.0;
      }
      have_sizes = true;
    } else if (ctx.has_input(2) && ctx.in(2).elements() > 0) {
      const Value& s = ctx.in(2);
      if (s.dtype() != DType::Float || static_cast<size_t>(s.elements()) != rank) ctx.fail("scales must be float32 with one value per input dim");
      for (size_t i = 0; i < rank; ++i) scales[i] = s.as<float>()[i];
    } else {
      ctx.fail("one of scales and sizes is required");
    }
  }
  if (!have_sizes)
    for (size_t i = 0; i < rank; ++i) {
      if (!(scales[i] > 0)) ctx.fail("scales must be positive");
      os[i] = static_cast<int64_t>(std::floor(static_cast<double>(x.dims()[i]) * scales[i]));
    }
  const bool cubic = a.mode == "cubic";
  const bool linear = a.mode == "linear" || a.mode == "bilinear" || cubic;  // interpolating
  if (!linear && a.mode != "nearest") ctx.fail("mode " + quoted(a.mode) + " is not supported");
  ctx.expect_dtype(0, {DType::Float});
  std::vector<AxisMap> maps(rank);
  for (size_t d = 0; d < rank; ++d) {
    AxisMap& m = maps[d];
    const int64_t in = x.dims()[d], out = os[d];
    m.i0.resize(static_cast<size_t>(out));
    m.i1.resize(static_cast<size_t>(out));
    m.w1.assign(static_cast<size_t>(out), 0.f);
    m.out.assign(static_cast<size_t>(out), 0);
    const double rs = roi.size() == 2 * rank ? roi[d] : 0.0, re = roi.size() == 2 * rank ? roi[d + rank] : 1.0;
    const double out_w = have_sizes ? static_cast<double>(out) : static_cast<double>(in) * scales[d];
    if (cubic) {
      m.ci.resize(static_cast<size_t>(out));
      m.cw.resize(static_cast<size_t>(out));
    }
    for (int64_t o = 0; o < out; ++o) {
      const auto k = static_cast<size_t>(o);
      double xo = in == out && a.coord_mode != "tf_crop_and_resize" ? static_cast<double>(o)
                                                                    : coord(a.coord_mode, static_cast<double>(o), scales[d], in, out, out_w, rs, re);
      if (a.coord_mode == "tf_crop_and_resize" && (xo < 0 || xo > static_cast<double>(in - 1))) {
        m.out[k] = 1;
        m.identity = false;
        continue;
      }
      if (cubic) {
        if (!std::isfinite(xo)) ctx.fail("the source coordinate of output index " + std::to_string(o) + " is not finite");
        const double fl = std::floor(xo);
        const auto c = cubic_coeffs(xo - fl, a.cubic_a);
        double sum = 0;
        std::array<double, 4> w{};
        for (int j = 0; j < 4; ++j) {
          const double tap = fl - 1 + j;
          w[static_cast<size_t>(j)] = a.exclude_outside && (tap < 0 || tap > static_cast<double>(in - 1)) ? 0.0 : c[static_cast<size_t>(j)];
          sum += w[static_cast<size_t>(j)];
          m.ci[k][static_cast<size_t>(j)] = static_cast<int64_t>(std::clamp(tap, 0.0, static_cast<double>(in - 1)));
        }
        for (int j = 0; j < 4; ++j) m.cw[k][static_cast<size_t>(j)] = static_cast<float>(a.exclude_outside && sum != 0 ? w[static_cast<size_t>(j)] / sum : w[static_cast<size_t>(j)]);
        m.i0[k] = m.i1[k] = m.ci[k][1];
        m.w1[k] = m.cw[k][1] == 1.f && m.cw[k][0] == 0.f && m.cw[k][2] == 0.f && m.cw[k][3] == 0.f ? 0.f : 1.f;  // 0: a plain copy of i0
      } else if (linear) {
        xo = std::clamp(xo, 0.0, static_cast<double>(in - 1));
        const auto lo = static_cast<int64_t>(std::floor(xo));
        m.i0[k] = lo;
        m.i1[k] = std::min(lo + 1, in - 1);
        m.w1[k] = static_cast<float>(xo - static_cast<double>(lo));
      } else {
        const int64_t idx = std::clamp<int64_t>(nearest(a.nearest_mode, xo), 0, in - 1);
        m.i0[k] = m.i1[k] = idx;
      }
      if (m.i0[k] != o || m.w1[k] != 0.f) m.identity = false;
    }
  }
  Value& y = ctx.out(0);
  y.reset(DType::Float, os);
  const auto ist = strides_of(x.dims());
  const float* px = x.as<float>().data();
  float* py = y.mutable_as<float>().data();
  std::vector<size_t> interp;
  for (size_t d = 0; d < rank; ++d)
    if (linear && !maps[d].identity) interp.push_back(d);
  const int64_t total = y.elements();
  const int64_t last = rank ? os[rank - 1] : 1;
  // Nearest along the last axis with every column inside the input: a row is a gather by the
  // column map; the map of an upsampling by 2 (column c from c / 2) is a doubling of the row.
  bool last_inside = false, last_doubled = false;
  if (rank > 0) {
    const AxisMap& ml = maps[rank - 1];
    last_inside = std::none_of(ml.out.begin(), ml.out.end(), [](uint8_t o) { return o != 0; });
    last_doubled = last_inside && last == 2 * x.dims()[rank - 1];
    for (int64_t c = 0; last_doubled && c < last; ++c) last_doubled = ml.i0[static_cast<size_t>(c)] == c / 2;
  }
  ctx.pool().parallel_for(total / std::max<int64_t>(1, last), 16, [&](int64_t r0, int64_t r1) {
    std::vector<int64_t> idx(rank);
    int64_t prev_base = -1;  // the source row of the last row written by this range (nearest, inside)
    for (int64_t row = r0; row < r1; ++row) {
      int64_t rem = row;
      for (size_t d = rank - 1; d-- > 0;) {
        idx[d] = rem % os[d];
        rem /= os[d];
      }
      if (interp.empty() && rank > 0) {
        // Nearest (or linear on no axis): the row's base offset once, then one gather per column.
        bool row_out = false;
        int64_t row_base = 0;
        for (size_t d = 0; d + 1 < rank; ++d) {
          const auto k = static_cast<size_t>(idx[d]);
          row_out = row_out || maps[d].out[k];
          row_base += maps[d].i0[k] * ist[d];
        }
        const AxisMap& ml = maps[rank - 1];
        const int64_t sl = ist[rank - 1];
        float* yr = py + row * last;
        if (!row_out && last_inside) {
          if (row_base == prev_base) {  // the same source row as the row before (an upsampled row): its copy
            std::memcpy(yr, yr - last, static_cast<size_t>(last) * sizeof(float));
            continue;
          }
          prev_base = row_base;
          const float* xr = px + row_base;
          if (last_doubled) {
            for (int64_t c = 0; c < last / 2; ++c) yr[2 * c] = yr[2 * c + 1] = xr[c];
          } else {
            for (int64_t c = 0; c < last; ++c) yr[c] = xr[ml.i0[static_cast<size_t>(c)]];
          }
          continue;
        }
        prev_base = -1;
        for (int64_t c = 0; c < last; ++c) {
          const auto k = static_cast<size_t>(c);
          yr[c] = row_out || ml.out[k] ? a.extrapolation : px[row_base + ml.i0[k] * sl];
        }
        continue;
      }
      for (int64_t c = 0; c < last; ++c) {
        idx[rank - 1] = c;
        bool outside = false;
        int64_t base = 0;
        for (size_t d = 0; d < rank; ++d) {
          const auto k = static_cast<size_t>(idx[d]);
          outside = outside || maps[d].out[k];
          base += maps[d].i0[k] * ist[d];
        }
        float v;
        if (outside) {
          v = a.extrapolation;
        } else if (interp.empty()) {
          v = px[base];
        } else if (cubic) {
          double acc = 0;
          size_t taps = 1;
          for (size_t j = 0; j < interp.size(); ++j) taps *= 4;
          for (size_t t = 0; t < taps; ++t) {
            double w = 1;
            int64_t off = base;
            size_t rem = t;
            for (size_t j = 0; j < interp.size(); ++j, rem /= 4) {
              const size_t d = interp[j], tap = rem % 4;
              const auto k = static_cast<size_t>(idx[d]);
              w *= maps[d].cw[k][tap];
              off += (maps[d].ci[k][tap] - maps[d].i0[k]) * ist[d];
            }
            if (w != 0) acc += w * px[off];
          }
          v = static_cast<float>(acc);
        } else {
          double acc = 0;
          const size_t corners = size_t{1} << interp.size();
          for (size_t cmask = 0; cmask < corners; ++cmask) {
            double w = 1;
            int64_t off = base;
            for (size_t j = 0; j < interp.size(); ++j) {
              const size_t d = interp[j];
              const auto k = static_cast<size_t>(idx[d]);
              if (cmask & (size_t{1} << j)) {
                w *= maps[d].w1[k];
                off += (maps[d].i1[k] - maps[d].i0[k]) * ist[d];
              } else {
                w *= 1.0 - maps[d].w1[k];
              }
            }
            if (w != 0) acc += w * px[off];
          }
          v = static_cast<float>(acc);
        }
        py[row * last + c] = v;
      }
    }
  });
}

}  // namespace

void register_misc(Registry& r) {
  r.add("Cast", [](const KernelInit& init) {
    const auto to = static_cast<DType>(init.attrs().get_int("to", 0));
    if (!model::dtype_valid(static_cast<int32_t>(to))) init.fail("attribute 'to' is not a valid element type");
    return make_kernel([to](KernelContext& ctx) { cast_value(ctx, ctx.in(0), to, ctx.out(0)); });
  }, false);
  r.add("CastLike", [](const KernelInit&) {
    return make_kernel([](KernelContext& ctx) { cast_value(ctx, ctx.in(0), ctx.in(1).dtype(), ctx.out(0)); });
  }, false);

  // The Session shares the Constant's data with the output tensor before any run.
  r.add("Constant", [](const KernelInit& init) {
    if (!init.node.outputs.empty() && init.node.outputs[0] != model::kNone && !init.graph.tensors[init.node.outputs[0]].data)
      init.fail("only dense value / value_* attributes are supported (sparse_value is not)");
    return make_kernel([](KernelContext& ctx) {
      if (ctx.out(0).empty()) ctx.fail("constant has no value");
    });
  }, false);

  r.add("ConstantOfShape", [](const KernelInit& init) {
    std::shared_ptr<const model::TensorData> value;
    if (const auto* at = init.attrs().find("value")) value = at->tensor;
    if (value && (value->elements() != 1 || model::dtype_size(value->dtype) == 0)) init.fail("value must hold one element");
    return make_kernel([value](KernelContext& ctx) {
      const auto shape = read_ints(ctx, 0);
      for (int64_t d : shape)
        if (d < 0) ctx.fail("shape " + shape_str(shape) + " has a negative dim");
      Value& y = ctx.out(0);
      const DType t = value ? value->dtype : DType::Float;
      y.reset(t, shape);
      const size_t es = model::dtype_size(t);
      std::byte* p = y.mutable_data();
      if (!value) {
        y.fill_zero();
        return;
      }
      for (int64_t i = 0; i < y.elements(); ++i) std::memcpy(p + static_cast<size_t>(i) * es, value->bytes.data(), es);
    });
  }, false);

  r.add("Range", [](const KernelInit&) {
    return make_kernel([](KernelContext& ctx) {
      const DType t = ctx.in(0).dtype();
      if (ctx.in(1).dtype() != t || ctx.in(2).dtype() != t) ctx.fail("start, limit and delta must have one element type");
      Value& y = ctx.out(0);
      dispatch_numeric(ctx, t, [&](auto tag) {
        using T = decltype(tag);
        const double start = read_scalar(ctx, 0), limit = read_scalar(ctx, 1), delta = read_scalar(ctx, 2);
        if (delta == 0) ctx.fail("delta is 0");
        const double count = std::max(0.0, std::ceil((limit - start) / delta));
        if (!(count < 1e10)) ctx.fail("range is too long");
        const auto n = static_cast<int64_t>(count);
        y.reset(t, {n});
        T* p = y.mutable_as<T>().data();
        if constexpr (std::is_integral_v<T>) {
          // In unsigned 64-bit arithmetic: values past T's range wrap instead of overflowing.
          const auto s = static_cast<uint64_t>(static_cast<T>(start)), dl = static_cast<uint64_t>(static_cast<T>(delta));
          for (int64_t i = 0; i < n; ++i) p[i] = static_cast<T>(s + static_cast<uint64_t>(i) * dl);
        } else {
          for (int64_t i = 0; i < n; ++i) p[i] = static_cast<T>(start + static_cast<double>(i) * delta);
        }
      });
    });
  }, false);

  r.add("EyeLike", [](const KernelInit& init) {
    const int64_t k = init.attrs().get_int("k", 0);
    const int64_t dt = init.attrs().get_int("dtype", 0);
    return make_kernel([=](KernelContext& ctx) {
      ctx.expect_rank(0, 2);
      const Value& x = ctx.in(0);
      const DType t = dt ? static_cast<DType>(dt) : x.dtype();
      Value& y = ctx.out(0);
      y.reset(t, x.dims());
      y.fill_zero();
      dispatch_cast(ctx, t, [&](auto tag) {
        using T = decltype(tag);
        auto* p = reinterpret_cast<std::conditional_t<std::is_same_v<T, bool>, uint8_t, T>*>(y.mutable_data());
        const int64_t R = x.dims()[0], C = x.dims()[1];
        for (int64_t i = 0; i < R; ++i)
          if (i + k >= 0 && i + k < C) p[i * C + i + k] = 1;
      });
    });
  }, false);

  auto resize_factory = [](bool upsample) {
    return [upsample](const KernelInit& init) {
      ResizeAttrs a;
      a.upsample = upsample;
      a.opset = static_cast<int>(init.opset);
      a.mode = init.attrs().get_string("mode", "nearest");
      a.extrapolation = init.attrs().get_float("extrapolation_value", 0.f);
      if (upsample || init.opset < 11) {
        a.coord_mode = "asymmetric";
        a.nearest_mode = "floor";
        a.scales_attr = init.attrs().get_floats("scales");
        if (a.opset < 11 && !upsample) a.nearest_mode = "floor";
      } else {
        a.coord_mode = init.attrs().get_string("coordinate_transformation_mode", "half_pixel");
        a.nearest_mode = init.attrs().get_string("nearest_mode", "round_prefer_floor");
      }
      if (init.attrs().get_int("antialias", 0) != 0) init.fail("antialias is not supported");
      a.cubic_a = init.attrs().get_float("cubic_coeff_a", -0.75f);
      a.exclude_outside = init.attrs().get_int("exclude_outside", 0) != 0;
      if (a.mode != "nearest" && a.mode != "linear" && a.mode != "bilinear" && a.mode != "cubic") init.fail("unknown mode " + quoted(a.mode));
      if (init.attrs().find("axes")) init.fail("the axes attribute is not supported");
      return make_kernel([a](KernelContext& ctx) { resize_run(ctx, a); });
    };
  };
  r.add("Resize", resize_factory(false));
  r.add("Upsample", resize_factory(true));

  // Legacy ImageScaler: y = scale * x + bias[c].
  r.add("ImageScaler", [](const KernelInit& init) {
    const float scale = init.attrs().get_float("scale", 1.f);
    const auto bias = init.attrs().get_floats("bias");
    return make_kernel([=](KernelContext& ctx) {
      ctx.expect_dtype(0, {DType::Float});
      ctx.expect_rank(0, 4);
      const Value& x = ctx.in(0);
      const int64_t N = x.dims()[0], C = x.dims()[1], S = x.dims()[2] * x.dims()[3];
      if (!bias.empty() && static_cast<int64_t>(bias.size()) != C) ctx.fail("bias has " + std::to_string(bias.size()) + " values for " + std::to_string(C) + " channels");
      Value& y = ctx.out(0);
      y.reset(DType::Float, x.dims());
      const float* px = x.as<float>().data();
      float* py = y.mutable_as<float>().data();
      for (int64_t n = 0; n < N; ++n)
        for (int64_t c = 0; c < C; ++c) {
          const float b = bias.empty() ? 0.f : bias[static_cast<size_t>(c)];
          for (int64_t i = 0; i < S; ++i) py[(n * C + c) * S + i] = scale * px[(n * C + c) * S + i] + b;
        }
    });
  });

  // Legacy Affine: y = alpha * x + beta.
  r.add("Affine", [](const KernelInit& init) {
    const float alpha = init.attrs().get_float("alpha", 1.f), beta = init.attrs().get_float("beta", 0.f);
    return make_kernel([=](KernelContext& ctx) {
      ctx.expect_dtype(0, {DType::Float});
      const Value& x = ctx.in(0);
      Value& y = ctx.out(0);
      y.reset(DType::Float, x.dims());
      auto in = x.as<float>();
      auto out = y.mutable_as<float>();
      for (size_t i = 0; i < in.size(); ++i) out[i] = alpha * in[i] + beta;
    });
  });
}

}  // namespace nnxr::runtime
