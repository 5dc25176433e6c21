#include "app/image_decode.h"

#include <csetjmp>
#include <cstdio>
#include <cstring>

// jpeglib.h needs FILE and size_t declared first.
#include <jpeglib.h>
#include <png.h>

#include "model/load.h"

namespace nnxr::app {
namespace {

[[noreturn]] void fail(const std::string& source, const std::string& what) { throw model::ModelError(source + ": " + what); }

bool starts_with(std::span<const std::byte> b, std::string_view magic) {
  return b.size() >= magic.size() && std::memcmp(b.data(), magic.data(), magic.size()) == 0;
}

// What a file that is neither PNG nor JPEG looks like, for the message.
std::string looks_like(std::span<const std::byte> b) {
  if (b.size() >= 2 && static_cast<char>(b[0]) == 'P' && static_cast<char>(b[1]) >= '1' && static_cast<char>(b[1]) <= '7') return "a PNM/PAM image";
  if (starts_with(b, "#?RADIANCE") || starts_with(b, "#?RGBE")) return "a Radiance HDR image";
  if (starts_with(b, "GIF8")) return "a GIF image";
  if (starts_with(b, "BM")) return "a BMP image";
  if (starts_with(b, "8BPS")) return "a Photoshop image";
  if (starts_with(b, "RIFF")) return "a RIFF (WebP?) file";
  if (starts_with(b, "II*") || starts_with(b, "MM\0*")) return "a TIFF image";
  if (starts_with(b, "\x93NUMPY")) return "a .npy tensor";
  return "neither";
}

void check_size(const std::string& source, uint64_t w, uint64_t h) {
  if (w == 0 || h == 0) fail(source, "the image is empty (" + std::to_string(w) + "x" + std::to_string(h) + ")");
  if (w > kMaxImageSide || h > kMaxImageSide || w * h > kMaxImagePixels)
    fail(source, "the image is " + std::to_string(w) + "x" + std::to_string(h) + "; at most " + std::to_string(kMaxImageSide) +
                     " pixels a side and " + std::to_string(kMaxImagePixels / 1'000'000) + " megapixels are decoded");
}

DecodedImage decode_png(std::span<const std::byte> bytes, const std::string& source, int channels) {
  png_image image;
  std::memset(&image, 0, sizeof image);
  image.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_memory(&image, bytes.data(), bytes.size()))
    fail(source, std::string("not a readable PNG image (") + image.message + ")");
  const uint64_t w = image.width, h = image.height;
  try {
    check_size(source, w, h);
  } catch (...) {
    png_image_free(&image);
    throw;
  }
  // 16-bit files are read as 16-bit without a gamma change (the simplified API treats them as
  // linear) and reduced to their high byte, as 8-bit files are read as they are.
  const bool sixteen = (image.format & PNG_FORMAT_FLAG_LINEAR) != 0;
  image.format = (channels == 1 ? PNG_FORMAT_GRAY : channels == 3 ? PNG_FORMAT_RGB : PNG_FORMAT_RGBA) | (sixteen ? PNG_FORMAT_FLAG_LINEAR : 0);
  DecodedImage out;
  out.width = static_cast<uint32_t>(w);
  out.height = static_cast<uint32_t>(h);
  out.channels = channels;
  std::vector<uint16_t> wide;
  if (sixteen) wide.resize(PNG_IMAGE_SIZE(image) / 2);
  else out.pixels.resize(PNG_IMAGE_SIZE(image));
  void* buffer = sixteen ? static_cast<void*>(wide.data()) : static_cast<void*>(out.pixels.data());
  if (!png_image_finish_read(&image, nullptr, buffer, 0, nullptr)) {
    const std::string msg = image.message;
    png_image_free(&image);
    fail(source, "not a readable PNG image (" + msg + ")");
  }
  if (sixteen) {
    out.pixels.resize(wide.size());
    for (size_t i = 0; i < wide.size(); ++i) out.pixels[i] = static_cast<unsigned char>(wide[i] >> 8);
  }
  png_image_free(&image);
  return out;
}

struct JpegError {
  jpeg_error_mgr mgr;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

void jpeg_error_exit(j_common_ptr cinfo) {
  auto* e = reinterpret_cast<JpegError*>(cinfo->err);
  e->mgr.format_message(cinfo, e->message);
  std::longjmp(e->jump, 1);
}

void jpeg_quiet(j_common_ptr, int) {}

// Returns false with err.message set on a decoding error. No C++ object with a destructor lives
// between setjmp and the jumps (out and its buffer are the caller's).
bool decode_jpeg_into(std::span<const std::byte> bytes, int channels, DecodedImage& out, JpegError& err, const std::string& source) {
  jpeg_decompress_struct cinfo;
  cinfo.err = jpeg_std_error(&err.mgr);
  err.mgr.error_exit = jpeg_error_exit;
  err.mgr.emit_message = jpeg_quiet;
  if (setjmp(err.jump)) {
    jpeg_destroy_decompress(&cinfo);
    return false;
  }
  jpeg_create_decompress(&cinfo);
  jpeg_mem_src(&cinfo, reinterpret_cast<const unsigned char*>(bytes.data()), static_cast<unsigned long>(bytes.size()));
  jpeg_read_header(&cinfo, TRUE);
  const uint64_t w = cinfo.image_width, h = cinfo.image_height;
  if (w == 0 || h == 0 || w > kMaxImageSide || h > kMaxImageSide || w * h > kMaxImagePixels) {
    out.width = static_cast<uint32_t>(std::min<uint64_t>(w, UINT32_MAX));
    out.height = static_cast<uint32_t>(std::min<uint64_t>(h, UINT32_MAX));
    jpeg_destroy_decompress(&cinfo);
    return true;  // the caller reports the size
  }
  cinfo.out_color_space = channels == 1 ? JCS_GRAYSCALE : channels == 3 ? JCS_RGB : JCS_EXT_RGBA;
  jpeg_start_decompress(&cinfo);
  if (cinfo.output_components != channels) {
    std::snprintf(err.message, sizeof err.message, "decodes to %d channels, not %d", cinfo.output_components, channels);
    jpeg_destroy_decompress(&cinfo);
    return false;
  }
  out.width = cinfo.output_width;
  out.height = cinfo.output_height;
  out.channels = channels;
  out.pixels.resize(static_cast<size_t>(out.width) * out.height * static_cast<size_t>(channels));  // may throw: before any jump
  const size_t stride = static_cast<size_t>(out.width) * static_cast<size_t>(channels);
  while (cinfo.output_scanline < cinfo.output_height) {
    JSAMPROW row = out.pixels.data() + static_cast<size_t>(cinfo.output_scanline) * stride;
    jpeg_read_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_decompress(&cinfo);
  jpeg_destroy_decompress(&cinfo);
  (void)source;
  return true;
}

DecodedImage decode_jpeg(std::span<const std::byte> bytes, const std::string& source, int channels) {
  DecodedImage out;
  JpegError err{};
  if (!decode_jpeg_into(bytes, channels, out, err, source)) fail(source, std::string("not a readable JPEG image (") + err.message + ")");
  if (out.pixels.empty()) check_size(source, out.width, out.height);
  return out;
}

}  // namespace

DecodedImage decode_image_file(std::span<const std::byte> bytes, const std::string& source, int channels) {
  if (channels != 1 && channels != 3 && channels != 4) fail(source, "images feed inputs of 1, 3 or 4 channels, not " + std::to_string(channels));
  if (starts_with(bytes, "\x89PNG\r\n\x1a\n")) return decode_png(bytes, source, channels);
  if (starts_with(bytes, "\xff\xd8\xff")) return decode_jpeg(bytes, source, channels);
  const std::string kind = looks_like(bytes);
  fail(source, "not a readable image: only PNG and JPEG are read, and this is " + (kind == "neither" ? std::string("neither") : kind));
}

}  // namespace nnxr::app
