#include "assets/assets.h"

#include <array>

namespace nnxr::embedded {
#define NNXR_DECLARE(sym)               \
  extern const unsigned char sym[];     \
  extern const std::size_t sym##_size;
NNXR_DECLARE(digits_onnx)
NNXR_DECLARE(digit_0_png)
NNXR_DECLARE(digit_1_png)
NNXR_DECLARE(digit_2_png)
NNXR_DECLARE(digit_3_png)
NNXR_DECLARE(digit_4_png)
NNXR_DECLARE(digit_5_png)
NNXR_DECLARE(digit_6_png)
NNXR_DECLARE(digit_7_png)
NNXR_DECLARE(digit_8_png)
NNXR_DECLARE(digit_9_png)
NNXR_DECLARE(classes_imagenet_txt)
NNXR_DECLARE(classes_coco91_txt)
NNXR_DECLARE(classes_coco80_txt)
NNXR_DECLARE(classes_cifar10_txt)
NNXR_DECLARE(classes_digits_txt)
#undef NNXR_DECLARE
}  // namespace nnxr::embedded

namespace nnxr::assets {
namespace {

Asset make(std::string_view name, const unsigned char* data, std::size_t size) {
  return {name, std::as_bytes(std::span(data, size))};
}

#define NNXR_ASSET(file, sym) make(file, embedded::sym, embedded::sym##_size)
const std::array<Asset, 16>& table() {
  static const std::array<Asset, 16> t = {
      NNXR_ASSET("digits.onnx", digits_onnx), NNXR_ASSET("digit-0.png", digit_0_png),
      NNXR_ASSET("digit-1.png", digit_1_png), NNXR_ASSET("digit-2.png", digit_2_png),
      NNXR_ASSET("digit-3.png", digit_3_png), NNXR_ASSET("digit-4.png", digit_4_png),
      NNXR_ASSET("digit-5.png", digit_5_png), NNXR_ASSET("digit-6.png", digit_6_png),
      NNXR_ASSET("digit-7.png", digit_7_png), NNXR_ASSET("digit-8.png", digit_8_png),
      NNXR_ASSET("digit-9.png", digit_9_png),
      NNXR_ASSET("classes/imagenet.txt", classes_imagenet_txt), NNXR_ASSET("classes/coco91.txt", classes_coco91_txt),
      NNXR_ASSET("classes/coco80.txt", classes_coco80_txt), NNXR_ASSET("classes/cifar10.txt", classes_cifar10_txt),
      NNXR_ASSET("classes/digits.txt", classes_digits_txt),
  };
  return t;
}
#undef NNXR_ASSET

}  // namespace

std::span<const Asset> all() { return table(); }

std::optional<Asset> find(std::string_view name) {
  for (const Asset& a : table())
    if (a.name == name) return a;
  return std::nullopt;
}

Asset default_model() { return table()[0]; }
Asset default_input() { return *find("digit-3.png"); }

}  // namespace nnxr::assets
