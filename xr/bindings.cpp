#include "xr/bindings.h"

#include <array>

namespace nnxr::xr {
namespace {

using enum ActionId;

constexpr std::array kActionDefs{
    ActionDef{Grab, "grab", "Grab and scale the network", ActionType::Float},
    ActionDef{Select, "select", "Select a neuron", ActionType::Float},
    ActionDef{Stick, "filter", "Neuron and connection thresholds", ActionType::Vector2},
    ActionDef{Menu, "reset", "Reset view and filters", ActionType::Boolean},
    ActionDef{GripPose, "grip_pose", "Hand pose", ActionType::Pose},
    ActionDef{AimPose, "aim_pose", "Pointing ray", ActionType::Pose},
    ActionDef{Haptic, "haptic", "Threshold tick", ActionType::Vibration},
    ActionDef{NextInput, "next_input", "Next input", ActionType::Boolean},
    ActionDef{PreviousInput, "previous_input", "Previous input", ActionType::Boolean},
    ActionDef{CompareShow, "compare_show", "Show input A, B or A - B", ActionType::Boolean},
};
static_assert(kActionDefs.size() == size_t(Count));

// Both hands: grip and aim poses and haptics exist on every profile below.
#define NNXR_POSES_AND_HAPTICS(hand)                           \
  BindingDef{GripPose, "/user/hand/" hand "/input/grip/pose"}, \
      BindingDef{AimPose, "/user/hand/" hand "/input/aim/pose"}, BindingDef{Haptic, "/user/hand/" hand "/output/haptic"}

// The simple controller has no squeeze and no stick: select, menu, poses and haptics only. Its
// left menu button steps to the next input (the list wraps around, so every input is reached) and
// its left select flips A, B and A − B; the right hand selects and resets.
constexpr std::array kSimple{
    BindingDef{NextInput, "/user/hand/left/input/menu/click"},
    BindingDef{CompareShow, "/user/hand/left/input/select/click"},
    BindingDef{Select, "/user/hand/right/input/select/click"},
    BindingDef{Menu, "/user/hand/right/input/menu/click"},
    NNXR_POSES_AND_HAPTICS("left"),
    NNXR_POSES_AND_HAPTICS("right"),
};

// Touch: reset on the left menu button and on B; X and Y step to the next and previous input; A
// flips A, B and A − B.
constexpr std::array kTouch{
    BindingDef{NextInput, "/user/hand/left/input/x/click"},
    BindingDef{PreviousInput, "/user/hand/left/input/y/click"},
    BindingDef{CompareShow, "/user/hand/right/input/a/click"},
    BindingDef{Grab, "/user/hand/left/input/squeeze/value"},
    BindingDef{Grab, "/user/hand/right/input/squeeze/value"},
    BindingDef{Select, "/user/hand/left/input/trigger/value"},
    BindingDef{Select, "/user/hand/right/input/trigger/value"},
    BindingDef{Stick, "/user/hand/left/input/thumbstick"},
    BindingDef{Stick, "/user/hand/right/input/thumbstick"},
    BindingDef{Menu, "/user/hand/left/input/menu/click"},
    BindingDef{Menu, "/user/hand/right/input/b/click"},
    NNXR_POSES_AND_HAPTICS("left"),
    NNXR_POSES_AND_HAPTICS("right"),
};

// Index: the left A and B step to the next and previous input (where Touch has X and Y), the
// right A flips A, B and A − B, the right B resets.
constexpr std::array kIndex{
    BindingDef{NextInput, "/user/hand/left/input/a/click"},
    BindingDef{PreviousInput, "/user/hand/left/input/b/click"},
    BindingDef{CompareShow, "/user/hand/right/input/a/click"},
    BindingDef{Grab, "/user/hand/left/input/squeeze/value"},
    BindingDef{Grab, "/user/hand/right/input/squeeze/value"},
    BindingDef{Select, "/user/hand/left/input/trigger/value"},
    BindingDef{Select, "/user/hand/right/input/trigger/value"},
    BindingDef{Stick, "/user/hand/left/input/thumbstick"},
    BindingDef{Stick, "/user/hand/right/input/thumbstick"},
    BindingDef{Menu, "/user/hand/right/input/b/click"},
    NNXR_POSES_AND_HAPTICS("left"),
    NNXR_POSES_AND_HAPTICS("right"),
};

// Vive: the trackpad stands in for the thumbstick. A click on the left pad steps to the next
// input and the left menu button to the previous one; a click on the right pad flips A, B and
// A − B; the right menu button resets. (Click near the pad's centre: an off-centre click also
// moves the stick it stands in for.)
constexpr std::array kVive{
    BindingDef{NextInput, "/user/hand/left/input/trackpad/click"},
    BindingDef{PreviousInput, "/user/hand/left/input/menu/click"},
    BindingDef{CompareShow, "/user/hand/right/input/trackpad/click"},
    BindingDef{Grab, "/user/hand/left/input/squeeze/click"},
    BindingDef{Grab, "/user/hand/right/input/squeeze/click"},
    BindingDef{Select, "/user/hand/left/input/trigger/value"},
    BindingDef{Select, "/user/hand/right/input/trigger/value"},
    BindingDef{Stick, "/user/hand/left/input/trackpad"},
    BindingDef{Stick, "/user/hand/right/input/trackpad"},
    BindingDef{Menu, "/user/hand/right/input/menu/click"},
    NNXR_POSES_AND_HAPTICS("left"),
    NNXR_POSES_AND_HAPTICS("right"),
};

// Windows Mixed Reality: the thumbsticks are the sticks, so the trackpads are free: a click on the
// left pad steps to the next input, a click on the left stick to the previous one, a click on the
// right pad flips A, B and A − B.
constexpr std::array kMicrosoft{
    BindingDef{NextInput, "/user/hand/left/input/trackpad/click"},
    BindingDef{PreviousInput, "/user/hand/left/input/thumbstick/click"},
    BindingDef{CompareShow, "/user/hand/right/input/trackpad/click"},
    BindingDef{Grab, "/user/hand/left/input/squeeze/click"},
    BindingDef{Grab, "/user/hand/right/input/squeeze/click"},
    BindingDef{Select, "/user/hand/left/input/trigger/value"},
    BindingDef{Select, "/user/hand/right/input/trigger/value"},
    BindingDef{Stick, "/user/hand/left/input/thumbstick"},
    BindingDef{Stick, "/user/hand/right/input/thumbstick"},
    BindingDef{Menu, "/user/hand/left/input/menu/click"},
    BindingDef{Menu, "/user/hand/right/input/menu/click"},
    NNXR_POSES_AND_HAPTICS("left"),
    NNXR_POSES_AND_HAPTICS("right"),
};

#undef NNXR_POSES_AND_HAPTICS

constexpr std::array kProfiles{
    ProfileDef{"/interaction_profiles/oculus/touch_controller", kTouch},
    ProfileDef{"/interaction_profiles/valve/index_controller", kIndex},
    ProfileDef{"/interaction_profiles/htc/vive_controller", kVive},
    ProfileDef{"/interaction_profiles/microsoft/motion_controller", kMicrosoft},
    ProfileDef{"/interaction_profiles/khr/simple_controller", kSimple},
};

}  // namespace

std::span<const ActionDef> actions() { return kActionDefs; }
std::span<const ProfileDef> profiles() { return kProfiles; }
const ActionDef& action(ActionId id) { return kActionDefs[size_t(id)]; }

}  // namespace nnxr::xr
