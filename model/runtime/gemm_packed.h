// Internal: the per-instruction-set bodies of gemm_packed (compute.h), chosen by active_isa().
#pragma once

#include <cstdint>

#include "model/runtime/compute.h"

namespace nnxr::runtime {

void gemm_packed_avx512(const PackedA& a, int64_t p0, int64_t p1, const float* B, int64_t ldb, int64_t n0, int64_t n1, const GemmOut& out);

}  // namespace nnxr::runtime
