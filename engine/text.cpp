#include "engine/text.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#include <stb_truetype.h>
#pragma GCC diagnostic pop

#include "engine/device.h"

namespace nnxr::embedded {
extern const unsigned char dejavu_sans_ttf[];
extern const std::size_t dejavu_sans_ttf_size;
}  // namespace nnxr::embedded

namespace nnxr::engine {
namespace {

constexpr float kBakePixels = 48;      // em height the SDFs are baked at
constexpr int kPadding = 6;            // texels of distance field around each glyph
constexpr unsigned char kOnEdge = 128;
constexpr float kDistScale = 128.0f / kPadding;  // SDF value units per texel of distance
constexpr uint32_t kAtlasWidth = 512;

}  // namespace

uint32_t pack_colour(glm::vec4 c) {
  auto byte = [](float v) { return uint32_t(std::clamp(v, 0.0f, 1.0f) * 255.0f + 0.5f); };
  return byte(c.r) | byte(c.g) << 8 | byte(c.b) << 16 | byte(c.a) << 24;
}

const Font& Font::builtin() {
  static const Font font(std::span(reinterpret_cast<const std::byte*>(embedded::dejavu_sans_ttf),
                                   embedded::dejavu_sans_ttf_size));
  return font;
}

Font::Font(std::span<const std::byte> ttf) {
  const auto* data = reinterpret_cast<const unsigned char*>(ttf.data());
  stbtt_fontinfo info;
  if (ttf.size() < 12 || !stbtt_InitFont(&info, data, stbtt_GetFontOffsetForIndex(data, 0)))
    throw std::runtime_error("font: not a TrueType font stb_truetype can read");
  const float scale = stbtt_ScaleForPixelHeight(&info, kBakePixels);
  int ascent = 0, descent = 0, gap = 0;
  stbtt_GetFontVMetrics(&info, &ascent, &descent, &gap);
  ascent_ = float(ascent) * scale / kBakePixels;
  line_ = float(ascent - descent + gap) * scale / kBakePixels;

  struct Baked {
    unsigned char* sdf = nullptr;
    int w = 0, h = 0, x = 0, y = 0;
  };
  std::vector<Baked> baked(kLast - kFirst + 1);
  glyphs_.resize(baked.size());
  // Shelf packing, one texel apart.
  uint32_t x = 1, y = 1, shelf = 0;
  for (uint32_t c = kFirst; c <= kLast; ++c) {
    Baked& b = baked[c - kFirst];
    Glyph& g = glyphs_[c - kFirst];
    int advance = 0, lsb = 0;
    stbtt_GetCodepointHMetrics(&info, int(c), &advance, &lsb);
    g.advance = float(advance) * scale / kBakePixels;
    b.sdf = stbtt_GetCodepointSDF(&info, scale, int(c), kPadding, kOnEdge, kDistScale, &b.w, &b.h, &b.x, &b.y);
    if (!b.sdf) continue;  // space
    if (x + uint32_t(b.w) + 1 > kAtlasWidth) {
      x = 1;
      y += shelf + 1;
      shelf = 0;
    }
    g.u0 = uint16_t(x);
    g.v0 = uint16_t(y);
    g.u1 = uint16_t(x + uint32_t(b.w));
    g.v1 = uint16_t(y + uint32_t(b.h));
    g.offset = glm::vec2(float(b.x), float(b.y)) / kBakePixels;
    g.extent = glm::vec2(float(b.w), float(b.h)) / kBakePixels;
    x += uint32_t(b.w) + 1;
    shelf = std::max(shelf, uint32_t(b.h));
  }
  atlas_w_ = kAtlasWidth;
  atlas_h_ = y + shelf + 4;
  atlas_.assign(size_t(atlas_w_) * atlas_h_, 0);
  for (uint32_t c = kFirst; c <= kLast; ++c) {
    Baked& b = baked[c - kFirst];
    if (!b.sdf) continue;
    const Glyph& g = glyphs_[c - kFirst];
    for (int row = 0; row < b.h; ++row)
      std::memcpy(&atlas_[(size_t(g.v0) + size_t(row)) * atlas_w_ + g.u0], b.sdf + size_t(row) * size_t(b.w), size_t(b.w));
    stbtt_FreeSDF(b.sdf, nullptr);
  }
  // A solid 2×2 block in the bottom-right corner for filled rectangles.
  for (uint32_t yy = atlas_h_ - 3; yy < atlas_h_ - 1; ++yy)
    for (uint32_t xx = atlas_w_ - 3; xx < atlas_w_ - 1; ++xx) atlas_[size_t(yy) * atlas_w_ + xx] = 255;
  solid_ = {uint16_t(atlas_w_ - 2), uint16_t(atlas_h_ - 2)};
}

const Font::Glyph& Font::glyph(char c) const {
  const auto u = uint32_t(static_cast<unsigned char>(c));
  return glyphs_[(u >= kFirst && u <= kLast ? u : uint32_t('?')) - kFirst];
}

float Font::width(std::string_view text) const {
  float w = 0;
  for (char c : text) w += glyph(c).advance;
  return w;
}

glm::vec2 text_size(const Font& font, std::string_view text) {
  glm::vec2 size{0, 0};
  size_t start = 0;
  for (;;) {
    const size_t end = text.find('\n', start);
    size.x = std::max(size.x, font.width(text.substr(start, end == std::string_view::npos ? end : end - start)));
    size.y += font.line_height();
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  return size;
}

glm::vec2 TextBuilder::add(glm::vec3 at, std::string_view text, const TextStyle& style, uint32_t flags) {
  const glm::vec2 size = text_size(font_, text);
  flags |= uint32_t(style.menu ? Corner::TopLeft : style.corner) << glyph_flags::kCornerShift;
  if (style.menu && (flags & glyph_flags::kScreen)) flags |= glyph_flags::kMenu;
  flags |= uint32_t(std::clamp(style.min_px, 0.0f, 255.0f)) << glyph_flags::kMinPxShift;
  flags |= uint32_t(std::clamp(style.max_px, 0.0f, 255.0f)) << glyph_flags::kMaxPxShift;
  const uint32_t rgba = pack_colour(style.colour);
  float y = font_.ascent() - (style.above ? size.y : 0.0f) - style.raise_em;  // baseline of the first line
  size_t start = 0;
  for (;;) {
    const size_t end = text.find('\n', start);
    const std::string_view line = text.substr(start, end == std::string_view::npos ? end : end - start);
    float x = style.centred ? -0.5f * font_.width(line) : 0.0f;
    for (char c : line) {
      const Font::Glyph& g = font_.glyph(c);
      if (g.u1 > g.u0 && glyphs_.size() < kMaxGlyphs) {
        GlyphGpu q;
        q.anchor = at;
        q.em = style.em;
        q.offset = {x + g.offset.x, y + g.offset.y};
        q.extent = g.extent;
        q.uv[0] = uint32_t(g.u0) | uint32_t(g.v0) << 16;
        q.uv[1] = uint32_t(g.u1) | uint32_t(g.v1) << 16;
        q.rgba = rgba;
        q.flags = flags;
        glyphs_.push_back(q);
      }
      x += g.advance;
    }
    y += font_.line_height();
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  return size;
}

glm::vec2 TextBuilder::world(glm::vec3 at, std::string_view text, const TextStyle& style) {
  return add(at, text, style, 0);
}

glm::vec2 TextBuilder::screen(glm::vec2 at, std::string_view text, const TextStyle& style) {
  return add(glm::vec3(at, 0), text, style, glyph_flags::kScreen);
}

void TextBuilder::screen_rect(glm::vec2 at, glm::vec2 size, const TextStyle& style, Fill fill) {
  if (glyphs_.size() >= kMaxGlyphs) return;
  GlyphGpu q;
  q.anchor = glm::vec3(at, 0);
  q.em = 1;
  q.offset = {0, 0};
  q.extent = size;
  const glm::u16vec2 s = font_.solid_texel();
  q.uv[0] = q.uv[1] = uint32_t(s.x) | uint32_t(s.y) << 16;
  q.rgba = pack_colour(style.colour);
  q.flags = glyph_flags::kScreen | uint32_t(style.menu ? Corner::TopLeft : style.corner) << glyph_flags::kCornerShift |
            uint32_t(fill) << glyph_flags::kFillShift | (style.menu ? glyph_flags::kMenu : 0u);
  glyphs_.push_back(q);
}

bool TextBuilder::screen_image(glm::vec2 at, glm::vec2 size, const TextStyle& style, uint32_t width, uint32_t height,
                               std::span<const uint32_t> rgba) {
  if (glyphs_.size() >= kMaxGlyphs || width == 0 || height == 0 || width > 0xffff || height > 0xffff) return false;
  if (rgba.size() != size_t(width) * height || pixels_.size() + rgba.size() > kMaxImagePixels) return false;
  GlyphGpu q;
  const auto first = uint32_t(pixels_.size());
  float bits = 0;
  std::memcpy(&bits, &first, sizeof bits);
  q.anchor = glm::vec3(at, bits);
  q.em = 1;
  q.offset = {0, 0};
  q.extent = size;
  q.uv[0] = 0;
  q.uv[1] = width | height << 16;
  q.rgba = pack_colour(style.colour);
  q.flags = glyph_flags::kScreen | uint32_t(style.corner) << glyph_flags::kCornerShift |
            uint32_t(Fill::Image) << glyph_flags::kFillShift;
  glyphs_.push_back(q);
  pixels_.insert(pixels_.end(), rgba.begin(), rgba.end());
  return true;
}

namespace {
bool is_image(const GlyphGpu& g) { return ((g.flags >> glyph_flags::kFillShift) & 3u) == uint32_t(Fill::Image); }
// A picture's first pixel: in anchor.z (as float bits) on a screen quad, in uv[0] on a world
// quad (whose anchor is a point).
bool is_screen(const GlyphGpu& g) { return (g.flags & glyph_flags::kScreen) != 0; }
uint32_t image_first(const GlyphGpu& g) {
  if (!is_screen(g)) return g.uv[0];
  uint32_t first = 0;
  std::memcpy(&first, &g.anchor.z, sizeof first);
  return first;
}
void set_image_first(GlyphGpu& g, uint32_t first) {
  if (is_screen(g)) std::memcpy(&g.anchor.z, &first, sizeof first);
  else g.uv[0] = first;
}
}  // namespace

void TextBuilder::append(const TextBuilder& other) {
  const auto base = uint32_t(pixels_.size());
  const bool pictures_fit = pixels_.size() + other.pixels_.size() <= kMaxImagePixels;
  if (pictures_fit) pixels_.insert(pixels_.end(), other.pixels_.begin(), other.pixels_.end());
  for (GlyphGpu g : other.glyphs_) {
    if (glyphs_.size() >= kMaxGlyphs) break;
    if (is_image(g)) {
      if (!pictures_fit) continue;
      set_image_first(g, image_first(g) + base);
    }
    glyphs_.push_back(g);
  }
}

bool TextBuilder::world_image(glm::vec3 at, glm::vec2 offset, glm::vec2 size, const TextStyle& style, uint32_t width,
                              uint32_t height, std::span<const uint32_t> rgba) {
  if (glyphs_.size() >= kMaxGlyphs || width == 0 || height == 0 || width > 0xffff || height > 0xffff) return false;
  if (rgba.size() != size_t(width) * height || pixels_.size() + rgba.size() > kMaxImagePixels) return false;
  GlyphGpu q;
  q.anchor = at;
  q.em = style.em;
  q.offset = offset;
  q.extent = size;
  q.uv[0] = uint32_t(pixels_.size());
  q.uv[1] = width | height << 16;
  q.rgba = pack_colour(style.colour);
  q.flags = uint32_t(Fill::Image) << glyph_flags::kFillShift |
            uint32_t(std::clamp(style.min_px, 0.0f, 255.0f)) << glyph_flags::kMinPxShift |
            uint32_t(std::clamp(style.max_px, 0.0f, 255.0f)) << glyph_flags::kMaxPxShift;
  glyphs_.push_back(q);
  pixels_.insert(pixels_.end(), rgba.begin(), rgba.end());
  return true;
}

void TextBuilder::world_rect(glm::vec3 at, glm::vec2 offset, glm::vec2 size, const TextStyle& style) {
  if (glyphs_.size() >= kMaxGlyphs) return;
  GlyphGpu q;
  q.anchor = at;
  q.em = style.em;
  q.offset = offset;
  q.extent = size;
  const glm::u16vec2 s = font_.solid_texel();
  q.uv[0] = q.uv[1] = uint32_t(s.x) | uint32_t(s.y) << 16;
  q.rgba = pack_colour(style.colour);
  q.flags = uint32_t(Fill::Solid) << glyph_flags::kFillShift |
            uint32_t(std::clamp(style.min_px, 0.0f, 255.0f)) << glyph_flags::kMinPxShift |
            uint32_t(std::clamp(style.max_px, 0.0f, 255.0f)) << glyph_flags::kMaxPxShift;
  glyphs_.push_back(q);
}

// ---- TextBuffer ----------------------------------------------------------------------------------

TextBuffer::TextBuffer(const Device& device, uint32_t frames_in_flight) {
  slots_.resize(frames_in_flight + 2);
  buffer_ = create_mapped_buffer(device,
                                 (VkDeviceSize(kMaxGlyphs) * sizeof(GlyphGpu) + VkDeviceSize(kMaxImagePixels) * 4) * slots_.size(),
                                 VK_BUFFER_USAGE_STORAGE_BUFFER_BIT);
}

void TextBuffer::publish(std::span<const GlyphGpu> glyphs, std::span<const uint32_t> pixels) {
  const bool pictures = pixels.size() <= kMaxImagePixels;
  const uint32_t count = uint32_t(std::min<size_t>(glyphs.size(), kMaxGlyphs));
  std::unique_lock lock(mutex_);
  uint32_t slot = 0;
  retired_cv_.wait(lock, [&] {
    if (stopped_) return true;
    for (uint32_t i = 0; i < slots_.size(); ++i)
      if ((!any_ || i != current_) && slots_[i].last_use <= retired_) {
        slot = i;
        return true;
      }
    return false;
  });
  if (stopped_) throw std::runtime_error("stopped");
  lock.unlock();  // the slot is neither current nor pinned: only this thread touches it
  auto* base = static_cast<GlyphGpu*>(buffer_.mapped) + size_t(slot) * kMaxGlyphs;
  if (count > 0) std::memcpy(base, glyphs.data(), size_t(count) * sizeof(GlyphGpu));  // data() may be null
  // The slot's pictures, after every slot's glyphs; Image quads get the index of their first pixel
  // in 32-bit words of the whole buffer (shaders/text.glsl's Pixels), or become empty quads.
  const size_t pixel_base = size_t(slots_.size()) * kMaxGlyphs * (sizeof(GlyphGpu) / 4) + size_t(slot) * kMaxImagePixels;
  if (pictures && !pixels.empty())
    std::memcpy(static_cast<uint32_t*>(buffer_.mapped) + pixel_base, pixels.data(), pixels.size() * 4);
  for (uint32_t i = 0; i < count; ++i) {  // read from `glyphs`, not the mapped memory
    if (!is_image(glyphs[i])) continue;
    GlyphGpu g = glyphs[i];
    const uint32_t first = image_first(g), w = g.uv[1] & 0xffffu, h = g.uv[1] >> 16;
    if (pictures && size_t(first) + size_t(w) * h <= pixels.size()) set_image_first(g, uint32_t(pixel_base + first));
    else g.extent = {0, 0};  // its pixels are missing: nothing to draw
    base[i] = g;
  }
  lock.lock();
  slots_[slot].count = count;
  current_ = slot;
  any_ = true;
  ++version_;
}

TextBuffer::Frame TextBuffer::acquire(uint64_t serial) {
  std::lock_guard lock(mutex_);
  if (!any_) return {};
  Slot& s = slots_[current_];
  s.last_use = std::max(s.last_use, serial);
  return {current_ * kMaxGlyphs, s.count};
}

void TextBuffer::retire(uint64_t serial) {
  {
    std::lock_guard lock(mutex_);
    retired_ = std::max(retired_, serial);
  }
  retired_cv_.notify_all();
}

void TextBuffer::stop() {
  {
    std::lock_guard lock(mutex_);
    stopped_ = true;
  }
  retired_cv_.notify_all();
}

uint64_t TextBuffer::version() const {
  std::lock_guard lock(mutex_);
  return version_;
}

}  // namespace nnxr::engine
