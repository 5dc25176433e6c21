// The scripted timeline of the simulated runtime (format documented in tests/xrsim/xrsim.h).
// A Script is parsed once at xrCreateInstance and then only read; it is owned by the instance.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace xrsim {

struct Vec3 {
  float x = 0, y = 0, z = 0;
};
struct Quat {
  float x = 0, y = 0, z = 0, w = 1;
};
struct Pose {
  Quat orientation;
  Vec3 position;
};

// Everything the simulated user does at one frame.
struct ScriptState {
  Pose head{{}, {0, 1.6f, 0}};
  float ipd = 0.064f;
  Pose grip[2]{{{}, {-0.2f, 1.3f, -0.3f}}, {{}, {0.2f, 1.3f, -0.3f}}};  // [0] left, [1] right
  Pose aim[2]{{{}, {-0.2f, 1.3f, -0.35f}}, {{}, {0.2f, 1.3f, -0.35f}}};
  std::map<std::string, float> inputs;  // full component path -> value; absent means 0
  bool lose_session = false;  // events: true only at the frame they were scripted for
  bool lose_session_at_end = false;  // ... at that frame's xrEndFrame instead of its xrWaitFrame
  int64_t away_calls = 0;     // with either: xrGetSystem calls that fail afterwards (-1: all)
  bool request_exit = false;
  bool should_render = true;  // false: xrWaitFrame says shouldRender = XR_FALSE (held until changed)

  // The value of a component path, 0 when never set.
  float input(const std::string& path) const;
};

class Script {
 public:
  // Parses script text. On error returns nullopt and sets *error to "<name>:<line>: what".
  static std::optional<Script> parse(const std::string& text, const std::string& name, std::string* error);
  // Reads and parses a file.
  static std::optional<Script> load(const std::string& path, std::string* error);

  // The state at `frame`: every change at frames <= frame applied in order; events only at their
  // own frame.
  ScriptState at(uint64_t frame) const;

  bool stage_enabled() const { return stage_enabled_; }
  const std::string& preferred_profile() const { return preferred_profile_; }
  uint32_t view_width() const { return view_width_; }
  uint32_t view_height() const { return view_height_; }
  // xrGetSystem calls of an instance that fail with XR_ERROR_FORM_FACTOR_UNAVAILABLE before the
  // headset shows up (-1: it never does).
  int64_t no_headset_calls() const { return no_headset_calls_; }
  bool srgb_formats() const { return srgb_formats_; }
  // `gpu_after_loss other`: after a session loss the system names another physical device.
  bool other_gpu_after_loss() const { return other_gpu_after_loss_; }
  // True when `function` (e.g. "xrAttachSessionActionSets") is scripted to fail.
  bool fails(const std::string& function) const;

 private:
  struct Change {
    enum Kind { kHead, kIpd, kGrip, kAim, kInput, kLose, kLoseAtEnd, kExit, kRender } kind;
    int hand = 0;
    Pose pose;
    float value = 0;
    std::string path;
  };
  std::vector<std::pair<uint64_t, Change>> changes_;  // ascending frame
  bool stage_enabled_ = true;
  std::string preferred_profile_;
  uint32_t view_width_ = 256, view_height_ = 256;
  int64_t no_headset_calls_ = 0;
  bool srgb_formats_ = true;
  bool other_gpu_after_loss_ = false;
  std::vector<std::string> fail_;
};

}  // namespace xrsim
