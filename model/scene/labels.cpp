#include "model/scene/labels.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <numeric>

namespace nnxr::scene {
namespace {

bool is_number(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); });
}

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  size_t start = 0;
  for (;;) {
    const size_t end = s.find(sep, start);
    const std::string_view part = s.substr(start, end == std::string_view::npos ? end : end - start);
    if (!part.empty()) out.push_back(part);
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  return out;
}

int importance_of(const model::Graph& graph, const model::Tensor& t, model::TensorId id) {
  if (t.kind == model::TensorKind::Input) return 0;
  if (std::find(graph.outputs.begin(), graph.outputs.end(), id) != graph.outputs.end()) return 0;
  if (t.producer == model::kNone) return 2;
  static const char* const kMajor[] = {"Conv", "ConvTranspose", "Gemm", "MatMul", "Concat", "LSTM", "GRU", "RNN",
                                       "Attention", "Softmax", "GlobalAveragePool", "MaxPool", "AveragePool"};
  const std::string& op = graph.nodes[t.producer].op_type;
  return std::any_of(std::begin(kMajor), std::end(kMajor), [&](const char* m) { return op == m; }) ? 1 : 2;
}

}  // namespace

std::string shape_text(std::span<const int64_t> shape) {
  size_t first = 0;
  while (first + 1 < shape.size() && shape[first] == 1) ++first;
  std::string s;
  for (size_t i = first; i < shape.size(); ++i) s += (i > first ? "x" : "") + std::to_string(shape[i]);
  return s.empty() ? "scalar" : s;
}

std::string short_name(std::string_view name, size_t max_chars) {
  std::string_view s = name;
  constexpr std::string_view kSuffix = "_output_0";
  if (s.size() > kSuffix.size() && s.substr(s.size() - kSuffix.size()) == kSuffix) s.remove_suffix(kSuffix.size());
  // Exported paths repeat themselves ("/features/features.3/Relu"): keep the last two components.
  const auto parts = split(s, '/');
  std::string out;
  if (parts.size() >= 2) out = std::string(parts[parts.size() - 2]) + "/" + std::string(parts.back());
  else if (parts.size() == 1) out = std::string(parts[0]);
  else out = std::string(s);
  if (out.size() > max_chars && max_chars >= 5) {
    const size_t keep = max_chars - 2, head = keep / 2;
    out = out.substr(0, head) + ".." + out.substr(out.size() - (keep - head));
  }
  return out;
}

std::string group_of(std::string_view name) {
  const auto components = split(name, '/');
  std::string path;  // the component before the numbered one
  for (std::string_view raw : components) {
    // Keras and TensorFlow exports write a numbered layer as "layer_._2".
    std::string component(raw);
    for (size_t at; (at = component.find("_._")) != std::string::npos;) component.replace(at, 3, ".");
    const auto tokens = split(component, '.');
    for (size_t i = 1; i < tokens.size(); ++i) {
      if (!is_number(tokens[i])) continue;
      std::string head;
      for (size_t j = 0; j <= i; ++j) head += (j ? "." : "") + std::string(tokens[j]);
      // "/features/features.3": the component repeats the path before it.
      if (!path.empty() && head.rfind(path, 0) != 0) head = path + "." + head;
      return head;
    }
    path = component;
  }
  // "fire2/squeeze1x1": the first of several components.
  return components.size() >= 2 ? std::string(components[0]) : std::string();
}

