// Element types of ONNX tensors, numbered as in onnx.proto (TensorProto.DataType).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace nnxr::model {

enum class DType : int32_t {
  Undefined = 0,
  Float = 1,
  UInt8 = 2,
  Int8 = 3,
  UInt16 = 4,
  Int16 = 5,
  Int32 = 6,
  Int64 = 7,
  String = 8,
  Bool = 9,
  Float16 = 10,
  Double = 11,
  UInt32 = 12,
  UInt64 = 13,
  Complex64 = 14,
  Complex128 = 15,
  BFloat16 = 16,
};

// "float32", "int64", ... (numpy spelling); "undefined" for values outside the enum.
std::string_view dtype_name(DType t);

// Bytes per element; 0 for Undefined and String (variable size).
size_t dtype_size(DType t);

// True for the values onnx.proto defines (1..16).
bool dtype_valid(int32_t raw);

bool dtype_is_float(DType t);

}  // namespace nnxr::model
