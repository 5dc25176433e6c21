// The publish scheme of SceneBuffers: a writer republishing generations while frames draw must
// never show a frame anything but one consistent generation with counts written for it; the
// writer waits for frames to be retired; bad input is rejected with clear errors.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include "engine/camera.h"
#include "engine/offscreen.h"
#include "engine/renderer.h"
#include "engine/device.h"
#include "engine/scene_buffers.h"
#include "engine/vk.h"
#include "tests/engine/vulkan_env.h"

namespace nnxr::engine {
namespace {

using namespace std::chrono_literals;
using test::HandScene;

class SceneBuffersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    env = test::VulkanEnv::create();
    if (!env) GTEST_SKIP();
  }
  void TearDown() override {
    if (!env) return;
    env->device->wait_idle();
    EXPECT_EQ(env->validation_errors(), 0u) << "Vulkan validation errors (printed above)";
  }
  std::unique_ptr<test::VulkanEnv> env;
};

HandScene two_neurons() {
  HandScene s;
  s.add_segment({{0, 0, 0, 1}});
  s.add_segment({{1, 0, 0, -1}}, {scene::make_connection(0, 0, 200)});
  return s;
}

TEST_F(SceneBuffersTest, WriterWaitsUntilFramesThatReadARegionAreRetired) {
  SceneBuffers buffers(*env->device, {.element_budget = 64, .max_segments = 4, .frames_in_flight = 1});
  HandScene s = two_neurons();
  s.write(buffers);                                   // generation 1 → region A
  EXPECT_EQ(buffers.acquire(1).generation, 1u);       // a frame reads A
  s.write(buffers);                                   // generation 2 → region B: free, no wait
  SceneFrame f2 = buffers.acquire(2);                 // a frame reads B
  EXPECT_EQ(f2.generation, 2u);
  std::atomic<bool> done{false};
  std::thread writer([&] {
    s.write(buffers);  // generation 3 → region A: must wait for frame 1
    done = true;
  });
  std::this_thread::sleep_for(150ms);
  EXPECT_FALSE(done) << "the writer overwrote a region a frame in flight reads";
  buffers.retire(1);
  writer.join();
  EXPECT_TRUE(done);
  EXPECT_EQ(buffers.generation(), 3u);
  EXPECT_NE(buffers.acquire(3).region, f2.region);
}

// A frame loop that stops drawing (a minimised window, a headset session that is not visible)
// still retires the frames it submitted, on their fences: two publishes while nothing is drawn
// go through. The second needs the region that both submitted frames read.
TEST_F(SceneBuffersTest, FramesRetireOnTheirFencesWhileNothingIsDrawn) {
  SceneBuffers buffers(*env->device, {.element_budget = 64, .max_segments = 4, .frames_in_flight = 2});
  const VkDevice d = env->device->get();
  HandScene s = two_neurons();
  s.write(buffers);  // generation 1 → region A
  Fence fences[2] = {create_fence(d, false), create_fence(d, false)};
  for (uint64_t serial : {1u, 2u}) {  // two frames read A; their work is on the queue
    EXPECT_EQ(buffers.acquire(serial).generation, 1u);
    const VkFence f = fences[serial - 1].get();
    {
      std::lock_guard lock(env->device->queue_mutex());
      check(vkQueueSubmit(env->device->queue(), 0, nullptr, f), "vkQueueSubmit");
    }
    buffers.submitted(serial, f);
  }
  std::atomic<int> published{0};
  std::thread writer([&] {
    s.write(buffers);  // generation 2 → region B: free
    ++published;
    s.write(buffers);  // generation 3 → region A: frames 1 and 2 must be retired first
    ++published;
  });
  // Nobody polls the fences yet: the writer waits, although the GPU is long done.
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(published, 1) << "the writer overwrote a region unretired frames read";
  // The loop's passes that draw nothing: they only poll.
  const auto limit = std::chrono::steady_clock::now() + 10s;
  while (published < 2 && std::chrono::steady_clock::now() < limit) {
    buffers.retire_signalled();
    std::this_thread::sleep_for(5ms);
  }
  if (published < 2) buffers.stop();  // release the writer so that the test can end
  writer.join();
  EXPECT_EQ(published, 2) << "the writer stayed blocked while no frame was drawn";
  EXPECT_EQ(buffers.generation(), 3u);
  // Retired frames are forgotten: their fences may be reset and reused.
  buffers.retire_signalled();
  for (Fence& f : fences) {
    const VkFence h = f.get();
    check(vkResetFences(d, 1, &h), "vkResetFences");
  }
  buffers.retire_signalled();  // no fence of a retired frame is looked at again
  EXPECT_THROW(buffers.submitted(2, fences[0].get()), std::invalid_argument);
}

