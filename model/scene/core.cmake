# The scene core of nnxr_scene: layout, build (scoring, budget, sorting, writing), filters,
# trace and sinks. The per-op connectors come from connect.cmake.
add_library(nnxr_scene STATIC)
target_include_directories(nnxr_scene PUBLIC ${PROJECT_SOURCE_DIR})
target_link_libraries(nnxr_scene PUBLIC nnxr_model nnxr_runtime Threads::Threads PRIVATE nnxr_warnings)
target_sources(nnxr_scene PRIVATE
  activations.cpp
  build.cpp
  compare.cpp
  contribution.cpp
  filter.cpp
  focus.cpp
  labels.cpp
  layout.cpp
  refresh.cpp
  sink.cpp
  tiles.cpp
  trace.cpp)
# The per-element loops (ranking, record conversion, radix sorts) are the build's hot path.
set_source_files_properties(build.cpp refresh.cpp PROPERTIES COMPILE_OPTIONS "-O3")
