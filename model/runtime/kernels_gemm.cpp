// Gemm and MatMul (sgemm via OpenBLAS; on AVX-512, gemm_packed for MatMul's products of 6 rows and
// 32 columns or more; naive references).
#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <type_traits>

#include <cblas.h>

#include "model/runtime/broadcast.h"
#include "model/runtime/compute.h"
#include "model/runtime/exp_lanes.h"
#include "model/runtime/kernel.h"

namespace nnxr::runtime {

namespace {

thread_local ThreadPool* gemm_pool = nullptr;
constexpr int64_t kMinFlopsPerThread = int64_t{1} << 21;  // below this a wake-up costs more than it saves

void sgemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda, const float* B, int64_t ldb,
           float beta, float* C, int64_t ldc) {
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, static_cast<blasint>(M), static_cast<blasint>(N),
              static_cast<blasint>(K), alpha, A, static_cast<blasint>(lda), B, static_cast<blasint>(ldb), beta, C, static_cast<blasint>(ldc));
}

void gemm_on(ThreadPool* pool, bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda, const float* B,
             int64_t ldb, float beta, float* C, int64_t ldc);

// A product with one row or one column of output as sgemv (sgemm packs the whole matrix for a
// single row: several times slower), the output split over the pool when it is large.
void gemv_blas(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda, const float* B, int64_t ldb,
               float beta, float* C, int64_t ldc, ThreadPool* pool, int64_t min_flops) {
  // y[L] = alpha * mat . x + beta * y where mat is stored [rows, cols] with stride ld (trans: y
  // indexes its columns). M == 1: mat = op(B), x = the row op(A); N == 1: mat = op(A), x = op(B).
  const bool row = M == 1;
  const float* mat = row ? B : A;
  const int64_t ld = row ? ldb : lda;
  const bool trans = row ? !tb : ta;  // mat^T is what multiplies x
  const int64_t L = row ? N : M;
  const float* x = row ? A : B;
  const int64_t incx = row ? (ta ? lda : 1) : (tb ? 1 : ldb);
  const int64_t incy = row ? 1 : ldc;
  if (beta == 0.f)
    for (int64_t i = 0; i < L; ++i) C[i * incy] = 0.f;  // sgemv scales y by beta: garbage * 0 could be NaN
  auto part = [&](int64_t lo, int64_t hi) {
    const auto n = static_cast<blasint>(hi - lo);
    if (trans)
      cblas_sgemv(CblasRowMajor, CblasTrans, static_cast<blasint>(K), n, alpha, mat + lo, static_cast<blasint>(ld), x, static_cast<blasint>(incx),
                  beta, C + lo * incy, static_cast<blasint>(incy));
    else
      cblas_sgemv(CblasRowMajor, CblasNoTrans, n, static_cast<blasint>(K), alpha, mat + lo * ld, static_cast<blasint>(ld), x,
                  static_cast<blasint>(incx), beta, C + lo * incy, static_cast<blasint>(incy));
  };
  if (!pool || pool->threads() == 1 || L * K < min_flops) return part(0, L);
  pool->parallel_for((L + 15) / 16, 4, [&](int64_t b, int64_t e) { part(b * 16, std::min(L, e * 16)); });
}

}  // namespace

