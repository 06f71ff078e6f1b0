#!/usr/bin/env bash
# One-shot check for a short GPU lease (budget: under 10 minutes on one H200): builds topotrain for
# the local GPU's architecture only, runs the GPU-labelled tests (ctest -L gpu: CUDA kernels including
# RMSNorm, RoPE, SwiGLU and GQA attention against their CPU references; GPT-2 and Llama models and the
# one training loop, ZeRO-0 and ZeRO-3, on the GPU against the CPU; the NCCL backend), runs
# `topotrain bench step` on GPT-2 124M at T=1024 and on a 4-layer slice of Llama-2-7B at T=2048 on
# the GPU (with 8-bit AdamW state, without and with full recompute), and prints one summary table
# (tokens/s, MFU, memory, phases, recompute overhead), then `bench step` of GPT-2 124M and a ~1B
# Llama at T=1024 in each matmul precision the GPU has (default, int8, fp8) in one table.
# Optional last stage, only when an llm.c checkout is present (third_party_cache/llm.c, git-ignored,
# never committed; or LLMC_DIR): launch/compare_llmc.sh builds llm.c's train_gpt2cu in the background
# while the tests run, then times it against topotrain at the same settings (GPT-2 124M, bf16,
# B=LLMC_BATCH (64) x 1024, LLMC_STEPS (20) measured steps) and reports the tokens/s ratio. It runs
# only if the time budget (GPU_CHECK_BUDGET_S, 600 s for the whole script) leaves room, and its
# outcome is a summary row that does not change the exit status (it measures llm.c, not topotrain).
#
# Design: every stage is timed and bounded (`timeout`), and its outcome is recorded rather than
# guessed: a build error stops the script at once (exit 1) with the compiler output; failed tests or
# a failed GPU benchmark make the final exit status 1. Usage, from anywhere:
#   tests/gpu_check.sh                 # build dir build-gpu next to the sources
#   BUILD_DIR=/tmp/b JOBS=8 tests/gpu_check.sh
#   BUILD_TARGETS="topotrain test_nccl_gpu" tests/gpu_check.sh   # only these targets (default: all);
#                                   gpu tests of binaries not built are then not run (and not counted)
set -euo pipefail

SRC="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${BUILD_DIR:-$SRC/build-gpu}"
JOBS="${JOBS:-$(nproc)}"
BUILD_TARGETS="${BUILD_TARGETS:-}"
LOG_DIR="$BUILD_DIR/gpu_check_logs"
SCRIPT_START=$(date +%s)
GPU_CHECK_BUDGET_S="${GPU_CHECK_BUDGET_S:-600}"
LLMC_DIR="${LLMC_DIR:-$SRC/third_party_cache/llm.c}"

# Summary rows: stage|status|seconds|detail
ROWS=()
add_row() { ROWS+=("$1|$2|$3|$4"); }
now() { date +%s; }

print_summary() {
  local total=$(($(now) - SCRIPT_START))
  echo
  echo "==================================== gpu_check summary ===================================="
  printf '%-22s %-9s %7s  %s\n' "stage" "status" "seconds" "detail"
  printf '%-22s %-9s %7s  %s\n' "----------------------" "---------" "-------" "------------------------------"
  local row stage status secs detail
  for row in "${ROWS[@]}"; do
    IFS='|' read -r stage status secs detail <<<"$row"
    printf '%-22s %-9s %7s  %s\n' "$stage" "$status" "$secs" "$detail"
  done
  printf '%-22s %-9s %7s  %s\n' "total" "" "$total" "logs: $LOG_DIR"
  echo "==========================================================================================="
}

die() {  # stage, message: loud failure, summary, exit 1
  echo "gpu_check: FAILED in $1: $2" >&2
  print_summary
  exit 1
}

mkdir -p "$LOG_DIR"

