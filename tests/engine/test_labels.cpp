// The view explains itself: `nnxr render` at 1600x900 draws labels, the legend and the prediction
// so that OCR (tesseract, Debian tesseract-ocr) reads them: at least three op or tensor labels of
// the model, and the top-1 class ("bell cote" for squeezenet1.1-caffe2 on scikit-learn's
// china.jpg with --image-preset caffe). The legend's colour bar runs from blue through grey to
// red. Skipped, with a message, without tesseract, the shared models or the photo.
// Pictures: an RGB input is drawn in its true colours (the preprocessing undone, BGR swapped
// back), an image output beside it, and a detector's boxes over the input with a count of what
// it found.
#include <gtest/gtest.h>
#include <stb_image.h>
#include <stb_image_write.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "tests/support/model_bytes.h"
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

// What tesseract reads in the rectangle [x0, x1) x [y0, y1) of the image (a panel: the network,
// framed to fill half the width or more, can stand close enough to it to break up its words).
std::string ocr_region(const fs::path& png, int x0, int y0, int x1, int y1) {
  int w = 0, h = 0, n = 0;
  unsigned char* px = stbi_load(png.c_str(), &w, &h, &n, 3);
  if (!px) return {};
  x0 = std::clamp(x0, 0, w), x1 = std::clamp(x1, x0, w), y0 = std::clamp(y0, 0, h), y1 = std::clamp(y1, y0, h);
  std::vector<unsigned char> crop;
  for (int y = y0; y < y1; ++y) crop.insert(crop.end(), px + 3 * (size_t(y) * size_t(w) + size_t(x0)), px + 3 * (size_t(y) * size_t(w) + size_t(x1)));
  stbi_image_free(px);
  const fs::path out = png.parent_path() / (png.stem().string() + "-region.png");
  if (crop.empty() || !stbi_write_png(out.c_str(), x1 - x0, y1 - y0, 3, crop.data(), 3 * (x1 - x0))) return {};
  return ocr(out);
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

// Removes a test's scratch directory when the test ends, unless it failed: then its images stay
// for a look.
struct RemovedIfPassed {
  explicit RemovedIfPassed(fs::path d) : dir(std::move(d)) {}
  RemovedIfPassed(const RemovedIfPassed&) = delete;
  RemovedIfPassed& operator=(const RemovedIfPassed&) = delete;
  ~RemovedIfPassed() {
    std::error_code ec;
    if (!::testing::Test::HasFailure()) fs::remove_all(dir, ec);
  }
  fs::path dir;
};

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

// Compare mode draws a_A − a_B, but the prediction panel names what each run decided (A's top 5
// and B's top class), not a softmax of the difference (which read "24.5%  3"), and the input
// picture is A's digit, not the difference of two digits.
TEST(Labels, CompareNamesEachRunsPrediction) {
  if (!have_tesseract()) GTEST_SKIP() << "tesseract not installed (Debian tesseract-ocr)";
  const fs::path out = fs::temp_directory_path() / "nnxr-labels-compare.png";
  fs::remove(out);
  const std::string assets = NNXR_SOURCE_DIR "/assets/";
  const auto r = nnxr::test::run_nnxr("render --input '" + assets + "digit-3.png' --compare '" + assets +
                                      "digit-8.png' --out '" + out.string() + "' --width 1600 --height 900");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string panel = ocr_region(out, 1200, 0, 1600, 260);
  std::erase(panel, ' ');
  EXPECT_NE(panel.find("predictionofa"), std::string::npos) << "OCR read: " << panel << "\nimage: " << out;
  EXPECT_NE(panel.find("100.0%3"), std::string::npos) << "A is a 3; OCR read: " << panel << "\nimage: " << out;
  EXPECT_NE(panel.find("b:100.0%8"), std::string::npos) << "B is an 8; OCR read: " << panel << "\nimage: " << out;
  std::string input = ocr_region(out, 0, 70, 320, 130);
  std::erase(input, ' ');
  EXPECT_NE(input.find("inputa"), std::string::npos) << "OCR read: " << input << "\nimage: " << out;
}

// The tiny BERT, wrapped into rows of encoder layers, reads as a sequence with words in the overview,
// side and top views: OCR finds at least half of its encoder layers' group labels (five in the top
// view) and some of its tensor labels whole. (In one 33 m line, the top view's labels stood over one another and each
// plate cut the words before it into fragments such as "nmb".)
TEST(Labels, BertReadsAsRowsOfNamedEncoderLayers) {
  const fs::path model = fs::path(NNXR_SHARED_MODELS) / "tf-bert-qa-tiny.onnx";
  if (!fs::exists(model)) GTEST_SKIP() << "no " << model;
  if (!have_tesseract()) GTEST_SKIP() << "tesseract not installed (Debian tesseract-ocr)";
  for (const std::string preset : {"overview", "side", "top"}) {
    const fs::path out = fs::temp_directory_path() / ("nnxr-labels-bert-" + preset + ".png");
    fs::remove(out);
    const auto r = nnxr::test::run_nnxr("render '" + model.string() + "' --camera " + preset + " --out '" + out.string() +
                                        "' --width 1600 --height 900");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const std::string text = ocr(out);
    std::vector<std::string> layers;
    for (int n = 0; n < 24; ++n) layers.push_back("encoder.layer." + std::to_string(n) + "\n");
    // "encoder.layer.1" is in "encoder.layer.12": a group label read whole ends its line. Tesseract
    // sometimes reads a space after a dot ("encoder. layer. 7").
    std::string packed = text;
    std::erase(packed, ' ');
    const int groups = count_found(packed, layers);
    // Tensor labels: the op is cyan, the name and shape white; tesseract often reads ":0" as ":o".
    const int tensors = count_found(text, {"tensordot/matmul", "self/matmul", "self/softmax", "dense/tensordot",
                                           "dense/biasadd", "activation/erf", "2x7x7", "7x32"});
    // Every group label fits its layer's width (they shrink to it, or stand a line higher where a
    // slanted view crowds them): OCR read 19 of 24 in the overview, 23 in the side view, 8 in the
    // top view (where lines cross the words); every other one was hidden before (4, 10, 6).
    EXPECT_GE(groups, preset == "top" ? 5 : preset == "side" ? 16 : 12) << preset << ": OCR read: " << text << "\nimage: " << out;
    EXPECT_GE(tensors, 1) << preset << ": OCR read: " << text << "\nimage: " << out;
    EXPECT_GE(groups + tensors, 5) << preset << ": OCR read: " << text << "\nimage: " << out;
  }
}

// BERT's attention mask (bert/mul:0, -10000 where it masks) is added to the scores of all 24
// encoder layers. Every tensor is in render's focus, so each layer's scores drew their connections
// from the mask: thick saturated blue bands from the first row to every row, covering the gaps
// between the rows (side view: 6.9% of their pixels blue, overview 4.2% of all pixels). The mask
// now draws into its nearest layer only and does not set the lines' scale (scene build.h
// far_side_input): the gaps keep under 1% blue, and the network's own connections are drawn.
TEST(Connections, BertsAttentionMaskDrawsNoFanAcrossTheRows) {
  const fs::path model = fs::path(NNXR_SHARED_MODELS) / "tf-bert-qa-tiny.onnx";
  if (!fs::exists(model)) GTEST_SKIP() << "no " << model;
  for (const std::string preset : {"side", "overview"}) {
    const fs::path out = fs::temp_directory_path() / ("nnxr-bert-mask-" + preset + ".png");
    fs::remove(out);
    const auto r = nnxr::test::run_nnxr("render '" + model.string() + "' --camera " + preset + " --out '" + out.string() +
                                        "' --width 1600 --height 900");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto shown = r.out.find(" connections shown");
    ASSERT_NE(shown, std::string::npos) << r.out;
    const auto comma = r.out.rfind(", ", shown);
    EXPECT_GT(std::stoll(r.out.substr(comma + 2, shown - comma - 2)), 100000) << "the network's own lines stay: " << r.out;
    int w = 0, h = 0, n = 0;
    unsigned char* px = stbi_load(out.c_str(), &w, &h, &n, 3);
    ASSERT_NE(px, nullptr) << out;
    auto at = [&](int x, int y) { return Rgb{px[3 * (y * w + x)], px[3 * (y * w + x) + 1], px[3 * (y * w + x) + 2]}; };
    // Blue: the negative end of the colour map (the lines and the activations below zero); red,
    // the positive end, marks the rows of blocks.
    auto blue = [](Rgb c) { return c.b > 140 && c.b > c.r + 70; };
    auto red = [](Rgb c) { return c.r > 150 && c.r > c.b + 60 && c.r > c.g + 40; };
    std::vector<int> reds(size_t(h), 0);
    long blues = 0;
    for (int y = 0; y < h; ++y)
      for (int x = 0; x < w; ++x) reds[size_t(y)] += red(at(x, y)), blues += blue(at(x, y));
    // Between the rows: image lines at least 12 px from any with 8 red pixels or more, below the
    // title and above the legend.
    long between = 0, between_blue = 0;
    for (int y = 60; y < h - 120; ++y) {
      bool near = false;
      for (int d = -12; d <= 12 && !near; ++d) near = y + d >= 0 && y + d < h && reds[size_t(y + d)] >= 8;
      if (near) continue;
      for (int x = 0; x < w; ++x) ++between, between_blue += blue(at(x, y));
    }
    stbi_image_free(px);
    const double all = double(blues) / double(w * h);
    EXPECT_LT(all, 0.02) << preset << ": " << out;
    if (preset == "side") {  // rows across the image, gaps between them
      ASSERT_GT(between, 100L * w) << out;
      EXPECT_LT(double(between_blue) / double(between), 0.01) << out;
    }
  }
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


// ---- pictures ----------------------------------------------------------------------------------

// A 32x32 PNG: yellow, magenta / cyan, grey quadrants.
const Rgb kYellow{240, 220, 30}, kMagenta{200, 40, 220}, kCyan{30, 200, 210};
fs::path quadrants_png(const fs::path& dir) {
  std::vector<unsigned char> px(32 * 32 * 3);
  for (int y = 0; y < 32; ++y)
    for (int x = 0; x < 32; ++x) {
      const Rgb c = y < 16 ? (x < 16 ? kYellow : kMagenta) : (x < 16 ? kCyan : Rgb{128, 128, 128});
      unsigned char* p = &px[size_t(3 * (y * 32 + x))];
      p[0] = (unsigned char)c.r, p[1] = (unsigned char)c.g, p[2] = (unsigned char)c.b;
    }
  const fs::path out = dir / "quadrants.png";
  EXPECT_NE(stbi_write_png(out.c_str(), 32, 32, 3, px.data(), 32 * 3), 0);
  return out;
}

struct Found {
  int count = 0;
  double x = 0, y = 0;  // centroid
};

// Pixels within 6 of `c` in the rectangle [x0, x1) x [y0, y1).
Found find_colour(const fs::path& png, Rgb c, int x0, int y0, int x1, int y1) {
  int w = 0, h = 0, n = 0;
  unsigned char* px = stbi_load(png.c_str(), &w, &h, &n, 3);
  Found f;
  if (!px) return f;
  for (int y = std::max(y0, 0); y < std::min(y1, h); ++y)
    for (int x = std::max(x0, 0); x < std::min(x1, w); ++x) {
      const unsigned char* p = px + 3 * (y * w + x);
      if (std::abs(p[0] - c.r) <= 6 && std::abs(p[1] - c.g) <= 6 && std::abs(p[2] - c.b) <= 6) {
        ++f.count;
        f.x += x;
        f.y += y;
      }
    }
  stbi_image_free(px);
  if (f.count) f.x /= f.count, f.y /= f.count;
  return f;
}

// The input under the title and the image output at the top right, both in true colours: the
// caffe preset's BGR order and mean are undone for the input, and the output (the input again,
// minus the mean) is shown from its own range in the same channel order.
TEST(Labels, InputAndImageOutputInTrueColours) {
  const fs::path dir = nnxr::test::temp_dir("labels-pictures");
  const RemovedIfPassed cleanup{dir};
  const fs::path png = quadrants_png(dir);
  const fs::path model = nnxr::test::write_file(dir / "identity.onnx", nnxr::test::edited_model(R"(
<ir_version: 8, opset_import: ["" : 13]>
net (float[1, 3, 32, 32] x) => (float[1, 3, 32, 32] y) {
  m = Constant<value = float[1, 3, 1, 1] {104, 117, 123}>()
  y = Add(x, m)
}
)", [](auto&) {}));
  const fs::path out = dir / "pictures.png";
  const auto r = nnxr::test::run_nnxr("render '" + model.string() + "' --input '" + png.string() +
                                      "' --image-preset caffe --out '" + out.string() + "' --width 1600 --height 900");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // Input: the panel at the left, under the title (the input's own tiles, in true colours too,
  // stand right of x = 300); output: the panel at the top right (right of x = 1290).
  for (const bool right : {false, true}) {
    const int x0 = right ? 1290 : 0, x1 = right ? 1600 : 300;
    const Found yellow = find_colour(out, kYellow, x0, 60, x1, 600), magenta = find_colour(out, kMagenta, x0, 60, x1, 600),
                cyan = find_colour(out, kCyan, x0, 60, x1, 600);
    SCOPED_TRACE(right ? "output" : "input");
    // Quadrants of about 120x120 pixels each (the picture's longer side is 270 px at 900 high).
    EXPECT_GT(yellow.count, 5000) << out;
    EXPECT_GT(magenta.count, 5000) << out;
    EXPECT_GT(cyan.count, 5000) << out;
    EXPECT_LT(yellow.x, magenta.x - 80);  // magenta right of yellow
    EXPECT_LT(yellow.y, cyan.y - 80);     // cyan below yellow
    EXPECT_NEAR(yellow.x, cyan.x, 10);
  }
}

// A detector's outputs (scores [1, N, 2] with corner boxes [1, N, 4]): boxes over the input, and
// the panel counts the faces instead of giving an argmax over anchors.
TEST(Labels, DetectorBoxesOverTheInput) {
  if (!have_tesseract()) GTEST_SKIP() << "tesseract not installed (Debian tesseract-ocr)";
  const fs::path dir = nnxr::test::temp_dir("labels-detector");
  const RemovedIfPassed cleanup{dir};
  const fs::path png = quadrants_png(dir);
  // Three separate boxes above 0.7, one suppressed by overlap, one below the threshold.
  const fs::path model = nnxr::test::write_file(dir / "tiny-face-detector.onnx", nnxr::test::edited_model(R"(
<ir_version: 8, opset_import: ["" : 13]>
net (float[1, 3, 32, 32] x) => (float[1, 5, 2] scores, float[1, 5, 4] boxes, float[1, 3, 32, 32] y) {
  scores = Constant<value = float[1, 5, 2] {0.05, 0.95, 0.1, 0.9, 0.2, 0.8, 0.15, 0.85, 0.6, 0.4}>()
  boxes = Constant<value = float[1, 5, 4] {0.1, 0.1, 0.4, 0.4, 0.6, 0.1, 0.9, 0.4, 0.1, 0.6, 0.4, 0.9, 0.11, 0.1, 0.41, 0.4, 0.6, 0.6, 0.9, 0.9}>()
  y = Relu(x)
}
)", [](auto&) {}));
  const fs::path out = dir / "detector.png";
  const auto r = nnxr::test::run_nnxr("render '" + model.string() + "' --input '" + png.string() +
                                      "' --image-preset unit --out '" + out.string() + "' --width 1600 --height 900");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // The boxes' green (linear 0.25, 1, 0.35) over the input picture, in three places.
  const Rgb green{137, 255, 160};
  const Found top_left = find_colour(out, green, 0, 60, 160, 600), top_right = find_colour(out, green, 160, 60, 500, 250),
              bottom_left = find_colour(out, green, 0, 250, 160, 600);
  EXPECT_GT(top_left.count, 100) << out;
  EXPECT_GT(top_right.count, 100) << out;
  EXPECT_GT(bottom_left.count, 100) << out;
  const std::string text = ocr(out);
  EXPECT_NE(text.find("3 faces"), std::string::npos) << "OCR read: " << text << "\nimage: " << out;
  // `run` says it too, after the raw outputs.
  const auto run = nnxr::test::run_nnxr("run '" + model.string() + "' --input '" + png.string() + "' --image-preset unit");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.out.find("detections (scores+boxes, 5 candidates): 3 faces"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find(" 95.0%  face  [0.100, 0.100, 0.400, 0.400]"), std::string::npos) << run.out;
}

// Without --input the title says that the input is random (and with which seed).
TEST(Labels, TitleSaysTheInputIsRandom) {
  if (!have_tesseract()) GTEST_SKIP() << "tesseract not installed (Debian tesseract-ocr)";
  const fs::path dir = nnxr::test::temp_dir("labels-random");
  const RemovedIfPassed cleanup{dir};
  const fs::path model = nnxr::test::write_file(dir / "relu.onnx", nnxr::test::edited_model(R"(
<ir_version: 8, opset_import: ["" : 13]>
net (float[1, 3, 32, 32] x) => (float[1, 3, 32, 32] y) {
  y = Relu(x)
}
)", [](auto&) {}));
  const fs::path out = dir / "random.png";
  const auto r = nnxr::test::run_nnxr("render '" + model.string() + "' --random 7 --out '" + out.string() + "' --width 1600 --height 900");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // The title plate, and the column under it where the input's picture would stand (the overview
  // frames this short network close: its blocks stand just right of the plate).
  const std::string text = ocr_region(out, 0, 0, 412, 64);
  EXPECT_NE(text.find("random input, seed 7"), std::string::npos) << "OCR read: " << text << "\nimage: " << out;
  // No picture of a random input: no panel under the title reads "input 3x32x32".
  const std::string left = ocr(out) + ocr_region(out, 0, 64, 360, 700);
  EXPECT_EQ(left.find("input 3x32x32"), std::string::npos) << "OCR read: " << left << "\nimage: " << out;
}

// A YuNet model over a 64x64 input whose twelve outputs are constants: one face at cell (1, 1) of
// stride 16, centre (24, 24), 32 pixels square, score sqrt(0.81 * 1) = 0.9, with five landmarks
// around the centre; every other cell scores sqrt(0.01 * 0.5).
std::string yunet_text() {
  std::string outputs, body;
  auto list = [](const std::vector<float>& v) {
    std::string t;
    for (size_t i = 0; i < v.size(); ++i) t += (i ? ", " : "") + std::to_string(v[i]);
    return t;
  };
  for (const int stride : {8, 16, 32}) {
    const int cells = (64 / stride) * (64 / stride);
    std::vector<float> cls(size_t(cells), 0.01f), obj(size_t(cells), 0.5f), box(size_t(cells) * 4, 0.0f),
        kps(size_t(cells) * 10, 0.0f);
    if (stride == 16) {
      const size_t i = 1 * 4 + 1;
      cls[i] = 0.81f, obj[i] = 1.0f;
      box[i * 4] = 0.5f, box[i * 4 + 1] = 0.5f, box[i * 4 + 2] = std::log(2.0f), box[i * 4 + 3] = std::log(2.0f);
      // (x, y) in pixels from the centre: the eyes, the nose, the mouth's corners.
      const float dx[5] = {-6, 6, 0, -5, 5}, dy[5] = {-4, -4, 0, 6, 6};
      for (int p = 0; p < 5; ++p) kps[i * 10 + size_t(2 * p)] = 0.5f + dx[p] / 16, kps[i * 10 + size_t(2 * p) + 1] = 0.5f + dy[p] / 16;
    }
    const std::string k = std::to_string(stride), n = std::to_string(cells);
    outputs += std::string(outputs.empty() ? "" : ", ") + "float[1, " + n + ", 1] cls_" + k + ", float[1, " + n + ", 1] obj_" + k +
               ", float[1, " + n + ", 4] bbox_" + k + ", float[1, " + n + ", 10] kps_" + k;
    body += "  cls_" + k + " = Constant<value = float[1, " + n + ", 1] {" + list(cls) + "}>()\n";
    body += "  obj_" + k + " = Constant<value = float[1, " + n + ", 1] {" + list(obj) + "}>()\n";
    body += "  bbox_" + k + " = Constant<value = float[1, " + n + ", 4] {" + list(box) + "}>()\n";
    body += "  kps_" + k + " = Constant<value = float[1, " + n + ", 10] {" + list(kps) + "}>()\n";
  }
  return "<ir_version: 8, opset_import: [\"\" : 13]>\nnet (float[1, 3, 64, 64] input) => (" + outputs +
         ", float[1, 3, 64, 64] y) {\n" + body + "  y = Relu(input)\n}\n";
}

// YuNet's outputs decode into a face box with its landmarks over the input picture; the panel
// and `run` count one face.
TEST(Labels, YunetFaceAndLandmarksOverTheInput) {
  if (!have_tesseract()) GTEST_SKIP() << "tesseract not installed (Debian tesseract-ocr)";
  const fs::path dir = nnxr::test::temp_dir("labels-yunet");
  const RemovedIfPassed cleanup{dir};
  const fs::path png = quadrants_png(dir);
  const fs::path model = nnxr::test::write_file(dir / "yunet.onnx", nnxr::test::edited_model(yunet_text(), [](auto&) {}));
  const fs::path out = dir / "yunet.png";
  const auto r = nnxr::test::run_nnxr("render '" + model.string() + "' --input '" + png.string() +
                                      "' --image-preset raw --out '" + out.string() + "' --width 1600 --height 900");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // The box's green and the landmarks' pink (linear 1, 0.3, 0.9) over the picture (270 px
  // square under the title): the box 32/64 of it wide, the landmarks' centroid at its centre.
  const Rgb green{137, 255, 160}, pink{255, 149, 243};
  const Found box = find_colour(out, green, 0, 60, 500, 600), points = find_colour(out, pink, 0, 60, 500, 600);
  EXPECT_GT(box.count, 4 * 100) << out;
  EXPECT_GE(points.count, 40) << out;
  EXPECT_NEAR(points.x, box.x, 8) << out;
  EXPECT_NEAR(points.y, box.y, 10) << out;
  const std::string text = ocr(out);
  EXPECT_NE(text.find("1 face"), std::string::npos) << "OCR read: " << text << "\nimage: " << out;
  EXPECT_EQ(text.find("class "), std::string::npos) << "a score map read as classes; OCR read: " << text;
  const auto run = nnxr::test::run_nnxr("run '" + model.string() + "' --input '" + png.string() + "' --image-preset raw");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.out.find("detections (yunet, 84 candidates): 1 face"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find(" 90.0%  face  [0.125, 0.125, 0.625, 0.625]  points (0.281, 0.312) (0.469, 0.312) (0.375, 0.375)"),
            std::string::npos)
      << run.out;
  // YuNet takes BGR 0-255: the caffe preset without its mean, which the note gives as changed.
  const auto bgr = nnxr::test::run_nnxr("run '" + model.string() + "' --input '" + png.string() +
                                        "' --image-preset caffe --image-mean 0");
  ASSERT_EQ(bgr.exit_code, 0) << bgr.err;
  EXPECT_NE(bgr.err.find("note: image: preset caffe as changed (BGR, scale 1, mean 0, std 1)"), std::string::npos) << bgr.err;
  EXPECT_NE(bgr.out.find("detections (yunet, 84 candidates): 1 face"), std::string::npos) << bgr.out;
}

// Several outputs in no known format: a table of their largest values in the panel and in `run`.
TEST(Labels, UnknownOutputsAsATable) {
  if (!have_tesseract()) GTEST_SKIP() << "tesseract not installed (Debian tesseract-ocr)";
  const fs::path dir = nnxr::test::temp_dir("labels-table");
  const RemovedIfPassed cleanup{dir};
  const fs::path model = nnxr::test::write_file(dir / "two-heads.onnx", nnxr::test::edited_model(R"(
<ir_version: 8, opset_import: ["" : 13]>
net (float[1, 3, 16, 16] x) => (float[2, 3] heatmap, float[1, 4, 5] offsets) {
  heatmap = Constant<value = float[2, 3] {0.1, 0.9, -1, 0.5, 0.2, 0.7}>()
  offsets = Constant<value = float[1, 4, 5] {0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 8}>()
}
)", [](auto&) {}));
  const fs::path out = dir / "table.png";
  const auto r = nnxr::test::run_nnxr("render '" + model.string() + "' --random 1 --out '" + out.string() + "' --width 1600 --height 900");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string text = ocr_region(out, 1100, 0, 1600, 300);  // the panel at the top right
  EXPECT_NE(text.find("no known format"), std::string::npos) << "OCR read: " << text << "\nimage: " << out;
  EXPECT_NE(text.find("heatmap"), std::string::npos) << "OCR read: " << text << "\nimage: " << out;
  EXPECT_NE(text.find("offsets"), std::string::npos) << "OCR read: " << text << "\nimage: " << out;
  const auto run = nnxr::test::run_nnxr("run '" + model.string() + "' --random 1");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.out.find("outputs (no known detector or classifier format)"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("  heatmap  2x3   0.9 [1]  0.7 [5]  0.5 [3]"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("  offsets  4x5   8 [19]  6 [6]  6 [13]"), std::string::npos) << run.out;
}

}  // namespace
