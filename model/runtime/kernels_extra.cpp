// Assorted ops: Unique, Compress, ReverseSequence, Det, MaxUnpool, TfIdfVectorizer, the random
// generators (RandomUniform(Like), RandomNormal(Like), Bernoulli), and the optimizer ops of the
// ai.onnx.preview.training domain (Adagrad, Adam, Momentum).
//
// Random ops: with a `seed` attribute every run gives the same values (the generator is seeded
// afresh per run, so results do not depend on how many runs came before); without one, each run
// draws a fresh seed. Values differ from other runtimes' generators.
#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <numeric>
#include <optional>
#include <random>

#include "model/runtime/kernel.h"
#include "model/runtime/kernels_more.h"

namespace nnxr::runtime {
namespace {

// Calls f(T{}) for every fixed-size element type (bool as uint8_t, 16-bit floats as uint16_t).
template <class F>
void dispatch_all(const KernelContext& ctx, DType t, F&& f) {
  dispatch_types<kFloats | kCommonInts | kOtherInts | kStorage>(ctx, t, std::forward<F>(f));
}

// ---- Unique ----------------------------------------------------------------------------------

// A total order for sorting: NaN after every number, NaNs equal.
template <class T>
bool total_less(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(b)) return !std::isnan(a);
    if (std::isnan(a)) return false;
  }
  return a < b;
}
template <class T>
bool total_eq(T a, T b) {
  if constexpr (std::is_floating_point_v<T>)
    if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return a == b;
}

// Slices of x along `axis` (the whole tensor flattened, one element per slice, without an axis).
template <class T>
void unique(KernelContext& ctx, bool has_axis, int64_t axis_attr, bool sorted) {
  const Value& x = ctx.in(0);
  int64_t outer = 1, count = x.elements(), inner = 1, axis = 0;
  if (has_axis) {
    if (x.rank() == 0) ctx.fail("axis is given but input " + ctx.input_name(0) + " is a scalar");
    axis = norm_axis(ctx, axis_attr, static_cast<int64_t>(x.rank()));
    const auto d = std::span<const int64_t>(x.dims());
    outer = product(d.subspan(0, static_cast<size_t>(axis)));
    count = d[static_cast<size_t>(axis)];
    inner = product(d.subspan(static_cast<size_t>(axis) + 1));
  }
  const T* px = reinterpret_cast<const T*>(x.data());
  // Slice s as a vector of values (outer-major).
  auto slice_less = [&](int64_t a, int64_t b) {
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        const T va = px[(o * count + a) * inner + i], vb = px[(o * count + b) * inner + i];
        if (total_less(va, vb)) return true;
        if (total_less(vb, va)) return false;
      }
    return false;
  };
  auto slice_eq = [&](int64_t a, int64_t b) {
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i)
        if (!total_eq(px[(o * count + a) * inner + i], px[(o * count + b) * inner + i])) return false;
    return true;
  };
  // Order of the slices: stable sort by value (first occurrence first among equals).
  std::vector<int64_t> order(static_cast<size_t>(count));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), slice_less);
  // Groups of equal slices; each group's first element in `order` is its first occurrence.
  std::vector<int64_t> group_of(static_cast<size_t>(count)), first, counts;
  for (size_t k = 0; k < order.size(); ++k) {
    if (k == 0 || !slice_eq(order[k - 1], order[k])) {
      first.push_back(order[k]);
      counts.push_back(0);
    }
    group_of[static_cast<size_t>(order[k])] = static_cast<int64_t>(first.size()) - 1;
    ++counts.back();
  }
  // Output order of the groups: by value (sorted) or by first occurrence.
  std::vector<int64_t> out_order(first.size());
  std::iota(out_order.begin(), out_order.end(), 0);
  if (!sorted) std::sort(out_order.begin(), out_order.end(), [&](int64_t a, int64_t b) { return first[static_cast<size_t>(a)] < first[static_cast<size_t>(b)]; });
  std::vector<int64_t> rank_of(first.size());
  for (size_t k = 0; k < out_order.size(); ++k) rank_of[static_cast<size_t>(out_order[k])] = static_cast<int64_t>(k);
  const int64_t U = static_cast<int64_t>(first.size());
  Shape ys = has_axis ? x.dims() : Shape{U};
  if (has_axis) ys[static_cast<size_t>(axis)] = U;
  Value& y = ctx.out(0);
  y.reset(x.dtype(), ys);
  T* py = reinterpret_cast<T*>(y.mutable_data());
  for (int64_t k = 0; k < U; ++k) {
    const int64_t src = first[static_cast<size_t>(out_order[static_cast<size_t>(k)])];
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) py[(o * U + k) * inner + i] = px[(o * count + src) * inner + i];
  }
  auto put = [&](size_t slot, const std::vector<int64_t>& v) {
    if (!ctx.has_output(slot)) return;
    Value& o = ctx.out(slot);
    o.reset(DType::Int64, {static_cast<int64_t>(v.size())});
    std::copy(v.begin(), v.end(), o.mutable_as<int64_t>().begin());
  };
  std::vector<int64_t> indices(static_cast<size_t>(U)), inverse(static_cast<size_t>(count)), cnt(static_cast<size_t>(U));
  for (int64_t k = 0; k < U; ++k) {
    indices[static_cast<size_t>(k)] = first[static_cast<size_t>(out_order[static_cast<size_t>(k)])];
    cnt[static_cast<size_t>(k)] = counts[static_cast<size_t>(out_order[static_cast<size_t>(k)])];
  }
  for (int64_t s = 0; s < count; ++s) inverse[static_cast<size_t>(s)] = rank_of[static_cast<size_t>(group_of[static_cast<size_t>(s)])];
  put(1, indices);
  put(2, inverse);
  put(3, cnt);
}

