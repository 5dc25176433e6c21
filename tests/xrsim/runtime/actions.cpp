// Action sets, actions, suggested bindings, attachment, xrSyncActions, action states and haptics.
// Scripted inputs reach an action through the bindings the app suggested for the active profile.
#include "tests/xrsim/runtime/state.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace xrsim {

void destroy_action_set(Registry& r, uint64_t id) {
  auto it = r.action_sets.find(id);
  if (it == r.action_sets.end()) return;
  for (uint64_t a : it->second->actions) r.actions.erase(a);
  if (auto inst = r.instances.find(it->second->instance); inst != r.instances.end()) {
    auto& list = inst->second->action_sets;
    list.erase(std::remove(list.begin(), list.end(), id), list.end());
  }
  r.action_sets.erase(it);
}

namespace {

ValueKind kind_of(XrActionType t) {
  switch (t) {
    case XR_ACTION_TYPE_BOOLEAN_INPUT: return ValueKind::kBoolean;
    case XR_ACTION_TYPE_FLOAT_INPUT: return ValueKind::kFloat;
    case XR_ACTION_TYPE_VECTOR2F_INPUT: return ValueKind::kVector2;
    case XR_ACTION_TYPE_POSE_INPUT: return ValueKind::kPose;
    default: return ValueKind::kHaptic;
  }
}

bool top_level_user_path(const std::string& p) {
  for (const char* t : {"/user/hand/left", "/user/hand/right", "/user/head", "/user/gamepad", "/user/treadmill"})
    if (p == t) return true;
  return false;
}

bool valid_name(const char* name, size_t max) {
  size_t n = strnlen(name, max);
  if (n == 0 || n == max) return false;
  for (size_t i = 0; i < n; ++i) {
    char c = name[i];
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.')) return false;
  }
  return true;
}

bool valid_localized(const char* name, size_t max) {
  size_t n = strnlen(name, max);
  return n > 0 && n < max;
}

// Common checks of the action-state getters and haptics: the action exists, has the type, is
// attached to the session, and the subaction path is one of the action's. Gives the slot (0 any,
// 1 left, 2 right, 3 another top-level path, never active).
XrResult resolve(Registry& r, Session& s, XrAction action, XrActionType type, XrPath subaction, BoundAction** bound,
                 int* slot) {
  const Action* a = find(r.actions, action);
  if (a == nullptr || a->instance != s.instance) return XR_ERROR_HANDLE_INVALID;
  if (a->type != type) return XR_ERROR_ACTION_TYPE_MISMATCH;
  auto it = s.bound.find(a->id);
  if (it == s.bound.end()) return XR_ERROR_ACTIONSET_NOT_ATTACHED;
  *slot = 0;
  if (subaction != XR_NULL_PATH) {
    const std::string* p = r.instances.at(s.instance)->paths.lookup(subaction);
    if (p == nullptr) return XR_ERROR_PATH_INVALID;
    if (std::find(a->subaction_paths.begin(), a->subaction_paths.end(), subaction) == a->subaction_paths.end())
      return XR_ERROR_PATH_UNSUPPORTED;
    *slot = *p == "/user/hand/left" ? 1 : *p == "/user/hand/right" ? 2 : 3;
  }
  *bound = &it->second;
  return XR_SUCCESS;
}

const BoundAction::Slot kInactive{};

// Reads an action's sources for each slot and updates its state (changed only when it was active
// at the previous sync too).
void sync_bound_action(const Session& s, BoundAction& a, const ScriptState& st, XrTime now) {
  const ValueKind kind = kind_of(a.type);
  for (int slot = 0; slot < 3; ++slot) {
    bool any = false;
    float value[2] = {0, 0};
    for (const std::string& src : a.sources) {
      int hand = binding_hand(src);
      if (slot != 0 && hand != slot - 1) continue;
      float v[2] = {0, 0};
      if (!read_binding(s.active_profile, src, kind, st, v)) continue;
      if (!any) {
        value[0] = v[0];
        value[1] = v[1];
      } else if (kind == ValueKind::kBoolean) {
        value[0] = std::max(value[0], v[0]);
      } else if (kind == ValueKind::kFloat) {
        if (std::fabs(v[0]) > std::fabs(value[0])) value[0] = v[0];
      } else if (kind == ValueKind::kVector2) {
        if (v[0] * v[0] + v[1] * v[1] > value[0] * value[0] + value[1] * value[1]) {
          value[0] = v[0];
          value[1] = v[1];
        }
      }
      any = true;
    }
    BoundAction::Slot& out = a.slots[slot];
    if (!any) {
      out = BoundAction::Slot{};
      continue;
    }
    bool differs = value[0] != out.value[0] || value[1] != out.value[1];
    out.changed = out.active && differs;
    if (out.changed || !out.active) out.last_change = now;
    out.active = true;
    out.value[0] = value[0];
    out.value[1] = value[1];
  }
}

}  // namespace
}  // namespace xrsim

