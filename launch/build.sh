#!/usr/bin/env bash
# Configures and builds topotrain into build/ (CUDA targets too when nvcc is found). Extra arguments
# go to cmake's configure step, e.g. launch/build.sh -DTOPOTRAIN_CUDA=OFF. TT_BUILD_TARGET picks one
# target (the quick start builds only the `topotrain` binary); the default builds everything.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v nvcc >/dev/null && [[ -x /usr/local/cuda/bin/nvcc ]]; then export PATH=/usr/local/cuda/bin:$PATH; fi
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
if [[ -n "${TT_BUILD_TARGET:-}" ]]; then
  cmake --build build -j "$(nproc)" --target "$TT_BUILD_TARGET"
else
  cmake --build build -j "$(nproc)"
fi
