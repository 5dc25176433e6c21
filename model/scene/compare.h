// Two runs of one model side by side: how far each tensor's activation moved between input A and
// input B (divergence), and the scene's view of the change (difference activations a_A − a_B).
//
//   Activations a = activations_of(session_a), b = activations_of(session_b);
//   auto div = divergence(graph, a, b);               // per tensor: rel L2 and cosine
//   Activations d = difference(graph, a, b);           // a_A − a_B for inputs and activations
//   Scene::build(graph, layout, d, options, sink);     // neurons coloured by the change,
//                                                      // connections ranked by |w·(a_A − a_B)|
//
// Weights and constants are the same in both runs: difference() keeps them as they are, so that a
// connection's contribution w·x becomes w·(a_A − a_B).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "model/scene/scene.h"

namespace nnxr::scene {

// One tensor's divergence, accumulated in double.
//   rel_l2 = ‖a_A − a_B‖ / ‖a_A‖ (0 when both are zero; +inf when only A's is zero)
//   cosine = a_A·a_B / (‖a_A‖ ‖a_B‖) (1 when both are zero; 0 when one of them is)
struct Divergence {
  double rel_l2 = 0;
  double cosine = 1;
  double norm_a = 0, norm_b = 0, norm_diff = 0;
};
Divergence divergence(std::span<const float> a, std::span<const float> b);

// Per tensor id: the divergence of every tensor computed as float in both runs with the same
// shape, for inputs and activations (nullopt for weights, constants, other dtypes, or tensors
// missing from either run).
std::vector<std::optional<Divergence>> divergence(const model::Graph& graph, const Activations& a, const Activations& b);

// Inputs and activations as a_A − a_B (tensors missing or shaped differently in B: left empty),
// weights and constants as in `a`. `storage` holds the differences; when it already has the
// right size (the same model again) it is reused without a new allocation.
Activations difference(const model::Graph& graph, const Activations& a, const Activations& b,
                       std::vector<float>& storage);

// The `count` tensors whose activation changed most (largest rel_l2; inputs excluded), most
// first, as tensor ids.
std::vector<model::TensorId> most_changed(const model::Graph& graph,
                                          const std::vector<std::optional<Divergence>>& divergence, size_t count);

// What a comparing view shows.
enum class CompareShow : uint8_t { A, B, Difference };
const char* compare_show_name(CompareShow show);  // "A", "B", "A-B"
std::optional<CompareShow> parse_compare_show(const std::string& text);  // a, b, diff (any case)

}  // namespace nnxr::scene
