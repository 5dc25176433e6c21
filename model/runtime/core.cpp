// Value, KernelContext, the registry and the shared helpers.
#include <algorithm>
#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdio>
#include <cmath>
#include <limits>
#include <new>
#include <stdexcept>

#if defined(__linux__)
#include <sys/mman.h>
#endif

#include "model/size_string.h"
#include "model/runtime/compute.h"
#include "model/runtime/kernel.h"
#include "model/runtime/kernels_more.h"

namespace nnxr::runtime {

// ---- memory ceiling --------------------------------------------------------------------------

namespace {
std::atomic<uint64_t> g_memory_limit{0};
std::atomic<uint64_t> g_memory_held{0};
}  // namespace

void set_memory_limit(uint64_t bytes) { g_memory_limit.store(bytes, std::memory_order_relaxed); }
uint64_t memory_limit() { return g_memory_limit.load(std::memory_order_relaxed); }
uint64_t memory_held() { return g_memory_held.load(std::memory_order_relaxed); }

void memory_acquire(uint64_t bytes) {
  const uint64_t held = g_memory_held.fetch_add(bytes, std::memory_order_relaxed) + bytes;
  const uint64_t limit = g_memory_limit.load(std::memory_order_relaxed);
  if (limit != 0 && held > limit) {
    g_memory_held.fetch_sub(bytes, std::memory_order_relaxed);
    throw MemoryLimitError("a buffer of " + model::size_string(bytes) + " would pass the memory ceiling of " + model::size_string(limit) + " (" +
                           model::size_string(held - bytes) + " already held; see --max-memory)");
  }
}

void memory_release(uint64_t bytes) noexcept { g_memory_held.fetch_sub(bytes, std::memory_order_relaxed); }

namespace {
// Buffers of 1 MB and more lie on whole 2 MB pages, given to the kernel as candidates for
// transparent huge pages: a plane streamed through a kernel then crosses a page every 2 MB
// instead of every 4 KB, and under a hypervisor each 4 KB page missing from the TLB costs a
// two-level walk. On AMD EPYC Zen 4 in a VM (nnxr run --threads 1, per-run medians, 5 rounds
// alternating): efficientnet_b0 18.1 -> 17.0 ms on the AVX2 path and 16.3 -> 15.7 ms on AVX-512,
// mobilenet_v2 5% less on both; the peak resident memory grows by 5-9% (the rounding to whole
// pages).
constexpr size_t kLine = 64, kHugePage = size_t{2} << 20, kHugeFrom = size_t{1} << 20;
bool on_huge_pages(size_t bytes) { return bytes >= kHugeFrom; }
}  // namespace

size_t buffer_bytes(size_t bytes) { return on_huge_pages(bytes) ? (bytes + kHugePage - 1) / kHugePage * kHugePage : bytes; }

void* buffer_allocate(size_t bytes) {
  const size_t size = buffer_bytes(bytes);
  memory_acquire(size);
  try {
    if (!on_huge_pages(bytes)) return ::operator new(size, std::align_val_t{kLine});
    void* p = ::operator new(size, std::align_val_t{kHugePage});
#ifdef MADV_HUGEPAGE
    madvise(p, size, MADV_HUGEPAGE);  // a hint: refused (no transparent huge pages), the 4 KB pages serve
#endif
    return p;
  } catch (...) {
    memory_release(size);
    throw;
  }
}

void buffer_free(void* p, size_t bytes) noexcept {
  if (!p) return;
  memory_release(buffer_bytes(bytes));
  ::operator delete(p, std::align_val_t{on_huge_pages(bytes) ? kHugePage : kLine});
}

// ---- RunOptions ------------------------------------------------------------------------------

void RunOptions::check(const std::string& node) const {
  // The deadline first: a watchdog that sets the cancel flag at the deadline is a timeout.
  if (deadline != std::chrono::steady_clock::time_point::max() && std::chrono::steady_clock::now() >= deadline)
    throw CancelledError(CancelledError::Reason::TimedOut, node);
  if ((cancel && cancel->load(std::memory_order_relaxed)) || (cancel_too && cancel_too->load(std::memory_order_relaxed)))
    throw CancelledError(CancelledError::Reason::Cancelled, node);
}

// ---- Value -----------------------------------------------------------------------------------

Value::Value(const Value& other)
    : dtype_(other.dtype_), shape_(other.shape_), elements_(other.elements_), size_(other.size_), borrowed_(other.borrowed_) {
  if (other.view_)
    storage_.assign(other.view_, other.view_ + other.size_);
  else
    storage_ = other.storage_;
}

Value& Value::operator=(const Value& other) {
  if (this == &other) return *this;
  Value copy(other);
  return *this = std::move(copy);
}

void Value::view(std::byte* at, size_t bytes) {
  clear();
  view_ = at;
  view_size_ = bytes;
}

std::byte* Value::mutable_data() {
  if (view_) return view_;
  if (borrowed_) {
    storage_.assign(borrowed_->bytes.begin(), borrowed_->bytes.end());
    borrowed_.reset();
  }
  return storage_.data();
}

void Value::reset(model::DType dtype, std::vector<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) throw std::length_error("negative dimension in " + shape_str(shape));
    if (d != 0 && n > std::numeric_limits<int64_t>::max() / d) throw std::length_error("tensor size overflows");
    n *= d;
  }
  const size_t elem = model::dtype_size(dtype);
  if (elem == 0) throw std::length_error("element type " + std::string(model::dtype_name(dtype)) + " has no fixed size");
  if (n > static_cast<int64_t>((int64_t{1} << 40) / static_cast<int64_t>(elem)))
    throw std::length_error("tensor of " + std::to_string(n) + " elements is too large");
  borrowed_.reset();
  dtype_ = dtype;
  shape_ = std::move(shape);
  elements_ = n;
  size_ = static_cast<size_t>(n) * elem;
  if (view_ && size_ == view_size_) return;  // written in place
  view_ = nullptr;
  storage_.resize(size_);
}

