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
#include <vector>

#include "engine/offscreen.h"
#include "model/file_io.h"

namespace nnxr::engine {

void write_png(const std::string& path, const RgbaImage& image) {
  if (image.width == 0 || image.height == 0 || image.pixels.size() != size_t(image.width) * image.height * 4)
    throw std::runtime_error(path + ": cannot write an empty or malformed image");
  // Encoded in memory, then written with every write and the close checked (a full disk,
  // /dev/full or a file in /proc must fail, not print "wrote").
  std::vector<std::byte> png;
  auto append = [](void* context, void* data, int size) {
    auto* out = static_cast<std::vector<std::byte>*>(context);
    const auto* bytes = static_cast<const std::byte*>(data);
    out->insert(out->end(), bytes, bytes + size);
  };
  if (!stbi_write_png_to_func(append, &png, int(image.width), int(image.height), 4, image.pixels.data(), int(image.width * 4)))
    throw std::runtime_error(path + ": cannot encode the PNG image");
  model::write_file(path, png, model::WriteMode::Replace);
}

}  // namespace nnxr::engine
