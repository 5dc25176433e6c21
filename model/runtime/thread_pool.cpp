#include "model/runtime/thread_pool.h"

#include <algorithm>
#include <chrono>

#if defined(__linux__)
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace nnxr::runtime {

namespace {

// Spins until done() or for `limit` (a run issues its parallel loops back to back, and waking a
// thread that sleeps costs tens of microseconds); true if done() held.
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

// Sleeps while `word` holds `old` (returns at once if it does not; may return spuriously), and
// wakes every thread sleeping on `word`: the futex itself on Linux (this libstdc++'s
// std::atomic::wait can miss a notify), std::atomic's wait elsewhere.
template <class T>
void sleep_while(std::atomic<T>& word, T old) {
  static_assert(sizeof(T) == 4 && std::atomic<T>::is_always_lock_free);
#if defined(__linux__)
  syscall(SYS_futex, reinterpret_cast<T*>(&word), FUTEX_WAIT_PRIVATE, old, nullptr, nullptr, 0);
#else
  word.wait(old, std::memory_order_seq_cst);
#endif
}

template <class T>
void wake_all(std::atomic<T>& word) {
#if defined(__linux__)
  syscall(SYS_futex, reinterpret_cast<T*>(&word), FUTEX_WAKE_PRIVATE, INT32_MAX, nullptr, nullptr, 0);
#else
  word.notify_all();
#endif
}

constexpr auto kSpin = std::chrono::microseconds(200);

uint32_t claim_generation(uint64_t c) { return static_cast<uint32_t>(c >> 32); }
int claim_chunks(uint64_t c) { return static_cast<int>((c >> 16) & 0xffff); }
int claim_next(uint64_t c) { return static_cast<int>(c & 0xffff); }

}  // namespace

ThreadPool::ThreadPool(int threads) {
  // Chunks are counted in 16 bits.
  const int n = std::clamp(threads, 1, 0xffff);
  for (int i = 1; i < n; ++i) workers_.emplace_back([this] { worker(); });
}

ThreadPool::~ThreadPool() {
  stop_.store(true, std::memory_order_seq_cst);
  generation_.fetch_add(1, std::memory_order_seq_cst);
  wake_all(generation_);
  for (auto& t : workers_) t.join();
}

void ThreadPool::parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& body) {
  if (n <= 0) return;
  grain = std::max<int64_t>(1, grain);
  const int64_t max_chunks = std::min<int64_t>(threads(), (n + grain - 1) / grain);
  if (max_chunks <= 1 || busy_.load(std::memory_order_relaxed)) {
    body(0, n);
    return;
  }
  busy_.store(true, std::memory_order_relaxed);
  body_ = &body;
  n_ = n;
  error_ = nullptr;
  const uint32_t generation = generation_.load(std::memory_order_relaxed) + 1;
  pending_.store(static_cast<int>(max_chunks), std::memory_order_relaxed);
  // Publishes body_, n_ and pending_ with the claim word (release).
  claim_.store(uint64_t{generation} << 32 | static_cast<uint64_t>(max_chunks) << 16, std::memory_order_release);
  generation_.store(generation, std::memory_order_seq_cst);
  // A worker counts itself asleep before it checks generation_ and sleeps: either it sees the
  // new generation, or this load sees it counted (both sequentially consistent).
  if (sleepers_.load(std::memory_order_seq_cst) > 0) wake_all(generation_);
  // The calling thread takes chunks too.
  run_chunks(generation);
  // The other chunks usually end within microseconds: wait for them spinning, then sleep.
  if (!spin_until([this] { return pending_.load(std::memory_order_acquire) == 0; }, kSpin)) {
    caller_sleeps_.store(true, std::memory_order_seq_cst);
    for (int left; (left = pending_.load(std::memory_order_seq_cst)) != 0;) sleep_while(pending_, left);
    caller_sleeps_.store(false, std::memory_order_relaxed);
  }
  body_ = nullptr;
  busy_.store(false, std::memory_order_relaxed);
  if (error_) {
    auto e = error_;
    error_ = nullptr;
    std::rethrow_exception(e);
  }
}

void ThreadPool::run_chunks(uint32_t generation) {
  uint64_t c = claim_.load(std::memory_order_acquire);
  for (;;) {
    if (claim_generation(c) != generation || claim_next(c) >= claim_chunks(c)) return;
    if (!claim_.compare_exchange_weak(c, c + 1, std::memory_order_acq_rel, std::memory_order_acquire)) continue;
    const int chunk = claim_next(c), chunks = claim_chunks(c);
    const int64_t b = n_ * chunk / chunks, e = n_ * (chunk + 1) / chunks;
    try {
      (*body_)(b, e);
    } catch (...) {
      std::lock_guard lock(error_mutex_);
      if (!error_) error_ = std::current_exception();
    }
    // The last chunk wakes the caller if it went to sleep (it counts itself asleep before its
    // last look at pending_, as the workers do with generation_).
    if (pending_.fetch_sub(1, std::memory_order_seq_cst) == 1 && caller_sleeps_.load(std::memory_order_seq_cst)) wake_all(pending_);
    c = claim_.load(std::memory_order_acquire);
  }
}

void ThreadPool::worker() {
  // The generation at construction (0), not the current one: a thread that starts late must not
  // take the destructor's bump for a call and wait past it.
  uint32_t seen = 0;
  for (;;) {
    if (!spin_until([&] { return generation_.load(std::memory_order_acquire) != seen; }, kSpin)) {
      sleepers_.fetch_add(1, std::memory_order_seq_cst);
      while (generation_.load(std::memory_order_seq_cst) == seen) sleep_while(generation_, seen);
      sleepers_.fetch_sub(1, std::memory_order_relaxed);
    }
    // Any new call counts as seen, even one whose chunks the caller has already taken. Read
    // before stop_: the destructor sets stop_ before it bumps the generation, so a generation
    // read here that includes the bump comes with stop_ set.
    seen = generation_.load(std::memory_order_seq_cst);
    if (stop_.load(std::memory_order_seq_cst)) return;
    run_chunks(seen);
  }
}

}  // namespace nnxr::runtime
