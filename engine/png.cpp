// PNG writing with stb_image_write (functions kept static to this file).
#define STB_IMAGE_WRITE_IMPLEMENTATION
#define STB_IMAGE_WRITE_STATIC
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#pragma GCC diagnostic ignored "-Wunused-function"
#endif
#include <stb_image_write.h>
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

#include <stdexcept>

#include "engine/offscreen.h"

namespace nnxr::engine {

void write_png(const std::string& path, const RgbaImage& image) {
  if (image.width == 0 || image.height == 0 || image.pixels.size() != size_t(image.width) * image.height * 4)
    throw std::runtime_error(path + ": cannot write an empty or malformed image");
  if (!stbi_write_png(path.c_str(), int(image.width), int(image.height), 4, image.pixels.data(), int(image.width * 4)))
    throw std::runtime_error(path + ": cannot write PNG file");
}

}  // namespace nnxr::engine
