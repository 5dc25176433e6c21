#include "engine/annotations.h"

#include "engine/camera.h"
#include "engine/scene_buffers.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>

namespace nnxr::engine {
namespace {

const glm::vec4 kText{0.92f, 0.92f, 0.92f, 1};
const glm::vec4 kOp{0.45f, 0.85f, 1.0f, 1};
const glm::vec4 kGroup{1.0f, 0.72f, 0.25f, 1};
const glm::vec4 kDim{0.62f, 0.62f, 0.66f, 1};
const glm::vec4 kWarn{1.0f, 0.6f, 0.1f, 1};
const glm::vec4 kPanel{0.0f, 0.0f, 0.0f, 0.62f};
const glm::vec4 kPlate{0.02f, 0.02f, 0.03f, 0.88f};

std::string fixed(double v, int digits = 3) {
  char buf[64];
  if (v != 0 && (std::abs(v) >= 1e5 || std::abs(v) < 1e-3)) std::snprintf(buf, sizeof buf, "%.*g", digits, v);
  else std::snprintf(buf, sizeof buf, "%.*f", std::abs(v) >= 100 ? 1 : digits, v);
  return buf;
}

struct Rect {
  float x0, y0, x1, y1;
  bool overlaps(const Rect& o) const { return x0 < o.x1 && o.x0 < x1 && y0 < o.y1 && o.y0 < y1; }
};

// A world label before it becomes glyphs.
struct Pending {
  glm::vec3 anchor;
  std::string text;
  TextStyle style;
  int importance;
  bool hidden = false;  // overlaps a more important label at any distance the style can say
  // A second place to try, as an offset from anchor (network space; zero: none): declutter moves
  // the label there when it overlaps nothing there but would where it is.
  glm::vec3 lift{0};
};

// Hides labels that overlap a more important (or larger) one through the camera: they come back
// when the viewer is closer than kReveal times the current distance. A label already so near that
// this distance is past what min_px can say (255 px) is hidden for good: drawn at its max_px, it
// would stand under or over its neighbours, each plate cutting the words before it into fragments.
void declutter(std::vector<Pending>& labels, const Font& font, const glm::mat4& vp, glm::vec2 viewport,
               std::vector<Rect> kept) {
  constexpr float kReveal = 2.5f;
  struct Seen {
    size_t index;
    float px;
    Rect rect;  // with the plate: no other label may overlap it
    Rect text;  // the words alone: inside the image (a plate cut by the image's edge does no harm)
    std::optional<Rect> lifted_rect, lifted_text;  // the same at anchor + lift
  };
  std::vector<Seen> seen;
  // Labels are billboards: an em is as many pixels as text.vert makes it, em · |P11| · h/2 over the
  // distance (clip w), whatever the direction of the world's up on screen. The row of vp that
  // gives clip y is P11 times the camera's unit up vector.
  const float p11 = glm::length(glm::vec3(vp[0][1], vp[1][1], vp[2][1]));
  struct Placed {
    float px;
    Rect rect, text;
  };
  auto place = [&](const Pending& l, glm::vec3 anchor) -> std::optional<Placed> {
    const glm::vec4 a = vp * glm::vec4(anchor, 1);
    if (a.w <= 1e-6f) return std::nullopt;
    const glm::vec2 pa = (glm::vec2(a) / a.w * 0.5f + 0.5f) * viewport;
    const float px = l.style.em * p11 * 0.5f * viewport.y / a.w;
    const float em = std::min(px, l.style.max_px);
    const glm::vec2 size = text_size(font, l.text) * em;
    // With the plate behind a tensor label (a quarter em beyond the text at the sides, a tenth
    // above, a fifth below) and a few pixels more.
    const float side = 0.25f * em + 3, top = 0.1f * em + 2, bottom = 0.2f * em + 2;
    return Placed{px,
                  {pa.x - 0.5f * size.x - side, pa.y - size.y - top, pa.x + 0.5f * size.x + side, pa.y + bottom},
                  {pa.x - 0.5f * size.x - 1, pa.y - size.y - 1, pa.x + 0.5f * size.x + 1, pa.y + 1}};
  };
  for (size_t i = 0; i < labels.size(); ++i) {
    const Pending& l = labels[i];
    const auto at = place(l, l.anchor);
    if (!at) continue;
    if (at->px < std::max(l.style.min_px, 1.0f)) continue;  // hidden by distance anyway
    Seen s{i, at->px, at->rect, at->text, std::nullopt, std::nullopt};
    if (l.lift != glm::vec3(0))
      if (const auto up = place(l, l.anchor + l.lift)) s.lifted_rect = up->rect, s.lifted_text = up->text;
    seen.push_back(s);
  }
  std::stable_sort(seen.begin(), seen.end(), [&](const Seen& a, const Seen& b) {
    if (labels[a.index].importance != labels[b.index].importance)
      return labels[a.index].importance < labels[b.index].importance;
    return a.px > b.px;
  });
  auto fits = [&](const Rect& rect, const Rect& text) {
    return std::none_of(kept.begin(), kept.end(), [&](const Rect& r) { return r.overlaps(rect); }) && text.x0 >= 0 &&
           text.y0 >= 0 && text.x1 <= viewport.x && text.y1 <= viewport.y;
  };
  for (const Seen& s : seen) {
    if (fits(s.rect, s.text)) {
      kept.push_back(s.rect);
    } else if (s.lifted_rect && fits(*s.lifted_rect, *s.lifted_text)) {
      kept.push_back(*s.lifted_rect);
      labels[s.index].anchor += labels[s.index].lift;
    } else if (s.px * kReveal > 255.0f) labels[s.index].hidden = true;
    else labels[s.index].style.min_px = std::max(labels[s.index].style.min_px, s.px * kReveal);
  }
}

// A panel: dark rectangle behind lines of text, at `at` pixels from `corner`. Returns its size.
struct Line {
  std::string text;
  float em;
  glm::vec4 colour;
};

glm::vec2 panel(TextBuilder& out, glm::vec2 at, Corner corner, const std::vector<Line>& lines, float min_width = 0) {
  constexpr float kPad = 10;
  float w = min_width, h = 0;
  for (const Line& l : lines) {
    w = std::max(w, out.font().width(l.text) * l.em);
    h += out.font().line_height() * l.em;
  }
  const glm::vec2 size{w + 2 * kPad, h + 2 * kPad};
  const bool right = corner == Corner::TopRight || corner == Corner::BottomRight;
  const bool bottom = corner == Corner::BottomLeft || corner == Corner::BottomRight;
  // The rectangle's and the text's top-left, as offsets from the corner.
  const glm::vec2 origin{right ? at.x + size.x : at.x, bottom ? at.y + size.y : at.y};
  out.screen_rect(origin, size, {.colour = kPanel, .corner = corner});
  float y = 0;
  for (const Line& l : lines) {
    const glm::vec2 p{right ? origin.x - kPad : origin.x + kPad, bottom ? origin.y - kPad - y : origin.y + kPad + y};
    out.screen(p, l.text, {.em = l.em, .colour = l.colour, .corner = corner});
    y += out.font().line_height() * l.em;
  }
  return size;
}

const glm::vec4 kBox{0.25f, 1.0f, 0.35f, 1};
const glm::vec4 kPoint{1.0f, 0.3f, 0.9f, 1};

// A picture with a heading, `side` pixels on its longer side, at `at` from a top corner, with
// detection boxes over it. Returns the panel's size.
glm::vec2 picture_panel(TextBuilder& out, glm::vec2 at, Corner corner, const std::string& heading,
                        const scene::Picture& picture, float side, std::span<const scene::Detection> boxes) {
  constexpr float kPad = 10, kHead = 16;
  const float scale = side / float(std::max(picture.width, picture.height));
  const glm::vec2 image{std::round(float(picture.width) * scale), std::round(float(picture.height) * scale)};
  const float head_h = out.font().line_height() * kHead;
  const glm::vec2 size{std::max(image.x, out.font().width(heading) * kHead) + 2 * kPad, head_h + 4 + image.y + 2 * kPad};
  const bool right = corner == Corner::TopRight || corner == Corner::BottomRight;
  // x of a point `dx` pixels right of the panel's left edge, counted from the corner.
  auto x_of = [&](float dx) { return right ? at.x + size.x - dx : at.x + dx; };
  out.screen_rect({x_of(0), at.y}, size, {.colour = kPanel, .corner = corner});
  out.screen({x_of(kPad), at.y + kPad}, heading, {.em = kHead, .colour = kDim, .corner = corner});
  const glm::vec2 top_left{kPad, at.y + kPad + head_h + 4};
  out.screen_image({x_of(top_left.x), top_left.y}, image, {.corner = corner}, picture.width, picture.height, picture.rgba);
  for (const scene::Detection& d : boxes) {
    if (!std::isfinite(d.x0) || !std::isfinite(d.y0) || !std::isfinite(d.x1) || !std::isfinite(d.y1)) continue;
    const float x0 = std::clamp(d.x0, 0.0f, 1.0f) * image.x, x1 = std::clamp(d.x1, 0.0f, 1.0f) * image.x;
    const float y0 = std::clamp(d.y0, 0.0f, 1.0f) * image.y, y1 = std::clamp(d.y1, 0.0f, 1.0f) * image.y;
    if (x1 - x0 < 1 || y1 - y0 < 1) continue;
    const float t = 2;
    const TextStyle box{.colour = kBox, .corner = corner};
    out.screen_rect({x_of(top_left.x + x0), top_left.y + y0}, {x1 - x0, t}, box);
    out.screen_rect({x_of(top_left.x + x0), top_left.y + y1 - t}, {x1 - x0, t}, box);
    out.screen_rect({x_of(top_left.x + x0), top_left.y + y0}, {t, y1 - y0}, box);
    out.screen_rect({x_of(top_left.x + x1 - t), top_left.y + y0}, {t, y1 - y0}, box);
    // Landmarks (eyes, nose, mouth corners): small squares.
    for (const auto& pt : d.points) {
      if (!std::isfinite(pt[0]) || !std::isfinite(pt[1])) continue;
      const float px = std::clamp(pt[0], 0.0f, 1.0f) * image.x, py = std::clamp(pt[1], 0.0f, 1.0f) * image.y;
      out.screen_rect({x_of(top_left.x + px - 2), top_left.y + py - 2}, {4, 4}, {.colour = kPoint, .corner = corner});
    }
    char score[16];
    std::snprintf(score, sizeof score, "%.0f%%", 100.0 * d.score);
    out.screen({x_of(top_left.x + x0 + 2), top_left.y + y0 + 2}, score, {.em = 12, .colour = kBox, .corner = corner});
  }
  return size;
}

// Fixed to the corners: title, prediction, legend, selection. Returns the pixel rectangles they cover.
std::vector<Rect> panels(TextBuilder& out, const model::Graph& graph, const scene::Layout& layout,
                         const scene::Activations& values, const AnnotationOptions& options, std::vector<ScreenArea>& areas) {
  std::vector<Rect> covered;
  const glm::vec2 vp = options.viewport;
  auto cover = [&](Corner corner, glm::vec2 at, glm::vec2 size) {
    areas.push_back({uint32_t(corner), at - 4.0f, size + 8.0f});
    const bool right = corner == Corner::TopRight || corner == Corner::BottomRight;
    const bool bottom = corner == Corner::BottomLeft || corner == Corner::BottomRight;
    const float x0 = right ? vp.x - at.x - size.x : at.x, y0 = bottom ? vp.y - at.y - size.y : at.y;
    covered.push_back({x0 - 4, y0 - 4, x0 + size.x + 4, y0 + size.y + 4});
  };

  // ---- title and notes (top left) ------------------------------------------------------------
  std::vector<Line> title{{options.words.title, 26, kText}};
  for (const std::string& n : options.words.notes) title.push_back({n, 16, kDim});
  for (const std::string& w : options.words.warnings) title.push_back({"warning: " + w, 16, kWarn});
  const glm::vec2 title_size = panel(out, {14, 14}, Corner::TopLeft, title);
  cover(Corner::TopLeft, {14, 14}, title_size);
  // Pictures: the longer side a third of the view's height (at most 300 px).
  const float picture_side = std::clamp(0.3f * vp.y, 64.0f, 300.0f);

  // What the run computed (A's run when the view draws a difference), for the prediction, the
  // detections and the pictures.
  const scene::Activations& run = options.run_a ? *options.run_a : values;

  // ---- detections (over the input picture) ---------------------------------------------------
  const auto detections = scene::detect(graph, run, options.words.class_names);

  // ---- the input in its true colours (under the title) ----------------------------------------
  if (options.words.picture) {
    const model::TensorId input = graph.find(options.words.picture->input);
    if (input != model::kNone && input < run.size()) {
      if (auto p = scene::picture_of(run[input], options.words.picture->mapping, uint32_t(picture_side))) {
        const std::string heading = std::string(options.run_b ? "Input A " : "Input ") +
                                    scene::shape_text(graph.tensors[input].shape.empty() ? run[input].shape : std::span<const int64_t>(graph.tensors[input].shape)) +
                                    (options.words.picture->mapping.bgr ? "  (shown as RGB)" : "");
        const glm::vec2 at{14, 14 + title_size.y + 10};
        std::span<const scene::Detection> boxes;
        if (detections) boxes = detections->boxes;
        cover(Corner::TopLeft, at, picture_panel(out, at, Corner::TopLeft, heading, *p, picture_side, boxes));
      }
    }
  }

  // ---- prediction (top right) -----------------------------------------------------------------
  float right_top = 14;  // the next free y on the right
  // A detector's score maps ([1, cells, 1]) are no class vector: its detections stand instead.
  const auto prediction = detections ? std::nullopt : scene::predict(graph, run, options.words.class_names, 5);
  if (prediction) {
    std::vector<Line> lines;
    std::string head = options.run_b ? "Prediction of A" : "Prediction";
    if (!options.words.class_list.empty()) head += " (" + options.words.class_list + ")";
    lines.push_back({head, 18, kDim});
    bool first = true;
    for (const scene::ClassScore& c : prediction->top) {
      char pct[32];
      std::snprintf(pct, sizeof pct, "%5.1f%%  ", 100.0 * c.probability);
      lines.push_back({std::string(pct) + c.name, first ? 30.f : 20.f, first ? kText : kDim});
      first = false;
    }
    if (options.run_b)
      if (const auto b = scene::predict(graph, *options.run_b, options.words.class_names, 1); b && !b->top.empty()) {
        char pct[32];
        std::snprintf(pct, sizeof pct, "%5.1f%%  ", 100.0 * b->top.front().probability);
        lines.push_back({"B: " + std::string(pct) + b->top.front().name, 22, kText});
      }
    lines.push_back({std::string(prediction->softmax ? "softmax of " : "") + scene::short_name(graph.tensors[prediction->output].name, 32), 14, kDim});
    const glm::vec2 size = panel(out, {14, right_top}, Corner::TopRight, lines);
    cover(Corner::TopRight, {14, right_top}, size);
    right_top += size.y + 10;
  } else if (detections) {
    // A detector: what it found, not an argmax over anchors.
    std::vector<Line> lines{{"Detections", 18, kDim}, {scene::summary(*detections), 30, kText}};
    for (size_t i = 0; i < detections->boxes.size() && i < 5; ++i) {
      const scene::Detection& d = detections->boxes[i];
      char line[96];
      std::snprintf(line, sizeof line, "%5.1f%%  %s", 100.0 * d.score, d.name.c_str());
      lines.push_back({line, 20, kDim});
    }
    lines.push_back({std::to_string(detections->candidates) + " candidates of " +
                         scene::short_name(graph.tensors[detections->output].name, 24) + " (" + detections->format + ")",
                     14, kDim});
    const glm::vec2 size = panel(out, {14, right_top}, Corner::TopRight, lines);
    cover(Corner::TopRight, {14, right_top}, size);
    right_top += size.y + 10;
  }

  // ---- several outputs in no known format: a table of their largest values ---------------------
  if (!prediction && !detections) {
    const auto table = scene::output_table(graph, run, 3, 12);
    if (!table.empty()) {
      std::vector<Line> lines{{"Outputs (no known format)", 20, kDim}};
      for (const scene::OutputRow& r : table) {
        std::string top;
        for (const auto& [index, value] : r.top) top += "  " + fixed(value) + " [" + std::to_string(index) + "]";
        lines.push_back({scene::short_name(r.name, 20) + "  " + r.shape, 22, kText});
        lines.push_back({"  top" + top, 18, kDim});
      }
      const glm::vec2 size = panel(out, {14, right_top}, Corner::TopRight, lines);
      cover(Corner::TopRight, {14, right_top}, size);
      right_top += size.y + 10;
    }
  }

  // ---- an image output (style transfer, super-resolution) in its true colours ------------------
  if (const auto id = scene::image_output(graph, run); id && !detections) {
    // In the input's channel order (a model fed BGR gives BGR).
    const scene::PictureMapping mapping{.bgr = options.words.picture && options.words.picture->mapping.bgr, .from_values = true};
    if (auto p = scene::picture_of(run[*id], mapping, uint32_t(std::max(picture_side, 256.0f)))) {
      const std::string heading = std::string(options.run_b ? "Output of A " : "Output ") + scene::short_name(graph.tensors[*id].name, 24) + "  " + scene::shape_text(run[*id].shape);
      const glm::vec2 size = picture_panel(out, {14, right_top}, Corner::TopRight, heading, *p, std::max(picture_side, 256.0f), {});
      cover(Corner::TopRight, {14, right_top}, size);
      right_top += size.y + 10;
    }
  }

  // ---- legend (bottom left) -------------------------------------------------------------------
  model::TensorId focus = options.focus.value_or(prediction ? prediction->output : model::kNone);
  if (focus == model::kNone && !layout.blocks().empty()) focus = layout.blocks().back().tensor;
  if (focus < values.size() && !values[focus].data.empty()) {
    const scene::TensorStats st = scene::stats_of(values[focus].data);
    const float range = std::max(std::abs(st.min), std::abs(st.max));
    const model::Tensor& t = graph.tensors[focus];
    const std::string op = t.producer != model::kNone ? graph.nodes[t.producer].op_type : "Input";
    char zeros[32];
    std::snprintf(zeros, sizeof zeros, "%.0f%%", 100.0 * st.zero_fraction);
    std::vector<Line> lines{
        {"Colour: value / max |value| of each tensor", 15, kDim},
        {"", 22, kText},  // the colour bar
        {"", 14, kDim},  // the bar's scale
        {op + "  " + scene::short_name(t.name, 32) + "  " + scene::shape_text(values[focus].shape.empty() ? std::span<const int64_t>(t.shape) : values[focus].shape), 17, kText},
        {"min " + fixed(st.min) + "   max " + fixed(st.max) + "   mean " + fixed(st.mean) + "   zeros " + zeros, 15,
         kText},
    };
    const glm::vec2 s = panel(out, {14, 14}, Corner::BottomLeft, lines, 300);
    cover(Corner::BottomLeft, {14, 14}, s);
    // The bar on the second line (from the bottom: three lines of 14..17 em below it).
    const float lh = out.font().line_height();
    const float bar_top = 14 + s.y - 10 - lh * 15 - 2;
    out.screen_rect({24, bar_top}, {s.x - 20, 22 * lh - 6}, {.corner = Corner::BottomLeft}, Fill::ColourMap);
    // The scale under the bar: -range at its left end, 0 in the middle, +range at its right end.
    const float scale_top = bar_top - 22 * lh + 4;
    const std::string ends[3] = {"-" + fixed(range), "0", "+" + fixed(range)};
    for (int i = 0; i < 3; ++i) {
      const float w = out.font().width(ends[i]) * 14;
      const float x = 24 + float(i) * 0.5f * (s.x - 20) - (i == 0 ? 0.0f : i == 1 ? 0.5f * w : w);
      out.screen({x, scale_top}, ends[i], {.em = 14, .colour = kDim, .corner = Corner::BottomLeft});
    }
  }

  // ---- selection (bottom right) ---------------------------------------------------------------
  if (options.selection) {
    const SelectionText& sel = *options.selection;
    std::string index = "[";
    for (size_t i = 0; i < sel.index.size(); ++i) index += (i ? ", " : "") + std::to_string(sel.index[i]);
    index += "]";
    std::vector<Line> lines{{"Selected", 15, kDim},
                            {scene::short_name(sel.tensor, 40), 20, kText},
                            {(sel.op.empty() ? "input or weight" : sel.op) + "  index " + index, 16, kText},
                            {"value " + fixed(sel.value, 4), 20, kText}};
    if (!sel.fed_by.empty()) {
      std::string fed = "fed by ";
      for (size_t i = 0; i < sel.fed_by.size() && i < 3; ++i) fed += (i ? ", " : "") + scene::short_name(sel.fed_by[i], 20);
      lines.push_back({fed, 15, kDim});
    }
    cover(Corner::BottomRight, {14, 14}, panel(out, {14, 14}, Corner::BottomRight, lines));
  }
  return covered;
}

}  // namespace

void compose_menu(TextBuilder& out, const MenuState& m) {
  const FilterMenu menu{m.ops.size()};
  const glm::vec4 plate{0.05f, 0.07f, 0.16f, 1.0f}, title{1.0f, 0.85f, 0.2f, 1}, off{0.5f, 0.5f, 0.55f, 1};
  out.screen_rect({0, 0}, menu.size(), {.colour = plate, .menu = true});
  constexpr float kEm = 19;
  auto row = [&](size_t i, const std::string& text, glm::vec4 colour) {
    out.screen({10, menu.row_top(i) + 0.5f * (FilterMenu::kLine - kEm * out.font().line_height())}, text,
               {.em = kEm, .colour = colour, .menu = true});
  };
  row(0, "Filters", title);
  for (size_t i = 0; i < m.ops.size(); ++i) {
    const bool shown = i < m.shown.size() && m.shown[i];
    row(i + 1, std::string(shown ? "[x] " : "[  ] ") + m.ops[i].first + "  " + std::to_string(m.ops[i].second),
        shown ? kText : off);
  }
  const size_t n = m.ops.size();
  row(n + 1, m.dim ? "outside: dimmed" : "outside: hidden", kText);
  row(n + 2, m.selected.empty() ? "isolate selected tensor" : "isolate " + scene::short_name(m.selected, 22),
      m.selected.empty() ? off : kText);
  row(n + 3, m.path ? "isolate its path (" + std::to_string(m.path) + " tensors)" : "isolate path that fed it",
      m.path ? kText : off);
  row(n + 4, m.isolated.empty() ? "reset filters" : "reset filters (" + std::to_string(m.isolated.size()) + " isolated)",
      kText);
}

namespace {

// The em of group labels and how far over their row's tallest block they stand, in metres.
float group_em(float size) { return 0.03f * size; }
float group_raise(float size) { return 0.1f * size; }
// Group labels in a row take at most this fraction of the distance between their centres (the
// rest keeps their plates apart), and shrink to fit it down to kGroupMinEm of group_em.
constexpr float kGroupFill = 0.85f, kGroupMinEm = 0.4f;

float network_size(const scene::Layout& layout) {
  const auto lo = layout.bounds_min(), hi = layout.bounds_max();
  return std::max({hi[0] - lo[0], hi[1] - lo[1], hi[2] - lo[2], 1e-3f});
}

}  // namespace

std::vector<glm::vec3> words_to_frame(const model::Graph& graph, const scene::Layout& layout) {
  const scene::Labels labels = scene::make_labels(graph, layout);
  if (labels.groups.empty()) return {};
  const float top = labels.groups.front().anchor[1];  // groups come row by row from the top
  if (std::all_of(labels.groups.begin(), labels.groups.end(), [&](const scene::GroupLabel& g) { return g.anchor[1] == top; }))
    return {};
  const float size = network_size(layout);
  const float y = top + group_raise(size) + 1.2f * group_em(size);
  std::vector<glm::vec3> points;
  for (const scene::GroupLabel& g : labels.groups)
    if (g.anchor[1] == top) points.push_back({g.anchor[0], y, g.anchor[2]});
  return points;
}

std::optional<PictureBillboard> picture_billboard(const model::Graph& graph, const scene::Layout& layout,
                                                  const scene::Activations& values, const ViewWords& words) {
  if (!words.picture) return std::nullopt;
  const model::TensorId input = graph.find(words.picture->input);
  const scene::Block* b = input != model::kNone ? layout.block(input) : nullptr;
  if (!b || input >= values.size()) return std::nullopt;
  const auto shape = scene::image_shape(values[input].shape);
  if (!shape) return std::nullopt;
  PictureBillboard p;
  p.aspect = float(shape->width) / float(std::max<int64_t>(shape->height, 1));
  // Its height: twice the input's block, within 4..8% of the network's size (on screen at most
  // 160 px tall however near, annotate()).
  const float size = network_size(layout);
  p.em = std::clamp(2 * (b->max[1] - b->min[1]), 0.04f * size, 0.08f * size);
  p.centre = {b->min[0] - 0.7f * p.em * std::max(p.aspect, 1.0f), 0.5f * (b->min[1] + b->max[1]), 0.5f * (b->min[2] + b->max[2])};
  return p;
}

std::vector<glm::vec3> picture_to_frame(const PictureBillboard& picture) {
  const float r = 0.5f * picture.em * std::sqrt(picture.aspect * picture.aspect + 1.0f);
  std::vector<glm::vec3> points;
  add_corners(points, picture.centre - glm::vec3(r), picture.centre + glm::vec3(r));
  return points;
}

std::vector<ScreenArea> annotate(TextBuilder& out, const model::Graph& graph, const scene::Layout& layout,
                                 const scene::Activations& values, const AnnotationOptions& options) {
  const scene::Labels labels = scene::make_labels(graph, layout);
  const float size = network_size(layout);
  // Panels first (labels keep clear of them), drawn last (over the labels).
  TextBuilder fixed_text(out.font());
  std::vector<Rect> covered;
  std::vector<ScreenArea> areas;
  if (options.panels) covered = panels(fixed_text, graph, layout, values, options, areas);

  // ---- world labels -------------------------------------------------------------------------
  std::vector<Pending> world;
  for (const scene::TensorLabel& l : labels.tensors) {
    const float em = std::clamp(0.06f * l.extent, 0.011f * size, 0.025f * size);
    TextStyle style{.em = em, .colour = kText, .min_px = l.importance == 0 ? 7.f : l.importance == 1 ? 10.f : 12.f,
                    .max_px = l.importance == 0 ? 26.f : 22.f, .centred = true, .above = true};
    // The shape as run (symbolic dimensions are known only then).
    const std::string shape = l.tensor < values.size() && !values[l.tensor].shape.empty()
                                  ? scene::shape_text(values[l.tensor].shape)
                                  : l.shape;
    world.push_back({glm::vec3(l.anchor[0], l.anchor[1] + 0.4f * em, l.anchor[2]), l.op + "\n" + l.name + "\n" + shape,
                     style, l.importance});
  }
  const size_t tensor_labels = world.size();
  // Group labels as large as group_em, but no larger than lets each name (on its plate) stand clear
  // of its neighbours in the row: a wrapped BERT has six encoder layers to a row, and at group_em
  // "encoder.layer.12" was 1.5 times as wide as its layer, so every other one was hidden. A name
  // too long to fit even at kGroupMinEm (BERT's 'tf_bert_for_question_answering', the few blocks
  // before its first encoder layer) gives way to its neighbours: they fit without it.
  const float em_max = group_em(size), em_min = kGroupMinEm * em_max;
  std::vector<float> widths;  // in em, with the plate's sides
  for (const scene::GroupLabel& g : labels.groups) widths.push_back(text_size(out.font(), g.name).x + 0.5f);
  auto fit_of = [&](size_t i, const std::vector<bool>& gives_way) {
    float gap = INFINITY;  // to the nearest group label of the same row that stands
    for (size_t j = 0; j < labels.groups.size(); ++j)
      if (j != i && !gives_way[j] && labels.groups[j].anchor[1] == labels.groups[i].anchor[1])
        gap = std::min(gap, std::abs(labels.groups[j].anchor[0] - labels.groups[i].anchor[0]));
    return kGroupFill * gap / widths[i];
  };
  std::vector<bool> gives_way(labels.groups.size(), false);
  for (size_t i = 0; i < labels.groups.size(); ++i) gives_way[i] = fit_of(i, std::vector<bool>(labels.groups.size(), false)) < em_min;
  for (size_t i = 0; i < labels.groups.size(); ++i) {
    const scene::GroupLabel& g = labels.groups[i];
    const float em = std::clamp(fit_of(i, gives_way), em_min, em_max);
    TextStyle style{.em = em, .colour = kGroup, .min_px = 8, .max_px = 34, .centred = true, .above = true};
    const int importance = gives_way[i] ? 1 : 0;
    // Above the tensor labels of the tallest block of its row.
    // Where the view crowds the row (seen at a slant), a label may stand a line higher.
    const glm::vec3 lift{0, (text_size(out.font(), g.name).y + 0.3f) * em, 0};
    world.push_back({glm::vec3(g.anchor[0], g.anchor[1] + group_raise(size), g.anchor[2]), g.name, style, importance, false, lift});
  }
  // The input in its true colours beside the network, before its first layer: a world billboard,
  // so that the headset (which draws no corner panels) shows it too.
  if (const auto billboard = picture_billboard(graph, layout, values, options.words)) {
    const model::TensorId input = graph.find(options.words.picture->input);
    const scene::Activations& run = options.run_a ? *options.run_a : values;
    if (auto p = scene::picture_of(run[input], options.words.picture->mapping, 160)) {
      const float aspect = billboard->aspect;
      out.world_image(billboard->centre, {-0.5f * aspect, -0.5f}, {aspect, 1.0f}, {.em = billboard->em, .min_px = 0, .max_px = 160},
                      p->width, p->height, p->rgba);
    }
  }
  if (options.view_projection) declutter(world, out.font(), *options.view_projection, options.viewport, covered);
  // The panels always fit: world labels take what glyphs are left, the most important first.
  const size_t budget = kMaxGlyphs - std::min<size_t>(kMaxGlyphs, out.glyphs().size() + fixed_text.glyphs().size());
  std::vector<size_t> order(world.size());
  std::iota(order.begin(), order.end(), size_t(0));
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return world[a].importance < world[b].importance; });
  std::vector<bool> keep(world.size(), false);
  size_t used = 0;
  for (const size_t i : order)
    if (!world[i].hidden && used + world[i].text.size() + 1 <= budget) {  // at most a glyph per character and the plate
      keep[i] = true;
      used += world[i].text.size() + 1;
    }
  TextBuilder world_text(out.font());
  for (size_t i = 0; i < world.size(); ++i) {  // in layout order
    if (!keep[i]) continue;
    const Pending& p = world[i];
    if (i < tensor_labels) {
      // The op in its own colour, standing on the name and shape.
      const size_t nl = p.text.find('\n');
      TextStyle op = p.style;
      op.colour = kOp;
      op.raise_em = 2 * out.font().line_height();
      const glm::vec2 size = text_size(out.font(), p.text);
      TextStyle plate = p.style;
      plate.colour = kPlate;
      world_text.world_rect(p.anchor, {-0.5f * size.x - 0.25f, -size.y - 0.1f}, {size.x + 0.5f, size.y + 0.3f}, plate);
      world_text.world(p.anchor, p.text.substr(0, nl), op);
      world_text.world(p.anchor, p.text.substr(nl + 1), p.style);
    } else {
      // A group's name on a plate too: lines of connections pass behind it (a long chain wrapped
      // into rows, crossed by what feeds every row).
      const glm::vec2 size = text_size(out.font(), p.text);
      TextStyle plate = p.style;
      plate.colour = kPlate;
      world_text.world_rect(p.anchor, {-0.5f * size.x - 0.25f, -size.y - 0.1f}, {size.x + 0.5f, size.y + 0.3f}, plate);
      world_text.world(p.anchor, p.text, p.style);
    }
  }
  out.append(world_text);

  out.append(fixed_text);
  return areas;
}

