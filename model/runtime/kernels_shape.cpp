// Data movement of any fixed-size element type: Reshape, Flatten, Squeeze, Unsqueeze, Transpose,
// Concat, Split, Slice, Expand, Tile, Pad, Shape, Size, Identity, Dropout, DepthToSpace,
// SpaceToDepth and the legacy Crop.
#include <algorithm>
#include <limits>

#include "model/runtime/avx2.h"
#include "model/runtime/broadcast.h"
#include "model/runtime/compute.h"
#include "model/runtime/kernel.h"

namespace nnxr::runtime {
namespace {



// `rows` rows of B bytes from s (rows ss bytes apart) to d (ds apart): fixed-size copies the
// compiler turns into a load and a store.
template <size_t B>
void copy_rows_of(std::byte* d, int64_t ds, const std::byte* s, int64_t ss, int64_t rows) {
  for (int64_t r = 0; r < rows; ++r) std::memcpy(d + r * ds, s + r * ss, B);
}

// The same for rows of any size: rows of up to 32 bytes (a detector's boxes, [N, 4] sliced into
// [N, 2] or concatenated back) without a call to memcpy per row.
void copy_rows(std::byte* d, int64_t ds, const std::byte* s, int64_t ss, int64_t rows, int64_t bytes) {
  switch (bytes) {
    case 4: return copy_rows_of<4>(d, ds, s, ss, rows);
    case 8: return copy_rows_of<8>(d, ds, s, ss, rows);
    case 12: return copy_rows_of<12>(d, ds, s, ss, rows);
    case 16: return copy_rows_of<16>(d, ds, s, ss, rows);
    case 24: return copy_rows_of<24>(d, ds, s, ss, rows);
    case 32: return copy_rows_of<32>(d, ds, s, ss, rows);
    default:
      for (int64_t r = 0; r < rows; ++r) std::memcpy(d + r * ds, s + r * ss, static_cast<size_t>(bytes));
  }
}

// copy_rows split over the pool from 1 MB (a Concat or Split of large planes); rows of one
// block each (outer == 1) are cut into pieces of 64 KB.
void copy_rows_pooled(ThreadPool* pool, std::byte* d, int64_t ds, const std::byte* s, int64_t ss, int64_t rows, int64_t bytes) {
  constexpr int64_t kPiece = int64_t{1} << 16;
  if (!pool || pool->threads() < 2 || rows * bytes < (int64_t{1} << 20)) return copy_rows(d, ds, s, ss, rows, bytes);
  if (rows == 1) {
    pool->parallel_for((bytes + kPiece - 1) / kPiece, 1, [&](int64_t b, int64_t e) {
      const int64_t lo = b * kPiece, hi = std::min(bytes, e * kPiece);
      std::memcpy(d + lo, s + lo, static_cast<size_t>(hi - lo));
    });
    return;
  }
  pool->parallel_for(rows, std::max<int64_t>(1, kPiece / std::max<int64_t>(1, bytes)),
                     [&](int64_t r0, int64_t r1) { copy_rows(d + r0 * ds, ds, s + r0 * ss, ss, r1 - r0, bytes); });
}

// dst = a copy of src (Identity, Dropout in inference), split over the pool when large.
void copy_value(ThreadPool* pool, const Value& src, Value& dst) {
  dst.reset(src.dtype(), src.dims());
  if (src.byte_size() > 0 && dst.data() != src.data())  // (dst a view of src's bytes: nothing to copy)
    copy_rows_pooled(pool, dst.mutable_data(), 0, src.data(), 0, 1, static_cast<int64_t>(src.byte_size()));
}

// A gather's output axes (out_shape, each with its input stride) with the axes of size 1 dropped
// and the axes that stay together merged (an axis whose stride is the next one's times its size).
struct Axes {
  Shape dims;
  std::vector<int64_t> strides;
};
Axes merged_axes(std::span<const int64_t> out_shape, const std::vector<int64_t>& strides) {
  Axes a;
  for (size_t d = 0; d < out_shape.size(); ++d) {
    if (out_shape[d] == 1) continue;
    if (!a.dims.empty() && a.strides.back() == strides[d] * out_shape[d]) {
      a.dims.back() *= out_shape[d];
      a.strides.back() = strides[d];
      continue;
    }
    a.dims.push_back(out_shape[d]);
    a.strides.push_back(strides[d]);
  }
  return a;
}

#if defined(__x86_64__) || defined(__i386__)
// Rows [c0, c1) of dst = the columns [c0, c1) of the R x C matrix src, of 4-byte elements (moved
// as floats: their bits are not touched): 8 x 8 blocks through avx2::transpose8, each block's 8
// output rows written along their length; the last rows and columns one element at a time.
__attribute__((target("avx2,fma"))) void transpose_columns(const float* src, float* dst, int64_t R, int64_t C, int64_t c0, int64_t c1) {
  const int64_t r8 = R / 8 * 8;
  int64_t c = c0;
  for (; c + 8 <= c1; c += 8) {
    for (int64_t r = 0; r < r8; r += 8) {
      __m256 in[8], out[8];
      for (int i = 0; i < 8; ++i) in[i] = _mm256_loadu_ps(src + (r + i) * C + c);
      avx2::transpose8(in, out);
      for (int i = 0; i < 8; ++i) _mm256_storeu_ps(dst + (c + i) * R + r, out[i]);
    }
    for (int64_t i = c; i < c + 8; ++i)
      for (int64_t r = r8; r < R; ++r) dst[i * R + r] = src[r * C + i];
  }
  for (; c < c1; ++c)
    for (int64_t r = 0; r < R; ++r) dst[c * R + r] = src[r * C + c];
}
#endif

// A gather that is a batch of matrix transposes of 4-byte elements ([B, R, C] to [B, C, R] once
// its axes are merged by merged_axes: a Transpose of the last two axes, yolox_nano's [1, 85, 3549]
// output, a transformer's keys), done in 8 x 8 blocks with AVX2; false (nothing done) for any
// other gather. Element by element, a column of R elements a whole row apart, yolox_nano's took
// 2.3x onnxruntime's time (AMD EPYC Zen 3).
bool transpose_matrices(ThreadPool* pool, std::span<const int64_t> out_shape, const std::vector<int64_t>& strides, size_t elem, std::byte* dst,
                        const std::byte* src) {
#if defined(__x86_64__) || defined(__i386__)
  if (elem != 4 || !cpu_has_avx2_fma()) return false;
  auto [dims, st] = merged_axes(out_shape, strides);
  if (dims.size() == 2) {
    dims.insert(dims.begin(), 1);
    st.insert(st.begin(), 0);
  }
  if (dims.size() != 3) return false;
  const int64_t B = dims[0], C = dims[1], R = dims[2];
  if (st[1] != 1 || st[2] != C || (B > 1 && st[0] != R * C) || R < 8 || C < 8) return false;
  const int64_t blocks = (C + 7) / 8;  // of 8 columns (output rows) each
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 14) / (8 * R));
  auto run = [&](int64_t b0, int64_t b1) {
    for (int64_t i = b0; i < b1; ++i) {
      const int64_t b = i / blocks, c0 = i % blocks * 8;
      transpose_columns(reinterpret_cast<const float*>(src) + b * R * C, reinterpret_cast<float*>(dst) + b * R * C, R, C, c0, std::min(C, c0 + 8));
    }
  };
  if (pool) pool->parallel_for(B * blocks, grain, run);
  else run(0, B * blocks);
  return true;
#else
  (void)pool, (void)out_shape, (void)strides, (void)elem, (void)dst, (void)src;
  return false;
#endif
}

