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
    out.assign(n, 0);
    for (size_t i = 0; i < n; ++i) {
      const int64_t ek = (k[i] - 1) * dil[i] + 1;
      if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
        out[i] = (in[i] + stride[i] - 1) / stride[i];
        const int64_t total = std::max<int64_t>(0, (out[i] - 1) * stride[i] + ek - in[i]);
        pb[i] = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
        pe[i] = total - pb[i];
        continue;
      }
      const int64_t span = in[i] + pb[i] + pe[i] - ek;
      if (span < 0)
        ctx.fail("kernel " + shape_str(k) + " (dilated) is larger than the padded input " + shape_str(in));
      out[i] = (ceil_mode ? (span + stride[i] - 1) / stride[i] : span / stride[i]) + 1;
      // With ceil_mode the last window must start inside the input or the left padding.
      if (ceil_mode && (out[i] - 1) * stride[i] >= in[i] + pb[i]) --out[i];
    }
  }
};

}  // namespace nnxr::runtime