// ---- Compress --------------------------------------------------------------------------------

void compress(KernelContext& ctx, bool has_axis, int64_t axis_attr) {
  const Value &x = ctx.in(0), &c = ctx.in(1);
  ctx.expect_dtype(1, {DType::Bool});
  if (c.rank() != 1) ctx.fail("condition " + ctx.input_name(1) + " has shape " + shape_str(c.shape()) + ", expected 1-D");
  const size_t es = esize(ctx, x);
  int64_t outer = 1, count = x.elements(), inner = 1, axis = 0;
  if (has_axis) {
    axis = norm_axis(ctx, axis_attr, static_cast<int64_t>(x.rank()));
    const auto d = std::span<const int64_t>(x.dims());
    outer = product(d.subspan(0, static_cast<size_t>(axis)));
    count = d[static_cast<size_t>(axis)];
    inner = product(d.subspan(static_cast<size_t>(axis) + 1));
  }
  if (c.elements() > count)
    ctx.fail("condition " + ctx.input_name(1) + " has " + std::to_string(c.elements()) + " entries for " + std::to_string(count) + " slices");
  std::vector<int64_t> keep;
  for (int64_t i = 0; i < c.elements(); ++i)
    if (c.as<uint8_t>()[static_cast<size_t>(i)]) keep.push_back(i);
  const int64_t K = static_cast<int64_t>(keep.size());
  Shape ys = has_axis ? x.dims() : Shape{K};
  if (has_axis) ys[static_cast<size_t>(axis)] = K;
  Value& y = ctx.out(0);
  y.reset(x.dtype(), ys);
  const std::byte* px = x.data();
  std::byte* py = y.mutable_data();
  const size_t row = static_cast<size_t>(inner) * es;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t k = 0; k < K; ++k)
      if (row) std::memcpy(py + static_cast<size_t>(o * K + k) * row, px + static_cast<size_t>(o * count + keep[static_cast<size_t>(k)]) * row, row);
}

// ---- ReverseSequence -------------------------------------------------------------------------

void reverse_sequence(KernelContext& ctx, int64_t batch_axis, int64_t time_axis) {
  const Value &x = ctx.in(0), &lens = ctx.in(1);
  if (x.rank() < 2) ctx.fail("input " + ctx.input_name(0) + " has shape " + shape_str(x.shape()) + ", expected rank >= 2");
  if (!((batch_axis == 0 && time_axis == 1) || (batch_axis == 1 && time_axis == 0)))
    ctx.fail("batch_axis and time_axis must be 0 and 1 in some order");
  const auto L = read_ints(ctx, 1);
  const int64_t B = x.dims()[static_cast<size_t>(batch_axis)], T = x.dims()[static_cast<size_t>(time_axis)];
  if (lens.rank() != 1 || static_cast<int64_t>(L.size()) != B)
    ctx.fail("sequence_lens " + ctx.input_name(1) + " has shape " + shape_str(lens.shape()) + ", expected [" + std::to_string(B) + "]");
  const size_t es = esize(ctx, x);
  const int64_t inner = product(std::span<const int64_t>(x.dims()).subspan(2));
  Value& y = ctx.out(0);
  y.assign(x.dtype(), x.dims(), {x.data(), x.byte_size()});
  const std::byte* px = x.data();
  std::byte* py = y.mutable_data();
  const size_t row = static_cast<size_t>(inner) * es;
  for (int64_t b = 0; b < B; ++b) {
    const int64_t len = L[static_cast<size_t>(b)];
    if (len < 0 || len > T) ctx.fail("sequence length " + std::to_string(len) + " of batch " + std::to_string(b) + " is outside [0, " + std::to_string(T) + "]");
    for (int64_t t = 0; t < len; ++t) {
      const int64_t src = batch_axis == 0 ? b * T + t : t * B + b;
      const int64_t dst = batch_axis == 0 ? b * T + (len - 1 - t) : (len - 1 - t) * B + b;
      if (row) std::memcpy(py + static_cast<size_t>(dst) * row, px + static_cast<size_t>(src) * row, row);
    }
  }
}