void gemm_serial(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda, const float* B, int64_t ldb,
                 float beta, float* C, int64_t ldc) {
  if (M == 0 || N == 0) return;
  gemm_on(nullptr, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

GemmPool::GemmPool(ThreadPool& pool) : previous_(gemm_pool) { gemm_pool = &pool; }
GemmPool::~GemmPool() { gemm_pool = previous_; }

void gemm_blas(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda, const float* B, int64_t ldb,
               float beta, float* C, int64_t ldc) {
  gemm_on(gemm_pool, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

namespace {

void gemm_on(ThreadPool* pool, bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda, const float* B,
             int64_t ldb, float beta, float* C, int64_t ldc) {
  if (M == 0 || N == 0) return;
  if (K == 0) {
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) C[i * ldc + j] = beta == 0 ? 0.f : beta * C[i * ldc + j];
    return;
  }
  // A product with one row or column reads the whole matrix once: bound by memory, so worth
  // splitting at a few times fewer flops.
  if (M == 1 || N == 1) return gemv_blas(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, pool, kMinFlopsPerThread / 8);
  if (!pool || pool->threads() == 1 || M * N * K < 2 * kMinFlopsPerThread) return sgemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  // Rows of C when there are enough of them (op(A) row i starts at A + i * lda, or A + i when
  // transposed), else columns (op(B) column j at B + j, or B + j * ldb when transposed). Blocks
  // are multiples of 16 so that the kernels' panels stay whole.
  const bool by_rows = M >= 64 || M >= N;
  const int64_t extent = by_rows ? M : N;
  const int64_t grain = std::max<int64_t>(16, kMinFlopsPerThread / std::max<int64_t>(1, (by_rows ? N : M) * K));
  pool->parallel_for((extent + 15) / 16, (grain + 15) / 16, [&](int64_t b, int64_t e) {
    const int64_t lo = b * 16, hi = std::min(extent, e * 16);
    if (by_rows)
      sgemm(ta, tb, hi - lo, N, K, alpha, ta ? A + lo : A + lo * lda, lda, B, ldb, beta, C + lo * ldc, ldc);
    else
      sgemm(ta, tb, M, hi - lo, K, alpha, A, lda, tb ? B + lo * ldb : B + lo, ldb, beta, C + lo, ldc);
  });
}

}  // namespace

void gemm_naive(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda, const float* B, int64_t ldb,
                float beta, float* C, int64_t ldc) {
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double acc = 0;
      for (int64_t k = 0; k < K; ++k) {
        const float a = ta ? A[k * lda + i] : A[i * lda + k];
        const float b = tb ? B[j * ldb + k] : B[k * ldb + j];
        acc += static_cast<double>(a) * b;
      }
      float& c = C[i * ldc + j];
      c = static_cast<float>(alpha * acc + (beta == 0 ? 0.0 : static_cast<double>(beta) * c));
    }
}

std::vector<int64_t> matmul_shape(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  if (a.empty() || b.empty()) throw std::invalid_argument("MatMul operands must have rank >= 1");
  std::vector<int64_t> a2 = a, b2 = b;
  if (a2.size() == 1) a2.insert(a2.begin(), 1);
  if (b2.size() == 1) b2.push_back(1);
  const int64_t K = a2.back();
  if (b2[b2.size() - 2] != K)
    throw std::invalid_argument("inner dimensions differ: " + shape_str(a) + " x " + shape_str(b));
  const size_t ra = a2.size() - 2, rb = b2.size() - 2, r = std::max(ra, rb);
  std::vector<int64_t> out(r, 1);
  for (size_t i = 0; i < r; ++i) {
    const int64_t da = i + ra >= r ? a2[i + ra - r] : 1;
    const int64_t db = i + rb >= r ? b2[i + rb - r] : 1;
    if (da != db && da != 1 && db != 1) throw std::invalid_argument("batch dimensions cannot be broadcast: " + shape_str(a) + " x " + shape_str(b));
    out[i] = da == 1 ? db : da;
  }
  if (a.size() > 1) out.push_back(a2[a2.size() - 2]);
  if (b.size() > 1) out.push_back(b2.back());
  return out;
}

namespace {

// done over rows [r0, r1) of n floats (whole rows), split over the pool as the element-wise
// kernels are (from 64K elements).
void rows_over_pool(ThreadPool* pool, int64_t r0, int64_t r1, int64_t n, const ProductDone& done) {
  if (r1 <= r0) return;
  if (!pool || pool->threads() == 1 || (r1 - r0) * n < (int64_t{1} << 16)) return done(r0, r1, 0, n);
  pool->parallel_for(r1 - r0, std::max<int64_t>(1, (int64_t{1} << 14) / std::max<int64_t>(1, n)),
                     [&](int64_t b, int64_t e) { done(r0 + b, r0 + e, 0, n); });
}

// Drives a batched broadcasting matmul: mm(A, B, C, M, N, K) multiplies one [M,K] x [K,N]. With
// `batches` (a pool of more than one thread), the products of a batch run over it, one product
// per call of mm (which must then be serial and thread-safe); without, one after another.
// With `done` (float only), done(r0, r1, 0, N) follows each product on the thread that computed
// it (rows of the output seen as [nb * M, N]); `whole` computes the one big product of a shared B
// and calls done itself.
template <class T, class MM>
void matmul_driver(const std::vector<int64_t>& as, const T* a, const std::vector<int64_t>& bs, const T* b, T* out, MM mm,
                   ThreadPool* batches = nullptr, const ProductDone* done = nullptr,
                   const std::function<void(const T*, const T*, T*, int64_t, int64_t, int64_t)>* whole = nullptr) {
  std::vector<int64_t> a2 = as, b2 = bs;
  if (a2.size() == 1) a2.insert(a2.begin(), 1);
  if (b2.size() == 1) b2.push_back(1);
  const int64_t M = a2[a2.size() - 2], K = a2.back(), N = b2.back();
  const std::vector<int64_t> abatch(a2.begin(), a2.end() - 2), bbatch(b2.begin(), b2.end() - 2);
  const size_t r = std::max(abatch.size(), bbatch.size());
  std::vector<int64_t> batch(r, 1);
  for (size_t i = 0; i < r; ++i) {
    const int64_t da = i + abatch.size() >= r ? abatch[i + abatch.size() - r] : 1;
    const int64_t db = i + bbatch.size() >= r ? bbatch[i + bbatch.size() - r] : 1;
    batch[i] = da == 1 ? db : da;
  }
  const int64_t nb = product(batch);
  if (nb == 0 || M == 0 || N == 0) return;
  // B shared by every batch and A contiguous: one big [nb*M, K] x [K, N].
  if (product(bbatch) == 1 && product(abatch) == nb) {
    if (whole) (*whole)(a, b, out, nb * M, N, K);
    else mm(a, b, out, nb * M, N, K);
    return;
  }
  const auto sa = broadcast_strides(abatch, batch), sb = broadcast_strides(bbatch, batch);
  auto product_of = [&](int64_t i) {
    int64_t rem = i, oa = 0, ob = 0;
    for (size_t d = r; d-- > 0;) {
      const int64_t idx = rem % batch[d];
      rem /= batch[d];
      oa += idx * sa[d];
      ob += idx * sb[d];
    }
    mm(a + oa * M * K, b + ob * K * N, out + i * M * N, M, N, K);
  };
  if (batches && batches->threads() > 1 && nb > 1) {
    batches->parallel_for(nb, 1, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) {
        product_of(i);
        if (done) (*done)(i * M, (i + 1) * M, 0, N);
      }
    });
    return;
  }
  for (int64_t i = 0; i < nb; ++i) {
    product_of(i);
    if (done) rows_over_pool(gemm_pool, i * M, (i + 1) * M, N, *done);
  }
}

template <class T>
void mm_naive(const T* A, const T* B, T* C, int64_t M, int64_t N, int64_t K) {
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      std::conditional_t<std::is_floating_point_v<T>, double, T> acc{};
      for (int64_t k = 0; k < K; ++k) {
        if constexpr (std::is_integral_v<T>) {
          using U = std::make_unsigned_t<T>;
          acc = static_cast<T>(static_cast<U>(acc) + static_cast<U>(static_cast<U>(A[i * K + k]) * static_cast<U>(B[k * N + j])));
        } else {
          acc += static_cast<double>(A[i * K + k]) * static_cast<double>(B[k * N + j]);
        }
      }
      C[i * N + j] = static_cast<T>(acc);
    }
}

