// Actions of the simulated runtime: scripted controller inputs reach the app's actions through the
// bindings it suggested, poses through action spaces, and haptics are recorded.
#include "tests/xrsim/client/xr_client.h"
#include "tests/xrsim/xrsim.h"

#include <gtest/gtest.h>

#include <cstring>
#include <map>

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

// The app side of the test: an action set as nnxr's xr/ will have it (a table of actions and the
// suggested bindings per profile).
struct Actions {
  XrInstance instance = XR_NULL_HANDLE;
  XrActionSet set = XR_NULL_HANDLE;
  XrPath left = XR_NULL_PATH, right = XR_NULL_PATH;
  XrAction grab = XR_NULL_HANDLE, thumb = XR_NULL_HANDLE, select = XR_NULL_HANDLE, pose = XR_NULL_HANDLE,
           vibrate = XR_NULL_HANDLE;

  XrPath path(const char* s) {
    XrPath p = XR_NULL_PATH;
    EXPECT_EQ(xrStringToPath(instance, s, &p), XR_SUCCESS) << s;
    return p;
  }

  XrAction make(const char* name, XrActionType type, bool hands) {
    XrActionCreateInfo ci{XR_TYPE_ACTION_CREATE_INFO};
    std::strcpy(ci.actionName, name);
    std::strcpy(ci.localizedActionName, name);
    ci.actionType = type;
    XrPath both[] = {left, right};
    ci.countSubactionPaths = hands ? 2 : 0;
    ci.subactionPaths = hands ? both : nullptr;
    XrAction a = XR_NULL_HANDLE;
    EXPECT_EQ(xrCreateAction(set, &ci, &a), XR_SUCCESS) << name;
    return a;
  }

  XrResult suggest(const char* profile, const std::vector<std::pair<XrAction, const char*>>& bindings) {
    std::vector<XrActionSuggestedBinding> b;
    for (const auto& [a, p] : bindings) b.push_back({a, path(p)});
    XrInteractionProfileSuggestedBinding sb{XR_TYPE_INTERACTION_PROFILE_SUGGESTED_BINDING};
    sb.interactionProfile = path(profile);
    sb.countSuggestedBindings = static_cast<uint32_t>(b.size());
    sb.suggestedBindings = b.data();
    return xrSuggestInteractionProfileBindings(instance, &sb);
  }

  void create(XrInstance inst) {
    instance = inst;
    left = path("/user/hand/left");
    right = path("/user/hand/right");
    XrActionSetCreateInfo si{XR_TYPE_ACTION_SET_CREATE_INFO};
    std::strcpy(si.actionSetName, "nnxr");
    std::strcpy(si.localizedActionSetName, "nnxr");
    ASSERT_EQ(xrCreateActionSet(instance, &si, &set), XR_SUCCESS);
    grab = make("grab", XR_ACTION_TYPE_FLOAT_INPUT, true);
    thumb = make("thumbstick", XR_ACTION_TYPE_VECTOR2F_INPUT, true);
    select = make("select", XR_ACTION_TYPE_BOOLEAN_INPUT, false);
    pose = make("hand_pose", XR_ACTION_TYPE_POSE_INPUT, true);
    vibrate = make("vibrate", XR_ACTION_TYPE_VIBRATION_OUTPUT, true);
    ASSERT_EQ(suggest("/interaction_profiles/khr/simple_controller",
                      {{select, "/user/hand/right/input/select/click"},
                       {pose, "/user/hand/left/input/grip/pose"},
                       {pose, "/user/hand/right/input/grip/pose"},
                       {vibrate, "/user/hand/right/output/haptic"}}),
              XR_SUCCESS);
    ASSERT_EQ(suggest("/interaction_profiles/oculus/touch_controller",
                      {{grab, "/user/hand/left/input/squeeze/value"},
                       {grab, "/user/hand/right/input/squeeze/value"},
                       {thumb, "/user/hand/right/input/thumbstick"},
                       {select, "/user/hand/right/input/trigger/value"},
                       {pose, "/user/hand/left/input/grip/pose"},
                       {pose, "/user/hand/right/input/grip/pose"},
                       {vibrate, "/user/hand/left/output/haptic"},
                       {vibrate, "/user/hand/right/output/haptic"}}),
              XR_SUCCESS);
  }

  XrResult attach(XrSession session) {
    XrSessionActionSetsAttachInfo ai{XR_TYPE_SESSION_ACTION_SETS_ATTACH_INFO};
    ai.countActionSets = 1;
    ai.actionSets = &set;
    return xrAttachSessionActionSets(session, &ai);
  }

