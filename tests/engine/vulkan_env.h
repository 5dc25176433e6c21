// Test support for the Vulkan core tests: a device on lavapipe (unless VK_ICD_FILENAMES or
// VK_DRIVER_FILES already choose a driver) with the validation layers on and a count of their
// errors, hand-made scenes, and images written to the build directory on failure.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <glm/glm.hpp>

#include "engine/device.h"
#include "engine/offscreen.h"
#include "engine/renderer.h"
#include "model/scene/scene.h"

namespace nnxr::engine::test {

// Points the Vulkan loader at lavapipe when no driver is chosen and lavapipe is installed.
void prefer_lavapipe();

struct VulkanEnv {
  std::unique_ptr<Instance> instance;
  std::unique_ptr<Device> device;  // declared after the instance it refers to
  // Creates the instance (validation on) and device; fails the calling test with the error text
  // when Vulkan is unavailable.
  static std::unique_ptr<VulkanEnv> create();
  uint64_t validation_errors() const { return instance->validation_errors(); }
};

// A scene written into a sink: elements, segments and counts.
struct HandScene {
  std::vector<scene::Neuron> neurons;
  std::vector<scene::Connection> connections;
  std::vector<scene::Segment> segments;
  scene::DrawCounts counts;  // everything
  float max_contribution = 1;
  void add_segment(std::vector<scene::Neuron> n, std::vector<scene::Connection> c = {});
  void write(scene::SceneSink& sink) const;  // neurons(), connections(), copy, publish()
};

// The hand-made scenes' view: from 5 m along −X towards the origin (square image), neurons 0.4 m
// wide, fog beyond 100 m.
FrameParams side_view();
// Pixel of a size × size image where the point p lands under params' first view.
std::pair<uint32_t, uint32_t> pixel_of(const FrameParams& params, glm::vec3 p, uint32_t size);

// Writes `image` as <build dir>/<name>.png and returns the path (for failure messages).
std::string save_failure_image(const RgbaImage& image, const std::string& name);

// sRGB-encoded colour classification of a pixel.
bool is_red(const uint8_t* p);
bool is_blue(const uint8_t* p);
bool near_colour(const uint8_t* p, const uint8_t* q, int tolerance);

}  // namespace nnxr::engine::test
