# Vulkan core: defines nnxr_engine.