// dst (contiguous, out_shape) [i] = src[base + sum(idx_d * strides_d)]
void gather_strided(ThreadPool* pool, std::span<const int64_t> out_shape, const std::vector<int64_t>& strides, int64_t base, size_t elem,
                    std::byte* dst, const std::byte* src) {
  const auto es = static_cast<int64_t>(elem);
  // Contiguous rows of the input taken at a fixed step ([rows, n] from [rows, m]: a Slice of the
  // last axis, a Crop): one copy_rows.
  if (const auto [dims, st] = merged_axes(out_shape, strides); dims.size() == 2 && st[1] == 1 && dims[1] * es <= 64) {
    copy_rows(dst, dims[1] * es, src + base * es, st[0] * es, dims[0], dims[1] * es);
    return;
  }
  std::array<std::vector<int64_t>, 1> st{strides};
  for_each_broadcast<1>(out_shape, st, pool, [&](const std::array<int64_t, 1>& off, const std::array<int64_t, 1>& is, int64_t o, int64_t len) {
    const std::byte* s = src + (base + off[0]) * es;
    std::byte* d = dst + o * es;
    if (is[0] == 1) {
      copy_rows(d, 0, s, 0, 1, len * es);
      return;
    }
    const int64_t step = is[0] * es;
    switch (elem) {
      case 4:
        if (is[0] == 2) {  // every other element (a Focus layer's or space-to-depth's slices): a step the compiler knows
          for (int64_t i = 0; i < len; ++i) std::memcpy(d + i * 4, s + i * 8, 4);
          break;
        }
        for (int64_t i = 0; i < len; ++i) std::memcpy(d + i * 4, s + i * step, 4);
        break;
      case 8:
        for (int64_t i = 0; i < len; ++i) std::memcpy(d + i * 8, s + i * step, 8);
        break;
      default:
        for (int64_t i = 0; i < len; ++i) std::memcpy(d + i * es, s + i * step, elem);
    }
  });
}

Shape reshape_target(const KernelContext& ctx, const Shape& in, const std::vector<int64_t>& spec, bool allowzero) {
  Shape out(spec.size());
  int64_t infer = -1, known = 1;
  for (size_t i = 0; i < spec.size(); ++i) {
    int64_t d = spec[i];
    if (d == 0 && !allowzero) {
      if (i >= in.size()) ctx.fail("shape " + shape_str(spec) + " copies dim " + std::to_string(i) + " (0) but the input " + shape_str(in) + " has no such dim");
      d = in[i];
    }
    if (d == -1) {
      if (infer >= 0) ctx.fail("shape " + shape_str(spec) + " has more than one -1");
      infer = static_cast<int64_t>(i);
      out[i] = 1;
      continue;
    }
    if (d < -1) ctx.fail("shape " + shape_str(spec) + " has a negative dim");
    out[i] = d;
    if (__builtin_mul_overflow(known, d, &known)) ctx.fail("shape " + shape_str(spec) + " has more elements than a tensor can hold");
  }
  const int64_t total = product(in);
  if (infer >= 0) {
    if (known == 0 || total % known != 0)
      ctx.fail("cannot reshape input " + ctx.input_name(0) + " " + shape_str(in) + " (" + std::to_string(total) + " elements) to " + shape_str(spec));
    out[static_cast<size_t>(infer)] = total / known;
  } else if (known != total) {
    ctx.fail("cannot reshape input " + ctx.input_name(0) + " " + shape_str(in) + " (" + std::to_string(total) + " elements) to " + shape_str(spec) +
             " (" + std::to_string(known) + " elements)");
  }
  return out;
}

