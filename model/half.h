// IEEE 754 half precision (float16) <-> float32, round to nearest even; NaN and infinities kept.
#pragma once

#include <cstdint>

namespace nnxr::model {

float half_to_float(uint16_t h);
uint16_t float_to_half(float f);

}  // namespace nnxr::model
