// Indexing: Gather, GatherElements, GatherND, ScatterND, ScatterElements, OneHot, TopK, Trilu,
// NonZero. Every index is range-checked; a bad one fails naming the node and the tensor.
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <numeric>

#include "model/runtime/kernel.h"

namespace nnxr::runtime {
namespace {


// Index tensor as int64 values.
std::vector<int64_t> indices_of(const KernelContext& ctx, size_t i) {
  const Value& v = ctx.in(i);
  std::vector<int64_t> out(static_cast<size_t>(v.elements()));
  if (v.dtype() == DType::Int64) std::copy(v.as<int64_t>().begin(), v.as<int64_t>().end(), out.begin());
  else if (v.dtype() == DType::Int32) std::copy(v.as<int32_t>().begin(), v.as<int32_t>().end(), out.begin());
  else ctx.fail("indices " + ctx.input_name(i) + " must be int64 or int32, are " + std::string(model::dtype_name(v.dtype())));
  return out;
}

// Scatter reductions: none (overwrite), add, mul, max, min.
enum class ScatterReduce { None, Add, Mul, Max, Min };

ScatterReduce scatter_reduction(const KernelInit& init) {
  const std::string r = init.attrs().get_string("reduction", "none");
  if (r == "none") return ScatterReduce::None;
  if (r == "add") return ScatterReduce::Add;
  if (r == "mul") return ScatterReduce::Mul;
  if (r == "max") return ScatterReduce::Max;
  if (r == "min") return ScatterReduce::Min;
  init.fail("reduction " + quoted(r) + " is not one of none, add, mul, max, min");
}

// dst[i] = reduce(dst[i], src[i]) for n elements of `t`.
void scatter_combine(const KernelContext& ctx, ScatterReduce red, DType t, std::byte* dst, const std::byte* src, int64_t n, size_t es) {
  if (red == ScatterReduce::None) {
    std::memcpy(dst, src, static_cast<size_t>(n) * es);
    return;
  }
  dispatch_numeric(ctx, t, [&](auto tag) {
    using T = decltype(tag);
    for (int64_t i = 0; i < n; ++i) {
      T a, b;
      std::memcpy(&a, dst + static_cast<size_t>(i) * es, sizeof(T));
      std::memcpy(&b, src + static_cast<size_t>(i) * es, sizeof(T));
      T r = a;
      if constexpr (std::is_integral_v<T>) {  // wrapping, as the element-wise ops
        using U = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;
        if (red == ScatterReduce::Add) r = static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
        if (red == ScatterReduce::Mul) r = static_cast<T>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
      } else {
        if (red == ScatterReduce::Add) r = a + b;
        if (red == ScatterReduce::Mul) r = a * b;
      }
      if (red == ScatterReduce::Max) r = std::max(a, b);
      if (red == ScatterReduce::Min) r = std::min(a, b);
      std::memcpy(dst + static_cast<size_t>(i) * es, &r, sizeof(T));
    }
  });
}

int64_t fix_index(const KernelContext& ctx, int64_t idx, int64_t dim, size_t input) {
  if (idx < -dim || idx >= dim)
    ctx.fail("index " + std::to_string(idx) + " in " + ctx.input_name(input) + " is out of range for an axis of size " + std::to_string(dim));
  return idx < 0 ? idx + dim : idx;
}

}  // namespace

void register_index(Registry& r) {
  r.add("Gather", [](const KernelInit& init) {
    const int64_t axis_attr = init.attrs().get_int("axis", 0);
    return make_kernel([=](KernelContext& ctx) {
      const Value& x = ctx.in(0);
      const Value& iv = ctx.in(1);
      const int64_t rank = static_cast<int64_t>(x.rank());
      if (rank == 0) ctx.fail("data " + ctx.input_name(0) + " must have rank >= 1");
      const int64_t axis = norm_axis(ctx, axis_attr, rank);
      auto idx = indices_of(ctx, 1);
      const auto d = std::span<const int64_t>(x.dims());
      const int64_t dim = d[static_cast<size_t>(axis)];
      for (auto& i : idx) i = fix_index(ctx, i, dim, 1);
      const int64_t outer = product(d.subspan(0, static_cast<size_t>(axis))), inner = product(d.subspan(static_cast<size_t>(axis) + 1));
      Shape os(d.begin(), d.begin() + axis);
      os.insert(os.end(), iv.dims().begin(), iv.dims().end());
      os.insert(os.end(), d.begin() + axis + 1, d.end());
      Value& y = ctx.out(0);
      y.reset(x.dtype(), os);
      const auto chunk = static_cast<size_t>(inner) * esize(ctx, x);
      const auto n = static_cast<int64_t>(idx.size());
      std::byte* py = y.mutable_data();
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t k = 0; k < n; ++k)
          std::memcpy(py + static_cast<size_t>(o * n + k) * chunk, x.data() + static_cast<size_t>(o * dim + idx[static_cast<size_t>(k)]) * chunk, chunk);
    });
  }, false);

