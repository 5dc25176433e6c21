// The scene in GPU memory: persistently mapped buffers that the worker thread writes in place
// (through scene::SceneSink) and that frames read, published by generation so that no frame ever
// reads a half-written buffer.
//
// Scheme. There are two element regions; each holds one generation (neurons from the start of
// the region, connections from its end) plus its segment table, whose header carries the device
// addresses of the generation's neurons and connections (shaders read the elements through those
// addresses, so a region is limited by the largest buffer and allocation, not by a descriptor's
// range). A new generation is always
// written into the region that is not current, and only after every frame that read that region
// has been retired (the frame thread reports retired frame serials after waiting on their
// fences; the worker blocks until then, the frame thread never blocks). Draw counts live apart
// from the elements, in frames_in_flight + 2 slots of indirect commands (one VkDrawIndirectCommand
// per segment for neurons and one for connections, firstInstance = segment index): a filter
// change or a publish writes a slot that no unretired frame uses and is not current, then makes it
// current. Making something current is one pointer swap under a mutex that is held only for that
// swap; acquire() records which region and slot a frame reads, so a frame sees exactly one
// generation with one set of counts from the moment it is recorded until it is retired.
//
// Threads: the SceneSink methods (neurons/connections/publish/write_counts) are called from one
// thread, the writer (the engine's worker). acquire()/retire() are called from the frame thread.
// stop() from any thread. Construction and destruction on one thread with neither running.
// Lifetime: the Device outlives this; the GPU must be done with it before destruction.
#pragma once

#include <vulkan/vulkan.h>

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <span>
#include <utility>
#include <vector>

#include "engine/interaction.h"
#include "engine/memory.h"
#include "engine/text.h"
#include "engine/words.h"
#include "engine/tiles.h"
#include "model/scene/scene.h"

namespace nnxr::engine {

class Device;

struct SceneBufferConfig {
  uint64_t element_budget = 20'000'000;  // neurons + connections of one generation
  // Segments (laid-out tensors) per generation the tables and draw commands are first made for.
  // A publish with more grows them (a region's table when that region is next written, a count
  // slot when it is next written: neither is read by a frame then), so this is a starting size,
  // not a limit.
  uint32_t max_segments = 4096;
  uint32_t frames_in_flight = 2;         // frames the frame thread may have unretired at once
  uint32_t image_regions = 3;            // activation images kept (engine/tiles.h)
};

// GPU layout of the per-region table (shaders/scene.glsl mirrors it, std430).
struct SceneHeaderGpu {
  uint64_t neurons = 0;      // device address of neuron 0 of this generation (16 bytes each)
  uint64_t connections = 0;  // device address of connection 0 (8 bytes each)
  uint32_t neuron_count = 0;  // neurons written in this generation
  uint32_t connection_count = 0;
  uint32_t segment_count = 0;
  float max_contribution = 0;
  float value_min = 0, value_max = 0;  // over all segments
  float value_abs_max = 0;
  uint32_t pad = 0;
};
struct SegmentGpu {
  uint32_t neuron_first = 0;
  uint32_t connection_first = 0;
  float value_min = 0, value_max = 0;
  uint32_t layer = 0;
  uint32_t tensor = 0;
  uint32_t pad[2]{};
};
static_assert(sizeof(SceneHeaderGpu) == 48 && sizeof(SegmentGpu) == 32);

// Set in an indirect command's firstInstance (beside the segment index) when the filter draws the
// segment dimmed (scene::DrawCounts::dimmed); shaders/scene.glsl masks it off.
inline constexpr uint32_t kDimmedSegmentBit = 1u << 30;

// The largest element budget `device` can hold: one region (16 bytes per element) must fit in a
// single buffer and a single allocation.
uint64_t max_element_budget(const Device& device);

// What one frame draws. Plain data, valid until the frame's serial is retired.
struct SceneFrame {
  uint64_t serial = 0;
  uint64_t generation = 0;  // 0: nothing published yet; draw nothing
  uint32_t region = 0;      // index for SceneBuffers::region()
  uint32_t segment_count = 0;
  VkBuffer commands = VK_NULL_HANDLE;  // indirect commands
  VkDeviceSize neuron_commands = 0;       // offset of segment_count neuron draws
  VkDeviceSize connection_commands = 0;   // offset of segment_count connection draws
  // The region's segment table (SceneBuffers::region(region).table as of this frame). It is
  // replaced when it grows: table_id changes then, and a renderer rebinds it.
  VkBuffer table = VK_NULL_HANDLE;
  uint64_t table_id = 0;
  TextBuffer::Frame text;                 // glyphs of the current text (published apart from the scene)
  ImagesFrame images;  // the activation image (published on its own, engine/tiles.h)
};

class SceneBuffers final : public scene::SceneSink, public WordsSink {
 public:
  // Allocates everything once. Throws VulkanError when the device cannot hold it, or
  // std::invalid_argument for a budget of 0 or one beyond max_element_budget(device).
  SceneBuffers(const Device& device, const SceneBufferConfig& config);
  ~SceneBuffers() override;
  SceneBuffers(const SceneBuffers&) = delete;
  SceneBuffers& operator=(const SceneBuffers&) = delete;

  // ---- writer thread (scene::SceneSink) ----
  // Spans into the region being written (waits for it to be retired). Throw std::runtime_error
  // when count exceeds what is left of the region: 16·neurons + 8·connections ≤ 16·budget.
  std::span<scene::Neuron> neurons(uint64_t count) override;
  std::span<scene::Connection> connections(uint64_t count) override;
  // Throws std::runtime_error when segments or counts do not fit what was written.
  void publish(std::span<const scene::Segment> segments, const scene::DrawCounts& counts,
               float max_contribution) override;
  void write_counts(const scene::DrawCounts& counts) override;
  // The activation images, which acquire()/retire()/stop() serve along with the scene.
  scene::ImageSink* image_sink() override { return &images_; }
  ActivationImages& images() { return images_; }
  const ActivationImages& images() const { return images_; }

