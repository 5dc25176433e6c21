// `nnxr view --xr` end to end against the simulated OpenXR runtime (tests/xrsim), loaded through
// the Khronos loader with the core validation API layer on: the session's states, the stereo
// images it submits, and controller input scripted on the runtime's timeline.
#include <gtest/gtest.h>
#include <stb_image.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tests/support/run_nnxr.h"
#include "tests/xrsim/client/xr_client.h"

namespace {

namespace fs = std::filesystem;
using nnxr::test::RunResult;

// The environment for the nnxr process: the core validation layer on, Vulkan validation on.
const std::string kLayers = "XR_ENABLE_API_LAYERS=" + std::string(xrsim::client::kCoreValidationLayer);

std::string last_line(const std::string& s) {
  const auto end = s.find_last_not_of('\n');
  if (end == std::string::npos) return "";
  const auto start = s.rfind('\n', end);
  return s.substr(start == std::string::npos ? 0 : start + 1, end - (start == std::string::npos ? 0 : start + 1) + 1);
}

// The number after "key": in a one-line JSON object (first occurrence).
double json_number(const std::string& json, const std::string& key) {
  const auto at = json.find("\"" + key + "\":");
  if (at == std::string::npos) return NAN;
  return std::strtod(json.c_str() + at + key.size() + 3, nullptr);
}

// The three numbers of "key":[a,b,c].
std::vector<double> json_triple(const std::string& json, const std::string& key) {
  const auto at = json.find("\"" + key + "\":[");
  if (at == std::string::npos) return {};
  const char* p = json.c_str() + at + key.size() + 4;
  std::vector<double> v;
  for (int i = 0; i < 3; ++i) {
    char* end = nullptr;
    v.push_back(std::strtod(p, &end));
    p = end + 1;
  }
  return v;
}

// Errors the core validation layer wrote (its file exists only once it has something to say).
std::vector<std::string> layer_errors(const xrsim::client::TestEnv& env) {
  std::vector<std::string> errors;
  std::ifstream f(env.dir() + "/core_validation.txt");
  for (std::string line; std::getline(f, line);)
    if (line.find("VALID_ERROR") != std::string::npos) errors.push_back(line);
  return errors;
}

RunResult view(const std::string& args) { return nnxr::test::run_nnxr("view --xr --stats " + args, kLayers); }

TEST(XrView, WalksTheSessionStatesAndSubmitsStereoImagesOfTheNetwork) {
  xrsim::client::TestEnv env("view-basic");
  const RunResult r = view("--frames 3 --validation");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string json = last_line(r.out);
  EXPECT_NE(json.find(R"("mode":"xr")"), std::string::npos) << json;
  EXPECT_NE(json.find(R"("session_states":["IDLE","READY","SYNCHRONIZED","VISIBLE","FOCUSED",)"), std::string::npos) << json;
  EXPECT_NE(json.find(R"("STOPPING","IDLE","EXITING"])"), std::string::npos) << json;  // it asked to exit after 3 frames
  EXPECT_NE(json.find(R"("space":"STAGE")"), std::string::npos) << json;
  EXPECT_EQ(json_number(json, "frames"), 3) << json;
  EXPECT_EQ(json_number(json, "validation_errors"), 0) << json;
  EXPECT_GT(json_number(json, "neurons"), 1000) << json;
  EXPECT_TRUE(layer_errors(env).empty()) << layer_errors(env).front();
  EXPECT_NE(r.err.find("headset via nnxr xrsim"), std::string::npos) << r.err;

  // The last frame's two eye images: background almost everywhere, the network's colours in the
  // middle below the horizon (it stands 1 m ahead at 1.3 m, the head at 1.6 m), in both eyes.
  std::vector<fs::path> captures;
  for (const auto& e : fs::directory_iterator(env.capture_dir())) captures.push_back(e.path());
  std::sort(captures.begin(), captures.end());
  ASSERT_GE(captures.size(), 2u);
  for (size_t v = captures.size() - 2; v < captures.size(); ++v) {
    int w = 0, h = 0, n = 0;
    unsigned char* px = stbi_load(captures[v].c_str(), &w, &h, &n, 4);
    ASSERT_NE(px, nullptr) << captures[v];
    const unsigned char* bg = px;  // the corner is background
    int lit = 0, lit_lower_middle = 0;
    for (int y = 0; y < h; ++y)
      for (int x = 0; x < w; ++x) {
        const unsigned char* p = px + 4 * (y * w + x);
        if (std::abs(p[0] - bg[0]) + std::abs(p[1] - bg[1]) + std::abs(p[2] - bg[2]) > 30) {
          ++lit;
          if (y > h / 2 && x > w / 4 && x < 3 * w / 4) ++lit_lower_middle;
        }
      }
    stbi_image_free(px);
    EXPECT_GT(lit, 50) << captures[v];
    EXPECT_LT(lit, w * h / 4) << captures[v];
    EXPECT_GT(lit_lower_middle, lit * 9 / 10) << captures[v];
  }
}

TEST(XrView, OneHandGrabCarriesTheNetworkAndTheThumbstickStepsThresholds) {
  xrsim::client::TestEnv env("view-grab");
  // The scene is shown within the first frames (the worker loads it while they are drawn); the
  // gestures come well after: a right-hand grab moving the hand up 0.3 m, then the right
  // thumbstick up (neuron threshold) and right (connection threshold).
  env.set_script(R"(
grip right 0.2 1.2 -0.3
frame 200
/user/hand/right/input/squeeze/value 1.0
frame 210
grip right 0.2 1.35 -0.3
frame 220
grip right 0.2 1.5 -0.3
frame 230
/user/hand/right/input/squeeze/value 0.0
frame 240
/user/hand/right/input/thumbstick 0 1
frame 245
/user/hand/right/input/thumbstick 0 0
frame 250
/user/hand/right/input/thumbstick 1 0
frame 255
/user/hand/right/input/thumbstick 0 0
)");
  const RunResult r = view("--frames 280");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string json = last_line(r.out);
  const auto t = json_triple(json, "translation");
  ASSERT_EQ(t.size(), 3u) << json;
  // Placed at (…, 1.3, −1) facing the user; the grab moved it with the hand: +0.3 m in Y.
  EXPECT_NEAR(t[1], 1.6, 1e-3) << json;
  EXPECT_NEAR(t[2], -1.0, 1e-3) << json;
  EXPECT_GT(json_number(json, "neuron"), 0) << json;               // was 0
  EXPECT_GT(json_number(json, "connection"), 0.5 + 1e-6) << json;  // was 0.5
  EXPECT_TRUE(layer_errors(env).empty()) << layer_errors(env).front();
}

TEST(XrView, SessionLossEndsTheRunCleanly) {
  xrsim::client::TestEnv env("view-loss");
  env.set_script("frame 40\nlose_session\n");
  const RunResult r = view("--frames 100000");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const std::string json = last_line(r.out);
  EXPECT_NE(json.find(R"("LOSS_PENDING"])"), std::string::npos) << json;
  EXPECT_NE(r.err.find("the OpenXR session was lost"), std::string::npos) << r.err;
  EXPECT_TRUE(layer_errors(env).empty()) << layer_errors(env).front();
}

TEST(XrView, RuntimeExitRequestEndsTheRun) {
  xrsim::client::TestEnv env("view-exit");
  env.set_script("frame 30\nrequest_exit\n");
  const RunResult r = view("--frames 100000");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const std::string json = last_line(r.out);
  EXPECT_NE(json.find(R"("STOPPING","IDLE","EXITING"])"), std::string::npos) << json;
  EXPECT_TRUE(layer_errors(env).empty()) << layer_errors(env).front();
}

TEST(XrView, WithoutARuntimeXrIsAOneLineError) {
  const RunResult r = nnxr::test::run_nnxr("view --xr", "XR_RUNTIME_JSON=/nonexistent/runtime.json");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("nnxr: --xr: no OpenXR runtime"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

}  // namespace