// ---- Det -------------------------------------------------------------------------------------

template <class T>
void det(KernelContext& ctx) {
  const Value& x = ctx.in(0);
  ctx.expect_min_rank(0, 2);
  const int64_t n = x.dims().back();
  if (x.dims()[x.rank() - 2] != n) ctx.fail("input " + ctx.input_name(0) + " has shape " + shape_str(x.shape()) + "; the last two dims must be equal");
  const Shape ys(x.dims().begin(), x.dims().end() - 2);
  Value& y = ctx.out(0);
  y.reset(x.dtype(), ys);
  const T* px = x.as<T>().data();
  T* py = y.mutable_as<T>().data();
  std::vector<double> a(static_cast<size_t>(n * n));
  for (int64_t m = 0; m < y.elements(); ++m) {
    for (int64_t i = 0; i < n * n; ++i) a[static_cast<size_t>(i)] = px[m * n * n + i];
    double d = 1;
    for (int64_t c = 0; c < n; ++c) {  // LU with partial pivoting
      int64_t p = c;
      for (int64_t r = c + 1; r < n; ++r)
        if (std::fabs(a[static_cast<size_t>(r * n + c)]) > std::fabs(a[static_cast<size_t>(p * n + c)])) p = r;
      if (a[static_cast<size_t>(p * n + c)] == 0) {
        d = 0;
        break;
      }
      if (p != c) {
        for (int64_t k = 0; k < n; ++k) std::swap(a[static_cast<size_t>(p * n + k)], a[static_cast<size_t>(c * n + k)]);
        d = -d;
      }
      const double piv = a[static_cast<size_t>(c * n + c)];
      d *= piv;
      for (int64_t r = c + 1; r < n; ++r) {
        const double f = a[static_cast<size_t>(r * n + c)] / piv;
        for (int64_t k = c; k < n; ++k) a[static_cast<size_t>(r * n + k)] -= f * a[static_cast<size_t>(c * n + k)];
      }
    }
    py[m] = static_cast<T>(d);
  }
}

// ---- MaxUnpool -------------------------------------------------------------------------------

struct UnpoolAttrs {
  std::vector<int64_t> kernel, strides, pads;
};