  XrResult sync(XrSession session) {
    XrActiveActionSet active{set, XR_NULL_PATH};
    XrActionsSyncInfo si{XR_TYPE_ACTIONS_SYNC_INFO};
    si.countActiveActionSets = 1;
    si.activeActionSets = &active;
    return xrSyncActions(session, &si);
  }

  XrActionStateFloat get_float(XrSession s, XrAction a, XrPath sub) {
    XrActionStateGetInfo gi{XR_TYPE_ACTION_STATE_GET_INFO};
    gi.action = a;
    gi.subactionPath = sub;
    XrActionStateFloat st{XR_TYPE_ACTION_STATE_FLOAT};
    EXPECT_EQ(xrGetActionStateFloat(s, &gi, &st), XR_SUCCESS);
    return st;
  }
  XrActionStateVector2f get_vec2(XrSession s, XrAction a, XrPath sub) {
    XrActionStateGetInfo gi{XR_TYPE_ACTION_STATE_GET_INFO};
    gi.action = a;
    gi.subactionPath = sub;
    XrActionStateVector2f st{XR_TYPE_ACTION_STATE_VECTOR2F};
    EXPECT_EQ(xrGetActionStateVector2f(s, &gi, &st), XR_SUCCESS);
    return st;
  }
  XrActionStateBoolean get_bool(XrSession s, XrAction a) {
    XrActionStateGetInfo gi{XR_TYPE_ACTION_STATE_GET_INFO};
    gi.action = a;
    XrActionStateBoolean st{XR_TYPE_ACTION_STATE_BOOLEAN};
    EXPECT_EQ(xrGetActionStateBoolean(s, &gi, &st), XR_SUCCESS);
    return st;
  }
};

const char* kScript =
    "frame 0\n"
    "grip right 0.3 1.2 -0.4\n"
    "frame 4\n"
    "/user/hand/right/input/squeeze/value 1.0\n"
    "/user/hand/right/input/thumbstick 0 0.8\n"
    "/user/hand/right/input/trigger/value 0.9\n"
    "frame 6\n"
    "/user/hand/right/input/squeeze/value 0.25\n";

