#include "app/args.h"

#include <charconv>

namespace nnxr::app {

Args::Args(std::string command, std::vector<std::string> words)
    : command_(std::move(command)), words_(std::move(words)) {}

bool Args::flag(std::string_view name) {
  bool found = false;
  for (auto it = words_.begin(); it != words_.end();) {
    if (*it == name) {
      found = true;
      it = words_.erase(it);
    } else {
      ++it;
    }
  }
  return found;
}

std::vector<std::string> Args::options(std::string_view name) {
  std::vector<std::string> values;
  for (size_t i = 0; i < words_.size();) {
    const std::string& w = words_[i];
    if (w == name) {
      if (i + 1 >= words_.size()) throw UsageError(std::string(name) + " needs a value");
      values.push_back(words_[i + 1]);
      words_.erase(words_.begin() + static_cast<std::ptrdiff_t>(i), words_.begin() + static_cast<std::ptrdiff_t>(i) + 2);
    } else if (w.size() > name.size() && w.compare(0, name.size(), name) == 0 && w[name.size()] == '=') {
      values.push_back(w.substr(name.size() + 1));
      words_.erase(words_.begin() + static_cast<std::ptrdiff_t>(i));
    } else {
      ++i;
    }
  }
  return values;
}

std::optional<std::string> Args::option(std::string_view name) {
  auto values = options(name);
  if (values.empty()) return std::nullopt;
  return values.back();
}

std::optional<int64_t> Args::int_option(std::string_view name, int64_t min, int64_t max) {
  auto v = option(name);
  if (!v) return std::nullopt;
  return parse_int(*v, name, min, max);
}

std::vector<std::string> Args::positionals() {
  std::vector<std::string> out, rest;
  for (auto& w : words_) (w.size() > 1 && w[0] == '-' ? rest : out).push_back(std::move(w));
  words_ = std::move(rest);
  return out;
}

void Args::finish() const {
  if (words_.empty()) return;
  const std::string& w = words_.front();
  if (w.size() > 1 && w[0] == '-') throw UsageError("unknown option '" + w + "' for 'nnxr " + command_ + "'");
  throw UsageError("unexpected argument '" + w + "' for 'nnxr " + command_ + "'");
}

int64_t parse_int(std::string_view text, std::string_view what, int64_t min, int64_t max) {
  int64_t v = 0;
  auto r = std::from_chars(text.data(), text.data() + text.size(), v);
  if (r.ec != std::errc() || r.ptr != text.data() + text.size() || v < min || v > max)
    throw UsageError(std::string(what) + ": '" + std::string(text) + "' is not a whole number from " +
                     std::to_string(min) + " to " + std::to_string(max));
  return v;
}

}  // namespace nnxr::app
