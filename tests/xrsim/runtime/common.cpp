// Registry, paths, pose math, events and the small helpers shared by the entry points.
#include "tests/xrsim/runtime/state.h"
#include "tests/xrsim/xrsim.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace xrsim {

static_assert(kFirstDisplayTime > 0 && kFramePeriod > 0);

Registry& Registry::get() {
  static Registry registry;
  return registry;
}

Registry::~Registry() {
  const char* path = std::getenv(kEnvLive);
  if (path == nullptr || path[0] == '\0') return;
  if (FILE* f = std::fopen(path, "w")) {
    std::fprintf(f, "live %zu %zu %zu %zu %zu %zu\n", instances.size(), sessions.size(), spaces.size(), swapchains.size(),
                 action_sets.size(), actions.size());
    std::fclose(f);
  }
}

void Registry::note_error(const char* function, XrResult result) {
  auto it = instances.find(last_instance);
  if (it != instances.end()) it->second->record.add(std::string("error ") + function + " " + result_name(result));
}

// ---- paths ---------------------------------------------------------------------------------------

bool PathTable::well_formed(const std::string& s) {
  if (s.size() < 2 || s.size() >= XR_MAX_PATH_LENGTH || s[0] != '/' || s.back() == '/') return false;
  size_t start = 1;
  while (start <= s.size()) {
    size_t end = s.find('/', start);
    if (end == std::string::npos) end = s.size();
    std::string part = s.substr(start, end - start);
    if (part.empty()) return false;
    bool only_dots = true;
    for (char c : part) {
      if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.')) return false;
      if (c != '.') only_dots = false;
    }
    if (only_dots) return false;
    start = end + 1;
  }
  return true;
}

XrPath PathTable::intern(const std::string& s) {
  if (!well_formed(s)) return XR_NULL_PATH;
  auto it = ids_.find(s);
  if (it != ids_.end()) return it->second;
  strings_.push_back(s);
  XrPath p = strings_.size();
  ids_.emplace(s, p);
  return p;
}

const std::string* PathTable::lookup(XrPath p) const {
  if (p == XR_NULL_PATH || p > strings_.size()) return nullptr;
  return &strings_[p - 1];
}

std::string path_string(const Instance& inst, XrPath p) {
  const std::string* s = inst.paths.lookup(p);
  return s ? *s : std::string();
}

// ---- helpers -------------------------------------------------------------------------------------

XrResult string_two_call(const std::string& s, uint32_t capacity, uint32_t* count_output, char* buffer) {
  if (count_output == nullptr) return XR_ERROR_VALIDATION_FAILURE;
  uint32_t needed = static_cast<uint32_t>(s.size() + 1);
  *count_output = needed;
  if (capacity == 0) return XR_SUCCESS;
  if (buffer == nullptr) return XR_ERROR_VALIDATION_FAILURE;
  if (capacity < needed) return XR_ERROR_SIZE_INSUFFICIENT;
  std::memcpy(buffer, s.c_str(), needed);
  return XR_SUCCESS;
}

const XrBaseInStructure* find_in_chain(const void* next, XrStructureType type) {
  for (auto* p = static_cast<const XrBaseInStructure*>(next); p != nullptr; p = p->next)
    if (p->type == type) return p;
  return nullptr;
}

const char* result_name(XrResult r) {
  switch (r) {
#define XRSIM_CASE(name, value) \
  case name:                    \
    return #name;
    XR_LIST_ENUM_XrResult(XRSIM_CASE)
#undef XRSIM_CASE
    default:
      return "XR_UNKNOWN_RESULT";
  }
}

const char* session_state_name(XrSessionState s) {
  switch (s) {
#define XRSIM_CASE(name, value) \
  case name:                    \
    return #name;
    XR_LIST_ENUM_XrSessionState(XRSIM_CASE)
#undef XRSIM_CASE
    default:
      return "XR_SESSION_STATE_UNKNOWN";
  }
}

// ---- pose math -----------------------------------------------------------------------------------

bool pose_valid(const XrPosef& p) {
  const XrQuaternionf& q = p.orientation;
  float values[] = {p.position.x, p.position.y, p.position.z, q.x, q.y, q.z, q.w};
  for (float v : values)
    if (!std::isfinite(v)) return false;
  float len = std::sqrt(q.x * q.x + q.y * q.y + q.z * q.z + q.w * q.w);
  return std::fabs(len - 1.0f) <= 1e-2f;
}

