// Where the headset first puts the network, and puts it back on "reset": by the framing rule of
// `render` and the desktop viewer (engine/camera.h), seen from the head looking straight ahead.
//
// Pure geometry (glm and engine/camera.h; no OpenXR, no Vulkan).
#pragma once

#include <span>

#include <glm/glm.hpp>

#include "engine/interaction.h"
#include "xr/gestures.h"

namespace nnxr::xr {

// An eye's field of view as OpenXR gives it (XrFovf): angles from the view's axis in radians,
// left and down negative. The default is the simulated runtime's 90° square.
struct EyeFov {
  float left = -0.785398f, right = 0.785398f, up = 0.785398f, down = -0.785398f;
};

// Metres from the eyes to the network's middle (along the gaze), and the least distance to its
// nearest block (beyond arm's length, so that it does not stand in the face).
inline constexpr float kPlaceDistance = 1.5f;
inline constexpr float kPlaceNearest = 0.45f;

// The network's transform into the room such that the head, looking level along its heading from
// where it stands, sees the picture engine::frame_level frames for the eye's field of view (the
// narrower half-angle of each axis, so that both eyes hold it): the network upright at eye
// height, seen from the side-front, spanning at least about half the view's width and wholly
// inside it. Only the scale is free (it leaves the picture as it is): the network's middle
// kPlaceDistance ahead, its nearest block no nearer than kPlaceNearest. `corners`: the corners of
// the laid-out blocks (network space); none gives scale 1, the origin kPlaceDistance ahead.
WorldTransform place_network(std::span<const glm::vec3> corners, const Pose& head, const EyeFov& fov = {});

// The board of the view's panels (xr/feedback.h kPanelCanvas: title, prediction, legend,
// selection), placed with the network: beside the left of its framed extent as the head sees it
// (kBoardGap to spare), kBoardDistance from the head (nearer than the network's middle), its
// middle kBoardBelow under the eyes, facing the head. From that head pose the board covers none
// of the network. As a canvas pixels → world matrix (xr/feedback.h canvas_plane). `corners`: the
// laid-out blocks' corners (network space), `world` their placement; none: the board's right
// edge 20° left of the heading.
inline constexpr float kBoardDistance = 1.1f;
inline constexpr float kBoardBelow = 0.15f;
inline constexpr float kBoardGap = 0.07f;  // radians
glm::mat4 place_board(std::span<const glm::vec3> corners, const WorldTransform& world, const Pose& head);

}  // namespace nnxr::xr
