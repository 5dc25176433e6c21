// Internal: the kernel interface, the registry, and helpers shared by the kernel families.
//
// A Kernel is created once per node when the Plan is built (attributes decoded then) and is
// immutable afterwards: run() is const and may be called from several Sessions at once. All
// per-run data lives in the KernelContext (inputs, outputs, thread pool).
#pragma once

#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "model/graph.h"
#include "model/half.h"
#include "model/runtime/compute.h"
#include "model/runtime/runtime.h"
#include "model/runtime/thread_pool.h"
#include "model/runtime/value.h"

namespace nnxr::runtime {

using model::DType;
using Shape = std::vector<int64_t>;

// "'name' (OpType)"
std::string node_label(const model::Node& node);
std::string quoted(std::string_view s);
std::string shape_str(std::span<const int64_t> s);

// What a kernel factory sees when the Plan is built.
struct KernelInit {
  const model::Graph& graph;
  const model::Node& node;
  int64_t opset;

  const model::Attributes& attrs() const { return node.attributes; }
  [[noreturn]] void fail(const std::string& msg) const;
  // Constant data of input i (initializer or Constant output), or nullptr.
  const model::TensorData* constant_input(size_t i) const;
  size_t input_count() const { return node.inputs.size(); }
  bool has_input(size_t i) const { return i < node.inputs.size() && node.inputs[i] != model::kNone; }
};

class KernelContext {
 public:
  KernelContext(const model::Graph& graph, const model::Node& node, std::span<const Value*> inputs,
                std::span<Value*> outputs, ThreadPool& pool)
      : graph_(graph), node_(node), inputs_(inputs), outputs_(outputs), pool_(pool) {}

  const model::Node& node() const { return node_; }
  size_t input_count() const { return inputs_.size(); }
  size_t output_count() const { return outputs_.size(); }
  bool has_input(size_t i) const { return i < inputs_.size() && inputs_[i] != nullptr; }
  bool has_output(size_t i) const { return i < outputs_.size() && outputs_[i] != nullptr; }
  // Required input: throws "missing input" when omitted.
  const Value& in(size_t i) const;
  const Value* opt(size_t i) const { return has_input(i) ? inputs_[i] : nullptr; }
  // Output i; throws when the node has no such output.
  Value& out(size_t i) const;

  // The activation fused into this node by the Plan (Conv, InstanceNormalization), or null; its outputs (one, two
  // for SiLU) must be written by the kernel, unless it declines (an Add whose addend turns out not
  // to be shaped like the output): the fused nodes then run on their own.
  const Epilogue* epilogue() const { return epilogue_; }
  Value& epilogue_out(int k) const { return *epilogue_out_[k]; }
  const Value* epilogue_addend() const { return epilogue_addend_; }  // Add's other input (null: none)
  void set_epilogue(const Epilogue* e, Value* z1, Value* z2, const Value* addend) {
    epilogue_ = e;
    epilogue_out_[0] = z1;
    epilogue_out_[1] = z2;
    epilogue_addend_ = addend;
  }
  void decline_epilogue() { epilogue_declined_ = true; }
  bool epilogue_declined() const { return epilogue_declined_; }
  // The fused activation's outputs for a float kernel whose output 0 is reset already, each shaped
  // like it (none when nothing is fused); an Add whose addend is not a float tensor shaped like
  // output 0 is declined (it may broadcast: the Add then runs on its own) and none returned.
  EpilogueOut fused_epilogue();

  std::string input_name(size_t i) const;
  std::string output_name(size_t i) const;
  ThreadPool& pool() const { return pool_; }

  // The limits of the run this node is part of (Loop, Scan and If pass them to their bodies and
  // call check_run() at every iteration).
  const RunOptions& run_options() const { return *run_options_; }
  void set_run_options(const RunOptions* o) { run_options_ = o; }
  // Throws CancelledError when the run was cancelled or passed its deadline.
  void check_run() const { run_options_->check(); }

  [[noreturn]] void fail(const std::string& msg) const;
  // Checks input i's dtype is one of `allowed`.
  void expect_dtype(size_t i, std::initializer_list<DType> allowed) const;
  void expect_rank(size_t i, size_t rank) const;
  void expect_min_rank(size_t i, size_t rank) const;