Labels make_labels(const model::Graph& graph, const Layout& layout) {
  Labels out;
  // A layout wrapped into rows (a long chain, scene.h Layout) centres each row's blocks on the
  // row's height; an unwrapped one centres every block on Y = 0. A group is labelled over its
  // blocks in the row of its first block, above that row's tallest block.
  auto centre = [](const Block& b) { return 0.5f * (b.min[1] + b.max[1]); };
  const auto lo = layout.bounds_min(), hi = layout.bounds_max();
  const float tolerance = 1e-4f * std::max({hi[0] - lo[0], hi[1] - lo[1], hi[2] - lo[2], 1e-3f});
  std::map<float, float> row_top;  // row centre → its tallest block's top
  auto row_of = [&](const Block& b) {
    const float c = centre(b);
    auto it = row_top.lower_bound(c - tolerance);
    if (it == row_top.end() || it->first > c + tolerance) it = row_top.emplace(c, -INFINITY).first;
    return it;
  };
  struct Span {
    float row = 0;
    float x0 = INFINITY, x1 = -INFINITY, z0 = INFINITY, z1 = -INFINITY;
    int blocks = 0;
  };
  std::map<std::string, Span> groups;
  for (const Block& b : layout.blocks()) {
    const model::Tensor& t = graph.tensors[b.tensor];
    TensorLabel l;
    l.tensor = b.tensor;
    l.anchor = {0.5f * (b.min[0] + b.max[0]), b.max[1], 0.5f * (b.min[2] + b.max[2])};
    l.extent = std::max(b.max[1] - b.min[1], b.max[2] - b.min[2]);
    l.op = t.kind == model::TensorKind::Input ? "Input"
           : t.producer != model::kNone        ? graph.nodes[t.producer].op_type
                                               : "Constant";
    l.name = short_name(t.name);
    l.shape = shape_text(t.shape);
    l.importance = importance_of(graph, t, b.tensor);
    out.tensors.push_back(std::move(l));
    const auto row = row_of(b);
    row->second = std::max(row->second, b.max[1]);
    const std::string g = group_of(t.producer != model::kNone && !graph.nodes[t.producer].name.empty()
                                       ? graph.nodes[t.producer].name
                                       : t.name);
    if (g.empty()) continue;
    auto [it, fresh] = groups.try_emplace(g);
    Span& s = it->second;
    if (fresh) s.row = row->first;
    else if (row->first != s.row) continue;  // the group goes on in a later row
    s.x0 = std::min(s.x0, b.min[0]);
    s.x1 = std::max(s.x1, b.max[0]);
    s.z0 = std::min(s.z0, b.min[2]);
    s.z1 = std::max(s.z1, b.max[2]);
    ++s.blocks;
  }
  int multi = 0;
  for (const auto& [name, s] : groups) multi += s.blocks >= 2;
  if (multi >= 2)
    for (const auto& [name, s] : groups) {
      if (s.blocks < 2) continue;
      out.groups.push_back({name, {0.5f * (s.x0 + s.x1), row_top[s.row], 0.5f * (s.z0 + s.z1)}, s.x1 - s.x0, s.blocks});
    }
  // Rows from the top, each from its start.
  std::sort(out.groups.begin(), out.groups.end(), [](const GroupLabel& a, const GroupLabel& b) {
    return a.anchor[1] != b.anchor[1] ? a.anchor[1] > b.anchor[1] : a.anchor[0] < b.anchor[0];
  });
  return out;
}

TensorStats stats_of(std::span<const float> v) {
  TensorStats s;
  s.count = int64_t(v.size());
  if (v.empty()) return s;
  double sum = 0;
  int64_t zeros = 0, finite = 0;
  s.min = INFINITY;
  s.max = -INFINITY;
  for (float x : v) {
    if (!std::isfinite(x)) continue;
    ++finite;
    s.min = std::min(s.min, x);
    s.max = std::max(s.max, x);
    sum += x;
    zeros += x == 0.0f;
  }
  if (finite == 0) s.min = s.max = 0;
  s.mean = finite ? float(sum / double(finite)) : 0.0f;
  s.zero_fraction = float(double(zeros) / double(v.size()));
  return s;
}

namespace {

std::optional<model::TensorId> score_output(const model::Graph& graph, const Activations& values) {
  for (model::TensorId id : graph.outputs) {
    if (id >= values.size() || values[id].data.empty()) continue;
    const auto shape = values[id].shape;
    int64_t big = 0, dims = 0;
    for (int64_t d : shape)
      if (d != 1) {
        big = d;
        ++dims;
      }
    if (dims == 1 && big >= 2 && big <= 100000 && shape.size() <= 4 && (shape.size() <= 2 || shape[1] == big))
      return id;
  }
  return std::nullopt;
}

}  // namespace

int64_t class_count(const model::Graph& graph, const Activations& values) {
  // A detector first: YuNet's per-cell score maps would pass for class vectors.
  if (const auto d = detect(graph, values, {}, 2.0f)) return d->classes;  // no box passes: the format alone
  const auto id = score_output(graph, values);
  return id ? int64_t(values[*id].data.size()) : 0;
}

