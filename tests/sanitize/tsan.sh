#!/usr/bin/env bash
# The communicator and data-parallel tests under ThreadSanitizer: the ddp / communicator unit tests
# of test_parallel, the MPI communicator suites (test_mpi under mpirun with 2 and 3 ranks), the
# fault tests (test_mpi_faults) and the end-to-end DDP system tests (test_ddp_system, which drive
# `mpirun topotrain train`, so topotrain itself runs instrumented).
#
# Build: GCC (its libtsan is a shared library, so the layer libraries, linked with --no-undefined,
# resolve __tsan_* without extra flags, and -fopenmp stays libgomp, the OpenMP runtime OpenBLAS is
# built against), -O1 with line tables (-g1: the reports' stacks name file and line, and the build is
# much faster than with full debug info), no CUDA, MPI on.
#
# Every report fails the run: halt_on_error ends the reporting process with exit code 66, which
# fails its test (or its mpirun job, and so the test that started it). Reports are written to
# files under $TT_TSAN_LOGS (not stderr, which several tests parse) and printed at the end.
# Suppressions (tests/sanitize/tsan.supp) cover Open MPI / PMIx / hwloc / libevent internals only.
#
# Left out under TSan (TSan slows everything 5-15x, and these measure time, not correctness; they
# run in the normal build): *Overlaps* (communication hidden behind backward / compute),
# *Prefetch* (ZeRO-3 gathers hidden), GroundTruth.* (step times against the calibrated cost model),
# DdpNetns.* (a two-"host" run over network namespaces with latency emulation: timed, and needs
# CAP_NET_ADMIN), MemoryModel.* (peak resident memory against the model: TSan's shadow memory
# multiplies the resident set).
#
# OpenMP: OMP_NUM_THREADS=1. libgomp is not instrumented, so TSan cannot see its barriers and would
# report every parallel loop's hand-off; with one thread per team our loops run on the calling
# thread, where TSan checks them against the communicators' progress and watchdog threads, the data
# loader's prefetch thread and the signal handlers. Races between iterations of one OpenMP loop are
# not covered here.
#
# Usage: tests/sanitize/tsan.sh [PART...]   (parts: unit mpi2 mpi3 faults ddp; default: all)
# Environment: TT_TSAN_BUILD (build dir, default build-tsan, relative to the repository root),
# TT_JOBS (compile jobs, default 2), TT_TSAN_LOGS (report folder, default $TT_TSAN_BUILD/tsan-logs),
# TT_TSAN_TEST_TIMEOUT (seconds per test process, default 600), TT_TSAN_DDP_FILTER (gtest filter of
# the ddp part, default: all but the timed tests above), TSAN_OPTIONS (replaces the
# defaults below; keep suppressions= and log_path= in it).
set -euo pipefail
cd "$(dirname "$0")/../.."
root="$(pwd)"
build="${TT_TSAN_BUILD:-build-tsan}"
jobs="${TT_JOBS:-2}"
per_test_timeout="${TT_TSAN_TEST_TIMEOUT:-600}"
parts=("$@")
[ ${#parts[@]} -gt 0 ] || parts=(unit mpi2 mpi3 faults ddp)
for tool in gcc g++ cmake mpirun; do
  command -v "$tool" >/dev/null || { echo "tsan.sh: $tool not found (launch/install_deps.sh)" >&2; exit 2; }
done
t_all=$SECONDS

# ---- build -----------------------------------------------------------------------------------------
t0=$SECONDS
CC=gcc CXX=g++ cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG" \
  -DTOPOTRAIN_CUDA=OFF -DTOPOTRAIN_MPI=ON \
  -DTOPOTRAIN_SANITIZE=thread >/dev/null
nice -n 10 cmake --build "$build" -j "$jobs" --target topotrain test_parallel test_mpi test_mpi_faults fault_driver \
  test_ddp_system delay_line
build_s=$((SECONDS - t0))
build="$(cd "$build" && pwd)"
logs="${TT_TSAN_LOGS:-$build/tsan-logs}"
rm -rf "$logs"
mkdir -p "$logs"

# ---- environment -------------------------------------------------------------------------------------
export OMP_NUM_THREADS=1
tsan_options() {  # $1: the part's report folder
  echo "${TSAN_OPTIONS_BASE}:log_path=$1/tsan"
}
TSAN_OPTIONS_BASE="${TSAN_OPTIONS:-halt_on_error=1:exitcode=66:second_deadlock_stack=1:history_size=4}"
case "$TSAN_OPTIONS_BASE" in
  *suppressions=*) ;;
  *) TSAN_OPTIONS_BASE="$TSAN_OPTIONS_BASE:suppressions=$root/tests/sanitize/tsan.supp" ;;
esac
mpirun_cmd=(mpirun --allow-run-as-root --oversubscribe)
timed_filter='*Overlaps*:*Prefetch*:GroundTruth.*:DdpNetns.*:MemoryModel.*'
# The communicator / ddp unit tests of test_parallel (the planner, cost model and topology suites
# there are single-threaded).
unit_filter='LocalCommunicator.*:CommDefaults.*:CommFingerprint.*:CommNames.*:RankDiscovery.*:Buckets.*:Sharding.*'
unit_filter+=':Compression.*:GradReducerCompressed.*:GradWindows.*:WindowSlots.*:StagePipeline.*'

