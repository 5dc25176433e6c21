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
};
static_assert(kActionDefs.size() == size_t(Count));

// Both hands: grip and aim poses and haptics exist on every profile below.
#define NNXR_POSES_AND_HAPTICS(hand)                           \
  BindingDef{GripPose, "/user/hand/" hand "/input/grip/pose"}, \
      BindingDef{AimPose, "/user/hand/" hand "/input/aim/pose"}, BindingDef{Haptic, "/user/hand/" hand "/output/haptic"}

// The simple controller has no squeeze and no stick: select, menu, poses and haptics only.
constexpr std::array kSimple{
    BindingDef{Select, "/user/hand/left/input/select/click"},
    BindingDef{Select, "/user/hand/right/input/select/click"},
    BindingDef{Menu, "/user/hand/left/input/menu/click"},
    BindingDef{Menu, "/user/hand/right/input/menu/click"},
    NNXR_POSES_AND_HAPTICS("left"),
    NNXR_POSES_AND_HAPTICS("right"),
};

// Touch: reset on the left menu button and on B; X and Y step to the next and previous input.
constexpr std::array kTouch{
    BindingDef{NextInput, "/user/hand/left/input/x/click"},
    BindingDef{PreviousInput, "/user/hand/left/input/y/click"},
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

constexpr std::array kIndex{
    BindingDef{Grab, "/user/hand/left/input/squeeze/value"},
    BindingDef{Grab, "/user/hand/right/input/squeeze/value"},
    BindingDef{Select, "/user/hand/left/input/trigger/value"},
    BindingDef{Select, "/user/hand/right/input/trigger/value"},
    BindingDef{Stick, "/user/hand/left/input/thumbstick"},
    BindingDef{Stick, "/user/hand/right/input/thumbstick"},
    BindingDef{Menu, "/user/hand/left/input/b/click"},
    BindingDef{Menu, "/user/hand/right/input/b/click"},
    NNXR_POSES_AND_HAPTICS("left"),
    NNXR_POSES_AND_HAPTICS("right"),
};

// Vive: the trackpad stands in for the thumbstick.
constexpr std::array kVive{
    BindingDef{Grab, "/user/hand/left/input/squeeze/click"},
    BindingDef{Grab, "/user/hand/right/input/squeeze/click"},
    BindingDef{Select, "/user/hand/left/input/trigger/value"},
    BindingDef{Select, "/user/hand/right/input/trigger/value"},
    BindingDef{Stick, "/user/hand/left/input/trackpad"},
    BindingDef{Stick, "/user/hand/right/input/trackpad"},
    BindingDef{Menu, "/user/hand/left/input/menu/click"},
    BindingDef{Menu, "/user/hand/right/input/menu/click"},
    NNXR_POSES_AND_HAPTICS("left"),
    NNXR_POSES_AND_HAPTICS("right"),
};

constexpr std::array kMicrosoft{
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
