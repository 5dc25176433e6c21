#include "tests/xrsim/runtime/profiles.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace xrsim {
namespace {

struct Profile {
  const char* path;
  std::vector<std::string> both, left, right;  // "<identifier>/<component>" of the input subpath
};

const std::vector<Profile>& profiles() {
  static const std::vector<Profile> table = {
      {"/interaction_profiles/khr/simple_controller",
       {"select/click", "menu/click", "grip/pose", "aim/pose"},
       {},
       {}},
      {"/interaction_profiles/oculus/touch_controller",
       {"squeeze/value", "trigger/value", "trigger/touch", "thumbstick/x", "thumbstick/y", "thumbstick/click",
        "thumbstick/touch", "thumbrest/touch", "grip/pose", "aim/pose"},
       {"x/click", "x/touch", "y/click", "y/touch", "menu/click"},
       {"a/click", "a/touch", "b/click", "b/touch", "system/click"}},
      {"/interaction_profiles/valve/index_controller",
       {"system/click", "system/touch", "a/click", "a/touch", "b/click", "b/touch", "squeeze/value", "squeeze/force",
        "trigger/click", "trigger/value", "trigger/touch", "thumbstick/x", "thumbstick/y", "thumbstick/click",
        "thumbstick/touch", "trackpad/x", "trackpad/y", "trackpad/force", "trackpad/touch", "grip/pose", "aim/pose"},
       {},
       {}},
      {"/interaction_profiles/htc/vive_controller",
       {"system/click", "squeeze/click", "menu/click", "trigger/click", "trigger/value", "trackpad/x", "trackpad/y",
        "trackpad/click", "trackpad/touch", "grip/pose", "aim/pose"},
       {},
       {}},
      {"/interaction_profiles/microsoft/motion_controller",
       {"menu/click", "squeeze/click", "trigger/value", "thumbstick/x", "thumbstick/y", "thumbstick/click",
        "trackpad/x", "trackpad/y", "trackpad/click", "trackpad/touch", "grip/pose", "aim/pose"},
       {},
       {}},
  };
  return table;
}

const Profile* find(const std::string& path) {
  for (const Profile& p : profiles())
    if (path == p.path) return &p;
  return nullptr;
}

// A binding split into hand, input-or-output and the subpath after it.
struct Parsed {
  int hand = -1;
  bool output = false;
  std::string identifier, component;  // component empty when not given
};

bool parse(const std::string& binding, Parsed* out) {
  static const std::string kLeft = "/user/hand/left/", kRight = "/user/hand/right/";
  std::string rest;
  if (binding.rfind(kLeft, 0) == 0) {
    out->hand = 0;
    rest = binding.substr(kLeft.size());
  } else if (binding.rfind(kRight, 0) == 0) {
    out->hand = 1;
    rest = binding.substr(kRight.size());
  } else {
    return false;
  }
  if (rest == "output/haptic") {
    out->output = true;
    return true;
  }
  if (rest.rfind("input/", 0) != 0) return false;
  rest = rest.substr(6);
  auto slash = rest.find('/');
  out->identifier = rest.substr(0, slash);
  if (slash != std::string::npos) {
    out->component = rest.substr(slash + 1);
    if (out->component.empty() || out->component.find('/') != std::string::npos) return false;
  }
  return !out->identifier.empty();
}

bool has(const Profile& p, int hand, const std::string& sub) {
  auto in = [&](const std::vector<std::string>& v) { return std::find(v.begin(), v.end(), sub) != v.end(); };
  return in(p.both) || in(hand == 0 ? p.left : p.right);
}

bool has_identifier(const Profile& p, int hand, const std::string& id) {
  auto in = [&](const std::vector<std::string>& v) {
    return std::any_of(v.begin(), v.end(), [&](const std::string& s) { return s.rfind(id + "/", 0) == 0; });
  };
  return in(p.both) || in(hand == 0 ? p.left : p.right);
}

}  // namespace

bool known_profile(const std::string& profile) { return find(profile) != nullptr; }

int binding_hand(const std::string& binding) {
  Parsed b;
  return parse(binding, &b) ? b.hand : -1;
}

bool profile_accepts(const std::string& profile, const std::string& binding) {
  const Profile* p = find(profile);
  Parsed b;
  if (!p || !parse(binding, &b)) return false;
  if (b.output) return true;  // every supported controller has a haptic output
  if (b.component.empty()) return has_identifier(*p, b.hand, b.identifier);
  return has(*p, b.hand, b.identifier + "/" + b.component);
}

bool binding_fits(const std::string& profile, const std::string& binding, ValueKind kind) {
  Parsed b;
  if (!profile_accepts(profile, binding) || !parse(binding, &b)) return false;
  if (kind == ValueKind::kHaptic) return b.output;
  if (b.output) return false;
  bool pose = b.identifier == "grip" || b.identifier == "aim";
  return (kind == ValueKind::kPose) == pose;
}

bool read_binding(const std::string& profile, const std::string& binding, ValueKind kind, const ScriptState& s,
                  float out[2]) {
  const Profile* p = find(profile);
  Parsed b;
  if (!p || !parse(binding, &b) || !binding_fits(profile, binding, kind)) return false;
  const std::string base = binding.substr(0, binding.size() - (b.component.empty() ? 0 : b.component.size() + 1));
  auto component = [&](const char* c) { return has(*p, b.hand, b.identifier + "/" + c); };
  switch (kind) {
    case ValueKind::kPose:
    case ValueKind::kHaptic:
      return true;
    case ValueKind::kVector2:
      if (!b.component.empty() || !component("x") || !component("y")) return false;
      out[0] = s.input(base + "/x");
      out[1] = s.input(base + "/y");
      return true;
    case ValueKind::kFloat:
      if (!b.component.empty()) {
        out[0] = s.input(binding);
        return true;
      }
      for (const char* c : {"value", "click", "force"})
        if (component(c)) {
          out[0] = s.input(base + "/" + c);
          return true;
        }
      return false;
    case ValueKind::kBoolean: {
      std::string c = b.component;
      if (c.empty()) {
        if (component("click")) c = "click";
        else if (component("value")) c = "value";
        else if (component("touch")) c = "touch";
        else return false;
      }
      float v = s.input(base + "/" + c);
      out[0] = (c == "click" || c == "touch") ? (v != 0.0f ? 1.0f : 0.0f) : (v > 0.5f ? 1.0f : 0.0f);
      return true;
    }
  }
  return false;
}

}  // namespace xrsim
