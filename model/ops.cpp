#include "model/ops.h"

#include <algorithm>
#include <map>

namespace nnxr::model {

// The kernels the runtime provides, by op name in the ai.onnx domain. The runtime has not
// landed yet, so no operator runs: `nnxr inspect` lists every op of a model as unsupported.
static constexpr std::string_view kSupported[] = {""};

bool runtime_supports(std::string_view domain, std::string_view op_type) {
  if (!domain.empty() || op_type.empty()) return false;
  return std::find(std::begin(kSupported), std::end(kSupported), op_type) != std::end(kSupported);
}

std::vector<UnsupportedOp> unsupported_ops(const Graph& graph) {
  std::map<std::pair<std::string, std::string>, int> counts;
  for (const Node& n : graph.nodes)
    if (!runtime_supports(n.domain, n.op_type)) ++counts[{n.domain, n.op_type}];
  std::vector<UnsupportedOp> out;
  for (const auto& [key, count] : counts) out.push_back({key.first, key.second, count});
  return out;
}

}  // namespace nnxr::model
