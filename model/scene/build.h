// Internal to model/scene: Scene::build() with the connector lookup as a parameter, so that tests
// can drive the build with connectors of their own.
#pragma once

#include <string_view>

#include "model/scene/connect.h"
#include "model/scene/scene.h"

namespace nnxr::scene {

using ConnectorLookup = ConnectFn (*)(std::string_view domain, std::string_view op_type);

// A side input that feeds many far layers (BERT's attention mask, added to the scores of all 24
// encoder layers) draws its connections into its nearest consumers only: lines from it to every
// later layer would cross the whole layout (a wrapped one from the first row to every row) and,
// its values being large (-10000 where the mask masks), they took every kept connection of those
// layers and set the contribution scale that left the rest of the network's lines unseen.
// `source` is such an input when more than kSideInputFarConsumers of its consumers that lay a
// tensor out lie more than kSideInputReach layers deeper than its nearest one; its connections
// into `consumer` are then not drawn when `consumer` is one of those far ones. A skip connection
// (a residual, a U-Net's encoder map feeding its decoder) has one or two far consumers and keeps
// its lines.
inline constexpr int kSideInputReach = 8;
inline constexpr long kSideInputFarConsumers = 2;
bool far_side_input(const model::Graph& graph, const Layout& layout, model::TensorId source, const model::Node& consumer);

struct SceneBuilder {
  static Scene build(const model::Graph& graph, const Layout& layout, const Activations& values,
                     const SceneOptions& options, SceneSink& sink, ConnectorLookup lookup);
};

}  // namespace nnxr::scene
