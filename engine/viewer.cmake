# Worker pipeline, interaction and the desktop window: adds sources to nnxr_engine.
#
# The interaction logic (camera, world transform, thresholds, key bindings) is pure math with no
# Vulkan, so it is its own small library, nnxr_interaction, which nnxr_engine links; tests and
# xr/ can use it without a device. Without the Vulkan core (core.cmake defines nnxr_engine), the
# worker builds alone as nnxr_viewer_logic so that its tests still run.
add_library(nnxr_interaction STATIC interaction.cpp search.cpp)
target_include_directories(nnxr_interaction PUBLIC ${PROJECT_SOURCE_DIR})
target_link_libraries(nnxr_interaction PUBLIC nnxr_model glm::glm PRIVATE nnxr_warnings)

if(TARGET nnxr_engine)
  target_sources(nnxr_engine PRIVATE
    worker.cpp
    worker_stages.cpp
    viewer_state.cpp
    swapchain.cpp
    desktop.cpp
    mirror.cpp
    search_overlay.cpp
  )
  target_link_libraries(nnxr_engine PUBLIC nnxr_interaction nnxr_scene Threads::Threads PRIVATE glfw)
  set(NNXR_VIEWER_LIB nnxr_engine)
else()
  add_library(nnxr_viewer_logic STATIC worker.cpp worker_stages.cpp)
  target_include_directories(nnxr_viewer_logic PUBLIC ${PROJECT_SOURCE_DIR})
  target_link_libraries(nnxr_viewer_logic PUBLIC nnxr_interaction nnxr_scene Threads::Threads PRIVATE nnxr_warnings)
  set(NNXR_VIEWER_LIB nnxr_viewer_logic)
endif()
set(NNXR_VIEWER_LIB ${NNXR_VIEWER_LIB} PARENT_SCOPE)
