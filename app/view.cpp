// nnxr view: not implemented yet.
#include "app/commands.h"

namespace nnxr::app {

int view_command(Args& args) {
  (void)args;
  throw UsageError("'nnxr view' is not available yet in this version (see nnxr --help)");
}

}  // namespace nnxr::app
