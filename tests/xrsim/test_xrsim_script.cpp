// The simulated runtime's script parser and interaction profile tables, on their own.
#include "tests/xrsim/runtime/profiles.h"
#include "tests/xrsim/runtime/script.h"

#include <gtest/gtest.h>

namespace {

using xrsim::Script;
using xrsim::ScriptState;
using xrsim::ValueKind;

Script parse(const std::string& text) {
  std::string error;
  auto s = Script::parse(text, "test", &error);
  EXPECT_TRUE(s.has_value()) << error;
  return s.value_or(Script{});
}

std::string parse_error(const std::string& text) {
  std::string error;
  auto s = Script::parse(text, "test", &error);
  EXPECT_FALSE(s.has_value()) << "accepted: " << text;
  return error;
}

TEST(XrsimScript, ValuesHoldUntilChangedAndEventsFireOnce) {
  Script s = parse(
      "# a comment\n"
      "stage off\n"
      "view_size 64 32\n"
      "frame 0\n"
      "head 0 1.5 0\n"
      "/user/hand/right/input/thumbstick 0.5 -0.5\n"
      "frame 3\n"
      "grip left 1 2 3  0 0 0 1\n"
      "/user/hand/right/input/squeeze/value 0.75  # half-pressed\n"
      "lose_session\n"
      "frame 5\n"
      "ipd 0.06\n"
      "request_exit\n");
  EXPECT_FALSE(s.stage_enabled());
  EXPECT_EQ(s.view_width(), 64u);
  EXPECT_EQ(s.view_height(), 32u);
  ScriptState f0 = s.at(0);
  EXPECT_FLOAT_EQ(f0.head.position.y, 1.5f);
  EXPECT_FLOAT_EQ(f0.input("/user/hand/right/input/thumbstick/x"), 0.5f);
  EXPECT_FLOAT_EQ(f0.input("/user/hand/right/input/thumbstick/y"), -0.5f);
  EXPECT_FLOAT_EQ(f0.input("/user/hand/right/input/squeeze/value"), 0.0f);
  EXPECT_FALSE(f0.lose_session);
  ScriptState f3 = s.at(3);
  EXPECT_TRUE(f3.lose_session);
  EXPECT_FLOAT_EQ(f3.grip[0].position.z, 3.0f);
  EXPECT_FLOAT_EQ(f3.input("/user/hand/right/input/squeeze/value"), 0.75f);
  ScriptState f4 = s.at(4);
  EXPECT_FALSE(f4.lose_session);  // events only at their frame
  EXPECT_FLOAT_EQ(f4.input("/user/hand/right/input/squeeze/value"), 0.75f);  // values hold
  EXPECT_FLOAT_EQ(f4.ipd, 0.064f);
  ScriptState f9 = s.at(9);
  EXPECT_FLOAT_EQ(f9.ipd, 0.06f);
  EXPECT_FALSE(f9.request_exit);
  EXPECT_TRUE(s.at(5).request_exit);
}

TEST(XrsimScript, ErrorsNameTheLine) {
  EXPECT_EQ(parse_error("frame 0\nhead 0 1\n"), "test:2: expected 'head px py pz [qx qy qz qw]' with a unit quaternion");
  EXPECT_NE(parse_error("frame 2\nframe 1\n").find("test:2:"), std::string::npos);
  EXPECT_NE(parse_error("frame 0\nstage off\n").find("must come before"), std::string::npos);
  EXPECT_NE(parse_error("jump\n").find("unknown command 'jump'"), std::string::npos);
  EXPECT_NE(parse_error("/user/hand/right/output/haptic 1\n").find("not an input path"), std::string::npos);
  EXPECT_NE(parse_error("/user/hand/right/input/trigger/value x\n").find("not a number"), std::string::npos);
  EXPECT_NE(parse_error("head 0 0 0 0 0 0 2\n").find("unit quaternion"), std::string::npos);
  EXPECT_NE(parse_error("frame -1\n").find("test:1:"), std::string::npos);
  EXPECT_NE(parse_error("view_size 0 10\n").find("view_size"), std::string::npos);
}

TEST(XrsimProfiles, BindingValidationAndReading) {
  const std::string touch = "/interaction_profiles/oculus/touch_controller";
  const std::string simple = "/interaction_profiles/khr/simple_controller";
  EXPECT_TRUE(xrsim::known_profile(touch));
  EXPECT_FALSE(xrsim::known_profile("/interaction_profiles/acme/teapot"));
  EXPECT_TRUE(xrsim::profile_accepts(touch, "/user/hand/right/input/squeeze/value"));
  EXPECT_TRUE(xrsim::profile_accepts(touch, "/user/hand/right/input/squeeze"));
  EXPECT_TRUE(xrsim::profile_accepts(touch, "/user/hand/left/input/x/click"));
  EXPECT_FALSE(xrsim::profile_accepts(touch, "/user/hand/right/input/x/click"));  // X is on the left only
  EXPECT_FALSE(xrsim::profile_accepts(simple, "/user/hand/right/input/squeeze/value"));
  EXPECT_TRUE(xrsim::profile_accepts(simple, "/user/hand/right/output/haptic"));
  EXPECT_FALSE(xrsim::profile_accepts(simple, "/user/head/input/select/click"));

  std::string error;
  auto script = Script::parse(
      "/user/hand/right/input/squeeze/value 0.4\n"
      "/user/hand/right/input/trigger/value 0.6\n"
      "/user/hand/right/input/thumbstick 0.1 0.2\n"
      "/user/hand/right/input/a/click 1\n",
      "t", &error);
  ASSERT_TRUE(script) << error;
  ScriptState st = script->at(0);
  float v[2] = {0, 0};
  ASSERT_TRUE(xrsim::read_binding(touch, "/user/hand/right/input/squeeze", ValueKind::kFloat, st, v));
  EXPECT_FLOAT_EQ(v[0], 0.4f);  // identifier alone reads /value
  ASSERT_TRUE(xrsim::read_binding(touch, "/user/hand/right/input/squeeze/value", ValueKind::kBoolean, st, v));
  EXPECT_EQ(v[0], 0.0f);  // 0.4 is below the threshold
  ASSERT_TRUE(xrsim::read_binding(touch, "/user/hand/right/input/trigger", ValueKind::kBoolean, st, v));
  EXPECT_EQ(v[0], 1.0f);  // 0.6 is above it
  ASSERT_TRUE(xrsim::read_binding(touch, "/user/hand/right/input/a", ValueKind::kBoolean, st, v));
  EXPECT_EQ(v[0], 1.0f);
  ASSERT_TRUE(xrsim::read_binding(touch, "/user/hand/right/input/thumbstick", ValueKind::kVector2, st, v));
  EXPECT_FLOAT_EQ(v[0], 0.1f);
  EXPECT_FLOAT_EQ(v[1], 0.2f);
  EXPECT_FALSE(xrsim::read_binding(touch, "/user/hand/right/input/thumbstick/x", ValueKind::kVector2, st, v));
  EXPECT_FALSE(xrsim::read_binding(touch, "/user/hand/right/input/grip/pose", ValueKind::kFloat, st, v));
  EXPECT_TRUE(xrsim::binding_fits(touch, "/user/hand/right/input/grip/pose", ValueKind::kPose));
  EXPECT_FALSE(xrsim::binding_fits(touch, "/user/hand/right/output/haptic", ValueKind::kFloat));
}

TEST(XrsimScript, HeadsetAbsenceFailuresAndShouldRender) {
  Script s = parse(
      "no_headset 3\n"
      "srgb off\n"
      "fail xrAttachSessionActionSets\n"
      "frame 2\n"
      "should_render off\n"
      "lose_session 4\n"
      "frame 5\n"
      "should_render on\n"
      "lose_session forever\n");
  EXPECT_EQ(s.no_headset_calls(), 3);
  EXPECT_FALSE(s.srgb_formats());
  EXPECT_TRUE(s.fails("xrAttachSessionActionSets"));
  EXPECT_FALSE(s.fails("xrCreateSession"));
  EXPECT_TRUE(s.at(1).should_render);
  EXPECT_FALSE(s.at(2).should_render);
  EXPECT_TRUE(s.at(2).lose_session);
  EXPECT_EQ(s.at(2).away_calls, 4);
  EXPECT_FALSE(s.at(3).should_render);  // held until changed
  EXPECT_FALSE(s.at(3).lose_session);
  EXPECT_TRUE(s.at(5).should_render);
  EXPECT_EQ(s.at(5).away_calls, -1);
  EXPECT_EQ(parse("no_headset\n").no_headset_calls(), -1);
  EXPECT_EQ(parse("").no_headset_calls(), 0);
  EXPECT_TRUE(parse("").srgb_formats());
  EXPECT_NE(parse_error("should_render maybe\n").find("should_render on"), std::string::npos);
  EXPECT_NE(parse_error("lose_session soon\n").find("lose_session"), std::string::npos);
  EXPECT_NE(parse_error("fail CreateSession\n").find("fail xrFunctionName"), std::string::npos);
  EXPECT_NE(parse_error("frame 1\nno_headset\n").find("before the first"), std::string::npos);
  EXPECT_FALSE(parse("").other_gpu_after_loss());
  EXPECT_TRUE(parse("gpu_after_loss other\n").other_gpu_after_loss());
  EXPECT_FALSE(parse("gpu_after_loss same\n").other_gpu_after_loss());
  EXPECT_NE(parse_error("gpu_after_loss elsewhere\n").find("gpu_after_loss other"), std::string::npos);
}

}  // namespace
