# Worker, interaction and desktop window tests.
nnxr_test(test_interaction LABEL engine PREFIX "viewer." test_interaction.cpp)
target_link_libraries(test_interaction PRIVATE nnxr_interaction)
nnxr_test(test_worker LABEL engine PREFIX "viewer." test_worker.cpp)
target_link_libraries(test_worker PRIVATE ${NNXR_VIEWER_LIB})
if(TARGET nnxr_engine)
  # Window tests start their own Xvfb (tests/engine/xvfb.h) unless DISPLAY is set; Vulkan
  # validation is on in every viewer they create.
  nnxr_test(test_desktop LABEL engine PREFIX "viewer." test_desktop.cpp)
  target_link_libraries(test_desktop PRIVATE nnxr_engine PkgConfig::STB)
  add_dependencies(test_desktop nnxr)
  nnxr_test(test_desktop_filters LABEL engine PREFIX "viewer." test_desktop_filters.cpp)
  target_link_libraries(test_desktop_filters PRIVATE nnxr_engine PkgConfig::STB)
  # Several inputs (arrow keys) and compare mode (C) in the desktop viewer.
  nnxr_test(test_inputs LABEL engine PREFIX "viewer." test_inputs.cpp)
  target_link_libraries(test_inputs PRIVATE nnxr_engine PkgConfig::STB)
  add_dependencies(test_inputs nnxr)
endif()
if(TARGET nnxr_engine)
  # `nnxr render` of every shared model (label models: in the normal build only; the render path
  # runs under the sanitizers in the engine suite).
  nnxr_test(test_shared_render LABEL models PREFIX "render." test_shared_render.cpp)
  target_link_libraries(test_shared_render PRIVATE PkgConfig::STB)
  add_dependencies(test_shared_render nnxr)
endif()
