add_library(nnxr_scene STATIC)
target_include_directories(nnxr_scene PUBLIC ${PROJECT_SOURCE_DIR})
target_link_libraries(nnxr_scene PUBLIC nnxr_model nnxr_runtime PRIVATE nnxr_warnings)