std::optional<Prediction> predict(const model::Graph& graph, const Activations& values,
                                  std::span<const std::string> names, int k) {
  const auto id = score_output(graph, values);
  if (!id) return std::nullopt;
  const std::span<const float> v = values[*id].data;
  Prediction p;
  p.output = *id;
  p.classes = int64_t(v.size());
  // Probabilities already (softmax output) when they lie in [0, 1] and sum to 1; else logits.
  double sum = 0;
  bool unit = true;
  for (float x : v) {
    sum += x;
    unit = unit && x >= 0 && x <= 1;
  }
  std::vector<float> prob(v.begin(), v.end());
  if (!(unit && std::abs(sum - 1.0) < 1e-2)) {
    p.softmax = true;
    const float m = *std::max_element(prob.begin(), prob.end());
    double total = 0;
    for (float& x : prob) total += x = std::isfinite(x) ? std::exp(x - m) : 0.0f;
    for (float& x : prob) x = total > 0 ? float(x / total) : 0.0f;
  }
  std::vector<int64_t> order(prob.size());
  std::iota(order.begin(), order.end(), 0);
  const size_t top = std::min(order.size(), size_t(std::max(k, 1)));
  std::partial_sort(order.begin(), order.begin() + std::ptrdiff_t(top), order.end(),
                    [&](int64_t a, int64_t b) { return prob[size_t(a)] > prob[size_t(b)]; });
  const bool background = !names.empty() && int64_t(names.size()) + 1 == p.classes;
  for (size_t i = 0; i < top; ++i) {
    ClassScore c;
    c.index = order[i];
    c.probability = prob[size_t(c.index)];
    const int64_t n = background ? c.index - 1 : c.index;
    if (n >= 0 && n < int64_t(names.size())) c.name = names[size_t(n)];
    else c.name = background && n < 0 ? "background" : "class " + std::to_string(c.index);
    p.top.push_back(std::move(c));
  }
  return p;
}

// ---- pictures ------------------------------------------------------------------------------------

std::optional<ImageShape> image_shape(std::span<const int64_t> s) {
  if (s.size() != 3 && s.size() != 4) return std::nullopt;
  const size_t o = s.size() - 3;
  if (o == 1 && s[0] < 1) return std::nullopt;
  const bool nchw = s[o] >= 1 && s[o] <= 4 && !(s[o + 2] >= 1 && s[o + 2] <= 4 && s[o] > s[o + 2]);
  ImageShape r{nchw ? s[o] : s[o + 2], nchw ? s[o + 1] : s[o], nchw ? s[o + 2] : s[o + 1], nchw};
  if (r.channels != 1 && r.channels != 3 && r.channels != 4) return std::nullopt;
  if (r.height < 8 || r.width < 8 || r.height > 65535 || r.width > 65535) return std::nullopt;
  return r;
}

