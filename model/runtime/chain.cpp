// Element-wise chains: several float Add/Sub/Mul/Div/Erf/Pow(2)/Relu/Softmax nodes computed in one
// pass over their common shape, every output still written (compute.h, chain_run, chain_block);
// the outputs only the chain reads streamed out past the cache (ChainStep::staged).
#include <algorithm>
#include <cstring>
#include <vector>

#include "model/runtime/compute.h"
#include "model/runtime/value.h"
#if defined(__x86_64__) || defined(__i386__)
#include "model/runtime/avx2.h"
#include "model/runtime/avx512.h"
#endif

namespace nnxr::runtime {

namespace {

using Op = ChainStep::Op;
using Kind = ChainArg::Kind;

// o[i] = a[i] op b[i] for i < n, a or b a single value when its flag is false. One IEEE operation
// per element, as the separate kernels do, so the same bits on every set.
template <Op O, bool SA, bool SB>
[[gnu::always_inline]] inline void binary_loop(const float* a, const float* b, float* o, int64_t n) {
  const float a0 = *a, b0 = *b;
  for (int64_t i = 0; i < n; ++i) {
    const float x = SA ? a[i] : a0, y = SB ? b[i] : b0;
    if constexpr (O == Op::Add) o[i] = x + y;
    else if constexpr (O == Op::Sub) o[i] = x - y;
    else if constexpr (O == Op::Mul) o[i] = x * y;
    else if constexpr (O == Op::Div) o[i] = x / y;
    else if constexpr (O == Op::Relu) o[i] = x > 0.f ? x : 0.f;  // (the Relu kernel's comparison: NaN gives 0)
    else o[i] = x * x;  // Square
  }
}

template <Op O>
[[gnu::always_inline]] inline void binary_strided(const float* a, bool sa, const float* b, bool sb, float* o, int64_t n) {
  if (sa && sb) binary_loop<O, true, true>(a, b, o, n);
  else if (sa) binary_loop<O, true, false>(a, b, o, n);
  else if (sb) binary_loop<O, false, true>(a, b, o, n);
  else binary_loop<O, false, false>(a, b, o, n);
}

[[gnu::always_inline]] inline void binary_body(Op op, const float* a, bool sa, const float* b, bool sb, float* o, int64_t n) {
  switch (op) {
    case Op::Add: return binary_strided<Op::Add>(a, sa, b, sb, o, n);
    case Op::Sub: return binary_strided<Op::Sub>(a, sa, b, sb, o, n);
    case Op::Mul: return binary_strided<Op::Mul>(a, sa, b, sb, o, n);
    case Op::Div: return binary_strided<Op::Div>(a, sa, b, sb, o, n);
    case Op::Square: return binary_strided<Op::Square>(a, sa, a, sa, o, n);
    case Op::Relu: return binary_strided<Op::Relu>(a, sa, a, sa, o, n);
    case Op::Erf:
    case Op::Softmax: return;
  }
}

#if defined(__x86_64__) || defined(__i386__)
__attribute__((target("avx512f,avx512vl,avx512dq,avx2,fma"))) void binary_avx512(Op op, const float* a, bool sa, const float* b, bool sb, float* o,
                                                                                int64_t n) {
  binary_body(op, a, sa, b, sb, o, n);
}
__attribute__((target("avx2,fma"))) void binary_avx2(Op op, const float* a, bool sa, const float* b, bool sb, float* o, int64_t n) {
  binary_body(op, a, sa, b, sb, o, n);
}
#endif
void binary_portable(Op op, const float* a, bool sa, const float* b, bool sb, float* o, int64_t n) { binary_body(op, a, sa, b, sb, o, n); }

// Where argument `x` of row r, columns [c0, c0 + len), starts, and whether it advances.
const float* at(const ChainArg& x, int64_t r, int64_t c0, int64_t n, bool& strided) {
  switch (x.kind) {
    case Kind::Full: strided = true; return x.p + r * n + c0;
    case Kind::Column: strided = true; return x.p + c0;
    case Kind::Row: strided = false; return x.p + r;
    case Kind::Scalar: break;
  }
  strided = false;
  return x.p;
}

using BinaryFn = void (*)(Op, const float*, bool, const float*, bool, float*, int64_t);

BinaryFn binary_fn() {
#if defined(__x86_64__) || defined(__i386__)
  if (cpu_has_avx512()) return binary_avx512;
  if (cpu_has_avx2_fma()) return binary_avx2;
#endif
  return binary_portable;
}

// Blocks of about 2K elements (8 KB a tensor): every step of a block reads what the steps before
// it wrote while that is still in the first-level cache. Rows longer than that are split into
// blocks of columns, unless a step works on whole rows (Softmax).
constexpr int64_t kBlock = 2048;
struct Blocking {
  int64_t cols, col_blocks, block_rows;
};
Blocking blocking(std::span<const ChainStep> steps, int64_t n) {
  const bool whole_rows = chain_whole_rows(steps);
  const int64_t cols = whole_rows ? n : std::min(n, kBlock);
  return {cols, (n + cols - 1) / cols, std::max<int64_t>(1, kBlock / n)};
}

using SpanFn = void (*)(float*, const float*, int64_t);
void copy_span(float* dst, const float* src, int64_t n) { std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float)); }