void max_unpool(KernelContext& ctx, const UnpoolAttrs& at) {
  const Value &x = ctx.in(0), &ind = ctx.in(1);
  ctx.expect_dtype(1, {DType::Int64});
  if (x.rank() < 3) ctx.fail("input " + ctx.input_name(0) + " has shape " + shape_str(x.shape()) + ", expected [N, C, spatial...]");
  if (ind.dims() != x.dims()) ctx.fail("indices " + ctx.input_name(1) + " " + shape_str(ind.shape()) + " differ in shape from input " + shape_str(x.shape()));
  const size_t S = x.rank() - 2;
  if (at.kernel.size() != S) ctx.fail("kernel_shape has " + std::to_string(at.kernel.size()) + " values for " + std::to_string(S) + " spatial dims");
  const std::vector<int64_t> strides = at.strides.empty() ? std::vector<int64_t>(S, 1) : at.strides;
  const std::vector<int64_t> pads = at.pads.empty() ? std::vector<int64_t>(2 * S, 0) : at.pads;
  if (strides.size() != S || pads.size() != 2 * S) ctx.fail("strides/pads do not match the " + std::to_string(S) + " spatial dims");
  Shape unpooled = {x.dims()[0], x.dims()[1]};
  for (size_t i = 0; i < S; ++i) unpooled.push_back((x.dims()[2 + i] - 1) * strides[i] + at.kernel[i] - pads[i] - pads[i + S]);
  for (int64_t d : unpooled)
    if (d < 0) ctx.fail("unpooled shape " + shape_str(unpooled) + " is negative");
  // The indices address the unpooled shape; a larger output_shape keeps each element's
  // coordinates (the extra rows and columns stay 0).
  Shape ys = unpooled;
  if (ctx.has_input(2)) {
    const auto os = read_ints(ctx, 2);
    if (os.size() != x.rank()) ctx.fail("output_shape " + ctx.input_name(2) + " has " + std::to_string(os.size()) + " values for rank " + std::to_string(x.rank()));
    if (os[0] != ys[0] || os[1] != ys[1]) ctx.fail("output_shape must keep N and C of the input");
    for (size_t i = 2; i < os.size(); ++i)
      if (os[i] < ys[i]) ctx.fail("output_shape " + shape_str(os) + " is smaller than the unpooled shape " + shape_str(ys));
    ys = os;
  }
  const size_t es = esize(ctx, x);
  Value& y = ctx.out(0);
  y.reset(x.dtype(), ys);
  y.fill_zero();
  const int64_t total = product(unpooled);
  const auto ust = strides_of(unpooled), yst = strides_of(ys);
  const std::byte* px = x.data();
  std::byte* py = y.mutable_data();
  const auto I = ind.as<int64_t>();
  for (int64_t i = 0; i < x.elements(); ++i) {
    const int64_t k = I[static_cast<size_t>(i)];
    if (k < 0 || k >= total) ctx.fail("index " + std::to_string(k) + " is outside the output of " + std::to_string(total) + " elements");
    int64_t rem = k, dst = 0;
    for (size_t d = 0; d < ust.size(); ++d) {
      dst += (rem / ust[d]) * yst[d];
      rem %= ust[d];
    }
    copy_elem(py + static_cast<size_t>(dst) * es, px + static_cast<size_t>(i) * es, es);
  }
}

// ---- TfIdfVectorizer -------------------------------------------------------------------------

struct TfIdf {
  enum class Mode { TF, IDF, TFIDF } mode = Mode::TF;
  int64_t min_n = 1, max_n = 1, max_skip = 0, out_size = 0;
  // n-gram (as its tokens) -> output column, per n.
  std::vector<std::map<std::vector<int64_t>, int64_t>> grams;
  std::vector<float> weights;  // per output column (1 when absent)
};

TfIdf tfidf_decode(const KernelInit& init) {
  TfIdf t;
  const auto& a = init.attrs();
  const std::string mode = a.get_string("mode", "");
  if (mode == "TF") t.mode = TfIdf::Mode::TF;
  else if (mode == "IDF") t.mode = TfIdf::Mode::IDF;
  else if (mode == "TFIDF") t.mode = TfIdf::Mode::TFIDF;
  else init.fail("mode " + quoted(mode) + " is not TF, IDF or TFIDF");
  t.min_n = a.get_int("min_gram_length", 0);
  t.max_n = a.get_int("max_gram_length", 0);
  t.max_skip = a.get_int("max_skip_count", 0);
  if (t.min_n < 1 || t.max_n < t.min_n) init.fail("min_gram_length and max_gram_length must satisfy 1 <= min <= max");
  if (t.max_skip < 0 || t.max_skip > (1 << 20)) init.fail("max_skip_count must be in [0, 2^20]");
  if (t.max_n > (1 << 10)) init.fail("max_gram_length must be <= 1024");
  if (a.find("pool_strings")) init.fail("string pools (pool_strings) are not supported");
  const auto pool = a.get_ints("pool_int64s"), counts = a.get_ints("ngram_counts"), indexes = a.get_ints("ngram_indexes");
  if (counts.empty()) init.fail("ngram_counts is required");
  t.grams.resize(counts.size() + 1);
  int64_t id = 0;
  for (size_t k = 0; k < counts.size(); ++k) {
    const int64_t n = static_cast<int64_t>(k) + 1, begin = counts[k], end = k + 1 < counts.size() ? counts[k + 1] : static_cast<int64_t>(pool.size());
    if (begin < 0 || end < begin || end > static_cast<int64_t>(pool.size()) || (end - begin) % n != 0)
      init.fail("ngram_counts does not describe pool_int64s (" + std::to_string(pool.size()) + " values)");
    for (int64_t p = begin; p < end; p += n, ++id) {
      if (id >= static_cast<int64_t>(indexes.size())) init.fail("ngram_indexes has fewer entries than the pool has n-grams");
      const int64_t col = indexes[static_cast<size_t>(id)];
      if (col < 0 || col > (int64_t{1} << 24)) init.fail("ngram_indexes value " + std::to_string(col) + " is out of range");
      t.grams[static_cast<size_t>(n)][std::vector<int64_t>(pool.begin() + p, pool.begin() + p + n)] = col;
      t.out_size = std::max(t.out_size, col + 1);
    }
  }
  const auto w = a.get_floats("weights");
  if (!w.empty() && static_cast<int64_t>(w.size()) < t.out_size) init.fail("weights has fewer entries than the output has columns");
  t.weights = w;
  return t;
}