  r.add("GatherElements", [](const KernelInit& init) {
    const int64_t axis_attr = init.attrs().get_int("axis", 0);
    return make_kernel([=](KernelContext& ctx) {
      const Value& x = ctx.in(0);
      const Value& iv = ctx.in(1);
      const int64_t rank = static_cast<int64_t>(x.rank());
      if (iv.rank() != x.rank()) ctx.fail("indices " + ctx.input_name(1) + " must have the rank of data " + ctx.input_name(0));
      const int64_t axis = norm_axis(ctx, axis_attr, rank);
      const auto idx = indices_of(ctx, 1);
      const auto xst = strides_of(x.dims());
      Value& y = ctx.out(0);
      y.reset(x.dtype(), iv.dims());
      const size_t es = esize(ctx, x);
      const auto& os = iv.dims();
      for (size_t o = 0; o < idx.size(); ++o) {
        int64_t rem = static_cast<int64_t>(o), src = 0;
        for (int64_t dd = rank; dd-- > 0;) {
          const auto k = static_cast<size_t>(dd);
          int64_t i = rem % os[k];
          rem /= os[k];
          if (dd == axis) i = fix_index(ctx, idx[o], x.dims()[k], 1);
          else if (i >= x.dims()[k]) ctx.fail("indices " + ctx.input_name(1) + " " + shape_str(iv.shape()) + " exceed data " + shape_str(x.shape()));
          src += i * xst[k];
        }
        copy_elem(y.mutable_data() + o * es, x.data() + static_cast<size_t>(src) * es, es);
      }
    });
  }, false);

  r.add("GatherND", [](const KernelInit& init) {
    const int64_t batch_dims = init.attrs().get_int("batch_dims", 0);
    return make_kernel([=](KernelContext& ctx) {
      const Value& x = ctx.in(0);
      const Value& iv = ctx.in(1);
      const auto idx = indices_of(ctx, 1);
      const auto b = static_cast<size_t>(batch_dims);
      if (iv.rank() < 1 || x.rank() <= b || iv.rank() <= b) ctx.fail("ranks do not fit batch_dims");
      const int64_t k = iv.dims().back();
      if (k < 1 || static_cast<size_t>(k) + b > x.rank()) ctx.fail("last dim of indices " + ctx.input_name(1) + " is out of range");
      for (size_t i = 0; i < b; ++i)
        if (x.dims()[i] != iv.dims()[i]) ctx.fail("batch dims of data and indices differ");
      Shape os(iv.dims().begin(), iv.dims().end() - 1);
      os.insert(os.end(), x.dims().begin() + static_cast<int64_t>(b) + k, x.dims().end());
      Value& y = ctx.out(0);
      y.reset(x.dtype(), os);
      const auto xst = strides_of(x.dims());
      const int64_t slice = product(std::span<const int64_t>(x.dims()).subspan(b + static_cast<size_t>(k)));
      const size_t es = esize(ctx, x);
      const int64_t batches = product(std::span<const int64_t>(x.dims()).subspan(0, b));
      const int64_t per_batch = product(std::span<const int64_t>(iv.dims()).subspan(b, iv.rank() - b - 1));
      for (int64_t bi = 0; bi < batches; ++bi)
        for (int64_t j = 0; j < per_batch; ++j) {
          const int64_t row = bi * per_batch + j;
          int64_t off = bi * (b ? xst[b - 1] : 0);
          for (int64_t t = 0; t < k; ++t) {
            const auto dd = b + static_cast<size_t>(t);
            off += fix_index(ctx, idx[static_cast<size_t>(row * k + t)], x.dims()[dd], 1) * xst[dd];
          }
          std::memcpy(y.mutable_data() + static_cast<size_t>(row * slice) * es, x.data() + static_cast<size_t>(off) * es, static_cast<size_t>(slice) * es);
        }
    });
  }, false);

