// Frame-thread cost of the engine: CPU time to acquire the scene, record and submit a frame at
// different resident element counts (must be flat: recording never touches elements), and the
// bytes a filter change writes. Runs on whatever Vulkan device the loader picks (set
// VK_ICD_FILENAMES to choose lavapipe).
#include <benchmark/benchmark.h>

#include <memory>
#include <vector>

#include "engine/device.h"
#include "engine/memory.h"
#include "engine/renderer.h"
#include "engine/scene_buffers.h"

namespace {

using namespace nnxr;
using namespace nnxr::engine;

struct Context {
  std::unique_ptr<Instance> instance;
  std::unique_ptr<Device> device;
};
Context& context() {
  static Context c = [] {
    Context c;
    c.instance = std::make_unique<Instance>(InstanceOptions{});
    c.device = std::make_unique<Device>(*c.instance, DeviceOptions{});
    return c;
  }();
  return c;
}

// Publishes `elements` neurons (and no connections) in `segments` segments.
void publish(SceneBuffers& buffers, uint64_t elements, uint32_t segments) {
  auto n = buffers.neurons(elements);
  for (uint64_t i = 0; i < elements; ++i) n[i] = {float(i % 1000) * 0.01f, float(i / 1000 % 1000) * 0.01f, 0, 1};
  buffers.connections(0);
  std::vector<scene::Segment> segs(segments);
  scene::DrawCounts counts;
  const uint64_t per = elements / segments;
  for (uint32_t s = 0; s < segments; ++s) {
    segs[s].neuron_first = uint32_t(s * per);
    segs[s].neuron_count = uint32_t(s + 1 == segments ? elements - s * per : per);
    segs[s].value_max = 1;
    counts.neurons.push_back(segs[s].neuron_count);
    counts.connections.push_back(0);
  }
  buffers.publish(segs, counts, 1);
}

void BM_RecordSubmit(benchmark::State& state) {
  Context& c = context();
  const Device& d = *c.device;
  const uint64_t elements = uint64_t(state.range(0));
  if (elements > max_element_budget(d)) {
    state.SkipWithError("element count beyond what one allocation of this device holds");
    return;
  }
  SceneBuffers buffers(d, {.element_budget = elements, .max_segments = 256, .frames_in_flight = 1});
  publish(buffers, elements, 200);
  const RendererConfig config{.frames_in_flight = 1};
  Renderer renderer(d, buffers, config);
  DeviceImage colour = create_image(d, config.colour_format, {64, 64}, 1, VK_IMAGE_USAGE_COLOR_ATTACHMENT_BIT,
                                    VK_IMAGE_ASPECT_COLOR_BIT);
  DeviceImage depth = create_image(d, config.depth_format, {64, 64}, 1, VK_IMAGE_USAGE_DEPTH_STENCIL_ATTACHMENT_BIT,
                                   VK_IMAGE_ASPECT_DEPTH_BIT);
  CommandPool pool = create_command_pool(d.get(), d.queue_family(), 0);
  VkCommandBuffer cmd = allocate_command_buffer(d.get(), pool.get());
  Fence fence = create_fence(d.get(), false);
  VkFence f = fence.get();
  FrameParams params;
  params.neurons = false;  // keep the (software) GPU's share small; recording is identical
  uint64_t serial = 0;
  for (auto _ : state) {
    const SceneFrame frame = buffers.acquire(++serial);
    check(vkResetCommandPool(d.get(), pool.get(), 0), "vkResetCommandPool");
    VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    check(vkBeginCommandBuffer(cmd, &begin), "vkBeginCommandBuffer");
    transition_image(cmd, colour.image.get(), VK_IMAGE_ASPECT_COLOR_BIT, VK_IMAGE_LAYOUT_UNDEFINED,
                     VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL);
    transition_image(cmd, depth.image.get(), VK_IMAGE_ASPECT_DEPTH_BIT, VK_IMAGE_LAYOUT_UNDEFINED,
                     VK_IMAGE_LAYOUT_DEPTH_ATTACHMENT_OPTIMAL);
    renderer.record(cmd, {colour.view.get(), depth.view.get(), {64, 64}}, frame, params, 0);
    check(vkEndCommandBuffer(cmd), "vkEndCommandBuffer");
    VkSubmitInfo submit{VK_STRUCTURE_TYPE_SUBMIT_INFO};
    submit.commandBufferCount = 1;
    submit.pCommandBuffers = &cmd;
    check(vkQueueSubmit(d.queue(), 1, &submit, f), "vkQueueSubmit");
    state.PauseTiming();
    check(vkWaitForFences(d.get(), 1, &f, VK_TRUE, UINT64_MAX), "vkWaitForFences");
    check(vkResetFences(d.get(), 1, &f), "vkResetFences");
    buffers.retire(serial);
    state.ResumeTiming();
  }
  state.counters["resident"] = double(elements);
}
BENCHMARK(BM_RecordSubmit)->Arg(10'000)->Arg(1'000'000)->Arg(8'000'000)->Arg(20'000'000)->Unit(benchmark::kMicrosecond);

void BM_FilterChange(benchmark::State& state) {
  Context& c = context();
  const uint32_t segments = uint32_t(state.range(0));
  SceneBuffers buffers(*c.device, {.element_budget = 1'000'000, .max_segments = segments, .frames_in_flight = 1});
  publish(buffers, 1'000'000, segments);
  scene::DrawCounts counts{std::vector<uint32_t>(segments, 10), std::vector<uint32_t>(segments, 0)};
  for (auto _ : state) {
    counts.neurons[0] ^= 1;
    buffers.write_counts(counts);
  }
  state.counters["bytes_per_change"] = double(buffers.last_count_bytes());
}
BENCHMARK(BM_FilterChange)->Arg(10)->Arg(150)->Arg(1000);

}  // namespace

BENCHMARK_MAIN();