namespace xrsim::api {

XrResult CreateActionSet(XrInstance instance, const XrActionSetCreateInfo* info, XrActionSet* out) {
  return guarded("xrCreateActionSet", [&]() -> XrResult {
    Registry& r = Registry::get();
    Instance* inst = find(r.instances, instance);
    if (inst == nullptr) return XR_ERROR_HANDLE_INVALID;
    if (info == nullptr || out == nullptr || info->type != XR_TYPE_ACTION_SET_CREATE_INFO)
      return XR_ERROR_VALIDATION_FAILURE;
    if (!valid_name(info->actionSetName, XR_MAX_ACTION_SET_NAME_SIZE)) return XR_ERROR_PATH_FORMAT_INVALID;
    if (!valid_localized(info->localizedActionSetName, XR_MAX_LOCALIZED_ACTION_SET_NAME_SIZE))
      return XR_ERROR_LOCALIZED_NAME_INVALID;
    for (uint64_t id : inst->action_sets) {
      const ActionSet& other = *r.action_sets.at(id);
      if (other.name == info->actionSetName) return XR_ERROR_NAME_DUPLICATED;
      if (other.localized == info->localizedActionSetName) return XR_ERROR_LOCALIZED_NAME_DUPLICATED;
    }
    auto set = std::make_unique<ActionSet>();
    set->id = r.new_id();
    set->instance = inst->id;
    set->name = info->actionSetName;
    set->localized = info->localizedActionSetName;
    set->priority = info->priority;
    inst->action_sets.push_back(set->id);
    *out = handle_of<XrActionSet>(set->id);
    r.action_sets.emplace(set->id, std::move(set));
    return XR_SUCCESS;
  });
}

XrResult DestroyActionSet(XrActionSet set) {
  return guarded("xrDestroyActionSet", [&]() -> XrResult {
    Registry& r = Registry::get();
    if (find(r.action_sets, set) == nullptr) return XR_ERROR_HANDLE_INVALID;
    destroy_action_set(r, id_of(set));
    return XR_SUCCESS;
  });
}

XrResult CreateAction(XrActionSet set_handle, const XrActionCreateInfo* info, XrAction* out) {
  return guarded("xrCreateAction", [&]() -> XrResult {
    Registry& r = Registry::get();
    ActionSet* set = find(r.action_sets, set_handle);
    if (set == nullptr) return XR_ERROR_HANDLE_INVALID;
    if (info == nullptr || out == nullptr || info->type != XR_TYPE_ACTION_CREATE_INFO) return XR_ERROR_VALIDATION_FAILURE;
    switch (info->actionType) {
      case XR_ACTION_TYPE_BOOLEAN_INPUT:
      case XR_ACTION_TYPE_FLOAT_INPUT:
      case XR_ACTION_TYPE_VECTOR2F_INPUT:
      case XR_ACTION_TYPE_POSE_INPUT:
      case XR_ACTION_TYPE_VIBRATION_OUTPUT:
        break;
      default:
        return XR_ERROR_VALIDATION_FAILURE;
    }
    if (set->attached) return XR_ERROR_ACTIONSETS_ALREADY_ATTACHED;
    if (!valid_name(info->actionName, XR_MAX_ACTION_NAME_SIZE)) return XR_ERROR_PATH_FORMAT_INVALID;
    if (!valid_localized(info->localizedActionName, XR_MAX_LOCALIZED_ACTION_NAME_SIZE))
      return XR_ERROR_LOCALIZED_NAME_INVALID;
    for (uint64_t id : set->actions) {
      const Action& other = *r.actions.at(id);
      if (other.name == info->actionName) return XR_ERROR_NAME_DUPLICATED;
      if (other.localized == info->localizedActionName) return XR_ERROR_LOCALIZED_NAME_DUPLICATED;
    }
    if (info->countSubactionPaths > 0 && info->subactionPaths == nullptr) return XR_ERROR_VALIDATION_FAILURE;
    const Instance& inst = *r.instances.at(set->instance);
    std::vector<XrPath> subaction;
    for (uint32_t i = 0; i < info->countSubactionPaths; ++i) {
      const std::string* p = inst.paths.lookup(info->subactionPaths[i]);
      if (p == nullptr) return XR_ERROR_PATH_INVALID;
      if (!top_level_user_path(*p)) return XR_ERROR_PATH_UNSUPPORTED;
      if (std::find(subaction.begin(), subaction.end(), info->subactionPaths[i]) != subaction.end())
        return XR_ERROR_PATH_UNSUPPORTED;
      subaction.push_back(info->subactionPaths[i]);
    }
    auto a = std::make_unique<Action>();
    a->id = r.new_id();
    a->set = set->id;
    a->instance = set->instance;
    a->name = info->actionName;
    a->localized = info->localizedActionName;
    a->type = info->actionType;
    a->subaction_paths = std::move(subaction);
    set->actions.push_back(a->id);
    *out = handle_of<XrAction>(a->id);
    r.actions.emplace(a->id, std::move(a));
    return XR_SUCCESS;
  });
}

XrResult DestroyAction(XrAction action) {
  return guarded("xrDestroyAction", [&]() -> XrResult {
    Registry& r = Registry::get();
    const Action* a = find(r.actions, action);
    if (a == nullptr) return XR_ERROR_HANDLE_INVALID;
    if (auto set = r.action_sets.find(a->set); set != r.action_sets.end()) {
      auto& list = set->second->actions;
      list.erase(std::remove(list.begin(), list.end(), a->id), list.end());
    }
    r.actions.erase(a->id);
    return XR_SUCCESS;
  });
}

XrResult SuggestInteractionProfileBindings(XrInstance instance, const XrInteractionProfileSuggestedBinding* info) {
  return guarded("xrSuggestInteractionProfileBindings", [&]() -> XrResult {
    Registry& r = Registry::get();
    Instance* inst = find(r.instances, instance);
    if (inst == nullptr) return XR_ERROR_HANDLE_INVALID;
    if (info == nullptr || info->type != XR_TYPE_INTERACTION_PROFILE_SUGGESTED_BINDING ||
        info->countSuggestedBindings == 0 || info->suggestedBindings == nullptr)
      return XR_ERROR_VALIDATION_FAILURE;
    const std::string* profile = inst->paths.lookup(info->interactionProfile);
    if (profile == nullptr) return XR_ERROR_PATH_INVALID;
    if (!known_profile(*profile)) return XR_ERROR_PATH_UNSUPPORTED;
    std::vector<std::pair<uint64_t, std::string>> bindings;
    for (uint32_t i = 0; i < info->countSuggestedBindings; ++i) {
      const XrActionSuggestedBinding& b = info->suggestedBindings[i];
      const Action* a = find(r.actions, b.action);
      if (a == nullptr || a->instance != inst->id) return XR_ERROR_HANDLE_INVALID;
      if (r.action_sets.at(a->set)->attached) return XR_ERROR_ACTIONSETS_ALREADY_ATTACHED;
      const std::string* path = inst->paths.lookup(b.binding);
      if (path == nullptr) return XR_ERROR_PATH_INVALID;
      if (!profile_accepts(*profile, *path)) return XR_ERROR_PATH_UNSUPPORTED;
      bindings.emplace_back(a->id, *path);
    }
    for (auto& [p, list] : inst->suggested)
      if (p == *profile) {
        list = std::move(bindings);  // a later suggestion replaces the earlier one
        return XR_SUCCESS;
      }
    inst->suggested.emplace_back(*profile, std::move(bindings));
    return XR_SUCCESS;
  });
}

XrResult AttachSessionActionSets(XrSession session, const XrSessionActionSetsAttachInfo* info) {
  return guarded("xrAttachSessionActionSets", [&]() -> XrResult {
    Registry& r = Registry::get();
    Session* s = find(r.sessions, session);
    if (s == nullptr) return XR_ERROR_HANDLE_INVALID;
    if (info == nullptr || info->type != XR_TYPE_SESSION_ACTION_SETS_ATTACH_INFO || info->countActionSets == 0 ||
        info->actionSets == nullptr)
      return XR_ERROR_VALIDATION_FAILURE;
    if (s->attached) return XR_ERROR_ACTIONSETS_ALREADY_ATTACHED;
    Instance& inst = *r.instances.at(s->instance);
    std::vector<ActionSet*> sets;
    for (uint32_t i = 0; i < info->countActionSets; ++i) {
      ActionSet* set = find(r.action_sets, info->actionSets[i]);
      if (set == nullptr || set->instance != inst.id) return XR_ERROR_HANDLE_INVALID;
      sets.push_back(set);
    }
    s->attached = true;
    for (ActionSet* set : sets) {
      set->attached = true;
      s->attached_sets.push_back(set->id);
      for (uint64_t id : set->actions) {
        const Action& a = *r.actions.at(id);
        BoundAction b;
        b.name = a.name;
        b.type = a.type;
        b.subaction_paths = a.subaction_paths;
        s->bound.emplace(id, std::move(b));
      }
    }

    // The active profile: the script's preference, else oculus/touch_controller, else the first
    // suggested profile, among the profiles with a binding for an attached action.
    std::vector<std::string> candidates;
    for (const auto& [profile, list] : inst.suggested)
      if (std::any_of(list.begin(), list.end(), [&](const auto& b) { return s->bound.count(b.first) > 0; }))
        candidates.push_back(profile);
    auto has = [&](const std::string& p) { return std::find(candidates.begin(), candidates.end(), p) != candidates.end(); };
    if (!inst.script.preferred_profile().empty() && has(inst.script.preferred_profile()))
      s->active_profile = inst.script.preferred_profile();
    else if (has("/interaction_profiles/oculus/touch_controller"))
      s->active_profile = "/interaction_profiles/oculus/touch_controller";
    else if (!candidates.empty())
      s->active_profile = candidates.front();
    if (s->active_profile.empty()) return XR_SUCCESS;

    for (const auto& [profile, list] : inst.suggested) {
      if (profile != s->active_profile) continue;
      for (const auto& [action, binding] : list) {
        auto it = s->bound.find(action);
        if (it == s->bound.end() || !binding_fits(profile, binding, kind_of(it->second.type))) continue;
        BoundAction& b = it->second;
        if (!b.subaction_paths.empty()) {
          // Bindings outside the action's subaction paths are ignored.
          std::string top = binding.substr(0, binding.find("/input") != std::string::npos ? binding.find("/input")
                                                                                           : binding.find("/output"));
          if (std::none_of(b.subaction_paths.begin(), b.subaction_paths.end(),
                           [&](XrPath p) { return path_string(inst, p) == top; }))
            continue;
        }
        b.sources.push_back(binding);
      }
    }
    XrEventDataBuffer event{};
    auto& e = reinterpret_cast<XrEventDataInteractionProfileChanged&>(event);
    e.type = XR_TYPE_EVENT_DATA_INTERACTION_PROFILE_CHANGED;
    e.session = session;
    push_event(inst, event);
    inst.record.add("profile " + std::to_string(s->wait_frame) + " " + s->active_profile);
    return XR_SUCCESS;
  });
}

XrResult GetCurrentInteractionProfile(XrSession session, XrPath top_level, XrInteractionProfileState* state) {
  return guarded("xrGetCurrentInteractionProfile", [&]() -> XrResult {
    Registry& r = Registry::get();
    Session* s = find(r.sessions, session);
    if (s == nullptr) return XR_ERROR_HANDLE_INVALID;
    if (state == nullptr || state->type != XR_TYPE_INTERACTION_PROFILE_STATE) return XR_ERROR_VALIDATION_FAILURE;
    if (s->lost) return XR_ERROR_SESSION_LOST;
    Instance& inst = *r.instances.at(s->instance);
    const std::string* p = inst.paths.lookup(top_level);
    if (p == nullptr) return XR_ERROR_PATH_INVALID;
    if (!top_level_user_path(*p)) return XR_ERROR_PATH_UNSUPPORTED;
    if (!s->attached) return XR_ERROR_ACTIONSET_NOT_ATTACHED;
    bool hand = *p == "/user/hand/left" || *p == "/user/hand/right";
    state->interactionProfile = (hand && !s->active_profile.empty()) ? inst.paths.intern(s->active_profile) : XR_NULL_PATH;
    return XR_SUCCESS;
  });
}

XrResult SyncActions(XrSession session, const XrActionsSyncInfo* info) {
  return guarded("xrSyncActions", [&]() -> XrResult {
    Registry& r = Registry::get();
    Session* s = find(r.sessions, session);
    if (s == nullptr) return XR_ERROR_HANDLE_INVALID;
    if (info == nullptr || info->type != XR_TYPE_ACTIONS_SYNC_INFO ||
        (info->countActiveActionSets > 0 && info->activeActionSets == nullptr))
      return XR_ERROR_VALIDATION_FAILURE;
    if (s->lost) return XR_ERROR_SESSION_LOST;
    Instance& inst = *r.instances.at(s->instance);
    std::vector<uint64_t> active;
    for (uint32_t i = 0; i < info->countActiveActionSets; ++i) {
      const XrActiveActionSet& aas = info->activeActionSets[i];
      ActionSet* set = find(r.action_sets, aas.actionSet);
      if (set == nullptr || set->instance != inst.id) return XR_ERROR_HANDLE_INVALID;
      if (std::find(s->attached_sets.begin(), s->attached_sets.end(), set->id) == s->attached_sets.end())
        return XR_ERROR_ACTIONSET_NOT_ATTACHED;
      // The subaction filter is validated; every hand of the set is synchronised regardless.
      if (aas.subactionPath != XR_NULL_PATH) {
        const std::string* p = inst.paths.lookup(aas.subactionPath);
        if (p == nullptr) return XR_ERROR_PATH_INVALID;
        if (!top_level_user_path(*p)) return XR_ERROR_PATH_UNSUPPORTED;
      }
      active.insert(active.end(), set->actions.begin(), set->actions.end());
    }
    const bool focused = s->state == XR_SESSION_STATE_FOCUSED;
    ScriptState st = inst.script.at(s->wait_frame);
    XrTime now = frame_time(s->wait_frame);
    for (auto& [id, bound] : s->bound) {
      bool synced = focused && std::find(active.begin(), active.end(), id) != active.end();
      if (synced) {
        sync_bound_action(*s, bound, st, now);
      } else {
        for (auto& slot : bound.slots) slot = BoundAction::Slot{};
      }
    }
    return focused ? XR_SUCCESS : XR_SESSION_NOT_FOCUSED;
  });
}

namespace {

template <class State, class Fill>
XrResult get_state(const char* function, XrSession session, const XrActionStateGetInfo* info, State* state,
                   XrStructureType state_type, XrActionType action_type, Fill&& fill) {
  return guarded(function, [&]() -> XrResult {
    Registry& r = Registry::get();
    Session* s = find(r.sessions, session);
    if (s == nullptr) return XR_ERROR_HANDLE_INVALID;
    if (info == nullptr || info->type != XR_TYPE_ACTION_STATE_GET_INFO || state == nullptr || state->type != state_type)
      return XR_ERROR_VALIDATION_FAILURE;
    if (s->lost) return XR_ERROR_SESSION_LOST;
    BoundAction* bound = nullptr;
    int slot = 0;
    if (XrResult res = resolve(r, *s, info->action, action_type, info->subactionPath, &bound, &slot); XR_FAILED(res))
      return res;
    fill(*state, slot == 3 ? kInactive : bound->slots[slot]);
    return XR_SUCCESS;
  });
}

}  // namespace

XrResult GetActionStateBoolean(XrSession session, const XrActionStateGetInfo* info, XrActionStateBoolean* state) {
  return get_state("xrGetActionStateBoolean", session, info, state, XR_TYPE_ACTION_STATE_BOOLEAN,
                   XR_ACTION_TYPE_BOOLEAN_INPUT, [](XrActionStateBoolean& out, const BoundAction::Slot& s) {
                     out.currentState = s.value[0] != 0 ? XR_TRUE : XR_FALSE;
                     out.changedSinceLastSync = s.changed ? XR_TRUE : XR_FALSE;
                     out.lastChangeTime = s.active ? s.last_change : 0;
                     out.isActive = s.active ? XR_TRUE : XR_FALSE;
                   });
}

XrResult GetActionStateFloat(XrSession session, const XrActionStateGetInfo* info, XrActionStateFloat* state) {
  return get_state("xrGetActionStateFloat", session, info, state, XR_TYPE_ACTION_STATE_FLOAT,
                   XR_ACTION_TYPE_FLOAT_INPUT, [](XrActionStateFloat& out, const BoundAction::Slot& s) {
                     out.currentState = s.value[0];
                     out.changedSinceLastSync = s.changed ? XR_TRUE : XR_FALSE;
                     out.lastChangeTime = s.active ? s.last_change : 0;
                     out.isActive = s.active ? XR_TRUE : XR_FALSE;
                   });
}

XrResult GetActionStateVector2f(XrSession session, const XrActionStateGetInfo* info, XrActionStateVector2f* state) {
  return get_state("xrGetActionStateVector2f", session, info, state, XR_TYPE_ACTION_STATE_VECTOR2F,
                   XR_ACTION_TYPE_VECTOR2F_INPUT, [](XrActionStateVector2f& out, const BoundAction::Slot& s) {
                     out.currentState = {s.value[0], s.value[1]};
                     out.changedSinceLastSync = s.changed ? XR_TRUE : XR_FALSE;
                     out.lastChangeTime = s.active ? s.last_change : 0;
                     out.isActive = s.active ? XR_TRUE : XR_FALSE;
                   });
}

XrResult GetActionStatePose(XrSession session, const XrActionStateGetInfo* info, XrActionStatePose* state) {
  return get_state("xrGetActionStatePose", session, info, state, XR_TYPE_ACTION_STATE_POSE, XR_ACTION_TYPE_POSE_INPUT,
                   [](XrActionStatePose& out, const BoundAction::Slot& s) {
                     out.isActive = s.active ? XR_TRUE : XR_FALSE;
                   });
}

XrResult EnumerateBoundSourcesForAction(XrSession session, const XrBoundSourcesForActionEnumerateInfo* info,
                                        uint32_t capacity, uint32_t* count_output, XrPath* sources) {
  return guarded("xrEnumerateBoundSourcesForAction", [&]() -> XrResult {
    Registry& r = Registry::get();
    Session* s = find(r.sessions, session);
    if (s == nullptr) return XR_ERROR_HANDLE_INVALID;
    if (info == nullptr || info->type != XR_TYPE_BOUND_SOURCES_FOR_ACTION_ENUMERATE_INFO ||
        (capacity > 0 && sources == nullptr))
      return XR_ERROR_VALIDATION_FAILURE;
    const Action* a = find(r.actions, info->action);
    if (a == nullptr || a->instance != s->instance) return XR_ERROR_HANDLE_INVALID;
    auto it = s->bound.find(a->id);
    if (it == s->bound.end()) return XR_ERROR_ACTIONSET_NOT_ATTACHED;
    Instance& inst = *r.instances.at(s->instance);
    const auto& list = it->second.sources;
    return two_call(capacity, count_output, static_cast<uint32_t>(list.size()),
                    [&](uint32_t i) { sources[i] = inst.paths.intern(list[i]); });
  });
}

XrResult GetInputSourceLocalizedName(XrSession session, const XrInputSourceLocalizedNameGetInfo* info,
                                     uint32_t capacity, uint32_t* count_output, char* buffer) {
  return guarded("xrGetInputSourceLocalizedName", [&]() -> XrResult {
    Registry& r = Registry::get();
    Session* s = find(r.sessions, session);
    if (s == nullptr) return XR_ERROR_HANDLE_INVALID;
    if (info == nullptr || info->type != XR_TYPE_INPUT_SOURCE_LOCALIZED_NAME_GET_INFO || info->whichComponents == 0)
      return XR_ERROR_VALIDATION_FAILURE;
    Instance& inst = *r.instances.at(s->instance);
    const std::string* p = inst.paths.lookup(info->sourcePath);
    if (p == nullptr) return XR_ERROR_PATH_INVALID;
    if (!s->attached) return XR_ERROR_ACTIONSET_NOT_ATTACHED;
    std::string name;
    auto add = [&](const std::string& part) { name += (name.empty() ? "" : " ") + part; };
    int hand = binding_hand(*p);
    if (info->whichComponents & XR_INPUT_SOURCE_LOCALIZED_NAME_USER_PATH_BIT)
      add(hand == 0 ? "Left Hand" : hand == 1 ? "Right Hand" : "User");
    if (info->whichComponents & XR_INPUT_SOURCE_LOCALIZED_NAME_INTERACTION_PROFILE_BIT)
      add(s->active_profile.empty() ? "No Controller" : s->active_profile.substr(s->active_profile.rfind('/') + 1));
    if (info->whichComponents & XR_INPUT_SOURCE_LOCALIZED_NAME_COMPONENT_BIT) {
      auto at = p->find("/input/");
      add(at == std::string::npos ? *p : p->substr(at + 7));
    }
    return string_two_call(name, capacity, count_output, buffer);
  });
}

namespace {

XrResult haptic(const char* function, XrSession session, const XrHapticActionInfo* info,
                const XrHapticBaseHeader* feedback, bool stop) {
  return guarded(function, [&]() -> XrResult {
    Registry& r = Registry::get();
    Session* s = find(r.sessions, session);
    if (s == nullptr) return XR_ERROR_HANDLE_INVALID;
    if (info == nullptr || info->type != XR_TYPE_HAPTIC_ACTION_INFO) return XR_ERROR_VALIDATION_FAILURE;
    if (!stop && (feedback == nullptr || feedback->type != XR_TYPE_HAPTIC_VIBRATION)) return XR_ERROR_VALIDATION_FAILURE;
    if (s->lost) return XR_ERROR_SESSION_LOST;
    BoundAction* bound = nullptr;
    int slot = 0;
    if (XrResult res = resolve(r, *s, info->action, XR_ACTION_TYPE_VIBRATION_OUTPUT, info->subactionPath, &bound, &slot);
        XR_FAILED(res))
      return res;
    if (s->state != XR_SESSION_STATE_FOCUSED) return XR_SESSION_NOT_FOCUSED;
    Instance& inst = *r.instances.at(s->instance);
    for (const std::string& src : bound->sources) {
      int hand = binding_hand(src);
      if (slot == 3 || (slot != 0 && hand != slot - 1)) continue;
      std::string line = std::string(stop ? "haptic_stop " : "haptic ") + std::to_string(s->wait_frame) + " " +
                         bound->name + " " + src;
      if (!stop) {
        const auto* v = reinterpret_cast<const XrHapticVibration*>(feedback);
        float amplitude = std::isfinite(v->amplitude) ? std::clamp(v->amplitude, 0.0f, 1.0f) : 0.0f;
        line += " " + std::to_string(amplitude) + " " + std::to_string(v->duration) + " " + std::to_string(v->frequency);
      }
      inst.record.add(line);
    }
    return XR_SUCCESS;
  });
}

}  // namespace

XrResult ApplyHapticFeedback(XrSession session, const XrHapticActionInfo* info, const XrHapticBaseHeader* feedback) {
  return haptic("xrApplyHapticFeedback", session, info, feedback, false);
}

XrResult StopHapticFeedback(XrSession session, const XrHapticActionInfo* info) {
  return haptic("xrStopHapticFeedback", session, info, nullptr, true);
}

}  // namespace xrsim::api
