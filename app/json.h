// A small streaming JSON writer for the command line's --json output.
// Not thread-safe; one writer per output stream.
#pragma once

#include <cmath>
#include <cstdint>
#include <ostream>
#include <string_view>
#include <vector>

namespace nnxr::app {

class JsonWriter {
 public:
  explicit JsonWriter(std::ostream& out) : out_(out) {}

  JsonWriter& begin_object() { return open('{'); }
  JsonWriter& end_object() { return close('}'); }
  JsonWriter& begin_array() { return open('['); }
  JsonWriter& end_array() { return close(']'); }

  JsonWriter& key(std::string_view k) {
    separate();
    string(k);
    out_ << ':';
    after_key_ = true;
    return *this;
  }
  JsonWriter& value(std::string_view v) {
    separate();
    string(v);
    return *this;
  }
  JsonWriter& value(const char* v) { return value(std::string_view(v)); }
  JsonWriter& value(bool v) {
    separate();
    out_ << (v ? "true" : "false");
    return *this;
  }
  JsonWriter& value(int64_t v) {
    separate();
    out_ << v;
    return *this;
  }
  JsonWriter& value(int v) { return value(static_cast<int64_t>(v)); }
  JsonWriter& value(uint64_t v) {
    separate();
    out_ << v;
    return *this;
  }
  JsonWriter& value(double v) {
    separate();
    if (std::isfinite(v)) out_ << v;
    else out_ << "null";
    return *this;
  }
  JsonWriter& null() {
    separate();
    out_ << "null";
    return *this;
  }
  template <class T>
  JsonWriter& field(std::string_view k, const T& v) {
    key(k);
    return value(v);
  }

 private:
  JsonWriter& open(char c) {
    separate();
    out_ << c;
    first_.push_back(true);
    return *this;
  }
  JsonWriter& close(char c) {
    out_ << c;
    first_.pop_back();
    if (first_.empty()) out_ << '\n';
    return *this;
  }
  void separate() {
    if (after_key_) {
      after_key_ = false;
      return;
    }
    if (!first_.empty()) {
      if (!first_.back()) out_ << ',';
      first_.back() = false;
    }
  }
  // Length of the valid UTF-8 sequence starting at s[i], or 0 if it is not valid.
  static size_t utf8_length(std::string_view s, size_t i) {
    const auto c = static_cast<unsigned char>(s[i]);
    size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    if (n == 0 || i + n > s.size()) return 0;
    for (size_t k = 1; k < n; ++k)
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return 0;
    return n;
  }
  void string(std::string_view s) {
    out_ << '"';
    for (size_t i = 0; i < s.size();) {
      const size_t n = utf8_length(s, i);
      if (n == 0) {  // not UTF-8 (names in hostile files): keep the output valid JSON
        out_ << "\\ufffd";
        ++i;
        continue;
      }
      if (n > 1) {
        out_ << s.substr(i, n);
        i += n;
        continue;
      }
      const auto c = static_cast<unsigned char>(s[i++]);
      switch (c) {
        case '"': out_ << "\\\""; break;
        case '\\': out_ << "\\\\"; break;
        case '\n': out_ << "\\n"; break;
        case '\r': out_ << "\\r"; break;
        case '\t': out_ << "\\t"; break;
        default:
          if (c < 0x20) {
            static const char* hex = "0123456789abcdef";
            out_ << "\\u00" << hex[c >> 4] << hex[c & 15];
          } else {
            out_ << c;
          }
      }
    }
    out_ << '"';
  }

  std::ostream& out_;
  std::vector<bool> first_;
  bool after_key_ = false;
};

}  // namespace nnxr::app
