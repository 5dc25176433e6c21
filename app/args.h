// Command-line parsing for the nnxr subcommands: each command takes the flags and options it
// knows, then finish() rejects anything left over with a UsageError naming it.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace nnxr::app {

class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Args {
 public:
  Args(std::string command, std::vector<std::string> words);

  const std::string& command() const { return command_; }
  // Removes `--name` if present.
  bool flag(std::string_view name);
  // Removes `--name VALUE` or `--name=VALUE`; the last one wins.
  std::optional<std::string> option(std::string_view name);
  // Removes every `--name VALUE` / `--name=VALUE`, in order.
  std::vector<std::string> options(std::string_view name);
  std::optional<int64_t> int_option(std::string_view name, int64_t min, int64_t max);
  // Removes and returns the remaining words that do not start with "--" (call after options).
  std::vector<std::string> positionals();
  // Throws UsageError if anything was not consumed.
  void finish() const;

 private:
  std::string command_;
  std::vector<std::string> words_;
};

int64_t parse_int(std::string_view text, std::string_view what, int64_t min, int64_t max);

}  // namespace nnxr::app