  // ---- frame thread ----
  // The current generation and counts for a frame with this serial (strictly increasing, > 0).
  SceneFrame acquire(uint64_t serial);
  // Every frame with serial ≤ `serial` has finished on the GPU. Must keep being called while
  // frames are drawn; when the frame thread stops drawing, it waits for its last fence and
  // retires that serial (or UINT64_MAX after vkDeviceWaitIdle).
  void retire(uint64_t serial);
  // Retiring on fences wherever they signal, for frame loops that may stop drawing (a minimised
  // window, a headset session that is not visible): a writer waits for frames to retire, so the
  // loop must keep retiring the frames it submitted even on passes that draw nothing.
  // submitted() records the fence of a frame's submission; retire_signalled(), called on every
  // pass, retires in serial order the recorded frames whose fences have signalled
  // (vkGetFenceStatus; it never blocks). A recorded fence must not be reset or destroyed before
  // its frame is retired, by retire_signalled() or by retire() after waiting on it (which drops
  // the record).
  void submitted(uint64_t serial, VkFence fence);
  void retire_signalled();

  // Wakes a writer blocked waiting for a retire; it throws std::runtime_error("stopped"). Used at
  // shutdown. Irreversible.
  void stop();

  // Labels, legend and panels: published by the writer apart from the scene generations;
  // acquire()/retire()/stop() here pin and release its slots too.
  TextBuffer& text() { return text_; }
  // Composes the labels and panels (engine/annotations.cpp) and publishes them (writer thread).
  void publish_words(const WordsContext& context) override;
  const TextBuffer& text() const { return text_; }
  // Where the last published text has its panels (any thread).
  std::vector<ScreenArea> screen_areas() const {
    std::lock_guard lock(areas_mutex_);
    return screen_areas_;
  }
  // What the last published text's input picture (a world billboard, annotate()) needs framed
  // (engine/annotations.h picture_to_frame); none without a picture (any thread).
  std::vector<glm::vec3> picture_points() const {
    std::lock_guard lock(areas_mutex_);
    return picture_points_;
  }

  // ---- any thread ----
  struct Region {
    VkBuffer elements = VK_NULL_HANDLE;  // Neurons from 0, Connections ending at elements_size
    VkDeviceAddress address = 0;         // device address of `elements`
    VkDeviceSize elements_size = 0;
    VkBuffer table = VK_NULL_HANDLE;     // SceneHeaderGpu then the segments (SegmentGpu)
    VkDeviceSize table_size = 0;
    uint64_t table_id = 0;               // changes when the table is replaced by a larger one
  };
  static constexpr uint32_t kRegions = 2;
  Region region(uint32_t index) const;
  const SceneBufferConfig& config() const { return config_; }
  uint64_t generation() const;          // last published (0: none)
  uint64_t bytes_allocated() const;     // all buffers together
  bool device_local() const;            // element regions landed in DEVICE_LOCAL memory
  // Bytes the last write_counts()/publish() wrote to the counts slot (for benchmarks).
  uint64_t last_count_bytes() const { return last_count_bytes_; }

 private:
  struct RegionState {
    MappedBuffer elements, table;  // table: guarded by mutex_ where it is replaced
    uint32_t table_segments = 0;   // segments the table holds
    uint64_t table_id = 0;
    uint64_t last_use = 0;  // serial of the last frame that acquired it
    uint64_t neurons_written = 0, connections_written = 0;
  };
  struct Slot {
    uint64_t last_use = 0;
    MappedBuffer commands;     // neuron draws, then connection draws, `segments` of each
    uint32_t segments = 0;
  };
  uint32_t writing_region();                       // picks and waits for the region being written
  static uint32_t grown(uint32_t have, size_t need);  // capacity for `need` segments
  MappedBuffer make_table(uint32_t segments) const;
  MappedBuffer make_commands(uint32_t segments) const;
  uint32_t free_slot(std::unique_lock<std::mutex>& lock);  // waits for a slot nobody uses
  void write_commands(uint32_t slot, const scene::DrawCounts& counts, std::span<const SegmentGpu> segments,
                      std::span<const uint32_t> neuron_limit, std::span<const uint32_t> connection_limit);

  const Device& device_;
  SceneBufferConfig config_;
  ActivationImages images_;
  RegionState regions_[kRegions];
  std::vector<Slot> slots_;
  uint64_t next_table_id_ = 1;

  // Guarded by mutex_.
  mutable std::mutex mutex_;
  std::condition_variable retired_cv_;
  uint64_t retired_ = 0;
  bool stopped_ = false;
  uint32_t current_region_ = 0;
  uint32_t current_slot_ = 0;
  uint64_t generation_ = 0;
  uint32_t current_segments_ = 0;

  // Frame-thread state: submitted frames not yet retired, ascending serials.
  std::vector<std::pair<uint64_t, VkFence>> in_flight_;
  uint64_t last_submitted_ = 0;

  // Writer-thread state.
  int pending_region_ = -1;  // region being written, -1: none yet
  std::vector<SegmentGpu> published_segments_;  // of the current generation
  std::vector<uint32_t> published_neurons_, published_connections_;  // segment sizes
  uint64_t last_count_bytes_ = 0;
  TextBuffer text_;
  mutable std::mutex areas_mutex_;
  std::vector<ScreenArea> screen_areas_;  // of the last publish_words(); guarded by areas_mutex_
  std::vector<glm::vec3> picture_points_;  // likewise
};

}  // namespace nnxr::engine
