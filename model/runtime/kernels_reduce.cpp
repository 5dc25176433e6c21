// Reduce* (axes as attribute or, from opset 13/18, as input), ArgMax/ArgMin, CumSum.
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "model/runtime/kernel.h"

namespace nnxr::runtime {
namespace {

enum class Red { Sum, Mean, Max, Min, Prod, L1, L2, LogSum, LogSumExp, SumSquare };

// Offsets of the reduced positions and the output layout.
struct ReducePlan {
  Shape out_shape;           // with keepdims applied
  std::vector<int64_t> kept_dims, kept_strides;  // input strides of kept dims
  std::vector<int64_t> red_offsets;              // input offsets of one reduction window
  bool contiguous = false;                       // the window is red_offsets[i] = i (innermost dims)
};

ReducePlan plan_reduce(const Shape& in, const std::vector<bool>& reduce, bool keepdims) {
  ReducePlan p;
  const auto st = strides_of(in);
  std::vector<int64_t> rdims, rstr;
  for (size_t d = 0; d < in.size(); ++d) {
    if (reduce[d]) {
      rdims.push_back(in[d]);
      rstr.push_back(st[d]);
      if (keepdims) p.out_shape.push_back(1);
    } else {
      p.kept_dims.push_back(in[d]);
      p.kept_strides.push_back(st[d]);
      p.out_shape.push_back(in[d]);
    }
  }
  const int64_t R = product(rdims);
  p.red_offsets.resize(static_cast<size_t>(R));
  for (int64_t i = 0; i < R; ++i) {
    int64_t rem = i, off = 0;
    for (size_t k = rdims.size(); k-- > 0;) {
      off += (rem % rdims[k]) * rstr[k];
      rem /= rdims[k];
    }
    p.red_offsets[static_cast<size_t>(i)] = off;
  }
  p.contiguous = R > 0;
  for (int64_t i = 0; i < R && p.contiguous; ++i) p.contiguous = p.red_offsets[static_cast<size_t>(i)] == i;
  return p;
}

template <class T>
void reduce_typed(KernelContext& ctx, Red op, const Value& x, const ReducePlan& p, Value& y) {
  y.reset(x.dtype(), p.out_shape);
  const T* px = x.as<T>().data();
  T* py = y.mutable_as<T>().data();
  const int64_t O = y.elements();
  const auto& ro = p.red_offsets;
  const bool empty = ro.empty();
  // (Outputs a task: 4096 elements' worth of the scalar loop; 16 times as many in vector lanes.)
  const int64_t work = std::is_same_v<T, float> && p.contiguous ? int64_t{1} << 16 : 4096;
  ctx.pool().parallel_for(O, std::max<int64_t>(1, work / std::max<int64_t>(1, static_cast<int64_t>(ro.size()))), [&](int64_t b, int64_t e) {
    for (int64_t o = b; o < e; ++o) {
      int64_t rem = o, base = 0;
      for (size_t k = p.kept_dims.size(); k-- > 0;) {
        base += (rem % p.kept_dims[k]) * p.kept_strides[k];
        rem /= p.kept_dims[k];
      }
      const T* xs = px + base;
      if constexpr (std::is_same_v<T, float>) {
        // A window of contiguous floats (a LayerNorm's mean over its last axis) in vector lanes.
        if (p.contiguous && (op == Red::Sum || op == Red::Mean || op == Red::Max)) {
          const int64_t n = static_cast<int64_t>(ro.size());
          py[o] = static_cast<float>(op == Red::Max ? plane_max(xs, n) : op == Red::Mean ? plane_sum(xs, n) / static_cast<double>(n) : plane_sum(xs, n));
          continue;
        }
      }
      if constexpr (std::is_floating_point_v<T>) {
        double acc = 0;
        switch (op) {
          case Red::Sum:
          case Red::Mean:
            for (int64_t off : ro) acc += xs[off];
            if (op == Red::Mean) acc = empty ? std::numeric_limits<double>::quiet_NaN() : acc / static_cast<double>(ro.size());
            break;
          case Red::Max:
            acc = -std::numeric_limits<double>::infinity();
            for (int64_t off : ro) acc = (xs[off] > acc || std::isnan(xs[off])) ? xs[off] : acc;
            break;
          case Red::Min:
            acc = std::numeric_limits<double>::infinity();
            for (int64_t off : ro) acc = (xs[off] < acc || std::isnan(xs[off])) ? xs[off] : acc;
            break;
          case Red::Prod:
            acc = 1;
            for (int64_t off : ro) acc *= xs[off];
            break;
          case Red::L1:
            for (int64_t off : ro) acc += std::fabs(static_cast<double>(xs[off]));
            break;
          case Red::L2:
          case Red::SumSquare:
            for (int64_t off : ro) acc += static_cast<double>(xs[off]) * xs[off];
            if (op == Red::L2) acc = std::sqrt(acc);
            break;
          case Red::LogSum:
            for (int64_t off : ro) acc += xs[off];
            acc = std::log(acc);
            break;
          case Red::LogSumExp: {
            double m = -std::numeric_limits<double>::infinity();
            for (int64_t off : ro) m = std::max<double>(m, xs[off]);
            if (std::isinf(m)) {
              acc = m;
              break;
            }
            for (int64_t off : ro) acc += std::exp(xs[off] - m);
            acc = m + std::log(acc);
            break;
          }
        }
        py[o] = static_cast<T>(acc);
      } else {
        using U = std::make_unsigned_t<T>;
        U acc = 0;
        switch (op) {
          case Red::Sum:
          case Red::Mean:
            for (int64_t off : ro) acc = static_cast<U>(acc + static_cast<U>(xs[off]));
            if (op == Red::Mean) {
              py[o] = empty ? T{0} : static_cast<T>(static_cast<T>(acc) / static_cast<T>(ro.size()));
              continue;
            }
            break;
          case Red::Max: {
            T m = std::numeric_limits<T>::lowest();
            for (int64_t off : ro) m = std::max(m, xs[off]);
            py[o] = m;
            continue;
          }
          case Red::Min: {
            T m = std::numeric_limits<T>::max();
            for (int64_t off : ro) m = std::min(m, xs[off]);
            py[o] = m;
            continue;
          }
          case Red::Prod:
            acc = 1;
            for (int64_t off : ro) acc = static_cast<U>(acc * static_cast<U>(xs[off]));
            break;
          case Red::L1:
            for (int64_t off : ro) acc = static_cast<U>(acc + static_cast<U>(xs[off] < 0 ? U(0) - static_cast<U>(xs[off]) : static_cast<U>(xs[off])));
            break;
          case Red::SumSquare:
            for (int64_t off : ro) acc = static_cast<U>(acc + static_cast<U>(static_cast<U>(xs[off]) * static_cast<U>(xs[off])));
            break;
          default: ctx.fail("this reduction needs a float input");
        }
        py[o] = static_cast<T>(acc);
      }
    }
  });
}

std::unique_ptr<Kernel> reduce_factory(const KernelInit& init, Red op) {
  const bool keepdims = init.attrs().get_int("keepdims", 1) != 0;
  const bool noop_empty = init.attrs().get_int("noop_with_empty_axes", 0) != 0;
  const auto axes_attr = init.attrs().get_ints("axes");
  return make_kernel([=](KernelContext& ctx) {
    const Value& x = ctx.in(0);
    const int64_t rank = static_cast<int64_t>(x.rank());
    std::vector<int64_t> axes = ctx.has_input(1) ? read_ints(ctx, 1) : axes_attr;
    std::vector<bool> reduce(static_cast<size_t>(rank), axes.empty() && !noop_empty);
    for (int64_t a : axes) {
      const auto k = static_cast<size_t>(norm_axis(ctx, a, rank));
      if (reduce[k]) ctx.fail("axis " + std::to_string(a) + " is listed twice");
      reduce[k] = true;
    }
    const ReducePlan p = plan_reduce(x.dims(), reduce, keepdims);
    dispatch_numeric(ctx, x.dtype(), [&](auto tag) { reduce_typed<decltype(tag)>(ctx, op, x, p, ctx.out(0)); });
  });
}

std::unique_ptr<Kernel> arg_factory(const KernelInit& init, bool is_max) {
  const int64_t axis_attr = init.attrs().get_int("axis", 0);
  const bool keepdims = init.attrs().get_int("keepdims", 1) != 0;
  const bool last = init.attrs().get_int("select_last_index", 0) != 0;
  return make_kernel([=](KernelContext& ctx) {
    const Value& x = ctx.in(0);
    const int64_t rank = static_cast<int64_t>(x.rank());
    const int64_t axis = norm_axis(ctx, axis_attr, std::max<int64_t>(rank, 1));
    const auto d = std::span<const int64_t>(x.dims());
    const int64_t outer = rank ? product(d.subspan(0, static_cast<size_t>(axis))) : 1, n = rank ? d[static_cast<size_t>(axis)] : 1,
                  inner = rank ? product(d.subspan(static_cast<size_t>(axis) + 1)) : 1;
    if (n == 0) ctx.fail("cannot take the arg of an empty axis");
    Shape os(d.begin(), d.end());
    if (rank) {
      if (keepdims) os[static_cast<size_t>(axis)] = 1;
      else os.erase(os.begin() + axis);
    }
    Value& y = ctx.out(0);
    y.reset(DType::Int64, os);
    int64_t* py = y.mutable_as<int64_t>().data();
    dispatch_numeric(ctx, x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      const T* px = x.as<T>().data();
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t i = 0; i < inner; ++i) {
          int64_t best = 0;
          T bv = px[o * n * inner + i];
          for (int64_t k = 1; k < n; ++k) {
            const T v = px[(o * n + k) * inner + i];
            const bool better = is_max ? (last ? v >= bv : v > bv) : (last ? v <= bv : v < bv);
            if (better) {
              bv = v;
              best = k;
            }
          }
          py[o * inner + i] = best;
        }
    });
  });
}

}  // namespace

