// `nnxr view --xr` end to end against the simulated OpenXR runtime (tests/xrsim), loaded through
// the Khronos loader with the core validation API layer on: the session's states, the stereo
// images it submits, and controller input scripted on the runtime's timeline.
#include <gtest/gtest.h>
#include <stb_image.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <glm/glm.hpp>
#include <glm/gtc/matrix_transform.hpp>
#include <glm/gtc/quaternion.hpp>

#include "assets/assets.h"
#include "model/load.h"
#include "model/scene/scene.h"
#include "tests/engine/xvfb.h"
#include "tests/support/json_line.h"
#include "tests/support/run_nnxr.h"
#include "tests/xrsim/client/xr_client.h"
#include "tests/xrsim/xrsim.h"
#include "engine/camera.h"
#include "engine/interaction.h"
#include "xr/feedback.h"
#include "xr/placement.h"

namespace {

namespace fs = std::filesystem;
using nnxr::test::RunResult;

// The environment for the nnxr process: the core validation layer on, Vulkan validation on.
const std::string kLayers = "XR_ENABLE_API_LAYERS=" + std::string(xrsim::client::kCoreValidationLayer);

std::string last_line(const std::string& s) {
  const auto end = s.find_last_not_of('\n');
  if (end == std::string::npos) return "";
  const auto start = s.rfind('\n', end);
  return s.substr(start == std::string::npos ? 0 : start + 1, end - (start == std::string::npos ? 0 : start + 1) + 1);
}

// The number after "key": in a one-line JSON object (first occurrence).
double json_number(const std::string& json, const std::string& key) {
  const auto at = json.find("\"" + key + "\":");
  if (at == std::string::npos) return NAN;
  return std::strtod(json.c_str() + at + key.size() + 3, nullptr);
}

// The three numbers of "key":[a,b,c].
std::vector<double> json_triple(const std::string& json, const std::string& key) {
  const auto at = json.find("\"" + key + "\":[");
  if (at == std::string::npos) return {};
  const char* p = json.c_str() + at + key.size() + 4;
  std::vector<double> v;
  for (int i = 0; i < 3; ++i) {
    char* end = nullptr;
    v.push_back(std::strtod(p, &end));
    p = end + 1;
  }
  return v;
}

// Errors the core validation layer wrote (its file exists only once it has something to say).
std::vector<std::string> layer_errors(const xrsim::client::TestEnv& env) {
  std::vector<std::string> errors;
  std::ifstream f(env.dir() + "/core_validation.txt");
  for (std::string line; std::getline(f, line);)
    if (line.find("VALID_ERROR") != std::string::npos) errors.push_back(line);
  return errors;
}

// The string value of "key":"..." (first occurrence; no escapes expected).
std::string json_string(const std::string& json, const std::string& key) {
  const auto at = json.find("\"" + key + "\":\"");
  if (at == std::string::npos) return "<missing " + key + ">";
  const auto start = at + key.size() + 4;
  return json.substr(start, json.find('"', start) - start);
}

// The integers of "key":[a,b,...].
std::vector<int64_t> json_ints(const std::string& json, const std::string& key) {
  const auto at = json.find("\"" + key + "\":[");
  if (at == std::string::npos) return {-1};
  std::vector<int64_t> v;
  const char* p = json.c_str() + at + key.size() + 4;
  while (*p != ']') {
    char* end = nullptr;
    v.push_back(std::strtoll(p, &end, 10));
    p = *end == ',' ? end + 1 : end;
  }
  return v;
}

// The default model and its layout, as the viewer builds them (default layout options).
struct DefaultScene {
  nnxr::model::Graph graph = nnxr::model::load_model_from_memory(nnxr::assets::default_model().bytes, "digits.onnx");
  nnxr::scene::Layout layout = nnxr::scene::Layout::build(graph, {});

  // Where the viewer first puts the network (xr/placement.h): framed for the runtime's default
  // head (1.6 m above the stage origin, looking along −Z) and its 90° eyes.
  nnxr::engine::WorldTransform world = place(layout);
  static nnxr::engine::WorldTransform place(const nnxr::scene::Layout& layout) {
    return nnxr::xr::place_network(corners_of(layout), nnxr::xr::Pose{glm::vec3(0, 1.6f, 0)});
  }
  // Where the viewer puts the board of the view's panels with it (xr/placement.h place_board),
  // for a head that starts at `head`.
  static glm::mat4 board(const nnxr::scene::Layout& layout, const nnxr::xr::Pose& head) {
    const std::vector<glm::vec3> corners = corners_of(layout);
    return nnxr::xr::place_board(corners, nnxr::xr::place_network(corners, head), head);
  }
  static std::vector<glm::vec3> corners_of(const nnxr::scene::Layout& layout) {
    std::vector<glm::vec3> corners;
    for (const nnxr::scene::Block& b : layout.blocks())
      nnxr::engine::add_corners(corners, glm::vec3(b.min[0], b.min[1], b.min[2]), glm::vec3(b.max[0], b.max[1], b.max[2]));
    return corners;
  }
  glm::quat rotation() const { return world.rotation; }
  glm::vec3 translation() const { return world.translation; }
  glm::vec3 to_world(std::array<float, 3> p) const { return world.to_world(glm::vec3(p[0], p[1], p[2])); }

  // A hand 0.5 m behind the deepest block's middle neuron (network +X), moved by `offset` in the
  // world, aiming its ray at that neuron.
  struct Aim {
    const nnxr::scene::Block& block;
    int64_t element;
    glm::vec3 hand;
    glm::quat aim;
  };
  Aim aim_at_deepest(glm::vec3 offset) const {
    const nnxr::scene::Block& block = layout.blocks().back();
    const int64_t element = block.tiles * block.tile_h * block.tile_w / 2;
    const glm::vec3 target = to_world(layout.position(block.tensor, element));
    const glm::vec3 hand = target + rotation() * glm::vec3(0.5f, 0, 0) + offset;
    return {block, element, hand, glm::quatLookAt(glm::normalize(target - hand), glm::vec3(0, 1, 0))};
  }
};

std::string pose(glm::vec3 p, glm::quat q = {1, 0, 0, 0}) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "%.6f %.6f %.6f %.6f %.6f %.6f %.6f", p.x, p.y, p.z, q.x, q.y, q.z, q.w);
  return buf;
}

// The board of the view's panels as the run reports it (xr/placement.h place_board): canvas
// pixels → world.
glm::mat4 board_of(const std::string& json) {
  const auto tl = json_triple(json, "board_top_left"), r = json_triple(json, "board_right");
  if (tl.size() != 3 || r.size() != 3) return glm::mat4(1.0f);
  return nnxr::xr::canvas_plane(glm::vec3(tl[0], tl[1], tl[2]), glm::vec3(r[0], r[1], r[2]), glm::vec3(0, 1, 0),
                                nnxr::xr::kPanelMetresPerPixel);
}

// The board's corners projected through `eye` into an image of w × h pixels: top left, top
// right, bottom right, bottom left. A board reaching behind the eye (its left end, beside the
// head) is cut where it comes within 5 cm of the eye's plane.
std::array<glm::vec2, 4> board_quad(const glm::mat4& plane, const glm::mat4& eye, int w, int h) {
  std::array<glm::vec2, 4> q;
  const glm::vec2 canvas = nnxr::xr::kPanelCanvas;
  const float w0 = (eye * plane * glm::vec4(0, 0, 0, 1)).w, w1 = (eye * plane * glm::vec4(canvas.x, 0, 0, 1)).w;
  float left = 0;  // the canvas column from which the board is in front of the eye
  if (w0 < 0.05f && w1 > w0) left = std::min(canvas.x, canvas.x * (0.05f - w0) / (w1 - w0));
  const glm::vec2 corner[4] = {{left, 0}, {canvas.x, 0}, {canvas.x, canvas.y}, {left, canvas.y}};
  for (int i = 0; i < 4; ++i) {
    const glm::vec4 c = eye * plane * glm::vec4(corner[i], 0, 1);
    q[size_t(i)] = {(c.x / c.w + 1) * 0.5f * float(w), (c.y / c.w + 1) * 0.5f * float(h)};
  }
  return q;
}

// An 8-bit linear colour as the eye image stores it: sRGB-encoded (the swapchain is *_SRGB).
std::array<int, 3> srgb8(glm::vec4 linear) {
  std::array<int, 3> out{};
  for (int i = 0; i < 3; ++i) {
    const double c = std::round(double(linear[i]) * 255.0) / 255.0;  // packed to unorm8 first
    const double e = c <= 0.0031308 ? 12.92 * c : 1.055 * std::pow(c, 1 / 2.4) - 0.055;
    out[size_t(i)] = int(std::lround(e * 255.0));
  }
  return out;
}

// An RGBA image loaded from a capture.
struct Image {
  int w = 0, h = 0;
  std::vector<unsigned char> px;
  explicit Image(const fs::path& file) {
    int n = 0;
    unsigned char* p = stbi_load(file.c_str(), &w, &h, &n, 4);
    if (p) px.assign(p, p + size_t(w) * size_t(h) * 4);
    stbi_image_free(p);
  }
  bool near(int i, std::array<int, 3> c, int tolerance = 3) const {
    for (int k = 0; k < 3; ++k)
      if (std::abs(int(px[size_t(4 * i + k)]) - c[size_t(k)]) > tolerance) return false;
    return true;
  }
  int count(glm::vec4 linear) const {
    const auto c = srgb8(linear);
    int n = 0;
    for (int i = 0; i < w * h; ++i) n += near(i, c);
    return n;
  }
};

// The capture of view `view` at runtime frame `frame` (the newest at or before it).
fs::path capture_at(const xrsim::client::TestEnv& env, uint64_t frame, uint32_t view) {
  fs::path best;
  for (const auto& e : fs::directory_iterator(env.capture_dir())) {
    unsigned long long f = 0;
    unsigned l = 0, v = 0;
    if (std::sscanf(e.path().filename().c_str(), "frame%llu_layer%u_view%u.png", &f, &l, &v) == 3 && v == view && f <= frame &&
        (best.empty() || e.path().filename() > best.filename()))
      best = e.path();
  }
  return best;
}

