// Internal: expf on a float or on a GCC vector of floats, the same operations in the same order
// for every width (the Sigmoid kernel and the epilogues computed in registers share it, so that
// a fused sigmoid equals the separate kernel's).
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

namespace nnxr::runtime {

// expf to ~2 ulp that the compiler can vectorise (Cephes polynomial; round by the 1.5*2^23 trick,
// so no libm call). Inputs are clamped to [-87, 88]: exp(-87) ~ 1.6e-38 stands in for smaller values.
// One definition for a float (I = int32_t) and for GCC vectors of floats (I: the int32 vector of
// the same width): the same operations in the same order, so every width gives the same results.
// In place (no vector passed or returned by value: an 8-float vector would change the ABI
// between the AVX2 and the SSE builds).
template <class V, class I>
[[gnu::always_inline]] inline void exp_lanes(V& x) {
  x = x < -87.f ? V{} - 87.f : (x > 88.f ? V{} + 88.f : x);
  const V n = (x * 1.44269504088896341f + 12582912.f) - 12582912.f;
  V r = x - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  V p = V{} + 1.9875691500E-4f;
  p = p * r + 1.3981999507E-3f;
  p = p * r + 8.3334519073E-3f;
  p = p * r + 4.1665795894E-2f;
  p = p * r + 1.6666665459E-1f;
  p = p * r + 5.0000001201E-1f;
  const V y = p * r * r + r + 1.f;
  I bits;
  if constexpr (std::is_same_v<V, float>) bits = (static_cast<int32_t>(n) + 127) << 23;
  else bits = (__builtin_convertvector(n, I) + 127) << 23;
  V scale;
  std::memcpy(&scale, &bits, sizeof scale);
  x = y * scale;
}

// GCC vectors of W floats and of W int32 (W = 4, 8 or 16): spelled out, because GCC ignores a
// vector_size that depends on a template parameter in an alias (the type becomes a plain float).
template <int W>
struct Lanes;
template <>
struct Lanes<4> {
  using F = float __attribute__((vector_size(16)));
  using I = int32_t __attribute__((vector_size(16)));
};
template <>
struct Lanes<8> {
  using F = float __attribute__((vector_size(32)));
  using I = int32_t __attribute__((vector_size(32)));
};
template <>
struct Lanes<16> {
  using F = float __attribute__((vector_size(64)));
  using I = int32_t __attribute__((vector_size(64)));
};

}  // namespace nnxr::runtime
