# Worker pipeline, interaction and the desktop window: adds sources to nnxr_engine.
