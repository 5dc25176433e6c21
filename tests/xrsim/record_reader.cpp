#include "tests/xrsim/xrsim.h"

#include <algorithm>
#include <fstream>
#include <sstream>

namespace xrsim {

bool Record::reached(const std::string& state) const {
  return std::any_of(states.begin(), states.end(), [&](const State& s) { return s.state == state; });
}

std::vector<std::string> Record::state_names() const {
  std::vector<std::string> out;
  for (const State& s : states) out.push_back(s.state);
  return out;
}

std::optional<Record> read_record(const std::string& path, std::string* error) {
  std::ifstream in(path);
  if (!in) {
    *error = path + ": cannot open the record";
    return std::nullopt;
  }
  Record rec;
  std::string line;
  int line_no = 0;
  auto fail = [&](const std::string& what) {
    *error = path + ":" + std::to_string(line_no) + ": " + what;
    return std::nullopt;
  };
  while (std::getline(in, line)) {
    ++line_no;
    std::istringstream w(line);
    std::string kind;
    w >> kind;
    if (line_no == 1) {
      int version = 0;
      if (kind != "xrsim-record" || !(w >> version) || version != 1) return fail("not an xrsim record (version 1)");
      continue;
    }
    bool ok = true;
    if (kind == "state") {
      Record::State s;
      ok = static_cast<bool>(w >> s.frame >> s.state);
      rec.states.push_back(s);
    } else if (kind == "profile") {
      Record::Profile p;
      ok = static_cast<bool>(w >> p.frame >> p.path);
      rec.profiles.push_back(p);
    } else if (kind == "swapchain") {
      Record::Swapchain s;
      ok = static_cast<bool>(w >> s.format >> s.width >> s.height >> s.array_size >> s.sample_count >> s.mip_count >>
                             s.images);
      rec.swapchains.push_back(s);
    } else if (kind == "frame") {
      Record::Frame f;
      ok = static_cast<bool>(w >> f.index >> f.layers >> f.projection_views >> f.depth_infos);
      rec.frames.push_back(f);
    } else if (kind == "capture") {
      Record::Capture c;
      ok = static_cast<bool>(w >> c.frame >> c.layer >> c.view >> c.file);
      rec.captures.push_back(c);
    } else if (kind == "haptic" || kind == "haptic_stop") {
      Record::Haptic h;
      h.stop = kind == "haptic_stop";
      ok = static_cast<bool>(w >> h.frame >> h.action >> h.path);
      if (ok && !h.stop) ok = static_cast<bool>(w >> h.amplitude >> h.duration >> h.frequency);
      rec.haptics.push_back(h);
    } else if (kind == "error") {
      Record::Error e;
      ok = static_cast<bool>(w >> e.function >> e.result);
      rec.errors.push_back(e);
    } else if (kind == "end") {
      ok = static_cast<bool>(w >> rec.frames_submitted);
      rec.complete = ok;
    } else {
      return fail("unknown line kind '" + kind + "'");
    }
    if (!ok) return fail("malformed '" + kind + "' line");
  }
  if (line_no == 0) return fail("empty record");
  return rec;
}

}  // namespace xrsim
