#!/usr/bin/env bash
# Builds the libFuzzer targets (ASan + UBSan, the build tests/sanitize/asan.sh shares), replays the
# committed reproducers of fixed findings (tests/fuzz/regressions/<target>/), then fuzzes each
# target for N seconds from its seeds (make_seeds.sh) and prints one line per target. Exits 1 when
# any target crashed, leaked, hung or allocated too much, leaving the input that did it in
# BUILD/fuzz/crashes/<target>/ (replay: BUILD/fuzz/<target>_fuzz FILE).
# Usage: tests/fuzz/run.sh [--seconds N] [--target NAME]... [--no-build]
#   NAME: config_text or config_text_fuzz; --no-build: use the targets already built.
# Environment: TT_ASAN_BUILD (default build-asan), TT_JOBS (compile jobs, default 2),
# TT_FUZZ_RSS_MB (memory limit per target, default 2048), TT_FUZZ_TIMEOUT (seconds per input, 10),
# TT_FUZZ_SEED (libFuzzer's -seed: 0, the default, a new random one each run; CI fixes one so that
# its verdict is a function of the code; a finding's log names the seed that reproduces it).
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds=20
targets=()
build_first=1
while [[ $# -gt 0 ]]; do
  case "$1" in
    --seconds) seconds="$2"; shift 2 ;;
    --seconds=*) seconds="${1#*=}"; shift ;;
    --target) targets+=("${2%_fuzz}"); shift 2 ;;
    --target=*) v="${1#*=}"; targets+=("${v%_fuzz}"); shift ;;
    --no-build) build_first=0; shift ;;
    -h|--help) sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "run.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
if [[ ${#targets[@]} -eq 0 ]]; then
  for f in tests/fuzz/*_fuzz.cpp; do targets+=("$(basename "$f" _fuzz.cpp)"); done
fi
for t in "${targets[@]}"; do
  [[ -f "tests/fuzz/${t}_fuzz.cpp" ]] || { echo "run.sh: no fuzz target '$t' (tests/fuzz/${t}_fuzz.cpp)" >&2; exit 2; }
done

start=$SECONDS
if [[ $build_first -eq 1 ]]; then
  build="$(tests/sanitize/asan_build.sh topotrain "${targets[@]/%/_fuzz}")"
  echo "build: $((SECONDS - start)) s"
else
  build="$(cd "${TT_ASAN_BUILD:-build-asan}" && pwd)"
fi
work="$build/fuzz"
rm -rf "$work/seeds" "$work/logs"
mkdir -p "$work/corpus" "$work/crashes" "$work/logs"
tests/fuzz/make_seeds.sh "$work/seeds" "$build"

# Every sanitizer report is fatal and comes with a stack; libFuzzer turns them into crash inputs.
# verify_asan_link_order=0: -fsanitize=fuzzer puts libstdc++ ahead of the shared ASan runtime in the
# targets' needed libraries; libstdc++ does not intercept allocation, so the order is harmless.
export ASAN_OPTIONS="${ASAN_OPTIONS:-halt_on_error=1:abort_on_error=1:detect_leaks=1:print_stacktrace=1:symbolize=1:verify_asan_link_order=0}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-halt_on_error=1:abort_on_error=1:print_stacktrace=1:symbolize=1}"
rss_mb="${TT_FUZZ_RSS_MB:-2048}"
timeout_s="${TT_FUZZ_TIMEOUT:-10}"
seed="${TT_FUZZ_SEED:-0}"

failed=0
# Reproducers of fixed findings first: each must now run clean.
for t in "${targets[@]}"; do
  reg="tests/fuzz/regressions/$t"
  [[ -d "$reg" ]] && compgen -G "$reg/*" >/dev/null || continue
  if ! "$work/${t}_fuzz" -rss_limit_mb="$rss_mb" -timeout="$timeout_s" "$reg"/* >"$work/logs/${t}_regressions.log" 2>&1; then
    echo "REGRESSION: a committed reproducer of $t fails again (log: $work/logs/${t}_regressions.log)"
    failed=1
  fi
done

fuzz_stat() { grep -m1 "^stat::$1:" "$2" | awk '{print $2}' || true; }
printf '%-20s %12s %9s %8s %8s %8s  %s\n' target executions exec/s seconds crashes corpus result
for t in "${targets[@]}"; do
  corpus="$work/corpus/$t"
  crashes="$work/crashes/$t"
  log="$work/logs/$t.log"
  mkdir -p "$corpus" "$crashes"
  before=$(find "$crashes" -type f | wc -l)
  t0=$SECONDS
  rc=0
  nice -n 10 "$work/${t}_fuzz" -max_total_time="$seconds" -rss_limit_mb="$rss_mb" -timeout="$timeout_s" \
    -seed="$seed" -print_final_stats=1 -artifact_prefix="$crashes/" "$corpus" "$work/seeds/$t" >"$log" 2>&1 || rc=$?
  elapsed=$((SECONDS - t0))
  found=$(($(find "$crashes" -type f | wc -l) - before))
  result=ok
  if [[ $rc -ne 0 || $found -gt 0 ]]; then
    result="FAILED (rc $rc; log $log)"
    failed=1
    [[ $found -eq 0 ]] && found=1
    # The finding itself, so a CI log that keeps only this output still says what broke.
    echo "---- $t: the end of $log" >&2
    grep -E "Seed:|ERROR|FINDING|SUMMARY|out-of-memory|timeout|leak|#[0-9]+ 0x" "$log" | tail -n 40 >&2 || true
    echo "---- $t: crash inputs: $(ls "$crashes" | head -n 3 | tr '\n' ' ')" >&2
  fi
  printf '%-20s %12s %9s %8s %8s %8s  %s\n' "$t" "$(fuzz_stat number_of_executed_units "$log")" \
    "$(fuzz_stat average_exec_per_sec "$log")" "$elapsed" "$found" "$(find "$corpus" -type f | wc -l)" "$result"
done
echo "total: $((SECONDS - start)) s"
if [[ $failed -ne 0 ]]; then
  echo "fuzzing found problems: crash inputs in $work/crashes/<target>/, logs in $work/logs/"
  exit 1
fi
