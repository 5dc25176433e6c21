// Detection and sampling ops: NonMaxSuppression, RoiAlign, MaxRoiPool, GridSample (float32).
//
// NonMaxSuppression: per batch and class, the boxes scoring above score_threshold are taken in
// order of decreasing score (ties: lower index first); a box is dropped when its IoU with a box
// already taken exceeds iou_threshold; at most max_output_boxes_per_class are taken. Boxes are
// [y1, x1, y2, x2] corners in any order (center_point_box 0) or [xc, yc, w, h] (1).
// RoiAlign: average (or max) of bilinear samples on a sampling grid in each output bin; with
// coordinate_transformation_mode half_pixel the box is shifted by -0.5 pixel.
// MaxRoiPool: rois [num_rois, 5] = (batch, x1, y1, x2, y2), corners rounded after spatial_scale;
// each output bin is the max over its integer cells (0 for an empty bin).
// GridSample: X [N, C, H, W] sampled at grid [N, Ho, Wo, 2] (x, y in [-1, 1]) with bilinear,
// nearest or bicubic interpolation and zeros, border or reflection padding.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "model/runtime/kernel.h"
#include "model/runtime/kernels_more.h"

namespace nnxr::runtime {
namespace {

// ---- NonMaxSuppression -----------------------------------------------------------------------

struct Box {
  float y1, x1, y2, x2;
};

Box corners(const float* b, bool center) {
  if (center) {
    const float xc = b[0], yc = b[1], w = b[2], h = b[3];
    return {yc - h / 2, xc - w / 2, yc + h / 2, xc + w / 2};
  }
  return {std::min(b[0], b[2]), std::min(b[1], b[3]), std::max(b[0], b[2]), std::max(b[1], b[3])};
}

bool suppresses(const Box& a, const Box& b, float iou_threshold) {
  const float area_a = (a.y2 - a.y1) * (a.x2 - a.x1), area_b = (b.y2 - b.y1) * (b.x2 - b.x1);
  if (area_a <= 0 || area_b <= 0) return false;
  const float iy = std::max(0.f, std::min(a.y2, b.y2) - std::max(a.y1, b.y1));
  const float ix = std::max(0.f, std::min(a.x2, b.x2) - std::max(a.x1, b.x1));
  const float inter = iy * ix;
  const float uni = area_a + area_b - inter;
  if (inter <= 0 || uni <= 0) return false;
  return inter / uni > iou_threshold;
}

void nms(KernelContext& ctx, bool center) {
  ctx.expect_dtype(0, {DType::Float});
  ctx.expect_dtype(1, {DType::Float});
  const Value &boxes = ctx.in(0), &scores = ctx.in(1);
  ctx.expect_rank(0, 3);
  ctx.expect_rank(1, 3);
  const int64_t B = boxes.dims()[0], S = boxes.dims()[1], C = scores.dims()[1];
  if (boxes.dims()[2] != 4) ctx.fail("boxes " + ctx.input_name(0) + " has shape " + shape_str(boxes.shape()) + "; the last dim must be 4");
  if (scores.dims()[0] != B || scores.dims()[2] != S)
    ctx.fail("scores " + ctx.input_name(1) + " " + shape_str(scores.shape()) + " does not match boxes " + ctx.input_name(0) + " " + shape_str(boxes.shape()));
  int64_t max_out = 0;
  if (ctx.has_input(2) && ctx.in(2).elements() > 0) {
    const auto v = read_ints(ctx, 2);
    if (v.size() != 1) ctx.fail("max_output_boxes_per_class must hold one value");
    max_out = v[0];
  }
  float iou = 0, score_threshold = 0;
  bool has_score_threshold = false;
  if (ctx.has_input(3) && ctx.in(3).elements() > 0) iou = static_cast<float>(read_scalar(ctx, 3));
  if (ctx.has_input(4) && ctx.in(4).elements() > 0) {
    score_threshold = static_cast<float>(read_scalar(ctx, 4));
    has_score_threshold = true;
  }
  if (iou < 0 || iou > 1) ctx.fail("iou_threshold " + std::to_string(iou) + " is outside [0, 1]");
  std::vector<int64_t> selected;
  if (max_out > 0) {
    const float* pb = boxes.as<float>().data();
    const float* ps = scores.as<float>().data();
    std::vector<Box> bx(static_cast<size_t>(S));
    std::vector<int64_t> order;
    std::vector<Box> taken;
    for (int64_t b = 0; b < B; ++b) {
      for (int64_t i = 0; i < S; ++i) bx[static_cast<size_t>(i)] = corners(pb + (b * S + i) * 4, center);
      for (int64_t c = 0; c < C; ++c) {
        const float* sc = ps + (b * C + c) * S;
        order.clear();
        for (int64_t i = 0; i < S; ++i)
          if (!has_score_threshold || sc[i] > score_threshold) order.push_back(i);
        std::stable_sort(order.begin(), order.end(), [&](int64_t x, int64_t y) { return sc[x] > sc[y]; });
        taken.clear();
        for (int64_t i : order) {
          if (static_cast<int64_t>(taken.size()) >= max_out) break;
          const Box& cand = bx[static_cast<size_t>(i)];
          if (std::any_of(taken.begin(), taken.end(), [&](const Box& t) { return suppresses(t, cand, iou); })) continue;
          taken.push_back(cand);
          selected.insert(selected.end(), {b, c, i});
        }
      }
    }
  }
  Value& y = ctx.out(0);
  y.reset(DType::Int64, {static_cast<int64_t>(selected.size() / 3), 3});
  std::copy(selected.begin(), selected.end(), y.mutable_as<int64_t>().begin());
}

// ---- RoiAlign --------------------------------------------------------------------------------

struct RoiAttrs {
  bool max_mode = false, half_pixel = true;
  int64_t out_h = 1, out_w = 1, sampling = 0;
  float scale = 1;
};

// Bilinear sample of one H x W plane (0 outside [-1, H] x [-1, W]); for max mode the largest
// weighted corner instead of the sum.
float roi_sample(const float* plane, int64_t H, int64_t W, float y, float x, bool max_mode) {
  if (!(y >= -1.f && y <= static_cast<float>(H) && x >= -1.f && x <= static_cast<float>(W))) return 0.f;  // NaN too
  y = std::max(y, 0.f);
  x = std::max(x, 0.f);
  int64_t y0 = static_cast<int64_t>(y), x0 = static_cast<int64_t>(x), y1, x1;
  if (y0 >= H - 1) {
    y0 = y1 = H - 1;
    y = static_cast<float>(y0);
  } else {
    y1 = y0 + 1;
  }
  if (x0 >= W - 1) {
    x0 = x1 = W - 1;
    x = static_cast<float>(x0);
  } else {
    x1 = x0 + 1;
  }
  const float ly = y - static_cast<float>(y0), lx = x - static_cast<float>(x0), hy = 1 - ly, hx = 1 - lx;
  const float a = hy * hx * plane[y0 * W + x0], b = hy * lx * plane[y0 * W + x1], c = ly * hx * plane[y1 * W + x0], d = ly * lx * plane[y1 * W + x1];
  return max_mode ? std::max(std::max(a, b), std::max(c, d)) : a + b + c + d;
}

void roi_align(KernelContext& ctx, const RoiAttrs& at) {
  ctx.expect_dtype(0, {DType::Float});
  ctx.expect_dtype(1, {DType::Float});
  ctx.expect_dtype(2, {DType::Int64, DType::Int32});
  ctx.expect_rank(0, 4);
  ctx.expect_rank(1, 2);
  ctx.expect_rank(2, 1);
  const Value &x = ctx.in(0), &rois = ctx.in(1), &bi = ctx.in(2);
  const int64_t N = x.dims()[0], C = x.dims()[1], H = x.dims()[2], W = x.dims()[3], R = rois.dims()[0];
  if (rois.dims()[1] != 4) ctx.fail("rois " + ctx.input_name(1) + " has shape " + shape_str(rois.shape()) + ", expected [num_rois, 4]");
  if (bi.dims()[0] != R) ctx.fail("batch_indices " + ctx.input_name(2) + " has " + std::to_string(bi.dims()[0]) + " entries for " + std::to_string(R) + " rois");
  Value& y = ctx.out(0);
  y.reset(DType::Float, {R, C, at.out_h, at.out_w});
  if (y.elements() == 0) return;
  if (H == 0 || W == 0) {
    y.fill_zero();
    return;
  }
  const float* px = x.as<float>().data();
  const float* pr = rois.as<float>().data();
  float* py = y.mutable_as<float>().data();
  const float offset = at.half_pixel ? 0.5f : 0.f;
  for (int64_t r = 0; r < R; ++r) {
    const int64_t n = bi.dtype() == DType::Int64 ? bi.as<int64_t>()[static_cast<size_t>(r)] : bi.as<int32_t>()[static_cast<size_t>(r)];
    if (n < 0 || n >= N) ctx.fail("batch index " + std::to_string(n) + " of roi " + std::to_string(r) + " is outside [0, " + std::to_string(N) + ")");
    const float* box = pr + r * 4;
    const float sw = box[0] * at.scale - offset, sh = box[1] * at.scale - offset;
    const float ew = box[2] * at.scale - offset, eh = box[3] * at.scale - offset;
    float rw = ew - sw, rh = eh - sh;
    if (!at.half_pixel) {
      rw = std::max(rw, 1.f);
      rh = std::max(rh, 1.f);
    }
    if (!std::isfinite(rw) || !std::isfinite(rh)) ctx.fail("roi " + std::to_string(r) + " has non-finite coordinates");
    const float bh = rh / static_cast<float>(at.out_h), bw = rw / static_cast<float>(at.out_w);
    const float fgh = at.sampling > 0 ? static_cast<float>(at.sampling) : std::ceil(rh / static_cast<float>(at.out_h));
    const float fgw = at.sampling > 0 ? static_cast<float>(at.sampling) : std::ceil(rw / static_cast<float>(at.out_w));
    if (fgh > 4096 || fgw > 4096) ctx.fail("roi " + std::to_string(r) + " needs a sampling grid over 4096 points a side; set sampling_ratio");
    const auto gh = static_cast<int64_t>(std::max(fgh, 0.f)), gw = static_cast<int64_t>(std::max(fgw, 0.f));
    const int64_t count = std::max<int64_t>(gh * gw, 1);
    for (int64_t c = 0; c < C; ++c) {
      const float* plane = px + (n * C + c) * H * W;
      for (int64_t ph = 0; ph < at.out_h; ++ph)
        for (int64_t pw = 0; pw < at.out_w; ++pw) {
          float acc = 0;
          bool first = true;
          for (int64_t iy = 0; iy < gh; ++iy) {
            const float yy = sh + static_cast<float>(ph) * bh + (static_cast<float>(iy) + .5f) * bh / static_cast<float>(gh);
            for (int64_t ix = 0; ix < gw; ++ix) {
              const float xx = sw + static_cast<float>(pw) * bw + (static_cast<float>(ix) + .5f) * bw / static_cast<float>(gw);
              const float v = roi_sample(plane, H, W, yy, xx, at.max_mode);
              if (at.max_mode) acc = first ? v : std::max(acc, v);
              else acc += v;
              first = false;
            }
          }
          py[((r * C + c) * at.out_h + ph) * at.out_w + pw] = at.max_mode ? acc : acc / static_cast<float>(count);
        }
    }
  }
}

// ---- MaxRoiPool ------------------------------------------------------------------------------

void max_roi_pool(KernelContext& ctx, int64_t PH, int64_t PW, float scale) {
  ctx.expect_dtype(0, {DType::Float});
  ctx.expect_dtype(1, {DType::Float});
  ctx.expect_rank(0, 4);
  ctx.expect_rank(1, 2);
  const Value &x = ctx.in(0), &rois = ctx.in(1);
  const int64_t N = x.dims()[0], C = x.dims()[1], H = x.dims()[2], W = x.dims()[3], R = rois.dims()[0];
  if (rois.dims()[1] != 5) ctx.fail("rois " + ctx.input_name(1) + " has shape " + shape_str(rois.shape()) + ", expected [num_rois, 5]");
  Value& y = ctx.out(0);
  y.reset(DType::Float, {R, C, PH, PW});
  const float* px = x.as<float>().data();
  const float* pr = rois.as<float>().data();
  float* py = y.mutable_as<float>().data();
  // A coordinate rounded and clamped into [lo, hi] without an out-of-range cast.
  auto to_int = [](double v, int64_t lo, int64_t hi) { return std::isnan(v) ? lo : static_cast<int64_t>(std::clamp(v, static_cast<double>(lo), static_cast<double>(hi))); };
  for (int64_t r = 0; r < R; ++r) {
    const float* roi = pr + r * 5;
    if (!(roi[0] >= 0 && roi[0] < static_cast<float>(N))) ctx.fail("roi " + std::to_string(r) + " names batch " + std::to_string(roi[0]) + ", outside [0, " + std::to_string(N) + ")");
    const auto n = static_cast<int64_t>(roi[0]);
    constexpr int64_t kFar = int64_t{1} << 40;
    const int64_t x1 = to_int(std::round(double(roi[1]) * scale), -kFar, kFar), y1 = to_int(std::round(double(roi[2]) * scale), -kFar, kFar);
    const int64_t x2 = to_int(std::round(double(roi[3]) * scale), -kFar, kFar), y2 = to_int(std::round(double(roi[4]) * scale), -kFar, kFar);
    const double bh = static_cast<double>(std::max<int64_t>(y2 - y1 + 1, 1)) / static_cast<double>(PH);
    const double bw = static_cast<double>(std::max<int64_t>(x2 - x1 + 1, 1)) / static_cast<double>(PW);
    for (int64_t c = 0; c < C; ++c) {
      const float* plane = px + (n * C + c) * H * W;
      for (int64_t ph = 0; ph < PH; ++ph) {
        const int64_t hs = to_int(std::floor(static_cast<double>(ph) * bh) + static_cast<double>(y1), 0, H);
        const int64_t he = to_int(std::ceil(static_cast<double>(ph + 1) * bh) + static_cast<double>(y1), 0, H);
        for (int64_t pw = 0; pw < PW; ++pw) {
          const int64_t ws = to_int(std::floor(static_cast<double>(pw) * bw) + static_cast<double>(x1), 0, W);
          const int64_t we = to_int(std::ceil(static_cast<double>(pw + 1) * bw) + static_cast<double>(x1), 0, W);
          float m = -std::numeric_limits<float>::infinity();
          bool empty = true;
          for (int64_t h = hs; h < he; ++h)
            for (int64_t w = ws; w < we; ++w) {
              m = std::max(m, plane[h * W + w]);
              empty = false;
            }
          py[((r * C + c) * PH + ph) * PW + pw] = empty ? 0.f : m;
        }
      }
    }
  }
}

// ---- GridSample ------------------------------------------------------------------------------

enum class GsMode { Bilinear, Nearest, Bicubic };
enum class GsPad { Zeros, Border, Reflection };

float reflect(float v, float twice_low, float twice_high) {
  if (twice_low == twice_high) return 0;
  const float lo = twice_low / 2, span = (twice_high - twice_low) / 2;
  v = std::fabs(v - lo);
  const float extra = std::fmod(v, span);
  const bool even = std::fmod(std::floor(v / span), 2.f) == 0;
  return even ? extra + lo : span - extra + lo;
}

// The padded source coordinate (border and reflection fold it into the plane).
float pad_coord(float v, int64_t size, GsPad pad, bool align) {
  const float hi = static_cast<float>(size - 1);
  if (pad == GsPad::Border) return std::clamp(v, 0.f, hi);
  if (pad == GsPad::Reflection) {
    v = align ? reflect(v, 0, 2 * hi) : reflect(v, -1, 2 * static_cast<float>(size) - 1);
    return std::clamp(v, 0.f, hi);
  }
  return v;
}

float cubic_weight(float t, int k) {  // A = -0.75
  constexpr float A = -0.75f;
  auto near = [](float x) { return ((A + 2) * x - (A + 3)) * x * x + 1; };
  auto far = [](float x) { return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A; };
  switch (k) {
    case 0: return far(t + 1);
    case 1: return near(t);
    case 2: return near(1 - t);
    default: return far(2 - t);
  }
}

void grid_sample(KernelContext& ctx, GsMode mode, GsPad pad, bool align) {
  ctx.expect_dtype(0, {DType::Float});
  ctx.expect_dtype(1, {DType::Float});
  ctx.expect_rank(0, 4);
  ctx.expect_rank(1, 4);
  const Value &x = ctx.in(0), &grid = ctx.in(1);
  const int64_t N = x.dims()[0], C = x.dims()[1], H = x.dims()[2], W = x.dims()[3], Ho = grid.dims()[1], Wo = grid.dims()[2];
  if (grid.dims()[0] != N || grid.dims()[3] != 2)
    ctx.fail("grid " + ctx.input_name(1) + " has shape " + shape_str(grid.shape()) + ", expected [" + std::to_string(N) + ", H_out, W_out, 2]");
  Value& y = ctx.out(0);
  y.reset(DType::Float, {N, C, Ho, Wo});
  if (y.elements() == 0) return;
  const float* px = x.as<float>().data();
  const float* pg = grid.as<float>().data();
  float* py = y.mutable_as<float>().data();
  auto unnorm = [&](float v, int64_t size) {
    return align ? (v + 1) / 2 * static_cast<float>(size - 1) : ((v + 1) * static_cast<float>(size) - 1) / 2;
  };
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c) {
      const float* plane = px + (n * C + c) * H * W;
      // Value at integer (yy, xx); 0 outside the plane.
      auto at = [&](float yy, float xx) {
        if (!(yy >= 0 && yy < static_cast<float>(H) && xx >= 0 && xx < static_cast<float>(W))) return 0.f;
        return plane[static_cast<int64_t>(yy) * W + static_cast<int64_t>(xx)];
      };
      for (int64_t i = 0; i < Ho; ++i)
        for (int64_t j = 0; j < Wo; ++j) {
          const float* g = pg + ((n * Ho + i) * Wo + j) * 2;
          float fx = unnorm(g[0], W), fy = unnorm(g[1], H);
          float v = 0;
          if (!std::isfinite(fx) || !std::isfinite(fy)) {
            v = 0;
          } else if (mode == GsMode::Bicubic) {
            const float x0 = std::floor(fx), y0 = std::floor(fy), tx = fx - x0, ty = fy - y0;
            for (int a = 0; a < 4; ++a) {
              float row = 0;
              for (int b = 0; b < 4; ++b) {
                float sx = x0 - 1 + static_cast<float>(b), sy = y0 - 1 + static_cast<float>(a);
                sx = pad_coord(sx, W, pad, align);
                sy = pad_coord(sy, H, pad, align);
                row += cubic_weight(tx, b) * at(sy, sx);
              }
              v += cubic_weight(ty, a) * row;
            }
          } else {
            fx = pad_coord(fx, W, pad, align);
            fy = pad_coord(fy, H, pad, align);
            if (mode == GsMode::Nearest) {
              v = at(std::nearbyint(fy), std::nearbyint(fx));
            } else {
              const float x0 = std::floor(fx), y0 = std::floor(fy), lx = fx - x0, ly = fy - y0;
              v = (1 - ly) * ((1 - lx) * at(y0, x0) + lx * at(y0, x0 + 1)) + ly * ((1 - lx) * at(y0 + 1, x0) + lx * at(y0 + 1, x0 + 1));
            }
          }
          py[((n * C + c) * Ho + i) * Wo + j] = v;
        }
    }
}

}  // namespace