# ---- 1. the GPU -----------------------------------------------------------------------------------
t0=$(now)
if ! command -v nvidia-smi >/dev/null 2>&1; then
  add_row "gpu" "FAIL" "$(($(now) - t0))" "nvidia-smi not found"
  die "gpu" "no nvidia-smi: this script needs a machine with an NVIDIA GPU and driver"
fi
if ! GPU_INFO=$(nvidia-smi --query-gpu=name,compute_cap,memory.total,driver_version --format=csv,noheader 2>&1); then
  add_row "gpu" "FAIL" "$(($(now) - t0))" "nvidia-smi failed"
  die "gpu" "nvidia-smi failed: $GPU_INFO"
fi
GPU_COUNT=$(printf '%s\n' "$GPU_INFO" | grep -c . || true)
FIRST_GPU=$(printf '%s\n' "$GPU_INFO" | head -n1)
GPU_NAME=$(printf '%s' "$FIRST_GPU" | cut -d, -f1 | sed 's/^ *//; s/ *$//')
CAP=$(printf '%s' "$FIRST_GPU" | cut -d, -f2 | tr -d ' ')
if [[ "$CAP" =~ ^[0-9]+\.[0-9]+$ ]]; then
  ARCH="${CAP/./}"  # "9.0" -> 90
else
  ARCH="native"     # older drivers lack compute_cap: let CMake (>= 3.24) ask the device
fi
echo "gpu_check: $GPU_COUNT GPU(s); first: $FIRST_GPU -> CUDA architecture $ARCH"
add_row "gpu" "ok" "$(($(now) - t0))" "${GPU_COUNT}x $GPU_NAME (sm $CAP), arch $ARCH"

# ---- 2. configure and build -------------------------------------------------------------------------
t0=$(now)
if ! timeout 120 cmake -S "$SRC" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release -DTOPOTRAIN_CUDA=ON \
      -DTOPOTRAIN_CUDA_ARCHITECTURES="$ARCH" >"$LOG_DIR/configure.log" 2>&1; then
  tail -n 40 "$LOG_DIR/configure.log" >&2
  add_row "configure" "FAIL" "$(($(now) - t0))" "see configure.log"
  die "configure" "cmake failed (last lines above)"
fi
FEATURES=$(grep -o 'topotrain: CUDA=.*' "$LOG_DIR/configure.log" | tail -n1 || true)
add_row "configure" "ok" "$(($(now) - t0))" "$FEATURES"
if ! grep -q 'NCCL=ON' <<<"$FEATURES"; then
  echo "gpu_check: WARNING: NCCL was not found; the gpu tests (test_nccl_gpu) will not exist" >&2
fi

t0=$(now)
set +e
TARGET_ARGS=()
if [[ -n "$BUILD_TARGETS" ]]; then
  read -r -a targets <<<"$BUILD_TARGETS"
  TARGET_ARGS=(--target "${targets[@]}")
fi
timeout 330 cmake --build "$BUILD_DIR" -j "$JOBS" "${TARGET_ARGS[@]}" >"$LOG_DIR/build.log" 2>&1
BUILD_RC=$?
set -e
if [[ $BUILD_RC -ne 0 ]]; then
  grep -E -m 40 -B2 -A6 'error|Error' "$LOG_DIR/build.log" >&2 || tail -n 60 "$LOG_DIR/build.log" >&2
  add_row "build" "FAIL" "$(($(now) - t0))" "rc $BUILD_RC$([[ $BUILD_RC -eq 124 ]] && echo ' (timed out)'), see build.log"
  die "build" "the build failed (errors above)"
fi
add_row "build" "ok" "$(($(now) - t0))" "-j $JOBS, arch $ARCH, targets: ${BUILD_TARGETS:-all}"

TOPOTRAIN="$BUILD_DIR/topotrain"
"$TOPOTRAIN" --version | tee "$LOG_DIR/version.log"
NCCL_LINE=$(grep 'NCCL:' "$LOG_DIR/version.log" | sed 's/^ *//' || true)
add_row "version" "ok" "0" "$NCCL_LINE"

