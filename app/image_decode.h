// Decoding image inputs with libpng and libjpeg-turbo: PNG and JPEG only, recognised by their
// content (not their name). Everything else (PNM, HDR, GIF, BMP, ...) is refused with a message
// naming what it looks like. The decoded size is checked from the header before any pixel buffer
// is allocated.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace nnxr::app {

// At most this many pixels (and 16384 on a side) are decoded.
inline constexpr uint64_t kMaxImagePixels = uint64_t{8192} * 8192;
inline constexpr uint32_t kMaxImageSide = 16384;
// Image files larger than this are not read.
inline constexpr uint64_t kMaxImageFileBytes = uint64_t{256} << 20;

struct DecodedImage {
  uint32_t width = 0, height = 0;
  int channels = 0;                  // as requested: 1 (grey), 3 (RGB) or 4 (RGBA)
  std::vector<unsigned char> pixels;  // rows top to bottom, channels interleaved, 8 bits each
};

// Decodes `bytes` (the content of `source`, for messages) to `channels` 8-bit channels; 16-bit
// PNGs are reduced to 8 bits. Throws model::ModelError "SOURCE: ..." on anything else.
DecodedImage decode_image_file(std::span<const std::byte> bytes, const std::string& source, int channels);

}  // namespace nnxr::app
