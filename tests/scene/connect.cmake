# Connector tests: every connector against a brute-force enumeration of its op's candidates.
nnxr_test(test_connect LABEL scene test_connect.cpp test_connect_ops.cpp)
target_link_libraries(test_connect PRIVATE nnxr_scene nnxr_runtime)