void register_detection(Registry& r) {
  r.add("NonMaxSuppression", [](const KernelInit& init) {
    const int64_t cpb = init.attrs().get_int("center_point_box", 0);
    if (cpb != 0 && cpb != 1) init.fail("center_point_box must be 0 or 1, is " + std::to_string(cpb));
    return make_kernel([center = cpb == 1](KernelContext& ctx) { nms(ctx, center); });
  });
  r.add("RoiAlign", [](const KernelInit& init) {
    RoiAttrs at;
    const std::string mode = init.attrs().get_string("mode", "avg");
    if (mode != "avg" && mode != "max") init.fail("mode " + quoted(mode) + " is not avg or max");
    at.max_mode = mode == "max";
    // Opset 10 has no attribute and behaves as output_half_pixel.
    const std::string ctm = init.attrs().get_string("coordinate_transformation_mode", init.opset >= 16 ? "half_pixel" : "output_half_pixel");
    if (ctm != "half_pixel" && ctm != "output_half_pixel") init.fail("coordinate_transformation_mode " + quoted(ctm) + " is not supported");
    at.half_pixel = ctm == "half_pixel";
    at.out_h = init.attrs().get_int("output_height", 1);
    at.out_w = init.attrs().get_int("output_width", 1);
    at.sampling = init.attrs().get_int("sampling_ratio", 0);
    at.scale = init.attrs().get_float("spatial_scale", 1.f);
    if (at.out_h < 1 || at.out_w < 1) init.fail("output_height and output_width must be >= 1");
    if (at.sampling < 0 || at.sampling > 4096) init.fail("sampling_ratio must be in [0, 4096]");
    return make_kernel([at](KernelContext& ctx) { roi_align(ctx, at); });
  });
  r.add("MaxRoiPool", [](const KernelInit& init) {
    const auto pooled = init.attrs().get_ints("pooled_shape");
    if (pooled.size() != 2 || pooled[0] < 1 || pooled[1] < 1 || pooled[0] > 4096 || pooled[1] > 4096)
      init.fail("pooled_shape must be two values in [1, 4096]");
    const float scale = init.attrs().get_float("spatial_scale", 1.f);
    return make_kernel([=](KernelContext& ctx) { max_roi_pool(ctx, pooled[0], pooled[1], scale); });
  });
  r.add("GridSample", [](const KernelInit& init) {
    const std::string m = init.attrs().get_string("mode", "bilinear"), p = init.attrs().get_string("padding_mode", "zeros");
    GsMode mode;
    if (m == "bilinear" || m == "linear") mode = GsMode::Bilinear;
    else if (m == "nearest") mode = GsMode::Nearest;
    else if (m == "bicubic" || m == "cubic") mode = GsMode::Bicubic;
    else init.fail("mode " + quoted(m) + " is not bilinear, nearest or bicubic");
    GsPad pad;
    if (p == "zeros") pad = GsPad::Zeros;
    else if (p == "border") pad = GsPad::Border;
    else if (p == "reflection") pad = GsPad::Reflection;
    else init.fail("padding_mode " + quoted(p) + " is not zeros, border or reflection");
    const bool align = init.attrs().get_int("align_corners", 0) != 0;
    return make_kernel([=](KernelContext& ctx) { grid_sample(ctx, mode, pad, align); });
  });
}

}  // namespace nnxr::runtime
