// activations_of(): the float tensors of a runtime::Session as scene::Activations (float16 ones
// converted to float32).
#include "model/half.h"
#include "model/runtime/runtime.h"
#include "model/scene/scene.h"

namespace nnxr::scene {

TensorValue tensor_value(const runtime::Value& value) {
  if (value.dtype() == model::DType::Float) return {value.shape(), value.as<float>()};
  if (value.dtype() != model::DType::Float16) return {};
  const auto half = value.as<uint16_t>();
  auto owned = std::make_shared<std::vector<float>>(half.size());
  for (size_t i = 0; i < half.size(); ++i) (*owned)[i] = model::half_to_float(half[i]);
  return {value.shape(), *owned, owned};
}

Activations activations_of(const runtime::Session& session) {
  Activations out(session.plan().graph().tensors.size());
  for (const runtime::TensorView& t : session.tensors())
    if (t.id < out.size() && t.value) out[t.id] = tensor_value(*t.value);
  return out;
}

}  // namespace nnxr::scene
