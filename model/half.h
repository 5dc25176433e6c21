// IEEE 754 half precision (float16) <-> float32, round to nearest even; NaN and infinities kept.
#pragma once

#include <cstddef>
#include <cstdint>

namespace nnxr::model {

float half_to_float(uint16_t h);
uint16_t float_to_half(float f);

// n values at a time; the same results as the scalar forms (with the CPU's F16C instructions
// when it has them).
void half_to_float(const uint16_t* in, float* out, size_t n);
void float_to_half(const float* in, uint16_t* out, size_t n);

}  // namespace nnxr::model
