// The view explains itself: `nnxr render` at 1600x900 draws labels, the legend and the prediction
// so that OCR (tesseract, Debian tesseract-ocr) reads them: at least three op or tensor labels of
// the model, and the top-1 class ("bell cote" for squeezenet1.1-caffe2 on scikit-learn's
// china.jpg with --image-preset caffe). The legend's colour bar runs from blue through grey to
// red. Skipped, with a message, without tesseract, the shared models or the photo.
#include <gtest/gtest.h>
#include <stb_image.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "tests/support/run_nnxr.h"

namespace {

namespace fs = std::filesystem;

const char* const kChina = "/usr/lib/python3/dist-packages/sklearn/datasets/images/china.jpg";

bool have_tesseract() { return std::system("command -v tesseract >/dev/null 2>&1") == 0; }

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return s;
}

// What tesseract reads in the image, lower-cased.
std::string ocr(const fs::path& png) {
  const fs::path base = fs::temp_directory_path() / (png.stem().string() + "-ocr");
  const std::string cmd = "tesseract '" + png.string() + "' '" + base.string() + "' --psm 11 >/dev/null 2>&1";
  if (std::system(cmd.c_str()) != 0) return {};
  return lower(nnxr::test::slurp(base.string() + ".txt"));
}

int count_found(const std::string& text, const std::vector<std::string>& words) {
  int n = 0;
  for (const std::string& w : words) n += text.find(lower(w)) != std::string::npos;
  return n;
}

struct Rgb {
  int r, g, b;
};

// The legend's colour bar: a row near the bottom-left whose left end is blue and right end red.
void expect_colour_bar(const fs::path& png) {
  int w = 0, h = 0, n = 0;
  unsigned char* px = stbi_load(png.c_str(), &w, &h, &n, 3);
  ASSERT_NE(px, nullptr) << png;
  auto at = [&](int x, int y) { return Rgb{px[3 * (y * w + x)], px[3 * (y * w + x) + 1], px[3 * (y * w + x) + 2]}; };
  bool found = false;
  for (int y = h - 200; y < h - 14 && !found; ++y) {
    const Rgb left = at(30, y), right = at(300, y);
    if (!(left.b > left.r + 80 && right.r > right.b + 80)) continue;
    for (int x = 31; x < 300 && !found; ++x) {  // grey (zero) between them
      const Rgb m = at(x, y);
      found = std::abs(m.r - m.b) < 30 && std::abs(m.r - m.g) < 30 && m.r > 50;
    }
  }
  stbi_image_free(px);
  EXPECT_TRUE(found) << "no colour bar (blue → grey → red) in the legend of " << png;
}

TEST(Labels, DefaultModelIsLabelledAndPredicts) {
  if (!have_tesseract()) GTEST_SKIP() << "tesseract not installed (Debian tesseract-ocr)";
  const fs::path out = fs::temp_directory_path() / "nnxr-labels-default.png";
  fs::remove(out);
  const auto r = nnxr::test::run_nnxr("render --out '" + out.string() + "' --width 1600 --height 900");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string text = ocr(out);
  // Words of the tensor labels only (the panels name the output and its op too).
  EXPECT_GE(count_found(text, {"features.0/Conv", "features.1/Relu", "features.2/Conv", "features.3/Relu",
                               "features.4/MaxPool", "8x8x8", "16x8x8", "16x4x4", "digit"}),
            3)
      << "OCR read: " << text << "\nimage: " << out;
  EXPECT_NE(text.find("prediction"), std::string::npos) << "OCR read: " << text << "\nimage: " << out;
  expect_colour_bar(out);
}

TEST(Labels, SqueezenetNamesBellCote) {
  const fs::path model = fs::path(NNXR_SHARED_MODELS) / "squeezenet1.1-caffe2-op7-fp32.onnx";
  if (!fs::exists(model)) GTEST_SKIP() << "no " << model;
  if (!fs::exists(kChina)) GTEST_SKIP() << "no " << kChina << " (Debian python3-sklearn)";
  if (!have_tesseract()) GTEST_SKIP() << "tesseract not installed (Debian tesseract-ocr)";
  const fs::path out = fs::temp_directory_path() / "nnxr-labels-squeezenet.png";
  fs::remove(out);
  const auto r = nnxr::test::run_nnxr("render '" + model.string() + "' --input " + kChina +
                                      " --image-preset caffe --out '" + out.string() + "' --width 1600 --height 900 --budget 3000000");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("preset caffe"), std::string::npos) << r.err;
  const std::string text = ocr(out);
  EXPECT_NE(text.find("bell cote"), std::string::npos) << "OCR read: " << text << "\nimage: " << out;
  EXPECT_GE(count_found(text, {"fire2/concat_1", "fire5/concat_1", "fire8/concat_1", "fire2/expand3x3_1",
                               "fire2/squeeze1x1_1", "3x224x224", "128x55x55", "256x27x27", "64x55x55", "conv10_1",
                               "data_0"}),
            3)
      << "OCR read: " << text << "\nimage: " << out;
  expect_colour_bar(out);
}

}  // namespace
