// Internal: attributes shared by Conv, ConvTranspose and the pooling ops (decoded at plan time),
// and the padding rules of auto_pad.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/runtime/kernel.h"

namespace nnxr::runtime {

struct SpatialAttrs {
  std::string auto_pad = "NOTSET";
  std::vector<int64_t> kernel, strides, dilations, pads;  // empty when absent
  int64_t group = 1;
  bool ceil_mode = false;

  static SpatialAttrs decode(const KernelInit& init) {
    SpatialAttrs a;
    const auto& at = init.attrs();
    a.auto_pad = at.get_string("auto_pad", "NOTSET");
    if (a.auto_pad.empty()) a.auto_pad = "NOTSET";
    if (a.auto_pad != "NOTSET" && a.auto_pad != "VALID" && a.auto_pad != "SAME_UPPER" && a.auto_pad != "SAME_LOWER")
      init.fail("unknown auto_pad " + quoted(a.auto_pad));
    a.kernel = at.get_ints("kernel_shape");
    a.strides = at.get_ints("strides");
    a.dilations = at.get_ints("dilations");
    a.pads = at.get_ints("pads");
    a.group = at.get_int("group", 1);
    a.ceil_mode = at.get_int("ceil_mode", 0) != 0;
    if (a.group < 1) init.fail("group must be >= 1");
    for (int64_t s : a.strides)
      if (s < 1) init.fail("strides must be >= 1");
    for (int64_t d : a.dilations)
      if (d < 1) init.fail("dilations must be >= 1");
    for (int64_t k : a.kernel)
      if (k < 1) init.fail("kernel_shape must be >= 1");
    return a;
  }

  // Fills strides/dilations/pads of `g`-like output for `n` spatial dims given input dims and the
  // kernel dims; computes the output dims (floor, or ceil with ceil_mode). Fails on bad sizes.
  template <class Ctx>
  void resolve(const Ctx& ctx, const std::vector<int64_t>& in, const std::vector<int64_t>& k, std::vector<int64_t>& stride,
               std::vector<int64_t>& dil, std::vector<int64_t>& pb, std::vector<int64_t>& pe, std::vector<int64_t>& out) const {
    const size_t n = in.size();
    auto fixed = [&](const std::vector<int64_t>& v, int64_t def, const char* what) {
      if (v.empty()) return std::vector<int64_t>(n, def);
      if (v.size() != n) ctx.fail(std::string(what) + " has " + std::to_string(v.size()) + " values for " + std::to_string(n) + " spatial dims");
      return v;
    };
    stride = fixed(strides, 1, "strides");
    dil = fixed(dilations, 1, "dilations");
    pb.assign(n, 0);
    pe.assign(n, 0);
    if (auto_pad == "NOTSET" && !pads.empty()) {
      if (pads.size() != 2 * n) ctx.fail("pads has " + std::to_string(pads.size()) + " values for " + std::to_string(n) + " spatial dims");
      for (size_t i = 0; i < n; ++i) {
        pb[i] = pads[i];
        pe[i] = pads[i + n];
        if (pb[i] < 0 || pe[i] < 0) ctx.fail("negative pads");
      }
    }
    // Checked arithmetic: pads, strides or dilations near INT64_MAX fail the node instead of
    // wrapping into a wrong (often empty) output.
    auto checked = [&](bool overflow) {
      if (overflow) ctx.fail("pads " + shape_str(pads) + ", strides " + shape_str(stride) + ", dilations " + shape_str(dil) + " and kernel " +
                             shape_str(k) + " overflow the output size");
    };
    for (size_t i = 0; i < n; ++i) {
      if (stride[i] < 1) ctx.fail("strides must be at least 1, got " + shape_str(stride));
      if (dil[i] < 1) ctx.fail("dilations must be at least 1, got " + shape_str(dil));
      if (k[i] < 1) ctx.fail("kernel " + shape_str(k) + " has an empty dimension");
    }
    out.assign(n, 0);
    for (size_t i = 0; i < n; ++i) {
      int64_t ek = 0;
      checked(__builtin_mul_overflow(k[i] - 1, dil[i], &ek) || __builtin_add_overflow(ek, int64_t{1}, &ek));
      if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
        out[i] = in[i] / stride[i] + (in[i] % stride[i] != 0 ? 1 : 0);
        int64_t total = 0;
        checked(__builtin_mul_overflow(std::max<int64_t>(out[i] - 1, 0), stride[i], &total) || __builtin_add_overflow(total, ek, &total));
        total = std::max<int64_t>(0, total - in[i]);
        pb[i] = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
        pe[i] = total - pb[i];
        continue;
      }
      int64_t span = 0;
      checked(__builtin_add_overflow(in[i], pb[i], &span) || __builtin_add_overflow(span, pe[i], &span));
      span -= ek;
      if (span < 0)
        ctx.fail("kernel " + shape_str(k) + " (dilated) is larger than the padded input " + shape_str(in));
      out[i] = (ceil_mode ? span / stride[i] + (span % stride[i] != 0 ? 1 : 0) : span / stride[i]) + 1;
      // Every output position, padded, must stay addressable.
      int64_t last = 0;
      checked(__builtin_mul_overflow(out[i], stride[i], &last) || __builtin_add_overflow(last, ek, &last));
      // With ceil_mode the last window must start inside the input or the left padding.
      if (ceil_mode && (out[i] - 1) * stride[i] >= in[i] + pb[i]) --out[i];
    }
  }
};

}  // namespace nnxr::runtime
