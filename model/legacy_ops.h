// Schemas for operators that early ONNX releases defined (as "experimental") and later removed,
// but that real models still use: ImageScaler, Crop, Affine. Registering them lets the checker
// and shape inference treat such models like any other.
#pragma once

#include <string_view>

namespace nnxr::model {

// Registers the schemas with libonnx's global registry. Idempotent and thread-safe.
void register_legacy_ops();

}  // namespace nnxr::model

namespace nnxr::model {

// True for the op types register_legacy_ops() gives schemas to.
bool is_legacy_op(std::string_view op_type);

}  // namespace nnxr::model
