// The 8-bit contribution code of a Connection (scene.h); the encoder lives in scene_impl.h so that
// the build's per-connection loop can inline it.
#include <cmath>

#include "model/scene/scene_impl.h"

namespace nnxr::scene {

uint8_t encode_contribution(float contribution, float max_abs) { return encode_contribution_inline(contribution, max_abs); }

float decode_contribution(uint8_t code, float max_abs) {
  const int m = code & 0x7F;
  if (m == 0 || !(max_abs > 0)) return 0;
  const float a = float(double(max_abs) * std::exp2((m - 127) / 8.0));
  return code & 0x80 ? -a : a;
}

}  // namespace nnxr::scene
