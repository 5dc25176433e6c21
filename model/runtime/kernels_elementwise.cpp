// Element-wise binary and variadic ops with multidirectional broadcasting, comparisons, logic,
// Where and the plain unary math ops.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "model/runtime/broadcast.h"
#include "model/runtime/compute.h"
#include "model/runtime/exp_lanes.h"
#include "model/runtime/half_lanes.h"
#include "model/runtime/kernel.h"

namespace nnxr::runtime {
namespace {

template <class T>
std::span<const T> in_as(const Value& v) {
  return v.as<T>();
}

// Signed integer arithmetic wraps (as ONNX Runtime does in practice) instead of being UB.
template <class T>
T wrap_add(T a, T b) {
  if constexpr (std::is_integral_v<T>) return static_cast<T>(static_cast<std::make_unsigned_t<T>>(a) + static_cast<std::make_unsigned_t<T>>(b));
  else return a + b;
}
template <class T>
T wrap_sub(T a, T b) {
  if constexpr (std::is_integral_v<T>) return static_cast<T>(static_cast<std::make_unsigned_t<T>>(a) - static_cast<std::make_unsigned_t<T>>(b));
  else return a - b;
}
template <class T>
T wrap_mul(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;
    return static_cast<T>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
  } else {
    return a * b;
  }
}

template <class A, class B, class R, class Op>
void binary_loop(KernelContext& ctx, const Value& a, const Value& b, Value& out, DType out_type, Op op) {
  const Shape shapes[2] = {a.dims(), b.dims()};
  Shape os = broadcast_shapes(ctx, shapes);
  out.reset(out_type, os);
  const A* pa = reinterpret_cast<const A*>(a.data());
  const B* pb = reinterpret_cast<const B*>(b.data());
  R* po = reinterpret_cast<R*>(out.mutable_data());
  std::array<std::vector<int64_t>, 2> st{broadcast_strides(a.dims(), os), broadcast_strides(b.dims(), os)};
  for_each_broadcast<2>(os, st, &ctx.pool(), [&](const std::array<int64_t, 2>& off, const std::array<int64_t, 2>& is, int64_t o, int64_t len) {
    const A* x = pa + off[0];
    const B* y = pb + off[1];
    R* z = po + o;
    if (is[0] == 1 && is[1] == 1)
      for (int64_t i = 0; i < len; ++i) z[i] = op(x[i], y[i]);
    else if (is[0] == 1 && is[1] == 0)
      for (int64_t i = 0; i < len; ++i) z[i] = op(x[i], y[0]);
    else if (is[0] == 0 && is[1] == 1)
      for (int64_t i = 0; i < len; ++i) z[i] = op(x[0], y[i]);
    else
      for (int64_t i = 0; i < len; ++i) z[i] = op(x[i * is[0]], y[i * is[1]]);
  });
}

enum class Arith { Add, Sub, Mul, Div, Max, Min, Mod, FMod };

// Float Add, Sub, Mul and Div on W lanes at a time (GCC vectors: the same IEEE operation on each
// lane as the scalar loop, so the same results), for one collapsed row of the broadcast: both
// inputs contiguous, or one of them a single value (a per-channel scale or bias such as a
// squeeze-excitation block's); other strides element by element.
// In place (a = a op b; no vector passed or returned by value: that would change the ABI
// between the builds for different sets).
template <Arith Op, class V>
[[gnu::always_inline]] inline void float_op(V& a, const V& b) {
  if constexpr (Op == Arith::Add) a = a + b;
  else if constexpr (Op == Arith::Sub) a = a - b;
  else if constexpr (Op == Arith::Mul) a = a * b;
  else a = a / b;
}

// z[i] = x[i sx] op y[i sy] for i < n; W floats a step (two vectors) where the strides are 0 or 1.
template <int W, Arith Op>
[[gnu::always_inline]] inline void float_row_body(const float* x, int64_t sx, const float* y, int64_t sy, float* z, int64_t n) {
  using V = typename Lanes<W>::F;
  int64_t i = 0;
  if ((sx == 0 || sx == 1) && (sy == 0 || sy == 1)) {
    V a0 = x[0] - V{}, a1 = a0, b0 = y[0] - V{}, b1 = b0;  // (the single values; x - +0 is x, -0 included)
    for (; i + 2 * W <= n; i += 2 * W) {
      if (sx) {
        std::memcpy(&a0, x + i, sizeof a0);
        std::memcpy(&a1, x + i + W, sizeof a1);
      }
      if (sy) {
        std::memcpy(&b0, y + i, sizeof b0);
        std::memcpy(&b1, y + i + W, sizeof b1);
      }
      V r0 = a0, r1 = a1;
      float_op<Op>(r0, b0);
      float_op<Op>(r1, b1);
      std::memcpy(z + i, &r0, sizeof r0);
      std::memcpy(z + i + W, &r1, sizeof r1);
    }
  }
  for (; i < n; ++i) {
    float v = x[i * sx];
    float_op<Op>(v, y[i * sy]);
    z[i] = v;
  }
}

template <Arith Op>
__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma"))) void float_row_avx512(const float* x, int64_t sx, const float* y, int64_t sy,
                                                                                             float* z, int64_t n) {
  float_row_body<16, Op>(x, sx, y, sy, z, n);
}
template <Arith Op>
__attribute__((target("avx2,fma"))) void float_row_avx2(const float* x, int64_t sx, const float* y, int64_t sy, float* z, int64_t n) {
  float_row_body<8, Op>(x, sx, y, sy, z, n);
}
template <Arith Op>
void float_row_sse(const float* x, int64_t sx, const float* y, int64_t sy, float* z, int64_t n) {
  float_row_body<4, Op>(x, sx, y, sy, z, n);
}