RunResult view(const std::string& args, const std::string& env = "") {
  return nnxr::test::run_nnxr("view --xr --stats " + args, kLayers + " " + env);
}

xrsim::Record read_record(const xrsim::client::TestEnv& env) {
  std::string error;
  auto record = xrsim::read_record(env.record_path(), &error);
  EXPECT_TRUE(record.has_value()) << error;
  return record.value_or(xrsim::Record{});
}

// Counts pixels of a capture that differ from its top-left corner (the background).
int lit_pixels(const fs::path& file) {
  int w = 0, h = 0, n = 0;
  unsigned char* px = stbi_load(file.c_str(), &w, &h, &n, 4);
  if (px == nullptr) return -1;
  int lit = 0;
  for (int i = 0; i < w * h; ++i)
    if (std::abs(px[4 * i] - px[0]) + std::abs(px[4 * i + 1] - px[1]) + std::abs(px[4 * i + 2] - px[2]) > 30) ++lit;
  stbi_image_free(px);
  return lit;
}

TEST(XrView, WalksTheSessionStatesAndSubmitsStereoImagesOfTheNetwork) {
  xrsim::client::TestEnv env("view-basic");
  const RunResult r = view("--frames 3 --validation");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string json = last_line(r.out);
  EXPECT_NE(json.find(R"("mode":"xr")"), std::string::npos) << json;
  EXPECT_NE(json.find(R"("session_states":["IDLE","READY","SYNCHRONIZED","VISIBLE","FOCUSED",)"), std::string::npos) << json;
  EXPECT_NE(json.find(R"("STOPPING","IDLE","EXITING"])"), std::string::npos) << json;  // it asked to exit after 3 frames
  EXPECT_NE(json.find(R"("space":"STAGE")"), std::string::npos) << json;
  EXPECT_EQ(json_number(json, "frames"), 3) << json;
  EXPECT_EQ(json_number(json, "validation_errors"), 0) << json;
  EXPECT_GT(json_number(json, "neurons"), 1000) << json;
  EXPECT_TRUE(layer_errors(env).empty()) << layer_errors(env).front();
  EXPECT_NE(r.err.find("headset via nnxr xrsim"), std::string::npos) << r.err;

  // The last frame's two eye images: the network's colours across the middle (it stands at eye
  // height before the head, xr/placement.h; TheNetworkIsFramedFromTheStartingHeadPose measures
  // it), its input end lower left, in both eyes.
  // The controllers' feedback (rays, gauges) is left out of the count, and so is the upper left
  // quarter, where the view's panels stand in the room (xr/placement.h place_board): some of
  // their words show there.
  namespace colour = nnxr::xr::feedback_colour;
  std::vector<std::array<int, 3>> overlay;
  for (glm::vec4 c : {colour::kRay, colour::kGaugeBack, colour::kNeuronGauge, colour::kConnectionGauge, colour::kText})
    overlay.push_back(srgb8(c));
  std::vector<fs::path> captures;
  for (const auto& e : fs::directory_iterator(env.capture_dir())) captures.push_back(e.path());
  std::sort(captures.begin(), captures.end());
  ASSERT_GE(captures.size(), 2u);
  for (size_t v = captures.size() - 2; v < captures.size(); ++v) {
    int w = 0, h = 0, n = 0;
    unsigned char* px = stbi_load(captures[v].c_str(), &w, &h, &n, 4);
    ASSERT_NE(px, nullptr) << captures[v];
    const unsigned char* bg = px;  // the corner is background
    int lit = 0, lit_right = 0, lit_lower_left = 0, lit_panels = 0;
    for (int y = 0; y < h; ++y)
      for (int x = 0; x < w; ++x) {
        const unsigned char* p = px + 4 * (y * w + x);
        const bool feedback = std::any_of(overlay.begin(), overlay.end(), [&](const std::array<int, 3>& c) {
          return std::abs(p[0] - c[0]) <= 3 && std::abs(p[1] - c[1]) <= 3 && std::abs(p[2] - c[2]) <= 3;
        });
        if (feedback) continue;
        if (std::abs(p[0] - bg[0]) + std::abs(p[1] - bg[1]) + std::abs(p[2] - bg[2]) > 30) {
          if (x < w / 2 && y < h / 2) {
            ++lit_panels;
            continue;
          }
          ++lit;
          lit_right += x >= w / 2;
          lit_lower_left += x < w / 2;
        }
      }
    stbi_image_free(px);
    EXPECT_GT(lit, 50) << captures[v];
    EXPECT_LT(lit, w * h / 4) << captures[v];
    EXPECT_GT(lit_right, lit / 4) << captures[v];
    EXPECT_GT(lit_lower_left, 50) << captures[v];
    EXPECT_GT(lit_panels, 50) << captures[v];
  }
}

// ---- where the network is placed --------------------------------------------------------------

// The runtime's default left eye (xrsim: the head at (0, 1.6, 0) looking along −Z, 64 mm between
// the eyes, 90° square): stage → Vulkan clip.
glm::mat4 default_left_eye() {
  const glm::mat4 view = glm::translate(glm::mat4(1.0f), -glm::vec3(-0.032f, 1.6f, 0));
  glm::mat4 p(0.0f);  // as xr/session.cpp projection() for a symmetric 90° square, Y down
  p[0][0] = 1, p[1][1] = -1, p[2][3] = -1, p[2][2] = -1, p[3][2] = -0.1f;
  return p * view;
}

// Where the network shows in a left eye's image, from its pixels: those the colour map tints
// (reds and blues; not the background, the rays' cyan, the gauges' yellow, nor labels' text)
// outside the board of the view's panels (`plane`, xr/placement.h place_board: its legend is
// tinted too),
// whose quad is projected through `eye`. Columns and rows with at least two such pixels count.
struct Extent {
  int x0 = 1 << 30, x1 = -1, y0 = 1 << 30, y1 = -1;
  long pixels = 0;
  std::vector<int> row_x0;  // each row's leftmost tinted pixel (the image's width: none)
  // The leftmost tinted pixel in rows [y0, y1].
  int left_in_rows(float y0, float y1) const {
    int x = 1 << 30;
    for (int y = std::max(0, int(y0)); y <= std::min(int(row_x0.size()) - 1, int(y1)); ++y) x = std::min(x, row_x0[size_t(y)]);
    return x;
  }
  double width(int w) const { return x1 >= x0 ? double(x1 - x0 + 1) / w : 0.0; }
};
Extent network_extent(const Image& im, const glm::mat4& eye, const glm::mat4& plane) {
  const std::array<glm::vec2, 4> board = board_quad(plane, eye, im.w, im.h);
  auto on_board = [&](float x, float y) {  // inside the convex quad, with a few pixels to spare
    int sign = 0;
    for (int i = 0; i < 4; ++i) {
      const glm::vec2 a = board[size_t(i)], b = board[size_t((i + 1) % 4)];
      const glm::vec2 edge = b - a;
      const float d = (edge.x * (y - a.y) - edge.y * (x - a.x)) / std::max(glm::length(edge), 1e-3f);
      if (std::abs(d) <= 4) continue;
      const int s = d > 0 ? 1 : -1;
      if (sign != 0 && s != sign) return false;
      sign = s;
    }
    return true;
  };
  const unsigned char* bg = im.px.data();  // the corner is background
  std::vector<int> columns(size_t(im.w), 0), rows(size_t(im.h), 0);
  Extent e;
  e.row_x0.assign(size_t(im.h), im.w);
  for (int y = 0; y < im.h; ++y)
    for (int x = 0; x < im.w; ++x) {
      const unsigned char* p = &im.px[size_t(4 * (y * im.w + x))];
      const int r = p[0], g = p[1], b = p[2];
      if (std::abs(r - bg[0]) + std::abs(g - bg[1]) + std::abs(b - bg[2]) <= 30) continue;
      const bool cyan = g >= 170 && b >= 170 && r <= g - 40, yellow = r >= 90 && r - g < 50 && r - b > 40;
      if (cyan || yellow || std::abs(r - b) < 24 || on_board(float(x) + 0.5f, float(y) + 0.5f)) continue;
      ++columns[size_t(x)], ++rows[size_t(y)], ++e.pixels;
      e.row_x0[size_t(y)] = std::min(e.row_x0[size_t(y)], x);
    }
  for (int x = 0; x < im.w; ++x)
    if (columns[size_t(x)] >= 2) e.x0 = std::min(e.x0, x), e.x1 = std::max(e.x1, x);
  for (int y = 0; y < im.h; ++y)
    if (rows[size_t(y)] >= 2) e.y0 = std::min(e.y0, y), e.y1 = std::max(e.y1, y);
  return e;
}

