// Per-frame times in bounded memory, for the median and p99 that `--stats` prints: a histogram of
// log-spaced bins 1% wide from 1 µs to about two days, plus the exact minimum and maximum. A
// session of any length keeps the same 21 KB, and a percentile is within 0.5% of the sample it
// stands for (clamped to the range seen, so a single sample comes back exactly).
//
// Threads: one (the frame thread). Plain value type.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>

namespace nnxr::engine {

class FrameTimes {
 public:
  void add(double ms) {
    if (!(ms >= 0)) ms = 0;  // NaN, negative: a clock that went backwards
    min_ = count_ == 0 ? ms : std::min(min_, ms);
    max_ = count_ == 0 ? ms : std::max(max_, ms);
    ++bins_[bin(ms)];
    ++count_;
  }
  uint64_t count() const { return count_; }
  // The sample of rank round(p·(count−1)) in ascending order, to within a bin (the lowest and the
  // highest exactly); 0 with no samples.
  double percentile(double p) const {
    if (count_ == 0) return 0;
    const uint64_t rank = std::min<uint64_t>(
        count_ - 1, static_cast<uint64_t>(std::clamp(p, 0.0, 1.0) * static_cast<double>(count_ - 1) + 0.5));
    if (rank == 0) return min_;
    if (rank == count_ - 1) return max_;
    uint64_t seen = 0;
    for (size_t i = 0; i < kBins; ++i) {
      seen += bins_[i];
      if (seen > rank) return std::clamp(kMinMs * std::pow(kRatio, static_cast<double>(i) + 0.5), min_, max_);
    }
    return max_;
  }

 private:
  static constexpr double kMinMs = 1e-3;
  static constexpr double kRatio = 1.01;
  static constexpr size_t kBins = 2600;  // 1e-3 ms · 1.01^2600 ≈ 47 h
  static size_t bin(double ms) {
    if (ms <= kMinMs) return 0;
    const double i = std::log(ms / kMinMs) / std::log(kRatio);
    return static_cast<size_t>(std::min(i, static_cast<double>(kBins - 1)));
  }

  std::array<uint64_t, kBins> bins_{};
  uint64_t count_ = 0;
  double min_ = 0, max_ = 0;
};

}  // namespace nnxr::engine
