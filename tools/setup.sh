#!/usr/bin/env bash
# Installs every Debian 12 package nnxr needs to build, test and run.
# Idempotent: when everything is present it only checks (a second or two) and exits.
# Works as root or through sudo. Set NNXR_SETUP_EXTRA=0 to skip the asset-tool packages.
set -euo pipefail

packages=(
  # build
  build-essential cmake pkg-config git
  # model/
  libonnx-dev libprotobuf-dev protobuf-compiler libopenblas-dev
  # engine/, xr/, shaders/
  libvulkan-dev mesa-vulkan-drivers vulkan-validationlayers glslang-tools
  libglfw3-dev libglm-dev libstb-dev
  libopenxr-dev libopenxr-loader1 openxr-layer-corevalidation
  # tests and benchmarks
  libgtest-dev libgmock-dev libbenchmark-dev xvfb xauth clang libclang-rt-14-dev
  python3-onnx python3-numpy libonnx-testdata
)
if [[ ${NNXR_SETUP_EXTRA:-1} != 0 ]]; then
  # asset generators (tools/make-default-model.py)
  packages+=(python3-torch python3-sklearn python3-pil)
fi

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [[ $status == "install ok installed" ]] || missing+=("$p")
done

if ((${#missing[@]} == 0)); then
  echo "setup: all ${#packages[@]} packages are installed"
  exit 0
fi

sudo=()
if [[ $(id -u) != 0 ]]; then
  command -v sudo >/dev/null || { echo "setup: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  sudo=(sudo)
fi

echo "setup: installing ${#missing[@]} package(s): ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "setup: done"
