// One private X server (tests/engine/xvfb.h) for a whole window-test program, started before its
// first test and stopped after its last, and REQUIRE_DISPLAY() to skip a test, with the reason,
// when it could not be started. Include from one source file of a test program.
#pragma once

#include <gtest/gtest.h>

#include "tests/engine/xvfb.h"

namespace nnxr::test {

inline Xvfb* g_xvfb = nullptr;

class XvfbEnvironment : public ::testing::Environment {
 public:
  void SetUp() override { g_xvfb = new Xvfb(); }
  void TearDown() override {
    delete g_xvfb;
    g_xvfb = nullptr;
  }
};

inline ::testing::Environment* const kXvfbEnvironment = ::testing::AddGlobalTestEnvironment(new XvfbEnvironment);

}  // namespace nnxr::test

#define REQUIRE_DISPLAY()                                                                     \
  do {                                                                                        \
    if (!::nnxr::test::g_xvfb || !::nnxr::test::g_xvfb->ok())                                 \
      GTEST_SKIP() << "Xvfb could not be started";                                            \
  } while (0)
