#include "engine/camera.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <vector>

#include <glm/gtc/matrix_transform.hpp>

namespace nnxr::engine {

std::optional<CameraPreset> parse_camera_preset(std::string_view name) {
  if (name == "overview") return CameraPreset::Overview;
  if (name == "front") return CameraPreset::Front;
  if (name == "side") return CameraPreset::Side;
  if (name == "top") return CameraPreset::Top;
  return std::nullopt;
}

std::string camera_preset_names() { return "overview, front, side, top"; }

glm::mat4 Camera::view() const { return glm::lookAtRH(eye, target, up); }

glm::mat4 Camera::projection(float aspect) const {
  glm::mat4 p = glm::perspectiveRH_ZO(fov_y, aspect, near, far);
  p[1][1] = -p[1][1];  // Vulkan clip space: Y down
  return p;
}

void add_corners(std::vector<glm::vec3>& out, glm::vec3 min, glm::vec3 max) {
  for (int i = 0; i < 8; ++i) out.push_back({(i & 1) ? max.x : min.x, (i & 2) ? max.y : min.y, (i & 4) ? max.z : min.z});
}

Camera frame_bounds(CameraPreset preset, glm::vec3 min, glm::vec3 max, float aspect, float fov_y) {
  std::vector<glm::vec3> corners;
  add_corners(corners, min, max);
  return frame_points(preset, corners, aspect, fov_y);
}

namespace {

// A view direction (from the target towards the eye) by azimuth from the depth axis towards +Z and
// elevation above the horizon, in degrees; `turned`: the image turned a quarter, so that the
// world's up runs to the right and depth down the image (for networks much taller than deep).
struct View {
  float azimuth = 0, elevation = 0;
  bool turned = false;
};

struct Fit {
  Camera camera;
  float width = 0, height = 0;  // fractions of the image the points span
  float area = 0;               // fraction of the image inside the points' convex hull
  float nearness = 0;           // the nearest point's depth over the target's (1: all at one depth)
};

// Twice the signed area of triangle o, a, b.
float cross2(glm::vec2 o, glm::vec2 a, glm::vec2 b) { return (a.x - o.x) * (b.y - o.y) - (a.y - o.y) * (b.x - o.x); }

// The area of the convex hull of `p` (monotone chain; sorts p).
float hull_area(std::vector<glm::vec2>& p) {
  std::sort(p.begin(), p.end(), [](glm::vec2 a, glm::vec2 b) { return a.x < b.x || (a.x == b.x && a.y < b.y); });
  p.erase(std::unique(p.begin(), p.end()), p.end());
  if (p.size() < 3) return 0;
  std::vector<glm::vec2> hull(2 * p.size());
  size_t k = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    while (k >= 2 && cross2(hull[k - 2], hull[k - 1], p[i]) <= 0) --k;
    hull[k++] = p[i];
  }
  for (size_t i = p.size() - 1, lower = k + 1; i-- > 0;) {
    while (k >= lower && cross2(hull[k - 2], hull[k - 1], p[i]) <= 0) --k;
    hull[k++] = p[i];
  }
  float twice = 0;
  for (size_t i = 0; i + 1 < k; ++i) twice += hull[i].x * hull[i + 1].y - hull[i + 1].x * hull[i].y;
  return std::abs(twice) / 2;
}

constexpr float kMargin = 0.92f;  // the points stay inside this fraction of the image, each axis
constexpr float kWide = 0.55f;    // a view must span this fraction of the width to be chosen
// The overview's own directions (seen from the side-front, the network's depth in view) are often
// held by the height of a tall first block, a little short of kWide. Before it turns towards the
// depth axis (where the first block hides every later one), it tries each view closer, the points
// inside kCloseMargin of the image (a margin of 1.5% each side: only empty image is cropped, no
// point leaves it), and takes it if the network then spans kCloseWide of the width.
constexpr float kCloseMargin = 0.97f;
constexpr float kCloseWide = 0.52f;

// The nearest camera looking along `view` that holds every point, found exactly from the planes
// of the frustum: horizontally the eye stands where the left and right planes both touch the
// points, vertically where the top and bottom planes do, at the farther of the two depths. The
// tighter axis then touches both its edges and the other is centred between its extremes.
// `clear` insets the rectangle framed into (an off-centre part of the image: in NDC [xl, xr] ×
// [yb, yt], centre and half-extent per axis); the margin shrinks it about its own centre, and the
// width and outline are measured against it. No insets: the whole image, as before.
// A view's unit vectors: right and up on the image, forward into it.
struct Axes {
  glm::vec3 right, up, forward;
};
Axes view_axes(View view) {
  const float az = glm::radians(view.azimuth), el = glm::radians(view.elevation);
  const glm::vec3 dir = glm::normalize(glm::vec3(-std::cos(el) * std::cos(az), std::sin(el), std::cos(el) * std::sin(az)));
  const glm::vec3 forward = -dir;
  glm::vec3 right = glm::normalize(glm::cross(forward, glm::vec3(0, 1, 0)));
  glm::vec3 up = glm::cross(right, forward);
  if (view.turned) {
    const glm::vec3 r = up;
    up = -right;
    right = r;
  }
  return {right, up, forward};
}

Fit fit_view(View view, std::span<const glm::vec3> points, float aspect, float fov_y, float margin = kMargin,
             FrameInsets clear = {}) {
  const auto [right, up, forward] = view_axes(view);
  const glm::vec3 dir = -forward;
  Fit fit;
  Camera& cam = fit.camera;
  cam.up = up;
  cam.fov_y = std::clamp(fov_y, 0.05f, 3.0f);
  const float tan_y = std::tan(cam.fov_y / 2) * margin;
  const float tan_x = tan_y * std::clamp(aspect, 1e-3f, 1e3f);
  if (points.empty()) {
    cam.target = glm::vec3(0);
    cam.eye = dir;
    return fit;
  }
  // The rectangle framed into, in units of the margin's NDC (x = NDC / margin): centre and half-extent.
  const float xl = -1 + 2 * std::clamp(clear.left, 0.0f, 0.45f), xr = 1 - 2 * std::clamp(clear.right, 0.0f, 0.45f);
  const float yb = -1 + 2 * std::clamp(clear.bottom, 0.0f, 0.45f), yt = 1 - 2 * std::clamp(clear.top, 0.0f, 0.45f);
  const float cx = 0.5f * (xl + xr) / margin, hx = 0.5f * (xr - xl), cy = 0.5f * (yb + yt) / margin, hy = 0.5f * (yt - yb);
  // Coordinates along right (a), up (b) and forward (c): a point is inside when
  // tx_lo (c - c_eye) <= a - a_eye <= tx_hi (c - c_eye), and as much vertically.
  const float tx_lo = tan_x * (cx - hx), tx_hi = tan_x * (cx + hx), ty_lo = tan_y * (cy - hy), ty_hi = tan_y * (cy + hy);
  float ux = -1e30f, vx = 1e30f, uy = -1e30f, vy = 1e30f, nearest = 1e30f, farthest = -1e30f;
  glm::vec3 lo(points[0]), hi(points[0]);
  for (const glm::vec3& p : points) {
    const float a = glm::dot(p, right), b = glm::dot(p, up), c = glm::dot(p, forward);
    ux = std::max(ux, a - tx_hi * c), vx = std::min(vx, a - tx_lo * c);
    uy = std::max(uy, b - ty_hi * c), vy = std::min(vy, b - ty_lo * c);
    nearest = std::min(nearest, c), farthest = std::max(farthest, c);
    lo = glm::min(lo, p), hi = glm::max(hi, p);
  }
  const float radius = std::max(0.5f * glm::length(hi - lo), 1e-3f);
  // Farther back keeps every point inside (a_eye - tx_hi c_eye >= ux and a_eye - tx_lo c_eye <= vx);
  // a little more keeps the nearest off the eye (a single point, or a plane seen edge-on, would
  // otherwise touch it). The eye then stands midway between the extremes the depth allows.
  const float c_eye = std::min({(vx - ux) / (tx_hi - tx_lo), (vy - uy) / (ty_hi - ty_lo), nearest - 0.05f * radius});
  cam.eye = right * (0.5f * (ux + vx + (tx_hi + tx_lo) * c_eye)) + up * (0.5f * (uy + vy + (ty_hi + ty_lo) * c_eye)) + forward * c_eye;
  cam.target = cam.eye + forward * std::max(0.5f * (nearest + farthest) - c_eye, 0.05f * radius);
  float x_lo = 1e30f, x_hi = -1e30f, y_lo = 1e30f, y_hi = -1e30f;
  std::vector<glm::vec2> projected;  // NDC
  projected.reserve(points.size());
  for (const glm::vec3& p : points) {
    const glm::vec3 v = p - cam.eye;
    const float depth = glm::dot(v, forward);
    const float x = glm::dot(v, right) / (depth * tan_x), y = glm::dot(v, up) / (depth * tan_y);
    x_lo = std::min(x_lo, x), x_hi = std::max(x_hi, x), y_lo = std::min(y_lo, y), y_hi = std::max(y_hi, y);
    projected.push_back({x, y});
  }
  // NDC spans 2 across; the margin keeps the points inside that fraction of it.
  // Measured against the rectangle framed into (the whole image: hx = hy = 1).
  fit.width = std::clamp(0.5f * (x_hi - x_lo) * margin / hx, 0.0f, 1.0f);
  fit.height = std::clamp(0.5f * (y_hi - y_lo) * margin / hy, 0.0f, 1.0f);
  // The outline only matters for a view wide enough to be chosen (and costs a sort).
  if (fit.width >= kCloseWide) fit.area = std::clamp(hull_area(projected) * margin * margin / (4 * hx * hy), 0.0f, 1.0f);
  fit.nearness = (nearest - c_eye) / std::max(glm::dot(cam.target - cam.eye, forward), 1e-6f);
  cam.near = std::max(0.5f * (nearest - c_eye), 1e-4f * radius);
  cam.far = 1.5f * (farthest - c_eye) + 0.1f * radius;
  return fit;
}

// Each preset's views in order of preference: its own, then turned about the vertical (the network
// seen more from its front or its side), then at another elevation, then (not the overview) with
// the image turned a quarter.
std::vector<View> preset_views(CameraPreset preset) {
  std::vector<View> views;
  auto add = [&](std::initializer_list<float> azimuths, std::initializer_list<float> elevations, bool turn) {
    for (const bool turned : {false, true})
      for (const float e : elevations)
        for (const float a : azimuths)
          if (!turned || turn) views.push_back({a, e, turned});
  };
  switch (preset) {
    // Above and to the side of the input end. Never turned: the desktop viewer's fly camera
    // starts from it and keeps the world's up. Last, nearly from above: a network far taller than it is deep and wide (UltraFace's strip of
    // 3,600 boxes) is foreshortened enough only from there.
    case CameraPreset::Overview:
      add({37, 50, 25, 62, 12, 72}, {22, 35, 12, 50, 65}, false);
      views.push_back({80, 72, false});
      views.push_back({84, 78, false});
      break;
    // Down the depth axis from a little above and to the side of the input, so that the blocks
    // behind the first show around it.
    case CameraPreset::Front: add({10, 0, 20, 35}, {10, 0, 20}, true); break;
    // Side and top differ by 40 degrees of elevation or more, so that square feature maps (as
    // tall as they are wide) do not give both the same silhouette: side from 20 degrees above
    // the horizon (tops of the blocks in view), top from 70 (their faces foreshortened). Both
    // turn towards the front for a long line of blocks, which they would see edge-on.
    case CameraPreset::Side: add({90, 70, 55, 35}, {20, 8}, true); break;
    case CameraPreset::Top:
      add({90, 70, 55, 35}, {70, 84, 60}, true);
      // Last, from above and behind the input, depth running across the turned image: a long line
      // of blocks shows their faces only when seen along it.
      views.push_back({0, 60, true});
      views.push_back({15, 55, true});
      break;
  }
  return views;
}

// The first of `views` in which the network spans kWide of the width and whose outline holds
// kArea of the image wins (a line across the image does not); else the one spanning kWide that
// shows the most of the blocks' faces; else the widest. `closer`: each view short of kWide is
// tried closer first (the overview's rule).
Camera choose_view(const std::vector<View>& views, std::span<const glm::vec3> points, float aspect, float fov_y, bool closer,
                   FrameInsets clear = {}) {
  constexpr float kArea = 0.25f;
  std::optional<Fit> wide, widest;
  // Blocks are planes across the depth axis: seen edge-on (from the side or above, and far off,
  // as a long line of blocks is) they show as little more than lines.
  auto seen = [](const Fit& f) { return f.area * (0.2f + std::abs(glm::normalize(f.camera.eye - f.camera.target).x)); };
  for (const View& v : views) {
    const Fit f = fit_view(v, points, aspect, fov_y, kMargin, clear);
    if (f.width >= kWide && f.area >= kArea) return f.camera;
    if (closer && f.width < kWide && f.width >= kCloseWide * kMargin / kCloseMargin) {
      const Fit close = fit_view(v, points, aspect, fov_y, kCloseMargin, clear);
      if (close.width >= kCloseWide && close.area >= kArea) return close.camera;
    }
    if (f.width >= kWide && (!wide || seen(f) > seen(*wide) * 1.05f)) wide = f;
    if (!widest || f.width > widest->width + 0.01f) widest = f;
  }
  return wide ? wide->camera : widest->camera;
}

// Marks in `keep` the vertices of the 2-D convex hull of `q` at the indices `order` (sorted by x,
// then y): the monotone chain.
void mark_hull(const std::vector<glm::vec2>& q, const std::vector<uint32_t>& order, std::vector<uint32_t>& hull,
               std::vector<bool>& keep) {
  if (order.empty()) return;
  hull.resize(2 * order.size() + 1);
  size_t k = 0;
  for (size_t i = 0; i < order.size(); ++i) {
    while (k >= 2 && cross2(q[hull[k - 2]], q[hull[k - 1]], q[order[i]]) <= 0) --k;
    hull[k++] = order[i];
  }
  for (size_t i = order.size() - 1, lower = k + 1; i-- > 0;) {
    while (k >= lower && cross2(q[hull[k - 2]], q[hull[k - 1]], q[order[i]]) <= 0) --k;
    hull[k++] = order[i];
  }
  for (size_t i = 0; i < k; ++i) keep[hull[i]] = true;
}

// Whether p lies strictly inside the quadrilateral of the points with the least x, least y,
// greatest x and greatest y (counter-clockwise): then it is no vertex of their hull.
bool inside_extremes(const std::array<glm::vec2, 4>& quad, glm::vec2 p) {
  for (size_t i = 0; i < 4; ++i)
    if (!(cross2(quad[i], quad[(i + 1) % 4], p) > 0)) return false;
  return true;
}

// The points that decide fit_view in each of the preset's views: its extremes across and up the
// image over depth (x = (a - a_eye) / (c - c_eye) and the eye's bounds are largest at a vertex of
// the 2-D hull of (c, a), likewise (c, b)), the nearest and farthest (the same hulls) and the
// bounding box; and, for the outline's area (the hull of the projected points, whose vertices are
// on the 3-D hull), the farthest point in each of 162 directions. Frames as the whole set does
// but for that area, which the 3-D hull's vertices missed between the directions can change a
// little (a large layout of many small blocks keeps a few hundred of its thousands of corners).
// The points inside the quadrilateral of a plane's four extremes are left out before the hull
// (Akl and Toussaint's test).
std::vector<glm::vec3> deciding_points(CameraPreset preset, std::span<const glm::vec3> points) {
  std::vector<bool> keep(points.size(), false);
  std::vector<glm::vec2> qa(points.size()), qb(points.size());
  std::vector<uint32_t> order, hull;
  for (const View& v : preset_views(preset)) {
    const Axes axes = view_axes(v);
    size_t lo_c = 0, hi_c = 0, lo_a = 0, hi_a = 0, lo_b = 0, hi_b = 0;
    auto before = [](glm::vec2 p, glm::vec2 q) { return p.x < q.x || (p.x == q.x && p.y < q.y); };
    auto below = [](glm::vec2 p, glm::vec2 q) { return p.y < q.y || (p.y == q.y && p.x > q.x); };
    for (size_t i = 0; i < points.size(); ++i) {
      const float c = glm::dot(points[i], axes.forward);
      qa[i] = {c, glm::dot(points[i], axes.right)}, qb[i] = {c, glm::dot(points[i], axes.up)};
      if (before(qa[i], qa[lo_c])) lo_c = i;
      if (before(qa[hi_c], qa[i])) hi_c = i;
      if (below(qa[i], qa[lo_a])) lo_a = i;
      if (below(qa[hi_a], qa[i])) hi_a = i;
      if (below(qb[i], qb[lo_b])) lo_b = i;
      if (below(qb[hi_b], qb[i])) hi_b = i;
    }
    const std::array<glm::vec2, 4> quad_a{qa[lo_c], qa[lo_a], qa[hi_c], qa[hi_a]};
    const std::array<glm::vec2, 4> quad_b{qb[lo_c], qb[lo_b], qb[hi_c], qb[hi_b]};
    std::vector<uint32_t> in_a, in_b;
    for (uint32_t i = 0; i < points.size(); ++i) {
      if (!inside_extremes(quad_a, qa[i])) in_a.push_back(i);
      if (!inside_extremes(quad_b, qb[i])) in_b.push_back(i);
    }
    std::sort(in_a.begin(), in_a.end(), [&](uint32_t a, uint32_t b) { return before(qa[a], qa[b]); });
    std::sort(in_b.begin(), in_b.end(), [&](uint32_t a, uint32_t b) { return before(qb[a], qb[b]); });
    mark_hull(qa, in_a, hull, keep);
    mark_hull(qb, in_b, hull, keep);
  }
  // Directions over the sphere (a Fibonacci lattice) and the six axes.
  std::vector<glm::vec3> directions{{1, 0, 0}, {-1, 0, 0}, {0, 1, 0}, {0, -1, 0}, {0, 0, 1}, {0, 0, -1}};
  constexpr int kDirections = 156;
  for (int i = 0; i < kDirections; ++i) {
    const float y = 1 - 2 * (float(i) + 0.5f) / kDirections, r = std::sqrt(std::max(0.0f, 1 - y * y));
    const float phi = float(i) * 2.39996323f;
    directions.push_back({r * std::cos(phi), y, r * std::sin(phi)});
  }
  for (const glm::vec3& d : directions) {
    size_t best = 0;
    float most = -std::numeric_limits<float>::infinity();
    for (size_t i = 0; i < points.size(); ++i)
      if (const float v = glm::dot(points[i], d); v > most) most = v, best = i;
    keep[best] = true;
  }
  std::vector<glm::vec3> out;
  for (size_t i = 0; i < points.size(); ++i)
    if (keep[i]) out.push_back(points[i]);
  return out;
}

}  // namespace

