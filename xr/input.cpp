#include "xr/input.h"

#include <cstring>
#include <iostream>
#include <string>
#include <vector>

namespace nnxr::xr {
namespace {

glm::vec3 to_glm(const XrVector3f& v) { return {v.x, v.y, v.z}; }
glm::quat to_glm(const XrQuaternionf& q) { return {q.w, q.x, q.y, q.z}; }

}  // namespace

Input::Input(XrInstance instance, XrSession session) : instance_(instance), session_(session) {
  check(instance, xrStringToPath(instance, "/user/hand/left", &hand_paths_[0]), "xrStringToPath");
  check(instance, xrStringToPath(instance, "/user/hand/right", &hand_paths_[1]), "xrStringToPath");
  XrActionSetCreateInfo si{XR_TYPE_ACTION_SET_CREATE_INFO};
  std::strcpy(si.actionSetName, "nnxr");
  std::strcpy(si.localizedActionSetName, "nnxr");
  check(instance, xrCreateActionSet(instance, &si, action_set_.out()), "xrCreateActionSet");
  for (const ActionDef& a : actions()) {
    XrActionCreateInfo ai{XR_TYPE_ACTION_CREATE_INFO};
    std::strncpy(ai.actionName, std::string(a.name).c_str(), XR_MAX_ACTION_NAME_SIZE - 1);
    std::strncpy(ai.localizedActionName, std::string(a.localized_name).c_str(), XR_MAX_LOCALIZED_ACTION_NAME_SIZE - 1);
    switch (a.type) {
      case ActionType::Float: ai.actionType = XR_ACTION_TYPE_FLOAT_INPUT; break;
      case ActionType::Boolean: ai.actionType = XR_ACTION_TYPE_BOOLEAN_INPUT; break;
      case ActionType::Vector2: ai.actionType = XR_ACTION_TYPE_VECTOR2F_INPUT; break;
      case ActionType::Pose: ai.actionType = XR_ACTION_TYPE_POSE_INPUT; break;
      case ActionType::Vibration: ai.actionType = XR_ACTION_TYPE_VIBRATION_OUTPUT; break;
    }
    ai.countSubactionPaths = 2;
    ai.subactionPaths = hand_paths_.data();
    // Actions are destroyed with their action set.
    check(instance, xrCreateAction(action_set_.get(), &ai, &actions_[static_cast<size_t>(a.id)]), "xrCreateAction");
  }
  int accepted = 0;
  for (const ProfileDef& p : profiles()) {
    XrPath profile_path = XR_NULL_PATH;
    check(instance, xrStringToPath(instance, std::string(p.path).c_str(), &profile_path), "xrStringToPath");
    std::vector<XrActionSuggestedBinding> b;
    for (const BindingDef& d : p.bindings) {
      XrPath path = XR_NULL_PATH;
      check(instance, xrStringToPath(instance, std::string(d.path).c_str(), &path), "xrStringToPath");
      b.push_back({actions_[static_cast<size_t>(d.action)], path});
    }
    XrInteractionProfileSuggestedBinding sb{XR_TYPE_INTERACTION_PROFILE_SUGGESTED_BINDING};
    sb.interactionProfile = profile_path;
    sb.countSuggestedBindings = static_cast<uint32_t>(b.size());
    sb.suggestedBindings = b.data();
    const XrResult r = xrSuggestInteractionProfileBindings(instance, &sb);
    if (XR_FAILED(r)) std::cerr << "nnxr: the OpenXR runtime rejects " << p.path << " (" << result_string(instance, r) << "); skipped\n";
    else ++accepted;
  }
  if (accepted == 0) std::cerr << "nnxr: no controller profile was accepted; controllers do nothing\n";
  XrSessionActionSetsAttachInfo at{XR_TYPE_SESSION_ACTION_SETS_ATTACH_INFO};
  at.countActionSets = 1;
  const XrActionSet set = action_set_.get();
  at.actionSets = &set;
  check(instance, xrAttachSessionActionSets(session, &at), "xrAttachSessionActionSets");
  for (size_t h = 0; h < 2; ++h) {
    XrActionSpaceCreateInfo ac{XR_TYPE_ACTION_SPACE_CREATE_INFO};
    ac.subactionPath = hand_paths_[h];
    ac.poseInActionSpace.orientation.w = 1;
    ac.action = actions_[static_cast<size_t>(ActionId::GripPose)];
    check(instance, xrCreateActionSpace(session, &ac, grip_spaces_[h].out()), "xrCreateActionSpace");
    ac.action = actions_[static_cast<size_t>(ActionId::AimPose)];
    check(instance, xrCreateActionSpace(session, &ac, aim_spaces_[h].out()), "xrCreateActionSpace");
  }
}

float Input::float_state(ActionId id, int hand) {
  XrActionStateGetInfo gi{XR_TYPE_ACTION_STATE_GET_INFO};
  gi.action = actions_[static_cast<size_t>(id)];
  gi.subactionPath = hand_paths_[size_t(hand)];
  XrActionStateFloat s{XR_TYPE_ACTION_STATE_FLOAT};
  check(instance_, xrGetActionStateFloat(session_, &gi, &s), "xrGetActionStateFloat");
  return s.isActive ? s.currentState : 0.0f;
}

bool Input::bool_state(ActionId id, int hand) {
  XrActionStateGetInfo gi{XR_TYPE_ACTION_STATE_GET_INFO};
  gi.action = actions_[static_cast<size_t>(id)];
  gi.subactionPath = hand_paths_[size_t(hand)];
  XrActionStateBoolean s{XR_TYPE_ACTION_STATE_BOOLEAN};
  check(instance_, xrGetActionStateBoolean(session_, &gi, &s), "xrGetActionStateBoolean");
  return s.isActive && s.currentState;
}

std::array<HandState, 2> Input::read_hands(XrSpace space, XrTime time) {
  XrActiveActionSet active{action_set_.get(), XR_NULL_PATH};
  XrActionsSyncInfo sync{XR_TYPE_ACTIONS_SYNC_INFO};
  sync.countActiveActionSets = 1;
  sync.activeActionSets = &active;
  const XrResult r = check(instance_, xrSyncActions(session_, &sync), "xrSyncActions");
  std::array<HandState, 2> out{};
  if (r == XR_SESSION_NOT_FOCUSED) return out;
  for (int h = 0; h < 2; ++h) {
    HandState& hs = out[size_t(h)];
    XrSpaceLocation grip{XR_TYPE_SPACE_LOCATION}, aim{XR_TYPE_SPACE_LOCATION};
    check(instance_, xrLocateSpace(grip_spaces_[size_t(h)].get(), space, time, &grip), "xrLocateSpace");
    check(instance_, xrLocateSpace(aim_spaces_[size_t(h)].get(), space, time, &aim), "xrLocateSpace");
    constexpr XrSpaceLocationFlags valid = XR_SPACE_LOCATION_POSITION_VALID_BIT | XR_SPACE_LOCATION_ORIENTATION_VALID_BIT;
    hs.tracked = (grip.locationFlags & valid) == valid;
    hs.grip = {to_glm(grip.pose.position), to_glm(grip.pose.orientation)};
    hs.aim = (aim.locationFlags & valid) == valid ? Pose{to_glm(aim.pose.position), to_glm(aim.pose.orientation)} : hs.grip;
    hs.squeeze = float_state(ActionId::Grab, h);
    hs.trigger = float_state(ActionId::Select, h);
    XrActionStateGetInfo gi{XR_TYPE_ACTION_STATE_GET_INFO};
    gi.subactionPath = hand_paths_[size_t(h)];
    gi.action = actions_[static_cast<size_t>(ActionId::Stick)];
    XrActionStateVector2f v{XR_TYPE_ACTION_STATE_VECTOR2F};
    check(instance_, xrGetActionStateVector2f(session_, &gi, &v), "xrGetActionStateVector2f");
    if (v.isActive) hs.thumbstick = {v.currentState.x, v.currentState.y};
    gi.action = actions_[static_cast<size_t>(ActionId::Menu)];
    XrActionStateBoolean b{XR_TYPE_ACTION_STATE_BOOLEAN};
    check(instance_, xrGetActionStateBoolean(session_, &gi, &b), "xrGetActionStateBoolean");
    hs.menu = b.isActive && b.currentState;
    hs.next_input = bool_state(ActionId::NextInput, h);
    hs.previous_input = bool_state(ActionId::PreviousInput, h);
    hs.compare_show = bool_state(ActionId::CompareShow, h);
  }
  return out;
}

void Input::haptic_tick(int hand) {
  XrHapticActionInfo hi{XR_TYPE_HAPTIC_ACTION_INFO};
  hi.action = actions_[static_cast<size_t>(ActionId::Haptic)];
  hi.subactionPath = hand_paths_[size_t(hand)];
  XrHapticVibration v{XR_TYPE_HAPTIC_VIBRATION};
  v.duration = 20'000'000;  // 20 ms
  v.frequency = XR_FREQUENCY_UNSPECIFIED;
  v.amplitude = 0.5f;
  check(instance_, xrApplyHapticFeedback(session_, &hi, reinterpret_cast<const XrHapticBaseHeader*>(&v)), "xrApplyHapticFeedback");
}

std::string Input::right_profile() const {
  XrInteractionProfileState ps{XR_TYPE_INTERACTION_PROFILE_STATE};
  if (XR_FAILED(xrGetCurrentInteractionProfile(session_, hand_paths_[1], &ps)) || ps.interactionProfile == XR_NULL_PATH) return "";
  char buf[XR_MAX_PATH_LENGTH] = {};
  uint32_t len = 0;
  if (XR_FAILED(xrPathToString(instance_, ps.interactionProfile, sizeof buf, &len, buf))) return "";
  return buf;
}

}  // namespace nnxr::xr
