#include "tests/xrsim/runtime/script.h"

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace xrsim {

float ScriptState::input(const std::string& path) const {
  auto it = inputs.find(path);
  return it == inputs.end() ? 0.0f : it->second;
}

namespace {

bool parse_float(const std::string& s, float* out) {
  if (s.empty()) return false;
  char* end = nullptr;
  float v = std::strtof(s.c_str(), &end);
  if (end != s.c_str() + s.size() || !std::isfinite(v)) return false;
  *out = v;
  return true;
}

bool parse_uint(const std::string& s, uint64_t* out) {
  if (s.empty() || s[0] == '-' || s[0] == '+') return false;
  char* end = nullptr;
  unsigned long long v = std::strtoull(s.c_str(), &end, 10);
  if (end != s.c_str() + s.size()) return false;
  *out = v;
  return true;
}

bool valid_component_path(const std::string& p) {
  // /user/hand/<left|right>/input/<identifier>[/<component>] with path characters only.
  for (const char* prefix : {"/user/hand/left/input/", "/user/hand/right/input/"}) {
    if (p.rfind(prefix, 0) != 0) continue;
    std::string rest = p.substr(std::string(prefix).size());
    if (rest.empty() || rest.back() == '/' || rest.front() == '/') return false;
    for (char c : rest)
      if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.' || c == '/'))
        return false;
    return rest.find("//") == std::string::npos;
  }
  return false;
}

}  // namespace

std::optional<Script> Script::parse(const std::string& text, const std::string& name, std::string* error) {
  Script script;
  std::istringstream in(text);
  std::string line;
  uint64_t frame = 0;
  bool timeline_started = false;
  int line_no = 0;
  auto fail = [&](const std::string& what) {
    *error = name + ":" + std::to_string(line_no) + ": " + what;
    return std::nullopt;
  };
  while (std::getline(in, line)) {
    ++line_no;
    if (auto hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    std::istringstream words(line);
    std::vector<std::string> w;
    for (std::string s; words >> s;) w.push_back(s);
    if (w.empty()) continue;
    const std::string& cmd = w[0];

    auto read_pose = [&](size_t first, Pose* pose) -> bool {
      size_t n = w.size() - first;
      if (n != 3 && n != 7) return false;
      float v[7] = {0, 0, 0, 0, 0, 0, 1};
      for (size_t i = 0; i < n; ++i)
        if (!parse_float(w[first + i], &v[i])) return false;
      pose->position = {v[0], v[1], v[2]};
      float len = std::sqrt(v[3] * v[3] + v[4] * v[4] + v[5] * v[5] + v[6] * v[6]);
      if (std::fabs(len - 1.0f) > 1e-3f) return false;
      pose->orientation = {v[3] / len, v[4] / len, v[5] / len, v[6] / len};
      return true;
    };
    auto read_hand = [&](int* hand) -> bool {
      if (w.size() < 2) return false;
      if (w[1] == "left") *hand = 0;
      else if (w[1] == "right") *hand = 1;
      else return false;
      return true;
    };

    Change change{};
    if (cmd == "stage" || cmd == "prefer_profile" || cmd == "view_size" || cmd == "no_headset" || cmd == "srgb" ||
        cmd == "fail" || cmd == "gpu_after_loss") {
      if (timeline_started) return fail("option '" + cmd + "' must come before the first 'frame' line");
      if (cmd == "stage") {
        if (w.size() != 2 || (w[1] != "on" && w[1] != "off")) return fail("expected 'stage on' or 'stage off'");
        script.stage_enabled_ = w[1] == "on";
      } else if (cmd == "prefer_profile") {
        if (w.size() != 2 || w[1].rfind("/interaction_profiles/", 0) != 0)
          return fail("expected 'prefer_profile /interaction_profiles/<vendor>/<name>'");
        script.preferred_profile_ = w[1];
      } else if (cmd == "no_headset") {
        uint64_t n = 0;
        if (w.size() > 2 || (w.size() == 2 && !parse_uint(w[1], &n))) return fail("expected 'no_headset [CALLS]'");
        script.no_headset_calls_ = w.size() == 2 ? static_cast<int64_t>(n) : -1;
      } else if (cmd == "srgb") {
        if (w.size() != 2 || (w[1] != "on" && w[1] != "off")) return fail("expected 'srgb on' or 'srgb off'");
        script.srgb_formats_ = w[1] == "on";
      } else if (cmd == "gpu_after_loss") {
        if (w.size() != 2 || (w[1] != "other" && w[1] != "same")) return fail("expected 'gpu_after_loss other' or 'gpu_after_loss same'");
        script.other_gpu_after_loss_ = w[1] == "other";
      } else if (cmd == "fail") {
        if (w.size() != 2 || w[1].rfind("xr", 0) != 0) return fail("expected 'fail xrFunctionName'");
        script.fail_.push_back(w[1]);
      } else {
        uint64_t wd = 0, ht = 0;
        if (w.size() != 3 || !parse_uint(w[1], &wd) || !parse_uint(w[2], &ht) || wd == 0 || ht == 0 || wd > 2048 ||
            ht > 2048)
          return fail("expected 'view_size W H' with 1 <= W, H <= 2048");
        script.view_width_ = static_cast<uint32_t>(wd);
        script.view_height_ = static_cast<uint32_t>(ht);
      }
      continue;
    }
    if (cmd == "frame") {
      uint64_t n = 0;
      if (w.size() != 2 || !parse_uint(w[1], &n)) return fail("expected 'frame N' with N a frame index");
      if (timeline_started && n < frame) return fail("frame " + w[1] + " comes after frame " + std::to_string(frame));
      frame = n;
      timeline_started = true;
      continue;
    }
    timeline_started = true;
    if (cmd == "head") {
      change.kind = Change::kHead;
      if (!read_pose(1, &change.pose)) return fail("expected 'head px py pz [qx qy qz qw]' with a unit quaternion");
    } else if (cmd == "ipd") {
      change.kind = Change::kIpd;
      if (w.size() != 2 || !parse_float(w[1], &change.value) || change.value < 0 || change.value > 0.2f)
        return fail("expected 'ipd METRES' between 0 and 0.2");
    } else if (cmd == "grip" || cmd == "aim") {
      change.kind = cmd == "grip" ? Change::kGrip : Change::kAim;
      if (!read_hand(&change.hand) || !read_pose(2, &change.pose))
        return fail("expected '" + cmd + " left|right px py pz [qx qy qz qw]' with a unit quaternion");
    } else if (cmd == "lose_session" || cmd == "lose_session_at_end") {
      change.kind = cmd == "lose_session" ? Change::kLose : Change::kLoseAtEnd;
      uint64_t n = 0;
      if (w.size() > 2 || (w.size() == 2 && w[1] != "forever" && !parse_uint(w[1], &n)))
        return fail("expected '" + cmd + " [AWAY_CALLS|forever]'");
      change.value = w.size() == 2 && w[1] == "forever" ? -1.0f : static_cast<float>(n);
    } else if (cmd == "request_exit") {
      if (w.size() != 1) return fail("'" + cmd + "' takes no argument");
      change.kind = Change::kExit;
    } else if (cmd == "should_render") {
      if (w.size() != 2 || (w[1] != "on" && w[1] != "off")) return fail("expected 'should_render on' or 'should_render off'");
      change.kind = Change::kRender;
      change.value = w[1] == "on" ? 1.0f : 0.0f;
    } else if (cmd[0] == '/') {
      if (!valid_component_path(cmd))
        return fail("'" + cmd + "' is not an input path /user/hand/left|right/input/<identifier>[/<component>]");
      change.kind = Change::kInput;
      if (w.size() == 2) {
        if (!parse_float(w[1], &change.value)) return fail("'" + w[1] + "' is not a number");
        change.path = cmd;
      } else if (w.size() == 3) {
        Change y = change;
        change.path = cmd + "/x";
        y.path = cmd + "/y";
        if (!parse_float(w[1], &change.value) || !parse_float(w[2], &y.value))
          return fail("expected two numbers for the x and y of " + cmd);
        script.changes_.emplace_back(frame, change);
        change = y;
      } else {
        return fail("expected '" + cmd + " VALUE' or '" + cmd + " X Y'");
      }
    } else {
      return fail("unknown command '" + cmd + "'");
    }
    script.changes_.emplace_back(frame, change);
  }
  return script;
}

std::optional<Script> Script::load(const std::string& path, std::string* error) {
  std::ifstream f(path, std::ios::binary);
  if (!f) {
    *error = path + ": cannot open the script";
    return std::nullopt;
  }
  std::ostringstream ss;
  ss << f.rdbuf();
  return parse(ss.str(), path, error);
}

bool Script::fails(const std::string& function) const {
  for (const std::string& f : fail_)
    if (f == function) return true;
  return false;
}

ScriptState Script::at(uint64_t frame) const {
  ScriptState s;
  for (const auto& [f, c] : changes_) {
    if (f > frame) break;
    switch (c.kind) {
      case Change::kHead: s.head = c.pose; break;
      case Change::kIpd: s.ipd = c.value; break;
      case Change::kGrip: s.grip[c.hand] = c.pose; break;
      case Change::kAim: s.aim[c.hand] = c.pose; break;
      case Change::kInput: s.inputs[c.path] = c.value; break;
      case Change::kLose:
      case Change::kLoseAtEnd:
        if (f == frame) {
          (c.kind == Change::kLose ? s.lose_session : s.lose_session_at_end) = true;
          s.away_calls = static_cast<int64_t>(c.value);
        }
        break;
      case Change::kRender: s.should_render = c.value != 0; break;
      case Change::kExit: s.request_exit = s.request_exit || f == frame; break;
    }
  }
  return s;
}

}  // namespace xrsim