void tfidf(KernelContext& ctx, const TfIdf& t) {
  ctx.expect_dtype(0, {DType::Int32, DType::Int64});
  const Value& x = ctx.in(0);
  if (x.rank() != 1 && x.rank() != 2) ctx.fail("input " + ctx.input_name(0) + " has shape " + shape_str(x.shape()) + ", expected [C] or [N, C]");
  const int64_t rows = x.rank() == 2 ? x.dims()[0] : 1, C = x.dims().back();
  auto tok = [&](int64_t i) { return x.dtype() == DType::Int64 ? x.as<int64_t>()[static_cast<size_t>(i)] : x.as<int32_t>()[static_cast<size_t>(i)]; };
  Value& y = ctx.out(0);
  y.reset(DType::Float, x.rank() == 2 ? Shape{rows, t.out_size} : Shape{t.out_size});
  y.fill_zero();
  float* py = y.mutable_as<float>().data();
  std::vector<int64_t> gram;
  for (int64_t r = 0; r < rows; ++r) {
    float* out = py + r * t.out_size;
    for (int64_t n = t.min_n; n <= t.max_n && n < static_cast<int64_t>(t.grams.size()); ++n) {
      const auto& table = t.grams[static_cast<size_t>(n)];
      if (table.empty()) continue;
      // Unigrams are counted once; longer n-grams once per skip distance.
      for (int64_t skip = 0; skip <= (n == 1 ? 0 : t.max_skip); ++skip)
        for (int64_t s = 0; s + (n - 1) * (skip + 1) < C; ++s) {
          gram.clear();
          for (int64_t j = 0; j < n; ++j) gram.push_back(tok(r * C + s + j * (skip + 1)));
          if (auto it = table.find(gram); it != table.end()) out[it->second] += 1;
        }
    }
    for (int64_t c = 0; c < t.out_size; ++c) {
      const float w = t.weights.empty() ? 1.f : t.weights[static_cast<size_t>(c)];
      if (t.mode == TfIdf::Mode::IDF) out[c] = out[c] > 0 ? w : 0.f;
      else if (t.mode == TfIdf::Mode::TFIDF) out[c] *= w;
    }
  }
}

// ---- random ----------------------------------------------------------------------------------

struct RandomAttrs {
  std::optional<float> seed;
  DType dtype = DType::Undefined;  // Undefined: the input's (the *Like ops, Bernoulli)
  double a = 0, b = 1;             // low/high or mean/scale
};

RandomAttrs random_attrs(const KernelInit& init, const char* a_name, double a_def, const char* b_name, double b_def) {
  RandomAttrs r;
  if (init.attrs().find("seed")) r.seed = init.attrs().get_float("seed", 0);
  if (init.attrs().find("dtype")) {
    const auto raw = init.attrs().get_int("dtype", 1);
    if (!model::dtype_valid(static_cast<int32_t>(raw))) init.fail("dtype " + std::to_string(raw) + " is not an element type");
    r.dtype = static_cast<DType>(raw);
  }
  r.a = init.attrs().get_float(a_name, static_cast<float>(a_def));
  r.b = init.attrs().get_float(b_name, static_cast<float>(b_def));
  return r;
}

std::mt19937_64 generator(const RandomAttrs& r) {
  if (r.seed) {
    uint32_t bits;
    std::memcpy(&bits, &*r.seed, sizeof bits);
    return std::mt19937_64(bits);
  }
  return std::mt19937_64(std::random_device{}());
}

