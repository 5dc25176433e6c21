// Internal: the optimised compute routines and their naive references (tests compare the two).
// All pointers are dense row-major float32; routines do not allocate more than their scratch.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "model/runtime/thread_pool.h"

namespace nnxr::runtime {

// Whether the kernels' active instruction set (active_isa() in runtime.h: the CPU's widest unless
// lowered) includes AVX2 + FMA, or AVX-512 (F, BW, VL, DQ): kernels with such a variant pick it
// then. Cheap to call in loops.
bool cpu_has_avx2_fma();
bool cpu_has_avx512();

// C[M,N] = alpha * op(A) * op(B) + beta * C, op = transpose when ta/tb. lda/ldb/ldc are the
// row strides of A, B, C as stored. OpenBLAS runs single-threaded; a large product is split into
// row or column blocks over the pool set with GemmPool on this thread (one set of threads for the
// whole runtime: OpenBLAS's own workers would compete with the pool's for the same cores).
void gemm_blas(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda, const float* B, int64_t ldb,
               float beta, float* C, int64_t ldc);
// While alive, gemm_blas() calls on this thread use `pool` (Session::run sets it).
class GemmPool {
 public:
  explicit GemmPool(ThreadPool& pool);
  ~GemmPool();
  GemmPool(const GemmPool&) = delete;
  GemmPool& operator=(const GemmPool&) = delete;

