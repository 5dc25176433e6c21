// libFuzzer target for the model loader: any byte string must either load or fail with a
// ModelError — never crash, hang, leak, trip a sanitizer, or throw anything else.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <span>

#include "model/load.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    nnxr::model::Graph g = nnxr::model::load_model_from_memory(
        std::as_bytes(std::span(data, size)), "fuzz.onnx", {});
    // Touch what the loader built so that inconsistent links are caught by the sanitizers.
    size_t links = 0;
    for (const auto& n : g.nodes)
      for (auto id : n.inputs) links += id == nnxr::model::kNone ? 0 : g.tensors.at(id).consumers.size();
    (void)links;
  } catch (const nnxr::model::ModelError&) {
  } catch (const std::exception& e) {
    std::fprintf(stderr, "unexpected exception: %s\n", e.what());
    std::abort();
  }
  return 0;
}