std::optional<Picture> picture_of(const TensorValue& value, const PictureMapping& mapping, uint32_t max_side) {
  const auto shape = image_shape(value.shape);
  if (!shape || max_side == 0) return std::nullopt;
  const int64_t c = shape->channels, h = shape->height, w = shape->width;
  if (value.data.size() < size_t(c * h * w)) return std::nullopt;
  const std::span<const float> v = value.data.first(size_t(c * h * w));
  auto at = [&](int64_t ch, int64_t y, int64_t x) {
    return v[size_t(shape->nchw ? (ch * h + y) * w + x : (y * w + x) * c + ch)];
  };
  // value → byte, per channel of the tensor.
  std::vector<float> mul(size_t(c), 255.0f), add(size_t(c), 0.0f);
  if (!mapping.from_values) {
    const float scale = mapping.scale != 0 ? mapping.scale : 1.0f;
    for (int64_t ch = 0; ch < c; ++ch) {
      const float m = size_t(ch) < mapping.mean.size() ? mapping.mean[size_t(ch)] : mapping.mean.empty() ? 0.0f : mapping.mean[0];
      const float d = size_t(ch) < mapping.std.size() ? mapping.std[size_t(ch)] : mapping.std.empty() ? 1.0f : mapping.std[0];
      mul[size_t(ch)] = d / scale;
      add[size_t(ch)] = m / scale;
    }
  } else {
    float lo = 0, hi = 0;
    bool any = false;
    for (float x : v)
      if (std::isfinite(x)) {
        lo = any ? std::min(lo, x) : x, hi = any ? std::max(hi, x) : x;
        any = true;
      }
    if (hi > 1.5f) std::fill(mul.begin(), mul.end(), 1.0f);
    else if (lo < -0.05f) std::fill(mul.begin(), mul.end(), 127.5f), std::fill(add.begin(), add.end(), 127.5f);
  }
  // The display channel of each of R, G, B.
  int64_t from[3] = {0, 0, 0};
  if (c >= 3) {
    const bool bgr = mapping.bgr;
    for (int i = 0; i < 3; ++i) from[i] = bgr ? 2 - i : i;
  }
  const int64_t side = std::max(h, w);
  const int64_t factor = (side + max_side - 1) / int64_t(max_side);  // integer box filter
  Picture p;
  p.shape = *shape;
  p.width = uint32_t(std::max<int64_t>(1, w / factor));
  p.height = uint32_t(std::max<int64_t>(1, h / factor));
  p.rgba.resize(size_t(p.width) * p.height);
  for (uint32_t py = 0; py < p.height; ++py)
    for (uint32_t px = 0; px < p.width; ++px) {
      uint32_t packed = 0xff000000u;
      for (int i = 0; i < 3; ++i) {
        const int64_t ch = from[i];
        double sum = 0;
        int64_t n = 0;
        for (int64_t y = int64_t(py) * factor; y < std::min(h, int64_t(py + 1) * factor); ++y)
          for (int64_t x = int64_t(px) * factor; x < std::min(w, int64_t(px + 1) * factor); ++x) {
            const float b = at(ch, y, x) * mul[size_t(ch)] + add[size_t(ch)];
            if (std::isfinite(b)) sum += std::clamp(b, 0.0f, 255.0f);
            ++n;
          }
        const auto byte = uint32_t(std::lround(n ? sum / double(n) : 0.0));
        packed |= std::min(byte, 255u) << (8 * i);
      }
      p.rgba[size_t(py) * p.width + px] = packed;
    }
  return p;
}

std::optional<model::TensorId> image_output(const model::Graph& graph, const Activations& values) {
  for (model::TensorId id : graph.outputs) {
    if (id >= values.size() || values[id].data.empty()) continue;
    const auto s = image_shape(values[id].shape);
    if (s && s->height >= 16 && s->width >= 16) return id;
  }
  return std::nullopt;
}

// ---- detections ----------------------------------------------------------------------------------