 private:
  const model::Graph& graph_;
  const model::Node& node_;
  std::span<const Value*> inputs_;
  std::span<Value*> outputs_;
  ThreadPool& pool_;
  const Epilogue* epilogue_ = nullptr;
  Value* epilogue_out_[2] = {nullptr, nullptr};
  const Value* epilogue_addend_ = nullptr;
  bool epilogue_declined_ = false;
  static inline const RunOptions kNoLimits{};
  const RunOptions* run_options_ = &kNoLimits;
};

class Kernel {
 public:
  virtual ~Kernel() = default;
  virtual void run(KernelContext& ctx) const = 0;
  // A MatMul's constant right operand packed at plan time (pack_b), which the Session's MatMul
  // with a chain reads too, when `b` (the right operand's bytes at run time) is that constant;
  // null otherwise, and for every other kernel.
  virtual const PackedB* packed_right(const void* /*b*/) const { return nullptr; }
};

template <class F>
class FnKernel final : public Kernel {
 public:
  explicit FnKernel(F f) : f_(std::move(f)) {}
  void run(KernelContext& ctx) const override { f_(ctx); }

 private:
  F f_;
};
template <class F>
std::unique_ptr<Kernel> make_kernel(F f) {
  return std::make_unique<FnKernel<F>>(std::move(f));
}

using KernelFactory = std::function<std::unique_ptr<Kernel>(const KernelInit&)>;

struct KernelEntry {
  std::string domain;
  std::string op_type;
  int64_t min_opset = 1;
  int64_t max_opset = 1 << 30;
  // Float16 inputs are converted to float32 around the kernel (outputs converted back).
  bool upcast_f16 = true;
  KernelFactory factory;
};

class Registry {
 public:
  // `op_type` in the "" domain for every opset.
  void add(std::string op_type, KernelFactory f, bool upcast_f16 = true);
  void add(KernelEntry e) { entries_.push_back(std::move(e)); }
  const KernelEntry* find(std::string_view domain, std::string_view op_type, int64_t opset) const;
  bool has(std::string_view domain, std::string_view op_type) const;
  const std::vector<KernelEntry>& entries() const { return entries_; }