// How a staged step's block is written out: streamed where the CPU has AVX2 or AVX-512.
SpanFn span_fn() {
#if defined(__x86_64__) || defined(__i386__)
  if (cpu_has_avx512()) return avx512::stream_span;
  if (cpu_has_avx2_fma()) return avx2::stream_span;
#endif
  return copy_span;
}

// Every step on rows [r0, r1) and columns [c0, c1). A staged step's output goes to its own
// scratch block (rows of w = c1 - c0), where the steps after it read it, and is streamed out
// at the end: a chain's intermediate tensors (a GELU's five, a LayerNorm's) are read by no other
// node, and writing them in place read each of their lines from memory first.
void run_block(std::span<const ChainStep> steps, int64_t r0, int64_t r1, int64_t c0, int64_t c1, int64_t n, BinaryFn binary, SpanFn span) {
  const int64_t w = c1 - c0, cells = (r1 - r0) * w;
  thread_local std::vector<float, CacheAligned<float>> scratch;
  thread_local std::vector<float*> block;  // by step: its staged block, or null
  block.assign(steps.size(), nullptr);
  size_t staged = 0;
  for (size_t k = 0; k < steps.size(); ++k) staged += steps[k].staged;
  if (staged > 0) {
    if (scratch.size() < staged * static_cast<size_t>(cells)) scratch.resize(staged * static_cast<size_t>(cells));
    float* next = scratch.data();
    for (size_t k = 0; k < steps.size(); ++k)
      if (steps[k].staged) block[k] = next, next += cells;
  }
  // Argument x in row r: a staged step's output from its block.
  const auto arg = [&](const ChainArg& x, int64_t r, bool& strided) -> const float* {
    if (x.from >= 0 && block[static_cast<size_t>(x.from)]) {
      strided = true;
      return block[static_cast<size_t>(x.from)] + (r - r0) * w;
    }
    return at(x, r, c0, n, strided);
  };
  const auto out = [&](size_t k, int64_t r) { return block[k] ? block[k] + (r - r0) * w : steps[k].out + r * n + c0; };
  for (size_t k = 0; k < steps.size(); ++k) {
    const ChainStep& s = steps[k];
    bool sa = false, sb = false;
    if (s.op == Op::Erf && c0 == 0 && c1 == n) {  // whole rows: one contiguous span
      erf_f32(arg(s.a, r0, sa), out(k, r0), (r1 - r0) * n);
      continue;
    }
    if (s.op == Op::Softmax) {  // whole rows (blocking): the Softmax kernel's rows of more than 8
      for (int64_t r = r0; r < r1; ++r) softmax_row_f32(arg(s.a, r, sa), out(k, r), n);
      continue;
    }
    for (int64_t r = r0; r < r1; ++r) {
      float* o = out(k, r);
      const float* a = arg(s.a, r, sa);
      if (s.op == Op::Erf) {
        erf_f32(a, o, w);
        continue;
      }
      const bool unary = s.op == Op::Square || s.op == Op::Relu;
      const float* b = unary ? a : arg(s.b, r, sb);
      if (unary) sb = sa;
      binary(s.op, a, sa, b, sb, o, w);
    }
  }
  if (staged == 0) return;
  for (size_t k = 0; k < steps.size(); ++k)
    if (block[k])
      for (int64_t r = r0; r < r1; ++r) span(steps[k].out + r * n + c0, block[k] + (r - r0) * w, w);
#if defined(__x86_64__) || defined(__i386__)
  _mm_sfence();  // the streamed outputs visible before the task completes
#endif
}

}  // namespace

