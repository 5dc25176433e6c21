// A byte count for messages: "1.5 GiB", "12.0 MiB", "512 bytes" (defined in model/file_io.cpp).
#pragma once

#include <cstdint>
#include <string>

namespace nnxr::model {

std::string size_string(uint64_t bytes);

}  // namespace nnxr::model