 private:
  ThreadPool* previous_;
};

// The same product on the calling thread only (for callers that split the work themselves).
void gemm_serial(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda, const float* B, int64_t ldb,
                 float beta, float* C, int64_t ldc);

void gemm_naive(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda, const float* B, int64_t ldb,
                float beta, float* C, int64_t ldc);

// y[i] = 1 / (1 + exp(-x[i])) for n floats, four at a time (about 2 ulp); the reference computes
// in double.
void sigmoid_f32(const float* x, float* y, int64_t n);
void sigmoid_naive(const float* x, float* y, int64_t n);

// Softmax of one contiguous row of n floats (y may not be x): exp(x - max) / sum, exp to about
// 2 ulp (exp_lanes), W lanes at a time; NaN in the row gives NaN as std::exp does. The reference
// computes in double.
void softmax_row_f32(const float* x, float* y, int64_t n);
void softmax_row_naive(const float* x, float* y, int64_t n);
// softmax_row_f32 on `rows` contiguous rows of n floats. Rows of up to 8 floats (a detector's
// class scores) run one row per vector lane, the sum taken in float.
void softmax_rows_f32(const float* x, float* y, int64_t rows, int64_t n);

// tanh(x) to a few ulp, faster than libm's (the recurrent cells' activation). The reference is
// std::tanh.
float tanh_fast(float x);
// LSTM's recurrent product: R [dirs, 4H, H] packed for lstm_recurrent (transposed in blocks of 16
// units, zeros past H: H 4 Hp floats a direction, Hp = H rounded up to 16), and for one
// direction's part rt (pack + d H 4 Hp) gh[k Hp + j] = sum_i h[i] R[k H + j][i] for the four
// gates k and units j in [j0, j1) (j0 a multiple of 16; gh has 4 Hp floats, written up to j1
// rounded up to 16).
std::vector<float> lstm_pack_recurrent(const float* R, int64_t dirs, int64_t H);
void lstm_recurrent(const float* rt, int64_t H, const float* h, int64_t j0, int64_t j1, float* gh);
// erf over n floats (y may be x), vectorised: a rational approximation, a few ulp (kernels_gemm.cpp).
void erf_f32(const float* x, float* y, int64_t n);
// tanh over n floats (y may be x): the polynomial of tanh_fast near 0, 2 sigmoid(2x) - 1 elsewhere
// (vectorised through sigmoid_f32; a few ulp).
void tanh_f32(const float* x, float* y, int64_t n);

// An element-wise chain: float nodes that the Plan computes together, in one pass over their
// common shape [rows, n] (a transformer's bias + GELU after a MatMul, the scale and shift of a
// LayerNorm), each output still written in full. Step k reads the tensors of the graph and the
// outputs of steps before it, block by block, so that each intermediate is read back while it is
// still in the cache. The results are those of the separate kernels, bit for bit: one IEEE
// operation per element, and erf_f32 for Erf.
struct ChainArg {
  // Full: laid out like the output; Column: one value per column [n]; Row: one per row [rows];
  // Scalar: one value.
  enum class Kind { Full, Column, Row, Scalar };
  Kind kind = Kind::Full;
  const float* p = nullptr;
  int from = -1;  // the earlier step of the chain whose output this is (-1: none)
};
struct ChainStep {
  // out = a op b; Erf: erf(a) (a Full); Square: a * a (Pow with the constant exponent 2); Relu:
  // max(a, 0) as the Relu kernel; Softmax: each row of a (the last axis, n > 8) by softmax_row_f32
  // as the Softmax kernel (a chain with a Softmax works on whole rows).
  enum class Op { Add, Sub, Mul, Div, Erf, Square, Relu, Softmax };
  Op op = Op::Add;
  ChainArg a, b;
  float* out = nullptr;  // [rows, n]
  // Read by no node outside the chain: each block computed into a scratch block, which the steps
  // after it read, and streamed out past the cache (no read for ownership of its lines).
  bool staged = false;
};
// Runs `steps` in order on each block of [rows, n], split over `pool` (null: this thread) when
// large. A step's Full arguments may be the outputs of the steps before it.
void chain_run(std::span<const ChainStep> steps, int64_t rows, int64_t n, ThreadPool* pool);
// The same on rows [r0, r1) and columns [c0, c1) only, on this thread (a product's block as it is
// computed). Columns [0, n) unless no step takes whole rows (Softmax).
void chain_block(std::span<const ChainStep> steps, int64_t r0, int64_t r1, int64_t c0, int64_t c1, int64_t n);
// Whether a step of the chain works on whole rows (Softmax).
bool chain_whole_rows(std::span<const ChainStep> steps);

// Batched broadcasting MatMul of float tensors with numpy semantics (1-D operands promoted).
// Returns the output shape; `out` is resized. Throws std::invalid_argument on bad shapes.
std::vector<int64_t> matmul_shape(const std::vector<int64_t>& a, const std::vector<int64_t>& b);
struct PackedB;
// pb, unless null: b packed by pack_b (b 2-D, its [K, N]), which the products then read.
void matmul_blas(const std::vector<int64_t>& as, const float* a, const std::vector<int64_t>& bs, const float* b, float* out, const PackedB* pb = nullptr);
// matmul_blas with a hook: done(r0, r1, c0, c1) runs on the thread that computed rows [r0, r1)
// and columns [c0, c1) of the output seen as [rows, N], right after it wrote them (while they are
// in its cache), each element once; the calls are serial work, spread over the pool as the
// product is. Blocks of whole rows, or with `columns` blocks of columns where AVX-512's packed
// product computes it (elsewhere the whole product first, then rows). The product's bits are
// matmul_blas's.
using ProductDone = std::function<void(int64_t, int64_t, int64_t, int64_t)>;
void matmul_blas_done(const std::vector<int64_t>& as, const float* a, const std::vector<int64_t>& bs, const float* b, float* out,
                      const ProductDone& done, bool columns, const PackedB* pb = nullptr);
void matmul_naive(const std::vector<int64_t>& as, const float* a, const std::vector<int64_t>& bs, const float* b, float* out);

// An activation computed in the output pass of the node that produces its input (the Plan fuses
// a Conv with a following Relu, Clip, LeakyRelu or Sigmoid, Sigmoid with the Mul of SiLU, or an
// Add of a tensor shaped like y: a residual connection). Both tensors are written: the
// pre-activation y (every tensor is kept) and z1 = act(y); for SiLU also z2 = y * z1; for Add
// z1 = y + addend. The results equal those of the separate kernels.
struct Epilogue {
  enum class Kind { Relu, Clip, LeakyRelu, Sigmoid, SiLU, Add };
  Kind kind = Kind::Relu;
  float lo = 0, hi = 0;  // Clip
  float alpha = 0;       // LeakyRelu
  int outputs() const { return kind == Kind::SiLU ? 2 : 1; }
};
// Where an epilogue writes (and, for Add, what it reads): arrays laid out like y (null epi: none).
struct EpilogueOut {
  const Epilogue* epi = nullptr;
  float* z1 = nullptr;
  float* z2 = nullptr;
  const float* addend = nullptr;
};
// y[i] += bias (when bias_add), then the epilogue of y[i] into out.z1/z2 at `offset`.
void epilogue_apply(const EpilogueOut& out, float* y, int64_t offset, int64_t n, bool bias_add, float bias);
// The reference: in double, one element at a time (addend: Add's, laid out like y).
void epilogue_naive(const Epilogue& e, const float* y, float* z1, float* z2, int64_t n, const float* addend = nullptr);

// A [M, K] packed for gemm_packed: panels of kPanelRows rows, each stored k-major (row r of panel
// p at data[(p * K + k) * kPanelRows + r]; rows past M are zero). A Conv packs its weights once.
constexpr int64_t kPanelRows = 6;
struct LaneCache;  // the same rows for gemm_lanes, made at its first use (gemm_packed.h)
struct PackedA {
  int64_t M = 0, K = 0;
  std::vector<float> data;
  std::shared_ptr<LaneCache> lanes;
  int64_t panels() const { return (M + kPanelRows - 1) / kPanelRows; }
  const float* panel(int64_t p) const { return data.data() + p * K * kPanelRows; }
};
PackedA pack_a(const float* A, int64_t M, int64_t K, int64_t lda);

// Whether gemm_packed runs on this CPU (AVX2 + FMA); callers fall back to gemm_serial/gemm_blas.
bool gemm_packed_available();

// Where gemm_packed writes: C [M, N] with row stride ldc; bias [M] or null; the epilogue of
// element (m, n) goes to act->z1/z2 at act_offset + m * ldc + n (act or act->epi null: none).
struct GemmOut {
  float* C = nullptr;
  int64_t ldc = 0;
  const float* bias = nullptr;
  const EpilogueOut* act = nullptr;
  int64_t act_offset = 0;
};
// Panels [p0, p1) and columns [n0, n1) of C = A · B + bias, then the epilogue, on the calling
// thread. B is [K, N] with row stride ldb and is read in place. Only where gemm_packed_available().
void gemm_packed(const PackedA& a, int64_t p0, int64_t p1, const float* B, int64_t ldb, int64_t n0, int64_t n1, const GemmOut& out);

// A constant right operand B [K, N] (a MatMul's weights) packed once for gemm_packed's AVX-512
// body: strips of kStripCols columns, each [K][kStripCols] (columns past N zero; every strip on a
// cache line), which a tile reads front to back. Read in place, B's rows are a whole weight row
// apart, and the tiles over few columns copied each strip out of them first. pack_b returns null
// where that body does not run (no AVX-512, or N < kStripCols). Like the weights themselves (and a
// Conv's packed weights), not counted against the memory ceiling, which bounds what a run holds.
constexpr int64_t kStripCols = 32;
struct PackedB {
  int64_t K = 0, N = 0;
  std::vector<float> storage;
  size_t offset = 0;  // floats from storage's start to the first strip (on a cache line)
  // The strip holding column j (a multiple of kStripCols) and the next kStripCols - 1.
  const float* strip(int64_t j) const { return storage.data() + offset + j / kStripCols * K * kStripCols; }
};
// `transposed`: B given as its transpose [N, K] (a Gemm's transB).
std::shared_ptr<const PackedB> pack_b(const float* B, int64_t K, int64_t N, bool transposed = false);
// gemm_packed with B packed (pack_b): columns [n0, n1), n0 a multiple of kStripCols.
void gemm_packed(const PackedA& a, int64_t p0, int64_t p1, const PackedB& b, int64_t n0, int64_t n1, const GemmOut& out);

// Products with few columns (the 7x7 and 14x14 planes of the last stages) with the rows in the
// vector lanes: tiles of 32 rows x 14 or 7 columns, which 49 and 196 columns fill exactly
// (gemm_packed's 32-column tiles fill 49 of 64 lanes there), stored as rows through an
// in-register transpose. AVX-512 only.
// Whether it beats gemm_packed for M rows x N columns x K:
bool gemm_lanes_wins(int64_t M, int64_t N, int64_t K);
constexpr int64_t kLaneRows = 32;
inline int64_t lane_blocks(int64_t M) { return (M + kLaneRows - 1) / kLaneRows; }
// Row blocks [b0, b1) (rows [32 b0, min(32 b1, M))) and columns [n0, n1) of C = A · B + bias and
// the epilogue, as gemm_packed writes them. Only where gemm_lanes_wins().
void gemm_lanes(const PackedA& a, int64_t b0, int64_t b1, const float* B, int64_t ldb, int64_t n0, int64_t n1, const GemmOut& out);

// Where gemm_packed_f16 writes: C [M, N] in float16 with row stride ldc; bias [M] (float) or null;
// relu, laid out like C, gets max(C, 0) (null: none).
struct GemmOutF16 {
  uint16_t* C = nullptr;
  int64_t ldc = 0;
  const float* bias = nullptr;
  uint16_t* relu = nullptr;
};
// gemm_packed with B and C in float16: each element of B converted to float in registers as it
// is loaded, each element of C rounded once to float16 (to nearest even) as it is stored. The
// same products in the same order as gemm_packed on B converted to float. Only where
// gemm_packed_available().
void gemm_packed_f16(const PackedA& a, int64_t p0, int64_t p1, const uint16_t* B, int64_t ldb, int64_t n0, int64_t n1, const GemmOutF16& out);

// Convolution geometry: X [N, C, *in], W [M, C/group, *kernel], Y [N, M, *out].
struct ConvGeom {
  int64_t N = 1, C = 1, M = 1, group = 1;
  std::vector<int64_t> in, kernel, out, stride, dilation, pad_begin, pad_end;
  int64_t spatial() const { return static_cast<int64_t>(in.size()); }
};
// Output dims from input, kernel, strides, dilations and pads (floor; ceil for pooling).
int64_t conv_out_dim(int64_t in, int64_t kernel, int64_t stride, int64_t dilation, int64_t pad_total, bool ceil_mode = false);

// Any spatial rank. B may be null.
void conv_naive(const ConvGeom& g, const float* X, const float* W, const float* B, float* Y);
// The weights W [M, C/group, kernel...] packed for gemm_packed, one PackedA per group.
std::vector<PackedA> pack_conv_weights(const float* W, int64_t M, int64_t group, int64_t Kdim);
// Spatial rank 1 or 2: im2col (in column blocks; none for pointwise) + gemm_packed, or sgemm
// without AVX2. `packed`: the weights from pack_conv_weights (null: packed per call).
void conv_im2col(const ConvGeom& g, const float* X, const float* W, const float* B, float* Y, ThreadPool& pool,
                 const EpilogueOut& act = {}, const std::vector<PackedA>* packed = nullptr);
// Float16 convolution: X, Y and relu (max(Y, 0), or null) hold float16 bits; the weights are
// packed floats (pack_conv_weights of W widened), B floats or null. Spatial rank 1 or 2, on a CPU
// with gemm_packed (conv_f16_applies; depthwise convolutions are not taken). Computes exactly
// what conv_im2col computes on X widened to float, each output rounded once to float16.
bool conv_f16_applies(const ConvGeom& g);
void conv_im2col_f16(const ConvGeom& g, const uint16_t* X, const std::vector<PackedA>& packed, const float* B, uint16_t* Y, uint16_t* relu,
                     ThreadPool& pool);
// Spatial rank 1 or 2, group == C == M: a direct kernel.
void conv_depthwise(const ConvGeom& g, const float* X, const float* W, const float* B, float* Y, ThreadPool& pool,
                    const EpilogueOut& act = {});
// Spatial rank 2, group == C == M, a 3x3 or 5x5 kernel (AVX2 + FMA or AVX-512) with dilation 1
// and stride 1 or 2 (both dims), padding under K: from the input rows or zero-padded row copies,
// with the epilogue in registers.
bool conv_depthwise3x3_applies(const ConvGeom& g);
void conv_depthwise3x3(const ConvGeom& g, const float* X, const float* W, const float* B, float* Y, ThreadPool& pool,
                       const EpilogueOut& act = {});
// Spatial rank 2, group 1, C <= 4 input channels, a 3x3 kernel with dilation 1 and stride 1 or 2
// (both dims), at least 8 output columns, on AVX2 + FMA or AVX-512: direct, 16 outputs x 16
// output channels in registers on AVX-512, 16 x 6 on AVX2 (conv_direct_avx2) (the RGB stems of
// image networks, where im2col + GEMM is bound by the column matrix).
bool conv_direct_applies(const ConvGeom& g);
void conv_direct(const ConvGeom& g, const float* X, const float* W, const float* B, float* Y, ThreadPool& pool, const EpilogueOut& act = {});
void conv_direct_avx2(const ConvGeom& g, const float* X, const float* W, const float* B, float* Y, ThreadPool& pool, const EpilogueOut& act);
// Pointwise (1x1, stride 1, no padding), group 1, C <= 32 input channels, M >= 8, planes of 256
// or more, on AVX2 + FMA or AVX-512: 16 columns x 16 output channels in registers on AVX-512, 16
// x 6 on AVX2 (conv_pointwise_thin_avx2), x read in place (thin-K layers, where the 6-row GEMM
// panels fill 16 or 32 channels poorly and each short tile's stores dominate).
bool conv_pointwise_thin_applies(const ConvGeom& g);
// conv_pointwise_thin's chunk of columns for a plane of P: 256 (x's part, C x 1 KB, stays in L1
// while every block of channels passes), or, when that makes fewer than 8 chunks a thread and not
// as many for each, the size (a multiple of 16) that does: SqueezeNet's 27x27 expand layers ran
// as 3 chunks of 256 on 2 threads, one of which did two.
inline int64_t pointwise_chunk(int64_t P, int64_t threads) {
  constexpr int64_t kChunk = 256;
  int64_t chunks = (P + kChunk - 1) / kChunk;
  if (threads < 2 || chunks >= 8 * threads || chunks % threads == 0) return kChunk;
  chunks += threads - chunks % threads;
  return ((P + chunks - 1) / chunks + 15) / 16 * 16;
}
void conv_pointwise_thin(const ConvGeom& g, const float* X, const float* W, const float* B, float* Y, ThreadPool& pool,
                         const EpilogueOut& act = {});
void conv_pointwise_thin_avx2(const ConvGeom& g, const float* X, const float* W, const float* B, float* Y, ThreadPool& pool,
                              const EpilogueOut& act);
// Spatial rank 2, group 1, stride 1 (or 2 without dilation and C x kh x kw <= 144), dilation up
// to 8, kernels up to 9x9 (not 1x1) with C x kh x kw <= 1152 (<= 2592 for 3 output channels or
// fewer), output rows of 16 columns or more in 16-column vectors at least 3/4 used (under 56
// in planes of 256 outputs or more; on AVX2 rows of 56 or more in nearly whole tiles of 32, and
// under 56 in 8-column vectors at least 7/8 used), on AVX2 + FMA or AVX-512:
// from zero-padded copies of each band's input rows, R output channels x 32 columns in registers
// on AVX-512, up to 6 x 16 on AVX2 (conv_rows_avx2), and M <= 3 channels x 80-96 columns on
// AVX-512, x 32-64 on AVX2 (no im2col matrix). And every layer lane_tiles_apply() takes.
bool conv_rows_applies(const ConvGeom& g);
// conv_rows' weights and bias as its AVX-512 tiles and AVX2's lane tiles read them
// (conv_rows_avx512.cpp), with the W and layout they were packed from.
struct ConvRowsWeights;
// Kept by a Conv node whose weights are constant: conv_rows packs them on the first call and
// reuses them while W (the same address), the layout and the bias (the same values) are the
// same, instead of packing on every call.
struct ConvRowsCache {
  std::mutex mutex;
  std::shared_ptr<const ConvRowsWeights> packed;
};
void conv_rows(const ConvGeom& g, const float* X, const float* W, const float* B, float* Y, ThreadPool& pool, const EpilogueOut& act = {},
               ConvRowsCache* cache = nullptr);
void conv_rows_avx2(const ConvGeom& g, const float* X, const float* W, const float* B, float* Y, ThreadPool& pool, const EpilogueOut& act);
// Whether conv_rows takes a layer in lane tiles (output channels in the lanes: 3x3, stride 1, 16
// input channels or more, output channels filling at least 3/4 of their blocks of 16 on AVX-512,
// of 8 on AVX2 with K up to 1152; any row width), and the AVX2 lane tiles themselves: wp and bias
// packed by conv_rows as [block][K][8] and [block][8] (conv_rows_avx2.cpp).
bool lane_tiles_apply(const ConvGeom& g);
void conv_lanes_avx2(const ConvGeom& g, const float* X, const float* wp, const float* bias, float* Y, ThreadPool& pool, const EpilogueOut& act);
// dst[i] = src[2 i] for i < n (reads no further than src[2 (n - 1)]): the stride-2 gather of im2col.
void copy_every_other(const float* src, float* dst, int64_t n);
// Picks one of the above.
void conv_auto(const ConvGeom& g, const float* X, const float* W, const float* B, float* Y, ThreadPool& pool,
               const EpilogueOut& act = {}, const std::vector<PackedA>* packed = nullptr, ConvRowsCache* rows_cache = nullptr);
// The k x k (k = 2 or 3) stride-2 max pool of `planes` planes of H x W whose windows all lie inside
// them, as MaxPool runs it (one thread; x86 with AVX2 + FMA only): AVX-512 sixteen outputs a
// step, AVX2 eight.
void max_pool_s2_float(const float* x, int64_t planes, int64_t k, int64_t H, int64_t W, float* y, int64_t OH, int64_t OW);

// The mean and population variance of x[0, n) in double, in one read pass (two when the first
// values are far from the mean): sums of x - k and (x - k)^2 in double lanes, k a float near the
// mean (each term exact, only the additions round: as exact as a two-pass sum in double).
void plane_moments(const float* x, int64_t n, double& mean, double& var);
// y[i] = x[i] * a + b (FMA where the CPU has it), and act's epilogue of y at `offset` (y is then
// streamed past the cache where the vector kernels can).
void scale_shift(const float* x, float* y, int64_t n, float a, float b, const EpilogueOut& act = {}, int64_t offset = 0);

// ConvTranspose: X [N, C, *in], W [C, M/group, *kernel], Y [N, M, *out]; geometry fields mean
// the same (C input channels, M output channels, `out` the output dims).
void conv_transpose_naive(const ConvGeom& g, const float* X, const float* W, const float* B, float* Y);
void conv_transpose_gemm(const ConvGeom& g, const float* X, const float* W, const float* B, float* Y, ThreadPool& pool);

}  // namespace nnxr::runtime
