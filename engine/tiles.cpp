#include "engine/tiles.h"

#include <algorithm>
#include <stdexcept>

#include "engine/device.h"

namespace nnxr::engine {

ActivationImages::ActivationImages(const Device& device, uint32_t regions) : device_(device) {
  if (regions == 0) throw std::invalid_argument("activation images: at least one region");
  regions_.resize(regions);
}

ActivationImages::~ActivationImages() = default;

std::span<std::byte> ActivationImages::image(uint64_t bytes) {
  bytes = std::max<uint64_t>(bytes, 16);
  {
    std::unique_lock lock(mutex_);
    // The least recently used region that is not current (with one region: that one).
    int pick = -1;
    for (int i = 0; i < int(regions_.size()); ++i) {
      if (i == current_ && regions_.size() > 1) continue;
      if (pick < 0 || regions_[size_t(i)].last_use < regions_[size_t(pick)].last_use) pick = i;
    }
    if (regions_.size() == 1 && current_ == 0) {
      current_ = -1;  // one region: frames stop drawing it until the next publish
      ++generation_;
    }
    retired_cv_.wait(lock, [&] { return stopped_ || regions_[size_t(pick)].last_use <= retired_; });
    if (stopped_) throw std::runtime_error("stopped");
    writing_ = pick;
  }
  Region& r = regions_[size_t(writing_)];
  if (r.buffer.size < bytes) {
    allocated_ -= r.buffer.size;
    r.buffer = {};  // no frame can read it: free before allocating the larger one
    r.buffer = create_mapped_buffer(device_, bytes, VK_BUFFER_USAGE_SHADER_DEVICE_ADDRESS_BIT);
    allocated_ += r.buffer.size;
  }
  return {static_cast<std::byte*>(r.buffer.mapped), size_t(bytes)};
}

void ActivationImages::publish_image(const scene::ImagesStats& stats) {
  if (writing_ < 0) throw std::runtime_error("activation images: publish without an image");
  regions_[size_t(writing_)].tiles = uint32_t(stats.tiles);
  std::lock_guard lock(mutex_);
  current_ = writing_;
  writing_ = -1;
  ++generation_;
  stats_ = stats;
}

ImagesFrame ActivationImages::acquire(uint64_t serial) {
  std::lock_guard lock(mutex_);
  if (current_ < 0) return {};
  Region& r = regions_[size_t(current_)];
  r.last_use = std::max(r.last_use, serial);
  return {generation_, r.buffer.address, r.tiles};
}

void ActivationImages::retire(uint64_t serial) {
  {
    std::lock_guard lock(mutex_);
    if (serial <= retired_) return;
    retired_ = serial;
  }
  retired_cv_.notify_all();
}

void ActivationImages::stop() {
  {
    std::lock_guard lock(mutex_);
    stopped_ = true;
  }
  retired_cv_.notify_all();
}

uint64_t ActivationImages::generation() const {
  std::lock_guard lock(mutex_);
  return generation_;
}

scene::ImagesStats ActivationImages::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

uint64_t ActivationImages::bytes_allocated() const { return allocated_; }

}  // namespace nnxr::engine
