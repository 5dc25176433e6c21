#include "model/runtime/thread_pool.h"

#include <algorithm>
#include <chrono>

namespace nnxr::runtime {

namespace {

// Spins until done() or for `limit` (a run issues its parallel loops back to back, and waking a
// thread that sleeps on a condition variable costs tens of microseconds); true if done() held.
template <class Done>
bool spin_until(Done done, std::chrono::microseconds limit) {
  const auto until = std::chrono::steady_clock::now() + limit;
  for (int i = 0; !done(); ++i) {
    if ((i & 63) == 63 && std::chrono::steady_clock::now() > until) return false;
#if defined(__x86_64__)
    __builtin_ia32_pause();
#endif
  }
  return true;
}

}  // namespace

ThreadPool::ThreadPool(int threads) {
  for (int i = 1; i < std::max(1, threads); ++i) workers_.emplace_back([this, i] { worker(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& body) {
  if (n <= 0) return;
  grain = std::max<int64_t>(1, grain);
  const int64_t max_chunks = std::min<int64_t>(threads(), (n + grain - 1) / grain);
  if (max_chunks <= 1 || busy_) {
    body(0, n);
    return;
  }
  {
    std::lock_guard lock(mutex_);
    busy_ = true;
    body_ = &body;
    n_ = n;
    chunks_ = static_cast<int>(max_chunks);
    next_chunk_ = 0;
    pending_ = chunks_;
    error_ = nullptr;
    ++generation_;
  }
  wake_.notify_all();
  // The calling thread takes chunks too.
  for (;;) {
    int chunk;
    {
      std::lock_guard lock(mutex_);
      if (next_chunk_ >= chunks_) break;
      chunk = next_chunk_++;
    }
    const int64_t b = n_ * chunk / chunks_, e = n_ * (chunk + 1) / chunks_;
    try {
      body(b, e);
    } catch (...) {
      std::lock_guard lock(mutex_);
      if (!error_) error_ = std::current_exception();
    }
    std::lock_guard lock(mutex_);
    --pending_;
  }
  // The other chunks usually end within microseconds: wait for them spinning, then sleep.
  spin_until([this] { return pending_.load(std::memory_order_acquire) == 0; }, std::chrono::microseconds(200));
  std::unique_lock lock(mutex_);
  done_.wait(lock, [this] { return pending_ == 0; });
  body_ = nullptr;
  busy_ = false;
  if (error_) {
    auto e = error_;
    error_ = nullptr;
    std::rethrow_exception(e);
  }
}

void ThreadPool::worker(int /*index*/) {
  uint64_t seen = 0;
  std::unique_lock lock(mutex_);
  for (;;) {
    if (generation_ == seen && !stop_) {
      lock.unlock();
      spin_until([&] { return generation_.load(std::memory_order_acquire) != seen; }, std::chrono::microseconds(200));
      lock.lock();
    }
    // Any new call counts as seen, even one whose chunks the caller has already taken: waiting
    // for one with chunks left would sleep through the next calls (each over before the futex
    // wake), and the caller would run every chunk alone.
    wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
    if (stop_) return;
    seen = generation_;
    while (body_ && next_chunk_ < chunks_) {
      const int chunk = next_chunk_++;
      const auto* body = body_;
      const int64_t b = n_ * chunk / chunks_, e = n_ * (chunk + 1) / chunks_;
      lock.unlock();
      try {
        (*body)(b, e);
      } catch (...) {
        lock.lock();
        if (!error_) error_ = std::current_exception();
        lock.unlock();
      }
      lock.lock();
      if (--pending_ == 0) done_.notify_all();
    }
  }
}

}  // namespace nnxr::runtime
