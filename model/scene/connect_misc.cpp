// Recurrent layers (LSTM, GRU, RNN), kept simple: the hidden state of direction d at time t
// connects to the input X at the same time step and batch entry, every input feature i, with the
// weight of the cell's candidate gate (LSTM: gate c, GRU: gate h, RNN: the only gate):
// score |W[d, gate·H + j, i] · x|. The previous hidden state is an output of the node, not an
// input, so it is not a source; at the first step of a direction the initial state initial_h
// (when it is an activation) is, through R. Y_h and Y_c connect like Y at the last step of each
// direction (sequence_lens is not consulted).
#include <algorithm>

#include "model/scene/connect_ops.h"

namespace nnxr::scene::connect {
namespace {

template <int gate>
void connect_rnn(const NodeValues& v, uint32_t output, TopK& top) {
  const auto os = output_shape(v, output, top);
  const TensorValue *xv = float_input(v, 0), *wv = float_input(v, 1), *rv = float_input(v, 2);
  if (!os || !xv || !wv || output > 2 || xv->shape.size() != 3 || wv->shape.size() != 3 || input_is_weight(v, 0)) return;
  const auto& at = v.node.attributes;
  const int64_t H = at.get_int("hidden_size", 0);
  const std::string dir = at.get_string("direction", "forward");
  const bool layout1 = at.get_int("layout", 0) != 0;
  const int64_t D = dir == "bidirectional" ? 2 : 1;
  const bool reverse_only = dir == "reverse";
  const int64_t S = layout1 ? xv->shape[1] : xv->shape[0], B = layout1 ? xv->shape[0] : xv->shape[1], I = xv->shape[2];
  const int64_t G = wv->shape[1] / std::max<int64_t>(1, H);
  if (H < 1 || wv->shape[0] != D || wv->shape[2] != I || G * H != wv->shape[1] || gate >= G) return;
  const bool seq = output == 0;
  const Dims want = seq ? (layout1 ? Dims{B, S, D, H} : Dims{S, D, B, H}) : (layout1 ? Dims{B, D, H} : Dims{D, B, H});
  if (*os != want) return;
  const TensorValue* h0 = float_input(v, 5);
  const bool h0_src = h0 && !input_is_weight(v, 5) && rv && int64_t(h0->data.size()) == D * B * H && rv->shape.size() == 3 &&
                      rv->shape[0] == D && rv->shape[1] == G * H && rv->shape[2] == H;
  const float* X = xv->data.data();
  const float* W = wv->data.data();
  for (int64_t y = top.begin(); y < top.end(); ++y) {
    int64_t t, d, b, j = y % H;
    const int64_t r = y / H;
    if (seq) {
      if (layout1) {  // [B, S, D, H]
        d = r % D;
        t = (r / D) % S;
        b = r / (D * S);
      } else {  // [S, D, B, H]
        b = r % B;
        d = (r / B) % D;
        t = r / (B * D);
      }
    } else {
      if (layout1) {
        d = r % D;
        b = r / D;
      } else {
        b = r % B;
        d = r / B;
      }
      const bool rev = reverse_only || d == 1;
      t = rev ? 0 : S - 1;
    }
    if (S == 0) continue;
    const int64_t xrow = (layout1 ? b * S + t : t * B + b) * I;
    const float* w = W + (d * G * H + gate * H + j) * I;
    float th = top.threshold(y);
    for (int64_t i = 0; i < I; ++i) {
      const float c = w[i] * X[xrow + i];
      const float s = std::fabs(c);
      if (s > th) {
        top.insert(y, 0, xrow + i, s, c);
        th = top.threshold(y);
      }
    }
    top.count(uint64_t(I));
    const bool rev = reverse_only || d == 1;
    if (h0_src && t == (rev ? S - 1 : 0)) {
      const int64_t hrow = (layout1 ? b * D + d : d * B + b) * H;
      const float* rw = rv->data.data() + (d * G * H + gate * H + j) * H;
      for (int64_t k = 0; k < H; ++k) offer_one(top, y, 5, hrow + k, rw[k], h0->data[size_t(hrow + k)]);
    }
  }
}

constexpr Entry kEntries[] = {{"LSTM", connect_rnn<3>}, {"GRU", connect_rnn<2>}, {"RNN", connect_rnn<0>}};

}  // namespace

std::span<const Entry> misc_connectors() { return kEntries; }

}  // namespace nnxr::scene::connect
