// The activation images in GPU memory (model/scene/tiles.h says what an image holds): persistently
// mapped buffers that the worker writes in place after each inference and that frames read by
// device address, published by generation as the scene buffers are (engine/scene_buffers.h).
//
// Scheme. There are `regions` image buffers (3 by default: the one frames draw and the one being
// written, and in compare mode a third, so that A's, B's and A − B's images stay resident and a
// flip is a pointer swap; a region is allocated only when first written, so without compare mode
// the third is never allocated). A new image is written into a region that is not current, holds
// no kept image if such a region exists (allocated ones first), and that no unretired frame has acquired
// (the writer blocks until the frame thread retires those frames; the frame thread never blocks),
// then made current by one pointer swap under a mutex held only for that swap. A region is
// allocated when first written and re-allocated, while no frame can read it, when an image
// outgrows it. acquire() records which region a frame reads, so a frame sees one image from the
// moment it is recorded until it is retired.
//
// Threads: image()/publish_image() from one writer thread; acquire()/retire() from the frame
// thread; stop() from any. SceneBuffers owns one and forwards its acquire/retire/stop, so every
// frame loop draws images without knowing of them.
#pragma once

#include <vulkan/vulkan.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <vector>

#include "engine/memory.h"
#include "model/scene/tiles.h"

namespace nnxr::engine {

class Device;

// What one frame draws of the images. Plain data, valid until the frame's serial is retired.
struct ImagesFrame {
  uint64_t generation = 0;    // 0: no image yet
  VkDeviceAddress address = 0;  // of the ImagesHeaderGpu
  uint32_t tile_count = 0;
  // The op-type/tensor filter's flags: uint32 count, then one uint32 per image tensor (0 shown,
  // 1 dimmed, 2 hidden); 0: none written (all shown).
  VkDeviceAddress filter = 0;
};

class ActivationImages final : public scene::ImageSink {
 public:
  explicit ActivationImages(const Device& device, uint32_t regions = 3);
  ~ActivationImages() override;
  ActivationImages(const ActivationImages&) = delete;
  ActivationImages& operator=(const ActivationImages&) = delete;

  // ---- writer thread (scene::ImageSink) ----
  // Memory of a region nobody reads (waits for retires; throws std::runtime_error("stopped")
  // after stop(), VulkanError when the memory cannot be had).
  std::span<std::byte> image(uint64_t bytes) override;
  void publish_image(const scene::ImagesStats& stats) override;
  // Into a filter slot no unretired frame reads (kFilterSlots of them; waits like image()), then
  // current by one swap: O(tensors) bytes per filter change.
  void write_image_filter(std::span<const uint8_t> flags) override;
  // Kept images (compare mode's A, B and A − B, one region each): see scene::ImageSink.
  void keep_image(uint64_t key) override;
  std::optional<scene::ImagesStats> show_image(uint64_t key) override;
  void drop_image(uint64_t key) override;

  // ---- frame thread ----
  ImagesFrame acquire(uint64_t serial);
  void retire(uint64_t serial);

  void stop();

  // ---- any thread ----
  uint64_t generation() const;
  scene::ImagesStats stats() const;   // of the current image
  uint64_t bytes_allocated() const;   // all regions together

 private:
  struct Region {
    MappedBuffer buffer;
    uint64_t last_use = 0;
    uint32_t tiles = 0;
    uint64_t key = 0;  // keep_image(): 0 not kept
    scene::ImagesStats stats;
  };
  const Device& device_;
  std::vector<Region> regions_;

  mutable std::mutex mutex_;
  std::condition_variable retired_cv_;
  uint64_t retired_ = 0;
  bool stopped_ = false;
  int current_ = -1;
  uint64_t generation_ = 0;
  scene::ImagesStats stats_;

  int writing_ = -1;  // writer thread: region handed out by image()

  struct FilterSlot {
    MappedBuffer buffer;
    uint64_t last_use = 0;
  };
  static constexpr size_t kFilterSlots = 4;
  std::vector<FilterSlot> filters_{kFilterSlots};
  int filter_current_ = -1;
  std::atomic<uint64_t> allocated_{0};
};

}  // namespace nnxr::engine