// Float Add, Sub, Mul or Div with broadcasting, rows by the widest set the CPU has.
template <Arith Op>
void float_arith(KernelContext& ctx, const Value& a, const Value& b, Value& out) {
  const Shape shapes[2] = {a.dims(), b.dims()};
  Shape os = broadcast_shapes(ctx, shapes);
  out.reset(DType::Float, os);
  const float* pa = a.as<float>().data();
  const float* pb = b.as<float>().data();
  float* po = out.mutable_as<float>().data();
  const auto row = cpu_has_avx512() ? float_row_avx512<Op> : cpu_has_avx2_fma() ? float_row_avx2<Op> : float_row_sse<Op>;
  std::array<std::vector<int64_t>, 2> st{broadcast_strides(a.dims(), os), broadcast_strides(b.dims(), os)};
  for_each_broadcast<2>(os, st, &ctx.pool(), [&](const std::array<int64_t, 2>& off, const std::array<int64_t, 2>& is, int64_t o, int64_t len) {
    row(pa + off[0], is[0], pb + off[1], is[1], po + o, len);
  });
}

// Float16 Add, Sub, Mul or Div with broadcasting, read and written as float16 (no float copy of
// either tensor): the rows of half_lanes.h's policy for the active set, each value widened in
// registers, the float operation, one rounding to float16 (so the results of the float kernel on
// the widened tensors, rounded).
template <Arith Op>
struct HalfArith {
  static constexpr bool kSigmoid = false;
  template <class V>
  [[gnu::always_inline]] void apply(V& a, const V& b) const {
    float_op<Op>(a, b);
  }
};

template <Arith Op>
void half_arith(KernelContext& ctx, const Value& a, const Value& b, Value& out) {
  const Shape shapes[2] = {a.dims(), b.dims()};
  Shape os = broadcast_shapes(ctx, shapes);
  out.reset(DType::Float16, os);
  const uint16_t* pa = a.as<uint16_t>().data();
  const uint16_t* pb = b.as<uint16_t>().data();
  uint16_t* po = out.mutable_as<uint16_t>().data();
  const HalfArith<Op> f;
  const auto row = cpu_has_avx512() ? &HalfAvx512::zip<HalfArith<Op>> : cpu_has_avx2_fma() ? &HalfAvx2::zip<HalfArith<Op>> : &HalfPortable::zip<HalfArith<Op>>;
  std::array<std::vector<int64_t>, 2> st{broadcast_strides(a.dims(), os), broadcast_strides(b.dims(), os)};
  for_each_broadcast<2>(os, st, &ctx.pool(), [&](const std::array<int64_t, 2>& off, const std::array<int64_t, 2>& is, int64_t o, int64_t len) {
    row(pa + off[0], is[0], pb + off[1], is[1], po + o, len, f);
  });
}