Camera frame_points(CameraPreset preset, std::span<const glm::vec3> points, float aspect, float fov_y, FrameInsets clear) {
  return choose_view(preset_views(preset), points, aspect, fov_y, preset == CameraPreset::Overview, clear);
}

std::vector<glm::vec2> project_points(const Camera& camera, std::span<const glm::vec3> points, glm::vec2 viewport) {
  const glm::mat4 vp = camera.projection(viewport.x / std::max(viewport.y, 1.0f)) * camera.view();
  std::vector<glm::vec2> out;
  out.reserve(points.size());
  for (const glm::vec3& p : points) {
    const glm::vec4 c = vp * glm::vec4(p, 1.0f);
    if (!(c.w > 0)) {
      out.push_back(glm::vec2(std::numeric_limits<float>::infinity()));
      continue;
    }
    out.push_back({(c.x / c.w + 1) * 0.5f * viewport.x, (c.y / c.w + 1) * 0.5f * viewport.y});
  }
  return out;
}

Camera frame_clear(CameraPreset preset, std::span<const glm::vec3> points, glm::vec2 viewport, std::span<const ScreenRect> panels,
                   float fov_y, bool reduce) {
  constexpr size_t kDecidingFrom = 256;  // fewer points are framed as they are
  const float aspect = viewport.x / std::max(viewport.y, 1.0f);
  if (panels.empty() || points.empty() || !(viewport.x > 0 && viewport.y > 0)) return frame_points(preset, points, aspect, fov_y);
  // A panel is cleared by the side it stands against, horizontally (1) or vertically (2), 0: not
  // yet. A couple of pixels more than the panel keeps the blocks' edges off its border.
  constexpr float kPad = 2;
  auto insets_of = [&](const std::vector<uint8_t>& side) {
    FrameInsets f;
    for (size_t i = 0; i < panels.size(); ++i) {
      const ScreenRect& r = panels[i];
      const glm::vec2 centre = 0.5f * (r.min + r.max);
      if (side[i] == 1) {
        if (centre.x < 0.5f * viewport.x) f.left = std::max(f.left, (r.max.x + kPad) / viewport.x);
        else f.right = std::max(f.right, (viewport.x - r.min.x + kPad) / viewport.x);
      } else if (side[i] == 2) {
        if (centre.y < 0.5f * viewport.y) f.top = std::max(f.top, (r.max.y + kPad) / viewport.y);
        else f.bottom = std::max(f.bottom, (viewport.y - r.min.y + kPad) / viewport.y);
      }
    }
    return f;
  };
  struct Result {
    Camera camera;
    FrameInsets insets;
    size_t reached = 0;  // panels some point lands in
    float size = 0;      // the area of the points' projected bounds, pixels
    bool wide = false;   // they span half the image's width or more
    std::optional<size_t> open;  // the first panel reached that `side` does not clear yet
  };
  std::vector<uint8_t> side(panels.size(), 0);
  // Once the whole image's framing reaches a panel, framed again from the points that decide it (a
  // large layout: a few hundred of its thousands of corners); every point is still checked
  // against the panels.
  std::vector<glm::vec3> deciding;
  std::span<const glm::vec3> framed = points;
  auto narrow_points = [&] {
    if (reduce && points.size() > kDecidingFrom && deciding.empty()) {
      deciding = deciding_points(preset, points);
      framed = deciding;
    }
  };
  auto evaluate = [&](FrameInsets insets) {
    Result r{frame_points(preset, framed, aspect, fov_y, insets), insets};
    const std::vector<glm::vec2> px = project_points(r.camera, points, viewport);
    glm::vec2 lo(std::numeric_limits<float>::infinity()), hi(-std::numeric_limits<float>::infinity());
    for (const glm::vec2& p : px) lo = glm::min(lo, p), hi = glm::max(hi, p);
    r.size = std::isfinite(lo.x) && std::isfinite(hi.x) ? (hi.x - lo.x) * (hi.y - lo.y) : 0.0f;
    r.wide = std::isfinite(lo.x) && std::isfinite(hi.x) && hi.x - lo.x >= 0.5f * viewport.x;
    for (size_t i = 0; i < panels.size(); ++i)
      if (std::any_of(px.begin(), px.end(), [&](glm::vec2 p) { return panels[i].contains(p); })) {
        ++r.reached;
        if (!r.open && side[i] == 0) r.open = i;
      }
    return r;
  };
  auto same_view = [](const Camera& a, const Camera& b) {
    return glm::dot(glm::normalize(a.target - a.eye), glm::normalize(b.target - b.eye)) > 0.9999f;
  };
  // How far off the depth axis (X) a camera looks, radians.
  auto off_axis = [](const Camera& c) { return std::acos(std::min(std::abs(glm::normalize(c.target - c.eye).x), 1.0f)); };
  // Fewest panels reached first; then a view no nearer the depth axis than the one the preset
  // takes for the whole image (a narrower part may fail the preset's width test and turn it, e.g.
  // SqueezeNet's overview down the depth axis, its later blocks hidden behind the first); then
  // spanning half the image's width (the presets' promise); then the largest.
  std::optional<Camera> whole;
  auto keeps = [&](const Result& r) { return off_axis(r.camera) >= off_axis(*whole) - 0.02f; };
  auto better = [&](const Result& a, const Result& b) {
    if (a.reached != b.reached) return a.reached < b.reached;
    if (keeps(a) != keeps(b)) return keeps(a);
    if (a.wide != b.wide) return a.wide;
    return a.size > b.size;
  };
  // Depth first over the choices, the panels taken as they are reached (at most 2^panels framings):
  // of each kind (keeps, wide), the largest framing that reaches the fewest panels.
  std::optional<Result> kinds[2][2];
  auto search = [&](auto&& self) -> void {
    const Result r = evaluate(insets_of(side));
    if (!whole) whole = r.camera;
    if (!r.open || r.reached == 0) {
      std::optional<Result>& best = kinds[keeps(r)][r.wide];
      if (!best || r.reached < best->reached || (r.reached == best->reached && r.size > best->size)) best = r;
      return;
    }
    narrow_points();
    for (const uint8_t s : {uint8_t(1), uint8_t(2)}) {
      side[r.open.value()] = s;
      self(self);
    }
    side[r.open.value()] = 0;
  };
  search(search);
  // A side kept clear across a whole panel may be more than the points need (the network's
  // outline need not reach that panel's corner): each inset is narrowed while no panel is reached
  // and the points show larger from the same direction (halving the interval a few times), for
  // the best of them (narrowing only makes it larger: wide it may become, its view it keeps).
  auto narrow = [&](Result best) {
    if (best.reached == 0)
      for (int pass = 0; pass < 2; ++pass)
        for (float FrameInsets::*field : {&FrameInsets::left, &FrameInsets::right, &FrameInsets::top, &FrameInsets::bottom}) {
          float lo = 0, hi = best.insets.*field;
          for (int step = 0; step < 6 && hi - lo > 1e-3f; ++step) {
            const float mid = 0.5f * (lo + hi);
            FrameInsets insets = best.insets;
            insets.*field = mid;
            const Result r = evaluate(insets);
            if (r.reached == 0 && r.size >= best.size && same_view(r.camera, best.camera)) best = r, hi = mid;
            else lo = mid;
          }
        }
    return best;
  };
  std::optional<Result> best;
  for (auto& by_width : kinds)
    for (const std::optional<Result>& c : by_width)
      if (c && (!best || better(*c, *best))) best = c;
  best = narrow(*best);
  return best->camera;
}

