#include "model/tensor_io.h"

#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>

#include "model/file_io.h"
#include "model/half.h"

namespace nnxr::model {
namespace {

struct NpyType {
  const char* descr;
  DType dtype;
};
constexpr NpyType kNpyTypes[] = {
    {"<f4", DType::Float},  {"<f8", DType::Double}, {"<f2", DType::Float16}, {"<i8", DType::Int64},
    {"<i4", DType::Int32},  {"<i2", DType::Int16},  {"|i1", DType::Int8},    {"|u1", DType::UInt8},
    {"<u2", DType::UInt16}, {"<u4", DType::UInt32}, {"<u8", DType::UInt64},  {"|b1", DType::Bool},
    {"<c8", DType::Complex64}, {"<c16", DType::Complex128},
};

[[noreturn]] void fail(const std::filesystem::path& p, const std::string& what) { throw ModelError(p.string() + ": " + what); }


// Value of `key` in the header dict, e.g. 'descr': '<f4' -> "<f4".
std::string header_field(const std::string& header, const std::string& key) {
  const auto k = header.find("'" + key + "'");
  if (k == std::string::npos) return {};
  auto colon = header.find(':', k);
  if (colon == std::string::npos) return {};
  auto start = header.find_first_not_of(' ', colon + 1);
  if (start == std::string::npos) return {};
  if (header[start] == '\'') {
    auto end = header.find('\'', start + 1);
    return end == std::string::npos ? std::string() : header.substr(start + 1, end - start - 1);
  }
  if (header[start] == '(') {
    auto end = header.find(')', start);
    return end == std::string::npos ? std::string() : header.substr(start, end - start + 1);
  }
  auto end = header.find_first_of(",}", start);
  return header.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

}  // namespace

TensorData read_npy(const std::filesystem::path& path) {
  // Read once into the tensor's own buffer; the header is moved out of it afterwards.
  return parse_npy(read_regular_file(path, kMaxTensorFileBytes, "for tensor files"), path.string());
}

TensorData parse_npy(std::vector<std::byte> bytes, const std::string& source) {
  const std::filesystem::path path(source);
  TensorData t;
  t.bytes = std::move(bytes);
  const std::string_view raw(reinterpret_cast<const char*>(t.bytes.data()), t.bytes.size());
  if (raw.size() < 10 || raw.compare(0, 6, "\x93NUMPY") != 0) fail(path, "not a .npy file (no \\x93NUMPY magic)");
  const int major = static_cast<unsigned char>(raw[6]);
  size_t header_len = 0, offset = 0;
  if (major == 1) {
    header_len = static_cast<unsigned char>(raw[8]) | static_cast<size_t>(static_cast<unsigned char>(raw[9])) << 8;
    offset = 10;
  } else if (major == 2 || major == 3) {
    if (raw.size() < 12) fail(path, "truncated .npy header");
    header_len = 0;
    for (int i = 3; i >= 0; --i) header_len = header_len << 8 | static_cast<unsigned char>(raw[8 + i]);
    offset = 12;
  } else {
    fail(path, ".npy version " + std::to_string(major) + " is not supported");
  }
  if (header_len > raw.size() - offset) fail(path, "truncated .npy header");
  const std::string header(raw.substr(offset, header_len));
  offset += header_len;
  std::string descr = header_field(header, "descr");
  if (descr.size() == 3 && descr[0] == '=') descr[0] = '<';
  if (descr == "<b1" || descr == "<i1" || descr == "<u1") descr[0] = '|';
  for (const auto& n : kNpyTypes)
    if (descr == n.descr) t.dtype = n.dtype;
  if (t.dtype == DType::Undefined) fail(path, "unsupported .npy dtype '" + descr + "' (big-endian or object arrays are not)");
  if (header_field(header, "fortran_order") == "True") fail(path, "Fortran-ordered arrays are not supported; save with C order");
  const std::string shape = header_field(header, "shape");
  if (shape.empty() || shape.front() != '(') fail(path, "no shape in the .npy header");
  for (size_t i = 1; i < shape.size();) {
    while (i < shape.size() && (shape[i] == ' ' || shape[i] == ',')) ++i;
    if (i >= shape.size() || shape[i] == ')') break;
    size_t used = 0;
    long long d = 0;
    try {
      d = std::stoll(shape.substr(i), &used);
    } catch (const std::exception&) {
      fail(path, "bad shape " + shape + " in the .npy header");
    }
    if (d < 0 || used == 0) fail(path, "bad shape " + shape + " in the .npy header");
    t.shape.push_back(d);
    i += used;
  }
  const auto n = element_count(t.shape);
  const size_t esize = dtype_size(t.dtype);
  if (!n || static_cast<uint64_t>(*n) > (raw.size() - offset) / esize || static_cast<uint64_t>(*n) * esize != raw.size() - offset)
    fail(path, "holds " + std::to_string(raw.size() - offset) + " bytes of data, but its header says " +
                   std::string(dtype_name(t.dtype)) + " " + shape_string(t.shape));
  t.bytes.erase(t.bytes.begin(), t.bytes.begin() + static_cast<std::ptrdiff_t>(offset));
  return t;
}

void write_npy(const std::filesystem::path& path, DType dtype, std::span<const int64_t> shape, std::span<const std::byte> bytes, WriteMode mode) {
  const char* descr = nullptr;
  for (const auto& n : kNpyTypes)
    if (n.dtype == dtype) descr = n.descr;
  if (!descr) fail(path, "cannot write dtype " + std::string(dtype_name(dtype)) + " as .npy");
  std::string dims;
  for (size_t i = 0; i < shape.size(); ++i) dims += std::to_string(shape[i]) + (shape.size() == 1 || i + 1 < shape.size() ? "," : "");
  std::string header = "{'descr': '" + std::string(descr) + "', 'fortran_order': False, 'shape': (" + dims + "), }";
  const size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  const char preamble[10] = {'\x93', 'N', 'U', 'M', 'P', 'Y', 1, 0, static_cast<char>(header.size() & 0xff),
                             static_cast<char>(header.size() >> 8)};
  write_file(path, {std::as_bytes(std::span(preamble)), std::as_bytes(std::span(header.data(), header.size())), bytes}, mode);
}

uint32_t Mulberry32::next() {
  s_ += 0x6D2B79F5u;
  uint32_t t = (s_ ^ (s_ >> 15)) * (1u | s_);
  t = (t + ((t ^ (t >> 7)) * (61u | t))) ^ t;
  return t ^ (t >> 14);
}

TensorData random_tensor(DType dtype, std::vector<int64_t> shape, Mulberry32& rng, double lo, double hi, int64_t int_lo,
                         int64_t int_hi) {
  TensorData t;
  t.dtype = dtype;
  t.shape = std::move(shape);
  const auto n = static_cast<size_t>(element_count(t.shape).value_or(0));
  t.bytes.resize(n * dtype_size(dtype));
  auto fill = [&](auto tag) {
    using T = decltype(tag);
    auto* out = reinterpret_cast<T*>(t.bytes.data());
    for (size_t i = 0; i < n; ++i) {
      const double u = rng.next() / 4294967296.0;
      if constexpr (std::is_floating_point_v<T>)
        out[i] = static_cast<T>(static_cast<float>(lo + (hi - lo) * u));
      else
        out[i] = static_cast<T>(int_lo + static_cast<int64_t>(std::floor(static_cast<double>(int_hi - int_lo) * u)));
    }
  };
  switch (dtype) {
    case DType::Float: fill(float{}); break;
    case DType::Double: fill(double{}); break;
    case DType::Int64: fill(int64_t{}); break;
    case DType::Int32: fill(int32_t{}); break;
    case DType::Int16: fill(int16_t{}); break;
    case DType::Int8: fill(int8_t{}); break;
    case DType::UInt8:
    case DType::Bool: fill(uint8_t{}); break;
    case DType::UInt16: fill(uint16_t{}); break;
    case DType::UInt32: fill(uint32_t{}); break;
    case DType::UInt64: fill(uint64_t{}); break;
    case DType::Float16: {
      auto* out = reinterpret_cast<uint16_t*>(t.bytes.data());
      for (size_t i = 0; i < n; ++i) out[i] = float_to_half(static_cast<float>(lo + (hi - lo) * (rng.next() / 4294967296.0)));
      break;
    }
    default: throw ModelError("random inputs of type " + std::string(dtype_name(dtype)) + " are not supported");
  }
  return t;
}

}  // namespace nnxr::model
