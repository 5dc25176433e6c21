// The controller bindings as a table: nnxr's actions, then the bindings it suggests for each
// interaction profile. xr/input.h creates the actions from kActions and suggests each profile's
// bindings in turn; a profile the runtime rejects is logged and skipped.
//
// Pure data; no OpenXR calls here.
#pragma once

#include <span>
#include <string_view>

namespace nnxr::xr {

enum class ActionId : int { Grab, Select, Stick, Menu, GripPose, AimPose, Haptic, NextInput, PreviousInput, CompareShow, Count };

enum class ActionType { Float, Boolean, Vector2, Pose, Vibration };

struct ActionDef {
  ActionId id;
  std::string_view name;            // OpenXR action name (lower case, no spaces)
  std::string_view localized_name;  // shown by runtimes in their binding UIs
  ActionType type;
};

// One suggested binding: an action and a path under /user/hand/{left,right}/.
struct BindingDef {
  ActionId action;
  std::string_view path;  // e.g. "/user/hand/right/input/squeeze/value"
};

struct ProfileDef {
  std::string_view path;  // e.g. "/interaction_profiles/oculus/touch_controller"
  std::span<const BindingDef> bindings;
};

// All actions have the two subaction paths /user/hand/left and /user/hand/right.
std::span<const ActionDef> actions();
// Profiles in order of preference.
std::span<const ProfileDef> profiles();
const ActionDef& action(ActionId id);

}  // namespace nnxr::xr