bool chain_whole_rows(std::span<const ChainStep> steps) {
  return std::any_of(steps.begin(), steps.end(), [](const ChainStep& s) { return s.op == Op::Softmax; });
}

void chain_block(std::span<const ChainStep> steps, int64_t r0, int64_t r1, int64_t c0, int64_t c1, int64_t n) {
  if (r1 <= r0 || c1 <= c0 || steps.empty()) return;
  const BinaryFn binary = binary_fn();
  const SpanFn span = span_fn();
  const Blocking b = blocking(steps, n);
  if (c0 == 0 && c1 == n && b.col_blocks == 1) {
    for (int64_t r = r0; r < r1; r += b.block_rows) run_block(steps, r, std::min(r1, r + b.block_rows), 0, n, n, binary, span);
    return;
  }
  // a block of columns (no step takes whole rows): rows of it, about 2K elements a block
  const int64_t w = std::min(c1 - c0, b.cols), rows = std::max<int64_t>(1, kBlock / w);
  for (int64_t c = c0; c < c1; c += w)
    for (int64_t r = r0; r < r1; r += rows) run_block(steps, r, std::min(r1, r + rows), c, std::min(c1, c + w), n, binary, span);
}

void chain_run(std::span<const ChainStep> steps, int64_t rows, int64_t n, ThreadPool* pool) {
  if (rows <= 0 || n <= 0 || steps.empty()) return;
  // Arguments laid out like the output or single values only: the rows are one span, run in
  // blocks of 2K elements (short rows, a detector's [4420, 2] boxes, would otherwise be a call
  // per step and row of 2).
  const bool flat = !chain_whole_rows(steps) && std::all_of(steps.begin(), steps.end(), [](const ChainStep& s) {
    const bool unary = s.op == Op::Erf || s.op == Op::Square || s.op == Op::Relu;
    return (s.a.kind == Kind::Full || s.a.kind == Kind::Scalar) && (unary || s.b.kind == Kind::Full || s.b.kind == Kind::Scalar);
  });
  if (flat && rows > 1) {
    n *= rows;
    rows = 1;
  }
  const BinaryFn binary = binary_fn();
  const SpanFn span = span_fn();
  const Blocking bk = blocking(steps, n);
  const int64_t cols = bk.cols, col_blocks = bk.col_blocks, block_rows = bk.block_rows;
  const int64_t blocks = col_blocks > 1 ? rows * col_blocks : (rows + block_rows - 1) / block_rows;
  auto body = [&](int64_t b0, int64_t b1) {
    for (int64_t blk = b0; blk < b1; ++blk) {
      // rows [r0, r1) and columns [c0, c1) of this block
      if (col_blocks > 1) {
        const int64_t r0 = blk / col_blocks, c0 = (blk % col_blocks) * cols;
        run_block(steps, r0, r0 + 1, c0, std::min(n, c0 + cols), n, binary, span);
      } else {
        const int64_t r0 = blk * block_rows;
        run_block(steps, r0, std::min(rows, r0 + block_rows), 0, n, n, binary, span);
      }
    }
  };
  // Split over the pool from 64K elements, as the separate element-wise kernels are.
  if (pool && pool->threads() > 1 && rows * n >= (int64_t{1} << 16))
    pool->parallel_for(blocks, std::max<int64_t>(1, (int64_t{1} << 14) / std::max<int64_t>(1, cols * (col_blocks > 1 ? 1 : block_rows))), body);
  else
    body(0, blocks);
}

}  // namespace nnxr::runtime
