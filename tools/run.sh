#!/usr/bin/env bash
# Sets up, builds and runs nnxr: `tools/run.sh [ARGS...]` is `nnxr [ARGS...]` on a fresh machine.
# Without arguments nnxr shows its embedded default model.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh >&2
tools/build.sh >&2
exec build/app/nnxr "$@"
