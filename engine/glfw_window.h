// GLFW for engine windows (engine-private): the library's lifetime, one window, the Vulkan
// instance extensions the window system needs. Frame thread (GLFW wants the main thread); one
// GlfwLibrary at a time in a process.
#pragma once

#include <vulkan/vulkan.h>
#define GLFW_INCLUDE_NONE
#include <GLFW/glfw3.h>

#include <string>
#include <vector>

#include "engine/desktop.h"

namespace nnxr::engine {

// GLFW reports errors through a process-wide callback; the last one names why init failed.
inline std::string& glfw_last_error() {
  static std::string message;
  return message;
}

// glfwInit/glfwTerminate for the viewer's lifetime.
class GlfwLibrary {
 public:
  GlfwLibrary() {
    glfwSetErrorCallback([](int, const char* text) { glfw_last_error() = text ? text : "unknown GLFW error"; });
    if (!glfwInit()) throw NoDisplayError("cannot open a window: " + glfw_last_error());
    if (!glfwVulkanSupported()) {
      glfwTerminate();
      throw NoDisplayError("cannot open a window: the window system offers no Vulkan surface");
    }
  }
  ~GlfwLibrary() { glfwTerminate(); }
  GlfwLibrary(const GlfwLibrary&) = delete;
  GlfwLibrary& operator=(const GlfwLibrary&) = delete;
};

class Window {
 public:
  Window(uint32_t width, uint32_t height, bool visible) {
    glfwWindowHint(GLFW_CLIENT_API, GLFW_NO_API);
    glfwWindowHint(GLFW_VISIBLE, visible ? GLFW_TRUE : GLFW_FALSE);
    window_ = glfwCreateWindow(static_cast<int>(width), static_cast<int>(height), "nnxr", nullptr, nullptr);
    if (!window_) throw NoDisplayError("cannot open a window: " + glfw_last_error());
  }
  ~Window() { glfwDestroyWindow(window_); }
  Window(const Window&) = delete;
  Window& operator=(const Window&) = delete;
  GLFWwindow* get() const { return window_; }

 private:
  GLFWwindow* window_ = nullptr;
};

inline std::vector<std::string> glfw_instance_extensions() {
  uint32_t n = 0;
  const char** names = glfwGetRequiredInstanceExtensions(&n);
  if (!names) throw NoDisplayError("cannot open a window: " + glfw_last_error());
  return {names, names + n};
}

}  // namespace nnxr::engine
