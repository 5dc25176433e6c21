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
  libglfw3-dev libglm-dev libstb-dev fonts-dejavu-core
  libopenxr-dev libopenxr-loader1 openxr-layer-corevalidation
  # app/: image inputs
  libpng-dev libjpeg62-turbo-dev
  # tests and benchmarks
  libgtest-dev libgmock-dev libbenchmark-dev xvfb xauth clang libclang-rt-14-dev
  python3-onnx python3-numpy libonnx-testdata tesseract-ocr
)
if [[ ${NNXR_SETUP_EXTRA:-1} != 0 ]]; then
  # asset generators (tools/make-default-model.py)
  packages+=(python3-torch python3-sklearn python3-pil python3-torchvision)
fi

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [[ $status == "install ok installed" ]] || missing+=("$p")
done

# onnxruntime-node, the reference the runtime's agreement tests (ctest -L ort) compare with.
# Installed outside the repository; tools/ort-agree.py looks for it here (or in $NODE_PATH).
install_ort() {
  local version=1.30.0
  local dir=${XDG_CACHE_HOME:-$HOME/.cache}/nnxr/ort
  local pkg=$dir/node_modules/onnxruntime-node/package.json
  if [[ -f $pkg ]] && grep -q "\"version\": \"$version\"" "$pkg"; then
    echo "setup: onnxruntime-node $version is installed in $dir"
    return
  fi
  if ! command -v npm >/dev/null; then
    echo "setup: warning: npm not found; onnxruntime-node (for ctest -L ort) is not installed" >&2
    return
  fi
  echo "setup: installing onnxruntime-node $version into $dir"
  mkdir -p "$dir"
  if ! (cd "$dir" && ONNXRUNTIME_NODE_INSTALL=skip npm install --ignore-scripts --no-audit --no-fund --silent \
          "onnxruntime-node@$version" >/dev/null); then
    echo "setup: warning: npm could not install onnxruntime-node; the ort tests will fail until it is" >&2
  fi
}

if ((${#missing[@]} == 0)); then
  echo "setup: all ${#packages[@]} packages are installed"
  install_ort
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
install_ort
echo "setup: done"
