// Internal: the per-instruction-set bodies of gemm_packed (compute.h), chosen by active_isa().
#pragma once

#include <cstdint>
#include <mutex>
#include <vector>

#include "model/runtime/compute.h"

namespace nnxr::runtime {

// PackedA's rows for gemm_lanes: blocks of 32 rows, k-major (data[(b * K + k) * 32 + r], rows
// past M zero), made once from the panels at the first gemm_lanes call.
struct LaneCache {
  std::once_flag once;
  std::vector<float> data;
};

void gemm_packed_avx512(const PackedA& a, int64_t p0, int64_t p1, const float* B, int64_t ldb, int64_t n0, int64_t n1, const GemmOut& out);
void gemm_packed_f16_avx512(const PackedA& a, int64_t p0, int64_t p1, const uint16_t* B, int64_t ldb, int64_t n0, int64_t n1,
                            const GemmOutF16& out);

}  // namespace nnxr::runtime