// The headset frames the network as `render` and the desktop do (xr/placement.h): from the
// starting head pose, a tiny network (the default digits model, 0.8 m deep at scale 1) and huge
// ones (UltraFace's strip of 3,600 boxes, 14 m tall; BERT's 20 m line of 3,000 blocks) span at
// least half of the eye's width and stand wholly inside it: by the tinted pixels of the left
// eye's image, and by every block corner projected through both eyes. The hands are behind the
// head, their rays pointing away, so that only the network and the panels are in view.
TEST(XrView, TheNetworkIsFramedFromTheStartingHeadPose) {
  struct Case {
    std::string name, model;  // model: empty for the default
  };
  const std::string shared = NNXR_SHARED_MODELS;
  const Case cases[] = {{"digits", ""},
                        {"ultraface", shared + "/ultraface-RFB-320.onnx"},
                        {"bert", shared + "/tf-bert-qa-tiny.onnx"}};
  const glm::quat backwards = glm::angleAxis(glm::radians(180.0f), glm::vec3(0, 1, 0));
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    if (!c.model.empty() && !fs::exists(c.model)) {
      std::cerr << "skipping " << c.model << ": absent\n";
      continue;
    }
    xrsim::client::TestEnv env("view-framed-" + c.name);
    env.set_script("view_size 640 640\ngrip left " + pose({-0.2f, 1.3f, 0.4f}) + "\naim left " + pose({-0.2f, 1.3f, 0.4f}, backwards) +
                   "\ngrip right " + pose({0.2f, 1.3f, 0.4f}) + "\naim right " + pose({0.2f, 1.3f, 0.4f}, backwards) + "\n");
    const RunResult r = view("--frames 4" + (c.model.empty() ? std::string() : " '" + c.model + "'"));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const std::string json = last_line(r.out);
    // The placement the viewer reports is the one xr/placement.h makes for the layout.
    const nnxr::model::Graph graph = c.model.empty()
                                         ? nnxr::model::load_model_from_memory(nnxr::assets::default_model().bytes, "digits.onnx")
                                         : nnxr::model::load_model(c.model);
    const nnxr::scene::Layout layout = nnxr::scene::Layout::build(graph, {});
    const nnxr::engine::WorldTransform world = DefaultScene::place(layout);
    // A layout whose shapes come from the run (BERT's) is checked by its pixels only.
    const bool exact = !nnxr::scene::Layout::needs_run(graph);
    const glm::mat4 board = board_of(json);
    // The board's right edge in the left eye's image (its rightmost pixels: it faces the head).
    const std::array<glm::vec2, 4> quad = board_quad(board, default_left_eye(), 640, 640);
    const float board_right = std::max(quad[1].x, quad[2].x);
    float network_left = 1e30f;  // the leftmost projected block corner, pixels
    if (exact) {
      const glm::mat4 placed = nnxr::xr::place_board(DefaultScene::corners_of(layout), world, nnxr::xr::Pose{glm::vec3(0, 1.6f, 0)});
      for (int i = 0; i < 4; ++i)
        for (int k = 0; k < 3; ++k) EXPECT_NEAR(board[i][k], placed[i][k], 1e-3) << "board column " << i << ": " << json;
      for (const glm::vec3& p : DefaultScene::corners_of(layout)) {
        const glm::vec4 clip = default_left_eye() * world.matrix() * glm::vec4(p, 1);
        network_left = std::min(network_left, (clip.x / clip.w + 1) * 0.5f * 640.0f);
      }
      // The board beside the network: none of its pixels within the network's projected bounds.
      EXPECT_LT(board_right, network_left) << "the board covers the network: " << json;
      EXPECT_NEAR(json_number(json, "scale"), world.scale, 1e-3 * world.scale) << json;
      const auto t = json_triple(json, "translation");
      ASSERT_EQ(t.size(), 3u) << json;
      for (int i = 0; i < 3; ++i) EXPECT_NEAR(t[size_t(i)], world.translation[i], 1e-3) << "axis " << i << ": " << json;
      // Every block corner inside both eyes' images; together they span half the width or more.
      for (const float side : {-1.0f, 1.0f}) {
        const glm::mat4 eye = default_left_eye() * glm::translate(glm::mat4(1.0f), glm::vec3(side < 0 ? 0.0f : -0.064f, 0, 0));
        float lo = 1e30f, hi = -1e30f;
        for (const glm::vec3& p : DefaultScene::corners_of(layout)) {
          const glm::vec4 clip = eye * world.matrix() * glm::vec4(p, 1);
          ASSERT_GT(clip.w, 0.5f) << "a block behind or in the face";
          EXPECT_LE(std::abs(clip.x / clip.w), 1.0f);
          EXPECT_LE(std::abs(clip.y / clip.w), 1.0f);
          lo = std::min(lo, clip.x / clip.w), hi = std::max(hi, clip.x / clip.w);
        }
        EXPECT_GE(0.5f * (hi - lo), 0.5f) << (side < 0 ? "left" : "right") << " eye";
      }
    }
    // The left eye's pixels.
    const fs::path file = capture_at(env, 1000000, 0);
    ASSERT_FALSE(file.empty()) << env.capture_dir();
    const Image im(file);
    ASSERT_EQ(im.w, 640) << file;
    const Extent e = network_extent(im, default_left_eye(), board);
    std::cerr << c.name << ": the network spans x " << e.x0 << ".." << e.x1 << ", y " << e.y0 << ".." << e.y1 << " of 640x640 ("
              << e.pixels << " tinted pixels), scale " << json_number(json, "scale") << '\n';
    EXPECT_GE(e.width(im.w), 0.5) << file;
    EXPECT_GT(e.x0, 1) << file;
    EXPECT_LT(e.x1, im.w - 2) << file;
    EXPECT_GT(e.y0, 1) << file;
    EXPECT_LT(e.y1, im.h - 2) << file;
    // The board stands left of the network's tinted pixels in the rows of its right edge.
    const int beside = e.left_in_rows(quad[1].y, quad[2].y);
    std::cerr << c.name << ": the board's right edge at x " << board_right << ", the network's corners from " << network_left
              << ", its pixels in the board's rows from " << beside << '\n';
    EXPECT_LT(board_right, float(beside)) << file;
    // It stands at most a small turn of the head away (15 degrees past the left edge of the
    // view, or in it).
    EXPECT_GT(board_right, (1.0f - std::tan(glm::radians(60.0f))) * 320.0f) << file;
    EXPECT_TRUE(layer_errors(env).empty()) << layer_errors(env).front();
    if (HasFailure()) env.keep();
  }
}

TEST(XrView, OneHandGrabCarriesTheNetworkAndTheThumbstickStepsThresholds) {
  xrsim::client::TestEnv env("view-grab");
  // The scene is shown within the first frames (the worker loads it while they are drawn); the
  // gestures come well after: a right-hand grab moving the hand up 0.3 m, then the right
  // thumbstick up (neuron threshold) and right (connection threshold).
  env.set_script(R"(
grip right 0.2 1.2 -0.3
frame 200
/user/hand/right/input/squeeze/value 1.0
frame 210
grip right 0.2 1.35 -0.3
frame 220
grip right 0.2 1.5 -0.3
frame 230
/user/hand/right/input/squeeze/value 0.0
frame 240
/user/hand/right/input/thumbstick 0 1
frame 245
/user/hand/right/input/thumbstick 0 0
frame 250
/user/hand/right/input/thumbstick 1 0
frame 255
/user/hand/right/input/thumbstick 0 0
)");
  const RunResult r = view("--frames 280");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string json = last_line(r.out);
  const auto t = json_triple(json, "translation");
  ASSERT_EQ(t.size(), 3u) << json;
  // Placed before the head (xr/placement.h); the grab moved it with the hand: +0.3 m in Y.
  const DefaultScene scene;
  for (int i = 0; i < 3; ++i)
    EXPECT_NEAR(t[size_t(i)], scene.translation()[i] + (i == 1 ? 0.3f : 0.0f), 1e-3) << "axis " << i << ": " << json;
  EXPECT_NEAR(json_number(json, "scale"), scene.world.scale, 1e-4) << json;
  EXPECT_GT(json_number(json, "neuron"), 0) << json;               // was 0
  EXPECT_GT(json_number(json, "connection"), 0.5 + 1e-6) << json;  // was 0.5
  EXPECT_TRUE(layer_errors(env).empty()) << layer_errors(env).front();
}