void set_reshaped(const Value& in, Value& out, Shape s) {
  out.assign(in.dtype(), std::move(s), {in.data(), in.byte_size()});
}

// Slice parameters for one axis (ONNX clamping rules).
struct SliceDim {
  int64_t start, step, count;
};
SliceDim slice_dim(int64_t dim, int64_t start, int64_t end, int64_t step) {
  if (start < 0) start += dim;
  if (end < 0) end += dim;
  if (step > 0) {
    start = std::clamp<int64_t>(start, 0, dim);
    end = std::clamp<int64_t>(end, 0, dim);
    return {start, step, end > start ? 1 + (end - start - 1) / step : 0};
  }
  start = std::clamp<int64_t>(start, 0, dim - 1);
  end = std::clamp<int64_t>(end, -1, dim - 1);
  // -step overflows for INT64_MIN: count in unsigned.
  const uint64_t down = step == std::numeric_limits<int64_t>::min() ? uint64_t{1} << 63 : static_cast<uint64_t>(-step);
  return {start, step, start > end ? static_cast<int64_t>(1 + static_cast<uint64_t>(start - end - 1) / down) : 0};
}

std::vector<int64_t> axes_arg(const KernelContext& ctx, const KernelInit* init_dummy, size_t input, const std::vector<int64_t>& attr, bool from_input) {
  (void)init_dummy;
  if (from_input) return ctx.has_input(input) ? read_ints(ctx, input) : std::vector<int64_t>{};
  return attr;
}

}  // namespace