Camera frame_level(std::span<const glm::vec3> points, float aspect, float fov_y) {
  // Level first: the overview's directions about the vertical in its order, then from the side
  // (a long line of blocks seen across) and last down the depth axis. Then, for a network that
  // no level view frames (far taller than deep: UltraFace's strip), the overview's own views,
  // tilted. A view must also keep its nearest block at kNear of the target's depth or more: a
  // headset's wide field seeing a deep network obliquely from close by would put its near end
  // in the face (the default model from 37 degrees: 7%). The outline may be smaller than the
  // desktop's (a square field of 90 degrees holds a long network seen across in a band).
  constexpr float kArea = 0.15f, kNear = 0.45f;
  std::vector<View> views;
  for (const float a : {37.0f, 50.0f, 25.0f, 62.0f, 12.0f, 72.0f, 85.0f, 0.0f}) views.push_back({a, 0, false});
  for (const View& v : preset_views(CameraPreset::Overview)) views.push_back(v);
  std::optional<Fit> best, widest;
  for (const View& v : views) {
    for (const float margin : {kMargin, kCloseMargin}) {
      const Fit f = fit_view(v, points, aspect, fov_y, margin);
      const bool wide = margin == kMargin ? f.width >= kWide : f.width >= kCloseWide;
      if (wide && f.area >= kArea && f.nearness >= kNear) return f.camera;
      // Else the widest spanning kWide with the nearest block farthest off, else the widest.
      if (wide && (!best || f.nearness > best->nearness + 0.02f)) best = f;
      if (!widest || f.width > widest->width + 0.01f) widest = f;
    }
  }
  return best ? best->camera : widest->camera;
}

}  // namespace nnxr::engine
