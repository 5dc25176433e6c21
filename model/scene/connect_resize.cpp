// Resize and Upsample: each output element connects to the input pixels the mode reads, with the
// coordinate transform of the runtime kernel (kernels_misc.cpp): the nearest pixel (weight 1),
// or the linear neighbours with their non-zero interpolation weights (score |w·a|). Outputs that
// tf_crop_and_resize places outside the input (extrapolation value) have no source.
#include <algorithm>
#include <cmath>
#include <string>

#include "model/scene/connect_ops.h"

namespace nnxr::scene::connect {
namespace {

double coord(const std::string& mode, double x, double scale, int64_t in, int64_t out, double roi_start, double roi_end) {
  if (mode == "half_pixel") return (x + 0.5) / scale - 0.5;
  if (mode == "pytorch_half_pixel") return out > 1 ? (x + 0.5) / scale - 0.5 : 0.0;
  if (mode == "align_corners") return out == 1 ? 0.0 : x * double(in - 1) / double(out - 1);
  if (mode == "asymmetric") return x / scale;
  if (mode == "tf_half_pixel_for_nn") return (x + 0.5) / scale;
  if (mode == "half_pixel_symmetric") {
    const double adj = double(out) / (scale * double(in));
    const double center = double(in) / 2;
    return center * (1 - adj) + (x + 0.5) / scale - 0.5;
  }
  if (out > 1) return roi_start * double(in - 1) + x * (roi_end - roi_start) * double(in - 1) / double(out - 1);
  return 0.5 * (roi_start + roi_end) * double(in - 1);
}

int64_t nearest(const std::string& mode, double x) {
  if (mode == "floor") return int64_t(std::floor(x));
  if (mode == "ceil") return int64_t(std::ceil(x));
  if (mode == "round_prefer_ceil") return int64_t(std::floor(x + 0.5));
  return int64_t(std::ceil(x - 0.5));
}

struct AxisMap {
  Dims i0, i1;
  std::vector<float> w1;
  std::vector<uint8_t> outside;
};

template <bool upsample>
void connect_resize(const NodeValues& v, uint32_t output, TopK& top) {
  const auto os = output_shape(v, output, top);
  const TensorValue* xv = float_input(v, 0);
  if (output != 0 || !os || !xv || input_is_weight(v, 0) || os->size() != xv->shape.size()) return;
  const auto& at = v.node.attributes;
  const size_t rank = xv->shape.size();
  const int64_t opset = v.node.opset;
  std::string mode = at.get_string("mode", "nearest"), coord_mode = "asymmetric", nearest_mode = "floor";
  if (!upsample && opset >= 11) {
    coord_mode = at.get_string("coordinate_transformation_mode", "half_pixel");
    nearest_mode = at.get_string("nearest_mode", "round_prefer_floor");
  }
  const bool linear = mode == "linear" || mode == "bilinear";
  if (!linear && mode != "nearest") return;
  // Scales: the float input or attribute when given, else output / input (sizes).
  std::vector<double> scales(rank, 1.0);
  std::vector<double> roi;
  const TensorValue* sv = nullptr;
  if (upsample) {
    if (opset >= 9) sv = float_input(v, 1);
    else {
      const auto sa = at.get_floats("scales");
      if (sa.size() != rank) return;
      for (size_t i = 0; i < rank; ++i) scales[i] = sa[i];
    }
  } else if (opset < 11) {
    sv = float_input(v, 1);
  } else {
    if (const TensorValue* r = float_input(v, 1)) roi.assign(r->data.begin(), r->data.end());
    const bool have_sizes = v.inputs.size() > 3 && !v.inputs[3].shape.empty() && numel(v.inputs[3].shape) > 0;
    if (!have_sizes) sv = float_input(v, 2);
  }
  if (sv) {
    if (sv->data.size() != rank) return;
    for (size_t i = 0; i < rank; ++i) scales[i] = sv->data[i];
  } else if (!(upsample && opset < 9)) {
    for (size_t i = 0; i < rank; ++i) scales[i] = xv->shape[i] ? double((*os)[i]) / double(xv->shape[i]) : 1.0;
  }
  std::vector<AxisMap> maps(rank);
  for (size_t d = 0; d < rank; ++d) {
    AxisMap& m = maps[d];
    const int64_t in = xv->shape[d], out = (*os)[d];
    if (in <= 0 && out > 0) return;
    m.i0.assign(size_t(out), 0);
    m.i1.assign(size_t(out), 0);
    m.w1.assign(size_t(out), 0.f);
    m.outside.assign(size_t(out), 0);
    const double rs = roi.size() == 2 * rank ? roi[d] : 0.0, re = roi.size() == 2 * rank ? roi[d + rank] : 1.0;
    for (int64_t o = 0; o < out; ++o) {
      const size_t k = size_t(o);
      double xo = in == out && coord_mode != "tf_crop_and_resize" ? double(o) : coord(coord_mode, double(o), scales[d], in, out, rs, re);
      if (coord_mode == "tf_crop_and_resize" && (xo < 0 || xo > double(in - 1))) {
        m.outside[k] = 1;
        continue;
      }
      if (!std::isfinite(xo)) {
        m.outside[k] = 1;
        continue;
      }
      if (linear) {
        xo = std::clamp(xo, 0.0, double(in - 1));
        const int64_t lo = int64_t(std::floor(xo));
        m.i0[k] = lo;
        m.i1[k] = std::min(lo + 1, in - 1);
        m.w1[k] = float(xo - double(lo));
      } else {
        m.i0[k] = m.i1[k] = std::clamp<int64_t>(nearest(nearest_mode, xo), 0, in - 1);
      }
    }
  }
  const Dims ist = strides_of(xv->shape);
  const float* X = xv->data.data();
  Dims idx(rank);
  for (int64_t y = top.begin(); y < top.end(); ++y) {
    int64_t rem = y;
    bool outside = false;
    int64_t base = 0;
    for (size_t d = rank; d-- > 0;) {
      idx[d] = rem % (*os)[d];
      rem /= (*os)[d];
      outside = outside || maps[d].outside[size_t(idx[d])];
      base += maps[d].i0[size_t(idx[d])] * ist[d];
    }
    if (outside) continue;
    if (!linear) {
      top.offer(y, 0, base, std::fabs(X[base]), X[base]);
      continue;
    }
    // Corners over the dims with a fractional coordinate.
    size_t dims[16];
    size_t nd = 0;
    for (size_t d = 0; d < rank && nd < 16; ++d)
      if (maps[d].w1[size_t(idx[d])] != 0.f) dims[nd++] = d;
    for (size_t mask = 0; mask < (size_t{1} << nd); ++mask) {
      double w = 1;
      int64_t off = base;
      for (size_t j = 0; j < nd; ++j) {
        const size_t d = dims[j], k = size_t(idx[d]);
        if (mask & (size_t{1} << j)) {
          w *= maps[d].w1[k];
          off += (maps[d].i1[k] - maps[d].i0[k]) * ist[d];
        } else {
          w *= 1.0 - maps[d].w1[k];
        }
      }
      if (w == 0) continue;
      offer_one(top, y, 0, off, float(w), X[off]);
    }
  }
}

constexpr Entry kEntries[] = {{"Resize", connect_resize<false>}, {"Upsample", connect_resize<true>}};

}  // namespace

std::span<const Entry> resize_connectors() { return kEntries; }

}  // namespace nnxr::scene::connect
