// A small fixed pool for the runtime's parallel loops.
//
// Owned by a Session; parallel_for() is called only from the thread running Session::run() and
// blocks until every chunk is done. Workers spin for a moment after a call (a run issues its
// loops back to back, and waking a sleeping thread costs tens of microseconds), then sleep. Not
// reentrant: a body must not call parallel_for() itself (nested calls run serially).
//
// A call is published and its chunks claimed through atomics alone: no lock on the way, and a
// futex wake (std::atomic::notify) only for a thread that went to sleep.
#pragma once

#include <atomic>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace nnxr::runtime {

class ThreadPool {
 public:
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int threads() const { return static_cast<int>(workers_.size()) + 1; }

  // Calls body(begin, end) over [0, n) split into at most threads() chunks of at least `grain`
  // items. Exceptions from a body are rethrown here (the first one).
  void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& body);

 private:
  void worker();
  // Claims and runs chunks of call `generation` until none is left (or a later call began).
  void run_chunks(uint32_t generation);

  std::vector<std::thread> workers_;
  // The call being run: written by the caller before it publishes claim_, read by a thread only
  // after it has claimed one of the call's chunks (the call cannot end before that chunk does).
  const std::function<void(int64_t, int64_t)>* body_ = nullptr;
  int64_t n_ = 0;
  // The call's generation (high 32 bits), its number of chunks (bits 16-31) and the next chunk
  // to claim (bits 0-15): a claim is one compare-exchange that fails once a later call began.
  std::atomic<uint64_t> claim_{0};
  std::atomic<int> pending_{0};          // chunks of the current call not yet finished
  std::atomic<uint32_t> generation_{0};  // what workers wait on (a futex word)
  std::atomic<int> sleepers_{0};         // workers asleep on generation_ (or about to be)
  std::atomic<bool> caller_sleeps_{false};  // the caller asleep on pending_ (or about to be)
  std::atomic<bool> stop_{false};
  std::atomic<bool> busy_{false};  // a call is running (a nested call runs serially)
  std::mutex error_mutex_;
  std::exception_ptr error_;
};

}  // namespace nnxr::runtime