void register_reduce(Registry& r) {
  const std::pair<const char*, Red> ops[] = {{"ReduceSum", Red::Sum},       {"ReduceMean", Red::Mean},     {"ReduceMax", Red::Max},
                                             {"ReduceMin", Red::Min},       {"ReduceProd", Red::Prod},     {"ReduceL1", Red::L1},
                                             {"ReduceL2", Red::L2},         {"ReduceLogSum", Red::LogSum}, {"ReduceLogSumExp", Red::LogSumExp},
                                             {"ReduceSumSquare", Red::SumSquare}};
  for (const auto& [name, op] : ops) r.add(name, [op = op](const KernelInit& i) { return reduce_factory(i, op); });
  r.add("ArgMax", [](const KernelInit& i) { return arg_factory(i, true); });
  r.add("ArgMin", [](const KernelInit& i) { return arg_factory(i, false); });

  r.add("CumSum", [](const KernelInit& init) {
    const bool exclusive = init.attrs().get_int("exclusive", 0) != 0, reverse = init.attrs().get_int("reverse", 0) != 0;
    return make_kernel([=](KernelContext& ctx) {
      const Value& x = ctx.in(0);
      const auto ax = read_ints(ctx, 1);
      if (ax.size() != 1) ctx.fail("axis input must hold one value");
      const int64_t rank = static_cast<int64_t>(x.rank());
      const int64_t axis = norm_axis(ctx, ax[0], rank);
      const auto d = std::span<const int64_t>(x.dims());
      const int64_t outer = product(d.subspan(0, static_cast<size_t>(axis))), n = d[static_cast<size_t>(axis)],
                    inner = product(d.subspan(static_cast<size_t>(axis) + 1));
      Value& y = ctx.out(0);
      y.reset(x.dtype(), x.dims());
      dispatch_numeric(ctx, x.dtype(), [&](auto tag) {
        using T = decltype(tag);
        const T* px = x.as<T>().data();
        T* py = y.mutable_as<T>().data();
        for (int64_t o = 0; o < outer; ++o)
          for (int64_t i = 0; i < inner; ++i) {
            T acc{};
            for (int64_t s = 0; s < n; ++s) {
              const int64_t k = reverse ? n - 1 - s : s;
              const int64_t idx = (o * n + k) * inner + i;
              if (exclusive) {
                py[idx] = acc;
                acc = static_cast<T>(acc + px[idx]);
              } else {
                acc = static_cast<T>(acc + px[idx]);
                py[idx] = acc;
              }
            }
          }
      });
    });
  });
}

}  // namespace nnxr::runtime
