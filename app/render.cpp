// nnxr render: not implemented yet.
#include "app/commands.h"

namespace nnxr::app {

int render_command(Args& args) {
  (void)args;
  throw UsageError("'nnxr render' is not available yet in this version (see nnxr --help)");
}

}  // namespace nnxr::app