// The columns a block of a product of R rows whose chain runs on blocks of columns: about 256 KB
// of output, in multiples of 64 columns, so that the chain reads it back from the cache.
int64_t done_block_columns(int64_t R) { return std::max<int64_t>(64, (int64_t{1} << 16) / R / 64 * 64); }

// The product [R, K] x [K, N] through gemm_packed, on the AVX-512 path where the product has 6 rows
// and 32 columns or more: A (the left operand, activations) packed once here into 6-row panels, B (the
// weights, or one product's right operand) read in place, columns split over `pool` (null: this
// thread) in multiples of 64; with `done`, done(0, R, c0, c1) after each block of
// done_block_columns(R) columns. The same bits however the columns are split. Returns false (nothing
// computed) where it does not apply. sgemm packed A again for each block of columns: at one
// thread on an Intel Xeon (AVX-512), vit_s16_4l's [197, 384] x [384, 1536] with its bias and GELU
// took 3.4 ms through it and takes 2.8 ms here. The AVX2 path keeps sgemm: the same machine under
// NNXR_ISA=avx2 (OpenBLAS choosing its own kernels) ran vit_s16_4l in 42 ms through sgemm and in 53
// through AVX2's gemm_packed.
bool product_packed(const float* A, const float* B, float* C, int64_t R, int64_t N, int64_t K, const ProductDone* done, ThreadPool* pool,
                    const PackedB* pb = nullptr) {
  if (!cpu_has_avx512() || R < kPanelRows || N < 32 || K == 0) return false;
  if (pb && (pb->K != K || pb->N != N)) pb = nullptr;
  const PackedA pa = pack_a(A, R, K, K);
  const GemmOut out{C, N, nullptr, nullptr, 0};
  const int64_t cb = done ? done_block_columns(R) : N;
  auto cols = [&](int64_t lo, int64_t hi) {
    for (int64_t c = lo; c < hi; c += cb) {
      const int64_t e = std::min(hi, c + cb);
      if (pb) gemm_packed(pa, 0, pa.panels(), *pb, c, e, out);  // (c: a multiple of 64)
      else gemm_packed(pa, 0, pa.panels(), B, N, c, e, out);
      if (done) (*done)(0, R, c, e);
    }
  };
  if (!pool || pool->threads() == 1 || R * N * K < 2 * kMinFlopsPerThread) cols(0, N);
  else pool->parallel_for((N + 63) / 64, 1, [&](int64_t b, int64_t e) { cols(b * 64, std::min(N, e * 64)); });
  return true;
}