void same_type(const KernelContext& ctx, size_t i, size_t j) {
  if (ctx.in(i).dtype() != ctx.in(j).dtype())
    ctx.fail("inputs " + ctx.input_name(i) + " (" + std::string(model::dtype_name(ctx.in(i).dtype())) + ") and " + ctx.input_name(j) + " (" +
             std::string(model::dtype_name(ctx.in(j).dtype())) + ") have different element types");
}

template <class F>
decltype(auto) dispatch_arith(const KernelContext& ctx, DType t, F&& f) {
  return dispatch_types<kFloats | kCommonInts | kOtherInts>(ctx, t, std::forward<F>(f));
}

template <class T>
T int_div(const KernelContext& ctx, T a, T b) {
  if (b == 0) ctx.fail("integer division by zero");
  if constexpr (std::is_signed_v<T>)
    if (a == std::numeric_limits<T>::min() && b == -1) return a;
  return static_cast<T>(a / b);
}

template <class T>
T apply_arith(const KernelContext& ctx, Arith op, T a, T b) {
  switch (op) {
    case Arith::Add: return wrap_add(a, b);
    case Arith::Sub: return wrap_sub(a, b);
    case Arith::Mul: return wrap_mul(a, b);
    case Arith::Div:
      if constexpr (std::is_integral_v<T>) return int_div(ctx, a, b);
      else return a / b;
    case Arith::Max:
      if constexpr (std::is_floating_point_v<T>)
        if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<T>::quiet_NaN();
      return std::max(a, b);
    case Arith::Min:
      if constexpr (std::is_floating_point_v<T>)
        if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<T>::quiet_NaN();
      return std::min(a, b);
    case Arith::Mod:  // sign of the divisor (Python)
      if constexpr (std::is_integral_v<T>) {
        if (b == 0) ctx.fail("integer modulo by zero");
        if constexpr (std::is_signed_v<T>)
          if (b == -1) return 0;
        T r = static_cast<T>(a % b);
        if (r != 0 && ((r < 0) != (b < 0))) r = static_cast<T>(r + b);
        return r;
      } else {
        T r = std::fmod(a, b);
        if (r != 0 && ((r < 0) != (b < 0))) r += b;
        return r;
      }
    case Arith::FMod:  // sign of the dividend (C fmod)
      if constexpr (std::is_integral_v<T>) {
        if (b == 0) ctx.fail("integer modulo by zero");
        if constexpr (std::is_signed_v<T>)
          if (b == -1) return 0;
        return static_cast<T>(a % b);
      } else {
        return std::fmod(a, b);
      }
  }
  return a;
}

