#include "model/file_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "model/load.h"

namespace nnxr::model {
namespace fs = std::filesystem;
namespace {

[[noreturn]] void fail(const fs::path& p, const std::string& what) { throw ModelError(p.string() + ": " + what); }

std::string kind_of(mode_t m) {
  if (S_ISREG(m)) return "a regular file";
  if (S_ISDIR(m)) return "a directory";
  if (S_ISFIFO(m)) return "a FIFO";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISSOCK(m)) return "a socket";
  if (S_ISLNK(m)) return "a symbolic link";
  return "not a regular file";
}

// An fd that is closed when it goes out of scope (reads: close errors do not matter).
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

// Opens `path` for reading without blocking on a FIFO and checks it is a regular file.
Fd open_regular(const fs::path& path, struct stat& st) {
  Fd f;
  f.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (f.fd < 0) {
    const int e = errno;
    if (e == ENOENT) fail(path, "no such file");
    if (e == ENXIO) fail(path, "is a socket or a FIFO without a writer, not a file");
    fail(path, std::string("cannot be opened for reading: ") + std::strerror(e));
  }
  if (::fstat(f.fd, &st) != 0) fail(path, std::string("cannot be examined: ") + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) fail(path, "is " + kind_of(st.st_mode) + ", not a file");
  return f;
}

void read_exactly(const fs::path& path, int fd, std::byte* out, uint64_t length, uint64_t offset) {
  uint64_t done = 0;
  while (done < length) {
    const size_t chunk = static_cast<size_t>(std::min<uint64_t>(length - done, uint64_t{1} << 30));
    const ssize_t n = ::pread(fd, out + done, chunk, static_cast<off_t>(offset + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      fail(path, std::string("read failed: ") + std::strerror(errno));
    }
    if (n == 0) fail(path, "ended early (the file shrank while being read)");
    done += static_cast<uint64_t>(n);
  }
}

}  // namespace

std::string size_string(uint64_t bytes) {
  if (bytes < 1024) return std::to_string(bytes) + " bytes";
  const char* units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double v = static_cast<double>(bytes) / 1024;
  int u = 0;
  while (v >= 1024 && u < 5) v /= 1024, ++u;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f %s", v, units[u]);
  return buf;
}

std::string file_kind(const fs::path& path, bool follow) {
  struct stat st {};
  if ((follow ? ::stat(path.c_str(), &st) : ::lstat(path.c_str(), &st)) != 0) return "missing";
  return kind_of(st.st_mode);
}

std::vector<std::byte> read_regular_file(const fs::path& path, uint64_t max_bytes, const std::string& what_limit) {
  struct stat st {};
  Fd f = open_regular(path, st);
  const auto size = static_cast<uint64_t>(st.st_size);
  if (size > max_bytes)
    fail(path, "is " + size_string(size) + ", over the " + size_string(max_bytes) + " limit" + (what_limit.empty() ? "" : " " + what_limit));
  std::vector<std::byte> bytes(static_cast<size_t>(size));
  read_exactly(path, f.fd, bytes.data(), size, 0);
  return bytes;
}

std::vector<std::byte> read_file_range(const fs::path& path, uint64_t offset, uint64_t length) {
  struct stat st {};
  Fd f = open_regular(path, st);
  const auto size = static_cast<uint64_t>(st.st_size);
  if (offset > size || length > size - offset)
    fail(path, "has " + std::to_string(size) + " bytes; " + std::to_string(length) + " at offset " + std::to_string(offset) + " are past its end");
  std::vector<std::byte> bytes(static_cast<size_t>(length));
  read_exactly(path, f.fd, bytes.data(), length, offset);
  return bytes;
}

void read_file_range(const fs::path& path, uint64_t offset, std::span<std::byte> out) {
  struct stat st {};
  Fd f = open_regular(path, st);
  const auto size = static_cast<uint64_t>(st.st_size);
  const uint64_t length = out.size();
  if (offset > size || length > size - offset)
    fail(path, "has " + std::to_string(size) + " bytes; " + std::to_string(length) + " at offset " + std::to_string(offset) + " are past its end");
  read_exactly(path, f.fd, out.data(), length, offset);
}

void check_output_file(const fs::path& path) {
  if (path.empty()) throw ModelError("the output file name is empty");
  fs::path dir = path.parent_path();
  if (dir.empty()) dir = ".";
  const std::string dir_kind = file_kind(dir);
  if (dir_kind == "missing") fail(path, "cannot be written: the directory " + dir.string() + " does not exist");
  if (dir_kind != "a directory") fail(path, "cannot be written: " + dir.string() + " is " + dir_kind + ", not a directory");
  if (::access(dir.c_str(), W_OK | X_OK) != 0) fail(path, "cannot be written: the directory " + dir.string() + " is not writable");
  const std::string kind = file_kind(path);
  if (kind != "missing" && kind != "a regular file") fail(path, "is " + kind + ", not a regular file; refusing to write to it");
}

void write_file(const fs::path& path, std::span<const std::byte> bytes, WriteMode mode) { write_file(path, {bytes}, mode); }

void write_file(const fs::path& path, std::initializer_list<std::span<const std::byte>> pieces, WriteMode mode) {
  int flags = O_WRONLY | O_CREAT | O_CLOEXEC | O_NOCTTY | O_NONBLOCK;
  if (mode == WriteMode::Fresh) {
    flags |= O_EXCL | O_NOFOLLOW;
    struct stat st {};
    if (::lstat(path.c_str(), &st) == 0) {
      if (!S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode)) fail(path, "is " + kind_of(st.st_mode) + ", not a regular file; refusing to replace it");
      if (::unlink(path.c_str()) != 0) fail(path, std::string("cannot be replaced: ") + std::strerror(errno));
    }
  }
  const int fd = ::open(path.c_str(), flags, 0644);
  if (fd < 0) {
    const int e = errno;
    if (mode == WriteMode::Fresh && (e == EEXIST || e == ELOOP))
      fail(path, "appeared while being replaced (" + file_kind(path, false) + "); refusing to write through it");
    if (e == ENOENT) fail(path, "cannot be written: the directory " + path.parent_path().string() + " does not exist");
    fail(path, std::string("cannot be written: ") + std::strerror(e));
  }
  auto failed = [&](const std::string& what) {
    const int e = errno;
    ::close(fd);
    fail(path, what + ": " + std::strerror(e));
  };
  struct stat st {};
  if (::fstat(fd, &st) != 0) failed("cannot be examined");
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    fail(path, "is " + kind_of(st.st_mode) + ", not a regular file; refusing to write to it");
  }
  if (mode == WriteMode::Replace && ::ftruncate(fd, 0) != 0) failed("cannot be truncated");
  for (const std::span<const std::byte> bytes : pieces) {
    size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t n = ::write(fd, bytes.data() + done, std::min<size_t>(bytes.size() - done, size_t{1} << 30));
      if (n < 0) {
        if (errno == EINTR || errno == EAGAIN) continue;
        failed("write failed");
      }
      done += static_cast<size_t>(n);
    }
  }
  if (::close(fd) != 0) fail(path, std::string("write failed on close: ") + std::strerror(errno));
}

}  // namespace nnxr::model
