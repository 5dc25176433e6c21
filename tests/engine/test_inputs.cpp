// Several inputs and compare mode in the desktop viewer under a private Xvfb (lavapipe, Vulkan
// validation on): the arrow keys step through the inputs and the stats report which one is shown
// and how long a switch took; an input that vanished keeps the previous one with a message; C
// flips between A, B and A − B without an inference; `nnxr view --input DIR` reports the list.
#include <stb_image.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <stdexcept>

#include "assets/assets.h"
#include "engine/annotations.h"
#include "engine/desktop.h"
#include "engine/text.h"
#include "model/load.h"
#include "model/tensor_io.h"
#include "tests/engine/desktop_support.h"
#include "tests/support/run_nnxr.h"

namespace nnxr::engine {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

model::Graph digits() { return model::load_model_from_memory(assets::default_model().bytes, "digits.onnx"); }

// A constant image for every graph input: `level` everywhere (a different input per level).
InputSource constant_input(float level, int* calls = nullptr) {
  return [level, calls](const model::Graph& g) {
    if (calls) ++*calls;
    Feeds feeds;
    for (auto id : g.inputs) {
      const model::Tensor& t = g.tensors[id];
      model::TensorData d;
      d.dtype = model::DType::Float;
      d.shape = t.shape;
      d.bytes.resize(static_cast<size_t>(d.elements()) * 4);
      for (size_t i = 0; i < d.bytes.size(); i += 4) std::memcpy(d.bytes.data() + i, &level, 4);
      feeds[t.name] = std::move(d);
    }
    return feeds;
  };
}

ViewerOptions test_options() { return test::desktop_test_options(480, 300, 100'000); }

using test::frames_until;

// Frames until the worker is idle and a frame has drawn its newest scene.
bool settle(DesktopViewer& v) {
  bool idle_seen = false;
  return frames_until(v, [&] {
    const bool settled = v.state().settled();
    const bool done = settled && idle_seen;
    idle_seen = settled;
    return done;
  });
}

TEST(Inputs, ArrowsStepThroughTheInputs) {
  REQUIRE_DISPLAY();
  ViewerOptions o = test_options();
  const std::vector<float> levels = {0.0f, 0.5f, 1.0f};
  o.worker.inputs.names = {"zero.npy", "half.npy", "one.npy"};
  o.worker.inputs.source = [levels](size_t i) { return constant_input(levels.at(i)); };
  DesktopViewer v(o);
  v.load({"digits", digits}, constant_input(levels[0]));
  ASSERT_TRUE(settle(v));
  ViewStats s = v.stats();
  EXPECT_EQ(s.input_index, 0u);
  EXPECT_EQ(s.input_count, 3u);
  EXPECT_EQ(s.input_file, "zero.npy");
  const uint64_t first = v.state().scene_generation();

  v.key(Key::Right, Press::Down);
  v.key(Key::Right, Press::Up);
  ASSERT_TRUE(settle(v));
  s = v.stats();
  EXPECT_EQ(s.input_index, 1u);
  EXPECT_EQ(s.input_file, "half.npy");
  EXPECT_EQ(s.input_switches, 1u);
  EXPECT_GT(s.input_switch_ms, 0);
  EXPECT_GT(v.state().scene_generation(), first);
  EXPECT_NE(v.state().title().find("input 2/3 half.npy"), std::string::npos) << v.state().title();

  for (int i = 0; i < 2; ++i) {  // left twice from 1: 0, then round to 2
    v.key(Key::Left, Press::Down);
    v.key(Key::Left, Press::Up);
    ASSERT_TRUE(settle(v));
  }
  s = v.stats();
  EXPECT_EQ(s.input_index, 2u);
  EXPECT_EQ(s.input_file, "one.npy");
  EXPECT_EQ(s.input_switches, 3u);
  EXPECT_TRUE(s.errors.empty());
  EXPECT_EQ(v.validation_errors(), 0u);
}

TEST(Inputs, AVanishedInputKeepsThePreviousOne) {
  REQUIRE_DISPLAY();
  ViewerOptions o = test_options();
  o.worker.inputs.names = {"a.png", "gone.png"};
  o.worker.inputs.source = [](size_t i) -> InputSource {
    if (i == 0) return constant_input(0.25f);
    return [](const model::Graph&) -> Feeds { throw std::runtime_error("gone.png: no such file"); };
  };
  DesktopViewer v(o);
  v.load({"digits", digits}, constant_input(0.25f));
  ASSERT_TRUE(settle(v));
  const uint64_t generation = v.state().scene_generation();
  const uint64_t resident = v.stats().resident_neurons;
  v.key(Key::Right, Press::Down);
  ASSERT_TRUE(settle(v));
  const ViewStats s = v.stats();
  EXPECT_EQ(s.input_index, 0u);  // back to the input still shown
  EXPECT_EQ(s.input_file, "a.png");
  EXPECT_EQ(v.state().scene_generation(), generation);  // the scene stayed
  EXPECT_EQ(s.resident_neurons, resident);
  ASSERT_EQ(s.errors.size(), 1u);
  const std::string title = v.state().title();
  EXPECT_NE(title.find("gone.png: no such file (kept a.png)"), std::string::npos) << title;
  // Filters still apply to the kept scene.
  v.key(Key::RightBracket, Press::Down);
  ASSERT_TRUE(settle(v));
  EXPECT_LT(v.stats().drawn_neurons, resident);
}

TEST(Inputs, CompareFlipsWithoutInference) {
  REQUIRE_DISPLAY();
  ViewerOptions o = test_options();
  int a_calls = 0, b_calls = 0;
  o.worker.compare.b = constant_input(1.0f, &b_calls);
  o.worker.compare.show->store(scene::CompareShow::A);
  DesktopViewer v(o);
  v.load({"digits", digits}, constant_input(0.0f, &a_calls));
  ASSERT_TRUE(settle(v));
  EXPECT_EQ(v.stats().compare_show, "A");
  for (const char* expected : {"B", "A-B", "A"}) {
    v.key(Key::C, Press::Down);
    v.key(Key::C, Press::Up);
    ASSERT_TRUE(settle(v));
    EXPECT_EQ(v.stats().compare_show, expected);
    EXPECT_NE(v.state().title().find(std::string("showing ") + expected), std::string::npos) << v.state().title();
  }
  const ViewStats s = v.stats();
  EXPECT_EQ(s.compare_flips, 3u);
  EXPECT_GT(s.compare_flip_ms, 0);
  EXPECT_EQ(a_calls, 1);  // flips cost no inference
  EXPECT_EQ(b_calls, 1);
  EXPECT_TRUE(s.errors.empty());
  EXPECT_EQ(v.validation_errors(), 0u);
}

// A selected neuron's value is that of what is shown: A's, B's, or a_A − a_B.
TEST(Inputs, SelectionShowsTheValueOfWhatIsShown) {
  scene::InMemorySink sink;
  WorkerOptions o;
  o.print_progress = false;
  o.scene.budget = 100'000;
  o.compare.b = constant_input(1.0f);
  o.compare.show->store(scene::CompareShow::Difference);
  Worker w(sink, o);
  w.load({"digits", digits}, constant_input(0.25f));
  w.wait_idle();
  const model::Graph g = digits();
  const scene::Layout layout = scene::Layout::build(g, {});
  const model::TensorId input = g.inputs[0];
  const auto p = layout.position(input, 5);
  auto pick = [&] {
    const uint64_t serial = w.select({p[0] - 0.05f, p[1], p[2]}, {1, 0, 0}, 0.0005f);
    w.wait_idle();
    std::optional<Selection> out;
    for (WorkerEvent& e : w.take_events())
      if (auto* s = std::get_if<Selected>(&e); s && s->serial == serial) out = s->selection;
    return out;
  };
  auto s = pick();
  ASSERT_TRUE(s.has_value());
  ASSERT_EQ(s->tensor, input);
  EXPECT_EQ(s->element, 5);
  EXPECT_FLOAT_EQ(s->value, 0.25f - 1.0f);
  for (auto [show, expected] : {std::pair{scene::CompareShow::B, 1.0f}, std::pair{scene::CompareShow::A, 0.25f}}) {
    w.options().compare.show->store(show);
    w.rebuild();
    w.wait_idle();
    s = pick();
    ASSERT_TRUE(s.has_value());
    EXPECT_FLOAT_EQ(s->value, expected);
  }
}

// The input picture stands beside the network as a world billboard (drawn where the corner panels
// are not, in the headset): one Image quad anchored before the input's block along the depth,
// centred on it, with the picture's pixels, also without panels; none for a non-picture input.
TEST(Inputs, TheInputPictureStandsBesideTheNetwork) {
  const model::Graph g = digits();
  const scene::Layout layout = scene::Layout::build(g, {});
  const model::TensorId input = g.inputs[0];
  const scene::Block* block = layout.block(input);
  ASSERT_TRUE(block);
  std::vector<float> x(static_cast<size_t>(*g.tensors[input].elements()));
  for (size_t i = 0; i < x.size(); ++i) x[i] = (i % 8) < 4 ? 1.0f : 0.0f;  // left half white
  scene::Activations values(g.tensors.size());
  values[input] = {g.tensors[input].shape, x};
  AnnotationOptions o;
  o.panels = false;
  o.words.picture = InputPicture{g.tensors[input].name, {}};  // values 0..1 are pixels 0..255
  TextBuilder out(Font::builtin());
  annotate(out, g, layout, values, o);
  std::vector<GlyphGpu> pictures;
  for (const GlyphGpu& q : out.glyphs())
    if (((q.flags >> glyph_flags::kFillShift) & 3u) == uint32_t(Fill::Image)) pictures.push_back(q);
  ASSERT_EQ(pictures.size(), 1u);
  const GlyphGpu& q = pictures[0];
  EXPECT_EQ(q.flags & glyph_flags::kScreen, 0u);  // a world billboard
  EXPECT_LT(q.anchor.x, block->min[0]);            // before the first layer
  EXPECT_NEAR(q.anchor.y, 0.5f * (block->min[1] + block->max[1]), 1e-5f);
  EXPECT_NEAR(q.anchor.z, 0.5f * (block->min[2] + block->max[2]), 1e-5f);
  const uint32_t w = q.uv[1] & 0xffffu, h = q.uv[1] >> 16;
  ASSERT_EQ(w, 8u);
  ASSERT_EQ(h, 8u);
  ASSERT_LE(size_t(q.uv[0]) + w * h, out.pixels().size());
  const uint32_t left = out.pixels()[q.uv[0] + 1], right = out.pixels()[q.uv[0] + 6];  // row 0
  EXPECT_EQ(left & 0xffu, 255u);  // white, R in the low byte
  EXPECT_EQ(right & 0xffu, 0u);   // black

  AnnotationOptions none = o;
  none.words.picture.reset();
  TextBuilder plain(Font::builtin());
  annotate(plain, g, layout, values, none);
  for (const GlyphGpu& g2 : plain.glyphs()) EXPECT_NE((g2.flags >> glyph_flags::kFillShift) & 3u, uint32_t(Fill::Image));
}

// annotate() returns where its corner panels lie (the desktop keeps the pointer from aiming the
// focus there): in a 1600 × 900 view every screen quad it composed (title, picture, prediction,
// legend, selection) lies in one of them, and the view's middle in none.
TEST(Inputs, ThePanelsAreasCoverTheirText) {
  const model::Graph g = digits();
  const scene::Layout layout = scene::Layout::build(g, {});
  const model::TensorId input = g.inputs[0];
  std::vector<float> x(static_cast<size_t>(*g.tensors[input].elements()), 0.5f);
  scene::Activations values(g.tensors.size());
  values[input] = {g.tensors[input].shape, x};
  AnnotationOptions o;
  o.words.title = "digits";
  o.words.picture = InputPicture{g.tensors[input].name, {}};
  o.selection = SelectionText{.tensor = g.tensors[input].name, .op = "", .index = {0, 0, 1, 2}, .value = 0.5f};
  TextBuilder out(Font::builtin());
  const std::vector<ScreenArea> areas = annotate(out, g, layout, values, o);
  ASSERT_GE(areas.size(), 3u);  // title, picture, selection (and the legend)
  const glm::vec2 window{1600, 900};
  size_t screen = 0;
  for (const GlyphGpu& q : out.glyphs()) {
    if (!(q.flags & glyph_flags::kScreen)) continue;
    ++screen;
    const uint32_t corner = (q.flags >> glyph_flags::kCornerShift) & 3u;
    const glm::vec2 origin{(corner & 1u) ? window.x : 0.0f, (corner & 2u) ? window.y : 0.0f};
    const glm::vec2 dir{(corner & 1u) ? -1.0f : 1.0f, (corner & 2u) ? -1.0f : 1.0f};
    const glm::vec2 centre = origin + dir * glm::vec2(q.anchor) + (q.offset + 0.5f * q.extent) * q.em;
    EXPECT_TRUE(std::any_of(areas.begin(), areas.end(), [&](const ScreenArea& a) { return a.contains(centre, window); }))
        << "a screen quad at " << centre.x << ", " << centre.y;
  }
  EXPECT_GT(screen, 20u);
  EXPECT_FALSE(std::any_of(areas.begin(), areas.end(), [&](const ScreenArea& a) { return a.contains(window * 0.5f, window); }));
}

// ---- the command line ---------------------------------------------------------------------------

std::string last_line(const std::string& s) {
  std::string t = s;
  while (!t.empty() && t.back() == '\n') t.pop_back();
  const auto nl = t.rfind('\n');
  return nl == std::string::npos ? t : t.substr(nl + 1);
}

// A PNG as RGBA.
struct Picture {
  int w = 0, h = 0;
  std::vector<unsigned char> px;
  const unsigned char* at(int i) const { return &px[size_t(i) * 4]; }
};
Picture load_png(const fs::path& png) {
  Picture p;
  int n = 0;
  unsigned char* data = stbi_load(png.string().c_str(), &p.w, &p.h, &n, 4);
  EXPECT_TRUE(data) << png;
  if (data) p.px.assign(data, data + size_t(p.w) * size_t(p.h) * 4);
  stbi_image_free(data);
  return p;
}
// The colour map's two ends as drawn (sRGB): positive (255, 89, 56), negative (49, 129, 255).
bool positive_end(const unsigned char* p) { return p[0] > 230 && p[1] > 60 && p[1] < 120 && p[2] < 90; }
bool negative_end(const unsigned char* p) { return p[2] > 230 && p[0] < 80 && p[1] > 100 && p[1] < 160; }

TEST(InputsCli, DirectoryOfInputs) {
  REQUIRE_DISPLAY();
  const fs::path dir = fs::temp_directory_path() / ("nnxr-inputs-" + std::to_string(getpid()));
  fs::create_directories(dir);
  for (const char* d : {"digit-1.png", "digit-7.png"}) fs::copy_file(fs::path(NNXR_SOURCE_DIR) / "assets" / d, dir / d);
  std::ofstream(dir / "notes.txt") << "not an input\n";
  const auto r = nnxr::test::run_nnxr("view --desktop --frames 3 --stats --budget 50000 --width 320 --height 200 --input '" +
                                      dir.string() + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string json = last_line(r.out);
  EXPECT_NE(json.find(R"("input":{"index":0,"count":2,"file":"digit-1.png"})"), std::string::npos) << json;
  EXPECT_NE(r.err.find("skipped 1 entry that are not input files"), std::string::npos) << r.err;

  fs::remove(dir / "digit-1.png");
  fs::remove(dir / "digit-7.png");
  const auto empty = nnxr::test::run_nnxr("view --frames 1 --input '" + dir.string() + "'");
  EXPECT_EQ(empty.exit_code, 1) << empty.err;
  EXPECT_NE(empty.err.find("no input files"), std::string::npos) << empty.err;
  fs::remove_all(dir);
}

TEST(InputsCli, CompareShowsInStats) {
  REQUIRE_DISPLAY();
  const std::string b = std::string(NNXR_SOURCE_DIR) + "/assets/digit-8.png";
  const auto r = nnxr::test::run_nnxr("view --desktop --frames 3 --stats --budget 50000 --width 320 --height 200 --compare '" + b + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(last_line(r.out).find(R"("compare":{"show":"A-B")"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("compare: most changed"), std::string::npos) << r.err;
  const auto bad = nnxr::test::run_nnxr("view --frames 1 --compare /nonexistent.png");
  EXPECT_EQ(bad.exit_code, 1) << bad.err;
  EXPECT_NE(bad.err.find("/nonexistent.png"), std::string::npos) << bad.err;
}

// The activation images in compare mode show what is shown: the input layer alone (--layers 0:0),
// A a constant 0.25 and B a constant 0.75, offscreen. Each tensor's colour range is its own, so
// A and B are the positive end all over the input's tile, and A − B = −0.5 everywhere is the
// negative end all over it, on the same pixels.
TEST(InputsCli, ImagesShowAOrBOrTheDifference) {
  const fs::path dir = fs::temp_directory_path() / ("nnxr-compare-images-" + std::to_string(getpid()));
  fs::create_directories(dir);
  const model::Graph g = digits();
  const model::Tensor& input = g.tensors[g.inputs[0]];
  const std::vector<float> a(static_cast<size_t>(*input.elements()), 0.25f), b(a.size(), 0.75f);
  model::write_npy(dir / "a.npy", model::DType::Float, input.shape, std::as_bytes(std::span(a)));
  model::write_npy(dir / "b.npy", model::DType::Float, input.shape, std::as_bytes(std::span(b)));
  std::map<std::string, Picture> pictures;
  for (const char* show : {"a", "b", "diff"}) {
    const fs::path png = dir / (std::string(show) + ".png");
    const auto r = nnxr::test::run_nnxr("view --frames 2 --width 960 --height 600 --layers 0:0 --input '" + (dir / "a.npy").string() +
                                            "' --compare '" + (dir / "b.npy").string() + "' --show " + show + " --out '" + png.string() + "'",
                                        "env -u DISPLAY -u WAYLAND_DISPLAY XR_RUNTIME_JSON=/nonexistent/runtime.json");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    pictures[show] = load_png(png);
    ASSERT_EQ(pictures[show].px.size(), size_t(960 * 600 * 4));
  }
  // The legend's colour bar holds both ends in every picture, at the same pixels; the input's
  // tile is where A is positive and A − B negative.
  auto count = [&](auto&& where) {
    int n = 0;
    for (int i = 0; i < 960 * 600; ++i) n += where(i) ? 1 : 0;
    return n;
  };
  const Picture &pa = pictures["a"], &pb = pictures["b"], &pd = pictures["diff"];
  const int tile = count([&](int i) { return positive_end(pa.at(i)) && negative_end(pd.at(i)); });
  EXPECT_GT(tile, 400);
  EXPECT_GT(count([&](int i) { return positive_end(pb.at(i)) && negative_end(pd.at(i)); }), tile * 9 / 10);  // B too
  // Positive in A − B: the legend's pixels only (positive in A as well), none of the tile's.
  const int legend = count([&](int i) { return positive_end(pd.at(i)); });
  EXPECT_GT(legend, 0);
  EXPECT_LT(std::abs(count([&](int i) { return positive_end(pa.at(i)); }) - tile - legend), tile / 10);
  EXPECT_LT(std::abs(count([&](int i) { return negative_end(pd.at(i)); }) - tile - count([&](int i) { return negative_end(pa.at(i)); })),
            tile / 10);
  if (!HasFailure()) fs::remove_all(dir);
}

}  // namespace
}  // namespace nnxr::engine
