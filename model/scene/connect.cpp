// The connector registry (placeholder: no op has connection semantics yet).
#include "model/scene/connect.h"

namespace nnxr::scene {

ConnectFn find_connector(std::string_view, std::string_view) { return nullptr; }

}  // namespace nnxr::scene
