# Vulkan core tests (label engine): offscreen renders on lavapipe with the validation layers on.
add_library(nnxr_engine_test_env STATIC vulkan_env.cpp)
target_include_directories(nnxr_engine_test_env PUBLIC ${PROJECT_SOURCE_DIR})
target_link_libraries(nnxr_engine_test_env PUBLIC nnxr_engine GTest::gtest PRIVATE nnxr_warnings)

nnxr_test(test_render LABEL engine PREFIX "engine." test_render.cpp)
target_link_libraries(test_render PRIVATE nnxr_engine_test_env)
nnxr_test(test_large_scene LABEL engine PREFIX "engine." test_large_scene.cpp)
target_link_libraries(test_large_scene PRIVATE nnxr_engine_test_env)
nnxr_test(test_scene_buffers LABEL engine PREFIX "engine." test_scene_buffers.cpp)
target_link_libraries(test_scene_buffers PRIVATE nnxr_engine_test_env)
nnxr_test(test_default_model LABEL engine PREFIX "engine." test_default_model.cpp)
target_link_libraries(test_default_model PRIVATE nnxr_engine_test_env nnxr_runtime)
add_dependencies(test_default_model nnxr)
