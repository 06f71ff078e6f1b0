#!/usr/bin/env bash
# Compares training throughput of topotrain with llm.c (karpathy/llm.c, train_gpt2cu) on the local
# GPU at the same settings: GPT-2 124M (randomly initialised, llm.c's `-e d12`), bf16, batch B x T,
# one GPU, no recomputation, no ZeRO, no validation/sampling/checkpoints inside the timed steps, on
# the same llm.c-format token shards (written by `topotrain data synth`, no download).
#
# llm.c is NOT part of this repository: fetch it yourself and pass its directory (default
# third_party_cache/llm.c, git-ignored). This script only drives llm.c's own Makefile and binary.
#
# Stages (each bounded by `timeout`; a failure prints what failed and exits non-zero):
#   1. build  train_gpt2cu with llm.c's Makefile for the local GPU (cuDNN flash attention when the
#             cuDNN frontend headers are found, else USE_CUDNN=0; no MPI, no NCCL). Reused when the
#             binary and its stamp (arch, cuDNN, nvcc version, source hash) match.
#   2. data   train/val shards for the run (topotrain data synth; reused when large enough)
#   3. llm.c  train_gpt2cu -e d12 for WARMUP+STEPS steps; tokens/s over the steps after WARMUP
#             (from its per-step times)
#   4. topotrain  `topotrain bench step` with --warmup WARMUP --steps STEPS on the same shards
#   5. table  tokens/s and MFU of both and the ratio topotrain / llm.c
#
# Usage: launch/compare_llmc.sh [--llmc DIR] [--batch B] [--seq T] [--steps N] [--warmup W]
#          [--bin build/topotrain] [--data DIR] [--work DIR] [--cudnn auto|1|0] [--arch 90]
#          [--build-only] [--rebuild] [--build-timeout S] [--run-timeout S]
set -euo pipefail

SRC="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
LLMC="$SRC/third_party_cache/llm.c"
B=64
T=1024
STEPS=20
WARMUP=3
BIN=""
DATA=""
WORK="$SRC/runs/compare_llmc"
CUDNN=auto
ARCH=""
BUILD_ONLY=0
REBUILD=0
BUILD_TIMEOUT=480
RUN_TIMEOUT=240
JOBS="${JOBS:-$(nproc)}"

usage() {
  sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'
  cat <<EOF
Options (defaults):
  --llmc DIR          llm.c checkout ($LLMC)
  --batch B           micro-batch per step, both tools ($B)
  --seq T             sequence length ($T)
  --steps N           measured steps ($STEPS)
  --warmup W          steps run first and not measured ($WARMUP)
  --bin FILE          topotrain binary with CUDA (build/topotrain, else build-gpu/topotrain)
  --data DIR          shards DIR/train.bin, DIR/val.bin; written when absent (WORK/data)
  --work DIR          logs and data ($WORK)
  --cudnn auto|1|0    build llm.c with cuDNN attention: auto tries 1 then 0 ($CUDNN)
  --arch SM           CUDA architecture, e.g. 90 (from nvidia-smi; 90 without a GPU)
  --build-only        build train_gpt2cu and stop (works without a GPU)
  --rebuild           rebuild train_gpt2cu even when the stamp matches
  --build-timeout S   limit for the llm.c build ($BUILD_TIMEOUT)
  --run-timeout S     limit for each of the two runs ($RUN_TIMEOUT)
EOF
}

while [[ $# -gt 0 ]]; do
  case "$1" in
    --llmc) LLMC="$2"; shift 2 ;;
    --batch) B="$2"; shift 2 ;;
    --seq) T="$2"; shift 2 ;;
    --steps) STEPS="$2"; shift 2 ;;
    --warmup) WARMUP="$2"; shift 2 ;;
    --bin) BIN="$2"; shift 2 ;;
    --data) DATA="$2"; shift 2 ;;
    --work) WORK="$2"; shift 2 ;;
    --cudnn) CUDNN="$2"; shift 2 ;;
    --arch) ARCH="$2"; shift 2 ;;
    --build-only) BUILD_ONLY=1; shift ;;
    --rebuild) REBUILD=1; shift ;;
    --build-timeout) BUILD_TIMEOUT="$2"; shift 2 ;;
    --run-timeout) RUN_TIMEOUT="$2"; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "compare_llmc: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done

