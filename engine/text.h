// Words in the view: signed-distance-field glyphs from DejaVu Sans, laid out on the CPU into glyph
// quads that the renderer's text pass draws.
//
//   const Font& font = Font::builtin();          // baked once (first use, ~20 ms), immutable
//   TextBuilder text(font);
//   text.world({x, y, z}, "Conv", {.em = 0.02f, .colour = ...});   // billboard in network space
//   text.screen({16, 16}, "bell cote 0.87", {.em = 24, .corner = Corner::TopLeft});
//   scene_buffers.text().publish(text.glyphs()); // worker thread; frames draw it from then on
//
// Glyphs are stb_truetype SDFs (stbtt_GetCodepointSDF) of the font file embedded at build time,
// baked at first use into an 8-bit atlas; the fragment shader resolves the edge with smoothstep
// over fwidth, so text is sharp at any scale. World labels are billboards in eye space whose pixel
// height is clamped to [min_px, max_px]: below min_px a label is not drawn at all (labels thin out
// with distance, and less important ones, given a higher min_px, go first).
//
// TextBuffer is the persistently mapped glyph buffer: frames_in_flight + 2 slots of kMaxGlyphs
// (and, after all of them, as many slots of kMaxImagePixels for the pictures);
// publish() (writer thread) fills a slot that no unretired frame reads and makes it current,
// acquire()/retire() (frame thread; SceneBuffers forwards its own) pin a slot to a frame, so a
// frame never sees half-written text. The frame thread's cost is one draw.
//
// Threads: Font and a built TextBuilder's output are plain immutable data. TextBuffer as
// SceneBuffers (writer / frame thread). Lifetime: the Device outlives a TextBuffer.
#pragma once

#include <vulkan/vulkan.h>

#include <algorithm>
#include <array>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <glm/glm.hpp>

#include "engine/memory.h"

namespace nnxr::engine {

class Device;

// One glyph quad as shaders/text.vert reads it (std430, 48 bytes).
struct GlyphGpu {
  glm::vec3 anchor{0};     // world: network-space point; screen: pixels from the corner (x right, y down)
  float em = 0;            // world: em height in network metres; screen: in pixels
  glm::vec2 offset{0};     // quad's top-left from the anchor, in em (x right, y down)
  glm::vec2 extent{0};     // quad size in em
  uint32_t uv[2]{};        // atlas rect in texels: u0 | v0 << 16, u1 | v1 << 16
  uint32_t rgba = 0;       // linear RGBA8, R in the low byte
  uint32_t flags = 0;      // GlyphFlags
};
static_assert(sizeof(GlyphGpu) == 48);

namespace glyph_flags {
inline constexpr uint32_t kScreen = 1u;           // bit 0: screen space (else world billboard)
inline constexpr uint32_t kCornerShift = 1;       // bits 1-2: Corner
inline constexpr uint32_t kFillShift = 3;         // bits 3-4: Fill
inline constexpr uint32_t kMenu = 1u << 5;        // bit 5 (screen glyphs): on the filter menu's canvas (engine/interaction.h FilterMenu)
inline constexpr uint32_t kMinPxShift = 8;        // bits 8-15: world labels hidden below this em height (px)
inline constexpr uint32_t kMaxPxShift = 16;       // bits 16-23: world labels never taller than this (px)
}  // namespace glyph_flags

enum class Corner : uint32_t { TopLeft = 0, TopRight = 1, BottomLeft = 2, BottomRight = 3 };
// ColourMap: the diverging map across the quad. Image: RGBA8 pixels (a picture: the input in its
// true colours, an image output) stored after the glyphs, sampled bilinearly across the quad.
enum class Fill : uint32_t { Glyph = 0, Solid = 1, ColourMap = 2, Image = 3 };

inline constexpr uint32_t kMaxGlyphs = 32768;        // per published text
inline constexpr uint32_t kMaxImagePixels = 1u << 18;  // per published text, all pictures together

class Font {
 public:
  struct Glyph {
    float advance = 0;           // em
    glm::vec2 offset{0};         // quad top-left from the pen (baseline), em, y down
    glm::vec2 extent{0};         // em
    uint16_t u0 = 0, v0 = 0, u1 = 0, v1 = 0;  // atlas texels
  };
  static constexpr uint32_t kFirst = 32, kLast = 126;  // printable ASCII

  // The embedded DejaVu Sans, baked on first use (thread-safe).
  static const Font& builtin();
  // Bakes from TrueType bytes; throws std::runtime_error for a file stb_truetype cannot read.
  explicit Font(std::span<const std::byte> ttf);

  const Glyph& glyph(char c) const;  // non-printable: '?'
  float ascent() const { return ascent_; }    // em, above the baseline
  float line_height() const { return line_; }  // em
  float width(std::string_view text) const;  // em
  uint32_t atlas_width() const { return atlas_w_; }
  uint32_t atlas_height() const { return atlas_h_; }
  std::span<const uint8_t> atlas() const { return atlas_; }  // atlas_w × atlas_h, row-major
  // A texel of the atlas that is fully inside a glyph (for Fill::Solid quads).
  glm::u16vec2 solid_texel() const { return solid_; }

