// A tensor value held by the runtime: element type, shape and bytes.
//
// Ownership: a Value either owns its bytes (kernel outputs, fed inputs), shares the immutable
// TensorData of a Graph initializer / Constant node (no copy), or is a view of a part of another
// Value's bytes (a Concat input written in place in the Concat's output; see view()). Copying a
// view copies its bytes: the copy owns them. A Value is not thread-safe; the
// Session that holds it hands out const pointers that stay valid until the next run(),
// set_input() or the Session's destruction.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "model/dtype.h"
#include "model/graph.h"

namespace nnxr::runtime {

// The bytes held by every tensor buffer of the runtime in this process (CacheAligned storage:
// Values, Loop and Scan parts, kernel scratch), and a ceiling on them. A buffer that would take
// the total past the ceiling is refused before it is allocated: MemoryLimitError.
class MemoryLimitError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
// 0: no ceiling (the default).
void set_memory_limit(uint64_t bytes);
uint64_t memory_limit();
uint64_t memory_held();
// Counts `bytes` as held; throws MemoryLimitError (and counts nothing) beyond the ceiling.
void memory_acquire(uint64_t bytes);
void memory_release(uint64_t bytes) noexcept;

// A tensor buffer of `bytes` on a cache line (large ones on whole 2 MB pages, see core.cpp), and
// its release (the same `bytes`). buffer_bytes(bytes) is the memory it holds: what memory_acquire
// counts (MemoryLimitError past the ceiling) and memory_release gives back.
void* buffer_allocate(size_t bytes);
void buffer_free(void* p, size_t bytes) noexcept;
size_t buffer_bytes(size_t bytes);

// Storage aligned to a cache line, so that kernels can use aligned (and streaming) vector stores.
template <class T>
struct CacheAligned {
  using value_type = T;
  CacheAligned() = default;
  template <class U>
  CacheAligned(const CacheAligned<U>&) {}
  T* allocate(size_t n) { return static_cast<T*>(buffer_allocate(n * sizeof(T))); }
  void deallocate(T* p, size_t n) { buffer_free(p, n * sizeof(T)); }
  template <class U>
  bool operator==(const CacheAligned<U>&) const {
    return true;
  }
};

class Value {
 public:
  Value() = default;
  Value(const Value& other);
  Value& operator=(const Value& other);
  Value(Value&&) noexcept = default;
  Value& operator=(Value&&) noexcept = default;

  model::DType dtype() const { return dtype_; }
  std::span<const int64_t> shape() const { return shape_; }
  const std::vector<int64_t>& dims() const { return shape_; }
  size_t rank() const { return shape_.size(); }
  int64_t elements() const { return elements_; }
  size_t byte_size() const { return size_; }
  bool empty() const { return dtype_ == model::DType::Undefined; }

  const std::byte* data() const { return view_ ? view_ : borrowed_ ? borrowed_->bytes.data() : storage_.data(); }
  // Writable bytes; only for owned values (a borrowed value is made owned by a copy first).
  std::byte* mutable_data();

  template <class T>
  std::span<const T> as() const {
    return {reinterpret_cast<const T*>(data()), static_cast<size_t>(elements_)};
  }
  template <class T>
  std::span<T> mutable_as() {
    return {reinterpret_cast<T*>(mutable_data()), static_cast<size_t>(elements_)};
  }

  // Makes this an owned value of `dtype` and `shape`, reusing the storage's capacity. The bytes
  // are left as they were (callers overwrite them); use fill_zero() when they must start at 0.
  // Throws std::length_error when the size overflows.
  void reset(model::DType dtype, std::vector<int64_t> shape);
  void fill_zero();
  // Owned copy of `bytes` (size must match dtype x shape; checked by the caller); nothing is
  // copied when they are this value's own bytes already (a view of them).
  void assign(model::DType dtype, std::vector<int64_t> shape, std::span<const std::byte> bytes);
  // Shares constant data (no copy).
  void borrow(std::shared_ptr<const model::TensorData> data);
  // Forgets the contents (keeps capacity; a view stops being one).
  void clear();
  // Makes this an empty value whose next reset() to exactly `bytes` bytes writes them at `at`
  // (64-byte aligned) instead of its own storage: the value is then a view of that memory, which
  // its owner must keep alive and in place while the view is read. A reset() to another size
  // makes it an owned value again. The Session uses it to let a node write a Concat input
  // straight into the Concat's output, and to keep a Reshape's output (and the like) as its
  // input's bytes.
  void view(std::byte* at, size_t bytes);
  bool is_view() const { return view_ != nullptr; }
  bool is_borrowed() const { return borrowed_ != nullptr; }
  // Forgets the contents and gives the storage back.
  void release();

 private:
  model::DType dtype_ = model::DType::Undefined;
  std::vector<int64_t> shape_;
  int64_t elements_ = 0;
  size_t size_ = 0;
  std::vector<std::byte, CacheAligned<std::byte>> storage_;
  std::shared_ptr<const model::TensorData> borrowed_;
  std::byte* view_ = nullptr;  // see view()
  size_t view_size_ = 0;
};

}  // namespace nnxr::runtime