void arith(KernelContext& ctx, Arith op, const Value& a, const Value& b, Value& out) {
  if (a.dtype() == DType::Float16) switch (op) {  // (the kernels registered without the float round trip)
      case Arith::Add: return half_arith<Arith::Add>(ctx, a, b, out);
      case Arith::Sub: return half_arith<Arith::Sub>(ctx, a, b, out);
      case Arith::Mul: return half_arith<Arith::Mul>(ctx, a, b, out);
      case Arith::Div: return half_arith<Arith::Div>(ctx, a, b, out);
      default: break;
    }
  dispatch_arith(ctx, a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, float>) {  // vector rows
      switch (op) {
        case Arith::Add: return float_arith<Arith::Add>(ctx, a, b, out);
        case Arith::Sub: return float_arith<Arith::Sub>(ctx, a, b, out);
        case Arith::Mul: return float_arith<Arith::Mul>(ctx, a, b, out);
        case Arith::Div: return float_arith<Arith::Div>(ctx, a, b, out);
        default: break;
      }
    }
    switch (op) {  // the hot ops get their own loops
      case Arith::Add: return binary_loop<T, T, T>(ctx, a, b, out, a.dtype(), [](T x, T y) { return wrap_add(x, y); });
      case Arith::Sub: return binary_loop<T, T, T>(ctx, a, b, out, a.dtype(), [](T x, T y) { return wrap_sub(x, y); });
      case Arith::Mul: return binary_loop<T, T, T>(ctx, a, b, out, a.dtype(), [](T x, T y) { return wrap_mul(x, y); });
      case Arith::Div:
        if constexpr (std::is_floating_point_v<T>) return binary_loop<T, T, T>(ctx, a, b, out, a.dtype(), [](T x, T y) { return x / y; });
        [[fallthrough]];
      default:
        return binary_loop<T, T, T>(ctx, a, b, out, a.dtype(), [&ctx, op](T x, T y) { return apply_arith(ctx, op, x, y); });
    }
  });
}

KernelFactory binary_arith(Arith op) {
  return [op](const KernelInit& init) {
    Arith o = op;
    if (o == Arith::Mod && init.attrs().get_int("fmod", 0)) o = Arith::FMod;
    return make_kernel([o](KernelContext& ctx) {
      same_type(ctx, 0, 1);
      arith(ctx, o, ctx.in(0), ctx.in(1), ctx.out(0));
    });
  };
}

// Max, Min, Sum, Mean: variadic, folded pairwise.
KernelFactory variadic(Arith op, bool mean) {
  return [op, mean](const KernelInit&) {
    return make_kernel([op, mean](KernelContext& ctx) {
      Value& out = ctx.out(0);
      const size_t n = ctx.input_count();
      if (n == 0) ctx.fail("needs at least one input");
      for (size_t i = 1; i < n; ++i) same_type(ctx, 0, i);
      if (n == 1) {
        out.assign(ctx.in(0).dtype(), ctx.in(0).dims(), {ctx.in(0).data(), ctx.in(0).byte_size()});
      } else {
        arith(ctx, op, ctx.in(0), ctx.in(1), out);
        Value tmp;
        for (size_t i = 2; i < n; ++i) {
          tmp.assign(out.dtype(), out.dims(), {out.data(), out.byte_size()});
          arith(ctx, op, tmp, ctx.in(i), out);
        }
      }
      if (mean)
        dispatch_float(ctx, out.dtype(), [&](auto tag) {
          using T = decltype(tag);
          for (T& x : out.mutable_as<T>()) x /= static_cast<T>(n);
        });
    });
  };
}

KernelFactory pow_kernel() {
  return [](const KernelInit&) {
    return make_kernel([](KernelContext& ctx) {
      const Value& a = ctx.in(0);
      const Value& b = ctx.in(1);
      dispatch_arith(ctx, a.dtype(), [&](auto ta) {
        using A = decltype(ta);
        dispatch_arith(ctx, b.dtype(), [&](auto tb) {
          using B = decltype(tb);
          binary_loop<A, B, A>(ctx, a, b, ctx.out(0), a.dtype(), [](A x, B y) {
            if constexpr (std::is_floating_point_v<A>) {
              if constexpr (std::is_floating_point_v<B>) {
                if (y == B(2)) return static_cast<A>(x * x);
                if (y == B(0.5)) return static_cast<A>(std::sqrt(x));
              }
              return static_cast<A>(std::pow(x, static_cast<A>(y)));
            } else {
              const double r = std::pow(static_cast<double>(x), static_cast<double>(y));
              if (!(std::fabs(r) < 9.2e18)) return A{0};
              return static_cast<A>(static_cast<int64_t>(r));  // narrower types wrap
            }
          });
        });
      });
    });
  };
}

enum class Cmp { Eq, Lt, Gt, Le, Ge };