  r.add("ScatterND", [](const KernelInit& init) {
    const ScatterReduce reduction = scatter_reduction(init);
    return make_kernel([=](KernelContext& ctx) {
      const Value& x = ctx.in(0);
      const Value& iv = ctx.in(1);
      const Value& up = ctx.in(2);
      if (up.dtype() != x.dtype()) ctx.fail("updates must have the element type of data");
      const auto idx = indices_of(ctx, 1);
      if (iv.rank() < 1) ctx.fail("indices must have rank >= 1");
      const int64_t k = iv.dims().back();
      if (k < 1 || static_cast<size_t>(k) > x.rank()) ctx.fail("last dim of indices is out of range");
      Shape ushape(iv.dims().begin(), iv.dims().end() - 1);
      ushape.insert(ushape.end(), x.dims().begin() + k, x.dims().end());
      if (ushape != up.dims()) ctx.fail("updates " + ctx.input_name(2) + " " + shape_str(up.shape()) + " should be " + shape_str(ushape));
      Value& y = ctx.out(0);
      y.assign(x.dtype(), x.dims(), {x.data(), x.byte_size()});
      const auto xst = strides_of(x.dims());
      const int64_t slice = product(std::span<const int64_t>(x.dims()).subspan(static_cast<size_t>(k)));
      const size_t es = esize(ctx, x);
      const int64_t rows = static_cast<int64_t>(idx.size()) / k;
      for (int64_t row = 0; row < rows; ++row) {
        int64_t off = 0;
        for (int64_t t = 0; t < k; ++t)
          off += fix_index(ctx, idx[static_cast<size_t>(row * k + t)], x.dims()[static_cast<size_t>(t)], 1) * xst[static_cast<size_t>(t)];
        scatter_combine(ctx, reduction, x.dtype(), y.mutable_data() + static_cast<size_t>(off) * es, up.data() + static_cast<size_t>(row * slice) * es, slice, es);
      }
    });
  }, false);

  auto scatter_elements = [](const KernelInit& init) {
    const int64_t axis_attr = init.attrs().get_int("axis", 0);
    const ScatterReduce reduction = scatter_reduction(init);
    return make_kernel([=](KernelContext& ctx) {
      const Value& x = ctx.in(0);
      const Value& iv = ctx.in(1);
      const Value& up = ctx.in(2);
      if (up.dtype() != x.dtype() || up.dims() != iv.dims() || iv.rank() != x.rank()) ctx.fail("data, indices and updates do not agree");
      const int64_t rank = static_cast<int64_t>(x.rank());
      const int64_t axis = norm_axis(ctx, axis_attr, rank);
      const auto idx = indices_of(ctx, 1);
      Value& y = ctx.out(0);
      y.assign(x.dtype(), x.dims(), {x.data(), x.byte_size()});
      const auto xst = strides_of(x.dims());
      const size_t es = esize(ctx, x);
      for (size_t o = 0; o < idx.size(); ++o) {
        int64_t rem = static_cast<int64_t>(o), dst = 0;
        for (int64_t dd = rank; dd-- > 0;) {
          const auto kk = static_cast<size_t>(dd);
          int64_t i = rem % iv.dims()[kk];
          rem /= iv.dims()[kk];
          if (dd == axis) i = fix_index(ctx, idx[o], x.dims()[kk], 1);
          else if (i >= x.dims()[kk]) ctx.fail("indices exceed data");
          dst += i * xst[kk];
        }
        if (reduction == ScatterReduce::None) copy_elem(y.mutable_data() + static_cast<size_t>(dst) * es, up.data() + o * es, es);
        else scatter_combine(ctx, reduction, x.dtype(), y.mutable_data() + static_cast<size_t>(dst) * es, up.data() + o * es, 1, es);
      }
    });
  };
  r.add("ScatterElements", scatter_elements, false);
  r.add("Scatter", scatter_elements, false);