TEST(XrView, XAndYStepThroughTheInputs) {
  xrsim::client::TestEnv env("view-inputs");
  // Three inputs; X twice (next, next), then Y (previous): 0 -> 1 -> 2 -> 1.
  env.set_script(R"(
frame 150
/user/hand/left/input/x/click 1
frame 155
/user/hand/left/input/x/click 0
frame 200
/user/hand/left/input/x/click 1
frame 205
/user/hand/left/input/x/click 0
frame 250
/user/hand/left/input/y/click 1
frame 255
/user/hand/left/input/y/click 0
)");
  const std::string assets = std::string(NNXR_SOURCE_DIR) + "/assets/";
  const RunResult r = view("--frames 320 --input '" + assets + "digit-1.png' --input '" + assets + "digit-2.png' --input '" +
                           assets + "digit-3.png'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string json = last_line(r.out);
  EXPECT_NE(json.find(R"("input":{"index":1,"count":3,"file":"digit-2.png"})"), std::string::npos) << json;
  EXPECT_EQ(json_number(json, "input_switches"), 3) << json;
  EXPECT_GT(json_number(json, "input_switch_ms"), 0) << json;
  EXPECT_NE(r.err.find("input 3/3: digit-3.png"), std::string::npos) << r.err;
  EXPECT_TRUE(layer_errors(env).empty()) << layer_errors(env).front();
}

// The other profiles step through the inputs and flip A, B and A − B with the buttons they have
// (bindings.cpp): each preferred in turn, its next button pressed twice and its compare button once.
TEST(XrView, EveryProfileStepsInputsAndFlipsCompare) {
  struct Case {
    const char* profile;
    const char* next;
    const char* compare;
  };
  const Case cases[] = {
      {"/interaction_profiles/valve/index_controller", "/user/hand/left/input/a/click", "/user/hand/right/input/a/click"},
      {"/interaction_profiles/htc/vive_controller", "/user/hand/left/input/trackpad/click", "/user/hand/right/input/trackpad/click"},
      {"/interaction_profiles/microsoft/motion_controller", "/user/hand/left/input/trackpad/click",
       "/user/hand/right/input/trackpad/click"},
      {"/interaction_profiles/khr/simple_controller", "/user/hand/left/input/menu/click", "/user/hand/left/input/select/click"},
  };
  const std::string assets = std::string(NNXR_SOURCE_DIR) + "/assets/";
  for (const Case& c : cases) {
    xrsim::client::TestEnv env("view-profile");
    env.set_script(std::string("prefer_profile ") + c.profile + "\nframe 60\n" + c.next + " 1\nframe 63\n" + c.next +
                   " 0\nframe 90\n" + c.next + " 1\nframe 93\n" + c.next + " 0\nframe 120\n" + c.compare + " 1\nframe 123\n" +
                   c.compare + " 0\n");
    const RunResult r = view("--frames 160 --budget 20000 --input '" + assets + "digit-1.png' --input '" + assets + "digit-2.png' --input '" +
                             assets + "digit-3.png' --compare '" + assets + "digit-8.png'");
    ASSERT_EQ(r.exit_code, 0) << c.profile << ": " << r.err;
    const std::string json = last_line(r.out);
    EXPECT_NE(json.find(std::string(R"("profile":")") + c.profile + "\""), std::string::npos) << json;
    EXPECT_NE(json.find(R"("input":{"index":2,"count":3,"file":"digit-3.png"})"), std::string::npos) << c.profile << ": " << json;
    EXPECT_NE(json.find(R"("compare":{"show":"A")"), std::string::npos) << c.profile << ": " << json;  // from A − B
    EXPECT_EQ(json_number(json, "input_switches"), 2) << json;
    EXPECT_TRUE(layer_errors(env).empty()) << layer_errors(env).front();
  }
}

TEST(XrView, TwoHandSqueezeScalesAboutTheHandsMidpoint) {
  xrsim::client::TestEnv env("view-scale");
  // Both hands squeeze 0.4 m apart around (0, 1.5, −0.3), then move apart to 0.8 m about the same
  // midpoint: the network doubles in size about that point, which stays where it is.
  env.set_script(R"(
grip left -0.2 1.5 -0.3
grip right 0.2 1.5 -0.3
frame 200
/user/hand/left/input/squeeze/value 1.0
/user/hand/right/input/squeeze/value 1.0
frame 210
grip left -0.3 1.5 -0.3
grip right 0.3 1.5 -0.3
frame 220
grip left -0.4 1.5 -0.3
grip right 0.4 1.5 -0.3
frame 230
/user/hand/left/input/squeeze/value 0.0
/user/hand/right/input/squeeze/value 0.0
)");
  const RunResult r = view("--frames 260");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string json = last_line(r.out);
  const DefaultScene scene;
  EXPECT_NEAR(json_number(json, "scale"), 2.0 * scene.world.scale, 1e-4) << json;
  const glm::vec3 mid(0, 1.5f, -0.3f);
  const glm::vec3 expected = mid + 2.0f * (scene.translation() - mid);
  const auto t = json_triple(json, "translation");
  ASSERT_EQ(t.size(), 3u) << json;
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(t[size_t(i)], expected[i], 1e-3) << "axis " << i << ": " << json;
  // No turn: the hands moved along the line between them.
  const auto q = json_triple(json, "rotation");  // w, x, y of the placement's yaw
  ASSERT_EQ(q.size(), 3u) << json;
  EXPECT_NEAR(q[0], scene.rotation().w, 1e-4) << json;
  EXPECT_NEAR(q[1], scene.rotation().x, 1e-4) << json;
  EXPECT_NEAR(q[2], scene.rotation().y, 1e-4) << json;
  EXPECT_EQ(json_number(json, "validation_errors"), 0) << json;
  EXPECT_TRUE(layer_errors(env).empty()) << layer_errors(env).front();
}

TEST(XrView, TriggerSelectsTheNeuronTheAimRayHits) {
  xrsim::client::TestEnv env("view-select");
  // The middle neuron of the deepest block, aimed at from behind the network, a little off axis.
  const DefaultScene scene;
  const auto [block, element, hand, aim] = scene.aim_at_deepest(glm::vec3(0.1f, 0.15f, 0));
  const glm::vec3 target = scene.to_world(scene.layout.position(block.tensor, element));
  ASSERT_LT(glm::length(aim * glm::vec3(0, 0, -1) - glm::normalize(target - hand)), 1e-4f);
  env.set_script("grip right " + pose(hand) + "\naim right " + pose(hand, aim) + R"(
frame 200
/user/hand/right/input/trigger/value 1.0
frame 210
/user/hand/right/input/trigger/value 0.0
)");
  const RunResult r = view("--frames 260");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // --stats: stdout is the JSON line alone; the selection's message goes to stderr.
  EXPECT_EQ(nnxr::test::one_json_line(r.out), "");
  EXPECT_NE(r.err.find("nnxr: selected "), std::string::npos) << r.err;
  const std::string json = last_line(r.out);
  const nnxr::model::Tensor& tensor = scene.graph.tensors[block.tensor];
  ASSERT_EQ(json.find(R"("selected":null)"), std::string::npos) << json;
  EXPECT_EQ(json_string(json, "tensor"), tensor.name) << json;
  // The element's index in the tensor's shape (row-major).
  std::vector<int64_t> index(tensor.shape.size());
  int64_t rest = element;
  for (size_t d = tensor.shape.size(); d-- > 0;) {
    const int64_t n = std::max<int64_t>(tensor.shape[d], 1);
    index[d] = rest % n;
    rest /= n;
  }
  EXPECT_EQ(json_ints(json, "index"), index) << json;
  EXPECT_TRUE(std::isfinite(json_number(json, "value"))) << json;
  EXPECT_EQ(json_number(json, "validation_errors"), 0) << json;
  EXPECT_TRUE(layer_errors(env).empty()) << layer_errors(env).front();
}

// The strings of "key":["a","b",...] (no escapes expected).
std::vector<std::string> json_strings(const std::string& json, const std::string& key) {
  std::vector<std::string> v;
  const auto at = json.find("\"" + key + "\":[");
  if (at == std::string::npos) return {"<missing " + key + ">"};
  for (size_t p = at + key.size() + 4; p < json.size() && json[p] == '"';) {
    const size_t end = json.find('"', p + 1);
    v.push_back(json.substr(p + 1, end - p - 1));
    p = end + 1 + (json[end + 1] == ',');
  }
  return v;
}

// The focus follows the right controller's aim ray: aimed at the deepest block from behind the
// network, that tensor gets points (--budget 2: a focus of one point, so only the tensor aimed at
// and the nearest in view); aimed up, away from the network, the head's gaze chooses and it has
// none.
TEST(XrView, TheFocusFollowsTheControllersAimRay) {
  const DefaultScene scene;
  const auto deepest = scene.aim_at_deepest(glm::vec3(0.1f, 0.15f, 0));
  const std::string name = scene.graph.tensors[deepest.block.tensor].name;
  const glm::quat up = glm::quatLookAt(glm::vec3(0, 1, 0), glm::vec3(0, 0, 1));
  std::vector<std::string> focus[2];
  for (int aimed = 0; aimed < 2; ++aimed) {
    xrsim::client::TestEnv env(aimed ? "view-focus-aim" : "view-focus-gaze");
    env.set_script("grip right " + pose(deepest.hand) + "\naim right " + pose(deepest.hand, aimed ? deepest.aim : up) + "\n");
    const RunResult r = view("--frames 120 --budget 2");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const std::string json = last_line(r.out);
    focus[aimed] = json_strings(json, "focus");
    EXPECT_EQ(json_number(json, "focus_tensors"), double(focus[aimed].size())) << json;
    EXPECT_EQ(json_number(json, "validation_errors"), 0) << json;
    EXPECT_TRUE(layer_errors(env).empty()) << layer_errors(env).front();
  }
  EXPECT_EQ(std::count(focus[1].begin(), focus[1].end(), name), 1) << "aimed at: " << testing::PrintToString(focus[1]);
  EXPECT_FALSE(focus[0].empty());
  EXPECT_EQ(std::count(focus[0].begin(), focus[0].end(), name), 0) << "aimed away: " << testing::PrintToString(focus[0]);
}

TEST(XrView, InViewFeedbackShowsRaysThresholdGaugesAndTheSelectedNeuron) {
  namespace colour = nnxr::xr::feedback_colour;
  xrsim::client::TestEnv env("view-feedback");
  // The right controller stays where the runtime puts it by default, in view below and right of
  // the head, with its gauges; its thumbstick raises the neuron threshold from frame 120 to 220.
  // The left hand then selects the deepest block's middle neuron from behind the network.
  const DefaultScene scene;
  const auto [block, element, hand, aim] = scene.aim_at_deepest(glm::vec3(-0.1f, 0.15f, 0));
  // Eye images of 640x640 so that the panel's glyphs are a few pixels tall.
  env.set_script("view_size 640 640\ngrip left " + pose(hand) + "\naim left " + pose(hand, aim) + R"(
frame 120
/user/hand/right/input/thumbstick 0 1
frame 220
/user/hand/right/input/thumbstick 0 0
frame 230
/user/hand/left/input/trigger/value 1.0
frame 240
/user/hand/left/input/trigger/value 0.0
)");
  const RunResult r = view("--frames 260 --validation");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string json = last_line(r.out);
  EXPECT_EQ(json_string(json, "tensor"), scene.graph.tensors[block.tensor].name) << json;
  const double neuron = json_number(json, "neuron"), connection = json_number(json, "connection");
  ASSERT_GT(neuron, 0.1) << json;  // a few steps up
  EXPECT_EQ(json_number(json, "validation_errors"), 0) << json;

  // The left eye. (Mesa 22.3's lavapipe draws parts of multiview's second view into the first
  // layer, in the scene as in the overlay, so the right eye is not pixel-checked here.)
  // Before the stick moved: rays, the connection gauge at 0.5, an empty neuron gauge, no panel.
  const Image before(capture_at(env, 110, 0));
  ASSERT_GT(before.w, 0) << env.capture_dir();
  EXPECT_GT(before.count(colour::kRay), 300);
  EXPECT_GT(before.count(colour::kGaugeBack), 50);
  const int yellow = before.count(colour::kConnectionGauge);
  EXPECT_GT(yellow, 30);
  EXPECT_EQ(before.count(colour::kNeuronGauge), 0);
  EXPECT_EQ(before.count(colour::kPanel), 0);
  // At the end: the neuron gauge filled in proportion to its threshold (the two gauges are the
  // same size, side by side), and the selection panel with its text.
  std::vector<fs::path> all;
  for (const auto& e : fs::directory_iterator(env.capture_dir())) all.push_back(e.path());
  std::sort(all.begin(), all.end());
  ASSERT_GE(all.size(), 2u);
  const Image after(all[all.size() - 2]);  // the left eye of the last frame
  const int green = after.count(colour::kNeuronGauge);
  EXPECT_NEAR(double(green) / double(after.count(colour::kConnectionGauge)), neuron / connection, 0.3 * neuron / connection)
      << green << " neuron-gauge pixels";
  const int panel = after.count(colour::kPanel), text = after.count(colour::kText);
  EXPECT_GT(panel, 10000);  // about 0.4 x 0.13 m at 0.6 m
  EXPECT_GT(text, 500);
  EXPECT_GT(before.count(colour::kText), 20);  // the gauges' values and letters
  EXPECT_GT(text, before.count(colour::kText) + 400);  // ... plus the panel's four lines
  if (HasFailure()) env.keep();
  EXPECT_TRUE(layer_errors(env).empty()) << layer_errors(env).front();
}

TEST(XrView, DepthGoesToTheCompositorWithEachProjectionView) {
  xrsim::client::TestEnv env("view-depth");
  const RunResult r = view("--frames 5 --validation");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string json = last_line(r.out);
  EXPECT_NE(json.find(R"("depth_layer":true)"), std::string::npos) << json;
  EXPECT_EQ(json_number(json, "validation_errors"), 0) << json;
  EXPECT_EQ(r.err.find("composition_layer_depth"), std::string::npos) << r.err;
  const xrsim::Record record = read_record(env);
  // A colour swapchain and a depth one (D32_SFLOAT, the first depth format the runtime offers),
  // both two layers at the recommended size.
  ASSERT_EQ(record.swapchains.size(), 2u);
  EXPECT_EQ(record.swapchains[1].format, VK_FORMAT_D32_SFLOAT);
  EXPECT_EQ(record.swapchains[1].array_size, 2u);
  EXPECT_EQ(record.swapchains[1].width, record.swapchains[0].width);
  // Every frame with a layer carries a depth info for each of its two views (the runtime checks
  // their sub-images and depth ranges, and fails xrEndFrame otherwise).
  int with_layer = 0;
  for (const auto& f : record.frames)
    if (f.layers > 0) {
      ++with_layer;
      EXPECT_EQ(f.projection_views, 2u) << "frame " << f.index;
      EXPECT_EQ(f.depth_infos, 2u) << "frame " << f.index;
    }
  EXPECT_GE(with_layer, 5);
  EXPECT_TRUE(record.errors.empty()) << record.errors.front().function << " " << record.errors.front().result;
  EXPECT_TRUE(layer_errors(env).empty()) << layer_errors(env).front();
}

TEST(XrView, WithoutTheDepthExtensionDepthStaysPrivate) {
  xrsim::client::TestEnv env("view-nodepth");
  const RunResult r = view("--frames 5 --validation", std::string(xrsim::kEnvNoDepthLayer) + "=1");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string json = last_line(r.out);
  EXPECT_NE(json.find(R"("depth_layer":false)"), std::string::npos) << json;
  EXPECT_EQ(json_number(json, "validation_errors"), 0) << json;
  // One line says so.
  const auto at = r.err.find("does not offer XR_KHR_composition_layer_depth");
  ASSERT_NE(at, std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("composition_layer_depth", at + 30), std::string::npos) << r.err;
  const xrsim::Record record = read_record(env);
  ASSERT_EQ(record.swapchains.size(), 1u);
  int with_layer = 0;
  for (const auto& f : record.frames)
    if (f.layers > 0) {
      ++with_layer;
      EXPECT_EQ(f.depth_infos, 0u) << "frame " << f.index;
    }
  EXPECT_GE(with_layer, 5);
  // The network is still drawn (depth-tested against the private depth image).
  ASSERT_FALSE(record.captures.empty());
  EXPECT_GT(lit_pixels(env.capture_dir() + "/" + fs::path(record.captures.back().file).filename().string()), 50);
  EXPECT_TRUE(layer_errors(env).empty()) << layer_errors(env).front();
}

TEST(XrView, DesktopMirrorPresentsTheLeftEyeWithoutHoldingUpTheHeadset) {
  nnxr::test::Xvfb xvfb;  // a private X server unless DISPLAY is set
  if (!xvfb.ok()) GTEST_SKIP() << "Xvfb could not be started";
  xrsim::client::TestEnv env("view-mirror");
  const RunResult r = view("--frames 40 --validation --width 320 --height 240", "DISPLAY=" + xvfb.display());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string json = last_line(r.out);
  ASSERT_NE(json.find(R"("mirror":{)"), std::string::npos) << json << "\n" << r.err;
  // Every frame offered the mirror an image; the ones with none free were skipped, not waited for.
  const double presented = json_number(json, "presented"), skipped = json_number(json, "skipped");
  EXPECT_GE(presented, 20) << json;
  EXPECT_GE(presented + skipped, json_number(json, "frames")) << json;
  EXPECT_EQ(json_number(json, "validation_errors"), 0) << json;
  EXPECT_EQ(r.err.find("mirror"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("VUID"), std::string::npos) << r.err;
  EXPECT_TRUE(layer_errors(env).empty()) << layer_errors(env).front();
}

TEST(XrView, NoMirrorWithoutADisplayOrWithNoMirror) {
  {
    xrsim::client::TestEnv env("view-nomirror-display");
    const RunResult r = view("--frames 3", "DISPLAY= WAYLAND_DISPLAY=");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(last_line(r.out).find(R"("mirror":null)"), std::string::npos) << r.out;
    EXPECT_NE(r.err.find("no display (DISPLAY and WAYLAND_DISPLAY are unset); no desktop mirror\n"), std::string::npos) << r.err;
  }
  nnxr::test::Xvfb xvfb;
  if (!xvfb.ok()) GTEST_SKIP() << "Xvfb could not be started";
  xrsim::client::TestEnv env("view-nomirror-flag");
  const RunResult r = view("--frames 3 --no-mirror", "DISPLAY=" + xvfb.display());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(last_line(r.out).find(R"("mirror":null)"), std::string::npos) << r.out;
  EXPECT_EQ(r.err.find("mirror"), std::string::npos) << r.err;
}

// The line "live <instances> <sessions> <spaces> <swapchains> <action sets> <actions>" the runtime
// writes when it is unloaded or the process ends (NNXR_XRSIM_LIVE): what was never destroyed.
std::string live_line(const std::string& file) {
  std::ifstream f(file);
  std::string line;
  std::getline(f, line);
  return line.empty() ? "<no " + file + ">" : line;
}

TEST(XrView, ALostSessionIsRebuiltWhenTheHeadsetIsBackAndTheSceneStays) {
  xrsim::client::TestEnv env("view-loss");
  // Lost at frame 40 (the runtime fails the next call before the app polls LOSS_PENDING), then
  // the headset is away for three xrGetSystem calls.
  env.set_script("frame 40\nlose_session 3\n");
  const std::string live = env.dir() + "/live.txt";
  const RunResult r = view("--frames 60 --validation", std::string(xrsim::kEnvLive) + "=" + live);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string json = last_line(r.out);
  EXPECT_EQ(json_number(json, "sessions"), 2) << json;
  EXPECT_EQ(json_number(json, "session_losses"), 1) << json;
  EXPECT_EQ(json_number(json, "frames"), 60) << json;  // settled frames over both sessions
  EXPECT_EQ(json_number(json, "validation_errors"), 0) << json;
  // The second session walks up from IDLE again and ends as asked.
  EXPECT_NE(json.find(R"("FOCUSED","IDLE","READY","SYNCHRONIZED","VISIBLE","FOCUSED",)"), std::string::npos) << json;
  EXPECT_NE(json.find(R"("STOPPING","IDLE","EXITING"])"), std::string::npos) << json;
  EXPECT_NE(r.err.find("the OpenXR session was lost (OpenXR: xrBeginFrame: XR_ERROR_SESSION_LOST)"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("the headset is back; new OpenXR session"), std::string::npos) << r.err;
  // The scene stayed resident: built once, drawn by the new session.
  size_t scenes = 0;
  for (size_t at = r.err.find("nnxr: scene "); at != std::string::npos; at = r.err.find("nnxr: scene ", at + 1)) ++scenes;
  EXPECT_EQ(scenes, 1u) << r.err;
  EXPECT_EQ(json_number(json, "scene_generation"), 1) << json;
  const xrsim::Record record = read_record(env);
  ASSERT_FALSE(record.captures.empty());
  EXPECT_GT(record.captures.back().frame, 40u);
  EXPECT_GT(lit_pixels(env.capture_dir() + "/" + fs::path(record.captures.back().file).filename().string()), 50);
  // The runtime's errors: the call after the loss, then the three polls while the headset was away.
  ASSERT_EQ(record.errors.size(), 4u);
  EXPECT_EQ(record.errors[0].function, "xrBeginFrame");
  EXPECT_EQ(record.errors[0].result, "XR_ERROR_SESSION_LOST");
  for (size_t i = 1; i < 4; ++i) {
    EXPECT_EQ(record.errors[i].function, "xrGetSystem");
    EXPECT_EQ(record.errors[i].result, "XR_ERROR_FORM_FACTOR_UNAVAILABLE");
  }
  EXPECT_EQ(live_line(live), "live 0 0 0 0 0 0");
  EXPECT_TRUE(layer_errors(env).empty()) << layer_errors(env).front();
}

// Two lavapipe drivers (the system's and a copy of its library under another name) give the
// Vulkan loader two physical devices; xrsim's `gpu_after_loss other` makes the headset come back
// on the other one after the loss. The viewer makes a new device there (scene buffers, renderer)
// and keeps its model: the scene is written again from the kept model, not reloaded.
TEST(XrView, AHeadsetBackOnAnotherGpuGetsTheSceneOnANewDevice) {
  const fs::path icd = "/usr/share/vulkan/icd.d/lvp_icd.x86_64.json";
  std::ifstream in(icd);
  if (!in) GTEST_SKIP() << "no lavapipe driver manifest at " << icd;
  const std::string manifest((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto key = manifest.find("\"library_path\"");
  ASSERT_NE(key, std::string::npos) << manifest;
  const auto open = manifest.find('"', manifest.find(':', key) + 1);
  const std::string library = manifest.substr(open + 1, manifest.find('"', open + 1) - open - 1);
  xrsim::client::TestEnv env("view-other-gpu");
  const fs::path copy = fs::path(env.dir()) / "libvulkan_lvp_second.so";
  fs::copy_file(library, copy, fs::copy_options::overwrite_existing);
  const fs::path second = fs::path(env.dir()) / "lvp_second.json";
  std::ofstream(second) << R"({"file_format_version": "1.0.0", "ICD": {"library_path": ")" << copy.string()
                        << R"(", "api_version": "1.1.230"}})";
  env.set_script("gpu_after_loss other\nframe 30\nlose_session 2\n");
  const std::string live = env.dir() + "/live.txt";
  const std::string drivers = icd.string() + ":" + second.string();
  const RunResult r = view("--frames 50 --validation", std::string(xrsim::kEnvLive) + "=" + live + " VK_ICD_FILENAMES=" + drivers +
                                                          " VK_DRIVER_FILES=" + drivers);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string json = last_line(r.out);
  EXPECT_EQ(json_number(json, "sessions"), 2) << json;
  EXPECT_EQ(json_number(json, "session_losses"), 1) << json;
  EXPECT_EQ(json_number(json, "gpu_moves"), 1) << json;
  EXPECT_EQ(json_number(json, "frames"), 50) << json;
  EXPECT_EQ(json_number(json, "validation_errors"), 0) << json;
  EXPECT_NE(r.err.find("the headset is on another GPU now"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("restart"), std::string::npos) << r.err;
  // The model was loaded once; the scene was written twice (once per device).
  EXPECT_EQ(json_number(json, "scene_generation"), 2) << json;
  EXPECT_NE(json.find(R"("errors":[])"), std::string::npos) << json;
  const xrsim::Record record = read_record(env);
  ASSERT_FALSE(record.captures.empty());
  EXPECT_GT(record.captures.back().frame, 30u);
  EXPECT_GT(lit_pixels(env.capture_dir() + "/" + fs::path(record.captures.back().file).filename().string()), 50);
  EXPECT_EQ(live_line(live), "live 0 0 0 0 0 0");
  EXPECT_TRUE(layer_errors(env).empty()) << layer_errors(env).front();
}

TEST(XrView, ALossAnnouncedByTheEventIsHandledTheSameWay) {
  xrsim::client::TestEnv env("view-loss-event");
  // Lost once frame 5 was submitted: the viewer polls events before its next call, so
  // LOSS_PENDING is the first thing it hears of the loss.
  env.set_script("frame 5\nlose_session_at_end 1\n");
  const RunResult r = view("--frames 20");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string json = last_line(r.out);
  EXPECT_EQ(json_number(json, "sessions"), 2) << json;
  EXPECT_EQ(json_number(json, "session_losses"), 1) << json;
  EXPECT_EQ(json_number(json, "frames"), 20) << json;
  EXPECT_NE(r.err.find("the OpenXR session was lost (LOSS_PENDING)"), std::string::npos) << r.err;
  EXPECT_NE(json.find(R"("LOSS_PENDING","IDLE","READY",)"), std::string::npos) << json;
  const xrsim::Record record = read_record(env);
  ASSERT_EQ(record.errors.size(), 1u);  // the one xrGetSystem while the headset was away
  EXPECT_EQ(record.errors[0].function, "xrGetSystem");
  EXPECT_TRUE(layer_errors(env).empty()) << layer_errors(env).front();
}

TEST(XrView, ARuntimeWithoutAHeadsetLeavesNothingBehind) {
  xrsim::client::TestEnv env("view-no-headset");
  env.set_script("no_headset\n");
  const std::string live = env.dir() + "/live.txt";
  const std::string live_env = std::string(xrsim::kEnvLive) + "=" + live;
  {
    // --xr: a one-line error.
    const RunResult r = view("--frames 3", live_env);
    EXPECT_EQ(r.exit_code, 1);
    // (The core validation layer says one line of its own first.)
    EXPECT_EQ(last_line(r.err), "nnxr: --xr: OpenXR runtime nnxr xrsim 0.1.0 has no headset connected (XR_ERROR_FORM_FACTOR_UNAVAILABLE)")
        << r.err;
    EXPECT_EQ(r.err.find("nnxr:"), r.err.rfind("nnxr:")) << r.err;
    EXPECT_EQ(live_line(live), "live 0 0 0 0 0 0");
  }
  std::filesystem::remove(live);
  // Without --xr: the view falls back (offscreen here) and the OpenXR instance is gone.
  const std::string out = env.dir() + "/fallback.png";
  const RunResult r = nnxr::test::run_nnxr("view --frames 2 --out " + out, kLayers + " DISPLAY= WAYLAND_DISPLAY= " + live_env);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("not using a headset: OpenXR runtime nnxr xrsim 0.1.0 has no headset connected"), std::string::npos) << r.err;
  EXPECT_TRUE(fs::exists(out));
  EXPECT_EQ(live_line(live), "live 0 0 0 0 0 0");
  EXPECT_TRUE(layer_errors(env).empty()) << layer_errors(env).front();
}

// A failure after the session was made frees the session's objects before the Vulkan device
// (the Vulkan validation layer reports any device child left behind) and leaves no OpenXR handle.
void expect_clean_failure(const std::string& name, const std::string& script, const std::string& message) {
  xrsim::client::TestEnv env(name);
  env.set_script(script);
  const std::string live = env.dir() + "/live.txt";
  const RunResult r = view("--frames 3 --validation", std::string(xrsim::kEnvLive) + "=" + live + " DISPLAY= WAYLAND_DISPLAY=");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(last_line(r.err), "nnxr: " + message) << r.err;
  EXPECT_EQ(r.err.find("validation"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("VUID"), std::string::npos) << r.err;
  EXPECT_EQ(live_line(live), "live 0 0 0 0 0 0");
  EXPECT_TRUE(layer_errors(env).empty()) << layer_errors(env).front();
}

TEST(XrView, NoSrgbSwapchainFormatIsACleanError) {
  expect_clean_failure("view-no-srgb", "srgb off\n", "OpenXR: the runtime offers no sRGB 8-bit swapchain format");
}

TEST(XrView, AFailedActionSetAttachIsACleanError) {
  expect_clean_failure("view-attach-fails", "fail xrAttachSessionActionSets\n",
                       "OpenXR: xrAttachSessionActionSets failed: XR_ERROR_RUNTIME_FAILURE");
}

TEST(XrView, RuntimeExitRequestEndsTheRun) {
  xrsim::client::TestEnv env("view-exit");
  env.set_script("frame 30\nrequest_exit\n");
  const RunResult r = view("--frames 100000");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const std::string json = last_line(r.out);
  EXPECT_NE(json.find(R"("STOPPING","IDLE","EXITING"])"), std::string::npos) << json;
  EXPECT_TRUE(layer_errors(env).empty()) << layer_errors(env).front();
}

TEST(XrView, WithoutARuntimeXrIsAOneLineError) {
  const RunResult r = nnxr::test::run_nnxr("view --xr", "XR_RUNTIME_JSON=/nonexistent/runtime.json");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("nnxr: --xr: no OpenXR runtime"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}


TEST(XrView, LeftThumbstickStepsTheLayerWindowAndWalksTheNetworkToIt) {
  xrsim::client::TestEnv env("view-walk");
  // The default model has layers 0..8, 0.1 m apart along the network's depth. Left stick
  // forward twice (window 2..8), left once (2..7), then the menu button puts everything back
  // only in the second run below.
  const std::string walk = R"(
frame 200
/user/hand/left/input/thumbstick 0 1
frame 203
/user/hand/left/input/thumbstick 0 0
frame 206
/user/hand/left/input/thumbstick 0 1
frame 209
/user/hand/left/input/thumbstick 0 0
frame 212
/user/hand/left/input/thumbstick -1 0
frame 215
/user/hand/left/input/thumbstick 0 0
frame 218
/user/hand/right/input/thumbstick 0 1
frame 221
/user/hand/right/input/thumbstick 0 0
)";
  env.set_script(walk);
  const RunResult r = view("--frames 280");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string json = last_line(r.out);
  EXPECT_NE(json.find(R"("filter":{"layer_min":2,"layer_max":7,"ops":[],"tensors":[],"mode":"hide"})"), std::string::npos)
      << json;
  // The walk ended with the middle of layer 2's blocks 0.6 m ahead of the head (0, 1.6, 0),
  // the placement's turn and scale kept.
  const DefaultScene scene;
  glm::vec3 lo(1e30f), hi(-1e30f);
  for (const nnxr::scene::Block& b : scene.layout.blocks())
    if (b.layer == 2) lo = glm::min(lo, glm::vec3(b.min[0], b.min[1], b.min[2])), hi = glm::max(hi, glm::vec3(b.max[0], b.max[1], b.max[2]));
  ASSERT_LE(lo.x, hi.x);
  const glm::vec3 expected =
      glm::vec3(0, 1.6f, -0.6f) - scene.rotation() * (scene.world.scale * (0.5f * (lo + hi)));
  const auto t = json_triple(json, "translation");
  ASSERT_EQ(t.size(), 3u) << json;
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(t[size_t(i)], expected[i], 1e-3) << "axis " << i << ": " << json;
  EXPECT_GT(json_number(json, "neuron"), 0) << json;  // the right stick still steps thresholds
  EXPECT_TRUE(layer_errors(env).empty()) << layer_errors(env).front();
  // The walk is smooth: over the frames of the slide the left eye's picture changes a little
  // each frame, never all at once.
  const int before = lit_pixels(capture_at(env, 199, 0));
  const int after = lit_pixels(capture_at(env, 279, 0));
  EXPECT_GT(before, 0);
  EXPECT_NE(before, after);  // the window and the walk changed what is drawn

  // The menu button resets the window and the thresholds as well as the placement.
  xrsim::client::TestEnv env2("view-walk-menu");
  env2.set_script(walk + R"(
frame 240
/user/hand/left/input/menu/click 1
frame 243
/user/hand/left/input/menu/click 0
)");
  const RunResult m = view("--frames 280");
  ASSERT_EQ(m.exit_code, 0) << m.err;
  const std::string reset = last_line(m.out);
  EXPECT_NE(reset.find(R"("filter":{"layer_min":0,"layer_max":8,"ops":[],"tensors":[],"mode":"hide"})"), std::string::npos)
      << reset;
  EXPECT_NEAR(json_number(reset, "neuron"), 0, 1e-6) << reset;
  EXPECT_NEAR(json_number(reset, "connection"), 0.5, 1e-6) << reset;
  // Placed again as at the start (the head has not moved).
  const auto placed = json_triple(reset, "translation");
  ASSERT_EQ(placed.size(), 3u);
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(placed[size_t(i)], scene.translation()[i], 1e-3) << "axis " << i << ": " << reset;
  EXPECT_NEAR(json_number(reset, "scale"), scene.world.scale, 1e-4) << reset;
}

// ---- the hand menu and the view's panels ------------------------------------------------------

// The default model's op types as the menu lists them (engine/worker.h op_counts): by laid-out
// tensor count, most first, ties in order of first appearance.
std::vector<std::string> menu_ops(const DefaultScene& scene) {
  std::vector<std::pair<std::string, int>> ops;
  for (const nnxr::scene::Block& b : scene.layout.blocks()) {
    const auto p = scene.graph.tensors[b.tensor].producer;
    if (p == nnxr::model::kNone) continue;
    const std::string& op = scene.graph.nodes[p].op_type;
    auto it = std::find_if(ops.begin(), ops.end(), [&](const auto& o) { return o.first == op; });
    if (it == ops.end()) ops.emplace_back(op, 1);
    else ++it->second;
  }
  std::stable_sort(ops.begin(), ops.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  std::vector<std::string> out;
  for (const auto& o : ops) out.push_back(o.first);
  return out;
}

// The left hand held up in front of the chest, turned so that the menu faces the eyes (the head
// stands at the runtime's default, 1.6 m above the stage origin).
struct MenuHands {
  glm::vec3 eyes{0, 1.6f, 0};
  nnxr::xr::Pose grip;
  nnxr::xr::HandMenu menu;
  nnxr::engine::FilterMenu layout;
  glm::vec3 right_hand{0.2f, 1.3f, -0.25f};
  explicit MenuHands(size_t ops) : layout{ops} {
    grip.position = glm::vec3(-0.12f, 1.25f, -0.32f);
    // +Z of the grip towards the eyes: quatLookAt points −Z along its direction.
    grip.orientation = glm::quatLookAt(glm::normalize(grip.position - eyes), glm::vec3(0, 1, 0));
    menu = nnxr::xr::hand_menu(grip, layout.size());
  }
  // The right aim pointing at the middle of row `row` (a little left of the plate's middle).
  glm::quat aim_at_row(size_t row) const {
    const glm::vec4 p = menu.plane * glm::vec4(120.0f, layout.row_top(row) + 0.5f * nnxr::engine::FilterMenu::kLine, 0, 1);
    return glm::quatLookAt(glm::normalize(glm::vec3(p) - right_hand), glm::vec3(0, 1, 0));
  }
  std::string aim_line(size_t row) const { return "aim right " + pose(right_hand, aim_at_row(row)) + "\n"; }
};

std::string trigger(int frame) {
  return "frame " + std::to_string(frame) + "\n/user/hand/right/input/trigger/value 1.0\nframe " + std::to_string(frame + 4) +
         "\n/user/hand/right/input/trigger/value 0.0\n";
}

// The names of "key":["a","b",...] (no escapes expected).
std::vector<std::string> json_names(const std::string& json, const std::string& key) {
  std::vector<std::string> out;
  auto at = json.find("\"" + key + "\":[");
  if (at == std::string::npos) return {"<missing " + key + ">"};
  at += key.size() + 4;
  const auto end = json.find(']', at);
  for (auto q = json.find('"', at); q < end; q = json.find('"', q + 1)) {
    const auto close = json.find('"', q + 1);
    out.push_back(json.substr(q + 1, close - q - 1));
    q = close;
  }
  return out;
}

TEST(XrView, TheHandMenuTogglesOpsDimsIsolatesThePathAndResets) {
  xrsim::client::TestEnv env("view-menu");
  const DefaultScene scene;
  const std::vector<std::string> ops = menu_ops(scene);
  ASSERT_GE(ops.size(), 3u);
  const MenuHands hands(ops.size());
  ASSERT_TRUE(nnxr::xr::menu_faces(hands.menu, hands.eyes));
  const size_t n = ops.size();
  // The deepest block's middle neuron, aimed at by the right hand from behind the network.
  const auto deepest = scene.aim_at_deepest(glm::vec3(0.1f, 0.15f, 0));
  std::string script = "view_size 512 512\ngrip left " + pose(hands.grip.position, hands.grip.orientation) + "\n";
  script += "frame 100\n" + hands.aim_line(1) + trigger(120);  // the first op off
  script += "frame 140\n" + hands.aim_line(n + 1) + trigger(150);  // outside: dimmed
  script += "frame 170\ngrip right " + pose(deepest.hand) + "\naim right " + pose(deepest.hand, deepest.aim) + "\n" + trigger(180);
  script += "frame 200\ngrip right " + pose(hands.right_hand) + "\n" + hands.aim_line(n + 3) + trigger(210);  // isolate the path
  script += "frame 240\n" + hands.aim_line(n + 2) + "\n";  // rest on "isolate selected tensor"
  env.set_script(script);
  const RunResult r = view("--frames 300 --validation");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string json = last_line(r.out);
  // The path that fed the selected neuron, as scene::upstream_tensors finds it, is the filter.
  const nnxr::model::TensorId selected = deepest.block.tensor;
  EXPECT_EQ(json_string(json, "tensor"), scene.graph.tensors[selected].name) << json;
  std::vector<std::string> path;
  for (nnxr::model::TensorId t : nnxr::scene::upstream_tensors(scene.graph, scene.layout, selected))
    path.push_back(scene.graph.tensors[t].name);
  ASSERT_GE(path.size(), 2u);
  EXPECT_EQ(json_names(json, "tensors"), path) << json;
  // The first op is off, the others on; dimmed outside.
  const std::vector<std::string> shown = json_names(json, "ops");
  EXPECT_EQ(shown, std::vector<std::string>(ops.begin() + 1, ops.end())) << json;
  EXPECT_NE(json.find(R"("mode":"dim")"), std::string::npos) << json;
  EXPECT_EQ(json_number(json, "validation_errors"), 0) << json;
  EXPECT_TRUE(layer_errors(env).empty()) << layer_errors(env).front();

  // The left eye shows the menu's plate, and the row the ray points at lit.
  const glm::vec4 plate{0.05f, 0.07f, 0.16f, 1.0f}, lit{0.10f, 0.28f, 0.62f, 1.0f};
  const Image pointing(capture_at(env, 115, 0));
  ASSERT_GT(pointing.w, 0) << env.capture_dir();
  const int plate_px = pointing.count(plate), lit_px = pointing.count(lit);
  EXPECT_GT(plate_px, 5000) << env.capture_dir();
  EXPECT_GT(lit_px, 300) << env.capture_dir();
  EXPECT_LT(lit_px, plate_px / int(hands.layout.rows()) * 2);  // one row of them
  // Before the menu is pointed at, no row is lit; once the right hand turns to the network, still none.
  EXPECT_EQ(Image(capture_at(env, 90, 0)).count(lit), 0);
  EXPECT_GT(Image(capture_at(env, 90, 0)).count(plate), 5000);
  EXPECT_EQ(Image(capture_at(env, 195, 0)).count(lit), 0);
  if (HasFailure()) env.keep();

  // The menu button still resets everything (thresholds, filters, placement).
  xrsim::client::TestEnv env2("view-menu-reset");
  env2.set_script(script + "frame 250\n" + hands.aim_line(n + 4) + trigger(260));  // reset filters
  const RunResult m = view("--frames 300");
  ASSERT_EQ(m.exit_code, 0) << m.err;
  const std::string reset = last_line(m.out);
  EXPECT_NE(reset.find(R"("ops":[],"tensors":[],"mode":"hide")"), std::string::npos) << reset;
  EXPECT_EQ(json_string(reset, "tensor"), scene.graph.tensors[selected].name) << reset;  // still selected
}

// Pixels of the left eye's capture that differ from the right eye's at the same place moved
// `shift` pixels right, at the shift where the fewest differ (returned in *shift): for a plane
// seen face on, the eyes' images differ only by that shift. Only the left `part` of the width
// counts (the network, at another depth, may stand beside the plane).
int stereo_mismatch(const fs::path& left, const fs::path& right, int* shift, float part = 1.0f) {
  int w = 0, h = 0, n = 0, w2 = 0, h2 = 0;
  unsigned char* l = stbi_load(left.c_str(), &w, &h, &n, 4);
  unsigned char* r = stbi_load(right.c_str(), &w2, &h2, &n, 4);
  int best = -1;
  if (l != nullptr && r != nullptr && w == w2 && h == h2) {
    for (int s = 0; s <= 80; ++s) {
      int differ = 0;
      for (int y = 0; y < h; ++y)
        for (int x = 0; x + s < w && x < int(part * float(w)); ++x) {
          const unsigned char* a = l + 4 * (size_t(y) * w + x + s);
          const unsigned char* b = r + 4 * (size_t(y) * w + x);
          if (std::abs(a[0] - b[0]) + std::abs(a[1] - b[1]) + std::abs(a[2] - b[2]) > 40) ++differ;
        }
      if (best < 0 || differ < best) {
        best = differ;
        *shift = s;
      }
    }
  }
  stbi_image_free(l);
  stbi_image_free(r);
  return best;
}

bool have_tesseract() { return std::system("command -v tesseract >/dev/null 2>&1") == 0; }

TEST(XrView, TheViewsPanelsStandInTheRoomAndReadInTheEye) {
  if (!have_tesseract()) GTEST_SKIP() << "tesseract (Debian tesseract-ocr) is not installed";
  xrsim::client::TestEnv env("view-panels");
  // The head 0.8 m in front of the panels' plane (xr/placement.h place_board), looking at it. It
  // starts turned round, so that the network and the board beside it are placed behind the
  // start, then turns to the board.
  // The board placed with the network for the starting head, turned round.
  const DefaultScene scene;
  const glm::mat4 plane = DefaultScene::board(scene.layout, nnxr::xr::Pose{glm::vec3(0, 1.6f, 0), glm::quat(0, 0, 1, 0)});
  const glm::vec3 centre = glm::vec3(plane * glm::vec4(0.5f * nnxr::xr::kPanelCanvas, 0, 1));
  const glm::vec3 normal = glm::normalize(glm::vec3(plane[2]));
  const glm::vec3 head = centre + normal * 0.8f;
  const glm::quat look = glm::quatLookAt(-normal, glm::vec3(0, 1, 0));
  env.set_script("view_size 1024 1024\nhead 0 1.6 0 0 1 0 0\nframe 10\nhead " + pose(head, look) + "\n");
  const RunResult r = view("--frames 100");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const fs::path eye = capture_at(env, 1000000, 0);
  ASSERT_FALSE(eye.empty()) << env.capture_dir();
  // Each eye shows only its own copy of the panels: the left eye's image is the right eye's moved
  // right by the disparity (about 41 px here), not that plus some of the right eye's text.
  const fs::path right = capture_at(env, 1000000, 1);
  ASSERT_FALSE(right.empty()) << env.capture_dir();
  int shift = 0;
  // The left three quarters: the board's title, input picture and legend (the network's own
  // input picture, placed beside the board, shows at the right edge).
  const int mismatch = stereo_mismatch(eye, right, &shift, 0.75f);
  EXPECT_GT(shift, 20) << "the eyes see the panels from 0.8 m, from points 64 mm apart";
  EXPECT_GE(mismatch, 0);
  // 4685 here (glyph edges: the disparity is not a whole pixel); 16023 when the left eye also
  // showed the right eye's title plate and first glyphs.
  EXPECT_LT(mismatch, 8000) << "pixels of " << eye << " not at " << right << " moved " << shift << " px";
  const fs::path base = fs::path(env.dir()) / "ocr";
  const std::string cmd = "tesseract '" + eye.string() + "' '" + base.string() + "' --psm 11 >/dev/null 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  std::ifstream f(base.string() + ".txt");
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  // The title (the model's file name), the prediction panel and the legend.
  for (const char* word : {"digits", "prediction", "colour", "mean"})
    EXPECT_NE(text.find(word), std::string::npos) << word << " not read in " << eye << ":\n" << text;
  if (HasFailure()) env.keep();
}

// The input picture stands beside the network in the headset (engine/annotations.cpp places a
// world billboard before the input's block): seen from 0.35 m, each eye shows the default
// model's digit in its true colours (the picture's black ground and white strokes, colours no
// tile, label or panel has) at the middle of its image, and only its own copy. With quads culled
// outside the clip volume (text.vert before 08a6719), lavapipe drew the right eye's picture into
// the left eye's layer: the right eye showed none and the left eye two.
TEST(XrView, TheInputPictureStandsBeforeTheNetworkInBothEyes) {
  const DefaultScene scene;
  const nnxr::scene::Block* b = scene.layout.block(scene.graph.inputs[0]);
  ASSERT_NE(b, nullptr);
  // Where annotate() puts it: before the input's block, centred on it, its height twice the
  // block's within 4..8% of the network's size (the digit is square).
  const auto lo = scene.layout.bounds_min(), hi = scene.layout.bounds_max();
  const float size = std::max({hi[0] - lo[0], hi[1] - lo[1], hi[2] - lo[2], 1e-3f});
  const float em = std::clamp(2 * (b->max[1] - b->min[1]), 0.04f * size, 0.08f * size);
  const glm::vec3 centre =
      scene.to_world({b->min[0] - 0.7f * em, 0.5f * (b->min[1] + b->max[1]), 0.5f * (b->min[2] + b->max[2])});
  const glm::vec3 head = centre + scene.rotation() * glm::vec3(-0.35f, 0, 0);  // before it, looking along the depth
  const glm::quat look = glm::quatLookAt(glm::normalize(centre - head), glm::vec3(0, 1, 0));
  xrsim::client::TestEnv env("view-picture");
  env.set_script("view_size 512 512\nframe 10\nhead " + pose(head, look) + "\n");
  const RunResult r = view("--frames 60");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  int counts[2][2] = {};
  for (uint32_t v = 0; v < 2; ++v) {
    const fs::path file = capture_at(env, 1000000, v);
    ASSERT_FALSE(file.empty()) << env.capture_dir();
    const Image eye(file);
    ASSERT_GT(eye.w, 0) << file;
    int black = 0, white = 0;
    double bx = 0, by = 0;
    for (int y = 0; y < eye.h; ++y)
      for (int x = 0; x < eye.w; ++x) {
        const unsigned char* p = &eye.px[size_t(4 * (y * eye.w + x))];
        const int top = std::max({p[0], p[1], p[2]}), bottom = std::min({p[0], p[1], p[2]});
        if (top < 14) ++black, bx += x, by += y;
        white += bottom > 200;
      }
    SCOPED_TRACE(file.string());
    // The picture: about 0.056 m seen from 0.35 m, some 70 px across at 512 px.
    EXPECT_GT(black, 200);
    EXPECT_GT(white, 50);
    if (black > 0) {
      EXPECT_NEAR(bx / black, 0.5 * eye.w, 0.12 * eye.w);
      EXPECT_NEAR(by / black, 0.5 * eye.h, 0.08 * eye.h);
    }
    counts[v][0] = black, counts[v][1] = white;
  }
  // Each eye its own copy: about as many of the picture's pixels in each.
  EXPECT_NEAR(counts[0][0], counts[1][0], 0.25 * std::max(counts[0][0], counts[1][0]));
  EXPECT_TRUE(layer_errors(env).empty()) << layer_errors(env).front();
  if (HasFailure()) env.keep();
}

// What tesseract reads in a capture, lower-cased.
std::string read_words(const xrsim::client::TestEnv& env, const fs::path& png, const std::string& name) {
  const fs::path base = fs::path(env.dir()) / name;
  const std::string cmd = "tesseract '" + png.string() + "' '" + base.string() + "' --psm 11 >/dev/null 2>&1";
  if (std::system(cmd.c_str()) != 0) return {};
  std::ifstream f(base.string() + ".txt");
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return text;
}

// The title on the headset's board names the input shown, and follows X to the next one (a file
// dropped on the desktop window goes through the same record of what is shown, app/view.cpp
// ShownInput; not tested through a real drop). The head starts turned round, so that the network is
// placed away from the board.
TEST(XrView, TheTitleNamesTheInputShownAndFollowsASwitch) {
  if (!have_tesseract()) GTEST_SKIP() << "tesseract (Debian tesseract-ocr) is not installed";
  xrsim::client::TestEnv env("view-title-input");
  // The board placed with the network for the starting head, turned round.
  const DefaultScene scene;
  const glm::mat4 plane = DefaultScene::board(scene.layout, nnxr::xr::Pose{glm::vec3(0, 1.6f, 0), glm::quat(0, 0, 1, 0)});
  const glm::vec3 centre = glm::vec3(plane * glm::vec4(0.5f * nnxr::xr::kPanelCanvas, 0, 1));
  const glm::vec3 normal = glm::normalize(glm::vec3(plane[2]));
  const glm::quat look = glm::quatLookAt(-normal, glm::vec3(0, 1, 0));
  env.set_script("view_size 1024 1024\nhead 0 1.6 0 0 1 0 0\nframe 10\nhead " + pose(centre + normal * 0.8f, look) + R"(
frame 70
/user/hand/left/input/x/click 1
frame 75
/user/hand/left/input/x/click 0
)");
  const std::string assets = std::string(NNXR_SOURCE_DIR) + "/assets/";
  const RunResult r = view("--frames 110 --input '" + assets + "digit-1.png' --input '" + assets + "digit-2.png'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string json = last_line(r.out);
  ASSERT_NE(json.find(R"("input":{"index":1,"count":2,"file":"digit-2.png"})"), std::string::npos) << json;
  const fs::path before = capture_at(env, 69, 0), after = capture_at(env, 1000000, 0);
  ASSERT_FALSE(before.empty()) << env.capture_dir();
  const std::string first = read_words(env, before, "before"), second = read_words(env, after, "after");
  EXPECT_NE(first.find("digit-1"), std::string::npos) << before << ":\n" << first;
  EXPECT_EQ(first.find("digit-2"), std::string::npos) << before << ":\n" << first;
  EXPECT_NE(second.find("digit-2"), std::string::npos) << after << ":\n" << second;
  EXPECT_EQ(second.find("digit-1"), std::string::npos) << after << ":\n" << second;
  EXPECT_EQ(second.find("random"), std::string::npos) << after << ":\n" << second;
  if (HasFailure()) env.keep();
}

}  // namespace
