// Session state machine of the simulated runtime: scripted session loss and exit requests, the
// app's own exit request, and the errors for out-of-order session calls.
#include "tests/xrsim/client/xr_client.h"
#include "tests/xrsim/xrsim.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>

namespace {

using xrsim::client::Client;
using xrsim::client::TestEnv;
using Colours = std::array<std::array<float, 4>, 2>;
const Colours kGrey = {{{0.2f, 0.2f, 0.2f, 1.0f}, {0.2f, 0.2f, 0.2f, 1.0f}}};

xrsim::Record read(const TestEnv& env) {
  std::string error;
  auto rec = xrsim::read_record(env.record_path(), &error);
  EXPECT_TRUE(rec.has_value()) << error;
  return rec.value_or(xrsim::Record{});
}

TEST(XrsimEvents, ScriptedSessionLossThenANewSession) {
  TestEnv env("loss");
  env.set_script("frame 5\nlose_session\n");
  Client c;
  ASSERT_EQ(c.start(), XR_SUCCESS) << c.error;
  ASSERT_EQ(c.run_until(XR_SESSION_STATE_LOSS_PENDING, 20, kGrey), XR_SUCCESS) << c.error;
  EXPECT_FALSE(c.running);
  EXPECT_EQ(c.lost_calls, 1);  // xrBeginFrame after the losing frame's xrWaitFrame

  // Once LOSS_PENDING was delivered, the frame loop reports the loss.
  XrFrameState fs{XR_TYPE_FRAME_STATE};
  EXPECT_EQ(xrWaitFrame(c.session, nullptr, &fs), XR_ERROR_SESSION_LOST);
  XrSessionBeginInfo bi{XR_TYPE_SESSION_BEGIN_INFO};
  bi.primaryViewConfigurationType = XR_VIEW_CONFIGURATION_TYPE_PRIMARY_STEREO;
  EXPECT_EQ(xrBeginSession(c.session, &bi), XR_ERROR_SESSION_LOST);

  // Tear down and rebuild: the instance and Vulkan device stay.
  c.destroy_session();
  ASSERT_EQ(c.create_session(), XR_SUCCESS) << c.error;
  ASSERT_EQ(c.run_until(XR_SESSION_STATE_FOCUSED, 10, kGrey), XR_SUCCESS) << c.error;
  c.destroy_all();

  xrsim::Record rec = read(env);
  auto names = rec.state_names();
  auto loss = std::find(names.begin(), names.end(), "XR_SESSION_STATE_LOSS_PENDING");
  ASSERT_NE(loss, names.end());
  EXPECT_EQ(rec.states[loss - names.begin()].frame, 5u);
  // After the loss: a new session from IDLE up to FOCUSED.
  std::vector<std::string> after(loss + 1, names.end());
  const std::vector<std::string> expected = {"XR_SESSION_STATE_IDLE", "XR_SESSION_STATE_READY",
                                             "XR_SESSION_STATE_SYNCHRONIZED", "XR_SESSION_STATE_VISIBLE",
                                             "XR_SESSION_STATE_FOCUSED"};
  EXPECT_EQ(after, expected);
  // The frame after the loss and the two calls refused above are the only errors.
  ASSERT_EQ(rec.errors.size(), 3u);
  EXPECT_EQ(rec.errors[0].function, "xrBeginFrame");
  EXPECT_EQ(rec.errors[1].function, "xrWaitFrame");
  EXPECT_EQ(rec.errors[2].function, "xrBeginSession");
  for (const auto& e : rec.errors) EXPECT_EQ(e.result, "XR_ERROR_SESSION_LOST");
}

TEST(XrsimEvents, ALostSessionFailsTheNextCallBeforeTheEventIsPolled) {
  TestEnv env("loss-strict");
  env.set_script("frame 3\nlose_session\n");
  Client c;
  ASSERT_EQ(c.start(), XR_SUCCESS) << c.error;
  ASSERT_EQ(c.run_until(XR_SESSION_STATE_FOCUSED, 10, kGrey), XR_SUCCESS) << c.error;
  // Frames until the runtime loses the session, without polling events in between.
  XrResult r = XR_SUCCESS;
  int frames = 0;
  for (; frames < 10 && XR_SUCCEEDED(r); ++frames) r = c.frame(kGrey);
  EXPECT_EQ(r, XR_ERROR_SESSION_LOST) << c.error;
  // The losing frame's xrWaitFrame succeeded; its xrBeginFrame did not.
  EXPECT_NE(c.error.find("xrBeginFrame"), std::string::npos) << c.error;
  EXPECT_EQ(std::count(c.states.begin(), c.states.end(), XR_SESSION_STATE_LOSS_PENDING), 0);
  // Every call on the session fails the same way; the event is still there to poll.
  XrSpaceLocation loc{XR_TYPE_SPACE_LOCATION};
  EXPECT_EQ(xrLocateSpace(c.app_space, c.app_space, c.last_display_time, &loc), XR_ERROR_SESSION_LOST);
  XrFrameState fs{XR_TYPE_FRAME_STATE};
  EXPECT_EQ(xrWaitFrame(c.session, nullptr, &fs), XR_ERROR_SESSION_LOST);
  ASSERT_EQ(c.poll(), XR_SUCCESS) << c.error;
  EXPECT_EQ(c.states.back(), XR_SESSION_STATE_LOSS_PENDING);
  EXPECT_TRUE(c.layer_messages().empty()) << c.layer_messages().front();
}

TEST(XrsimEvents, NoHeadsetUntilTheSystemAppears) {
  TestEnv env("no-headset");
  env.set_script("no_headset 2\n");
  Client c;
  ASSERT_EQ(c.create_instance(), XR_SUCCESS) << c.error;
  XrSystemGetInfo si{XR_TYPE_SYSTEM_GET_INFO};
  si.formFactor = XR_FORM_FACTOR_HEAD_MOUNTED_DISPLAY;
  XrSystemId system = XR_NULL_SYSTEM_ID;
  EXPECT_EQ(xrGetSystem(c.instance, &si, &system), XR_ERROR_FORM_FACTOR_UNAVAILABLE);
  EXPECT_EQ(xrGetSystem(c.instance, &si, &system), XR_ERROR_FORM_FACTOR_UNAVAILABLE);
  EXPECT_EQ(xrGetSystem(c.instance, &si, &system), XR_SUCCESS);
  EXPECT_NE(system, XR_NULL_SYSTEM_ID);
  // Now a whole session works.
  ASSERT_EQ(c.create_vulkan(), XR_SUCCESS) << c.error;
  ASSERT_EQ(c.create_session(), XR_SUCCESS) << c.error;
  ASSERT_EQ(c.run_until(XR_SESSION_STATE_FOCUSED, 10, kGrey), XR_SUCCESS) << c.error;
  EXPECT_TRUE(c.layer_messages().empty()) << c.layer_messages().front();
}

TEST(XrsimEvents, NoHeadsetAtAll) {
  TestEnv env("no-headset-ever");
  env.set_script("no_headset\n");
  Client c;
  ASSERT_EQ(c.create_instance(), XR_SUCCESS) << c.error;
  EXPECT_EQ(c.create_vulkan(), XR_ERROR_FORM_FACTOR_UNAVAILABLE);
  XrSystemGetInfo si{XR_TYPE_SYSTEM_GET_INFO};
  si.formFactor = XR_FORM_FACTOR_HEAD_MOUNTED_DISPLAY;
  XrSystemId system = XR_NULL_SYSTEM_ID;
  for (int i = 0; i < 5; ++i) EXPECT_EQ(xrGetSystem(c.instance, &si, &system), XR_ERROR_FORM_FACTOR_UNAVAILABLE);
}

TEST(XrsimEvents, AfterALossTheHeadsetIsAwayForTheScriptedCalls) {
  TestEnv env("loss-away");
  env.set_script("frame 4\nlose_session 3\n");
  Client c;
  ASSERT_EQ(c.start(), XR_SUCCESS) << c.error;
  ASSERT_EQ(c.run_until(XR_SESSION_STATE_LOSS_PENDING, 20, kGrey), XR_SUCCESS) << c.error;
  c.destroy_session();
  XrSystemGetInfo si{XR_TYPE_SYSTEM_GET_INFO};
  si.formFactor = XR_FORM_FACTOR_HEAD_MOUNTED_DISPLAY;
  XrSystemId system = XR_NULL_SYSTEM_ID;
  EXPECT_EQ(xrGetSystem(c.instance, &si, &system), XR_ERROR_FORM_FACTOR_UNAVAILABLE);
  // No session while the headset is away.
  EXPECT_EQ(c.create_session(), XR_ERROR_SYSTEM_INVALID);
  c.destroy_session();
  EXPECT_EQ(xrGetSystem(c.instance, &si, &system), XR_ERROR_FORM_FACTOR_UNAVAILABLE);
  EXPECT_EQ(xrGetSystem(c.instance, &si, &system), XR_ERROR_FORM_FACTOR_UNAVAILABLE);
  ASSERT_EQ(xrGetSystem(c.instance, &si, &system), XR_SUCCESS);
  ASSERT_EQ(c.create_session(), XR_SUCCESS) << c.error;
  ASSERT_EQ(c.run_until(XR_SESSION_STATE_FOCUSED, 10, kGrey), XR_SUCCESS) << c.error;
}

TEST(XrsimEvents, WaitFramePacesFramesAtTheDisplayRate) {
  TestEnv env("pacing");
  Client c;
  ASSERT_EQ(c.start(), XR_SUCCESS) << c.error;
  ASSERT_EQ(c.run_until(XR_SESSION_STATE_FOCUSED, 10, kGrey), XR_SUCCESS) << c.error;
  // 30 frames of a fast app (nothing rendered: no layers) take at least 29 frame periods.
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 30; ++i) {
    XrFrameState fs{XR_TYPE_FRAME_STATE};
    ASSERT_EQ(xrWaitFrame(c.session, nullptr, &fs), XR_SUCCESS);
    ASSERT_EQ(xrBeginFrame(c.session, nullptr), XR_SUCCESS);
    XrFrameEndInfo ei{XR_TYPE_FRAME_END_INFO};
    ei.displayTime = fs.predictedDisplayTime;
    ei.environmentBlendMode = XR_ENVIRONMENT_BLEND_MODE_OPAQUE;
    ASSERT_EQ(xrEndFrame(c.session, &ei), XR_SUCCESS);
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_GE(seconds, 29 * double(xrsim::kFramePeriod) * 1e-9);
  EXPECT_LT(seconds, 30.0);
}

TEST(XrsimEvents, ShouldRenderFollowsTheScript) {
  TestEnv env("should-render");
  env.set_script("frame 20\nshould_render off\nframe 25\nshould_render on\n");
  Client c;
  ASSERT_EQ(c.start(), XR_SUCCESS) << c.error;
  ASSERT_EQ(c.run_until(XR_SESSION_STATE_FOCUSED, 10, kGrey), XR_SUCCESS) << c.error;
  std::vector<bool> render;
  for (int i = 0; i < 40; ++i) {
    XrFrameState fs{XR_TYPE_FRAME_STATE};
    ASSERT_EQ(xrWaitFrame(c.session, nullptr, &fs), XR_SUCCESS);
    const uint64_t frame = uint64_t((fs.predictedDisplayTime - xrsim::kFirstDisplayTime) / xrsim::kFramePeriod);
    if (frame >= 15 && frame < 30) render.push_back(fs.shouldRender == XR_TRUE);
    ASSERT_EQ(xrBeginFrame(c.session, nullptr), XR_SUCCESS);
    XrFrameEndInfo ei{XR_TYPE_FRAME_END_INFO};
    ei.displayTime = fs.predictedDisplayTime;
    ei.environmentBlendMode = XR_ENVIRONMENT_BLEND_MODE_OPAQUE;
    ASSERT_EQ(xrEndFrame(c.session, &ei), XR_SUCCESS);
  }
  const std::vector<bool> expected = {true, true, true, true, true, false, false, false, false, false,
                                      true, true, true, true, true};
  EXPECT_EQ(render, expected);
}

TEST(XrsimEvents, ScriptedExitRequestWalksDownToExiting) {
  TestEnv env("exit");
  env.set_script("frame 6\nrequest_exit\n");
  Client c;
  ASSERT_EQ(c.start(), XR_SUCCESS) << c.error;
  ASSERT_EQ(c.run_until(XR_SESSION_STATE_EXITING, 20, kGrey), XR_SUCCESS) << c.error;
  const std::vector<XrSessionState> tail = {XR_SESSION_STATE_FOCUSED, XR_SESSION_STATE_VISIBLE,
                                            XR_SESSION_STATE_SYNCHRONIZED, XR_SESSION_STATE_STOPPING,
                                            XR_SESSION_STATE_IDLE, XR_SESSION_STATE_EXITING};
  ASSERT_GE(c.states.size(), tail.size());
  EXPECT_TRUE(std::equal(tail.begin(), tail.end(), c.states.end() - tail.size()));
  c.destroy_all();
  xrsim::Record rec = read(env);
  EXPECT_TRUE(rec.errors.empty());
  auto stopping = std::find_if(rec.states.begin(), rec.states.end(),
                               [](const auto& s) { return s.state == "XR_SESSION_STATE_STOPPING"; });
  ASSERT_NE(stopping, rec.states.end());
  EXPECT_EQ(stopping->frame, 6u);
}

TEST(XrsimEvents, OutOfOrderSessionCallsAreRefused) {
  TestEnv env("order");
  Client c;
  ASSERT_EQ(c.start(), XR_SUCCESS) << c.error;
  XrSessionBeginInfo bi{XR_TYPE_SESSION_BEGIN_INFO};
  bi.primaryViewConfigurationType = XR_VIEW_CONFIGURATION_TYPE_PRIMARY_STEREO;
  // READY is queued but not yet delivered.
  EXPECT_EQ(xrBeginSession(c.session, &bi), XR_ERROR_SESSION_NOT_READY);
  EXPECT_EQ(xrEndSession(c.session), XR_ERROR_SESSION_NOT_RUNNING);
  EXPECT_EQ(xrRequestExitSession(c.session), XR_ERROR_SESSION_NOT_RUNNING);
  XrFrameState fs{XR_TYPE_FRAME_STATE};
  EXPECT_EQ(xrWaitFrame(c.session, nullptr, &fs), XR_ERROR_SESSION_NOT_RUNNING);
  ASSERT_EQ(c.run_until(XR_SESSION_STATE_FOCUSED, 10, kGrey), XR_SUCCESS) << c.error;
  EXPECT_EQ(xrBeginSession(c.session, &bi), XR_ERROR_SESSION_RUNNING);
  EXPECT_EQ(xrEndSession(c.session), XR_ERROR_SESSION_NOT_STOPPING);

  // A second xrWaitFrame without xrBeginFrame would block forever in a real runtime.
  ASSERT_EQ(xrWaitFrame(c.session, nullptr, &fs), XR_SUCCESS);
  EXPECT_TRUE(fs.shouldRender);
  EXPECT_EQ(fs.predictedDisplayPeriod, xrsim::kFramePeriod);
  EXPECT_EQ(xrWaitFrame(c.session, nullptr, &fs), XR_ERROR_CALL_ORDER_INVALID);
  ASSERT_EQ(xrBeginFrame(c.session, nullptr), XR_SUCCESS);
  // Beginning again discards the frame in progress.
  XrFrameState fs2{XR_TYPE_FRAME_STATE};
  ASSERT_EQ(xrWaitFrame(c.session, nullptr, &fs2), XR_SUCCESS);
  EXPECT_EQ(fs2.predictedDisplayTime, fs.predictedDisplayTime + xrsim::kFramePeriod);
  EXPECT_EQ(xrBeginFrame(c.session, nullptr), XR_FRAME_DISCARDED);
  XrFrameEndInfo ei{XR_TYPE_FRAME_END_INFO};
  ei.displayTime = fs2.predictedDisplayTime;
  ei.environmentBlendMode = XR_ENVIRONMENT_BLEND_MODE_ADDITIVE;
  EXPECT_EQ(xrEndFrame(c.session, &ei), XR_ERROR_ENVIRONMENT_BLEND_MODE_UNSUPPORTED);
  ei.environmentBlendMode = XR_ENVIRONMENT_BLEND_MODE_OPAQUE;
  EXPECT_EQ(xrEndFrame(c.session, &ei), XR_SUCCESS);
  EXPECT_EQ(xrEndFrame(c.session, &ei), XR_ERROR_CALL_ORDER_INVALID);
  EXPECT_TRUE(c.validation_messages.empty());
  EXPECT_TRUE(c.layer_messages().empty()) << c.layer_messages().front();
}

}  // namespace