void Value::fill_zero() {
  if (view_)
    std::fill(view_, view_ + size_, std::byte{0});
  else
    std::fill(storage_.begin(), storage_.end(), std::byte{0});
}

void Value::assign(model::DType dtype, std::vector<int64_t> shape, std::span<const std::byte> bytes) {
  reset(dtype, std::move(shape));
  if (bytes.size() != size_) throw std::length_error("byte count does not match the shape");
  if (size_ && mutable_data() != bytes.data()) std::memcpy(mutable_data(), bytes.data(), size_);
}

void Value::borrow(std::shared_ptr<const model::TensorData> data) {
  dtype_ = data->dtype;
  shape_ = data->shape;
  elements_ = data->elements();
  size_ = data->bytes.size();
  borrowed_ = std::move(data);
  storage_.clear();
  view_ = nullptr;
}

void Value::clear() {
  view_ = nullptr;
  view_size_ = 0;
  dtype_ = model::DType::Undefined;
  shape_.clear();
  elements_ = 0;
  size_ = 0;
  borrowed_.reset();
}

void Value::release() {
  clear();
  decltype(storage_)().swap(storage_);
}

// ---- messages --------------------------------------------------------------------------------

std::string quoted(std::string_view s) { return "'" + model::display_name(s) + "'"; }
std::string node_label(const model::Node& node) { return quoted(node.name) + " (" + model::display_name(node.op_type, 60) + ")"; }
std::string shape_str(std::span<const int64_t> s) { return model::shape_string(s); }

void KernelInit::fail(const std::string& msg) const { throw RuntimeError("node " + node_label(node) + ": " + msg); }

const model::TensorData* KernelInit::constant_input(size_t i) const {
  if (!has_input(i)) return nullptr;
  return graph.tensors[node.inputs[i]].data.get();
}

