// Reading and writing files defensively: only regular files are read (a FIFO, device or folder is
// refused at once, without blocking), the size is checked before anything is allocated, and every
// write and close is checked. Throws ModelError naming the file and the fault.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <span>
#include <string>
#include <vector>

#include "model/size_string.h"

namespace nnxr::model {

// "a FIFO", "a character device", "a folder", ... for the file type of `path` (not following a
// final symlink when `follow` is false); "missing" when nothing is there.
std::string file_kind(const std::filesystem::path& path, bool follow = true);

// The whole content of the regular file `path`; refuses anything else ("is a FIFO, not a file")
// and files over `max_bytes` ("is 9.0 GiB; at most 2.0 GiB ..." with `what_limit` explaining).
std::vector<std::byte> read_regular_file(const std::filesystem::path& path, uint64_t max_bytes, const std::string& what_limit = {});
// The same, reading only `length` bytes at `offset` (both checked against the size).
std::vector<std::byte> read_file_range(const std::filesystem::path& path, uint64_t offset, uint64_t length);
// The same into `out` (out.size() bytes at `offset`), for a caller that owns the buffer.
void read_file_range(const std::filesystem::path& path, uint64_t offset, std::span<std::byte> out);

// Throws when `path` cannot be written as an output file: its folder does not exist (or is not a
// folder, or is not writable), or something that is not a regular file is already there.
void check_output_file(const std::filesystem::path& path);

enum class WriteMode {
  Replace,    // a regular file may be there and is replaced (a symlink to one is followed)
  Fresh,      // a new file: a file or symlink already at the path is removed first (a symlink is
              // never followed), then the file is created with O_EXCL | O_NOFOLLOW
};
// Writes `bytes` to `path`, checking every write and the close.
void write_file(const std::filesystem::path& path, std::span<const std::byte> bytes, WriteMode mode);
// The same for several pieces written one after the other (a header, then the data).
void write_file(const std::filesystem::path& path, std::initializer_list<std::span<const std::byte>> pieces, WriteMode mode);

}  // namespace nnxr::model
