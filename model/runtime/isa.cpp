// The kernel instruction set: detected once by cpuid, lowered by NNXR_ISA, switched by tests.
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <iostream>

#include "model/runtime/compute.h"
#include "model/runtime/runtime.h"

namespace nnxr::runtime {

namespace {

Isa detect() {
#if defined(__x86_64__) || defined(__i386__)
  // libgcc's cpu model also checks (xgetbv) that the OS saves the ymm / zmm state.
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c"))
    return Isa::Avx512;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c")) return Isa::Avx2;
#endif
  return Isa::Portable;
}

// The start-up choice: the CPU's widest set, or the lower one NNXR_ISA names.
Isa initial() {
  const Isa cpu = cpu_isa();
  const char* env = std::getenv("NNXR_ISA");
  if (!env || !*env) return cpu;
  for (Isa isa : {Isa::Portable, Isa::Avx2, Isa::Avx512})
    if (std::strcmp(env, isa_name(isa)) == 0) {
      if (isa <= cpu) return isa;
      std::cerr << "warning: NNXR_ISA=" << env << ": this CPU has no " << env << "; using " << isa_name(cpu) << '\n';
      return cpu;
    }
  std::cerr << "warning: NNXR_ISA=" << env << " is not one of avx512, avx2, portable; using " << isa_name(cpu) << '\n';
  return cpu;
}

std::atomic<int>& chosen() {
  static std::atomic<int> isa{static_cast<int>(initial())};
  return isa;
}

}  // namespace

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::Avx512: return "avx512";
    case Isa::Avx2: return "avx2";
    case Isa::Portable: break;
  }
  return "portable";
}

Isa cpu_isa() {
  static const Isa isa = detect();
  return isa;
}

Isa active_isa() { return static_cast<Isa>(chosen().load(std::memory_order_relaxed)); }

bool set_active_isa(Isa isa) {
  if (isa > cpu_isa()) return false;
  chosen().store(static_cast<int>(isa), std::memory_order_relaxed);
  return true;
}

bool cpu_has_avx2_fma() { return active_isa() >= Isa::Avx2; }
bool cpu_has_avx512() { return active_isa() >= Isa::Avx512; }

}  // namespace nnxr::runtime