// SceneBuffers' WordsSink (declared in engine/scene_buffers.h): composes here so that the scene
// buffers need not know about labels.
void SceneBuffers::publish_words(const WordsContext& c) {
  AnnotationOptions o;
  o.words = c.words;
  if (o.words.complete) o.words.complete(c.graph, scene::class_count(c.graph, c.values), o.words);
  o.focus = c.focus;
  o.selection = c.selection;
  o.run_a = c.run_a;
  o.run_b = c.run_b;
  // Thinned for the starting view (the overview preset at 16:9).
  std::vector<glm::vec3> corners;
  for (const scene::Block& b : c.layout.blocks())
    for (int i = 0; i < 8; ++i)
      corners.push_back({(i & 1) ? b.max[0] : b.min[0], (i & 2) ? b.max[1] : b.min[1], (i & 4) ? b.max[2] : b.min[2]});
  for (const glm::vec3& p : words_to_frame(c.graph, c.layout)) corners.push_back(p);
  if (!corners.empty()) {
    const Camera camera = frame_points(CameraPreset::Overview, corners, 16.0f / 9.0f);
    o.view_projection = camera.projection(16.0f / 9.0f) * camera.view();
    o.viewport = {1600, 900};
  }
  TextBuilder text(Font::builtin());
  auto areas = annotate(text, c.graph, c.layout, c.values, o);
  const auto billboard = picture_billboard(c.graph, c.layout, c.values, o.words);
  std::vector<glm::vec3> picture = billboard ? picture_to_frame(*billboard) : std::vector<glm::vec3>();
  if (o.words.menu && c.menu && !c.menu->ops.empty()) compose_menu(text, *c.menu);
  text_.publish(text);
  std::lock_guard lock(areas_mutex_);
  screen_areas_ = std::move(areas);
  picture_points_ = std::move(picture);
}

}  // namespace nnxr::engine