namespace {

float iou(const Detection& a, const Detection& b) {
  const float w = std::min(a.x1, b.x1) - std::max(a.x0, b.x0), h = std::min(a.y1, b.y1) - std::max(a.y0, b.y0);
  if (w <= 0 || h <= 0) return 0;
  const float inter = w * h;
  const float u = (a.x1 - a.x0) * (a.y1 - a.y0) + (b.x1 - b.x0) * (b.y1 - b.y0) - inter;
  return u > 0 ? inter / u : 0;
}

std::vector<Detection> suppress(std::vector<Detection> found, float overlap, size_t max_boxes) {
  std::stable_sort(found.begin(), found.end(), [](const Detection& a, const Detection& b) { return a.score > b.score; });
  std::vector<Detection> kept;
  for (const Detection& d : found) {
    if (kept.size() >= max_boxes) break;
    if (std::none_of(kept.begin(), kept.end(), [&](const Detection& k) { return k.label == d.label && iou(k, d) > overlap; }))
      kept.push_back(d);
  }
  return kept;
}

// [1, N, K] or [N, K]: N, else 0.
int64_t rows_of(std::span<const int64_t> s, int64_t k) {
  if (s.size() == 3 && s[0] == 1 && s[2] == k) return s[1];
  if (s.size() == 2 && s[1] == k) return s[0];
  return 0;
}
int64_t cols_of(std::span<const int64_t> s) { return s.size() == 3 && s[0] == 1 ? s[2] : s.size() == 2 ? s[1] : 0; }

// A stride's grid over the input: rows and columns of cells (the input's sides divided by the
// stride, rounded down or, for padded inputs, up) whose product is `cells`; nullopt when neither.
std::optional<std::pair<int64_t, int64_t>> grid_of(const ImageShape& in, int64_t stride, int64_t cells) {
  for (const bool up : {false, true}) {
    const int64_t rows = up ? (in.height + stride - 1) / stride : in.height / stride;
    const int64_t cols = up ? (in.width + stride - 1) / stride : in.width / stride;
    if (rows > 0 && cols > 0 && rows * cols == cells) return std::pair{rows, cols};
  }
  return std::nullopt;
}

bool name_has(const model::Graph& graph, model::TensorId id, std::string_view word) {
  std::string n = graph.tensors[id].name;
  std::transform(n.begin(), n.end(), n.begin(), [](unsigned char ch) { return char(std::tolower(ch)); });
  return n.find(word) != std::string::npos;
}

// YuNet (anchor-free, strides 8, 16 and 32): see detect().
std::optional<Detections> yunet(const model::Graph& graph, const Activations& values, const ImageShape& in,
                                float threshold, size_t max_boxes) {
  struct Heads {
    model::TensorId scores[2] = {model::kNone, model::kNone};  // class and objectness, either order
    model::TensorId boxes = model::kNone, points = model::kNone;
    int64_t rows = 0, cols = 0;
  };
  const int64_t strides[3] = {8, 16, 32};
  Heads heads[3];
  for (int s = 0; s < 3; ++s) {
    Heads& h = heads[s];
    std::vector<model::TensorId> ones, fours, tens;
    for (model::TensorId o : graph.outputs) {
      if (o >= values.size() || values[o].data.empty()) continue;
      const auto shape = values[o].shape;
      const int64_t k = cols_of(shape), n = rows_of(shape, k);
      if (n < 1) continue;
      const auto grid = grid_of(in, strides[s], n);
      if (!grid || (k != 1 && k != 4 && k != 10) || values[o].data.size() < size_t(n * k)) continue;
      h.rows = grid->first, h.cols = grid->second;
      (k == 1 ? ones : k == 4 ? fours : tens).push_back(o);
    }
    // Several candidates of a kind: the one whose name says which (cls/obj, bbox, kps).
    if (ones.size() > 2) {
      std::vector<model::TensorId> named;
      for (model::TensorId o : ones)
        if (name_has(graph, o, "cls") || name_has(graph, o, "obj")) named.push_back(o);
      ones = named;
    }
    auto pick = [&](std::vector<model::TensorId>& v, std::string_view word) {
      if (v.size() == 1) return v[0];
      for (model::TensorId o : v)
        if (name_has(graph, o, word)) return o;
      return model::kNone;
    };
    if (ones.size() != 2) return std::nullopt;
    h.scores[0] = ones[0], h.scores[1] = ones[1];
    h.boxes = pick(fours, "bbox");
    if (h.boxes == model::kNone) return std::nullopt;
    if (!tens.empty()) h.points = pick(tens, "kps");
  }
  Detections d;
  d.format = "yunet";
  d.output = heads[0].scores[0];
  d.classes = 1;
  d.noun = "face";
  std::vector<Detection> found;
  for (int s = 0; s < 3; ++s) {
    const Heads& h = heads[s];
    const float stride = float(strides[s]);
    const int64_t cells = h.rows * h.cols;
    d.candidates += cells;
    const std::span<const float> a = values[h.scores[0]].data, b = values[h.scores[1]].data,
                                 box = values[h.boxes].data;
    const std::span<const float> kps = h.points != model::kNone ? values[h.points].data : std::span<const float>();
    for (int64_t i = 0; i < cells; ++i) {
      const float score = std::sqrt(std::clamp(a[size_t(i)], 0.0f, 1.0f) * std::clamp(b[size_t(i)], 0.0f, 1.0f));
      if (!(score >= threshold)) continue;
      const float gx = float(i % h.cols), gy = float(i / h.cols);
      const float* r = box.data() + i * 4;
      const float cx = (gx + r[0]) * stride, cy = (gy + r[1]) * stride;
      const float bw = std::exp(std::min(r[2], 20.0f)) * stride, bh = std::exp(std::min(r[3], 20.0f)) * stride;
      if (!std::isfinite(cx) || !std::isfinite(cy) || !std::isfinite(bw) || !std::isfinite(bh)) continue;
      Detection det;
      det.x0 = (cx - 0.5f * bw) / float(in.width), det.x1 = (cx + 0.5f * bw) / float(in.width);
      det.y0 = (cy - 0.5f * bh) / float(in.height), det.y1 = (cy + 0.5f * bh) / float(in.height);
      det.score = score;
      if (!kps.empty())
        for (int p = 0; p < 5; ++p)
          det.points.push_back({(kps[size_t(i * 10 + 2 * p)] + gx) * stride / float(in.width),
                                (kps[size_t(i * 10 + 2 * p + 1)] + gy) * stride / float(in.height)});
      found.push_back(std::move(det));
    }
  }
  d.boxes = suppress(std::move(found), 0.3f, max_boxes);
  for (Detection& det : d.boxes) det.name = d.noun;
  return d;
}

}  // namespace