die() { echo "compare_llmc: FAILED in $1: $2" >&2; exit 1; }
is_uint() { [[ "$1" =~ ^[0-9]+$ ]]; }
timeout_note() { if [[ $rc -eq 124 ]]; then echo ", timed out after $1 s"; fi; }  # uses the caller's rc
for v in B T STEPS WARMUP BUILD_TIMEOUT RUN_TIMEOUT; do
  is_uint "${!v}" || { echo "compare_llmc: $v must be a non-negative integer, got '${!v}'" >&2; exit 2; }
done
((B >= 1 && T >= 1 && T <= 1024 && STEPS >= 1)) ||
  { echo "compare_llmc: need batch >= 1, 1 <= seq <= 1024 (GPT-2's context), steps >= 1" >&2; exit 2; }
[[ "$CUDNN" =~ ^(auto|0|1)$ ]] || { echo "compare_llmc: --cudnn must be auto, 1 or 0" >&2; exit 2; }

LLMC="$(cd "$LLMC" 2>/dev/null && pwd)" ||
  die "setup" "llm.c directory not found (--llmc); fetch karpathy/llm.c into third_party_cache/llm.c (git-ignored, never committed)"
[[ -f "$LLMC/train_gpt2.cu" && -f "$LLMC/Makefile" && -d "$LLMC/llmc" ]] ||
  die "setup" "$LLMC does not look like llm.c (train_gpt2.cu, Makefile, llmc/ expected)"
mkdir -p "$WORK"
WORK="$(cd "$WORK" && pwd)"
DATA="${DATA:-$WORK/data}"
LOG="$WORK"
echo "compare_llmc: llm.c at $LLMC; logs in $LOG"

if ! command -v nvcc >/dev/null 2>&1 && [[ -x /usr/local/cuda/bin/nvcc ]]; then
  export PATH="/usr/local/cuda/bin:$PATH"
fi

# ---- the GPU (needed for the runs, not for the build) ---------------------------------------------
GPU_NAME=""
GPU_CAP=""
if command -v nvidia-smi >/dev/null 2>&1 &&
   GPU_INFO=$(timeout 30 nvidia-smi --query-gpu=name,compute_cap --format=csv,noheader 2>/dev/null) &&
   [[ -n "$GPU_INFO" ]]; then
  GPU_NAME=$(head -n1 <<<"$GPU_INFO" | cut -d, -f1 | sed 's/^ *//; s/ *$//')
  GPU_CAP=$(head -n1 <<<"$GPU_INFO" | cut -d, -f2 | tr -d ' ')
fi
if [[ -z "$ARCH" ]]; then
  if [[ "$GPU_CAP" =~ ^[0-9]+\.[0-9]+$ ]]; then
    ARCH="${GPU_CAP/./}"
  else
    ARCH=90
    echo "compare_llmc: no GPU visible: llm.c is built for sm_90$([[ $BUILD_ONLY -eq 1 ]] || echo ' (the run stages will fail)')"
  fi
fi
is_uint "$ARCH" || { echo "compare_llmc: --arch must be a number such as 90" >&2; exit 2; }

# ---- 1. build llm.c's train_gpt2cu ----------------------------------------------------------------
command -v nvcc >/dev/null 2>&1 || die "build" "nvcc not found (CUDA toolkit; tried PATH and /usr/local/cuda/bin)"
NVCC_VERSION=$(nvcc --version | tail -n1)
# The cuDNN frontend (header-only): llm.c's Makefile only looks in $HOME/cudnn-frontend/include and
# ./cudnn-frontend/include, so a link ./cudnn-frontend -> the install lets it find it; the include
# path itself is passed as CUDNN_FRONTEND_PATH.
CUDNN_FE=""
for d in "${CUDNN_FRONTEND_ROOT:-}" /usr/local/cudnn-frontend "$HOME/cudnn-frontend"; do
  if [[ -n "$d" && -f "$d/include/cudnn_frontend.h" ]]; then CUDNN_FE="$d"; break; fi
done
# llm.c links -lnvidia-ml, which is only needed (and only present) where <nvml.h> is: mfu.h uses NVML
# only under __has_include(<nvml.h>). NVCC_LDFLAGS is therefore given whole on the command line.
LDFLAGS_BASE="-lcublas -lcublasLt"
if echo '#include <nvml.h>' | nvcc -E -x cu - -o /dev/null >/dev/null 2>&1; then
  LDFLAGS_BASE+=" -lnvidia-ml"
  [[ -d /usr/local/cuda/lib64/stubs ]] && LDFLAGS_BASE+=" -L/usr/local/cuda/lib64/stubs"
