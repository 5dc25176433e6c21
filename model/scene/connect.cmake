# The per-op connectors of nnxr_scene (connect.h): the registry and one file per op family.
set(NNXR_CONNECT_SOURCES
  connect.cpp
  connect_conv.cpp
  connect_elementwise.cpp
  connect_index.cpp
  connect_matmul.cpp
  connect_misc.cpp
  connect_pool.cpp
  connect_reduce.cpp
  connect_resize.cpp
  connect_shape.cpp)
target_sources(nnxr_scene PRIVATE ${NNXR_CONNECT_SOURCES})
# The scoring loops of the weighted ops are the scene build's hot path: let the compiler
# vectorise them even in RelWithDebInfo builds.
set_source_files_properties(connect_conv.cpp connect_matmul.cpp PROPERTIES COMPILE_OPTIONS "-O3")