// ---- KernelContext ---------------------------------------------------------------------------

EpilogueOut KernelContext::fused_epilogue() {
  EpilogueOut act;
  const Value& y = out(0);
  if (!epilogue_) return act;
  if (epilogue_->kind == Epilogue::Kind::Add &&
      (!epilogue_addend_ || epilogue_addend_->dtype() != DType::Float || epilogue_addend_->dims() != y.dims())) {
    decline_epilogue();
    return act;
  }
  act.epi = epilogue_;
  if (epilogue_->kind == Epilogue::Kind::Add) act.addend = epilogue_addend_->as<float>().data();
  float* z[2] = {nullptr, nullptr};
  for (int k = 0; k < epilogue_->outputs(); ++k) {
    epilogue_out_[k]->reset(DType::Float, y.dims());
    z[k] = epilogue_out_[k]->mutable_as<float>().data();
  }
  act.z1 = z[0];
  act.z2 = z[1];
  return act;
}

void KernelContext::fail(const std::string& msg) const { throw RuntimeError("node " + node_label(node_) + ": " + msg); }

std::string KernelContext::input_name(size_t i) const {
  if (i < node_.inputs.size() && node_.inputs[i] != model::kNone) return quoted(graph_.tensors[node_.inputs[i]].name);
  return "#" + std::to_string(i);
}
std::string KernelContext::output_name(size_t i) const {
  if (i < node_.outputs.size() && node_.outputs[i] != model::kNone) return quoted(graph_.tensors[node_.outputs[i]].name);
  return "#" + std::to_string(i);
}

const Value& KernelContext::in(size_t i) const {
  if (!has_input(i)) fail("missing required input #" + std::to_string(i));
  return *inputs_[i];
}

Value& KernelContext::out(size_t i) const {
  if (!has_output(i)) fail("output #" + std::to_string(i) + " is required by the runtime but omitted");
  return *outputs_[i];
}

void KernelContext::expect_dtype(size_t i, std::initializer_list<DType> allowed) const {
  const DType t = in(i).dtype();
  if (std::find(allowed.begin(), allowed.end(), t) != allowed.end()) return;
  fail("input " + input_name(i) + " has element type " + std::string(model::dtype_name(t)) + ", which this op does not accept");
}

void KernelContext::expect_rank(size_t i, size_t rank) const {
  if (in(i).rank() != rank)
    fail("input " + input_name(i) + " has shape " + shape_str(in(i).shape()) + ", expected rank " + std::to_string(rank));
}
void KernelContext::expect_min_rank(size_t i, size_t rank) const {
  if (in(i).rank() < rank)
    fail("input " + input_name(i) + " has shape " + shape_str(in(i).shape()) + ", expected rank >= " + std::to_string(rank));
}

// ---- registry --------------------------------------------------------------------------------

void Registry::add(std::string op_type, KernelFactory f, bool upcast_f16) {
  entries_.push_back(KernelEntry{"", std::move(op_type), 1, 1 << 30, upcast_f16, std::move(f)});
}

const KernelEntry* Registry::find(std::string_view domain, std::string_view op_type, int64_t opset) const {
  for (const auto& e : entries_)
    if (e.domain == domain && e.op_type == op_type && opset >= e.min_opset && opset <= e.max_opset) return &e;
  return nullptr;
}

bool Registry::has(std::string_view domain, std::string_view op_type) const {
  return std::any_of(entries_.begin(), entries_.end(), [&](const KernelEntry& e) { return e.domain == domain && e.op_type == op_type; });
}

const Registry& registry() {
  static const Registry r = [] {
    Registry reg;
    register_elementwise(reg);
    register_activation(reg);
    register_gemm(reg);
    register_conv(reg);
    register_pool(reg);
    register_norm(reg);
    register_reduce(reg);
    register_shape(reg);
    register_index(reg);
    register_misc(reg);
    register_rnn(reg);
    register_loss(reg);
    register_einsum(reg);
    register_quant(reg);
    register_detection(reg);
    register_signal(reg);
    register_extra(reg);
    register_control(reg);
    return reg;
  }();
  return r;
}

