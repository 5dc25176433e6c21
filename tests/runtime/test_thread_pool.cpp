// The runtime's thread pool: every index covered once per call, back-to-back calls, calls after
// the workers went to sleep, exceptions, nested calls and more threads than cores.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

#include "model/runtime/thread_pool.h"

using nnxr::runtime::ThreadPool;

namespace {

// Runs parallel_for(n, grain) and checks that every index in [0, n) was visited exactly once, in
// at most threads() chunks, and no more than whole grains fit (n / grain rounded up).
void expect_covers(ThreadPool& pool, int64_t n, int64_t grain) {
  std::vector<std::atomic<int>> seen(static_cast<size_t>(n));
  std::atomic<int> chunks{0};
  pool.parallel_for(n, grain, [&](int64_t b, int64_t e) {
    ASSERT_LT(b, e);
    ++chunks;
    for (int64_t i = b; i < e; ++i) seen[static_cast<size_t>(i)].fetch_add(1);
  });
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(seen[static_cast<size_t>(i)].load(), 1) << "index " << i << " of " << n << " grain " << grain;
  EXPECT_LE(chunks.load(), pool.threads());
  EXPECT_LE(chunks.load(), (n + grain - 1) / grain) << "n " << n << " grain " << grain;
}

}  // namespace

TEST(RuntimeThreadPool, EveryIndexOnceAtEverySize) {
  for (int threads : {1, 2, 3, 5}) {
    ThreadPool pool(threads);
    EXPECT_EQ(pool.threads(), threads);
    for (int64_t n : {0, 1, 2, 3, 7, 64, 1000})
      for (int64_t grain : {1, 2, 5, 100}) expect_covers(pool, n, grain);
  }
}

TEST(RuntimeThreadPool, ManyCallsBackToBack) {
  ThreadPool pool(2);
  std::atomic<int64_t> sum{0};
  for (int i = 0; i < 20000; ++i) pool.parallel_for(4, 1, [&](int64_t b, int64_t e) { sum += e - b; });
  EXPECT_EQ(sum.load(), 4 * 20000);
  // Chunks that take turns finishing first: the caller waits for the last one every time.
  std::vector<int> out(2);
  for (int i = 0; i < 2000; ++i) {
    pool.parallel_for(2, 1, [&](int64_t b, int64_t) {
      if ((b + i) % 2 == 0) std::this_thread::sleep_for(std::chrono::microseconds(20));
      out[static_cast<size_t>(b)] = i;
    });
    ASSERT_EQ(out[0], i);
    ASSERT_EQ(out[1], i);
  }
}

TEST(RuntimeThreadPool, CallsAfterTheWorkersSleep) {
  // Past the spin (200 us) the workers and the caller sleep; each call must still run every chunk,
  // and one chunk taking long must be waited for.
  ThreadPool pool(3);
  for (int i = 0; i < 20; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    expect_covers(pool, 30, 1);
    std::atomic<int> done{0};
    pool.parallel_for(3, 1, [&](int64_t b, int64_t) {
      if (b == 2) std::this_thread::sleep_for(std::chrono::microseconds(600));
      ++done;
    });
    EXPECT_EQ(done.load(), 3);
  }
}

TEST(RuntimeThreadPool, RethrowsTheFirstExceptionAndStaysUsable) {
  ThreadPool pool(2);
  for (int i = 0; i < 50; ++i) {
    EXPECT_THROW(pool.parallel_for(8, 1, [&](int64_t b, int64_t) {
      if (b == (i % 2 == 0 ? 0 : 4)) throw std::runtime_error("chunk failed");
    }),
                 std::runtime_error);
    expect_covers(pool, 16, 1);
  }
}

TEST(RuntimeThreadPool, NestedCallsRunSerially) {
  ThreadPool pool(2);
  std::atomic<int64_t> sum{0};
  pool.parallel_for(4, 1, [&](int64_t b, int64_t e) {
    pool.parallel_for(10, 1, [&](int64_t ib, int64_t ie) {
      EXPECT_EQ(ib, 0);
      EXPECT_EQ(ie, 10);
      sum += (ie - ib) * (e - b);
    });
  });
  EXPECT_EQ(sum.load(), 40);
}

TEST(RuntimeThreadPool, MoreThreadsThanCores) {
  const int threads = static_cast<int>(std::max(2u, std::thread::hardware_concurrency())) * 3;
  ThreadPool pool(threads);
  for (int i = 0; i < 200; ++i) expect_covers(pool, 97, 1);
}

TEST(RuntimeThreadPool, DestroyedWhileWorkersSpinOrSleep) {
  for (int i = 0; i < 20; ++i) {
    ThreadPool pool(2);
    expect_covers(pool, 8, 1);
    if (i % 2) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}
