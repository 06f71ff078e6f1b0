#!/usr/bin/env bash
# Installs what is missing (and the real clients some tests check against: install_deps.sh
# --test-tools), builds (with CUDA when nvcc exists), and runs the whole ctest suite.
# Extra arguments go to ctest, e.g. tests/run.sh -L cpu or tests/run.sh -R Gpt2.
set -euo pipefail
cd "$(dirname "$0")/.."
launch/install_deps.sh --test-tools
launch/build.sh
cd build
ctest --output-on-failure -j "$(nproc)" --timeout 600 "$@"
