// A small fixed pool for the runtime's parallel loops.
//
// Owned by a Session; parallel_for() is called only from the thread running Session::run() and
// blocks until every chunk is done. Workers spin for a moment after a call (a run issues its
// loops back to back, and waking a sleeping thread costs tens of microseconds), then sleep. Not
// reentrant: a body must not call parallel_for() itself (nested calls run serially).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
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
  void worker(int index);

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable done_;
  const std::function<void(int64_t, int64_t)>* body_ = nullptr;
  int64_t n_ = 0;
  int chunks_ = 0;
  int next_chunk_ = 0;
  std::atomic<int> pending_{0};  // written under mutex_; read without it while the caller spins
  std::atomic<uint64_t> generation_{0};  // written under mutex_; read without it while spinning
  bool stop_ = false;
  bool busy_ = false;
  std::exception_ptr error_;
};

}  // namespace nnxr::runtime