TEST_F(SceneBuffersTest, StopReleasesABlockedWriter) {
  SceneBuffers buffers(*env->device, {.element_budget = 64, .max_segments = 4, .frames_in_flight = 1});
  HandScene s = two_neurons();
  s.write(buffers);
  buffers.acquire(1);
  s.write(buffers);
  buffers.acquire(2);
  std::string error;
  std::thread writer([&] {
    try {
      s.write(buffers);
    } catch (const std::runtime_error& e) {
      error = e.what();
    }
  });
  std::this_thread::sleep_for(50ms);
  buffers.stop();
  writer.join();
  EXPECT_NE(error.find("stopped"), std::string::npos) << error;
}

TEST_F(SceneBuffersTest, RejectsWhatDoesNotFit) {
  SceneBuffers buffers(*env->device, {.element_budget = 10, .max_segments = 2});
  EXPECT_THROW(buffers.write_counts({{1}, {0}}), std::runtime_error);  // nothing published yet
  EXPECT_THROW(buffers.neurons(11), std::runtime_error);
  buffers.neurons(6);
  EXPECT_THROW(buffers.connections(9), std::runtime_error);  // 6·16 + 9·8 > 10·16
  buffers.connections(8);
  HandScene s = two_neurons();
  // Segments beyond what was written, out of order, too many; counts beyond segments.
  std::vector<scene::Segment> segs = s.segments;
  segs[1].neuron_count = 6;
  EXPECT_THROW(buffers.publish(segs, s.counts, 1), std::runtime_error);
  segs = {s.segments[1], s.segments[0]};
  EXPECT_THROW(buffers.publish(segs, s.counts, 1), std::runtime_error);
  segs = {s.segments[0], s.segments[1], s.segments[1]};
  EXPECT_THROW(buffers.publish(segs, {{1, 1, 1}, {0, 1, 1}}, 1), std::runtime_error);
  EXPECT_THROW(buffers.publish(s.segments, {{2, 1}, {0, 1}}, 1), std::runtime_error);
  EXPECT_THROW(buffers.publish(s.segments, {{1}, {0}}, 1), std::runtime_error);
  EXPECT_EQ(buffers.generation(), 0u);
  buffers.publish(s.segments, s.counts, 1);
  EXPECT_EQ(buffers.generation(), 1u);
  EXPECT_THROW(buffers.write_counts({{1, 2}, {0, 1}}), std::runtime_error);
  buffers.write_counts({{1, 0}, {0, 0}});
  EXPECT_THROW(SceneBuffers(*env->device, {.element_budget = 0}), std::invalid_argument);
  EXPECT_THROW(SceneBuffers(*env->device, {.element_budget = uint64_t(1) << 40}), std::invalid_argument);
}

// ---- stress: a writer republishing while frames draw ----------------------------------------------

constexpr int kCells = 16;        // 4 × 4 grid of cells, one neuron each
constexpr int kHalf = kCells / 2;  // two segments of 8 neurons
constexpr uint32_t kSize = 96;

glm::vec3 cell_position(int cell) { return {0, 1.5f - float(cell / 4), -1.5f + float(cell % 4)}; }

// Generation g: neuron i sits in cell (i + g) mod 16, with value +1 (g odd) or −1 (g even).
std::vector<scene::Neuron> generation_neurons(uint64_t g) {
  std::vector<scene::Neuron> n(kCells);
  for (int i = 0; i < kCells; ++i) {
    glm::vec3 p = cell_position(int((uint64_t(i) + g) % kCells));
    n[size_t(i)] = {p.x, p.y, p.z, g % 2 ? 1.0f : -1.0f};
  }
  return n;
}