# ---- running ---------------------------------------------------------------------------------------
summary=()
total_fail=0
# run_each PART BINARY FILTER: each test of BINARY matching FILTER in its own process (one report or
# hang fails one test, not the rest), under a timeout.
run_each() {
  local part=$1 bin=$2 filter=$3 t0=$SECONDS n=0 pass=0 failed=() suite="" line
  mkdir -p "$logs/$part"
  local tests=()
  while IFS= read -r line; do
    line="${line%%#*}"
    line="${line%"${line##*[![:space:]]}"}"
    [ -n "$line" ] || continue
    if [[ $line != " "* ]]; then suite="$line"; else tests+=("$suite${line# *}"); fi
  done < <("$bin" --gtest_list_tests --gtest_filter="$filter" 2>/dev/null | sed 's/^  */ /')
  for t in "${tests[@]}"; do
    n=$((n + 1))
    local out="$logs/$part/${t//\//_}.log" rc=0 t1=$SECONDS
    TSAN_OPTIONS="$(tsan_options "$logs/$part")" timeout -k 10 "$per_test_timeout" "$bin" --gtest_filter="$t" \
      >"$out" 2>&1 || rc=$?
    if [ $rc -eq 0 ]; then
      pass=$((pass + 1))
      echo "  ok    $t ($((SECONDS - t1)) s)"
    else
      failed+=("$t")
      echo "  FAIL  $t ($((SECONDS - t1)) s, exit $rc; log $out)"
      tail -n 30 "$out" | sed 's/^/        /'
    fi
  done
  finish_part "$part" "$n" "$pass" $((SECONDS - t0)) "${failed[@]+"${failed[@]}"}"
}
# run_mpi PART NP FILTER: test_mpi under mpirun (one communicator for all suites; its main makes
# any rank's failure the job's).
run_mpi() {
  local part=$1 np=$2 filter=$3 t0=$SECONDS rc=0 n pass
  mkdir -p "$logs/$part"
  local out="$logs/$part/test_mpi.log"
  n=$("$build/tests/test_mpi" --gtest_list_tests --gtest_filter="$filter" 2>/dev/null | grep -c '^  ' || true)
  TSAN_OPTIONS="$(tsan_options "$logs/$part")" timeout -k 10 "$per_test_timeout" "${mpirun_cmd[@]}" -np "$np" \
    "$build/tests/test_mpi" --gtest_filter="$filter" >"$out" 2>&1 || rc=$?
  if [ $rc -eq 0 ]; then
    pass=$n
    echo "  ok    test_mpi -np $np ($n tests)"
    finish_part "$part" "$n" "$pass" $((SECONDS - t0))
  else
    pass=$(sed 's/\x1b\[[0-9;]*m//g' "$out" | grep -c '^\[       OK \]' || true)
    echo "  FAIL  test_mpi -np $np (exit $rc; log $out)"
    tail -n 30 "$out" | sed 's/^/        /'
    finish_part "$part" "$n" "$pass" $((SECONDS - t0)) "test_mpi -np $np"
  fi
}
finish_part() {  # PART TESTS PASSED SECONDS [FAILED...]
  local part=$1 n=$2 pass=$3 secs=$4
  shift 4
  local reports
  reports=$(cat "$logs/$part"/tsan.* 2>/dev/null | grep -c '^WARNING: ThreadSanitizer' || true)
  summary+=("$(printf '%-7s %4d tests  %4d passed  %3d TSan reports  %5d s' "$part" "$n" "$pass" "$reports" "$secs")")
  if [ $# -gt 0 ] || [ "$reports" -gt 0 ]; then total_fail=$((total_fail + 1)); fi
}

for part in "${parts[@]}"; do
  echo "== tsan: $part"
  case "$part" in
    unit) run_each unit "$build/tests/test_parallel" "$unit_filter" ;;
    mpi2) run_mpi mpi2 2 "-$timed_filter" ;;
    mpi3) run_mpi mpi3 3 "-$timed_filter" ;;
    faults) run_each faults "$build/tests/test_mpi_faults" "*" ;;
    ddp) run_each ddp "$build/tests/test_ddp_system" "${TT_TSAN_DDP_FILTER:--$timed_filter}" ;;
    *) echo "tsan.sh: unknown part '$part' (unit mpi2 mpi3 faults ddp)" >&2; exit 2 ;;
  esac
done

# ---- summary -----------------------------------------------------------------------------------------
if compgen -G "$logs/*/tsan.*" >/dev/null; then
  echo "== TSan reports"
  for f in "$logs"/*/tsan.*; do
    echo "--- $f"
    cat "$f"
  done
fi
echo "== tsan summary (build $build, reports in $logs)"
echo "build   $build_s s"
printf '%s\n' "${summary[@]}"
echo "total   $((SECONDS - t_all)) s"
if [ $total_fail -gt 0 ]; then
  echo "tsan.sh: FAILED ($total_fail part(s) with failing tests or TSan reports)"
  exit 1
fi
echo "tsan.sh: passed"