TEST(XrsimActions, ScriptedInputsReachActionsThroughTouchBindings) {
  TestEnv env("actions");
  env.set_script(kScript);
  Client c;
  ASSERT_EQ(c.start(), XR_SUCCESS) << c.error;
  Actions a;
  ASSERT_NO_FATAL_FAILURE(a.create(c.instance));

  // Before attachment, states cannot be read.
  XrActionStateGetInfo gi{XR_TYPE_ACTION_STATE_GET_INFO};
  gi.action = a.grab;
  XrActionStateFloat fst{XR_TYPE_ACTION_STATE_FLOAT};
  EXPECT_EQ(xrGetActionStateFloat(c.session, &gi, &fst), XR_ERROR_ACTIONSET_NOT_ATTACHED);
  XrActionSpaceCreateInfo asi{XR_TYPE_ACTION_SPACE_CREATE_INFO};
  asi.action = a.pose;
  asi.subactionPath = a.right;
  asi.poseInActionSpace.orientation.w = 1;
  XrSpace hand = XR_NULL_HANDLE;
  ASSERT_EQ(xrCreateActionSpace(c.session, &asi, &hand), XR_SUCCESS);
  ASSERT_EQ(a.attach(c.session), XR_SUCCESS);
  EXPECT_EQ(a.attach(c.session), XR_ERROR_ACTIONSETS_ALREADY_ATTACHED);

  // frame index -> (grab right, grab left, thumb y, select)
  std::map<XrTime, std::array<float, 4>> seen;
  for (int i = 0; i < 10; ++i) {
    ASSERT_EQ(c.poll(), XR_SUCCESS) << c.error;
    ASSERT_EQ(c.frame(kGrey), XR_SUCCESS) << c.error;
    if (c.state != XR_SESSION_STATE_FOCUSED) continue;
    ASSERT_EQ(a.sync(c.session), XR_SUCCESS);
    auto right = a.get_float(c.session, a.grab, a.right);
    auto left = a.get_float(c.session, a.grab, a.left);
    auto thumb = a.get_vec2(c.session, a.thumb, a.right);
    auto sel = a.get_bool(c.session, a.select);
    EXPECT_TRUE(right.isActive);
    EXPECT_TRUE(left.isActive);
    EXPECT_TRUE(thumb.isActive);
    EXPECT_TRUE(sel.isActive);
    EXPECT_FALSE(a.get_vec2(c.session, a.thumb, a.left).isActive);  // no left thumbstick binding
    seen[c.last_display_time] = {right.currentState, left.currentState, thumb.currentState.y,
                                 sel.currentState ? 1.0f : 0.0f};
  }
  auto at = [&](int frame) { return seen.at(xrsim::kFirstDisplayTime + frame * xrsim::kFramePeriod); };
  ASSERT_TRUE(seen.count(xrsim::kFirstDisplayTime + 3 * xrsim::kFramePeriod)) << "not focused by frame 3";
  EXPECT_EQ(at(3), (std::array<float, 4>{0, 0, 0, 0}));
  EXPECT_EQ(at(4), (std::array<float, 4>{1.0f, 0, 0.8f, 1}));
  EXPECT_EQ(at(5), (std::array<float, 4>{1.0f, 0, 0.8f, 1}));  // values hold
  EXPECT_EQ(at(6), (std::array<float, 4>{0.25f, 0, 0.8f, 1}));
  EXPECT_EQ(at(9), (std::array<float, 4>{0.25f, 0, 0.8f, 1}));

  // The combined state (no subaction path) and the change flag.
  auto any = a.get_float(c.session, a.grab, XR_NULL_PATH);
  EXPECT_FLOAT_EQ(any.currentState, 0.25f);
  EXPECT_FALSE(any.changedSinceLastSync);

  // The active profile and bound sources.
  XrInteractionProfileState ps{XR_TYPE_INTERACTION_PROFILE_STATE};
  ASSERT_EQ(xrGetCurrentInteractionProfile(c.session, a.right, &ps), XR_SUCCESS);
  EXPECT_EQ(ps.interactionProfile, a.path("/interaction_profiles/oculus/touch_controller"));
  EXPECT_EQ(c.profile_changes, 1);
  XrBoundSourcesForActionEnumerateInfo bi{XR_TYPE_BOUND_SOURCES_FOR_ACTION_ENUMERATE_INFO};
  bi.action = a.grab;
  uint32_t n = 0;
  ASSERT_EQ(xrEnumerateBoundSourcesForAction(c.session, &bi, 0, &n, nullptr), XR_SUCCESS);
  EXPECT_EQ(n, 2u);

  // The right grip pose, located in STAGE.
  XrSpaceLocation loc{XR_TYPE_SPACE_LOCATION};
  ASSERT_EQ(xrLocateSpace(hand, c.app_space, c.last_display_time, &loc), XR_SUCCESS);
  ASSERT_TRUE(loc.locationFlags & XR_SPACE_LOCATION_POSITION_VALID_BIT);
  EXPECT_NEAR(loc.pose.position.x, 0.3f, 1e-5);
  EXPECT_NEAR(loc.pose.position.y, 1.2f, 1e-5);
  EXPECT_NEAR(loc.pose.position.z, -0.4f, 1e-5);

  // Misuse.
  XrActionStateBoolean bst{XR_TYPE_ACTION_STATE_BOOLEAN};
  EXPECT_EQ(xrGetActionStateBoolean(c.session, &gi, &bst), XR_ERROR_ACTION_TYPE_MISMATCH);
  gi.action = a.select;
  gi.subactionPath = a.right;  // select was created without subaction paths
  EXPECT_EQ(xrGetActionStateBoolean(c.session, &gi, &bst), XR_ERROR_PATH_UNSUPPORTED);
  EXPECT_TRUE(c.validation_messages.empty());
  EXPECT_TRUE(c.layer_messages().empty()) << c.layer_messages().front();
}

TEST(XrsimActions, HapticsAreRecorded) {
  TestEnv env("haptics");
  Client c;
  ASSERT_EQ(c.start(), XR_SUCCESS) << c.error;
  Actions a;
  ASSERT_NO_FATAL_FAILURE(a.create(c.instance));
  ASSERT_EQ(a.attach(c.session), XR_SUCCESS);
  XrHapticVibration vib{XR_TYPE_HAPTIC_VIBRATION};
  vib.amplitude = 0.5f;
  vib.duration = 100'000'000;
  vib.frequency = XR_FREQUENCY_UNSPECIFIED;
  XrHapticActionInfo hi{XR_TYPE_HAPTIC_ACTION_INFO};
  hi.action = a.vibrate;
  hi.subactionPath = a.right;
  // Not focused yet: accepted but nothing is felt.
  EXPECT_EQ(xrApplyHapticFeedback(c.session, &hi, reinterpret_cast<XrHapticBaseHeader*>(&vib)), XR_SESSION_NOT_FOCUSED);
  ASSERT_EQ(c.run_until(XR_SESSION_STATE_FOCUSED, 10, kGrey), XR_SUCCESS) << c.error;
  ASSERT_EQ(xrApplyHapticFeedback(c.session, &hi, reinterpret_cast<XrHapticBaseHeader*>(&vib)), XR_SUCCESS);
  ASSERT_EQ(xrStopHapticFeedback(c.session, &hi), XR_SUCCESS);
  hi.action = a.grab;
  EXPECT_EQ(xrApplyHapticFeedback(c.session, &hi, reinterpret_cast<XrHapticBaseHeader*>(&vib)),
            XR_ERROR_ACTION_TYPE_MISMATCH);
  c.destroy_all();
  xrsim::Record rec = read(env);
  ASSERT_EQ(rec.haptics.size(), 2u);
  EXPECT_FALSE(rec.haptics[0].stop);
  EXPECT_EQ(rec.haptics[0].action, "vibrate");
  EXPECT_EQ(rec.haptics[0].path, "/user/hand/right/output/haptic");
  EXPECT_FLOAT_EQ(rec.haptics[0].amplitude, 0.5f);
  EXPECT_EQ(rec.haptics[0].duration, 100'000'000);
  EXPECT_TRUE(rec.haptics[1].stop);
}

