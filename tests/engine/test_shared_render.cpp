// Integration: `nnxr render` shows every model in ../shared/models and ../shared/models/arch
// offscreen (lavapipe): the image has the background at its corners, and neurons in the colour
// map's reds and blues across a visible part of the frame. Skipped when the folder is absent.
#include <gtest/gtest.h>
#include <stb_image.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "tests/support/run_nnxr.h"
#include "tests/support/shared_models.h"

namespace {

namespace fs = std::filesystem;

// Paths relative to the shared folder (short test names); one empty entry when there are none.
std::vector<std::string> shared_models() {
  std::vector<std::string> out;
  for (const fs::path& p : nnxr::test::shared_model_paths()) out.push_back(p.lexically_relative(NNXR_SHARED_MODELS).string());
  if (out.empty()) out.push_back("");  // one skipped case says why
  return out;
}

class SharedRender : public testing::TestWithParam<std::string> {};

TEST_P(SharedRender, ShowsTheNetworkInTheColourMap) {
  if (GetParam().empty()) GTEST_SKIP() << "no shared models in " << NNXR_SHARED_MODELS;
  const fs::path model = fs::path(NNXR_SHARED_MODELS) / GetParam();
  const fs::path out = fs::temp_directory_path() / ("nnxr-shared-" + model.stem().string() + ".png");
  fs::remove(out);
  std::string args = "render '" + model.string() + "' --out '" + out.string() + "' --width 200 --height 150 --budget 150000";
  if (model.filename() == "face_detection_yunet.onnx") args += " --dim height=320 --dim width=320";
  const auto r = nnxr::test::run_nnxr(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;

  int w = 0, h = 0, n = 0;
  unsigned char* px = stbi_load(out.c_str(), &w, &h, &n, 3);
  ASSERT_NE(px, nullptr) << out;
  auto at = [&](int x, int y) { return px + 3 * (y * w + x); };
  const unsigned char* bg = at(0, 0);
  for (const auto& [x, y] : {std::pair{w - 1, 0}, std::pair{0, h - 1}, std::pair{w - 1, h - 1}})
    EXPECT_LT(std::abs(at(x, y)[0] - bg[0]) + std::abs(at(x, y)[1] - bg[1]) + std::abs(at(x, y)[2] - bg[2]), 12)
        << "corner (" << x << ", " << y << ") is not background; image: " << out;
  int lit = 0, red = 0, blue = 0;
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      const unsigned char* p = at(x, y);
      if (std::abs(p[0] - bg[0]) + std::abs(p[1] - bg[1]) + std::abs(p[2] - bg[2]) <= 30) continue;
      ++lit;
      red += p[0] > p[2] + 40;
      blue += p[2] > p[0] + 40;
    }
  stbi_image_free(px);
  EXPECT_GT(lit, w * h / 200) << "image: " << out;  // the network covers a visible part of the frame
  EXPECT_LT(lit, w * h * 95 / 100) << "image: " << out;
  EXPECT_GT(red + blue, lit / 20) << "no colour-mapped neurons; image: " << out;
  if (!HasFailure()) fs::remove(out);
}

INSTANTIATE_TEST_SUITE_P(Models, SharedRender, testing::ValuesIn(shared_models()), [](const auto& info) {
  std::string name = fs::path(info.param).stem().string();
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return name.empty() ? std::string("none") : name;
});

}  // namespace