KernelFactory compare(Cmp c) {
  return [c](const KernelInit&) {
    return make_kernel([c](KernelContext& ctx) {
      same_type(ctx, 0, 1);
      const Value& a = ctx.in(0);
      auto run = [&](auto tag) {
        using T = decltype(tag);
        switch (c) {
          case Cmp::Eq: return binary_loop<T, T, uint8_t>(ctx, a, ctx.in(1), ctx.out(0), DType::Bool, [](T x, T y) { return uint8_t(x == y); });
          case Cmp::Lt: return binary_loop<T, T, uint8_t>(ctx, a, ctx.in(1), ctx.out(0), DType::Bool, [](T x, T y) { return uint8_t(x < y); });
          case Cmp::Gt: return binary_loop<T, T, uint8_t>(ctx, a, ctx.in(1), ctx.out(0), DType::Bool, [](T x, T y) { return uint8_t(x > y); });
          case Cmp::Le: return binary_loop<T, T, uint8_t>(ctx, a, ctx.in(1), ctx.out(0), DType::Bool, [](T x, T y) { return uint8_t(x <= y); });
          case Cmp::Ge: return binary_loop<T, T, uint8_t>(ctx, a, ctx.in(1), ctx.out(0), DType::Bool, [](T x, T y) { return uint8_t(x >= y); });
        }
      };
      if (a.dtype() == DType::Bool) run(uint8_t{});
      else dispatch_numeric(ctx, a.dtype(), run);
    });
  };
}

enum class Logic { And, Or, Xor };
KernelFactory logic(Logic l) {
  return [l](const KernelInit&) {
    return make_kernel([l](KernelContext& ctx) {
      ctx.expect_dtype(0, {DType::Bool});
      ctx.expect_dtype(1, {DType::Bool});
      binary_loop<uint8_t, uint8_t, uint8_t>(ctx, ctx.in(0), ctx.in(1), ctx.out(0), DType::Bool, [l](uint8_t x, uint8_t y) {
        const bool a = x != 0, b = y != 0;
        return uint8_t(l == Logic::And ? (a && b) : l == Logic::Or ? (a || b) : (a != b));
      });
    });
  };
}

KernelFactory bitshift() {
  return [](const KernelInit& init) {
    const bool left = init.attrs().get_string("direction", "") == "LEFT";
    return make_kernel([left](KernelContext& ctx) {
      same_type(ctx, 0, 1);
      auto run = [&](auto tag) {
        using T = decltype(tag);
        binary_loop<T, T, T>(ctx, ctx.in(0), ctx.in(1), ctx.out(0), ctx.in(0).dtype(), [left](T x, T y) {
          if (y >= static_cast<T>(sizeof(T) * 8)) return T{0};
          return static_cast<T>(left ? static_cast<T>(x << y) : static_cast<T>(x >> y));
        });
      };
      switch (ctx.in(0).dtype()) {
        case DType::UInt8: return run(uint8_t{});
        case DType::UInt16: return run(uint16_t{});
        case DType::UInt32: return run(uint32_t{});
        case DType::UInt64: return run(uint64_t{});
        default: ctx.fail("BitShift needs unsigned integer inputs");
      }
    });
  };
}

// Where(cond, X, Y): X and Y of any fixed-size type.
KernelFactory where_kernel() {
  return [](const KernelInit&) {
    return make_kernel([](KernelContext& ctx) {
      ctx.expect_dtype(0, {DType::Bool});
      same_type(ctx, 1, 2);
      const Value &c = ctx.in(0), &x = ctx.in(1), &y = ctx.in(2);
      const Shape shapes[3] = {c.dims(), x.dims(), y.dims()};
      Shape os = broadcast_shapes(ctx, shapes);
      Value& out = ctx.out(0);
      out.reset(x.dtype(), os);
      const size_t es = model::dtype_size(x.dtype());
      const uint8_t* pc = reinterpret_cast<const uint8_t*>(c.data());
      const std::byte *px = x.data(), *py = y.data();
      std::byte* po = out.mutable_data();
      std::array<std::vector<int64_t>, 3> st{broadcast_strides(c.dims(), os), broadcast_strides(x.dims(), os), broadcast_strides(y.dims(), os)};
      for_each_broadcast<3>(os, st, &ctx.pool(), [&](const std::array<int64_t, 3>& off, const std::array<int64_t, 3>& is, int64_t o, int64_t len) {
        for (int64_t i = 0; i < len; ++i) {
          const bool take_x = pc[off[0] + i * is[0]] != 0;
          const std::byte* src = take_x ? px + (off[1] + i * is[1]) * static_cast<int64_t>(es) : py + (off[2] + i * is[2]) * static_cast<int64_t>(es);
          copy_elem(po + (o + i) * static_cast<int64_t>(es), src, es);
        }
      });
    });
  };
}

