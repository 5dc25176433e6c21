// Schemas for operators that early ONNX releases defined (as "experimental") and later removed,
// but that real models still use: ImageScaler, Crop, Affine. Registering them lets the checker
// and shape inference treat such models like any other.
#pragma once

namespace nnxr::model {

// Registers the schemas with libonnx's global registry. Idempotent and thread-safe.
void register_legacy_ops();

}  // namespace nnxr::model

