# Vulkan core tests.