// One product [M, K] x [K, N] of matmul_blas, whole: over gemm_pool, or on this thread when
// `serial` (a batch's products are spread over the pool instead).
void product_whole(const float* A, const float* B, float* C, int64_t M, int64_t N, int64_t K, bool serial, const PackedB* pb) {
  if (K == 0) return std::fill(C, C + M * N, 0.f);
  if (N == 1)
    return cblas_sgemv(CblasRowMajor, CblasNoTrans, static_cast<blasint>(M), static_cast<blasint>(K), 1.f, A, static_cast<blasint>(K), B, 1, 0.f, C, 1);
  if (product_packed(A, B, C, M, N, K, nullptr, serial ? nullptr : gemm_pool, pb)) return;
  if (serial) gemm_serial(false, false, M, N, K, 1.f, A, K, B, N, 0.f, C, N);
  else gemm_blas(false, false, M, N, K, 1.f, A, K, B, N, 0.f, C, N);
}

// The product [R, K] x [K, N] of a shared B, with done(r0, r1, c0, c1) over the pool: in blocks of
// columns, done after each, through product_packed where it applies (AVX-512); otherwise the whole
// product as matmul_blas computes it (product_whole), then done by rows. (sgemm by blocks of
// columns gave other bits than the whole product with OpenBLAS's Haswell kernels, which it runs on
// AMD EPYC Zen 3: 1115 of the 70,000 values of a [100, 24] x [24, 700] differed from the unfused
// MatMul's.)
void gemm_done(const float* A, const float* B, float* C, int64_t R, int64_t N, int64_t K, bool columns, const ProductDone& done, const PackedB* pb) {
  if (columns && N >= 128 && product_packed(A, B, C, R, N, K, &done, gemm_pool, pb)) return;
  product_whole(A, B, C, R, N, K, false, pb);
  rows_over_pool(gemm_pool, 0, R, N, done);
}

}  // namespace