TEST(XrsimActions, PreferredSimpleControllerHasNoSqueeze) {
  TestEnv env("simple");
  env.set_script(
      "prefer_profile /interaction_profiles/khr/simple_controller\n"
      "frame 0\n"
      "/user/hand/right/input/select/click 1\n"
      "/user/hand/right/input/squeeze/value 1\n");
  Client c;
  ASSERT_EQ(c.start(), XR_SUCCESS) << c.error;
  Actions a;
  ASSERT_NO_FATAL_FAILURE(a.create(c.instance));
  ASSERT_EQ(a.attach(c.session), XR_SUCCESS);
  ASSERT_EQ(c.run_until(XR_SESSION_STATE_FOCUSED, 10, kGrey), XR_SUCCESS) << c.error;
  ASSERT_EQ(a.sync(c.session), XR_SUCCESS);
  auto sel = a.get_bool(c.session, a.select);
  EXPECT_TRUE(sel.isActive);
  EXPECT_TRUE(sel.currentState);
  EXPECT_FALSE(a.get_float(c.session, a.grab, a.right).isActive);
  XrInteractionProfileState ps{XR_TYPE_INTERACTION_PROFILE_STATE};
  ASSERT_EQ(xrGetCurrentInteractionProfile(c.session, a.left, &ps), XR_SUCCESS);
  EXPECT_EQ(ps.interactionProfile, a.path("/interaction_profiles/khr/simple_controller"));
}

TEST(XrsimActions, UnknownProfilesAndPathsAreUnsupported) {
  TestEnv env("profiles");
  Client c;
  ASSERT_EQ(c.create_instance(), XR_SUCCESS) << c.error;
  Actions a;
  ASSERT_NO_FATAL_FAILURE(a.create(c.instance));
  EXPECT_EQ(a.suggest("/interaction_profiles/acme/teapot", {{a.select, "/user/hand/right/input/select/click"}}),
            XR_ERROR_PATH_UNSUPPORTED);
  EXPECT_EQ(a.suggest("/interaction_profiles/khr/simple_controller", {{a.grab, "/user/hand/right/input/squeeze/value"}}),
            XR_ERROR_PATH_UNSUPPORTED);
  EXPECT_EQ(a.suggest("/interaction_profiles/valve/index_controller", {{a.grab, "/user/hand/right/input/squeeze/force"}}),
            XR_SUCCESS);
  EXPECT_EQ(a.suggest("/interaction_profiles/htc/vive_controller", {{a.thumb, "/user/hand/left/input/trackpad"}}),
            XR_SUCCESS);
  EXPECT_EQ(a.suggest("/interaction_profiles/microsoft/motion_controller",
                      {{a.thumb, "/user/hand/left/input/thumbstick"}}),
            XR_SUCCESS);
  XrActionCreateInfo ci{XR_TYPE_ACTION_CREATE_INFO};
  std::strcpy(ci.actionName, "grab");
  std::strcpy(ci.localizedActionName, "another grab");
  ci.actionType = XR_ACTION_TYPE_FLOAT_INPUT;
  XrAction dup = XR_NULL_HANDLE;
  EXPECT_EQ(xrCreateAction(a.set, &ci, &dup), XR_ERROR_NAME_DUPLICATED);
  std::strcpy(ci.actionName, "Bad Name");
  EXPECT_EQ(xrCreateAction(a.set, &ci, &dup), XR_ERROR_PATH_FORMAT_INVALID);
}

}  // namespace
