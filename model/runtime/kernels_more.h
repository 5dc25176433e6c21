// Internal: registration of the kernel families added after the first set (kernel.h lists those).
#pragma once

#include "model/runtime/kernel.h"

namespace nnxr::runtime {

void register_einsum(Registry& r);     // kernels_einsum.cpp
void register_quant(Registry& r);      // kernels_quant.cpp
void register_detection(Registry& r);  // kernels_detection.cpp
void register_signal(Registry& r);     // kernels_signal.cpp
void register_extra(Registry& r);      // kernels_extra.cpp
void register_control(Registry& r);    // kernels_control.cpp

}  // namespace nnxr::runtime
