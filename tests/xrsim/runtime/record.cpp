#include "tests/xrsim/runtime/record.h"

#include <stb_image_write.h>

#include <cstdio>
#include <fstream>

namespace xrsim {

bool RecordWriter::write(const std::string& path, unsigned long long frames_submitted) const {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return false;
  out << "xrsim-record 1\n";
  for (const std::string& line : lines_) out << line << '\n';
  out << "end " << frames_submitted << '\n';
  return static_cast<bool>(out.flush());
}

bool write_png(const std::string& path, int width, int height, const unsigned char* rgba) {
  return stbi_write_png(path.c_str(), width, height, 4, rgba, width * 4) != 0;
}

}  // namespace xrsim
