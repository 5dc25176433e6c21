# Vulkan core: defines nnxr_engine (device, memory, scene buffers, pipelines, renderer, offscreen
# render, camera presets). The SPIR-V comes from nnxr_shaders (shaders/).
add_library(nnxr_engine STATIC
  vk.cpp
  device.cpp
  memory.cpp
  scene_buffers.cpp
  tiles.cpp
  pipelines.cpp
  renderer.cpp
  overlay.cpp
  offscreen.cpp
  png.cpp
  camera.cpp
  text.cpp
  annotations.cpp
)
# The label font (Debian fonts-dejavu-core), embedded; engine/text.cpp bakes its SDF glyphs.
find_file(NNXR_FONT DejaVuSans.ttf PATHS /usr/share/fonts/truetype/dejavu NO_DEFAULT_PATH)
if(NOT NNXR_FONT)
  message(FATAL_ERROR "DejaVuSans.ttf not found: install fonts-dejavu-core (tools/setup.sh)")
endif()
nnxr_embed(nnxr_engine dejavu_sans_ttf ${NNXR_FONT})
target_include_directories(nnxr_engine PUBLIC ${PROJECT_SOURCE_DIR})
target_link_libraries(nnxr_engine
  PUBLIC Vulkan::Vulkan glm::glm nnxr_scene nnxr_model nnxr_runtime Threads::Threads
  PRIVATE nnxr_shaders PkgConfig::STB nnxr_warnings)