Pose to_pose(const XrPosef& p) {
  const XrQuaternionf& q = p.orientation;
  float len = std::sqrt(q.x * q.x + q.y * q.y + q.z * q.z + q.w * q.w);
  return Pose{{q.x / len, q.y / len, q.z / len, q.w / len}, {p.position.x, p.position.y, p.position.z}};
}

XrPosef to_xr(const Pose& p) {
  XrPosef r;
  r.orientation = {p.orientation.x, p.orientation.y, p.orientation.z, p.orientation.w};
  r.position = {p.position.x, p.position.y, p.position.z};
  return r;
}

static Quat mul(const Quat& a, const Quat& b) {
  return {a.w * b.x + a.x * b.w + a.y * b.z - a.z * b.y, a.w * b.y - a.x * b.z + a.y * b.w + a.z * b.x,
          a.w * b.z + a.x * b.y - a.y * b.x + a.z * b.w, a.w * b.w - a.x * b.x - a.y * b.y - a.z * b.z};
}

Vec3 rotate(const Quat& q, const Vec3& v) {
  Quat p{v.x, v.y, v.z, 0};
  Quat c{-q.x, -q.y, -q.z, q.w};
  Quat r = mul(mul(q, p), c);
  return {r.x, r.y, r.z};
}

Pose compose(const Pose& a, const Pose& b) {
  Vec3 t = rotate(a.orientation, b.position);
  return Pose{mul(a.orientation, b.orientation), {a.position.x + t.x, a.position.y + t.y, a.position.z + t.z}};
}

Pose inverse(const Pose& p) {
  Quat c{-p.orientation.x, -p.orientation.y, -p.orientation.z, p.orientation.w};
  Vec3 t = rotate(c, p.position);
  return Pose{c, {-t.x, -t.y, -t.z}};
}

// ---- time ----------------------------------------------------------------------------------------

XrTime frame_time(uint64_t frame) { return kFirstDisplayTime + static_cast<XrTime>(frame) * kFramePeriod; }

uint64_t frame_at(XrTime time) {
  if (time <= kFirstDisplayTime) return 0;
  return static_cast<uint64_t>((time - kFirstDisplayTime + kFramePeriod / 2) / kFramePeriod);
}

// ---- events --------------------------------------------------------------------------------------

void push_event(Instance& inst, const XrEventDataBuffer& event) {
  // Bounded queue: the oldest event is dropped and counted; xrPollEvent reports the count with
  // XrEventDataEventsLost before the next event.
  constexpr size_t kCapacity = 256;
  if (inst.events.size() >= kCapacity) {
    inst.events.pop_front();
    ++inst.events_lost;
  }
  inst.events.push_back(event);
}

void queue_state(Instance& inst, Session& s, XrSessionState state) {
  XrEventDataBuffer b{};
  auto& e = reinterpret_cast<XrEventDataSessionStateChanged&>(b);
  e.type = XR_TYPE_EVENT_DATA_SESSION_STATE_CHANGED;
  e.next = nullptr;
  e.session = handle_of<XrSession>(s.id);
  e.state = state;
  e.time = frame_time(inst.frames_waited == 0 ? 0 : inst.frames_waited - 1);
  s.queued_state = state;
  push_event(inst, b);
}

void queue_stop(Instance& inst, Session& s) {
  s.exit_requested = true;
  switch (s.queued_state) {
    case XR_SESSION_STATE_FOCUSED:
      queue_state(inst, s, XR_SESSION_STATE_VISIBLE);
      [[fallthrough]];
    case XR_SESSION_STATE_VISIBLE:
      queue_state(inst, s, XR_SESSION_STATE_SYNCHRONIZED);
      queue_state(inst, s, XR_SESSION_STATE_STOPPING);
      break;
    case XR_SESSION_STATE_READY:  // running, not yet synchronized
      queue_state(inst, s, XR_SESSION_STATE_SYNCHRONIZED);
      queue_state(inst, s, XR_SESSION_STATE_STOPPING);
      break;
    case XR_SESSION_STATE_SYNCHRONIZED:
      queue_state(inst, s, XR_SESSION_STATE_STOPPING);
      break;
    default:  // already stopping, idle, exiting or lost
      break;
  }
  s.synchronized_queued = s.visible_queued = true;  // no further upward transitions
}

}  // namespace xrsim