void matmul_blas(const std::vector<int64_t>& as, const float* a, const std::vector<int64_t>& bs, const float* b, float* out, const PackedB* pb) {
  matmul_blas_done(as, a, bs, b, out, nullptr, false, pb);
}

void matmul_blas_done(const std::vector<int64_t>& as, const float* a, const std::vector<int64_t>& bs, const float* b, float* out,
                      const ProductDone& done, bool columns, const PackedB* pb) {
  // A packed B is the whole of a 2-D b (shared by every product of the batch).
  if (bs.size() != 2) pb = nullptr;
  // A batch of products that are each too small to be split over the pool (an attention's
  // per-head [197, 64] x [64, 197]) runs its products over it instead, each on one thread.
  const int64_t M = as.size() > 1 ? as[as.size() - 2] : 1, K = as.back(), N = bs.size() > 1 ? bs.back() : 1;
  const bool shared_b = product(std::span<const int64_t>(bs).first(bs.size() > 2 ? bs.size() - 2 : 0)) == 1;
  const int64_t nb = product(matmul_shape(as, bs)) / std::max<int64_t>(1, M * N);
  const bool small = M * N * K < kMinFlopsPerThread * 2 && nb * M * N * K >= kMinFlopsPerThread;
  ThreadPool* batches = !shared_b && small ? gemm_pool : nullptr;
  const std::function<void(const float*, const float*, float*, int64_t, int64_t, int64_t)> whole =
      [&done, columns, pb](const float* A, const float* B, float* C, int64_t R, int64_t N, int64_t K) { gemm_done(A, B, C, R, N, K, columns, done, pb); };
  matmul_driver<float>(
      as, a, bs, b, out,
      [batches, pb](const float* A, const float* B, float* C, int64_t M, int64_t N, int64_t K) {
        product_whole(A, B, C, M, N, K, batches != nullptr, pb);
      },
      batches, done ? &done : nullptr, done ? &whole : nullptr);
}

void matmul_naive(const std::vector<int64_t>& as, const float* a, const std::vector<int64_t>& bs, const float* b, float* out) {
  matmul_driver<float>(as, a, bs, b, out, mm_naive<float>);
}

// ---- erf on float vectors (transformers' GELU: x / 2 (1 + erf(x / sqrt 2))) ---------------------
//
// The rational approximation of Eigen and XLA: erf(x) = x P(x^2) / Q(x^2) on x clamped to [-4, 4]
// (erf(4) is 1 to within float's rounding), P of degree 6 and Q of degree 4 in x^2, the result
// clamped to [-1, 1]. Relative error a few ulp everywhere, also near 0 (erf(x) ~ 2x / sqrt(pi) there, which a 1 - erfc form loses),
// and no branches: W lanes at a time. NaN stays NaN (the clamp keeps it: max and min of GCC's
// vector extension are written as comparisons that pass a NaN through).

