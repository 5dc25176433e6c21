// activations_of(): the float tensors of a runtime::Session as scene::Activations (float16 ones
// converted to float32).
#include "model/half.h"
#include "model/runtime/runtime.h"
#include "model/scene/scene.h"

namespace nnxr::scene {

Activations activations_of(const runtime::Session& session) {
  Activations out(session.plan().graph().tensors.size());
  for (const runtime::TensorView& t : session.tensors()) {
    if (t.id >= out.size() || !t.value) continue;
    if (t.value->dtype() == model::DType::Float) {
      out[t.id] = {t.value->shape(), t.value->as<float>()};
    } else if (t.value->dtype() == model::DType::Float16) {
      const auto half = t.value->as<uint16_t>();
      auto owned = std::make_shared<std::vector<float>>(half.size());
      for (size_t i = 0; i < half.size(); ++i) (*owned)[i] = model::half_to_float(half[i]);
      out[t.id] = {t.value->shape(), *owned, owned};
    }
  }
  return out;
}

}  // namespace nnxr::scene