  r.add("OneHot", [](const KernelInit& init) {
    const int64_t axis_attr = init.attrs().get_int("axis", -1);
    return make_kernel([=](KernelContext& ctx) {
      const Value& iv = ctx.in(0);
      // Indices of any numeric type; fractional values are truncated, non-finite ones select nothing.
      std::vector<int64_t> idx;
      if (iv.dtype() == DType::Float || iv.dtype() == DType::Double) {
        for (int64_t i = 0; i < iv.elements(); ++i) {
          const double v = iv.dtype() == DType::Float ? iv.as<float>()[static_cast<size_t>(i)] : iv.as<double>()[static_cast<size_t>(i)];
          idx.push_back(std::fabs(v) < 9e18 ? static_cast<int64_t>(v) : std::numeric_limits<int64_t>::max());
        }
      } else {
        idx = indices_of(ctx, 0);
      }
      const int64_t depth = static_cast<int64_t>(read_scalar(ctx, 1));
      const Value& vals = ctx.in(2);
      if (vals.elements() != 2) ctx.fail("values must hold [off, on]");
      if (depth < 1) ctx.fail("depth must be >= 1");
      const int64_t out_rank = static_cast<int64_t>(iv.rank()) + 1;
      const int64_t axis = norm_axis(ctx, axis_attr, out_rank);
      Shape os = iv.dims();
      os.insert(os.begin() + axis, depth);
      Value& y = ctx.out(0);
      y.reset(vals.dtype(), os);
      const size_t es = esize(ctx, vals);
      const auto d = std::span<const int64_t>(iv.dims());
      const int64_t outer = product(d.subspan(0, static_cast<size_t>(axis))), inner = product(d.subspan(static_cast<size_t>(axis)));
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t k = 0; k < depth; ++k)
          for (int64_t i = 0; i < inner; ++i) {
            int64_t v = idx[static_cast<size_t>(o * inner + i)];
            if (v < 0) v += depth;
            copy_elem(y.mutable_data() + static_cast<size_t>((o * depth + k) * inner + i) * es, vals.data() + (v == k ? es : 0), es);
          }
    });
  }, false);

  r.add("TopK", [](const KernelInit& init) {
    const int64_t axis_attr = init.attrs().get_int("axis", -1);
    const bool largest = init.attrs().get_int("largest", 1) != 0, sorted = init.attrs().get_int("sorted", 1) != 0;
    const int64_t k_attr = init.attrs().get_int("k", -1);
    const bool k_input = init.opset >= 10;
    (void)sorted;
    return make_kernel([=](KernelContext& ctx) {
      const Value& x = ctx.in(0);
      const int64_t rank = static_cast<int64_t>(x.rank());
      const int64_t axis = norm_axis(ctx, axis_attr, rank);
      int64_t k = k_attr;
      if (k_input) {
        const auto kv = read_ints(ctx, 1);
        if (kv.size() != 1) ctx.fail("K must hold one value");
        k = kv[0];
      }
      const auto d = std::span<const int64_t>(x.dims());
      const int64_t n = d[static_cast<size_t>(axis)];
      if (k < 0 || k > n) ctx.fail("K " + std::to_string(k) + " is out of range for an axis of size " + std::to_string(n));
      const int64_t outer = product(d.subspan(0, static_cast<size_t>(axis))), inner = product(d.subspan(static_cast<size_t>(axis) + 1));
      Shape os(d.begin(), d.end());
      os[static_cast<size_t>(axis)] = k;
      Value& vals = ctx.out(0);
      vals.reset(x.dtype(), os);
      Value& inds = ctx.out(1);
      inds.reset(DType::Int64, os);
      dispatch_numeric(ctx, x.dtype(), [&](auto tag) {
        using T = decltype(tag);
        const T* px = x.as<T>().data();
        T* pv = vals.mutable_as<T>().data();
        int64_t* pi = inds.mutable_as<int64_t>().data();
        std::vector<int64_t> order(static_cast<size_t>(n));
        for (int64_t o = 0; o < outer; ++o)
          for (int64_t i = 0; i < inner; ++i) {
            std::iota(order.begin(), order.end(), 0);
            auto at = [&](int64_t j) { return px[(o * n + j) * inner + i]; };
            std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return largest ? at(a) > at(b) : at(a) < at(b); });
            for (int64_t j = 0; j < k; ++j) {
              pv[(o * k + j) * inner + i] = at(order[static_cast<size_t>(j)]);
              pi[(o * k + j) * inner + i] = order[static_cast<size_t>(j)];
            }
          }
      });
    });
  });

  r.add("Trilu", [](const KernelInit& init) {
    const bool upper = init.attrs().get_int("upper", 1) != 0;
    return make_kernel([=](KernelContext& ctx) {
      const Value& x = ctx.in(0);
      ctx.expect_min_rank(0, 2);
      int64_t k = 0;
      if (ctx.has_input(1)) k = static_cast<int64_t>(read_scalar(ctx, 1));
      Value& y = ctx.out(0);
      y.assign(x.dtype(), x.dims(), {x.data(), x.byte_size()});
      const int64_t R = x.dims()[x.rank() - 2], C = x.dims()[x.rank() - 1];
      const int64_t batches = (R * C != 0) ? x.elements() / (R * C) : 0;
      const size_t es = esize(ctx, x);
      std::byte* py = y.mutable_data();
      for (int64_t b = 0; b < batches; ++b)
        for (int64_t i = 0; i < R; ++i)
          for (int64_t j = 0; j < C; ++j) {
            const bool keep = upper ? (j - i >= k) : (j - i <= k);
            if (!keep) std::memset(py + static_cast<size_t>((b * R + i) * C + j) * es, 0, es);
          }
    });
  }, false);

  r.add("NonZero", [](const KernelInit&) {
    return make_kernel([](KernelContext& ctx) {
      const Value& x = ctx.in(0);
      const size_t es = esize(ctx, x);
      std::vector<int64_t> hits;
      const std::byte zero[16] = {};
      for (int64_t i = 0; i < x.elements(); ++i)
        if (std::memcmp(x.data() + static_cast<size_t>(i) * es, zero, es) != 0) hits.push_back(i);
      // -0.0 counts as zero for floats.
      if (x.dtype() == DType::Float)
        hits.erase(std::remove_if(hits.begin(), hits.end(), [&](int64_t i) { return x.as<float>()[static_cast<size_t>(i)] == 0.f; }), hits.end());
      const auto rank = static_cast<int64_t>(x.rank());
      const auto n = static_cast<int64_t>(hits.size());
      Value& y = ctx.out(0);
      y.reset(DType::Int64, {rank, n});
      int64_t* py = y.mutable_as<int64_t>().data();
      for (int64_t j = 0; j < n; ++j) {
        int64_t rem = hits[static_cast<size_t>(j)];
        for (int64_t d = rank; d-- > 0;) {
          py[d * n + j] = rem % x.dims()[static_cast<size_t>(d)];
          rem /= x.dims()[static_cast<size_t>(d)];
        }
      }
    });
  }, false);
}

}  // namespace nnxr::runtime
