#!/usr/bin/env bash
# Configures and builds the ASan + UBSan build that tests/sanitize/asan.sh (the CPU unit tests) and
# tests/fuzz/run.sh (the libFuzzer targets) share: clang, -O1 with line tables only (what ASan
# recommends: stacks stay exact, and without full debug info the build is much faster), no CUDA, no
# MPI (the cpu tests do not need it, and Open MPI's own leaks and races are not ours), fuzz targets on.
# Usage: tests/sanitize/asan_build.sh TARGET...   (cmake --build targets)
# Environment: TT_ASAN_BUILD (build dir, default build-asan, relative to the repository root),
# TT_JOBS (parallel compile jobs, default 2). Prints the build directory's absolute path last.
set -euo pipefail
cd "$(dirname "$0")/../.."
build="${TT_ASAN_BUILD:-build-asan}"
jobs="${TT_JOBS:-2}"
for tool in clang clang++ cmake; do
  command -v "$tool" >/dev/null || { echo "asan_build.sh: $tool not found (apt-get install clang cmake)" >&2; exit 2; }
done
# (Re)configuring with the same values is a few seconds and rebuilds nothing.
CC=clang CXX=clang++ cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -gline-tables-only -DNDEBUG" -DTOPOTRAIN_CUDA=OFF \
  -DTOPOTRAIN_MPI=OFF "-DTOPOTRAIN_SANITIZE=address;undefined" -DTOPOTRAIN_FUZZ=ON >/dev/null
start=$SECONDS
nice -n 10 cmake --build "$build" -j "$jobs" --target "$@" >&2
echo "asan_build.sh: built $* in $((SECONDS - start)) s" >&2
cd "$build" && pwd
