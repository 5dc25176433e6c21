// Reading and writing single tensors: NumPy .npy files, ONNX TensorProto .pb files (the format
// of the ONNX test data), and deterministic random tensors. Stateless functions; thread-safe.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "model/file_io.h"
#include "model/graph.h"
#include "model/load.h"

namespace nnxr::model {

// Tensor files (.npy, .pb) larger than this are refused before they are read.
inline constexpr uint64_t kMaxTensorFileBytes = uint64_t{2} << 30;

// Reads a .npy file (version 1-3, little-endian or byte-order-free dtypes, C order): a regular
// file (a FIFO or device is refused at once) of at most kMaxTensorFileBytes whose size matches
// its header. Throws ModelError naming the file and the fault.
TensorData read_npy(const std::filesystem::path& path);
// The same from the file's content (`source` names it in messages); the header is moved out of
// `bytes`, which become the tensor's.
TensorData parse_npy(std::vector<std::byte> bytes, const std::string& source);

// Writes `data` as a version-1 .npy file; WriteMode::Fresh (what --dump uses) never writes
// through a symlink or hard link already at the path. Throws ModelError when the file cannot be written.
void write_npy(const std::filesystem::path& path, DType dtype, std::span<const int64_t> shape,
               std::span<const std::byte> bytes, WriteMode mode = WriteMode::Replace);

// Reads a serialized onnx.TensorProto (.pb); `name` receives its name (may be empty).
TensorData read_tensor_pb(const std::filesystem::path& path, std::string* name = nullptr);
// The same from the file's content; external data is resolved beside `source`.
TensorData parse_tensor_pb(std::span<const std::byte> bytes, const std::string& source, std::string* name = nullptr);

// The mulberry32 generator that ../shared/tools/ort-run.js uses for its generated inputs, so
// that `nnxr run --random SEED` feeds onnxruntime's inputs bit for bit.
class Mulberry32 {
 public:
  explicit Mulberry32(uint32_t seed) : s_(seed) {}
  uint32_t next();

 private:
  uint32_t s_;
};

// A tensor of `dtype` and `shape` filled from `rng`, element by element in row-major order:
// floats uniform in [lo, hi), integers and bools uniform integers in [int_lo, int_hi).
TensorData random_tensor(DType dtype, std::vector<int64_t> shape, Mulberry32& rng, double lo = 0, double hi = 1,
                         int64_t int_lo = 0, int64_t int_hi = 2);

}  // namespace nnxr::model
