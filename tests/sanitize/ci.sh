#!/usr/bin/env bash
# The sanitizer jobs CI runs after the test suite (.ci/run), one after the other, and a table of how
# long each took:
#   asan   the CPU unit tests under ASan + UBSan (tests/sanitize/asan.sh; builds build-asan)
#   fuzz   every libFuzzer target for TT_CI_FUZZ_SECONDS each, after replaying the committed
#          reproducers of fixed findings (tests/fuzz/run.sh, in the same build), from a fixed
#          seed (TT_FUZZ_SEED, 1): the gate is reproducible; exploring new inputs is run.sh's
#          default (a new seed each run), which developers run longer
#   tsan   the communicator, fault and data-parallel tests under TSan (tests/sanitize/tsan.sh;
#          builds build-tsan). Of the end-to-end DDP tests, CI runs the short ones below: the
#          threads they start (the reducer's progress thread, the ZeRO gathers, the checkpoint
#          stream, the collective watchdog, the probe, the span recorder) are the same in the long
#          ones, which run the same code for many more steps and would take over an hour under
#          TSan on 2 cores. Left out too: DdpSignals.SigintToOneRank..., whose reference run
#          outgrows the test's own time limits under TSan (a timeout, not a report);
#          `tests/sanitize/tsan.sh ddp` runs them all.
# Every part runs even when an earlier one failed; the exit code is 1 when any did.
# Usage: tests/sanitize/ci.sh [PART...]   (default: asan fuzz tsan)
# Environment: TT_CI_FUZZ_SECONDS (default 20), and those of the scripts above.
set -euo pipefail
cd "$(dirname "$0")/../.."
parts=("$@")
[ ${#parts[@]} -gt 0 ] || parts=(asan fuzz tsan)
launch/install_deps.sh --sanitizers

ci_ddp_filter='AutoStrategy.*:BenchComm.*:DataParallel.AccumulationAcrossRanksMatchesForZero2'
ci_ddp_filter+=':DataParallel.ShardedCheckpointsStreamThroughRankZero:DdpSignals.KilledRank*:TraceSteps.*'
ci_ddp_filter+=':*ResumeSameRanksBitExactAndOtherRanksContinues*:*Zero3TrainsBitIdenticallyToZero2AndResumes*'

t_all=$SECONDS
rows=()
failed=0
for part in "${parts[@]}"; do
  echo "==== sanitize: $part"
  t0=$SECONDS
  rc=0
  case "$part" in
    asan) tests/sanitize/asan.sh || rc=$? ;;
    fuzz) TT_FUZZ_SEED="${TT_FUZZ_SEED:-1}" tests/fuzz/run.sh --seconds "${TT_CI_FUZZ_SECONDS:-20}" || rc=$? ;;
    tsan) TT_TSAN_DDP_FILTER="${TT_TSAN_DDP_FILTER:-$ci_ddp_filter}" tests/sanitize/tsan.sh || rc=$? ;;
    *) echo "ci.sh: unknown part '$part' (asan fuzz tsan)" >&2; exit 2 ;;
  esac
  [ $rc -eq 0 ] || failed=1
  rows+=("$(printf '%-6s %6d s  %s' "$part" $((SECONDS - t0)) "$([ $rc -eq 0 ] && echo passed || echo "FAILED (exit $rc)")")")
done
echo "==== sanitize summary"
printf '%s\n' "${rows[@]}"
echo "total  $((SECONDS - t_all)) s"
exit $failed