# llm.c (optional, for stage 5): build it now, in the background and niced, while the GPU tests run
# (reused without compiling when a prebuilt train_gpt2cu's stamp matches this toolkit and arch).
LLMC_BUILD_PID=""
if [[ -f "$LLMC_DIR/train_gpt2.cu" ]]; then
  LLMC_T0=$(now)
  LLMC_ARCH_ARGS=()
  [[ "$ARCH" =~ ^[0-9]+$ ]] && LLMC_ARCH_ARGS=(--arch "$ARCH")
  BUILD_NICE=10 "$SRC/launch/compare_llmc.sh" --llmc "$LLMC_DIR" "${LLMC_ARCH_ARGS[@]}" \
    --work "$LOG_DIR/llmc_compare" --build-only --build-timeout 240 >"$LOG_DIR/llmc_build.log" 2>&1 &
  LLMC_BUILD_PID=$!
fi

# ---- 3. GPU tests -------------------------------------------------------------------------------------
t0=$(now)
set +e
timeout 240 ctest --test-dir "$BUILD_DIR" -L gpu --output-on-failure --timeout 120 >"$LOG_DIR/ctest_gpu.log" 2>&1
CTEST_RC=$?
set -e
cat "$LOG_DIR/ctest_gpu.log"
TOTAL_TESTS=$(grep -Eo 'tests failed out of [0-9]+' "$LOG_DIR/ctest_gpu.log" | grep -Eo '[0-9]+$' || echo 0)
FAILED_TESTS=$(grep -Eo '[0-9]+ tests failed out of' "$LOG_DIR/ctest_gpu.log" | grep -Eo '^[0-9]+' || echo "?")
SKIPPED_TESTS=$(grep -c '(Skipped)' "$LOG_DIR/ctest_gpu.log" || true)
if grep -q 'No tests were found' "$LOG_DIR/ctest_gpu.log"; then
  add_row "ctest -L gpu" "FAIL" "$(($(now) - t0))" "no gpu tests found (NCCL missing?)"
  TESTS_OK=0
elif [[ $CTEST_RC -eq 0 && $TOTAL_TESTS -gt 0 && $((SKIPPED_TESTS * 2)) -gt $TOTAL_TESTS ]]; then
  # This machine has a GPU (stage 1): tests skipping en masse means they could not see it.
  add_row "ctest -L gpu" "FAIL" "$(($(now) - t0))" "$SKIPPED_TESTS of $TOTAL_TESTS skipped although a GPU is present"
  TESTS_OK=0
elif [[ $CTEST_RC -eq 0 ]]; then
  add_row "ctest -L gpu" "ok" "$(($(now) - t0))" "$TOTAL_TESTS tests, $SKIPPED_TESTS skipped (multi-GPU tests need >= 2 GPUs)"
  TESTS_OK=1
else
  add_row "ctest -L gpu" "FAIL" "$(($(now) - t0))" "$FAILED_TESTS of $TOTAL_TESTS failed (rc $CTEST_RC), see ctest_gpu.log"
  TESTS_OK=0
fi

# The llm.c build (if any) finishes before the benchmark so that it does not compete for the CPU.
if [[ -n "$LLMC_BUILD_PID" ]]; then
  LLMC_BUILD_RC=0
  wait "$LLMC_BUILD_PID" || LLMC_BUILD_RC=$?
  LLMC_BUILD_LINE=$(grep -E 'compare_llmc: (built|reusing)' "$LOG_DIR/llmc_build.log" | tail -n1 | sed 's/^compare_llmc: //' || true)
  if [[ $LLMC_BUILD_RC -eq 0 ]]; then
    add_row "llm.c build" "ok" "$(($(now) - LLMC_T0))" "${LLMC_BUILD_LINE:-see llmc_build.log} (background)"
  else
    tail -n 20 "$LOG_DIR/llmc_build.log" >&2
    add_row "llm.c build" "FAIL" "$(($(now) - LLMC_T0))" "rc $LLMC_BUILD_RC, see llmc_build.log (background)"
  fi
