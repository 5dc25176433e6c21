// Helpers shared by the kernel suites (test_kernels.cpp, test_kernels_vector.cpp): a fixture that
// runs a test once per instruction set, and the fused epilogues taken in turn.
#pragma once

#include <gtest/gtest.h>

#include <iterator>
#include <string>

#include "model/runtime/compute.h"
#include "model/runtime/runtime.h"

namespace nnxr::runtime::test {

// A test run once per instruction set (Portable, Avx2, Avx512 in the test names): each path the
// CPU has, the kernels switched to it for the test; a set the CPU lacks is skipped with a message.
// A suite derives from it and instantiates itself with NNXR_INSTANTIATE_PER_ISA(Suite).
class PerIsa : public ::testing::TestWithParam<Isa> {
 protected:
  void SetUp() override {
    previous_ = active_isa();
    if (!set_active_isa(GetParam())) GTEST_SKIP() << "this CPU has no " << isa_name(GetParam()) << " (its widest set is " << isa_name(cpu_isa()) << ")";
  }
  void TearDown() override { set_active_isa(previous_); }

 private:
  Isa previous_ = Isa::Portable;
};
#define NNXR_INSTANTIATE_PER_ISA(Suite)                                                                               \
  INSTANTIATE_TEST_SUITE_P(Isa, Suite, ::testing::Values(::nnxr::runtime::Isa::Portable, ::nnxr::runtime::Isa::Avx2, \
                                                         ::nnxr::runtime::Isa::Avx512),                             \
                           [](const ::testing::TestParamInfo<::nnxr::runtime::Isa>& info) {                          \
                             return std::string(::nnxr::runtime::isa_name(info.param));                               \
                           })

// The epilogue kinds in turn (by iteration), with bounds and slope that clip and bend the values
// (Add's addend is each test's own array).
inline Epilogue epilogue_in_turn(int iter) {
  constexpr Epilogue::Kind kKinds[] = {Epilogue::Kind::Relu,    Epilogue::Kind::Clip, Epilogue::Kind::LeakyRelu,
                                       Epilogue::Kind::Sigmoid, Epilogue::Kind::SiLU, Epilogue::Kind::Add};
  Epilogue e;
  e.kind = kKinds[iter % std::size(kKinds)];
  e.lo = -0.25f;
  e.hi = 0.5f;
  e.alpha = 0.125f;
  return e;
}

}  // namespace nnxr::runtime::test