// Fills `y` (float, double, or for Bernoulli any numeric/bool type) from gen(i) as double.
template <class Gen>
void fill_random(const KernelContext& ctx, Value& y, DType t, const Shape& shape, Gen gen) {
  y.reset(t, shape);
  const auto n = static_cast<size_t>(y.elements());
  auto put = [&](auto tag) {
    using T = decltype(tag);
    T* p = reinterpret_cast<T*>(y.mutable_data());
    for (size_t i = 0; i < n; ++i) p[i] = static_cast<T>(gen(i));
  };
  switch (t) {
    case DType::Float: return put(float{});
    case DType::Double: return put(double{});
    case DType::Float16: {
      auto p = y.mutable_as<uint16_t>();
      for (size_t i = 0; i < n; ++i) p[i] = float_to_half(static_cast<float>(gen(i)));
      return;
    }
    default: break;
  }
  ctx.fail("element type " + std::string(model::dtype_name(t)) + " is not supported for random values");
}

void random_op(KernelContext& ctx, const RandomAttrs& r, bool normal, const Shape& shape, DType t) {
  auto g = generator(r);
  if (normal) {
    if (!(r.b >= 0)) ctx.fail("scale must be >= 0");
    std::normal_distribution<double> d(r.a, r.b);
    fill_random(ctx, ctx.out(0), t, shape, [&](size_t) { return r.b == 0 ? r.a : d(g); });
  } else {
    if (!(r.b >= r.a)) ctx.fail("high must be >= low");
    std::uniform_real_distribution<double> d(r.a, r.b);
    fill_random(ctx, ctx.out(0), t, shape, [&](size_t) { return r.b == r.a ? r.a : d(g); });
  }
}

void bernoulli(KernelContext& ctx, const RandomAttrs& r) {
  ctx.expect_dtype(0, {DType::Float, DType::Double});
  const Value& p = ctx.in(0);
  const DType t = r.dtype == DType::Undefined ? p.dtype() : r.dtype;
  auto g = generator(r);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<uint8_t> bits(static_cast<size_t>(p.elements()));
  for (size_t i = 0; i < bits.size(); ++i) {
    const double prob = p.dtype() == DType::Float ? p.as<float>()[i] : p.as<double>()[i];
    if (!(prob >= 0 && prob <= 1)) ctx.fail("probability " + std::to_string(prob) + " at element " + std::to_string(i) + " is outside [0, 1]");
    bits[i] = u(g) < prob ? 1 : 0;
  }
  Value& y = ctx.out(0);
  y.reset(t, p.dims());
  dispatch_all(ctx, t, [&](auto tag) {
    using T = decltype(tag);
    if (t == DType::Float16 || t == DType::BFloat16) ctx.fail("element type " + std::string(model::dtype_name(t)) + " is not supported by Bernoulli");
    T* out = reinterpret_cast<T*>(y.mutable_data());
    for (size_t i = 0; i < bits.size(); ++i) out[i] = static_cast<T>(bits[i]);
  });
}

// ---- optimizers (ai.onnx.preview.training) ---------------------------------------------------

// Inputs R (scalar rate), T (scalar step count), then `groups` groups of n tensors each (X..., G...,
// and the optimizer's state); outputs the new X... and new state groups.
struct OptimizerIo {
  double r = 0;
  int64_t t = 0;
  size_t n = 0;
};

OptimizerIo optimizer_io(KernelContext& ctx, size_t groups) {
  if (ctx.input_count() < 2 + groups || (ctx.input_count() - 2) % groups != 0)
    ctx.fail("expects R, T and " + std::to_string(groups) + " equal groups of tensors, has " + std::to_string(ctx.input_count()) + " inputs");
  OptimizerIo io;
  io.r = read_scalar(ctx, 0);
  const auto t = read_ints(ctx, 1);
  if (t.size() != 1) ctx.fail("T must hold one value");
  io.t = t[0];
  io.n = (ctx.input_count() - 2) / groups;
  if (ctx.output_count() > (groups - 1) * io.n) ctx.fail("has more outputs than updated tensors");
  for (size_t g = 0; g < groups; ++g)
    for (size_t i = 0; i < io.n; ++i) {
      const size_t slot = 2 + g * io.n + i;
      ctx.expect_dtype(slot, {DType::Float, DType::Double});
      if (ctx.in(slot).dims() != ctx.in(2 + i).dims() || ctx.in(slot).dtype() != ctx.in(2 + i).dtype())
        ctx.fail("input " + ctx.input_name(slot) + " differs in shape or type from " + ctx.input_name(2 + i));
    }
  return io;
}