fi

# ---- 4. bench step on the GPU ----------------------------------------------------------------------------
# GPT-2 124M at T=1024 on the GPU in bf16 (random tokens: the config's FineWeb shards are not here),
# with the largest power-of-two batch that the memory estimate (~420 MiB of activations per
# 1024-token sequence, 60% of the card) allows, capped at 128; BENCH_BATCH overrides it. A failure
# or timeout is reported, never guessed: the row then carries no numbers.
t0=$(now)
MEM_MIB=$(printf '%s' "$FIRST_GPU" | cut -d, -f3 | grep -Eo '[0-9]+' | head -n1 || true)
BENCH_BATCH="${BENCH_BATCH:-}"
if [[ -z "$BENCH_BATCH" ]]; then
  BENCH_BATCH=1
  while ((BENCH_BATCH < 128 && BENCH_BATCH * 2 * 420 <= ${MEM_MIB:-0} * 6 / 10)); do BENCH_BATCH=$((BENCH_BATCH * 2)); done
fi
set +e
timeout 180 "$TOPOTRAIN" bench step --config "$SRC/examples/gpt2-124m.pbtxt" --set train.device=cuda \
  --set train.seq_len=1024 --set train.batch_size="$BENCH_BATCH" --steps 5 --warmup 2 \
  >"$LOG_DIR/bench_step.log" 2>&1
BENCH_RC=$?
set -e
cat "$LOG_DIR/bench_step.log"
TPS_LINE=$(grep -E '^tokens/s' "$LOG_DIR/bench_step.log" | head -n1 || true)
if [[ $BENCH_RC -eq 0 && -n "$TPS_LINE" ]]; then
  TPS=$(grep -Eo 'tokens/s [0-9.]+' <<<"$TPS_LINE" | grep -Eo '[0-9.]+$' || echo "?")
  TFLOPS=$(grep -Eo '[0-9.]+ TFLOP/s per GPU' <<<"$TPS_LINE" | grep -Eo '^[0-9.]+' || echo "?")
  MFU=$(grep -Eo 'MFU [^ ]+' <<<"$TPS_LINE" | cut -d' ' -f2 || echo "?")
  MEM=$(grep -Eo 'peak memory [0-9.]+ [KMGT]?i?B' <<<"$TPS_LINE" | sed 's/peak memory //' || echo "?")
  PHASES=$(awk '$1 == "forward" || $1 == "backward" || $1 == "optimizer" {printf "%s %s ms, ", $1, $2}' \
    "$LOG_DIR/bench_step.log")
  add_row "bench step (GPU)" "ok" "$(($(now) - t0))" "GPT-2 124M bf16 B=$BENCH_BATCH T=1024: $TPS tokens/s, $TFLOPS TFLOP/s"
  add_row "GPU MFU" "ok" "-" "$MFU of the '$GPU_NAME' bf16 peak (core/device_info)"
  add_row "GPU memory / phases" "ok" "-" "$MEM in tensors; ${PHASES%, }"
elif [[ $BENCH_RC -eq 124 ]]; then
  add_row "bench step (GPU)" "timeout" "$(($(now) - t0))" "B=$BENCH_BATCH: stopped after 180 s; see bench_step.log"
  TESTS_OK=0
else
  add_row "bench step (GPU)" "FAIL" "$(($(now) - t0))" "B=$BENCH_BATCH: rc $BENCH_RC; see bench_step.log"
  TESTS_OK=0
fi