TEST_F(SceneBuffersTest, EveryFrameSeesOneConsistentGenerationUnderStress) {
  SceneBuffers buffers(*env->device, {.element_budget = 64, .max_segments = 4, .frames_in_flight = 1});
  Renderer renderer(*env->device, buffers, RendererConfig{.frames_in_flight = 1});
  Offscreen offscreen(*env->device, RendererConfig{}, {kSize, kSize});
  Camera camera;
  camera.eye = {-5, 0, 0};
  FrameParams params;
  params.view[0] = camera.view();
  params.projection[0] = camera.projection(1);
  params.neuron_size = 0.5f;
  params.fog_start = 100, params.fog_end = 200;

  std::mutex log_mutex;
  std::map<uint64_t, std::set<std::pair<uint32_t, uint32_t>>> written;  // generation → counts
  std::atomic<bool> writer_done{false};
  std::atomic<uint64_t> publishes{0}, count_writes{0};
  std::string writer_error;
  std::thread writer([&] {
    try {
      std::mt19937 rng(7);
      const auto end = std::chrono::steady_clock::now() + 2s;
      while (std::chrono::steady_clock::now() < end) {
        const uint64_t g = buffers.generation() + 1;
        {
          std::lock_guard lock(log_mutex);
          written[g].insert({kHalf, kHalf});
        }
        // Garbage first (all in cell 0, value 0), then the real contents: a frame reading a
        // region while it is written would show grey or misplaced neurons.
        auto n = buffers.neurons(kCells);
        for (auto& x : n) x = {0, 1.5f, -1.5f, 0};
        std::vector<scene::Neuron> real = generation_neurons(g);
        std::copy(real.begin(), real.end(), n.begin());
        buffers.connections(0);
        HandScene s;
        s.add_segment(std::vector<scene::Neuron>(real.begin(), real.begin() + kHalf));
        s.add_segment(std::vector<scene::Neuron>(real.begin() + kHalf, real.end()));
        buffers.publish(s.segments, s.counts, 1);
        ++publishes;
        for (int j = 0; j < 3; ++j) {
          const uint32_t a = rng() % (kHalf + 1), b = rng() % (kHalf + 1);
          {
            std::lock_guard lock(log_mutex);
            written[g].insert({a, b});
          }
          buffers.write_counts({{a, b}, {0, 0}});
          ++count_writes;
        }
      }
    } catch (const std::exception& e) {
      writer_error = e.what();
    }
    writer_done = true;
  });

  uint64_t serial = 0, frames = 0, distinct = 0, last_generation = 0;
  std::string failure;
  while (!writer_done && failure.empty()) {
    const SceneFrame frame = buffers.acquire(++serial);
    RgbaImage image = offscreen.render(renderer, frame, params);
    buffers.retire(serial);
    ++frames;
    if (frame.generation == 0) continue;
    distinct += frame.generation != last_generation;
    last_generation = frame.generation;
    // Decode which cells are lit, and in which colour.
    const bool red = frame.generation % 2 == 1;
    std::set<int> lit;
    for (int c = 0; c < kCells; ++c) {
      const glm::vec3 p = cell_position(c);
      glm::vec4 clip = params.projection[0] * params.view[0] * glm::vec4(p, 1);
      const uint32_t x = uint32_t((clip.x / clip.w + 1) / 2 * kSize), y = uint32_t((clip.y / clip.w + 1) / 2 * kSize);
      const uint8_t* px = image.at(x, y);
      if (test::is_red(px) || test::is_blue(px)) {
        if (test::is_red(px) != red) failure = "cell " + std::to_string(c) + " has the other generation's colour";
        lit.insert(c);
      } else if (px[0] > 60) {
        failure = "cell " + std::to_string(c) + " is neither background nor a neuron colour (torn write)";
      }
    }
    bool matched = false;
    std::lock_guard lock(log_mutex);
    for (auto [a, b] : written[frame.generation]) {
      std::set<int> expect;
      for (uint32_t i = 0; i < a; ++i) expect.insert(int((i + frame.generation) % kCells));
      for (uint32_t i = 0; i < b; ++i) expect.insert(int((kHalf + i + frame.generation) % kCells));
      matched |= expect == lit;
    }
    if (!matched && failure.empty())
      failure = "lit cells match no counts written for generation " + std::to_string(frame.generation);
    if (!failure.empty())
      failure += " (frame " + std::to_string(frames) + ", image " + test::save_failure_image(image, "engine_stress") + ")";
  }
  if (!failure.empty()) buffers.stop();
  writer.join();
  EXPECT_EQ(failure, "");
  EXPECT_EQ(writer_error, "");
  // The test is only meaningful if generations really changed under the frames.
  EXPECT_GT(publishes.load(), 10u);
  EXPECT_GT(distinct, 5u);
  std::printf("stress: %llu frames, %llu publishes, %llu count writes, %llu generations seen\n",
              (unsigned long long)frames, (unsigned long long)publishes.load(), (unsigned long long)count_writes.load(),
              (unsigned long long)distinct);
}

}  // namespace
}  // namespace nnxr::engine
