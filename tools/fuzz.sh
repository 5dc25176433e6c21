#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (ASan + UBSan) and fuzzes them: the model loader
# (load_fuzzer, two thirds of the time) and the input readers — .npy, TensorProto .pb and the
# PNG/JPEG image decoder (input_fuzzer, one third).
# Usage: tools/fuzz.sh [SECONDS]   (default 60 in all; 0 only replays the seed corpora)
# Findings are written to build-fuzz/findings/; the growing corpora to build-fuzz/corpus/ and
# build-fuzz/corpus-inputs/.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
NNXR_SETUP_EXTRA=0 tools/setup.sh
CC=clang CXX=clang++ cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNNXR_FUZZ=ON -DNNXR_TESTS=OFF \
  -DNNXR_WERROR=ON >/dev/null
cmake --build build-fuzz --target load_fuzzer input_fuzzer -j"$(nproc)"
mkdir -p build-fuzz/corpus build-fuzz/corpus-inputs build-fuzz/findings
# The corpora: the committed seeds plus the embedded default model and input.
cp -n tests/fuzz/corpus/*.onnx assets/digits.onnx build-fuzz/corpus/
cp -n tests/fuzz/inputs/* assets/digit-3.png build-fuzz/corpus-inputs/
export ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# Runs one target for $2 seconds (0: replays its corpus) on the corpus folder $3.
fuzz() {
  local target=$1 time=$2 corpus=$3
  echo "== $target (${time} s)"
  if [[ $time == 0 ]]; then
    "build-fuzz/tests/fuzz/$target" -runs=0 "$corpus"
  else
    "build-fuzz/tests/fuzz/$target" -max_total_time="$time" -max_len=65536 -rss_limit_mb=2048 -timeout=10 \
      -artifact_prefix=build-fuzz/findings/ -print_final_stats=1 "$corpus"
  fi
}
load_seconds=$(( seconds * 2 / 3 ))
fuzz load_fuzzer "$load_seconds" build-fuzz/corpus
fuzz input_fuzzer $(( seconds == 0 ? 0 : seconds - load_seconds )) build-fuzz/corpus-inputs
