#!/usr/bin/env bash
# Installs the Debian packages topotrain builds and tests with — only those that are missing, so it
# is cheap to run every time. Used by launch/quickstart.sh and tests/run.sh.
# The CUDA toolkit is optional and not installed here: the build uses it when nvcc is found.
set -euo pipefail

PACKAGES=(
  build-essential cmake pkg-config
  libopenblas-openmp-dev           # CPU GEMM (OpenMP build, shares the thread pool with our loops)
  libprotobuf-dev protobuf-compiler  # config schema
  libpcre2-dev nlohmann-json3-dev  # GPT-2 tokenizer regex (Unicode + JIT), tokenizer JSON files
  libgtest-dev                     # tests
  libopenmpi-dev openmpi-bin       # multi-process runs
  gnuplot-nox                      # `topotrain plot` (loss curves as PNG)
)

missing=()
for pkg in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$pkg")
  fi
done

if ((${#missing[@]} == 0)); then
  echo "[deps] all ${#PACKAGES[@]} packages present"
  exit 0
fi

echo "[deps] installing: ${missing[*]}"
SUDO=""
if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