# ---- 4b. bench step on a Llama shape -----------------------------------------------------------------
# Four blocks of Llama-2-7B (4096 wide, 32 heads of 128, SwiGLU 11008, RoPE) at T=2048 in bf16 on
# random tokens: the Llama kernels (RMSNorm, RoPE, SwiGLU, attention at head size 128) at full size,
# with 8-bit AdamW state, without and with full activation recompute (the overhead and peak memory
# of each: bench step --recompute).
t0=$(now)
set +e
timeout 150 "$TOPOTRAIN" bench step --config "$SRC/examples/llama-7b.pbtxt" --set train.device=cuda \
  --set model.n_layer=4 --set train.seq_len=2048 --set train.batch_size=2 --set train.grad_accum_steps=1 \
  --set parallel.zero_stage=0 --set optimizer.state_dtype=int8 --recompute none,full --steps 3 --warmup 1 \
  >"$LOG_DIR/bench_llama.log" 2>&1
LLAMA_RC=$?
set -e
cat "$LOG_DIR/bench_llama.log"
LLAMA_LINE=$(grep -E '^tokens/s' "$LOG_DIR/bench_llama.log" | head -n1 || true)
if [[ $LLAMA_RC -eq 0 && -n "$LLAMA_LINE" ]]; then
  add_row "bench step (Llama)" "ok" "$(($(now) - t0))" "$(grep -Eo 'tokens/s [0-9.]+' <<<"$LLAMA_LINE"), MFU $(grep -Eo 'MFU [^ ]+' <<<"$LLAMA_LINE" | cut -d' ' -f2) (4 x Llama-2-7B blocks, B=2 T=2048, int8 AdamW state)"
  FULL_ROW=$(awk '$1 == "full" {print "full recompute: " $5 " step time, peak " $6 " " $7 " (predicted " $8 " " $9 ")"}' \
    "$LOG_DIR/bench_llama.log" || true)
  add_row "recompute (Llama)" "ok" "-" "${FULL_ROW:-no recompute table in bench_llama.log}"
else
  add_row "bench step (Llama)" "FAIL" "$(($(now) - t0))" "rc $LLAMA_RC; see bench_llama.log"
  TESTS_OK=0
fi

# ---- 4c. matmul precision: default / fp8 / int8 ------------------------------------------------------
# `bench step` of GPT-2 124M (B=8) and a ~1B Llama (TinyLlama-1.1B's shape: 22 blocks, 2048 wide,
# GQA 32/4, SwiGLU 5632; B=4) at T=1024 in each train.matmul_precision the GPU has (fp8 needs sm_89+,
# int8 sm_75+): one table of tokens/s and the speed-up over the default. Runs only while the budget
# leaves room; each run is bounded.
PREC_TABLE="$LOG_DIR/precision_table.txt"
: >"$PREC_TABLE"
PRECISIONS="default"
if [[ "$ARCH" =~ ^[0-9]+$ ]]; then
  ((ARCH >= 75)) && PRECISIONS="$PRECISIONS int8"
  ((ARCH >= 89)) && PRECISIONS="$PRECISIONS fp8"
fi
for spec in "gpt2-124m|$SRC/examples/gpt2-124m.pbtxt|8|" \
            "llama-1.1b|$SRC/examples/tinyllama-1b-cpu.pbtxt|4|--set optimizer.state_dtype=int8"; do
  IFS='|' read -r label config batch extra <<<"$spec"
  base_tps=""
  for prec in $PRECISIONS; do
    t0=$(now)
    if (($(now) - SCRIPT_START > GPU_CHECK_BUDGET_S - 60)); then
      add_row "precision $label" "skipped" "0" "$prec: time budget (GPU_CHECK_BUDGET_S)"
      continue
    fi
    log="$LOG_DIR/bench_${label}_${prec}.log"
    set +e
    # shellcheck disable=SC2086
    timeout 90 "$TOPOTRAIN" bench step --config "$config" --set train.device=cuda --set train.seq_len=1024 \
      --set train.batch_size="$batch" --set train.grad_accum_steps=1 --set parallel.zero_stage=0 \
      --set train.matmul_precision="$prec" $extra --steps 4 --warmup 2 >"$log" 2>&1
    rc=$?
    set -e
    line=$(grep -E '^tokens/s' "$log" | head -n1 || true)
    tps=$(grep -Eo 'tokens/s [0-9.]+' <<<"$line" | grep -Eo '[0-9.]+$' || true)
    if [[ $rc -eq 0 && -n "$tps" ]]; then
      [[ -z "$base_tps" ]] && base_tps="$tps"
      speedup=$(awk -v a="$tps" -v b="$base_tps" 'BEGIN { printf "%.2fx", a / b }')
      printf '%-11s %-8s %12s tokens/s  %s of default\n' "$label" "$prec" "$tps" "$speedup" >>"$PREC_TABLE"
      add_row "precision $label" "ok" "$(($(now) - t0))" "$prec: $tps tokens/s ($speedup of default), B=$batch T=1024"
    else
      tail -n 15 "$log" >&2
      add_row "precision $label" "FAIL" "$(($(now) - t0))" "$prec: rc $rc; see $(basename "$log")"
      TESTS_OK=0
    fi
  done