std::string summary(const Detections& d) {
  const size_t n = d.boxes.size();
  std::string noun = d.noun;
  if (n > 0 && std::all_of(d.boxes.begin(), d.boxes.end(), [&](const Detection& b) { return b.name == d.boxes[0].name; }) &&
      !d.boxes[0].name.starts_with("class "))
    noun = d.boxes[0].name;
  return (n ? std::to_string(n) : std::string("no")) + " " + noun + (n == 1 ? "" : "s");
}

std::optional<Detections> detect(const model::Graph& graph, const Activations& values,
                                 std::span<const std::string> names, std::optional<float> threshold, size_t max_boxes) {
  auto computed = [&](model::TensorId id) { return id < values.size() && !values[id].data.empty(); };
  const std::string file = [&] {
    std::string f = graph.source;
    std::transform(f.begin(), f.end(), f.begin(), [](unsigned char ch) { return char(std::tolower(ch)); });
    const size_t slash = f.find_last_of('/');
    return slash == std::string::npos ? f : f.substr(slash + 1);
  }();
  auto name_of = [&](int64_t label, int64_t classes, Detections& d) {
    if (int64_t(names.size()) == classes && label < classes) return names[size_t(label)];
    if (int64_t(names.size()) == classes + 1 && label + 1 < int64_t(names.size())) return names[size_t(label + 1)];
    return classes == 1 ? d.noun : "class " + std::to_string(label);
  };

  // The first input's image shape (as run), for the grid formats.
  std::optional<ImageShape> in;
  if (!graph.inputs.empty())
    in = image_shape(values.size() > graph.inputs[0] && !values[graph.inputs[0]].shape.empty()
                         ? values[graph.inputs[0]].shape
                         : std::span<const int64_t>(graph.tensors[graph.inputs[0]].shape));

  // YuNet before scores+boxes: its landmarks [1, N, 10] with its boxes [1, N, 4] would pass for
  // ten-class scores.
  if (in)
    if (auto d = yunet(graph, values, *in, threshold.value_or(0.6f), max_boxes)) return d;

  // Scores [1, N, C] with boxes [1, N, 4].
  for (model::TensorId s : graph.outputs) {
    if (!computed(s)) continue;
    const int64_t classes = cols_of(values[s].shape), n = rows_of(values[s].shape, classes);
    if (classes < 2 || classes == 4 || n < 1) continue;
    for (model::TensorId b : graph.outputs) {
      if (b == s || !computed(b) || rows_of(values[b].shape, 4) != n) continue;
      const std::span<const float> sv = values[s].data, bv = values[b].data;
      if (sv.size() < size_t(n * classes) || bv.size() < size_t(n * 4)) continue;
      Detections d;
      d.format = "scores+boxes";
      d.output = s;
      d.candidates = n;
      d.classes = classes - 1;
      d.noun = classes == 2 && file.find("face") != std::string::npos ? "face" : "object";
      // Probabilities when every row lies in [0, 1] and sums to 1.
      bool probabilities = true;
      for (int64_t i = 0; i < n && probabilities; ++i) {
        double sum = 0;
        for (int64_t k = 0; k < classes; ++k) {
          const float x = sv[size_t(i * classes + k)];
          probabilities = probabilities && x >= 0 && x <= 1;
          sum += x;
        }
        probabilities = probabilities && std::abs(sum - 1.0) < 1e-2;
      }
      const float t = threshold.value_or(0.7f);
      std::vector<Detection> found;
      std::vector<float> row(static_cast<size_t>(classes));
      for (int64_t i = 0; i < n; ++i) {
        for (int64_t k = 0; k < classes; ++k) row[size_t(k)] = sv[size_t(i * classes + k)];
        if (!probabilities) {
          const float m = *std::max_element(row.begin(), row.end());
          double total = 0;
          for (float& x : row) total += x = std::isfinite(x) ? std::exp(x - m) : 0.0f;
          for (float& x : row) x = total > 0 ? float(x / total) : 0.0f;
        }
        for (int64_t k = 1; k < classes; ++k) {
          if (!(row[size_t(k)] >= t)) continue;
          Detection det;
          det.x0 = bv[size_t(i * 4)], det.y0 = bv[size_t(i * 4 + 1)];
          det.x1 = bv[size_t(i * 4 + 2)], det.y1 = bv[size_t(i * 4 + 3)];
          if (!(det.x1 > det.x0 && det.y1 > det.y0)) continue;
          det.score = row[size_t(k)];
          det.label = k - 1;
          found.push_back(det);
        }
      }
      d.boxes = suppress(std::move(found), 0.3f, max_boxes);
      for (Detection& det : d.boxes) det.name = name_of(det.label, classes - 1, d);
      return d;
    }
  }

  // YOLOX: [1, N, 5 + C] over the grids of strides 8, 16 and 32 of the (first) input, each at
  // least one cell (an 8x8 digit with ten scores is no grid).
  if (!in || in->height < 32 || in->width < 32) return std::nullopt;
  int64_t cells = 0;
  for (int64_t stride : {8, 16, 32}) cells += (in->height / stride) * (in->width / stride);
  for (model::TensorId o : graph.outputs) {
    if (!computed(o)) continue;
    const int64_t k = cols_of(values[o].shape);
    if (k < 6 || rows_of(values[o].shape, k) != cells) continue;
    const std::span<const float> v = values[o].data;
    if (v.size() < size_t(cells * k)) continue;
    Detections d;
    d.format = "yolox";
    d.output = o;
    d.candidates = cells;
    d.classes = k - 5;
    d.noun = "object";
    const int64_t classes = k - 5;
    const float t = threshold.value_or(0.3f);
    std::vector<Detection> found;
    int64_t i = 0;
    for (int64_t stride : {8, 16, 32}) {
      const int64_t gh = in->height / stride, gw = in->width / stride;
      for (int64_t gy = 0; gy < gh; ++gy)
        for (int64_t gx = 0; gx < gw; ++gx, ++i) {
          const float* r = v.data() + i * k;
          int64_t best = 0;
          for (int64_t c = 1; c < classes; ++c)
            if (r[5 + c] > r[5 + best]) best = c;
          const float score = r[4] * r[5 + best];
          if (!(score >= t)) continue;
          const float cx = (r[0] + float(gx)) * float(stride), cy = (r[1] + float(gy)) * float(stride);
          const float bw = std::exp(std::min(r[2], 20.0f)) * float(stride), bh = std::exp(std::min(r[3], 20.0f)) * float(stride);
          Detection det;
          det.x0 = (cx - 0.5f * bw) / float(in->width), det.x1 = (cx + 0.5f * bw) / float(in->width);
          det.y0 = (cy - 0.5f * bh) / float(in->height), det.y1 = (cy + 0.5f * bh) / float(in->height);
          det.score = score;
          det.label = best;
          found.push_back(det);
        }
    }
    d.boxes = suppress(std::move(found), 0.45f, max_boxes);
    for (Detection& det : d.boxes) det.name = name_of(det.label, classes, d);
    return d;
  }
  return std::nullopt;
}