// Runs step(x, g, state..., out...) element by element for each tensor i; `state` are the
// optimizer's per-tensor inputs after X and G, outputs are new X then new states.
template <size_t NS, class Step>
void optimizer(KernelContext& ctx, Step step) {
  const OptimizerIo io = optimizer_io(ctx, 2 + NS);
  for (size_t i = 0; i < io.n; ++i) {
    const Value& x = ctx.in(2 + i);
    dispatch_float(ctx, x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      std::array<const T*, 2 + NS> in{};
      for (size_t g = 0; g < 2 + NS; ++g) in[g] = ctx.in(2 + g * io.n + i).template as<T>().data();
      std::array<T*, 1 + NS> out{};
      for (size_t g = 0; g < 1 + NS; ++g) {
        const size_t slot = g * io.n + i;
        if (!ctx.has_output(slot)) continue;
        ctx.out(slot).reset(x.dtype(), x.dims());
        out[g] = ctx.out(slot).template mutable_as<T>().data();
      }
      for (int64_t e = 0; e < x.elements(); ++e) {
        std::array<double, 2 + NS> v{};
        for (size_t g = 0; g < 2 + NS; ++g) v[g] = static_cast<double>(in[g][e]);
        std::array<double, 1 + NS> r{};
        step(io, v, r);
        for (size_t g = 0; g < 1 + NS; ++g)
          if (out[g]) out[g][e] = static_cast<T>(r[g]);
      }
    });
  }
}

}  // namespace

