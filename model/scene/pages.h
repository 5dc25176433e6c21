// Internal to model/scene: a fixed-size array of trivially copyable elements in memory of its
// own, for the build's large arrays (hundreds of megabytes on big models).
//
// Large arrays (2 MiB and more) get an anonymous mapping of their own (Linux): the kernel hands it
// out zero-filled and gives memory only to the pages written, so an array may be sized for a
// bound, and pages no longer needed can be given back (discard_after). Arrays written in scattered
// order may ask for transparent huge pages, so that their writes stay within the TLB. Small
// arrays come from the heap, zero-filled too. Owned by whoever holds it; move-only; not
// thread-safe, but disjoint elements may be written from several threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <span>
#include <type_traits>
#include <utility>

#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
#endif

namespace nnxr::scene {

template <class T>
class PageArray {
  static_assert(std::is_trivially_copyable_v<T>);

 public:
  PageArray() = default;
  // huge_pages: ask for transparent huge pages, for arrays written in scattered order (their
  // writes then stay within the TLB).
  explicit PageArray(size_t n, bool huge_pages = false) : size_(n) {
    if (n == 0) return;
    bytes_ = n * sizeof(T);
#if defined(__linux__)
    if (bytes_ >= kMapped) {
      // Mapped with a huge page of slack, then trimmed to start on a huge-page boundary. No swap
      // reserved: arrays sized for a bound may be used only in part.
      const size_t page = page_size();
      bytes_ = (bytes_ + page - 1) / page * page;
      void* p = mmap(nullptr, bytes_ + kMapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
      if (p == MAP_FAILED) throw std::bad_alloc();
      auto* base = static_cast<char*>(p);
      const size_t head = (kMapped - reinterpret_cast<uintptr_t>(base) % kMapped) % kMapped;
      if (head > 0) munmap(base, head);
      munmap(base + head + bytes_, kMapped - head);
      if (huge_pages) madvise(base + head, bytes_, MADV_HUGEPAGE);  // advice only
      data_ = reinterpret_cast<T*>(base + head);
      mapped_ = true;
      return;
    }
#endif
    data_ = static_cast<T*>(std::calloc(n, sizeof(T)));
    if (!data_) throw std::bad_alloc();
  }
  ~PageArray() { release(); }
  PageArray(PageArray&& o) noexcept
      : data_(std::exchange(o.data_, nullptr)), size_(std::exchange(o.size_, 0)), bytes_(std::exchange(o.bytes_, 0)),
        mapped_(std::exchange(o.mapped_, false)) {}
  PageArray& operator=(PageArray&& o) noexcept {
    if (this != &o) {
      release();
      data_ = std::exchange(o.data_, nullptr);
      size_ = std::exchange(o.size_, 0);
      bytes_ = std::exchange(o.bytes_, 0);
      mapped_ = std::exchange(o.mapped_, false);
    }
    return *this;
  }
  PageArray(const PageArray&) = delete;
  PageArray& operator=(const PageArray&) = delete;

  T* data() { return data_; }
  const T* data() const { return data_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T& operator[](size_t i) { return data_[i]; }
  const T& operator[](size_t i) const { return data_[i]; }
  T* begin() { return data_; }
  T* end() { return data_ + size_; }
  const T* begin() const { return data_; }
  const T* end() const { return data_ + size_; }
  std::span<T> span() { return {data_, size_}; }
  std::span<const T> span() const { return {data_, size_}; }

  // Gives the whole pages past element n back to the system (a mapped array; they read as zero
  // afterwards). The size does not change.
  void discard_after([[maybe_unused]] size_t n) {
#if defined(__linux__)
    if (!mapped_ || n >= size_) return;
    const size_t page = page_size();
    const size_t from = (n * sizeof(T) + page - 1) / page * page;
    if (from < bytes_) madvise(reinterpret_cast<char*>(data_) + from, bytes_ - from, MADV_DONTNEED);
#endif
  }

 private:
  static constexpr size_t kMapped = size_t(1) << 21;  // a huge page; arrays from this size up are mapped
#if defined(__linux__)
  static size_t page_size() { return size_t(sysconf(_SC_PAGESIZE)); }
#endif

  void release() {
#if defined(__linux__)
    if (mapped_) {
      munmap(data_, bytes_);
      data_ = nullptr;
      return;
    }
#endif
    std::free(data_);
    data_ = nullptr;
  }

  T* data_ = nullptr;
  size_t size_ = 0, bytes_ = 0;
  bool mapped_ = false;
};

}  // namespace nnxr::scene
