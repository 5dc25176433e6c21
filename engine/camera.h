// Camera presets that frame a network's bounding box, for the offscreen renderer and as the
// desktop viewer's starting views. Coordinates are the layout's: X is depth (input → output), Y
// up, Z across. Projections are right-handed, Vulkan clip space (Y down, depth 0..1).
#pragma once

#include <array>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <glm/glm.hpp>

namespace nnxr::engine {

// Every preset holds the whole network and makes it span at least about half the image width:
// when its own direction cannot (a network far taller than it is deep, or a long thin line), it
// turns about the vertical, changes elevation or (all but the overview) turns the image a quarter,
// in that order of preference. Before the overview turns, it tries each of its views closer (a
// margin of 1.5% of the image instead of 4%), so that a network held by the height of a tall
// first block (SqueezeNet) is still seen from the side-front, its depth in view, rather than
// down the depth axis. Side and top look from elevations 40 degrees or more apart.
enum class CameraPreset {
  Overview,  // above and to the side of the input end, the whole network in view (default)
  Front,     // down the depth axis from a little above and to the side of the input
  Side,      // from the side, 20 degrees up, depth running left to right
  Top,       // from above, 70 degrees up, depth running left to right
};

std::optional<CameraPreset> parse_camera_preset(std::string_view name);  // nullopt: unknown
std::string camera_preset_names();  // "overview, front, side, top"

// The vertical field of view `render` and the desktop viewer's home view frame with (radians).
inline constexpr float kFrameFovY = 0.6f;

struct Camera {
  glm::vec3 eye{0}, target{0}, up{0, 1, 0};
  float fov_y = kFrameFovY;  // radians
  float near = 0.01f, far = 100.0f;

  glm::mat4 view() const;
  glm::mat4 projection(float aspect) const;  // Vulkan clip space
};

// A camera of `preset` whose view contains the box [min, max] for a target of aspect w/h. Exact
// (the nearest eye whose frustum holds every point, centred between the extremes).
Camera frame_bounds(CameraPreset preset, glm::vec3 min, glm::vec3 max, float aspect, float fov_y = kFrameFovY);
// The same for a set of points (e.g. the corners of every tensor block): a tighter framing when
// the box has empty corners. `render`, the desktop viewer's home view and the labels' thinning
// all frame the blocks' corners (block_corners) with it, so that `view` opens on the picture
// `render` writes at the same aspect.
// `clear`: the framing keeps these fractions of the image clear at each side (the view's corner
// panels, frame_clear) and frames into the rest, off the image's centre; the
// width and outline a view must reach are measured against that rest. None: the whole image.
struct FrameInsets {
  float left = 0, right = 0, top = 0, bottom = 0;  // of the width (left, right), of the height
};
Camera frame_points(CameraPreset preset, std::span<const glm::vec3> points, float aspect, float fov_y = kFrameFovY,
                    FrameInsets clear = {});
// A rectangle of the image in pixels (origin at the top left, y down): a panel drawn over it.
struct ScreenRect {
  glm::vec2 min{0}, max{0};
  bool contains(glm::vec2 p) const { return p.x > min.x && p.x < max.x && p.y > min.y && p.y < max.y; }
};
// frame_points for an image of `viewport` pixels over which `panels` are drawn (the corner panels
// of the desktop's view and of `render`: engine/interaction.h panel_rects): no point lands in a
// panel. It frames into the whole image first; for each panel some point then lands in, it keeps
// clear the side of the image the panel stands against across it (FrameInsets: the panel's width
// at the left or right, or its height at the top or bottom, the panel's nearer edges) and frames
// again. Of the ways to clear every panel (each panel by its horizontal or its vertical side, as
// each is reached in turn) it prefers one that looks no nearer the depth axis than the preset
// does for the whole image (a narrower part may fail the preset's width test and turn it), then
// one whose points span half the image's width, and of those the one that shows them largest (the area of their projected bounds); each of its insets
// is then narrowed as far as the points stay clear and show larger from that direction. No panel
// reached: frame_points itself. A panel no inset clears (one wider or taller than 45% of the
// image) stays reached: the framing with the fewest panels reached is taken.
// `reduce`: more than 256 points are framed from those that decide each preset view's framing (its
// extremes and the outline's vertices in many directions: BERT's 13,279 block corners as a few
// hundred), every point still checked against the panels; false: from every point (the same
// camera within a pixel, tests/engine/test_desktop.cpp).
Camera frame_clear(CameraPreset preset, std::span<const glm::vec3> points, glm::vec2 viewport, std::span<const ScreenRect> panels,
                   float fov_y = kFrameFovY, bool reduce = true);
// Where `points` land in an image of `viewport` pixels through `camera` (origin at the top left, y
// down; a point behind the eye lands at infinity).
std::vector<glm::vec2> project_points(const Camera& camera, std::span<const glm::vec3> points, glm::vec2 viewport);

// The overview's rule for a head that looks straight ahead (the headset's start, xr/placement.h):
// the same directions about the vertical in the same order, the same margins and the same test
// of width and outline, seen level first (elevation 0), so that the network stands upright at eye
// height; only a network that no level view frames (far taller than deep, as UltraFace's strip)
// takes the overview's own views, and the headset tilts it to match. For the wide field of a
// headset, a view must also keep its nearest block at 45% or more of the depth of the network's
// middle (a deep network seen obliquely from close by would otherwise reach into the face), so
// the headset sees most networks more from the side than the desktop does.
Camera frame_level(std::span<const glm::vec3> points, float aspect, float fov_y);

// The 8 corners of the box [min, max], appended to `out`.
void add_corners(std::vector<glm::vec3>& out, glm::vec3 min, glm::vec3 max);

}  // namespace nnxr::engine