namespace {

// erf of each lane of v, in place.
template <class V>
[[gnu::always_inline]] inline void erf_lanes(V& v) {
  v = v > 4.f ? V{} + 4.f : v;
  v = v < -4.f ? V{} - 4.f : v;
  const V x2 = v * v;
  V p = x2 * -2.72614225801306e-10f + 2.77068142495902e-08f;
  p = p * x2 + -2.10102402082508e-06f;
  p = p * x2 + -5.69250639462346e-05f;
  p = p * x2 + -7.34990630326855e-04f;
  p = p * x2 + -2.95459980854025e-03f;
  p = p * x2 + -1.60960333262415e-02f;
  V q = x2 * -1.45660718464996e-05f + -2.13374055278905e-04f;
  q = q * x2 + -1.68282697438203e-03f;
  q = q * x2 + -7.37332916720468e-03f;
  q = q * x2 + -1.42647390514189e-02f;
  v = v * p / q;
  // Past about 3.7 the quotient can round to one ulp above 1: |erf| <= 1 as std::erf.
  v = v > 1.f ? V{} + 1.f : v;
  v = v < -1.f ? V{} - 1.f : v;
}

template <int W>
[[gnu::always_inline]] inline void erf_body(const float* x, float* y, int64_t n) {
  using V = typename Lanes<W>::F;
  int64_t i = 0;
  for (; i + W <= n; i += W) {
    V v;
    std::memcpy(&v, x + i, sizeof v);
    erf_lanes(v);
    std::memcpy(y + i, &v, sizeof v);
  }
  if (i < n) {
    V v{};
    std::memcpy(&v, x + i, static_cast<size_t>(n - i) * sizeof(float));
    erf_lanes(v);
    std::memcpy(y + i, &v, static_cast<size_t>(n - i) * sizeof(float));
  }
}

#if defined(__x86_64__) || defined(__i386__)
__attribute__((target("avx512f,avx512vl,avx512dq,avx2,fma"))) void erf_avx512(const float* x, float* y, int64_t n) { erf_body<16>(x, y, n); }
__attribute__((target("avx2,fma"))) void erf_avx2(const float* x, float* y, int64_t n) { erf_body<8>(x, y, n); }
#endif
void erf_portable(const float* x, float* y, int64_t n) { erf_body<4>(x, y, n); }

}  // namespace

void erf_f32(const float* x, float* y, int64_t n) {
#if defined(__x86_64__) || defined(__i386__)
  if (cpu_has_avx512()) return erf_avx512(x, y, n);
  if (cpu_has_avx2_fma()) return erf_avx2(x, y, n);
#endif
  erf_portable(x, y, n);
}

namespace {

// A node's constant 2-D float input 1 (a layer's weights) packed by pack_b at plan time (from its
// transpose for a Gemm's transB), and the constant's bytes, which the input must be at run time
// for the packing to stand for it; empty where the input is no such constant or pack_b declines.
struct PackedWeights {
  std::shared_ptr<const PackedB> packed;
  const void* source = nullptr;

  const PackedB* for_input(const void* b) const { return packed && b == source ? packed.get() : nullptr; }
};
PackedWeights pack_constant_right(const KernelInit& init, bool transposed) {
  const model::TensorData* w = init.constant_input(1);
  if (!w || w->dtype != DType::Float || w->shape.size() != 2 || static_cast<int64_t>(w->bytes.size()) != w->elements() * 4) return {};
  const size_t k = transposed ? 1 : 0;
  return {pack_b(reinterpret_cast<const float*>(w->bytes.data()), w->shape[k], w->shape[1 - k], transposed), w->bytes.data()};
}

// MatMul: float through matmul_blas (with its constant right operand packed once, where pack_b
// takes it), the other types through the naive product.
class MatMulKernel final : public Kernel {
 public:
  explicit MatMulKernel(PackedWeights weights) : weights_(std::move(weights)) {}
  const PackedB* packed_right(const void* b) const override { return weights_.for_input(b); }

  void run(KernelContext& ctx) const override {
    const Value &a = ctx.in(0), &b = ctx.in(1);
    if (a.dtype() != b.dtype()) ctx.fail("inputs " + ctx.input_name(0) + " and " + ctx.input_name(1) + " have different element types");
    Shape os;
    try {
      os = matmul_shape(a.dims(), b.dims());
    } catch (const std::invalid_argument& e) {
      ctx.fail(std::string("inputs ") + ctx.input_name(0) + " and " + ctx.input_name(1) + ": " + e.what());
    }
    Value& out = ctx.out(0);
    out.reset(a.dtype(), os);
    switch (a.dtype()) {
      case DType::Float:
        return matmul_blas(a.dims(), a.as<float>().data(), b.dims(), b.as<float>().data(), out.mutable_as<float>().data(), weights_.for_input(b.data()));
      case DType::Double:
        return matmul_driver<double>(a.dims(), a.as<double>().data(), b.dims(), b.as<double>().data(), out.mutable_as<double>().data(), mm_naive<double>);
      case DType::Int64:
        return matmul_driver<int64_t>(a.dims(), a.as<int64_t>().data(), b.dims(), b.as<int64_t>().data(), out.mutable_as<int64_t>().data(),
                                      mm_naive<int64_t>);
      case DType::Int32:
        return matmul_driver<int32_t>(a.dims(), a.as<int32_t>().data(), b.dims(), b.as<int32_t>().data(), out.mutable_as<int32_t>().data(),
                                      mm_naive<int32_t>);
      default: ctx.fail("element type " + std::string(model::dtype_name(a.dtype())) + " is not supported");
    }
  }

