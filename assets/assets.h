// Files compiled into the nnxr binary: the default model and its sample inputs.
// The bytes are static and immutable; any thread may read them for the life of the program.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string_view>

namespace nnxr::assets {

struct Asset {
  std::string_view name;  // file name as in assets/, e.g. "digits.onnx"
  std::span<const std::byte> bytes;
};

// Every embedded file.
std::span<const Asset> all();

// The embedded file called `name`, if any.
std::optional<Asset> find(std::string_view name);

// The default model (digits.onnx) and the sample input used with it (digit-3.png).
Asset default_model();
Asset default_input();

}  // namespace nnxr::assets
