#!/usr/bin/env bash
# Builds the loader's libFuzzer target with clang (ASan + UBSan) and fuzzes it.
# Usage: tools/fuzz.sh [SECONDS]   (default 60; 0 only replays the seed corpus)
# Findings are written to build-fuzz/findings/; the growing corpus to build-fuzz/corpus/.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
NNXR_SETUP_EXTRA=0 tools/setup.sh
CC=clang CXX=clang++ cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNNXR_FUZZ=ON -DNNXR_TESTS=OFF \
  -DNNXR_WERROR=ON >/dev/null
cmake --build build-fuzz --target load_fuzzer -j"$(nproc)"
mkdir -p build-fuzz/corpus build-fuzz/findings
# The corpus: the committed seeds plus the embedded default model.
cp -n tests/fuzz/corpus/*.onnx assets/digits.onnx build-fuzz/corpus/
export ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
if [[ $seconds == 0 ]]; then
  build-fuzz/tests/fuzz/load_fuzzer -runs=0 build-fuzz/corpus
else
  build-fuzz/tests/fuzz/load_fuzzer -max_total_time="$seconds" -max_len=65536 -rss_limit_mb=2048 -timeout=10 \
    -artifact_prefix=build-fuzz/findings/ -print_final_stats=1 build-fuzz/corpus
fi