// ---- unary -----------------------------------------------------------------------------------


// Float-only unary ops.
// Float16: EXPR in float on each value widened in registers, rounded once (half_map).
#define NNXR_FLOAT_UNARY(NAME, EXPR)                                             \
  r.add(NAME, [](const KernelInit&) {                                            \
    return make_kernel([](KernelContext& ctx) {                                  \
      const Value& a = ctx.in(0);                                                \
      if (a.dtype() == DType::Float16) {                                         \
        Value& y = ctx.out(0);                                                   \
        y.reset(DType::Float16, a.dims());                                       \
        return half_map(&ctx.pool(), a.as<uint16_t>().data(), y.mutable_as<uint16_t>().data(), a.elements(), \
                        half_scalar([](float x) { using T = float; return static_cast<T>(EXPR); })); \
      }                                                                          \
      dispatch_float(ctx, a.dtype(), [&](auto tag) {                             \
        using T = decltype(tag);                                                 \
        unary_loop<T>(ctx, a, ctx.out(0), [](T x) { return static_cast<T>(EXPR); }); \
      });                                                                        \
    });                                                                          \
  }, false)

// y = exp(x) for n floats, W lanes at a time by exp_lanes (about 2 ulp); the values outside its
// clamp [-87, 88] (an overflow to inf, a result below the normal floats) by libm.
template <int W>
[[gnu::always_inline]] inline void exp_row_body(const float* x, float* y, int64_t n) {
  using V = typename Lanes<W>::F;
  using I = typename Lanes<W>::I;
  int64_t i = 0;
  for (; i + W <= n; i += W) {
    V v;
    std::memcpy(&v, x + i, sizeof v);
    const I outside = (v < -87.f) | (v > 88.f);
    V e = v;
    exp_lanes<V, I>(e);
    std::memcpy(y + i, &e, sizeof e);
    bool any = false;
    for (int k = 0; k < W; ++k) any = any || outside[k] != 0;
    if (any)
      for (int k = 0; k < W; ++k)
        if (outside[k]) y[i + k] = std::exp(x[i + k]);
  }
  for (; i < n; ++i) {
    float e = x[i];
    exp_lanes<float, int32_t>(e);
    y[i] = x[i] < -87.f || x[i] > 88.f ? std::exp(x[i]) : e;
  }
}
__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma"))) void exp_row_avx512(const float* x, float* y, int64_t n) {
  exp_row_body<16>(x, y, n);
}
__attribute__((target("avx2,fma"))) void exp_row_avx2(const float* x, float* y, int64_t n) { exp_row_body<8>(x, y, n); }
void exp_row_sse(const float* x, float* y, int64_t n) { exp_row_body<4>(x, y, n); }

template <class T>
T sign_of(T x) {
  if constexpr (std::is_floating_point_v<T>)
    if (std::isnan(x)) return x;
  return static_cast<T>(x > T(0) ? 1 : x < T(0) ? -1 : 0);
}

}  // namespace

