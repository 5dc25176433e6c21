// Reference and action spaces, xrLocateSpace and xrLocateViews. Every pose is computed in STAGE
// space from the script state of the frame nearest the asked time.
#include "tests/xrsim/runtime/state.h"
#include "tests/xrsim/xrsim.h"

#include <algorithm>
#include <string>

namespace xrsim {

void destroy_space(Registry& r, uint64_t id) {
  auto it = r.spaces.find(id);
  if (it == r.spaces.end()) return;
  if (auto s = r.sessions.find(it->second->session); s != r.sessions.end()) {
    auto& list = s->second->spaces;
    list.erase(std::remove(list.begin(), list.end(), id), list.end());
  }
  r.spaces.erase(it);
}

namespace {

bool reference_supported(const Instance& inst, XrReferenceSpaceType t) {
  return t == XR_REFERENCE_SPACE_TYPE_VIEW || t == XR_REFERENCE_SPACE_TYPE_LOCAL ||
         (t == XR_REFERENCE_SPACE_TYPE_STAGE && inst.script.stage_enabled());
}

// The pose of `space` in STAGE at the script state `st`; false when it cannot be located (an
// action space whose pose action is not active for its hand).
bool stage_pose(const Instance& inst, const Session& s, const Space& space, const ScriptState& st, Pose* out) {
  if (!space.is_action) {
    Pose base;
    if (space.reference == XR_REFERENCE_SPACE_TYPE_VIEW) base = st.head;
    else if (space.reference == XR_REFERENCE_SPACE_TYPE_LOCAL) base.position = {0, kLocalOriginHeight, 0};
    *out = compose(base, space.offset);
    return true;
  }
  auto it = s.bound.find(space.action);
  if (it == s.bound.end()) return false;
  const BoundAction& a = it->second;
  int want = -1;  // any hand
  if (space.subaction != XR_NULL_PATH) {
    std::string p = path_string(inst, space.subaction);
    want = p == "/user/hand/left" ? 0 : p == "/user/hand/right" ? 1 : -2;
  }
  for (const std::string& src : a.sources) {
    int hand = binding_hand(src);
    if (hand < 0 || (want != -1 && hand != want) || !a.slots[1 + hand].active) continue;
    bool aim = src.find("/input/aim") != std::string::npos;
    *out = compose(aim ? st.aim[hand] : st.grip[hand], space.offset);
    return true;
  }
  return false;
}

}  // namespace
}  // namespace xrsim

