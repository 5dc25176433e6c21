// Draws the desktop's search box (engine/search.h) with the overlay: the query and the matches
// as you type, on a dark panel in the top left of the view. O(matches shown) per frame.
#pragma once

#include "engine/interaction.h"
#include "engine/overlay.h"
#include "engine/search.h"

namespace nnxr::engine {

// Clears `overlay` and draws `search` in front of `camera` (aspect: width / height).
void draw_search(const Search& search, const FlyCamera& camera, float aspect, OverlayBuilder& overlay);

}  // namespace nnxr::engine
