// Which operators the CPU runtime can execute. The loader accepts any operator; this list
// answers "what will run" for `nnxr inspect` and the runtime's own checks.
#pragma once

#include <string_view>
#include <vector>

#include "model/graph.h"

namespace nnxr::model {

// True if the runtime has a kernel for `op_type` in `domain` ("" is ai.onnx).
bool runtime_supports(std::string_view domain, std::string_view op_type);

// The ops of `graph` the runtime cannot execute, with how many nodes use each, by op name.
struct UnsupportedOp {
  std::string domain;
  std::string op_type;
  int count = 0;
};
std::vector<UnsupportedOp> unsupported_ops(const Graph& graph);

}  // namespace nnxr::model