void register_shape(Registry& r) {
  r.add("Identity", [](const KernelInit&) { return make_kernel([](KernelContext& ctx) { copy_value(&ctx.pool(), ctx.in(0), ctx.out(0)); }); }, false);

  r.add("Dropout", [](const KernelInit& init) {
    const bool bool_mask = init.opset >= 10;  // before 10 the mask has the input's type
    return make_kernel([bool_mask](KernelContext& ctx) {
      const Value& x = ctx.in(0);
      copy_value(&ctx.pool(), x, ctx.out(0));
      if (!ctx.has_output(1)) return;
      Value& mask = ctx.out(1);
      if (bool_mask) {
        mask.reset(DType::Bool, x.dims());
        for (auto& b : mask.mutable_as<uint8_t>()) b = 1;
        return;
      }
      if (x.dtype() == DType::Float16) {
        mask.reset(x.dtype(), x.dims());
        for (auto& b : mask.mutable_as<uint16_t>()) b = 0x3c00;  // 1.0
        return;
      }
      dispatch_numeric(ctx, x.dtype(), [&](auto tag) {
        using T = decltype(tag);
        mask.reset(x.dtype(), x.dims());
        for (auto& b : mask.mutable_as<T>()) b = T(1);
      });
    });
  }, false);

  r.add("Reshape", [](const KernelInit& init) {
    const bool attr_form = init.opset < 5;
    const auto shape_attr = init.attrs().get_ints("shape");
    const bool allowzero = init.attrs().get_int("allowzero", 0) != 0;
    return make_kernel([=](KernelContext& ctx) {
      const Value& x = ctx.in(0);
      const auto spec = attr_form ? shape_attr : read_ints(ctx, 1);
      set_reshaped(x, ctx.out(0), reshape_target(ctx, x.dims(), spec, allowzero));
    });
  }, false);

  r.add("Flatten", [](const KernelInit& init) {
    const int64_t axis_attr = init.attrs().get_int("axis", 1);
    return make_kernel([=](KernelContext& ctx) {
      const Value& x = ctx.in(0);
      const int64_t rank = static_cast<int64_t>(x.rank());
      const int64_t axis = axis_attr < 0 ? axis_attr + rank : axis_attr;
      if (axis < 0 || axis > rank) ctx.fail("axis " + std::to_string(axis_attr) + " is out of range for rank " + std::to_string(rank));
      const auto d = std::span<const int64_t>(x.dims());
      set_reshaped(x, ctx.out(0), {product(d.subspan(0, static_cast<size_t>(axis))), product(d.subspan(static_cast<size_t>(axis)))});
    });
  }, false);

  r.add("Squeeze", [](const KernelInit& init) {
    const bool from_input = init.opset >= 13;
    const auto attr = init.attrs().get_ints("axes");
    return make_kernel([=](KernelContext& ctx) {
      const Value& x = ctx.in(0);
      const int64_t rank = static_cast<int64_t>(x.rank());
      const auto axes = axes_arg(ctx, nullptr, 1, attr, from_input);
      std::vector<bool> drop(static_cast<size_t>(rank), false);
      if (axes.empty())
        for (int64_t i = 0; i < rank; ++i) drop[static_cast<size_t>(i)] = x.dims()[static_cast<size_t>(i)] == 1;
      for (int64_t a : axes) {
        const auto k = static_cast<size_t>(norm_axis(ctx, a, rank));
        if (x.dims()[k] != 1) ctx.fail("cannot squeeze axis " + std::to_string(a) + " of input " + ctx.input_name(0) + " " + shape_str(x.shape()) + ": its size is not 1");
        drop[k] = true;
      }
      Shape s;
      for (int64_t i = 0; i < rank; ++i)
        if (!drop[static_cast<size_t>(i)]) s.push_back(x.dims()[static_cast<size_t>(i)]);
      set_reshaped(x, ctx.out(0), std::move(s));
    });
  }, false);

  r.add("Unsqueeze", [](const KernelInit& init) {
    const bool from_input = init.opset >= 13;
    const auto attr = init.attrs().get_ints("axes");
    return make_kernel([=](KernelContext& ctx) {
      const Value& x = ctx.in(0);
      const auto axes = axes_arg(ctx, nullptr, 1, attr, from_input);
      const int64_t out_rank = static_cast<int64_t>(x.rank() + axes.size());
      std::vector<bool> add(static_cast<size_t>(out_rank), false);
      for (int64_t a : axes) {
        const auto k = static_cast<size_t>(norm_axis(ctx, a, out_rank));
        if (add[k]) ctx.fail("axis " + std::to_string(a) + " is listed twice");
        add[k] = true;
      }
      Shape s;
      size_t j = 0;
      for (int64_t i = 0; i < out_rank; ++i) s.push_back(add[static_cast<size_t>(i)] ? 1 : x.dims()[j++]);
      set_reshaped(x, ctx.out(0), std::move(s));
    });
  }, false);

  r.add("Transpose", [](const KernelInit& init) {
    const auto perm_attr = init.attrs().get_ints("perm");
    return make_kernel([=](KernelContext& ctx) {
      const Value& x = ctx.in(0);
      const size_t rank = x.rank();
      std::vector<int64_t> perm = perm_attr;
      if (perm.empty())
        for (size_t i = 0; i < rank; ++i) perm.push_back(static_cast<int64_t>(rank - 1 - i));
      if (perm.size() != rank) ctx.fail("perm " + shape_str(perm) + " does not match input " + ctx.input_name(0) + " " + shape_str(x.shape()));
      std::vector<bool> seen(rank, false);
      const auto ist = strides_of(x.dims());
      Shape os(rank);
      std::vector<int64_t> st(rank);
      for (size_t i = 0; i < rank; ++i) {
        const int64_t p = perm[i];
        if (p < 0 || p >= static_cast<int64_t>(rank) || seen[static_cast<size_t>(p)]) ctx.fail("perm " + shape_str(perm) + " is not a permutation");
        seen[static_cast<size_t>(p)] = true;
        os[i] = x.dims()[static_cast<size_t>(p)];
        st[i] = ist[static_cast<size_t>(p)];
      }
      Value& y = ctx.out(0);
      y.reset(x.dtype(), os);
      if (!transpose_matrices(&ctx.pool(), os, st, esize(ctx, x), y.mutable_data(), x.data()))
        gather_strided(&ctx.pool(), os, st, 0, esize(ctx, x), y.mutable_data(), x.data());
    });
  }, false);

  r.add("Concat", [](const KernelInit& init) {
    if (!init.attrs().find("axis") && init.opset >= 4) init.fail("attribute axis is required");
    const int64_t axis_attr = init.attrs().get_int("axis", 1);
    return make_kernel([=](KernelContext& ctx) {
      const size_t n = ctx.input_count();
      if (n == 0) ctx.fail("needs at least one input");
      const Value& first = ctx.in(0);
      const int64_t rank = static_cast<int64_t>(first.rank());
      const int64_t axis = norm_axis(ctx, axis_attr, rank);
      Shape os = first.dims();
      os[static_cast<size_t>(axis)] = 0;
      for (size_t i = 0; i < n; ++i) {
        const Value& v = ctx.in(i);
        if (v.dtype() != first.dtype()) ctx.fail("input " + ctx.input_name(i) + " has a different element type from " + ctx.input_name(0));
        bool ok = v.rank() == first.rank();
        for (size_t d = 0; ok && d < v.rank(); ++d) ok = d == static_cast<size_t>(axis) || v.dims()[d] == first.dims()[d];
        if (!ok)
          ctx.fail("input " + ctx.input_name(i) + " " + shape_str(v.shape()) + " does not match " + ctx.input_name(0) + " " + shape_str(first.shape()) +
                   " outside axis " + std::to_string(axis));
        os[static_cast<size_t>(axis)] += v.dims()[static_cast<size_t>(axis)];
      }
      Value& y = ctx.out(0);
      y.reset(first.dtype(), os);
      const size_t es = esize(ctx, first);
      const int64_t outer = product(std::span<const int64_t>(os).subspan(0, static_cast<size_t>(axis)));
      const int64_t inner = product(std::span<const int64_t>(os).subspan(static_cast<size_t>(axis) + 1));
      const int64_t out_row = os[static_cast<size_t>(axis)] * inner * static_cast<int64_t>(es);
      int64_t col = 0;
      std::byte* py = y.mutable_data();
      for (size_t i = 0; i < n; ++i) {
        const Value& v = ctx.in(i);
        const int64_t row = v.dims()[static_cast<size_t>(axis)] * inner * static_cast<int64_t>(es);
        // (an input the Session had written in place, a view of its block of y, is there already)
        if (row > 0 && !(outer == 1 && v.data() == py + col)) copy_rows_pooled(&ctx.pool(), py + col, out_row, v.data(), row, outer, row);
        col += row;
      }
    });
  }, false);

  r.add("Split", [](const KernelInit& init) {
    const int64_t axis_attr = init.attrs().get_int("axis", 0);
    const auto split_attr = init.attrs().get_ints("split");
    const bool from_input = init.opset >= 13;
    const int64_t num_outputs = init.attrs().get_int("num_outputs", 0);
    return make_kernel([=](KernelContext& ctx) {
      const Value& x = ctx.in(0);
      const int64_t rank = static_cast<int64_t>(x.rank());
      const int64_t axis = norm_axis(ctx, axis_attr, rank);
      const int64_t dim = x.dims()[static_cast<size_t>(axis)];
      std::vector<int64_t> split = from_input ? (ctx.has_input(1) ? read_ints(ctx, 1) : std::vector<int64_t>{}) : split_attr;
      const auto nout = static_cast<int64_t>(ctx.output_count());
      if (split.empty()) {
        const int64_t parts = num_outputs > 0 ? num_outputs : nout;
        const int64_t chunk = num_outputs > 0 ? (dim + parts - 1) / parts : dim / parts;
        if (num_outputs == 0 && dim % parts != 0)
          ctx.fail("axis " + std::to_string(axis) + " of size " + std::to_string(dim) + " cannot be split evenly into " + std::to_string(parts));
        for (int64_t i = 0; i < parts; ++i) split.push_back(std::max<int64_t>(0, std::min(chunk, dim - chunk * i)));
      }
      int64_t total = 0;
      for (int64_t s : split) total += s;
      if (static_cast<int64_t>(split.size()) != nout || total != dim)
        ctx.fail("split " + shape_str(split) + " does not divide axis " + std::to_string(axis) + " of size " + std::to_string(dim) + " into " +
                 std::to_string(nout) + " outputs");
      const size_t es = esize(ctx, x);
      const auto d = std::span<const int64_t>(x.dims());
      const int64_t outer = product(d.subspan(0, static_cast<size_t>(axis))), inner = product(d.subspan(static_cast<size_t>(axis) + 1));
      const int64_t in_row = dim * inner * static_cast<int64_t>(es);
      int64_t col = 0;
      for (size_t i = 0; i < split.size(); ++i) {
        const int64_t row = split[i] * inner * static_cast<int64_t>(es);
        if (ctx.has_output(i)) {
          Shape os(d.begin(), d.end());
          os[static_cast<size_t>(axis)] = split[i];
          Value& y = ctx.out(i);
          y.reset(x.dtype(), os);
          if (row > 0) copy_rows_pooled(&ctx.pool(), y.mutable_data(), row, x.data() + col, in_row, outer, row);
        }
        col += row;
      }
    });
  }, false);

  r.add("Slice", [](const KernelInit& init) {
    const bool attr_form = init.opset < 10;
    const auto starts_a = init.attrs().get_ints("starts"), ends_a = init.attrs().get_ints("ends"), axes_a = init.attrs().get_ints("axes");
    return make_kernel([=](KernelContext& ctx) {
      const Value& x = ctx.in(0);
      const int64_t rank = static_cast<int64_t>(x.rank());
      std::vector<int64_t> starts, ends, axes, steps;
      if (attr_form) {
        starts = starts_a;
        ends = ends_a;
        axes = axes_a;
      } else {
        starts = read_ints(ctx, 1);
        ends = read_ints(ctx, 2);
        if (ctx.has_input(3)) axes = read_ints(ctx, 3);
        if (ctx.has_input(4)) steps = read_ints(ctx, 4);
      }
      if (axes.empty())
        for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
      if (steps.empty()) steps.assign(starts.size(), 1);
      if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
        ctx.fail("starts, ends, axes and steps have different lengths");
      Shape os = x.dims();
      const auto ist = strides_of(x.dims());
      std::vector<int64_t> st = ist;
      int64_t base = 0;
      std::vector<bool> seen(static_cast<size_t>(rank), false);
      for (size_t i = 0; i < starts.size(); ++i) {
        const auto a = static_cast<size_t>(norm_axis(ctx, axes[i], rank));
        if (seen[a]) ctx.fail("axis " + std::to_string(axes[i]) + " is listed twice");
        seen[a] = true;
        if (steps[i] == 0) ctx.fail("step 0 on axis " + std::to_string(axes[i]));
        const SliceDim s = slice_dim(x.dims()[a], starts[i], ends[i], steps[i]);
        os[a] = s.count;
        if (s.count > 0) base += s.start * ist[a];
        st[a] = ist[a] * s.step;
      }
      Value& y = ctx.out(0);
      y.reset(x.dtype(), os);
      if (y.elements() > 0) gather_strided(&ctx.pool(), os, st, base, esize(ctx, x), y.mutable_data(), x.data());
    });
  }, false);

  r.add("Expand", [](const KernelInit&) {
    return make_kernel([](KernelContext& ctx) {
      const Value& x = ctx.in(0);
      const auto spec = read_ints(ctx, 1);
      const Shape shapes[2] = {x.dims(), spec};
      for (int64_t d : spec)
        if (d < 0) ctx.fail("shape " + shape_str(spec) + " has a negative dim");
      const Shape os = broadcast_shapes(ctx, shapes);
      Value& y = ctx.out(0);
      y.reset(x.dtype(), os);
      gather_strided(&ctx.pool(), os, broadcast_strides(x.dims(), os), 0, esize(ctx, x), y.mutable_data(), x.data());
    });
  }, false);

  r.add("Tile", [](const KernelInit&) {
    return make_kernel([](KernelContext& ctx) {
      const Value& x = ctx.in(0);
      const auto rep = read_ints(ctx, 1);
      if (rep.size() != x.rank()) ctx.fail("repeats has " + std::to_string(rep.size()) + " values for input rank " + std::to_string(x.rank()));
      const auto ist = strides_of(x.dims());
      Shape os, view;
      std::vector<int64_t> st;
      for (size_t i = 0; i < rep.size(); ++i) {
        if (rep[i] < 0) ctx.fail("negative repeat");
        os.push_back(x.dims()[i] * rep[i]);
        view.push_back(rep[i]);
        view.push_back(x.dims()[i]);
        st.push_back(0);
        st.push_back(ist[i]);
      }
      Value& y = ctx.out(0);
      y.reset(x.dtype(), os);
      gather_strided(&ctx.pool(), view, st, 0, esize(ctx, x), y.mutable_data(), x.data());
    });
  }, false);

  r.add("Pad", [](const KernelInit& init) {
    const bool attr_form = init.opset < 11;
    const std::string mode = init.attrs().get_string("mode", "constant");
    if (mode != "constant" && mode != "reflect" && mode != "edge" && mode != "wrap") init.fail("unknown mode " + quoted(mode));
    const auto pads_attr = init.attrs().get_ints(init.opset < 2 ? "paddings" : "pads");
    const float value_attr = init.attrs().get_float("value", 0.f);
    return make_kernel([=](KernelContext& ctx) {
      const Value& x = ctx.in(0);
      const int64_t rank = static_cast<int64_t>(x.rank());
      std::vector<int64_t> pads = attr_form ? pads_attr : read_ints(ctx, 1);
      if (!attr_form && ctx.has_input(3)) {  // axes (opset 18)
        const auto axes = read_ints(ctx, 3);
        if (pads.size() != 2 * axes.size()) ctx.fail("pads has " + std::to_string(pads.size()) + " values for " + std::to_string(axes.size()) + " axes");
        std::vector<int64_t> full(static_cast<size_t>(2 * rank), 0);
        for (size_t i = 0; i < axes.size(); ++i) {
          const auto a = static_cast<size_t>(norm_axis(ctx, axes[i], rank));
          full[a] = pads[i];
          full[a + static_cast<size_t>(rank)] = pads[i + axes.size()];
        }
        pads = full;
      }
      if (static_cast<int64_t>(pads.size()) != 2 * rank)
        ctx.fail("pads has " + std::to_string(pads.size()) + " values for input " + ctx.input_name(0) + " of rank " + std::to_string(rank));
      Shape os(static_cast<size_t>(rank));
      for (int64_t i = 0; i < rank; ++i) {
        os[static_cast<size_t>(i)] = x.dims()[static_cast<size_t>(i)] + pads[static_cast<size_t>(i)] + pads[static_cast<size_t>(i + rank)];
        if (os[static_cast<size_t>(i)] < 0) ctx.fail("pads " + shape_str(pads) + " remove more than input " + shape_str(x.shape()));
        if (mode != "constant" && x.dims()[static_cast<size_t>(i)] == 0 && os[static_cast<size_t>(i)] > 0) ctx.fail("cannot " + mode + "-pad an empty axis");
      }
      Value& y = ctx.out(0);
      y.reset(x.dtype(), os);
      const size_t es = esize(ctx, x);
      std::byte* py = y.mutable_data();
      const std::byte* px = x.data();
      const int64_t total = y.elements();
      const auto ist = strides_of(x.dims());
      if (mode == "constant") {
        // Fill with the value, then copy the overlapping region.
        std::vector<std::byte> fill(es);
        double v = attr_form ? value_attr : (ctx.has_input(2) && ctx.in(2).elements() > 0 ? read_scalar(ctx, 2) : 0.0);
        Value tmp;
        switch (x.dtype()) {
          case DType::Float: { float f = static_cast<float>(v); std::memcpy(fill.data(), &f, 4); break; }
          case DType::Double: std::memcpy(fill.data(), &v, 8); break;
          case DType::Int64: { int64_t f = static_cast<int64_t>(v); std::memcpy(fill.data(), &f, 8); break; }
          case DType::Int32: { int32_t f = static_cast<int32_t>(v); std::memcpy(fill.data(), &f, 4); break; }
          case DType::Float16: { uint16_t f = float_to_half(static_cast<float>(v)); std::memcpy(fill.data(), &f, 2); break; }
          case DType::Bool:
          case DType::UInt8: { uint8_t f = static_cast<uint8_t>(v); std::memcpy(fill.data(), &f, 1); break; }
          case DType::Int8: { int8_t f = static_cast<int8_t>(v); std::memcpy(fill.data(), &f, 1); break; }
          default: if (v != 0) ctx.fail("constant pad value for this element type is not supported");
        }
        // (the value once, then the filled part doubled: a few large copies)
        if (total > 0) std::memcpy(py, fill.data(), es);
        for (int64_t done = 1; done < total;) {
          const int64_t n = std::min(done, total - done);
          std::memcpy(py + done * static_cast<int64_t>(es), py, static_cast<size_t>(n) * es);
          done += n;
        }
        // Region: output index o = i + pad_begin for input i, both inside.
        Shape region(static_cast<size_t>(rank));
        int64_t src_base = 0, dst_base = 0;
        const auto ost = strides_of(os);
        for (int64_t d = 0; d < rank; ++d) {
          const auto k = static_cast<size_t>(d);
          const int64_t pb = pads[k];
          const int64_t in_lo = std::max<int64_t>(0, -pb), out_lo = std::max<int64_t>(0, pb);
          region[k] = std::max<int64_t>(0, std::min(x.dims()[k] - in_lo, os[k] - out_lo));
          src_base += in_lo * ist[k];
          dst_base += out_lo * ost[k];
        }
        if (product(region) == 0) return;
        // Copy row by row over the region.
        std::array<std::vector<int64_t>, 2> st{ist, ost};
        for_each_broadcast<2>(region, st, nullptr, [&](const std::array<int64_t, 2>& off, const std::array<int64_t, 2>& is, int64_t, int64_t len) {
          if (is[0] == 1 && is[1] == 1)
            return copy_rows(py + (dst_base + off[1]) * static_cast<int64_t>(es), 0, px + (src_base + off[0]) * static_cast<int64_t>(es), 0, 1,
                             len * static_cast<int64_t>(es));
          for (int64_t i = 0; i < len; ++i)
            std::memcpy(py + (dst_base + off[1] + i * is[1]) * static_cast<int64_t>(es), px + (src_base + off[0] + i * is[0]) * static_cast<int64_t>(es), es);
        });
        return;
      }
      if (rank == 0) {
        std::memcpy(py, px, es);
        return;
      }
      // Each output row (the last axis) from one input row: the source index of every output
      // index per axis (the mode's rule), the row's middle copied as a block and its padded ends
      // element by element, rows split over the pool.
      if (total == 0) return;
      std::vector<std::vector<int64_t>> src_of(static_cast<size_t>(rank));
      for (int64_t d = 0; d < rank; ++d) {
        const auto k = static_cast<size_t>(d);
        const int64_t n = x.dims()[k];
        src_of[k].resize(static_cast<size_t>(os[k]));
        for (int64_t o = 0; o < os[k]; ++o) {
          int64_t i = o - pads[k];
          if (mode == "edge") {
            i = std::clamp<int64_t>(i, 0, n - 1);
          } else if (mode == "wrap") {
            i = ((i % n) + n) % n;
          } else if (n == 1) {
            i = 0;
          } else {  // reflect, period 2(n-1)
            const int64_t p = 2 * (n - 1);
            i = ((i % p) + p) % p;
            if (i >= n) i = p - i;
          }
          src_of[k][static_cast<size_t>(o)] = i;
        }
      }
      const auto last = static_cast<size_t>(rank - 1);
      const int64_t width = os[last], in_width = x.dims()[last], pb = pads[last];
      // the middle: output columns [lo, hi) are input columns [lo - pb, hi - pb)
      const int64_t lo = std::clamp<int64_t>(pb, 0, width), hi = std::clamp<int64_t>(pb + in_width, lo, width);
      const std::vector<int64_t>& cols = src_of[last];
      const auto esi = static_cast<int64_t>(es);
      auto copy_row = [&](std::byte* dst, const std::byte* src) {
        auto one = [&](int64_t c) {
          copy_rows(dst + c * esi, 0, src + cols[static_cast<size_t>(c)] * esi, 0, 1, esi);
        };
        for (int64_t c = 0; c < lo; ++c) one(c);
        if (hi > lo) std::memcpy(dst + lo * esi, src + (lo - pb) * esi, static_cast<size_t>((hi - lo) * esi));
        for (int64_t c = hi; c < width; ++c) one(c);
      };
      const int64_t rows = total / width;
      auto body = [&](int64_t r0, int64_t r1) {
        std::vector<int64_t> idx(last);
        int64_t rem = r0, src = 0;
        for (size_t d = last; d-- > 0;) {
          idx[d] = rem % os[d];
          rem /= os[d];
          src += src_of[d][static_cast<size_t>(idx[d])] * ist[d];
        }
        for (int64_t r = r0; r < r1; ++r) {
          copy_row(py + r * width * esi, px + src * esi);
          for (size_t d = last; d-- > 0;) {  // the next row's index, and its source row
            src -= src_of[d][static_cast<size_t>(idx[d])] * ist[d];
            if (++idx[d] == os[d]) idx[d] = 0;
            src += src_of[d][static_cast<size_t>(idx[d])] * ist[d];
            if (idx[d] != 0) break;
          }
        }
      };
      if (total * esi >= (int64_t{1} << 18))
        ctx.pool().parallel_for(rows, std::max<int64_t>(1, (int64_t{1} << 14) / width), body);
      else
        body(0, rows);
    });
  }, false);

  r.add("Shape", [](const KernelInit& init) {
    const int64_t start_a = init.attrs().get_int("start", 0);
    const int64_t end_a = init.attrs().get_int("end", std::numeric_limits<int64_t>::max());
    return make_kernel([=](KernelContext& ctx) {
      const Value& x = ctx.in(0);
      const auto rank = static_cast<int64_t>(x.rank());
      int64_t s = start_a < 0 ? start_a + rank : start_a, e = end_a < 0 ? end_a + rank : end_a;
      s = std::clamp<int64_t>(s, 0, rank);
      e = std::clamp<int64_t>(e, 0, rank);
      const int64_t n = std::max<int64_t>(0, e - s);
      Value& y = ctx.out(0);
      y.reset(DType::Int64, {n});
      for (int64_t i = 0; i < n; ++i) y.mutable_as<int64_t>()[static_cast<size_t>(i)] = x.dims()[static_cast<size_t>(s + i)];
    });
  }, false);

  r.add("Size", [](const KernelInit&) {
    return make_kernel([](KernelContext& ctx) {
      Value& y = ctx.out(0);
      y.reset(DType::Int64, {});
      y.mutable_as<int64_t>()[0] = ctx.in(0).elements();
    });
  }, false);

  auto d2s = [](bool to_space) {
    return [to_space](const KernelInit& init) {
      const int64_t bs = init.attrs().get_int("blocksize", 0);
      const bool crd = init.attrs().get_string("mode", "DCR") == "CRD";
      if (bs < 1) init.fail("blocksize must be >= 1");
      return make_kernel([=](KernelContext& ctx) {
        ctx.expect_rank(0, 4);
        const Value& x = ctx.in(0);
        const int64_t N = x.dims()[0], C = x.dims()[1], H = x.dims()[2], W = x.dims()[3];
        Shape view, os;
        std::vector<int64_t> perm;
        if (to_space) {  // DepthToSpace
          if (C % (bs * bs) != 0) ctx.fail("channels " + std::to_string(C) + " are not divisible by blocksize^2");
          const int64_t c = C / (bs * bs);
          if (crd) {
            view = {N, c, bs, bs, H, W};
            perm = {0, 1, 4, 2, 5, 3};
          } else {
            view = {N, bs, bs, c, H, W};
            perm = {0, 3, 4, 1, 5, 2};
          }
          os = {N, c, H * bs, W * bs};
        } else {  // SpaceToDepth
          if (H % bs != 0 || W % bs != 0) ctx.fail("height and width must be divisible by blocksize");
          view = {N, C, H / bs, bs, W / bs, bs};
          perm = {0, 3, 5, 1, 2, 4};
          os = {N, C * bs * bs, H / bs, W / bs};
        }
        const auto vst = strides_of(view);
        Shape pshape(6);
        std::vector<int64_t> st(6);
        for (size_t i = 0; i < 6; ++i) {
          pshape[i] = view[static_cast<size_t>(perm[i])];
          st[i] = vst[static_cast<size_t>(perm[i])];
        }
        Value& y = ctx.out(0);
        y.reset(x.dtype(), os);
        gather_strided(&ctx.pool(), pshape, st, 0, esize(ctx, x), y.mutable_data(), x.data());
      });
    };
  };
  r.add("DepthToSpace", d2s(true), false);
  r.add("SpaceToDepth", d2s(false), false);

  // Legacy (opset 1-8 experimental) Crop: border = [left, top, right, bottom], optional scale = [h, w].
  r.add("Crop", [](const KernelInit& init) {
    const auto border = init.attrs().get_ints("border");
    const auto scale = init.attrs().get_ints("scale");
    if (border.size() != 4) init.fail("border must have 4 values");
    if (!scale.empty() && scale.size() != 2) init.fail("scale must have 2 values");
    return make_kernel([=](KernelContext& ctx) {
      ctx.expect_rank(0, 4);
      const Value& x = ctx.in(0);
      const int64_t H = x.dims()[2], W = x.dims()[3];
      const int64_t left = border[0], top = border[1], right = border[2], bottom = border[3];
      int64_t oh = H - top - bottom, ow = W - left - right;
      if (!scale.empty()) {
        oh = scale[0];
        ow = scale[1];
      }
      if (left < 0 || top < 0 || oh < 0 || ow < 0 || top + oh > H || left + ow > W)
        ctx.fail("border " + shape_str(border) + " does not fit input " + ctx.input_name(0) + " " + shape_str(x.shape()));
      const auto ist = strides_of(x.dims());
      const Shape os{x.dims()[0], x.dims()[1], oh, ow};
      Value& y = ctx.out(0);
      y.reset(x.dtype(), os);
      gather_strided(&ctx.pool(), os, ist, top * ist[2] + left * ist[3], esize(ctx, x), y.mutable_data(), x.data());
    });
  }, false);
}

}  // namespace nnxr::runtime