 private:
  std::vector<KernelEntry> entries_;
};

// The registry of all kernels; immutable after first use.
const Registry& registry();

// Kernel families (each kernels_*.cpp defines one).
void register_elementwise(Registry& r);
void register_activation(Registry& r);
void register_gemm(Registry& r);
void register_conv(Registry& r);
void register_pool(Registry& r);
void register_norm(Registry& r);
void register_reduce(Registry& r);
void register_shape(Registry& r);
void register_index(Registry& r);
void register_misc(Registry& r);
void register_rnn(Registry& r);
void register_loss(Registry& r);

// ---- helpers ---------------------------------------------------------------------------------

int64_t product(std::span<const int64_t> dims);
// Normalises a possibly negative axis against `rank`; fails when out of range.
template <class Ctx>
int64_t norm_axis(const Ctx& ctx, int64_t axis, int64_t rank, std::string_view what = "axis") {
  if (axis < -rank || axis >= rank)
    ctx.fail(std::string(what) + " " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  return axis < 0 ? axis + rank : axis;
}

// Integer contents of a 0-D or 1-D int64/int32 tensor (shapes, axes, pads...).
std::vector<int64_t> read_ints(const KernelContext& ctx, size_t input);
// Float/double/int contents as double (scalars for Clip, ConstantOfShape values, ...).
double read_scalar(const KernelContext& ctx, size_t input);

// Multidirectional (numpy) broadcast of shapes; fails naming both inputs.
Shape broadcast_shapes(const KernelContext& ctx, std::span<const Shape> shapes);

// Strides (in elements) of `shape` broadcast to an output of rank `rank` (0 on broadcast dims).
std::vector<int64_t> broadcast_strides(std::span<const int64_t> in_shape, std::span<const int64_t> out_shape);

// Contiguous row-major strides.
std::vector<int64_t> strides_of(std::span<const int64_t> shape);

// The sum (in double) and the maximum (NaN when any value is) of n contiguous floats, on the
// widest set the CPU has (kernels_pool.cpp): GlobalAveragePool's and GlobalMaxPool's planes, and
// the reductions over an innermost run of dims.
double plane_sum(const float* x, int64_t n);
double plane_max(const float* x, int64_t n);

// fp16 <-> fp32
using model::half_to_float;
using model::float_to_half;

// Copies elements of size `elem` (1, 2, 4, 8 or more bytes).
inline void copy_elem(std::byte* dst, const std::byte* src, size_t elem);

// Element-type sets for dispatch_types (combine with |).
inline constexpr unsigned kFloats = 1;      // float, double
inline constexpr unsigned kCommonInts = 2;  // int64, int32, int8, uint8
inline constexpr unsigned kOtherInts = 4;   // int16, uint64, uint32, uint16
inline constexpr unsigned kBool = 8;        // bool as bool
inline constexpr unsigned kStorage = 16;    // float16 and bfloat16 as uint16_t, bool as uint8_t (bits only)

// Calls f(T{}) with the C++ type of dtype `t` when `t` is in `Set`; otherwise fails with
// "element type X <unsupported>".
template <unsigned Set, class Ctx, class F>
decltype(auto) dispatch_types(const Ctx& ctx, DType t, F&& f, std::string_view unsupported = "is not supported by this kernel") {
  switch (t) {
    case DType::Float: if constexpr ((Set & kFloats) != 0) return f(float{}); break;
    case DType::Double: if constexpr ((Set & kFloats) != 0) return f(double{}); break;
    case DType::Int64: if constexpr ((Set & kCommonInts) != 0) return f(int64_t{}); break;
    case DType::Int32: if constexpr ((Set & kCommonInts) != 0) return f(int32_t{}); break;
    case DType::Int8: if constexpr ((Set & kCommonInts) != 0) return f(int8_t{}); break;
    case DType::UInt8: if constexpr ((Set & kCommonInts) != 0) return f(uint8_t{}); break;
    case DType::Int16: if constexpr ((Set & kOtherInts) != 0) return f(int16_t{}); break;
    case DType::UInt64: if constexpr ((Set & kOtherInts) != 0) return f(uint64_t{}); break;
    case DType::UInt32: if constexpr ((Set & kOtherInts) != 0) return f(uint32_t{}); break;
    case DType::UInt16: if constexpr ((Set & kOtherInts) != 0) return f(uint16_t{}); break;
    case DType::Bool:
      if constexpr ((Set & kBool) != 0) return f(bool{});
      else if constexpr ((Set & kStorage) != 0) return f(uint8_t{});
      break;
    case DType::Float16:
    case DType::BFloat16: if constexpr ((Set & kStorage) != 0) return f(uint16_t{}); break;
    default: break;
  }
  ctx.fail(std::string("element type ") + std::string(model::dtype_name(t)) + " " + std::string(unsupported));
}

// The numeric dtypes the common arithmetic kernels support.
template <class Ctx, class F>
decltype(auto) dispatch_numeric(const Ctx& ctx, DType t, F&& f) {
  return dispatch_types<kFloats | kCommonInts>(ctx, t, std::forward<F>(f));
}
template <class Ctx, class F>
decltype(auto) dispatch_float(const Ctx& ctx, DType t, F&& f) {
  return dispatch_types<kFloats>(ctx, t, std::forward<F>(f), "is not supported by this kernel (float only)");
}

inline void copy_elem(std::byte* dst, const std::byte* src, size_t elem) {
  switch (elem) {
    case 1: *dst = *src; break;
    case 2: std::memcpy(dst, src, 2); break;
    case 4: std::memcpy(dst, src, 4); break;
    case 8: std::memcpy(dst, src, 8); break;
    default: std::memcpy(dst, src, elem); break;
  }
}

// Size of `v`'s elements; fails the node for types without a fixed size (strings).
inline size_t esize(const KernelContext& ctx, const Value& v) {
  const size_t s = model::dtype_size(v.dtype());
  if (s == 0) ctx.fail("element type " + std::string(model::dtype_name(v.dtype())) + " is not supported");
  return s;
}

// out[i] = op(a[i]) for every element, split over the pool for large tensors.
template <class T, class Op>
void unary_loop(KernelContext& ctx, const Value& a, Value& out, Op op) {
  out.reset(a.dtype(), a.dims());
  const T* x = reinterpret_cast<const T*>(a.data());
  T* y = reinterpret_cast<T*>(out.mutable_data());
  const int64_t n = a.elements();
  auto body = [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) y[i] = op(x[i]);
  };
  if (n >= (1 << 16)) ctx.pool().parallel_for(n, 1 << 14, body);
  else body(0, n);
}

}  // namespace nnxr::runtime
