// Collects the record of one instance (format in tests/xrsim/xrsim.h) and writes it out.
// Owned by the instance; used under the runtime lock only.
#pragma once

#include <string>
#include <vector>

namespace xrsim {

class RecordWriter {
 public:
  // Appends one line (without the newline).
  void add(std::string line) { lines_.push_back(std::move(line)); }
  // Writes the header, every line and `end <frames>`; false when the file cannot be written.
  bool write(const std::string& path, unsigned long long frames_submitted) const;

 private:
  std::vector<std::string> lines_;
};

// Saves tightly packed RGBA8 pixels as a PNG; false on failure.
bool write_png(const std::string& path, int width, int height, const unsigned char* rgba);

}  // namespace xrsim
