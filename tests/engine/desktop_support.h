// What the desktop-window test programs share: one private X server (tests/engine/xvfb.h) for the
// whole program, started before its first test and stopped after its last; REQUIRE_DISPLAY() to
// skip a test, with the reason, when it could not be started; small windows with validation on;
// and frames_until() to draw frames until a condition holds. Include from one source file of a
// test program.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>

#include "engine/desktop.h"
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

// A window of width × height with validation on, no vsync, quiet progress and a small budget.
inline engine::ViewerOptions desktop_test_options(uint32_t width, uint32_t height, uint64_t budget) {
  engine::ViewerOptions o;
  o.width = width;
  o.height = height;
  o.validation = true;
  o.vsync = false;
  o.worker.print_progress = false;
  o.worker.scene.budget = budget;
  return o;
}

// Draws frames until `done` holds (at most 30 s); false when the window closed or time ran out.
template <class Done>
bool frames_until(engine::DesktopViewer& v, Done done) {
  const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < limit) {
    if (!v.frame()) return false;
    if (done()) return true;
  }
  return false;
}

}  // namespace nnxr::test

#define REQUIRE_DISPLAY()                                                                     \
  do {                                                                                        \
    if (!::nnxr::test::g_xvfb || !::nnxr::test::g_xvfb->ok())                                 \
      GTEST_SKIP() << "Xvfb could not be started";                                            \
  } while (0)