done
echo "matmul precision (bench step, T=1024):"
cat "$PREC_TABLE"

# ---- 5. llm.c comparison (optional) ---------------------------------------------------------------------
# Same model, precision, batch and shards for both tools (launch/compare_llmc.sh); each run is bounded
# so that the whole script stays within GPU_CHECK_BUDGET_S, and skipped when too little is left.
if [[ -n "$LLMC_BUILD_PID" ]]; then
  t0=$(now)
  LEFT=$((GPU_CHECK_BUDGET_S - (t0 - SCRIPT_START)))
  LLMC_BATCH="${LLMC_BATCH:-64}"
  LLMC_STEPS="${LLMC_STEPS:-20}"
  if [[ $LLMC_BUILD_RC -ne 0 ]]; then
    add_row "llm.c compare" "skipped" "0" "llm.c did not build (row above)"
  elif ((LEFT < 75)); then
    add_row "llm.c compare" "skipped" "0" "time budget: ${LEFT} s left of ${GPU_CHECK_BUDGET_S} s (GPU_CHECK_BUDGET_S)"
  else
    RUN_LIMIT=$(((LEFT - 15) / 2))
    if ((RUN_LIMIT > 150)); then RUN_LIMIT=150; fi
    set +e
    "$SRC/launch/compare_llmc.sh" --llmc "$LLMC_DIR" "${LLMC_ARCH_ARGS[@]}" --bin "$TOPOTRAIN" \
      --work "$LOG_DIR/llmc_compare" --batch "$LLMC_BATCH" --seq 1024 --steps "$LLMC_STEPS" --warmup 3 \
      --build-timeout 60 --run-timeout "$RUN_LIMIT" >"$LOG_DIR/llmc_compare.log" 2>&1
    CMP_RC=$?
    set -e
    sed -n '/topotrain vs llm.c/,$p' "$LOG_DIR/llmc_compare.log"
    RESULT=$(grep -E '^RESULT ' "$LOG_DIR/llmc_compare.log" | tail -n1 || true)
    field() { grep -Eo "$1=[^ ]+" <<<"$RESULT" | cut -d= -f2 || true; }
    if [[ $CMP_RC -eq 0 && -n "$RESULT" ]]; then
      add_row "llm.c compare" "ok" "$(($(now) - t0))" "B=$LLMC_BATCH T=1024: llm.c $(field llmc_tokens_per_s) tokens/s (cuDNN=$(field llmc_cudnn)), topotrain $(field topotrain_tokens_per_s): ratio $(field ratio)"
    else
      tail -n 15 "$LOG_DIR/llmc_compare.log" >&2
      add_row "llm.c compare" "FAIL" "$(($(now) - t0))" "rc $CMP_RC${RESULT:+, $RESULT}; see llmc_compare.log"
    fi
  fi
fi

print_summary
[[ $TESTS_OK -eq 1 ]] || exit 1
exit 0
