// libFuzzer target for the input readers: every byte string goes through the .npy parser, the
// TensorProto (.pb) parser and the image decoder (PNG and JPEG, recognised by content; anything
// else refused). Each must return a tensor or image or fail with a ModelError — never crash,
// hang, leak, trip a sanitizer, allocate past its size caps, or throw anything else.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <span>
#include <vector>

#include "app/image_decode.h"
#include "model/load.h"
#include "model/tensor_io.h"

namespace {

template <class F>
void expect_model_error_or_success(const char* what, F&& f) {
  try {
    f();
  } catch (const nnxr::model::ModelError&) {
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: unexpected exception: %s\n", what, e.what());
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto bytes = std::as_bytes(std::span(data, size));
  expect_model_error_or_success("npy", [&] {
    const nnxr::model::TensorData t = nnxr::model::parse_npy(std::vector<std::byte>(bytes.begin(), bytes.end()), "fuzz.npy");
    if (t.bytes.size() != static_cast<size_t>(nnxr::model::element_count(t.shape).value_or(-1)) * nnxr::model::dtype_size(t.dtype)) std::abort();
  });
  // A folder that does not exist: external data locations resolve to nothing.
  expect_model_error_or_success("pb", [&] { (void)nnxr::model::parse_tensor_pb(bytes, "/nonexistent-nnxr-fuzz/fuzz.pb"); });
  const int channels = size % 3 == 0 ? 1 : size % 3 == 1 ? 3 : 4;
  expect_model_error_or_success("image", [&] {
    const nnxr::app::DecodedImage im = nnxr::app::decode_image_file(bytes, "fuzz.img", channels);
    if (im.pixels.size() != static_cast<size_t>(im.width) * im.height * static_cast<size_t>(channels)) std::abort();
  });
  return 0;
}
