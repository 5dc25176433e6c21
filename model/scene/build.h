// Internal to model/scene: Scene::build() with the connector lookup as a parameter, so that tests
// can drive the build with connectors of their own.
#pragma once

#include <string_view>

#include "model/scene/connect.h"
#include "model/scene/scene.h"

namespace nnxr::scene {

using ConnectorLookup = ConnectFn (*)(std::string_view domain, std::string_view op_type);

struct SceneBuilder {
  static Scene build(const model::Graph& graph, const Layout& layout, const Activations& values,
                     const SceneOptions& options, SceneSink& sink, ConnectorLookup lookup);
};

}  // namespace nnxr::scene
