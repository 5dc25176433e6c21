#include "model/legacy_ops.h"

#include <onnx/defs/schema.h>
#include <onnx/defs/shape_inference.h>

#include <mutex>

namespace nnxr::model {
namespace {

const std::vector<std::string> kFloatTypes = {"tensor(float16)", "tensor(float)", "tensor(double)"};

onnx::OpSchema unary(const char* name, const char* doc) {
  onnx::OpSchema s;
  s.SetName(name)
      .SetDomain(onnx::ONNX_DOMAIN)
      .SinceVersion(1)
      .SetDoc(doc)
      .Input(0, "input", "Input tensor", "T")
      .Output(0, "output", "Output tensor, the shape of the input", "T")
      .TypeConstraint("T", kFloatTypes, "Floating-point tensors")
      .TypeAndShapeInferenceFunction(onnx::propagateShapeAndTypeFromFirstInput);
  return s;
}

// Crop (NCHW): border = [left, top, right, bottom]; scale = [height, width] takes the centre.
void crop_inference(onnx::InferenceContext& ctx) {
  onnx::propagateElemTypeFromInputToOutput(ctx, 0, 0);
  if (!onnx::hasInputShape(ctx, 0)) return;
  const auto& in = onnx::getInputShape(ctx, 0);
  if (in.dim_size() != 4) fail_shape_inference("Crop expects a 4-D NCHW input");
  std::vector<int64_t> border, scale;
  if (const auto* a = ctx.getAttribute("border")) border.assign(a->ints().begin(), a->ints().end());
  if (const auto* a = ctx.getAttribute("scale")) scale.assign(a->ints().begin(), a->ints().end());
  if (border.size() != 4) fail_shape_inference("Crop needs border = [left, top, right, bottom]");
  auto* out = ctx.getOutputType(0)->mutable_tensor_type()->mutable_shape();
  out->clear_dim();
  *out->add_dim() = in.dim(0);
  *out->add_dim() = in.dim(1);
  for (int axis = 0; axis < 2; ++axis) {
    auto* d = out->add_dim();
    if (scale.size() == 2) {
      d->set_dim_value(scale[axis]);
    } else if (in.dim(2 + axis).has_dim_value()) {
      // axis 0 is the height (top = border[1], bottom = border[3]), axis 1 the width.
      const int64_t size = in.dim(2 + axis).dim_value() - border[1 - axis] - border[3 - axis];
      if (size < 0) fail_shape_inference("Crop border is larger than the input");
      d->set_dim_value(size);
    }
  }
}

}  // namespace

void register_legacy_ops() {
  static std::once_flag once;
  std::call_once(once, [] {
    auto add = [](onnx::OpSchema s) {
      if (!onnx::OpSchemaRegistry::Schema(s.Name(), 1, onnx::ONNX_DOMAIN)) onnx::RegisterSchema(std::move(s));
    };
    add(unary("ImageScaler", "y = scale * x + bias[c] (removed from ONNX in 1.5)")
            .Attr("scale", "Scale", onnx::AttributeProto::FLOAT, 1.0f)
            .Attr("bias", "Bias per channel", onnx::AttributeProto::FLOATS, onnx::OPTIONAL_VALUE));
    add(unary("Affine", "y = alpha * x + beta (removed from ONNX in 1.5)")
            .Attr("alpha", "Slope", onnx::AttributeProto::FLOAT, 1.0f)
            .Attr("beta", "Offset", onnx::AttributeProto::FLOAT, 0.0f));
    onnx::OpSchema crop = unary("Crop", "Crops an NCHW image (removed from ONNX in 1.5)");
    crop.Attr("border", "[left, top, right, bottom]", onnx::AttributeProto::INTS, onnx::OPTIONAL_VALUE)
        .Attr("scale", "[height, width] of a centre crop", onnx::AttributeProto::INTS, onnx::OPTIONAL_VALUE)
        .TypeAndShapeInferenceFunction(crop_inference);
    add(std::move(crop));
  });
}

}  // namespace nnxr::model

