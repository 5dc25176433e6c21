#!/usr/bin/env bash
# Configures and builds nnxr into build/ (Release with debug info). Extra arguments go to cmake's
# configure step, e.g. tools/build.sh -DNNXR_BENCH=ON.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -DNNXR_WERROR=ON -DNNXR_RUNTIME=ON "$@" >/dev/null
cmake --build build -j"$(nproc)"
