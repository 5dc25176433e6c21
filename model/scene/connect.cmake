target_sources(nnxr_scene PRIVATE connect.cpp)