fi
# CUDA 13 removed cudaMemAdvise(ptr, bytes, advice, int device) (the 4th argument is now a
# cudaMemLocation), which llm.c's managed-memory fallback (llmc/cuda_utils.cuh) still calls. Rather
# than patching llm.c, a header of ours is force-included (nvcc -include, through the Makefile's
# PFLAGS) that adds the old overload on top of the new call; it is a no-op before CUDA 13.
COMPAT_H_TEXT='// Written by topotrain launch/compare_llmc.sh: CUDA 13 compatibility for building llm.c.
#pragma once
#include <cuda_runtime_api.h>
#if defined(__cplusplus) && defined(CUDART_VERSION) && CUDART_VERSION >= 13000
static inline cudaError_t cudaMemAdvise(const void* ptr, size_t bytes, enum cudaMemoryAdvise advice, int device) {
  struct cudaMemLocation loc;
  loc.type = device == cudaCpuDeviceId ? cudaMemLocationTypeHost : cudaMemLocationTypeDevice;
  loc.id = device == cudaCpuDeviceId ? 0 : device;
  return cudaMemAdvise(ptr, bytes, advice, loc);
}
#endif'
COMPAT_H="$LLMC/build/compare_llmc_cuda_compat.h"
SRC_HASH=$( (cat "$LLMC/Makefile" "$LLMC/train_gpt2.cu" "$LLMC"/llmc/*; echo "$COMPAT_H_TEXT $LDFLAGS_BASE") |
  sha256sum | cut -c1-16)
STAMP_FILE="$LLMC/.compare_llmc_stamp"

build_llmc() {  # $1 = 1|0 (USE_CUDNN); the log goes to $LOG/llmc_build_cudnn$1.log
  local use="$1" log="$LOG/llmc_build_cudnn$1.log" args
  mkdir -p "$LLMC/build"
  printf '%s\n' "$COMPAT_H_TEXT" >"$COMPAT_H"
  args=(-C "$LLMC" train_gpt2cu GPU_COMPUTE_CAPABILITY="$ARCH" PRECISION=BF16 "PFLAGS=-DENABLE_BF16 -include $COMPAT_H"
        NO_MULTI_GPU=1 NO_USE_MPI=1 CC="${CC:-gcc}" USE_CUDNN="$use")
  if [[ "$use" == 1 ]]; then
    ln -sfn "$CUDNN_FE" "$LLMC/cudnn-frontend"
    # recent cuDNN frontends (>= 1.1x) also need NVRTC for their runtime-compiled engines
    args+=(CUDNN_FRONTEND_PATH="$CUDNN_FE/include" "NVCC_LDFLAGS=$LDFLAGS_BASE -lcudnn -lnvrtc")
  else
    args+=("NVCC_LDFLAGS=$LDFLAGS_BASE")
  fi
  rm -f "$LLMC/train_gpt2cu" "$LLMC/build/cudnn_att.o" "$STAMP_FILE"
  echo "compare_llmc: make ${args[*]}" | tee "$log"
  local t0=$SECONDS rc=0
  timeout "$BUILD_TIMEOUT" nice -n "${BUILD_NICE:-0}" make -j "$JOBS" "${args[@]}" >>"$log" 2>&1 || rc=$?
  if [[ "$use" == 1 && -L "$LLMC/cudnn-frontend" ]]; then rm -f "$LLMC/cudnn-frontend"; fi  # ours, from above
  if [[ $rc -eq 0 && -x "$LLMC/train_gpt2cu" ]]; then
    echo "compare_llmc: built train_gpt2cu (USE_CUDNN=$use, sm_$ARCH) in $((SECONDS - t0)) s"
    echo "arch=$ARCH cudnn=$use nvcc=$NVCC_VERSION src=$SRC_HASH" >"$STAMP_FILE"
    return 0
  fi
  echo "compare_llmc: llm.c build with USE_CUDNN=$use failed (rc $rc$(timeout_note "$BUILD_TIMEOUT")); last lines of $log:" >&2
  grep -E -m 20 'error' "$log" >&2 || tail -n 20 "$log" >&2
  return 1
}

LLMC_CUDNN=""
STAMP_NOW=""
[[ -f "$STAMP_FILE" ]] && STAMP_NOW=$(cat "$STAMP_FILE")
if [[ -n "$STAMP_NOW" && -x "$LLMC/train_gpt2cu" ]]; then  # a prebuilt binary must also find its libraries
  LDD_OUT=$(ldd "$LLMC/train_gpt2cu" 2>&1 || true)
  if grep -q 'not found' <<<"$LDD_OUT"; then
    echo "compare_llmc: the existing train_gpt2cu misses libraries here ($(grep 'not found' <<<"$LDD_OUT" | awk '{print $1}' | tr '\n' ' ')): rebuilding"
    STAMP_NOW=""
  fi
fi
for use in 1 0; do
  if [[ $REBUILD -eq 0 && -x "$LLMC/train_gpt2cu" && "$CUDNN" != "$((1 - use))" &&
        "$STAMP_NOW" == "arch=$ARCH cudnn=$use nvcc=$NVCC_VERSION src=$SRC_HASH" ]]; then
    LLMC_CUDNN=$use
    echo "compare_llmc: reusing $LLMC/train_gpt2cu (USE_CUDNN=$use, sm_$ARCH, stamp matches)"
    break
  fi
done
if [[ -z "$LLMC_CUDNN" ]]; then
  if [[ "$CUDNN" != 0 ]]; then
    if [[ -z "$CUDNN_FE" ]]; then
      [[ "$CUDNN" == 1 ]] && die "build" "--cudnn 1 but no cuDNN frontend headers (set CUDNN_FRONTEND_ROOT to the dir holding include/cudnn_frontend.h)"
      echo "compare_llmc: no cuDNN frontend headers found: building llm.c with USE_CUDNN=0"
    elif build_llmc 1; then
      LLMC_CUDNN=1
    elif [[ "$CUDNN" == 1 ]]; then
      die "build" "llm.c did not build with USE_CUDNN=1 (see $LOG/llmc_build_cudnn1.log)"
    else
      echo "compare_llmc: falling back to USE_CUDNN=0 (llm.c's own attention kernels)"
    fi
  fi
  if [[ -z "$LLMC_CUDNN" ]]; then
    build_llmc 0 || die "build" "llm.c did not build with USE_CUDNN=0 either (see $LOG/llmc_build_cudnn0.log)"
    LLMC_CUDNN=0
  fi
fi
ATTN_DESC=$([[ $LLMC_CUDNN == 1 ]] && echo "cuDNN attention" || echo "llm.c attention kernels (no cuDNN)")
if [[ $BUILD_ONLY -eq 1 ]]; then
  echo "compare_llmc: build only: $LLMC/train_gpt2cu ready (USE_CUDNN=$LLMC_CUDNN, sm_$ARCH)"
  exit 0
fi

# ---- topotrain binary -----------------------------------------------------------------------------
has_cuda() { local v; v=$("$1" --version 2>/dev/null || true); grep -q 'CUDA: *yes' <<<"$v"; }
if [[ -z "$BIN" ]]; then
  for b in "$SRC/build/topotrain" "$SRC/build-gpu/topotrain"; do
    if [[ -x "$b" ]] && has_cuda "$b"; then BIN="$b"; break; fi
  done
  [[ -n "$BIN" ]] || die "setup" "no topotrain built with CUDA in build/ or build-gpu/ (build with tests/gpu_check.sh or cmake -DTOPOTRAIN_CUDA=ON, or pass --bin)"
fi
[[ -x "$BIN" ]] || die "setup" "topotrain binary $BIN not found (--bin)"
has_cuda "$BIN" || die "setup" "$BIN was built without CUDA (its --version does not say CUDA: yes)"

# ---- 2. data ----------------------------------------------------------------------------------------
# llm.c needs >= B*T+1 tokens per shard; both tools get enough for every step without wrapping.
# `data synth` writes uint16 llm.c shards with ids < 73 (valid GPT-2 ids; the model keeps its
# 50257-token vocabulary, so the FLOPs are the same as on real text).
TRAIN_NEED=$(((WARMUP + STEPS + 2) * B * T + 1))
VAL_NEED=$((2 * B * T + 1))
shard_tokens() { [[ -f "$1" ]] && echo $((($(stat -c %s "$1") - 1024) / 2)) || echo 0; }
if (($(shard_tokens "$DATA/train.bin") >= TRAIN_NEED && $(shard_tokens "$DATA/val.bin") >= VAL_NEED)); then
  echo "compare_llmc: reusing shards in $DATA"
else
  mkdir -p "$DATA"
  timeout 300 "$BIN" data synth --out "$DATA" --vocab 73 --order 2 --seed 1 \
    --train-tokens "$TRAIN_NEED" --val-tokens "$VAL_NEED" >"$LOG/data_synth.log" 2>&1 ||
    { cat "$LOG/data_synth.log" >&2; die "data" "topotrain data synth failed (see $LOG/data_synth.log)"; }
  echo "compare_llmc: wrote $TRAIN_NEED train and $VAL_NEED val tokens to $DATA"
fi

# ---- the runs need a GPU ----------------------------------------------------------------------------
[[ -n "$GPU_NAME" ]] || die "run" "no GPU: nvidia-smi finds no NVIDIA GPU on this machine (the build and data stages are done; run this on a GPU machine)"
echo "compare_llmc: GPU $GPU_NAME (sm $GPU_CAP); GPT-2 124M bf16, B=$B T=$T, $WARMUP warm-up + $STEPS measured steps"
FAILED=()

# ---- 3. llm.c ---------------------------------------------------------------------------------------
# -e d12: GPT-2 124M, random init; -d B*T: no gradient accumulation; -r 0: no recomputation and
# -z 0: no ZeRO (as topotrain); -v/-m: validation (1 batch) only at step 0 and the last step, outside
# the timed region; -s 0: no sampling; -n 0 and no -o: no checkpoints or logs; -h 0: no HellaSwag.
LLMC_TPS=""; LLMC_MFU=""; LLMC_NOTE=""
LLMC_ARGS=(-i "$DATA/train.bin" -j "$DATA/val.bin" -e d12 -b "$B" -t "$T" -d $((B * T))
           -x $((WARMUP + STEPS)) -v 1000000 -m 1 -s 0 -n 0 -h 0 -z 0 -r 0 -c 0.1 -l 0.0006)
echo "compare_llmc: $LLMC/train_gpt2cu ${LLMC_ARGS[*]}" | tee "$LOG/llmc_run.log"
rc=0
(cd "$WORK" && timeout "$RUN_TIMEOUT" "$LLMC/train_gpt2cu" "${LLMC_ARGS[@]}") >>"$LOG/llmc_run.log" 2>&1 || rc=$?
# step lines: "step   k/M | loss ... | <ms> ms | <mfu>% bf16 MFU | <tok/s> tok/s"
read -r LLMC_N LLMC_MS LLMC_MFU_SUM < <(awk -v w="$WARMUP" '
  /^step +[0-9]+\/[0-9]+ \|/ {
    split($2, a, "/"); k = a[1] + 0
    if (k <= w) next
    for (i = 1; i <= NF; i++) { if ($i == "ms" && $(i - 1) ~ /^[0-9.]+$/) ms += $(i - 1); if ($i ~ /%$/ && $(i + 1) == "bf16") mfu += $i + 0 }
    n++
  }
  END { printf "%d %.6f %.6f\n", n, ms, mfu }' "$LOG/llmc_run.log")
if [[ $rc -eq 0 && $LLMC_N -ge 1 ]] && awk -v ms="$LLMC_MS" 'BEGIN { exit !(ms > 0) }'; then
  LLMC_TPS=$(awk -v n="$LLMC_N" -v ms="$LLMC_MS" -v bt=$((B * T)) 'BEGIN { printf "%.0f", n * bt / (ms / 1000) }')
  # llm.c prints -100% for GPUs missing from its table (e.g. H200)
  LLMC_MFU=$(awk -v n="$LLMC_N" -v s="$LLMC_MFU_SUM" 'BEGIN { m = s / n; if (m < 0) print "n/a"; else printf "%.1f%%", m }')
  LLMC_NOTE="$LLMC_N steps, $ATTN_DESC"
  echo "compare_llmc: llm.c: $LLMC_TPS tokens/s over steps $((WARMUP + 1))..$((WARMUP + STEPS))"
else
  tail -n 25 "$LOG/llmc_run.log" >&2
  LLMC_NOTE="FAILED (rc $rc$(timeout_note "$RUN_TIMEOUT"); $LLMC_N step lines), see llmc_run.log"
  FAILED+=("llm.c run: $LLMC_NOTE")
fi

# ---- 4. topotrain -----------------------------------------------------------------------------------
TT_TPS=""; TT_MFU=""; TT_NOTE=""
TT_ARGS=(bench step --config "$SRC/examples/gpt2-124m.pbtxt" --set train.device=cuda
         --set train.batch_size="$B" --set train.seq_len="$T" --set train.grad_accum_steps=1
         --set data.train="$DATA/train.bin" --set data.val="$DATA/val.bin" --steps "$STEPS" --warmup "$WARMUP")
echo "compare_llmc: $BIN ${TT_ARGS[*]}" | tee "$LOG/topotrain_run.log"
rc=0
timeout "$RUN_TIMEOUT" "$BIN" "${TT_ARGS[@]}" >>"$LOG/topotrain_run.log" 2>&1 || rc=$?
TT_LINE=$(grep -E '^tokens/s ' "$LOG/topotrain_run.log" | tail -n1 || true)
if [[ $rc -eq 0 && -n "$TT_LINE" ]]; then
  TT_TPS=$(grep -Eo '^tokens/s [0-9.]+' <<<"$TT_LINE" | awk '{printf "%.0f", $2}')
  TT_MFU=$(grep -Eo 'MFU [^ ]+' <<<"$TT_LINE" | cut -d' ' -f2 || true)
  TT_NOTE="$STEPS steps, $(grep -Eo 'of [0-9.]+ dense bf16 TFLOP/s' <<<"$TT_LINE" || echo 'bf16')"
  echo "compare_llmc: topotrain: $TT_TPS tokens/s"
else
  tail -n 25 "$LOG/topotrain_run.log" >&2
  TT_NOTE="FAILED (rc $rc$(timeout_note "$RUN_TIMEOUT")), see topotrain_run.log"
  FAILED+=("topotrain run: $TT_NOTE")
fi

# ---- 5. table ---------------------------------------------------------------------------------------
RATIO="-"
if [[ -n "$LLMC_TPS" && -n "$TT_TPS" ]]; then
  RATIO=$(awk -v a="$TT_TPS" -v b="$LLMC_TPS" 'BEGIN { printf "%.3f", a / b }')
  # llm.c's throughput on topotrain's MFU scale (same FLOPs per token, same peak): MFU / ratio
  if [[ "$TT_MFU" =~ ^[0-9.]+%$ ]]; then
    LLMC_NOTE+="; MFU on topotrain's scale $(awk -v m="${TT_MFU%\%}" -v r="$RATIO" 'BEGIN { printf "%.1f%%", m / r }')"
  fi
fi
echo
echo "=========================== topotrain vs llm.c: GPT-2 124M, bf16, 1 GPU ==========================="
echo "GPU: $GPU_NAME (sm $GPU_CAP); B=$B T=$T ($((B * T)) tokens/step), $WARMUP warm-up + $STEPS measured steps; data: $DATA"
printf '%-10s %12s %8s %22s  %s\n' "tool" "tokens/s" "MFU" "ratio topotrain/llm.c" "notes"
printf '%-10s %12s %8s %22s  %s\n' "----------" "------------" "--------" "----------------------" "-----"
printf '%-10s %12s %8s %22s  %s\n' "llm.c" "${LLMC_TPS:--}" "${LLMC_MFU:--}" "$([[ -n "$LLMC_TPS" ]] && echo 1.000 || echo -)" "$LLMC_NOTE"
printf '%-10s %12s %8s %22s  %s\n' "topotrain" "${TT_TPS:--}" "${TT_MFU:--}" "$RATIO" "$TT_NOTE"
echo "(MFU: each tool's own estimate: llm.c counts 6N+6LCT FLOPs/token against its own peak table (n/a for GPUs"
echo " it does not list), topotrain 6N+12LCT against core/device_info; the note rescales llm.c to topotrain's)"
echo "===================================================================================================="
echo "RESULT llmc_tokens_per_s=${LLMC_TPS:-NA} topotrain_tokens_per_s=${TT_TPS:-NA} ratio=${RATIO/-/NA} llmc_cudnn=$LLMC_CUDNN"
if [[ ${#FAILED[@]} -gt 0 ]]; then
  printf 'compare_llmc: FAILED: %s\n' "${FAILED[@]}" >&2
  exit 1
fi
exit 0