bool has_kernel(std::string_view domain, std::string_view op_type) { return registry().has(domain, op_type); }

std::vector<std::string> supported_ops() {
  std::vector<std::string> out;
  for (const auto& e : registry().entries())
    if (e.domain.empty()) out.push_back(e.op_type);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

// ---- helpers ---------------------------------------------------------------------------------

int64_t product(std::span<const int64_t> dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

std::vector<int64_t> read_ints(const KernelContext& ctx, size_t input) {
  const Value& v = ctx.in(input);
  if (v.rank() > 1) ctx.fail("input " + ctx.input_name(input) + " must be a scalar or 1-D, has shape " + shape_str(v.shape()));
  std::vector<int64_t> out;
  switch (v.dtype()) {
    case DType::Int64:
      for (int64_t x : v.as<int64_t>()) out.push_back(x);
      break;
    case DType::Int32:
      for (int32_t x : v.as<int32_t>()) out.push_back(x);
      break;
    default:
      ctx.fail("input " + ctx.input_name(input) + " must be int64 or int32, is " + std::string(model::dtype_name(v.dtype())));
  }
  return out;
}

double read_scalar(const KernelContext& ctx, size_t input) {
  const Value& v = ctx.in(input);
  if (v.elements() != 1) ctx.fail("input " + ctx.input_name(input) + " must hold one element, has shape " + shape_str(v.shape()));
  switch (v.dtype()) {
    case DType::Float: return v.as<float>()[0];
    case DType::Double: return v.as<double>()[0];
    case DType::Float16: return half_to_float(v.as<uint16_t>()[0]);
    case DType::Int64: return static_cast<double>(v.as<int64_t>()[0]);
    case DType::Int32: return v.as<int32_t>()[0];
    case DType::Int8: return v.as<int8_t>()[0];
    case DType::UInt8: return v.as<uint8_t>()[0];
    case DType::Bool: return v.as<uint8_t>()[0] ? 1 : 0;
    default: ctx.fail("input " + ctx.input_name(input) + " has unsupported element type " + std::string(model::dtype_name(v.dtype())));
  }
}

Shape broadcast_shapes(const KernelContext& ctx, std::span<const Shape> shapes) {
  size_t rank = 0;
  for (const auto& s : shapes) rank = std::max(rank, s.size());
  Shape out(rank, 1);
  for (size_t k = 0; k < shapes.size(); ++k) {
    const Shape& s = shapes[k];
    const size_t off = rank - s.size();
    for (size_t i = 0; i < s.size(); ++i) {
      int64_t& o = out[off + i];
      const int64_t d = s[i];
      if (d == o || d == 1) continue;
      if (o == 1) {
        o = d;
        continue;
      }
      std::string all;
      for (size_t j = 0; j < shapes.size(); ++j) all += (j ? " and " : "") + ctx.input_name(j) + " " + shape_str(shapes[j]);
      ctx.fail("inputs cannot be broadcast together: " + all);
    }
  }
  return out;
}

std::vector<int64_t> broadcast_strides(std::span<const int64_t> in_shape, std::span<const int64_t> out_shape) {
  std::vector<int64_t> st(out_shape.size(), 0);
  const size_t off = out_shape.size() - in_shape.size();
  int64_t s = 1;
  for (size_t i = in_shape.size(); i-- > 0;) {
    st[off + i] = in_shape[i] == 1 ? 0 : s;
    s *= in_shape[i];
  }
  return st;
}

std::vector<int64_t> strides_of(std::span<const int64_t> shape) {
  std::vector<int64_t> st(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;) st[i - 1] = st[i] * shape[i];
  return st;
}

}  // namespace nnxr::runtime
