// Internal to model/scene: a fork-join loop over independent items, with no global state.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace nnxr::scene {

// parallel_for() (below) whose calling thread first runs first() while the helpers already work
// on the items, then joins them: for work that must stay on the caller's thread (such as asking a
// sink for memory) but need not hold up the items. An exception from first() stops the claiming
// of items as one from fn does.
template <class First, class Fn, class Progress>
void parallel_for_after(size_t n, int threads, First&& first, Fn&& fn, Progress&& on_caller) {
  std::atomic<size_t> next{0}, done{0};
  std::exception_ptr error;
  std::mutex error_mutex;
  // Keeps the first exception (call inside a catch block) and stops the claiming of items.
  auto fail = [&] {
    std::lock_guard lock(error_mutex);
    if (!error) error = std::current_exception();
    next.store(n, std::memory_order_relaxed);
  };
  auto work = [&](bool caller) {
    for (;;) {
      const size_t i = next.fetch_add(1, std::memory_order_relaxed);
      if (i >= n) return;
      try {
        fn(i);
      } catch (...) {
        fail();
        return;
      }
      const size_t finished = done.fetch_add(1, std::memory_order_relaxed) + 1;
      if (caller) on_caller(finished);
    }
  };
  {
    std::vector<std::jthread> helpers;
    const size_t extra = std::min<size_t>(n > 0 ? n - 1 : 0, size_t(std::max(threads, 1) - 1));
    helpers.reserve(extra);
    for (size_t t = 0; t < extra; ++t) helpers.emplace_back([&] { work(false); });
    try {
      first();
      work(true);
    } catch (...) {
      fail();
    }
  }
  if (error) std::rethrow_exception(error);
}

// Calls fn(i) once for every i in [0, n), on `threads` threads including the caller's (threads
// <= 1: the caller alone). Items are claimed in increasing order. After each item the caller's
// thread itself ran, it calls on_caller(done) with the number of items finished so far (so that
// progress is reported from the building thread only). The first exception thrown by fn stops
// the claiming of further items and is rethrown here after every thread has stopped.
template <class Fn, class Progress>
void parallel_for(size_t n, int threads, Fn&& fn, Progress&& on_caller) {
  parallel_for_after(n, threads, [] {}, std::forward<Fn>(fn), std::forward<Progress>(on_caller));
}

template <class Fn>
void parallel_for(size_t n, int threads, Fn&& fn) {
  parallel_for(n, threads, std::forward<Fn>(fn), [](size_t) {});
}

}  // namespace nnxr::scene
