#include "tests/engine/vulkan_env.h"

#include "engine/camera.h"

#include <cstdlib>
#include <filesystem>
#include <algorithm>

namespace nnxr::engine::test {

void prefer_lavapipe() {
  const char* lvp = "/usr/share/vulkan/icd.d/lvp_icd.x86_64.json";
  if (std::getenv("VK_ICD_FILENAMES") || std::getenv("VK_DRIVER_FILES")) return;
  if (!std::filesystem::exists(lvp)) return;
  setenv("VK_ICD_FILENAMES", lvp, 0);
  setenv("VK_DRIVER_FILES", lvp, 0);
}

std::unique_ptr<VulkanEnv> VulkanEnv::create() {
  prefer_lavapipe();
  try {
    auto env = std::make_unique<VulkanEnv>();
    env->instance = std::make_unique<Instance>(InstanceOptions{.validation = true});
    env->device = std::make_unique<Device>(*env->instance, DeviceOptions{});
    return env;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "Vulkan unavailable: " << e.what();
    return nullptr;
  }
}

void HandScene::add_segment(std::vector<scene::Neuron> n, std::vector<scene::Connection> c) {
  scene::Segment s;
  s.tensor = model::TensorId(segments.size());
  s.layer = int(segments.size());
  s.neuron_first = uint32_t(neurons.size());
  s.neuron_count = uint32_t(n.size());
  s.neuron_total = int64_t(n.size());
  s.connection_first = uint32_t(connections.size());
  s.connection_count = uint32_t(c.size());
  s.connection_candidates = int64_t(c.size());
  s.value_min = s.value_max = n.empty() ? 0 : n[0].value;
  for (const scene::Neuron& x : n) s.value_min = std::min(s.value_min, x.value), s.value_max = std::max(s.value_max, x.value);
  neurons.insert(neurons.end(), n.begin(), n.end());
  connections.insert(connections.end(), c.begin(), c.end());
  segments.push_back(s);
  counts.neurons.push_back(s.neuron_count);
  counts.connections.push_back(s.connection_count);
}

void HandScene::write(scene::SceneSink& sink) const {
  auto n = sink.neurons(neurons.size());
  std::copy(neurons.begin(), neurons.end(), n.begin());
  auto c = sink.connections(connections.size());
  std::copy(connections.begin(), connections.end(), c.begin());
  sink.publish(segments, counts, max_contribution);
}

std::string save_failure_image(const RgbaImage& image, const std::string& name) {
  std::string path = std::filesystem::absolute(name + ".png").string();
  try {
    write_png(path, image);
  } catch (const std::exception& e) {
    return std::string("(could not write image: ") + e.what() + ")";
  }
  return path;
}

bool is_red(const uint8_t* p) { return p[0] > 150 && p[1] < 110 && p[2] < 110; }
bool is_blue(const uint8_t* p) { return p[2] > 150 && p[0] < 110 && p[1] < 160; }
bool near_colour(const uint8_t* p, const uint8_t* q, int tolerance) {
  for (int i = 0; i < 3; ++i)
    if (std::abs(int(p[i]) - int(q[i])) > tolerance) return false;
  return true;
}

FrameParams side_view() {
  Camera camera;
  camera.eye = {-5, 0, 0};
  camera.target = {0, 0, 0};
  camera.near = 0.1f;
  camera.far = 50;
  FrameParams params;
  params.view[0] = camera.view();
  params.projection[0] = camera.projection(1.0f);
  params.neuron_size = 0.4f;
  params.fog_start = 100;
  params.fog_end = 200;
  return params;
}

std::pair<uint32_t, uint32_t> pixel_of(const FrameParams& params, glm::vec3 p, uint32_t size) {
  const glm::vec4 clip = params.projection[0] * params.view[0] * glm::vec4(p, 1);
  const glm::vec3 ndc = glm::vec3(clip) / clip.w;
  return {uint32_t((ndc.x + 1) / 2 * float(size)), uint32_t((ndc.y + 1) / 2 * float(size))};
}

}  // namespace nnxr::engine::test