void register_extra(Registry& r) {
  r.add("Unique", [](const KernelInit& init) {
    const bool has_axis = init.attrs().find("axis") != nullptr;
    const int64_t axis = init.attrs().get_int("axis", 0);
    const bool sorted = init.attrs().get_int("sorted", 1) != 0;
    return make_kernel([=](KernelContext& ctx) {
      dispatch_all(ctx, ctx.in(0).dtype(), [&](auto tag) {
        using T = decltype(tag);
        // Float16/BFloat16 bit patterns do not order as numbers: widen them first.
        if (ctx.in(0).dtype() == DType::Float16 || ctx.in(0).dtype() == DType::BFloat16)
          ctx.fail("element type " + std::string(model::dtype_name(ctx.in(0).dtype())) + " is not supported by Unique");
        unique<T>(ctx, has_axis, axis, sorted);
      });
    });
  });
  r.add("Compress", [](const KernelInit& init) {
    const bool has_axis = init.attrs().find("axis") != nullptr;
    const int64_t axis = init.attrs().get_int("axis", 0);
    return make_kernel([=](KernelContext& ctx) { compress(ctx, has_axis, axis); });
  });
  r.add("ReverseSequence", [](const KernelInit& init) {
    const int64_t b = init.attrs().get_int("batch_axis", 1), t = init.attrs().get_int("time_axis", 0);
    return make_kernel([=](KernelContext& ctx) { reverse_sequence(ctx, b, t); });
  });
  r.add("Det", [](const KernelInit&) {
    return make_kernel([](KernelContext& ctx) {
      dispatch_float(ctx, ctx.in(0).dtype(), [&](auto tag) { det<decltype(tag)>(ctx); });
    });
  });
  r.add("MaxUnpool", [](const KernelInit& init) {
    UnpoolAttrs at{init.attrs().get_ints("kernel_shape"), init.attrs().get_ints("strides"), init.attrs().get_ints("pads")};
    if (at.kernel.empty()) init.fail("kernel_shape is required");
    constexpr int64_t kMax = int64_t{1} << 24;
    for (int64_t k : at.kernel)
      if (k < 1 || k > kMax) init.fail("kernel_shape values must be in [1, 2^24]");
    for (int64_t s : at.strides)
      if (s < 1 || s > kMax) init.fail("strides must be in [1, 2^24]");
    for (int64_t p : at.pads)
      if (p < 0 || p > kMax) init.fail("pads must be in [0, 2^24]");
    return make_kernel([at](KernelContext& ctx) { max_unpool(ctx, at); });
  });
  r.add("TfIdfVectorizer", [](const KernelInit& init) {
    TfIdf t = tfidf_decode(init);
    return make_kernel([t = std::move(t)](KernelContext& ctx) { tfidf(ctx, t); });
  });

  for (const bool normal : {false, true}) {
    const char* a_name = normal ? "mean" : "low";
    const char* b_name = normal ? "scale" : "high";
    const double a_def = normal ? 0.0 : 0.0, b_def = 1.0;
    r.add(normal ? "RandomNormal" : "RandomUniform", [=](const KernelInit& init) {
      RandomAttrs at = random_attrs(init, a_name, a_def, b_name, b_def);
      if (at.dtype == DType::Undefined) at.dtype = DType::Float;
      const auto shape = init.attrs().get_ints("shape");
      if (!init.attrs().find("shape")) init.fail("attribute 'shape' is required");
      for (int64_t d : shape)
        if (d < 0) init.fail("shape " + shape_str(shape) + " has a negative dimension");
      return make_kernel([=](KernelContext& ctx) { random_op(ctx, at, normal, shape, at.dtype); });
    }, false);
    r.add(normal ? "RandomNormalLike" : "RandomUniformLike", [=](const KernelInit& init) {
      const RandomAttrs at = random_attrs(init, a_name, a_def, b_name, b_def);
      return make_kernel([=](KernelContext& ctx) {
        const Value& x = ctx.in(0);
        random_op(ctx, at, normal, x.dims(), at.dtype == DType::Undefined ? x.dtype() : at.dtype);
      });
    }, false);
  }
  r.add("Bernoulli", [](const KernelInit& init) {
    const RandomAttrs at = random_attrs(init, "unused_a", 0, "unused_b", 1);
    return make_kernel([=](KernelContext& ctx) { bernoulli(ctx, at); });
  });

  const std::string training = "ai.onnx.preview.training";
  r.add(KernelEntry{training, "Adagrad", 1, 1 << 30, true, [](const KernelInit& init) {
    const double decay = init.attrs().get_float("decay_factor", 0), eps = init.attrs().get_float("epsilon", 1e-6f),
                 norm = init.attrs().get_float("norm_coefficient", 0);
    return make_kernel([=](KernelContext& ctx) {
      optimizer<1>(ctx, [&](const OptimizerIo& io, const std::array<double, 3>& v, std::array<double, 2>& out) {
        const double r = io.r / (1 + static_cast<double>(io.t) * decay);
        const double g = norm * v[0] + v[1];
        const double h = v[2] + g * g;
        out[0] = v[0] - r * g / (std::sqrt(h) + eps);
        out[1] = h;
      });
    });
  }});
  r.add(KernelEntry{training, "Adam", 1, 1 << 30, true, [](const KernelInit& init) {
    const double alpha = init.attrs().get_float("alpha", 0.9f), beta = init.attrs().get_float("beta", 0.999f),
                 eps = init.attrs().get_float("epsilon", 1e-6f), norm = init.attrs().get_float("norm_coefficient", 0),
                 post = init.attrs().get_float("norm_coefficient_post", 0);
    return make_kernel([=](KernelContext& ctx) {
      optimizer<2>(ctx, [&](const OptimizerIo& io, const std::array<double, 4>& v, std::array<double, 3>& out) {
        const double g = norm * v[0] + v[1];
        const double m = alpha * v[2] + (1 - alpha) * g;
        const double h = beta * v[3] + (1 - beta) * g * g;
        const double t = static_cast<double>(io.t);
        const double r = io.t > 0 ? io.r * std::sqrt(1 - std::pow(beta, t)) / (1 - std::pow(alpha, t)) : io.r;
        out[0] = (1 - post) * (v[0] - r * m / (std::sqrt(h) + eps));
        out[1] = m;
        out[2] = h;
      });
    });
  }});
  r.add(KernelEntry{training, "Momentum", 1, 1 << 30, true, [](const KernelInit& init) {
    const double alpha = init.attrs().get_float("alpha", 0), beta = init.attrs().get_float("beta", 0),
                 norm = init.attrs().get_float("norm_coefficient", 0);
    const std::string mode = init.attrs().get_string("mode", "standard");
    if (mode != "standard" && mode != "nesterov") init.fail("mode " + quoted(mode) + " is not standard or nesterov");
    const bool nesterov = mode == "nesterov";
    return make_kernel([=](KernelContext& ctx) {
      optimizer<1>(ctx, [&](const OptimizerIo& io, const std::array<double, 3>& v, std::array<double, 2>& out) {
        const double g = norm * v[0] + v[1];
        const double b = io.t > 0 ? beta : 1.0;
        const double m = alpha * v[2] + b * g;
        out[0] = nesterov ? v[0] - io.r * (g + alpha * m) : v[0] - io.r * m;
        out[1] = m;
      });
    });
  }});
}

}  // namespace nnxr::runtime
