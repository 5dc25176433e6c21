// activations_of(): the float32 tensors of a runtime::Session as scene::Activations.
#include "model/runtime/runtime.h"
#include "model/scene/scene.h"

namespace nnxr::scene {

Activations activations_of(const runtime::Session& session) {
  Activations out(session.plan().graph().tensors.size());
  for (const runtime::TensorView& t : session.tensors()) {
    if (t.id >= out.size() || !t.value || t.value->dtype() != model::DType::Float) continue;
    out[t.id] = {t.value->shape(), t.value->as<float>()};
  }
  return out;
}

}  // namespace nnxr::scene
