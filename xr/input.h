// Controller input of one session (internal to xr/): the action set and actions of xr/bindings.h
// with their suggested bindings (a profile the runtime rejects is logged and skipped), attached to
// the session, and a grip and an aim space per hand; each frame, the hands' state for
// xr/gestures.h, and haptic ticks.
//
// OpenXR functions used here: xrStringToPath, xrPathToString, xrCreateActionSet, xrCreateAction,
// xrSuggestInteractionProfileBindings, xrAttachSessionActionSets, xrCreateActionSpace,
// xrSyncActions, xrLocateSpace, xrGetActionStateFloat, xrGetActionStateVector2f,
// xrGetActionStateBoolean, xrApplyHapticFeedback, xrGetCurrentInteractionProfile, xrDestroySpace,
// xrDestroyActionSet.
//
// Ownership: an Input owns its action set (with its actions) and action spaces; it is created
// for one session and destroyed before it. Every call may throw SessionLostError. One thread.
#pragma once

#include <array>
#include <string>

#include "xr/bindings.h"
#include "xr/gestures.h"
#include "xr/handles.h"

namespace nnxr::xr {

class Input {
 public:
  Input(XrInstance instance, XrSession session);

  // xrSyncActions and every hand's poses (in `space` at `time`) and buttons; all untracked and
  // released while the session is not focused.
  std::array<HandState, 2> read_hands(XrSpace space, XrTime time);
  void haptic_tick(int hand);
  // The right hand's active interaction profile ("" when none).
  std::string right_profile() const;

 private:
  float float_state(ActionId id, int hand);
  bool bool_state(ActionId id, int hand);

  XrInstance instance_;
  XrSession session_;
  std::array<XrPath, 2> hand_paths_{};
  ActionSetHandle action_set_;
  std::array<XrAction, static_cast<size_t>(ActionId::Count)> actions_{};
  std::array<SpaceHandle, 2> grip_spaces_, aim_spaces_;
};

}  // namespace nnxr::xr