// ---- outputs no reading recognises ---------------------------------------------------------------

std::vector<OutputRow> output_table(const model::Graph& graph, const Activations& values, size_t top_k, size_t max_rows) {
  std::vector<OutputRow> rows;
  if (top_k == 0 || graph.outputs.size() < 2 || predict(graph, values, {}, 1) || image_output(graph, values) ||
      detect(graph, values, {}, 2.0f))
    return rows;
  for (model::TensorId id : graph.outputs) {
    if (rows.size() >= max_rows) break;
    if (id >= values.size() || values[id].data.empty()) continue;
    const std::span<const float> v = values[id].data;
    OutputRow row;
    row.tensor = id;
    row.name = graph.tensors[id].name;
    row.shape = shape_text(values[id].shape);
    // The top_k largest by a partial selection over the finite values.
    std::vector<std::pair<int64_t, float>> best;
    for (size_t i = 0; i < v.size(); ++i) {
      if (!std::isfinite(v[i])) continue;
      if (best.size() == top_k && !(v[i] > best.back().second)) continue;
      const auto at = std::upper_bound(best.begin(), best.end(), v[i], [](float x, const auto& e) { return x > e.second; });
      best.insert(at, {int64_t(i), v[i]});
      if (best.size() > top_k) best.pop_back();
    }
    row.top = std::move(best);
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace nnxr::scene
