// The bindings table: well-formed paths, every profile covers the actions its hardware has.
#include "xr/bindings.h"

#include <set>
#include <string>

#include <gtest/gtest.h>

namespace nnxr::xr {
namespace {

TEST(Bindings, ActionsAreUniqueAndIndexedById) {
  std::set<std::string_view> names;
  for (size_t i = 0; i < actions().size(); ++i) {
    EXPECT_EQ(size_t(actions()[i].id), i);
    EXPECT_TRUE(names.insert(actions()[i].name).second) << actions()[i].name;
    for (char c : actions()[i].name) EXPECT_TRUE((c >= 'a' && c <= 'z') || c == '_' || (c >= '0' && c <= '9')) << actions()[i].name;
  }
}

TEST(Bindings, EveryProfileBindsBothHandsAndThePoses) {
  ASSERT_EQ(profiles().size(), 5u);
  for (const ProfileDef& p : profiles()) {
    EXPECT_TRUE(p.path.starts_with("/interaction_profiles/")) << p.path;
    std::set<std::pair<int, std::string>> seen;
    for (const BindingDef& b : p.bindings) {
      std::string path(b.path);
      bool left = path.starts_with("/user/hand/left/"), right = path.starts_with("/user/hand/right/");
      EXPECT_TRUE(left || right) << path;
      EXPECT_TRUE(seen.insert({int(b.action), left ? "left" : "right"}).second) << "duplicate for " << path;
      // Type of the source matches the action type.
      ActionType t = action(b.action).type;
      bool source_fits = t == ActionType::Pose        ? path.ends_with("/pose")
                         : t == ActionType::Vibration ? path.ends_with("/output/haptic")
                         : t == ActionType::Vector2   ? path.ends_with("/thumbstick") || path.ends_with("/trackpad")
                                                      : path.ends_with("/value") || path.ends_with("/click");
      EXPECT_TRUE(source_fits) << path << " for " << action(b.action).name;
    }
    bool simple = p.path.ends_with("khr/simple_controller");
    for (ActionId id : {ActionId::GripPose, ActionId::AimPose, ActionId::Haptic})
      for (const char* hand : {"left", "right"}) EXPECT_TRUE(seen.count({int(id), hand})) << p.path << " lacks " << action(id).name << " " << hand;
    // Selecting and resetting on the right hand everywhere, selecting on the left too where the
    // controller has buttons to spare for the inputs (not the simple controller).
    EXPECT_TRUE(seen.count({int(ActionId::Select), "right"})) << p.path;
    EXPECT_TRUE(seen.count({int(ActionId::Menu), "right"})) << p.path;
    EXPECT_EQ(seen.count({int(ActionId::Select), "left"}) == 1, !simple) << p.path;
    for (ActionId id : {ActionId::Grab, ActionId::Stick})
      EXPECT_EQ(seen.count({int(id), "right"}) == 1, !simple) << p.path << " " << action(id).name;
  }
}

// Every profile steps to the next input from the left hand and flips A, B and A − B; all but the
// simple controller (two buttons a hand) step back too. No button serves two actions.
TEST(Bindings, EveryProfileStepsInputsAndFlipsCompare) {
  for (const ProfileDef& p : profiles()) {
    std::set<std::string_view> paths;
    bool next = false, previous = false, compare = false;
    for (const BindingDef& b : p.bindings) {
      EXPECT_TRUE(paths.insert(b.path).second || b.path.ends_with("/pose") || b.path.ends_with("/haptic"))
          << p.path << ": " << b.path << " bound twice";
      next |= b.action == ActionId::NextInput && b.path.starts_with("/user/hand/left/");
      previous |= b.action == ActionId::PreviousInput && b.path.starts_with("/user/hand/left/");
      compare |= b.action == ActionId::CompareShow;
    }
    EXPECT_TRUE(next) << p.path;
    EXPECT_EQ(previous, !p.path.ends_with("khr/simple_controller")) << p.path;
    EXPECT_TRUE(compare) << p.path;
  }
}

TEST(Bindings, TouchStepsInputsWithXAndY) {
  const ProfileDef& touch = profiles()[0];
  ASSERT_EQ(touch.path, "/interaction_profiles/oculus/touch_controller");
  bool next = false, previous = false;
  for (const BindingDef& b : touch.bindings) {
    next |= b.action == ActionId::NextInput && b.path == "/user/hand/left/input/x/click";
    previous |= b.action == ActionId::PreviousInput && b.path == "/user/hand/left/input/y/click";
  }
  EXPECT_TRUE(next);
  EXPECT_TRUE(previous);
  bool compare = false;
  for (const BindingDef& b : touch.bindings) compare |= b.action == ActionId::CompareShow && b.path == "/user/hand/right/input/a/click";
  EXPECT_TRUE(compare);
}

}  // namespace
}  // namespace nnxr::xr
