// The headset viewer in-process on the simulated runtime (tests/xrsim, through the Khronos loader
// with the core validation layer): frames that were submitted retire on their fences also while
// the session draws nothing, so that the worker can publish new scenes meanwhile.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <random>
#include <thread>

#include "assets/assets.h"
#include "model/load.h"
#include "tests/xrsim/client/xr_client.h"
#include "tests/support/random_feeds.h"
#include "tests/xrsim/xrsim.h"
#include "xr/session.h"

namespace {

using nnxr::engine::Feeds;

nnxr::engine::ModelSource digits() {
  return {"digits.onnx", [] { return nnxr::model::load_model_from_memory(nnxr::assets::default_model().bytes, "digits.onnx"); }};
}

// Pseudo-random float inputs for every graph input.
Feeds random_feeds(const nnxr::model::Graph& g, unsigned seed) { return nnxr::test::random_feeds(g, seed, 0, 1); }

nnxr::engine::InputSource input(unsigned seed) {
  return [seed](const nnxr::model::Graph& g) { return random_feeds(g, seed); };
}

TEST(XrRetire, ScenesPublishedWhileNothingIsDrawnDoNotHoldUpTheWorker) {
  xrsim::client::TestEnv env("retire");
  setenv("XR_ENABLE_API_LAYERS", xrsim::client::kCoreValidationLayer, 1);
  // Drawn up to frame 60; from then on the runtime says shouldRender = false until it asks the
  // viewer to exit at frame 450 (about 5 s at the paced 90 Hz).
  env.set_script("frame 60\nshould_render off\nframe 450\nrequest_exit\n");
  nnxr::engine::ViewerOptions options;
  options.mirror = false;
  options.validation = true;
  options.worker.print_progress = false;
  options.worker.scene.budget = 200'000;
  auto owned = std::make_unique<nnxr::xr::XrViewer>(options);
  nnxr::xr::XrViewer& viewer = *owned;
  viewer.load(digits(), input(1));

  // Two more scenes while the headset draws nothing. The first goes to the scene buffers' free
  // region; the second needs the region the last drawn frames read, which only their retiring
  // frees.
  std::thread loads([&viewer] {
    const auto wait_for = [&viewer](uint64_t frames) {
      const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(120);
      while (viewer.frames_waited() < frames && std::chrono::steady_clock::now() < give_up)
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    };
    wait_for(80);
    viewer.load(digits(), input(2));
    wait_for(200);
    viewer.load(digits(), input(3));
  });
  viewer.run();
  loads.join();
  const nnxr::xr::XrStats s = viewer.stats();
  EXPECT_EQ(s.scene_generation, 3u);
  EXPECT_TRUE(s.view.errors.empty()) << s.view.errors.front();
  EXPECT_EQ(s.view.validation_errors, 0u);
  EXPECT_GE(viewer.frames_waited(), 450u);
  owned.reset();  // the runtime writes its record when the OpenXR instance goes

  // The runtime got layers only before frame 60, and no call failed.
  std::string error;
  const auto record = xrsim::read_record(env.record_path(), &error);
  ASSERT_TRUE(record.has_value()) << error;
  uint64_t drawn = 0;
  for (const auto& f : record->frames) {
    if (f.layers > 0) ++drawn;
    if (f.index >= 60) {
      EXPECT_EQ(f.layers, 0u) << "frame " << f.index;
    }
  }
  EXPECT_GT(drawn, 30u);
  EXPECT_TRUE(record->errors.empty()) << record->errors.front().function << " " << record->errors.front().result;
  std::ifstream layer(env.dir() + "/core_validation.txt");
  for (std::string line; std::getline(layer, line);) EXPECT_EQ(line.find("VALID_ERROR"), std::string::npos) << line;
}

}  // namespace
