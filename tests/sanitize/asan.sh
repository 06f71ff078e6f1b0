#!/usr/bin/env bash
# The CPU unit tests (ctest -L cpu) under AddressSanitizer + UndefinedBehaviorSanitizer, in the build
# tests/fuzz/run.sh shares (tests/sanitize/asan_build.sh: clang, RelWithDebInfo, no CUDA, no MPI).
# Every report is fatal: UBSan is compiled with -fno-sanitize-recover, and the options below stop
# at the first ASan, LeakSanitizer or UBSan report with a stack trace. Extra arguments go to ctest
# (e.g. -R Config). Environment: TT_ASAN_BUILD (default build-asan), TT_JOBS (default 2),
# TT_ASAN_EXCLUDE (ctest -E regex of tests left out; default below).
#
# Left out by default: the convergence tests (TrainArch.SyntheticCorpusReachesWithin5Percent...,
# TrainArch.Int8AdamWStateEndsWithinOnePercent..., and the fp8/int8 parity runs SyntheticConvergence.*
# and BrownConvergence.*, per architecture; the fp8/int8 kernels and quantisers run under ASan in
# test_kernels). They run hundreds of training
# steps through the same code paths the shorter training, resume and optimizer tests cover once, so
# under ASan (3-5x slower) they would add about a quarter of an hour and no coverage; they run in
# the normal build.
set -euo pipefail
cd "$(dirname "$0")/../.."
root="$(pwd)"
jobs="${TT_JOBS:-2}"
start=$SECONDS
build="$(tests/sanitize/asan_build.sh topotrain)"
# The cpu-labelled suites are the test_<folder> binaries of tests/CMakeLists.txt that this build has.
mapfile -t suites < <(cmake --build "$build" --target help | grep -oE '\btest_(core|core_model|kernels|optim|data|parallel|launch)\b' | sort -u)
tests/sanitize/asan_build.sh "${suites[@]}" >/dev/null
echo "asan build: $((SECONDS - start)) s (${suites[*]})"

export ASAN_OPTIONS="${ASAN_OPTIONS:-halt_on_error=1:abort_on_error=1:detect_leaks=1:print_stacktrace=1:symbolize=1:detect_stack_use_after_return=1:strict_init_order=1:check_initialization_order=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-halt_on_error=1:abort_on_error=1:print_stacktrace=1:symbolize=1}"
export LSAN_OPTIONS="${LSAN_OPTIONS:-suppressions=$root/tests/sanitize/lsan.supp:print_suppressions=0}"
start=$SECONDS
cd "$build"
rc=0
exclude="${TT_ASAN_EXCLUDE-TrainArch\.(SyntheticCorpusReachesWithin5PercentOfEntropyFloor|Int8AdamWStateEndsWithinOnePercentOfFp32)|(Synthetic|Brown)Convergence\.}"
nice -n 10 ctest -L cpu ${exclude:+-E "$exclude"} --output-on-failure -j "$jobs" --timeout 1800 "$@" || rc=$?
echo "asan ctest -L cpu: $((SECONDS - start)) s, exit $rc"
exit $rc
