// Element-wise chains: several float Add/Sub/Mul/Div/Erf/Pow(2) nodes computed in one pass over
// their common shape, every output still written (compute.h, chain_run).
#include <algorithm>

#include "model/runtime/compute.h"

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
    case Op::Erf: return;
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

}  // namespace

void chain_run(std::span<const ChainStep> steps, int64_t rows, int64_t n, ThreadPool* pool) {
  if (rows <= 0 || n <= 0 || steps.empty()) return;
  auto binary = binary_portable;
#if defined(__x86_64__) || defined(__i386__)
  if (cpu_has_avx512()) binary = binary_avx512;
  else if (cpu_has_avx2_fma()) binary = binary_avx2;
#endif
  // Blocks of about 2K elements (8 KB a tensor): every step of a block reads what the steps before
  // it wrote while that is still in the first-level cache.
  constexpr int64_t kBlock = 2048;
  const int64_t cols = std::min(n, kBlock), col_blocks = (n + cols - 1) / cols;
  const int64_t block_rows = std::max<int64_t>(1, kBlock / n);
  const int64_t blocks = col_blocks > 1 ? rows * col_blocks : (rows + block_rows - 1) / block_rows;
  auto body = [&](int64_t b0, int64_t b1) {
    for (int64_t blk = b0; blk < b1; ++blk) {
      // rows [r0, r1) and columns [c0, c1) of this block
      int64_t r0, r1, c0, c1;
      if (col_blocks > 1) {
        r0 = blk / col_blocks;
        r1 = r0 + 1;
        c0 = (blk % col_blocks) * cols;
        c1 = std::min(n, c0 + cols);
      } else {
        r0 = blk * block_rows;
        r1 = std::min(rows, r0 + block_rows);
        c0 = 0;
        c1 = n;
      }
      for (const ChainStep& s : steps) {
        if (s.op == Op::Erf && c0 == 0 && c1 == n) {  // whole rows: one contiguous span
          erf_f32(s.a.p + r0 * n, s.out + r0 * n, (r1 - r0) * n);
          continue;
        }
        for (int64_t r = r0; r < r1; ++r) {
          float* o = s.out + r * n + c0;
          bool sa = false, sb = false;
          const float* a = at(s.a, r, c0, n, sa);
          if (s.op == Op::Erf) {
            erf_f32(a, o, c1 - c0);
            continue;
          }
          const float* b = s.op == Op::Square ? a : at(s.b, r, c0, n, sb);
          if (s.op == Op::Square) sb = sa;
          binary(s.op, a, sa, b, sb, o, c1 - c0);
        }
      }
    }
  };
  // Split over the pool from 64K elements, as the separate element-wise kernels are.
  if (pool && pool->threads() > 1 && rows * n >= (int64_t{1} << 16))
    pool->parallel_for(blocks, std::max<int64_t>(1, (int64_t{1} << 14) / std::max<int64_t>(1, std::min(n, kBlock) * (col_blocks > 1 ? 1 : block_rows))), body);
  else
    body(0, blocks);
}

}  // namespace nnxr::runtime
