#include "engine/tiles.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <tuple>

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
    // A region that is not current (with one region: that one): one holding no kept image
    // before one that does, an allocated one before one never written, then the least recently
    // used.
    int pick = -1;
    auto rank = [&](int i) {
      const Region& r = regions_[size_t(i)];
      return std::tuple(r.key != 0, r.buffer.size == 0, r.last_use);
    };
    for (int i = 0; i < int(regions_.size()); ++i) {
      if (i == current_ && regions_.size() > 1) continue;
      if (pick < 0 || rank(i) < rank(pick)) pick = i;
    }
    regions_[size_t(pick)].key = 0;  // overwritten
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
  regions_[size_t(writing_)].stats = stats;
  current_ = writing_;
  writing_ = -1;
  ++generation_;
  stats_ = stats;
}

void ActivationImages::write_image_filter(std::span<const uint8_t> flags) {
  int pick = -1;
  {
    std::unique_lock lock(mutex_);
    auto free_slot = [&] {
      for (int i = 0; i < int(filters_.size()); ++i)
        if (i != filter_current_ && filters_[size_t(i)].last_use <= retired_) return i;
      return -1;
    };
    retired_cv_.wait(lock, [&] { return stopped_ || (pick = free_slot()) >= 0; });
    if (stopped_) throw std::runtime_error("stopped");
  }
  FilterSlot& f = filters_[size_t(pick)];
  const uint64_t bytes = 4 * (uint64_t(flags.size()) + 1);
  if (f.buffer.size < bytes) {  // no frame reads it (free above)
    f.buffer = {};
    f.buffer = create_mapped_buffer(device_, std::max<uint64_t>(bytes, 256), VK_BUFFER_USAGE_SHADER_DEVICE_ADDRESS_BIT);
  }
  auto* out = static_cast<uint32_t*>(f.buffer.mapped);
  out[0] = uint32_t(flags.size());
  for (size_t i = 0; i < flags.size(); ++i) out[i + 1] = flags[i];
  std::lock_guard lock(mutex_);
  filter_current_ = pick;
}

void ActivationImages::keep_image(uint64_t key) {
  std::lock_guard lock(mutex_);
  if (current_ >= 0) regions_[size_t(current_)].key = key;
}

std::optional<scene::ImagesStats> ActivationImages::show_image(uint64_t key) {
  if (key == 0) return std::nullopt;
  std::lock_guard lock(mutex_);
  for (int i = 0; i < int(regions_.size()); ++i) {
    const Region& r = regions_[size_t(i)];
    if (r.key != key) continue;
    if (i != current_) {
      current_ = i;  // a pointer swap: frames recorded from now on draw it
      ++generation_;
    }
    stats_ = r.stats;
    return r.stats;
  }
  return std::nullopt;
}

void ActivationImages::drop_image(uint64_t key) {
  if (key == 0) return;
  std::lock_guard lock(mutex_);
  for (Region& r : regions_)
    if (r.key == key) r.key = 0;
}

ImagesFrame ActivationImages::acquire(uint64_t serial) {
  std::lock_guard lock(mutex_);
  if (current_ < 0) return {};
  Region& r = regions_[size_t(current_)];
  r.last_use = std::max(r.last_use, serial);
  ImagesFrame frame{generation_, r.buffer.address, r.tiles, 0};
  if (filter_current_ >= 0) {
    FilterSlot& f = filters_[size_t(filter_current_)];
    f.last_use = std::max(f.last_use, serial);
    frame.filter = f.buffer.address;
  }
  return frame;
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
