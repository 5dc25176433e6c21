# Layout, build, filter and trace tests; `nnxr inspect --scene`.
nnxr_test(test_scene LABEL scene test_layout.cpp test_build.cpp test_filter.cpp test_trace.cpp test_labels.cpp)
target_link_libraries(test_scene PRIVATE nnxr_scene nnxr_runtime)
nnxr_test(test_inspect_scene LABEL scene test_inspect_scene.cpp ../support/model_bytes.cpp)
target_link_libraries(test_inspect_scene PRIVATE onnx onnx_proto)
add_dependencies(test_inspect_scene nnxr)
# Two inputs compared: divergence, difference, `inspect --scene --compare` against `run --dump`.
nnxr_test(test_compare LABEL scene test_compare.cpp ../support/model_bytes.cpp)
target_link_libraries(test_compare PRIVATE nnxr_scene onnx onnx_proto)
add_dependencies(test_compare nnxr)
# Scene::refresh(): another input on the elements a build chose.
nnxr_test(test_refresh LABEL scene test_refresh.cpp)
target_link_libraries(test_refresh PRIVATE nnxr_scene nnxr_runtime)