void register_elementwise(Registry& r) {
  // Float16 Add, Sub, Mul and Div read and write float16 (half_arith); the other ops compute
  // float16 in float around the kernel.
  r.add("Add", binary_arith(Arith::Add), false);
  r.add("Sub", binary_arith(Arith::Sub), false);
  r.add("Mul", binary_arith(Arith::Mul), false);
  r.add("Div", binary_arith(Arith::Div), false);
  r.add("Mod", binary_arith(Arith::Mod));
  r.add("Pow", pow_kernel());
  r.add("Max", variadic(Arith::Max, false));
  r.add("Min", variadic(Arith::Min, false));
  r.add("Sum", variadic(Arith::Add, false));
  r.add("Mean", variadic(Arith::Add, true));
  r.add("Equal", compare(Cmp::Eq));
  r.add("Less", compare(Cmp::Lt));
  r.add("Greater", compare(Cmp::Gt));
  r.add("LessOrEqual", compare(Cmp::Le));
  r.add("GreaterOrEqual", compare(Cmp::Ge));
  r.add("And", logic(Logic::And));
  r.add("Or", logic(Logic::Or));
  r.add("Xor", logic(Logic::Xor));
  r.add("BitShift", bitshift());
  r.add("Where", where_kernel());
  r.add("Not", [](const KernelInit&) {
    return make_kernel([](KernelContext& ctx) {
      ctx.expect_dtype(0, {DType::Bool});
      unary_loop<uint8_t>(ctx, ctx.in(0), ctx.out(0), [](uint8_t x) { return uint8_t(x == 0); });
    });
  });

  // Numeric (float and integer) unary ops.
  r.add("Abs", [](const KernelInit&) {
    return make_kernel([](KernelContext& ctx) {
      dispatch_numeric(ctx, ctx.in(0).dtype(), [&](auto tag) {
        using T = decltype(tag);
        unary_loop<T>(ctx, ctx.in(0), ctx.out(0), [](T x) {
          if constexpr (std::is_unsigned_v<T>) return x;
          else if constexpr (std::is_integral_v<T>) return x == std::numeric_limits<T>::min() ? x : static_cast<T>(x < 0 ? -x : x);
          else return std::fabs(x);
        });
      });
    });
  });
  r.add("Neg", [](const KernelInit&) {
    return make_kernel([](KernelContext& ctx) {
      dispatch_numeric(ctx, ctx.in(0).dtype(), [&](auto tag) {
        using T = decltype(tag);
        unary_loop<T>(ctx, ctx.in(0), ctx.out(0), [](T x) { return wrap_sub(T(0), x); });
      });
    });
  });
  r.add("Sign", [](const KernelInit&) {
    return make_kernel([](KernelContext& ctx) {
      dispatch_numeric(ctx, ctx.in(0).dtype(), [&](auto tag) {
        using T = decltype(tag);
        unary_loop<T>(ctx, ctx.in(0), ctx.out(0), [](T x) { return sign_of(x); });
      });
    });
  });

  r.add("Exp", [](const KernelInit&) {
    return make_kernel([](KernelContext& ctx) {
      const Value& a = ctx.in(0);
      if (a.dtype() == DType::Float) {  // vector lanes (exp_row_body), in blocks of 16K over the pool
        Value& out = ctx.out(0);
        out.reset(DType::Float, a.dims());
        const float* x = a.as<float>().data();
        float* y = out.mutable_as<float>().data();
        const auto row = cpu_has_avx512() ? exp_row_avx512 : cpu_has_avx2_fma() ? exp_row_avx2 : exp_row_sse;
        const int64_t n = a.elements(), block = int64_t{1} << 14;
        if (n < (int64_t{1} << 16)) return row(x, y, n);
        return ctx.pool().parallel_for((n + block - 1) / block, 1, [&](int64_t b, int64_t e) { row(x + b * block, y + b * block, std::min(n, e * block) - b * block); });
      }
      if (a.dtype() == DType::Float16) {
        Value& y = ctx.out(0);
        y.reset(DType::Float16, a.dims());
        return half_map(&ctx.pool(), a.as<uint16_t>().data(), y.mutable_as<uint16_t>().data(), a.elements(),
                        half_scalar([](float x) { return std::exp(x); }));
      }
      dispatch_float(ctx, a.dtype(), [&](auto tag) {
        using T = decltype(tag);
        unary_loop<T>(ctx, a, ctx.out(0), [](T x) { return static_cast<T>(std::exp(x)); });
      });
    });
  }, false);
  NNXR_FLOAT_UNARY("Log", std::log(x));
  NNXR_FLOAT_UNARY("Sqrt", std::sqrt(x));
  NNXR_FLOAT_UNARY("Reciprocal", T(1) / x);
  NNXR_FLOAT_UNARY("Floor", std::floor(x));
  NNXR_FLOAT_UNARY("Ceil", std::ceil(x));
  NNXR_FLOAT_UNARY("Round", std::nearbyint(x));
  r.add("Erf", [](const KernelInit&) {
    return make_kernel([](KernelContext& ctx) {
      const Value& a = ctx.in(0);
      if (a.dtype() == DType::Float) {  // vectorised (erf_f32), in blocks of 16k over the pool
        Value& out = ctx.out(0);
        out.reset(DType::Float, a.dims());
        const float* x = a.as<float>().data();
        float* y = out.mutable_as<float>().data();
        const int64_t n = a.elements(), block = int64_t{1} << 14;
        return ctx.pool().parallel_for((n + block - 1) / block, 1, [&](int64_t b, int64_t e) { erf_f32(x + b * block, y + b * block, std::min(n, e * block) - b * block); });
      }
      if (a.dtype() == DType::Float16) {  // erf_f32 on each widened value, in registers
        Value& y = ctx.out(0);
        y.reset(DType::Float16, a.dims());
        return half_map(&ctx.pool(), a.as<uint16_t>().data(), y.mutable_as<uint16_t>().data(), a.elements(), HalfErf{});
      }
      dispatch_float(ctx, a.dtype(), [&](auto tag) {
        using T = decltype(tag);
        unary_loop<T>(ctx, a, ctx.out(0), [](T x) { return static_cast<T>(std::erf(x)); });
      });
    });
  }, false);  // float16 by half_map
  NNXR_FLOAT_UNARY("Sin", std::sin(x));
  NNXR_FLOAT_UNARY("Cos", std::cos(x));
  NNXR_FLOAT_UNARY("Tan", std::tan(x));
  NNXR_FLOAT_UNARY("Asin", std::asin(x));
  NNXR_FLOAT_UNARY("Acos", std::acos(x));
  NNXR_FLOAT_UNARY("Atan", std::atan(x));
  NNXR_FLOAT_UNARY("Sinh", std::sinh(x));
  NNXR_FLOAT_UNARY("Cosh", std::cosh(x));
  NNXR_FLOAT_UNARY("Asinh", std::asinh(x));
  NNXR_FLOAT_UNARY("Acosh", std::acosh(x));
  NNXR_FLOAT_UNARY("Atanh", std::atanh(x));

  auto is_x = [](auto pred) {
    return [pred](const KernelInit& init) {
      const bool neg = init.attrs().get_int("detect_negative", 1) != 0, pos = init.attrs().get_int("detect_positive", 1) != 0;
      return make_kernel([pred, neg, pos](KernelContext& ctx) {
        const Value& a = ctx.in(0);
        Value& out = ctx.out(0);
        dispatch_float(ctx, a.dtype(), [&](auto tag) {
          using T = decltype(tag);
          out.reset(DType::Bool, a.dims());
          auto x = a.as<T>();
          auto y = out.mutable_as<uint8_t>();
          for (size_t i = 0; i < x.size(); ++i) y[i] = pred(static_cast<double>(x[i]), neg, pos);
        });
      });
    };
  };
  r.add("IsNaN", is_x([](double v, bool, bool) { return uint8_t(std::isnan(v)); }));
  r.add("IsInf", is_x([](double v, bool neg, bool pos) { return uint8_t(std::isinf(v) && ((v < 0 && neg) || (v > 0 && pos))); }));
}

}  // namespace nnxr::runtime
