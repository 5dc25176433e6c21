#include "model/dtype.h"

namespace nnxr::model {

std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::Float: return "float32";
    case DType::UInt8: return "uint8";
    case DType::Int8: return "int8";
    case DType::UInt16: return "uint16";
    case DType::Int16: return "int16";
    case DType::Int32: return "int32";
    case DType::Int64: return "int64";
    case DType::String: return "string";
    case DType::Bool: return "bool";
    case DType::Float16: return "float16";
    case DType::Double: return "float64";
    case DType::UInt32: return "uint32";
    case DType::UInt64: return "uint64";
    case DType::Complex64: return "complex64";
    case DType::Complex128: return "complex128";
    case DType::BFloat16: return "bfloat16";
    case DType::Undefined: break;
  }
  return "undefined";
}

size_t dtype_size(DType t) {
  switch (t) {
    case DType::Bool:
    case DType::UInt8:
    case DType::Int8: return 1;
    case DType::UInt16:
    case DType::Int16:
    case DType::Float16:
    case DType::BFloat16: return 2;
    case DType::Float:
    case DType::Int32:
    case DType::UInt32: return 4;
    case DType::Int64:
    case DType::UInt64:
    case DType::Double:
    case DType::Complex64: return 8;
    case DType::Complex128: return 16;
    case DType::String:
    case DType::Undefined: break;
  }
  return 0;
}

bool dtype_valid(int32_t raw) { return raw >= 1 && raw <= 16; }

bool dtype_is_float(DType t) {
  return t == DType::Float || t == DType::Float16 || t == DType::BFloat16 || t == DType::Double;
}

}  // namespace nnxr::model