namespace xrsim::api {

XrResult EnumerateReferenceSpaces(XrSession session, uint32_t capacity, uint32_t* count_output,
                                  XrReferenceSpaceType* spaces) {
  return guarded("xrEnumerateReferenceSpaces", [&]() -> XrResult {
    Registry& r = Registry::get();
    Session* s = find(r.sessions, session);
    if (s == nullptr) return XR_ERROR_HANDLE_INVALID;
    const Instance& inst = *r.instances.at(s->instance);
    std::vector<XrReferenceSpaceType> list = {XR_REFERENCE_SPACE_TYPE_VIEW, XR_REFERENCE_SPACE_TYPE_LOCAL};
    if (inst.script.stage_enabled()) list.push_back(XR_REFERENCE_SPACE_TYPE_STAGE);
    if (capacity > 0 && spaces == nullptr) return XR_ERROR_VALIDATION_FAILURE;
    return two_call(capacity, count_output, static_cast<uint32_t>(list.size()),
                    [&](uint32_t i) { spaces[i] = list[i]; });
  });
}

XrResult CreateReferenceSpace(XrSession session, const XrReferenceSpaceCreateInfo* info, XrSpace* out) {
  return guarded("xrCreateReferenceSpace", [&]() -> XrResult {
    Registry& r = Registry::get();
    Session* s = find(r.sessions, session);
    if (s == nullptr) return XR_ERROR_HANDLE_INVALID;
    if (info == nullptr || out == nullptr || info->type != XR_TYPE_REFERENCE_SPACE_CREATE_INFO)
      return XR_ERROR_VALIDATION_FAILURE;
    if (s->lost) return XR_ERROR_SESSION_LOST;
    if (!reference_supported(*r.instances.at(s->instance), info->referenceSpaceType))
      return XR_ERROR_REFERENCE_SPACE_UNSUPPORTED;
    if (!pose_valid(info->poseInReferenceSpace)) return XR_ERROR_POSE_INVALID;
    auto sp = std::make_unique<Space>();
    sp->id = r.new_id();
    sp->session = s->id;
    sp->reference = info->referenceSpaceType;
    sp->offset = to_pose(info->poseInReferenceSpace);
    s->spaces.push_back(sp->id);
    *out = handle_of<XrSpace>(sp->id);
    r.spaces.emplace(sp->id, std::move(sp));
    return XR_SUCCESS;
  });
}

XrResult GetReferenceSpaceBoundsRect(XrSession session, XrReferenceSpaceType type, XrExtent2Df* bounds) {
  return guarded("xrGetReferenceSpaceBoundsRect", [&]() -> XrResult {
    Registry& r = Registry::get();
    Session* s = find(r.sessions, session);
    if (s == nullptr) return XR_ERROR_HANDLE_INVALID;
    if (bounds == nullptr) return XR_ERROR_VALIDATION_FAILURE;
    if (!reference_supported(*r.instances.at(s->instance), type)) return XR_ERROR_REFERENCE_SPACE_UNSUPPORTED;
    if (type == XR_REFERENCE_SPACE_TYPE_STAGE) {
      *bounds = {3.0f, 3.0f};
      return XR_SUCCESS;
    }
    *bounds = {0, 0};
    return XR_SPACE_BOUNDS_UNAVAILABLE;
  });
}

XrResult CreateActionSpace(XrSession session, const XrActionSpaceCreateInfo* info, XrSpace* out) {
  return guarded("xrCreateActionSpace", [&]() -> XrResult {
    Registry& r = Registry::get();
    Session* s = find(r.sessions, session);
    if (s == nullptr) return XR_ERROR_HANDLE_INVALID;
    if (info == nullptr || out == nullptr || info->type != XR_TYPE_ACTION_SPACE_CREATE_INFO)
      return XR_ERROR_VALIDATION_FAILURE;
    const Action* a = find(r.actions, info->action);
    if (a == nullptr || a->instance != s->instance) return XR_ERROR_HANDLE_INVALID;
    if (s->lost) return XR_ERROR_SESSION_LOST;
    if (a->type != XR_ACTION_TYPE_POSE_INPUT) return XR_ERROR_ACTION_TYPE_MISMATCH;
    if (info->subactionPath != XR_NULL_PATH) {
      if (r.instances.at(s->instance)->paths.lookup(info->subactionPath) == nullptr) return XR_ERROR_PATH_INVALID;
      if (std::find(a->subaction_paths.begin(), a->subaction_paths.end(), info->subactionPath) ==
          a->subaction_paths.end())
        return XR_ERROR_PATH_UNSUPPORTED;
    }
    if (!pose_valid(info->poseInActionSpace)) return XR_ERROR_POSE_INVALID;
    auto sp = std::make_unique<Space>();
    sp->id = r.new_id();
    sp->session = s->id;
    sp->is_action = true;
    sp->action = a->id;
    sp->subaction = info->subactionPath;
    sp->offset = to_pose(info->poseInActionSpace);
    s->spaces.push_back(sp->id);
    *out = handle_of<XrSpace>(sp->id);
    r.spaces.emplace(sp->id, std::move(sp));
    return XR_SUCCESS;
  });
}

XrResult DestroySpace(XrSpace space) {
  return guarded("xrDestroySpace", [&]() -> XrResult {
    Registry& r = Registry::get();
    if (find(r.spaces, space) == nullptr) return XR_ERROR_HANDLE_INVALID;
    destroy_space(r, id_of(space));
    return XR_SUCCESS;
  });
}

XrResult LocateSpace(XrSpace space, XrSpace base_space, XrTime time, XrSpaceLocation* location) {
  return guarded("xrLocateSpace", [&]() -> XrResult {
    Registry& r = Registry::get();
    const Space* sp = find(r.spaces, space);
    const Space* base = find(r.spaces, base_space);
    if (sp == nullptr || base == nullptr) return XR_ERROR_HANDLE_INVALID;
    if (location == nullptr || location->type != XR_TYPE_SPACE_LOCATION) return XR_ERROR_VALIDATION_FAILURE;
    if (sp->session != base->session) return XR_ERROR_VALIDATION_FAILURE;
    if (time <= 0) return XR_ERROR_TIME_INVALID;
    const Session& s = *r.sessions.at(sp->session);
    if (s.lost) return XR_ERROR_SESSION_LOST;
    const Instance& inst = *r.instances.at(s.instance);
    ScriptState st = inst.script.at(frame_at(time));
    if (auto* velocity = const_cast<XrSpaceVelocity*>(reinterpret_cast<const XrSpaceVelocity*>(
            find_in_chain(location->next, XR_TYPE_SPACE_VELOCITY))))
      velocity->velocityFlags = 0;  // velocities are not simulated
    Pose a, b;
    if (!stage_pose(inst, s, *sp, st, &a) || !stage_pose(inst, s, *base, st, &b)) {
      location->locationFlags = 0;
      location->pose = to_xr(Pose{});
      return XR_SUCCESS;
    }
    location->pose = to_xr(compose(inverse(b), a));
    location->locationFlags = XR_SPACE_LOCATION_ORIENTATION_VALID_BIT | XR_SPACE_LOCATION_POSITION_VALID_BIT |
                              XR_SPACE_LOCATION_ORIENTATION_TRACKED_BIT | XR_SPACE_LOCATION_POSITION_TRACKED_BIT;
    return XR_SUCCESS;
  });
}

XrResult LocateViews(XrSession session, const XrViewLocateInfo* info, XrViewState* view_state, uint32_t capacity,
                     uint32_t* count_output, XrView* views) {
  return guarded("xrLocateViews", [&]() -> XrResult {
    Registry& r = Registry::get();
    Session* s = find(r.sessions, session);
    if (s == nullptr) return XR_ERROR_HANDLE_INVALID;
    if (info == nullptr || info->type != XR_TYPE_VIEW_LOCATE_INFO || view_state == nullptr ||
        view_state->type != XR_TYPE_VIEW_STATE)
      return XR_ERROR_VALIDATION_FAILURE;
    if (s->lost) return XR_ERROR_SESSION_LOST;
    if (info->viewConfigurationType != XR_VIEW_CONFIGURATION_TYPE_PRIMARY_STEREO)
      return XR_ERROR_VIEW_CONFIGURATION_TYPE_UNSUPPORTED;
    if (info->displayTime <= 0) return XR_ERROR_TIME_INVALID;
    const Space* base = find(r.spaces, info->space);
    if (base == nullptr || base->session != s->id) return XR_ERROR_HANDLE_INVALID;
    if (capacity > 0 && views == nullptr) return XR_ERROR_VALIDATION_FAILURE;
    for (uint32_t i = 0; i < std::min(capacity, 2u); ++i)
      if (views[i].type != XR_TYPE_VIEW) return XR_ERROR_VALIDATION_FAILURE;
    const Instance& inst = *r.instances.at(s->instance);
    ScriptState st = inst.script.at(frame_at(info->displayTime));
    Pose b;
    bool located = stage_pose(inst, *s, *base, st, &b);
    view_state->viewStateFlags = located ? (XR_VIEW_STATE_ORIENTATION_VALID_BIT | XR_VIEW_STATE_POSITION_VALID_BIT |
                                            XR_VIEW_STATE_ORIENTATION_TRACKED_BIT | XR_VIEW_STATE_POSITION_TRACKED_BIT)
                                         : 0;
    return two_call(capacity, count_output, 2, [&](uint32_t i) {
      Pose eye;
      eye.position = {(i == 0 ? -0.5f : 0.5f) * st.ipd, 0, 0};
      views[i].pose = to_xr(located ? compose(inverse(b), compose(st.head, eye)) : Pose{});
      views[i].fov = {-0.785398f, 0.785398f, 0.785398f, -0.785398f};
    });
  });
}

}  // namespace xrsim::api
