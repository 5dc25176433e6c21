#include "engine/scene_buffers.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

#include "engine/device.h"

namespace nnxr::engine {

namespace {
constexpr VkDeviceSize kNeuronBytes = sizeof(scene::Neuron);
constexpr VkDeviceSize kConnectionBytes = sizeof(scene::Connection);
}  // namespace

uint64_t max_element_budget(const Device& device) {
  return std::min(device.max_buffer_size(), device.max_allocation_size()) / kNeuronBytes;
}

SceneBuffers::SceneBuffers(const Device& device, const SceneBufferConfig& config)
    : device_(device), config_(config), images_(device, std::max(1u, config.image_regions)),
      text_(device, std::max(config.frames_in_flight, 1u)) {
  if (config.element_budget == 0) throw std::invalid_argument("scene buffers: the element budget must be at least 1");
  if (config.max_segments == 0) throw std::invalid_argument("scene buffers: max_segments must be at least 1");
  if (config.frames_in_flight == 0) throw std::invalid_argument("scene buffers: frames_in_flight must be at least 1");
  const VkDeviceSize region_bytes = config.element_budget * kNeuronBytes;
  const uint64_t max_budget = max_element_budget(device);
  if (config.element_budget > max_budget)
    throw std::invalid_argument("scene buffers: an element budget of " + std::to_string(config.element_budget) +
                                " needs buffers of " + std::to_string(region_bytes >> 20) + " MiB; " + device.name() +
                                " allows at most " + std::to_string((max_budget * kNeuronBytes) >> 20) +
                                " MiB per buffer and allocation (budget " + std::to_string(max_budget) + ")");
  for (RegionState& r : regions_) {
    r.elements = create_mapped_buffer(device, region_bytes, VK_BUFFER_USAGE_SHADER_DEVICE_ADDRESS_BIT);
    r.table = make_table(config.max_segments);
    r.table_segments = config.max_segments;
    r.table_id = next_table_id_++;
  }
  slots_.resize(config.frames_in_flight + 2);
  for (Slot& slot : slots_) {
    slot.commands = make_commands(config.max_segments);
    slot.segments = config.max_segments;
  }
}

uint32_t SceneBuffers::grown(uint32_t have, size_t need) {
  // Segment indices share an indirect command's firstInstance with kDimmedSegmentBit.
  if (need >= kDimmedSegmentBit)
    throw std::runtime_error("scene buffers: " + std::to_string(need) + " segments are too many (at most " +
                             std::to_string(kDimmedSegmentBit - 1) + ")");
  return uint32_t(std::max<size_t>(need, size_t(have) + have / 2));
}

MappedBuffer SceneBuffers::make_table(uint32_t segments) const {
  const VkDeviceSize bytes = sizeof(SceneHeaderGpu) + VkDeviceSize(segments) * sizeof(SegmentGpu);
  MappedBuffer b = create_mapped_buffer(device_, bytes, VK_BUFFER_USAGE_STORAGE_BUFFER_BIT);
  std::memset(b.mapped, 0, bytes);
  return b;
}

MappedBuffer SceneBuffers::make_commands(uint32_t segments) const {
  const VkDeviceSize bytes = 2 * VkDeviceSize(segments) * sizeof(VkDrawIndirectCommand);
  MappedBuffer b = create_mapped_buffer(device_, bytes, VK_BUFFER_USAGE_INDIRECT_BUFFER_BIT);
  std::memset(b.mapped, 0, bytes);
  return b;
}

SceneBuffers::~SceneBuffers() = default;

uint32_t SceneBuffers::writing_region() {
  if (pending_region_ >= 0) return uint32_t(pending_region_);
  std::unique_lock lock(mutex_);
  const uint32_t r = generation_ == 0 ? 0 : 1 - current_region_;
  retired_cv_.wait(lock, [&] { return stopped_ || regions_[r].last_use <= retired_; });
  if (stopped_) throw std::runtime_error("scene buffers stopped");
  lock.unlock();
  pending_region_ = int(r);
  regions_[r].neurons_written = 0;
  regions_[r].connections_written = 0;
  return r;
}

std::span<scene::Neuron> SceneBuffers::neurons(uint64_t count) {
  RegionState& r = regions_[writing_region()];
  if (count * kNeuronBytes + r.connections_written * kConnectionBytes > r.elements.size)
    throw std::runtime_error("scene buffers: " + std::to_string(count) + " neurons and " +
                             std::to_string(r.connections_written) + " connections exceed the element budget of " +
                             std::to_string(config_.element_budget));
  r.neurons_written = count;
  return {static_cast<scene::Neuron*>(r.elements.mapped), size_t(count)};
}

std::span<scene::Connection> SceneBuffers::connections(uint64_t count) {
  RegionState& r = regions_[writing_region()];
  if (r.neurons_written * kNeuronBytes + count * kConnectionBytes > r.elements.size)
    throw std::runtime_error("scene buffers: " + std::to_string(r.neurons_written) + " neurons and " +
                             std::to_string(count) + " connections exceed the element budget of " +
                             std::to_string(config_.element_budget));
  r.connections_written = count;
  auto* end = static_cast<std::byte*>(r.elements.mapped) + r.elements.size;
  return {reinterpret_cast<scene::Connection*>(end - count * kConnectionBytes), size_t(count)};
}

uint32_t SceneBuffers::free_slot(std::unique_lock<std::mutex>& lock) {
  uint32_t found = 0;
  retired_cv_.wait(lock, [&] {
    if (stopped_) return true;
    for (uint32_t i = 0; i < slots_.size(); ++i)
      if (i != current_slot_ && slots_[i].last_use <= retired_) {
        found = i;
        return true;
      }
    return false;
  });
  if (stopped_) throw std::runtime_error("scene buffers stopped");
  return found;
}

void SceneBuffers::write_commands(uint32_t slot, const scene::DrawCounts& counts, std::span<const SegmentGpu> segments,
                                  std::span<const uint32_t> neuron_limit, std::span<const uint32_t> connection_limit) {
  const size_t n = segments.size();
  if (counts.neurons.size() != n || counts.connections.size() != n)
    throw std::runtime_error("scene buffers: draw counts for " + std::to_string(counts.neurons.size()) + "/" +
                             std::to_string(counts.connections.size()) + " segments, the scene has " +
                             std::to_string(n));
  for (size_t i = 0; i < n; ++i)
    if (counts.neurons[i] > neuron_limit[i] || counts.connections[i] > connection_limit[i])
      throw std::runtime_error("scene buffers: draw counts of segment " + std::to_string(i) +
                               " exceed the segment's elements");
  Slot& s = slots_[slot];
  if (n > s.segments) {  // the slot is free (not current, its frames retired): replace it
    MappedBuffer bigger = make_commands(grown(s.segments, n));
    std::lock_guard lock(mutex_);
    s.commands = std::move(bigger);
    s.segments = uint32_t(s.commands.size / (2 * sizeof(VkDrawIndirectCommand)));
  }
  auto* base = static_cast<VkDrawIndirectCommand*>(s.commands.mapped);
  VkDrawIndirectCommand* neuron_cmds = base;
  VkDrawIndirectCommand* connection_cmds = base + s.segments;
  if (!counts.dimmed.empty() && counts.dimmed.size() != n)
    throw std::runtime_error("scene buffers: dimmed flags for " + std::to_string(counts.dimmed.size()) +
                             " segments, the scene has " + std::to_string(n));
  for (size_t i = 0; i < n; ++i) {
    const uint32_t instance = uint32_t(i) | (!counts.dimmed.empty() && counts.dimmed[i] ? kDimmedSegmentBit : 0u);
    neuron_cmds[i] = {6 * counts.neurons[i], 1, 6 * segments[i].neuron_first, instance};
    connection_cmds[i] = {2 * counts.connections[i], 1, 2 * segments[i].connection_first, instance};
  }
  last_count_bytes_ = 2 * n * sizeof(VkDrawIndirectCommand);
}

void SceneBuffers::publish(std::span<const scene::Segment> segments, const scene::DrawCounts& counts,
                           float max_contribution) {
  const uint32_t region = writing_region();
  RegionState& r = regions_[region];
  std::vector<SegmentGpu> gpu(segments.size());
  std::vector<uint32_t> neuron_sizes(segments.size()), connection_sizes(segments.size());
  SceneHeaderGpu header;
  header.neurons = r.elements.address;
  // With no connections the address stays inside the buffer (nothing reads it).
  header.connections = r.elements.address + (r.connections_written == 0
                                                 ? 0
                                                 : r.elements.size - r.connections_written * kConnectionBytes);
  header.neuron_count = uint32_t(r.neurons_written);
  header.connection_count = uint32_t(r.connections_written);
  header.segment_count = uint32_t(segments.size());
  header.max_contribution = max_contribution;
  uint64_t neuron_end = 0, connection_end = 0;
  for (size_t i = 0; i < segments.size(); ++i) {
    const scene::Segment& s = segments[i];
    const std::string name = "scene buffers: segment " + std::to_string(i);
    if (uint64_t(s.neuron_first) + s.neuron_count > r.neurons_written ||
        uint64_t(s.connection_first) + s.connection_count > r.connections_written)
      throw std::runtime_error(name + " lies outside the elements written");
    if (s.neuron_first < neuron_end || s.connection_first < connection_end)
      throw std::runtime_error(name + " is not in ascending array order");
    neuron_end = uint64_t(s.neuron_first) + s.neuron_count;
    connection_end = uint64_t(s.connection_first) + s.connection_count;
    gpu[i] = {s.neuron_first, s.connection_first, s.value_min, s.value_max, uint32_t(std::max(s.layer, 0)),
              uint32_t(s.tensor), {}};
    neuron_sizes[i] = s.neuron_count;
    connection_sizes[i] = s.connection_count;
    header.value_min = i == 0 ? s.value_min : std::min(header.value_min, s.value_min);
    header.value_max = i == 0 ? s.value_max : std::max(header.value_max, s.value_max);
  }
  header.value_abs_max = std::max(std::abs(header.value_min), std::abs(header.value_max));
  // Validates counts against the new segments before anything becomes visible.
  std::unique_lock lock(mutex_);
  const uint32_t slot = free_slot(lock);
  lock.unlock();
  write_commands(slot, counts, gpu, neuron_sizes, connection_sizes);
  if (segments.size() > r.table_segments) {  // no frame reads this region: replace its table
    MappedBuffer bigger = make_table(grown(r.table_segments, segments.size()));
    lock.lock();
    r.table = std::move(bigger);
    r.table_segments = uint32_t((r.table.size - sizeof(SceneHeaderGpu)) / sizeof(SegmentGpu));
    r.table_id = next_table_id_++;
    lock.unlock();
  }
  std::memcpy(r.table.mapped, &header, sizeof header);
  if (!gpu.empty())  // memcpy from an empty vector's null data() is undefined
    std::memcpy(static_cast<std::byte*>(r.table.mapped) + sizeof header, gpu.data(), gpu.size() * sizeof(SegmentGpu));

  lock.lock();
  current_region_ = region;
  current_slot_ = slot;
  current_segments_ = uint32_t(segments.size());
  ++generation_;
  lock.unlock();
  pending_region_ = -1;
  published_segments_ = std::move(gpu);
  published_neurons_ = std::move(neuron_sizes);
  published_connections_ = std::move(connection_sizes);
}

void SceneBuffers::write_counts(const scene::DrawCounts& counts) {
  if (generation() == 0) throw std::runtime_error("scene buffers: draw counts written before any publish");
  std::unique_lock lock(mutex_);
  const uint32_t slot = free_slot(lock);
  lock.unlock();
  write_commands(slot, counts, published_segments_, published_neurons_, published_connections_);
  lock.lock();
  current_slot_ = slot;
}

SceneFrame SceneBuffers::acquire(uint64_t serial) {
  SceneFrame f;
  f.text = text_.acquire(serial);
  f.images = images_.acquire(serial);
  std::lock_guard lock(mutex_);
  f.serial = serial;
  f.generation = generation_;
  if (generation_ == 0) return f;
  regions_[current_region_].last_use = std::max(regions_[current_region_].last_use, serial);
  slots_[current_slot_].last_use = std::max(slots_[current_slot_].last_use, serial);
  f.region = current_region_;
  f.segment_count = current_segments_;
  const Slot& slot = slots_[current_slot_];
  f.commands = slot.commands.buffer.get();
  f.neuron_commands = 0;
  f.connection_commands = VkDeviceSize(slot.segments) * sizeof(VkDrawIndirectCommand);
  const RegionState& r = regions_[current_region_];
  f.table = r.table.buffer.get();
  f.table_id = r.table_id;
  return f;
}

void SceneBuffers::retire(uint64_t serial) {
  images_.retire(serial);
  std::erase_if(in_flight_, [&](const auto& f) { return f.first <= serial; });
  text_.retire(serial);
  {
    std::lock_guard lock(mutex_);
    retired_ = std::max(retired_, serial);
  }
  retired_cv_.notify_all();
}

void SceneBuffers::submitted(uint64_t serial, VkFence fence) {
  if (serial <= last_submitted_) throw std::invalid_argument("scene buffers: submitted frame serials must increase");
  last_submitted_ = serial;
  in_flight_.emplace_back(serial, fence);
}

void SceneBuffers::retire_signalled() {
  uint64_t done = 0;
  size_t n = 0;
  for (; n < in_flight_.size(); ++n) {
    const VkResult r = vkGetFenceStatus(device_.get(), in_flight_[n].second);
    if (r == VK_NOT_READY) break;
    check(r, "vkGetFenceStatus");
    done = in_flight_[n].first;
  }
  if (n > 0) retire(done);
}

void SceneBuffers::stop() {
  text_.stop();
  images_.stop();
  {
    std::lock_guard lock(mutex_);
    stopped_ = true;
  }
  retired_cv_.notify_all();
}

SceneBuffers::Region SceneBuffers::region(uint32_t index) const {
  std::lock_guard lock(mutex_);
  const RegionState& r = regions_[index];
  return {r.elements.buffer.get(), r.elements.address, r.elements.size, r.table.buffer.get(), r.table.size, r.table_id};
}

uint64_t SceneBuffers::generation() const {
  std::lock_guard lock(mutex_);
  return generation_;
}

uint64_t SceneBuffers::bytes_allocated() const {
  std::lock_guard lock(mutex_);
  uint64_t total = 0;
  for (const Slot& slot : slots_) total += slot.commands.size;
  for (const RegionState& r : regions_) total += r.elements.size + r.table.size;
  return total;
}

bool SceneBuffers::device_local() const { return regions_[0].elements.device_local; }

}  // namespace nnxr::engine