 private:
  PackedWeights weights_;
};

}  // namespace

void register_gemm(Registry& r) {
  r.add("MatMul", [](const KernelInit& init) -> std::unique_ptr<Kernel> { return std::make_unique<MatMulKernel>(pack_constant_right(init, false)); });
  r.add("Gemm", [](const KernelInit& init) {
    const bool ta = init.attrs().get_int("transA", 0) != 0, tb = init.attrs().get_int("transB", 0) != 0;
    const float alpha = init.attrs().get_float("alpha", 1.f), beta = init.attrs().get_float("beta", 1.f);
    // A constant B (a linear layer's weights, transposed or not) packed once, as MatMul's, for
    // products of A as it is (alpha 1): C is then added to the product instead of under it.
    const PackedWeights weights = !ta && alpha == 1.f ? pack_constant_right(init, tb) : PackedWeights{};
    return make_kernel([=](KernelContext& ctx) {
      ctx.expect_dtype(0, {DType::Float});
      ctx.expect_dtype(1, {DType::Float});
      ctx.expect_rank(0, 2);
      ctx.expect_rank(1, 2);
      const Value &a = ctx.in(0), &b = ctx.in(1);
      const int64_t M = ta ? a.dims()[1] : a.dims()[0], K = ta ? a.dims()[0] : a.dims()[1];
      const int64_t Kb = tb ? b.dims()[1] : b.dims()[0], N = tb ? b.dims()[0] : b.dims()[1];
      if (K != Kb)
        ctx.fail("inner dimensions differ: A " + ctx.input_name(0) + " " + shape_str(a.shape()) + (ta ? " (transposed)" : "") + ", B " +
                 ctx.input_name(1) + " " + shape_str(b.shape()) + (tb ? " (transposed)" : ""));
      Value& out = ctx.out(0);
      out.reset(DType::Float, {M, N});
      float* y = out.mutable_as<float>().data();
      const Value* c = ctx.opt(2);
      if (c && beta != 0.f && c->elements() > 0) {
        ctx.expect_dtype(2, {DType::Float});
        const Shape shapes[2] = {{M, N}, c->dims()};
        if (c->rank() > 2 || broadcast_shapes(ctx, shapes) != Shape{M, N})
          ctx.fail("C " + ctx.input_name(2) + " " + shape_str(c->shape()) + " does not broadcast to [" + std::to_string(M) + ", " + std::to_string(N) + "]");
      } else {
        c = nullptr;
      }
      // y = C broadcast, or (after the packed product) y += beta C.
      const auto put_c = [&](bool add) {
        const auto st = broadcast_strides(c->dims(), Shape{M, N});
        const float* pc = c->as<float>().data();
        for (int64_t i = 0; i < M; ++i)
          for (int64_t j = 0; j < N; ++j) {
            const float v = pc[i * st[0] + j * st[1]];
            float& o = y[i * N + j];
            o = add ? o + beta * v : v;
          }
      };
      if (const PackedB* packed = weights.for_input(b.data()); packed && packed->K == K && packed->N == N &&
          product_packed(a.as<float>().data(), b.as<float>().data(), y, M, N, K, nullptr, gemm_pool, packed)) {
        if (c) put_c(true);
        return;
      }
      float use_beta = 0.f;
      if (c) {
        put_c(false);
        use_beta = beta;
      }
      gemm_blas(ta, tb, M, N, K, alpha, a.as<float>().data(), a.dims()[1], b.as<float>().data(), b.dims()[1], use_beta, y, N);
      if (K == 0 && use_beta == 0.f) out.fill_zero();
    });
  });
}

}  // namespace nnxr::runtime