 private:
  std::vector<Glyph> glyphs_;
  std::vector<uint8_t> atlas_;
  uint32_t atlas_w_ = 0, atlas_h_ = 0;
  float ascent_ = 0, line_ = 1;
  glm::u16vec2 solid_{0};
};

struct TextStyle {
  float em = 0.02f;                      // see GlyphGpu::em
  glm::vec4 colour{1, 1, 1, 1};          // linear
  Corner corner = Corner::TopLeft;       // screen text: which corner `at` counts from
  float min_px = 0, max_px = 255;        // world text: see the header comment
  bool centred = false;                  // `at` is the top centre of the first line (else top left)
  bool above = false;                    // the block's last line ends at `at` (stands on it)
  float raise_em = 0;                    // moves the text up by this many em
  // Screen text: on the filter menu's own canvas (pixels from its top left; `corner` is ignored),
  // which the frame places (FrameParams::menu_*), instead of a corner of the view.
  bool menu = false;
};

class TextBuilder {
 public:
  explicit TextBuilder(const Font& font) : font_(font) {}
  const Font& font() const { return font_; }

  // Lines separated by '\n'. Returns the block's size in em (width, height).
  glm::vec2 world(glm::vec3 at, std::string_view text, const TextStyle& style);
  glm::vec2 screen(glm::vec2 at, std::string_view text, const TextStyle& style);
  // Screen-space rectangles (pixels from the style's corner): solid, or the colour map from −1 on
  // the left to +1 on the right.
  void screen_rect(glm::vec2 at, glm::vec2 size, const TextStyle& style, Fill fill = Fill::Solid);
  // A picture of width × height RGBA8 pixels (R in the low byte, row-major, top row first) drawn
  // over `size` pixels from the style's corner. Dropped (false) when the pixels would exceed
  // kMaxImagePixels together with the pictures already added.
  bool screen_image(glm::vec2 at, glm::vec2 size, const TextStyle& style, uint32_t width, uint32_t height,
                    std::span<const uint32_t> rgba);
  // A picture as a world billboard at `at`, `offset` and `size` in em (as a glyph's quad), scaled
  // and clamped like a label (style.min_px, max_px). Dropped (false) as screen_image() is.
  bool world_image(glm::vec3 at, glm::vec2 offset, glm::vec2 size, const TextStyle& style, uint32_t width, uint32_t height,
                   std::span<const uint32_t> rgba);
  // A solid world billboard rectangle at `at`, `offset` and `size` in em (as a glyph's quad):
  // a plate behind a label, scaled and thinned like it.
  void world_rect(glm::vec3 at, glm::vec2 offset, glm::vec2 size, const TextStyle& style);

  std::span<const GlyphGpu> glyphs() const { return glyphs_; }
  // The pictures' pixels; an Image quad's anchor.z (screen, as float bits) or uv[0] (world) holds
  // the index of its first pixel here, which TextBuffer::publish() turns into an index into its
  // buffer.
  std::span<const uint32_t> pixels() const { return pixels_; }
  void append(std::span<const GlyphGpu> glyphs) {
    glyphs_.insert(glyphs_.end(), glyphs.begin(), glyphs.begin() + std::ptrdiff_t(std::min(glyphs.size(), kMaxGlyphs - std::min(glyphs_.size(), size_t(kMaxGlyphs)))));
  }
  void append(const TextBuilder& other);  // its glyphs and pictures
  void clear() {
    glyphs_.clear();
    pixels_.clear();
  }

 private:
  glm::vec2 add(glm::vec3 at, std::string_view text, const TextStyle& style, uint32_t flags);
  const Font& font_;
  std::vector<GlyphGpu> glyphs_;
  std::vector<uint32_t> pixels_;
};

// Measures `text` (lines separated by '\n') in em.
glm::vec2 text_size(const Font& font, std::string_view text);

uint32_t pack_colour(glm::vec4 colour);

class TextBuffer {
 public:
  TextBuffer(const Device& device, uint32_t frames_in_flight);
  TextBuffer(const TextBuffer&) = delete;
  TextBuffer& operator=(const TextBuffer&) = delete;

  // Writer thread: copies at most kMaxGlyphs (the rest is dropped) into a free slot and makes it
  // current. Blocks while every other slot is pinned by an unretired frame; throws
  // std::runtime_error("stopped") after stop().
  // With pictures (TextBuilder::pixels()): at most kMaxImagePixels; Image quads point into them.
  void publish(std::span<const GlyphGpu> glyphs, std::span<const uint32_t> pixels = {});
  void publish(const TextBuilder& text) { publish(text.glyphs(), text.pixels()); }

  struct Frame {
    uint32_t first = 0, count = 0;  // glyph indices into buffer()
  };
  Frame acquire(uint64_t serial);  // frame thread
  void retire(uint64_t serial);
  void stop();

  VkBuffer buffer() const { return buffer_.buffer.get(); }
  uint64_t version() const;  // publishes so far

 private:
  MappedBuffer buffer_;
  mutable std::mutex mutex_;
  std::condition_variable retired_cv_;
  struct Slot {
    uint64_t last_use = 0;
    uint32_t count = 0;
  };
  std::vector<Slot> slots_;
  uint32_t current_ = 0;
  bool any_ = false, stopped_ = false;
  uint64_t retired_ = 0, version_ = 0;
};

}  // namespace nnxr::engine
