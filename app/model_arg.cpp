#include <iostream>

#include "app/commands.h"
#include "assets/assets.h"

namespace nnxr::app {

model::Graph load_model_arg(const std::optional<std::string>& path, const model::LoadOptions& options, bool quiet) {
  model::Graph graph = path ? model::load_model(*path, options)
                            : model::load_model_from_memory(assets::default_model().bytes,
                                                            "digits.onnx (embedded default model)", options);
  if (!quiet) print_warnings(graph);
  return graph;
}

void print_warnings(const model::Graph& graph) {
  for (const std::string& w : graph.warnings) std::cerr << "warning: " << graph.source << ": " << w << '\n';
}

void parse_dims(Args& args, model::LoadOptions& options) {
  for (const std::string& d : args.options("--dim")) {
    const auto eq = d.find('=');
    if (eq == std::string::npos || eq == 0) throw UsageError("--dim expects NAME=VALUE, got '" + d + "'");
    options.dims[d.substr(0, eq)] = parse_int(std::string_view(d).substr(eq + 1), "--dim " + d.substr(0, eq), 0, int64_t{1} << 40);
  }
}

}  // namespace nnxr::app
