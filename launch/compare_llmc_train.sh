#!/usr/bin/env bash
# Numerical parity of topotrain's training with llm.c's CPU trainer (karpathy/llm.c, train_gpt2.c):
# both start from the same llm.c model file and train with llm.c's settings — B=4, T=64, AdamW(0.9,
# 0.999), eps 1e-8, lr 1e-4, no weight decay, no clipping, batches in order — and the per-step
# training losses of the first STEPS steps must agree within TOL.
#
# llm.c is NOT part of this repository: fetch it yourself and pass its directory (default
# third_party_cache/llm.c, git-ignored). This script copies its train_gpt2.c into the work directory
# and changes two lines there: the training loader does not shuffle, and the loop stops after STEPS
# steps. It compiles it with the C compiler's IEEE arithmetic (-O3, no -Ofast unless --ofast).
#
# The model: GPT-2 124M's body (12 layers, 768 wide, 1024 context) written as an llm.c model file by
# `topotrain export --format llmc` after one tiny step from topotrain's initialisation, with the
# vocabulary of the data: the built-in synthetic corpus (32 symbols, no download), or, with
# --tokenizer DIR --text FILE, GPT-2's 50257 tokens over that text.
#
# Usage: launch/compare_llmc_train.sh [--llmc DIR] [--bin build/topotrain] [--steps 10] [--tol 1e-4]
#          [--threads N] [--tokenizer DIR --text FILE] [--ofast] [--work DIR]
# Prints a table of both losses per step and a line `RESULT max_abs_diff=... steps=... pass=0|1`;
# exits 1 when a difference exceeds TOL.
set -euo pipefail

SRC="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
LLMC="$SRC/third_party_cache/llm.c"
BIN="$SRC/build/topotrain"
STEPS=10
TOL=1e-4
THREADS="$(nproc)"
TOKENIZER=""
TEXT=""
OFAST=0
WORK="$SRC/runs/compare_llmc_train"

while [[ $# -gt 0 ]]; do
  case "$1" in
    --llmc) LLMC="$2"; shift 2 ;;
    --bin) BIN="$2"; shift 2 ;;
    --steps) STEPS="$2"; shift 2 ;;
    --tol) TOL="$2"; shift 2 ;;
    --threads) THREADS="$2"; shift 2 ;;
    --tokenizer) TOKENIZER="$2"; shift 2 ;;
    --text) TEXT="$2"; shift 2 ;;
    --ofast) OFAST=1; shift ;;
    --work) WORK="$2"; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "compare_llmc_train: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
die() { echo "compare_llmc_train: $*" >&2; exit 1; }
[[ -f "$LLMC/train_gpt2.c" ]] || die "no llm.c checkout at $LLMC (train_gpt2.c missing); pass --llmc DIR"
[[ -x "$BIN" ]] || die "no topotrain binary at $BIN; build it (launch/build.sh) or pass --bin"
[[ -z "$TOKENIZER" || -n "$TEXT" ]] || die "--tokenizer needs --text"

rm -rf "$WORK"
mkdir -p "$WORK/llmc/dev/data/tinyshakespeare"
cd "$WORK"

# ---- data ----------------------------------------------------------------------------------------
if [[ -n "$TOKENIZER" ]]; then
  "$BIN" data encode --tokenizer "$TOKENIZER" --input "$TEXT" --out data --val-tokens 20000 >data.log 2>&1 ||
    { cat data.log; die "data encode failed"; }
  TRAIN=$(ls data/*_train_*.bin | head -n1)
  VAL=$(ls data/*_val_*.bin | head -n1)
  VOCAB=50257
else
  "$BIN" data synth --out data --vocab 32 --order 2 --concentration 30 --seed 1 --train-tokens 200000 \
    --val-tokens 20000 >data.log 2>&1 || { cat data.log; die "data synth failed"; }
  TRAIN=data/train.bin
  VAL=data/val.bin
  VOCAB=32
fi
ln -s "$WORK/$TRAIN" llmc/dev/data/tinyshakespeare/tiny_shakespeare_train.bin
ln -s "$WORK/$VAL" llmc/dev/data/tinyshakespeare/tiny_shakespeare_val.bin

# ---- the starting model, as an llm.c model file -----------------------------------------------------
cat >init.pbtxt <<EOF
model { arch: "gpt2" n_layer: 12 n_head: 12 n_embd: 768 vocab_size: $VOCAB max_seq_len: 1024 }
train { batch_size: 4 seq_len: 64 steps: 1 log_every: 1 threads: $THREADS device: "cpu" }
data { train: "$WORK/$TRAIN" }
optimizer { lr: 1e-6 }
logging { run_dir: "$WORK/init" }
EOF
"$BIN" train --config init.pbtxt >init.log 2>&1 || { cat init.log; die "making the starting model failed"; }
"$BIN" export --checkpoint init --format llmc --out model >export.log 2>&1 || { cat export.log; die "export failed"; }
cp model/model.bin llmc/gpt2_124M.bin

# ---- llm.c ---------------------------------------------------------------------------------------------
# Its sources as they are, but for the two lines this comparison needs.
cp -r "$LLMC/llmc" llmc/ 2>/dev/null || true
sed -e 's/dataloader_init(&train_loader, train_tokens, B, T, 0, 1, 1);/dataloader_init(\&train_loader, train_tokens, B, T, 0, 1, 0);/' \
    -e "s/for (int step = 0; step <= 40; step++)/for (int step = 0; step < $STEPS; step++)/" \
    "$LLMC/train_gpt2.c" >llmc/train_gpt2.c
grep -q "train_tokens, B, T, 0, 1, 0);" llmc/train_gpt2.c || die "could not turn off llm.c's shuffling (its source changed?)"
grep -q "step < $STEPS;" llmc/train_gpt2.c || die "could not set llm.c's step count (its source changed?)"
CFLAGS="-O3 -march=native"
[[ $OFAST -eq 1 ]] && CFLAGS="-Ofast -march=native"
(cd llmc && cc $CFLAGS -fopenmp -DOMP -Wno-unused-result train_gpt2.c -lm -o train_gpt2) >build.log 2>&1 ||
  { cat build.log; die "building llm.c's train_gpt2.c failed"; }
(cd llmc && OMP_NUM_THREADS=$THREADS ./train_gpt2) >llmc.log 2>&1 || { tail -n 20 llmc.log; die "llm.c failed"; }

# ---- topotrain, same settings -----------------------------------------------------------------------
cat >parity.pbtxt <<EOF
model { init_from: "$WORK/llmc/gpt2_124M.bin" }
train { batch_size: 4 seq_len: 64 steps: $STEPS log_every: 1 val_every: 0 threads: $THREADS device: "cpu" }
data { train: "$WORK/$TRAIN" shuffle: false }
optimizer { lr: 1e-4 warmup_steps: 0 min_lr_ratio: 1.0 weight_decay: 0 beta1: 0.9 beta2: 0.999 eps: 1e-8 grad_clip: 0 }
checkpoint { every: 0 }
logging { run_dir: "$WORK/topotrain" }
EOF
"$BIN" train --config parity.pbtxt >topotrain.log 2>&1 || { tail -n 20 topotrain.log; die "topotrain failed"; }

# ---- the comparison -----------------------------------------------------------------------------------
paste <(grep -Eo '^step [0-9]+: train loss [0-9.]+' llmc.log | awk '{print $5}') \
      <(grep -Eo '"loss":[0-9.eE+-]+' topotrain/metrics.jsonl | cut -d: -f2) |
  awk -v tol="$TOL" -v steps="$STEPS" '
    BEGIN { printf "%5s %12s %12s %10s\n", "step", "llm.c", "topotrain", "|diff|"; worst = 0; n = 0 }
    NF == 2 { d = $1 - $2; if (d < 0) d = -d; if (d > worst) worst = d; n++;
              printf "%5d %12.6f %12.6f %10.2e\n", n, $1, $2, d }
    END { ok = (n == steps && worst <= tol); printf "RESULT max_abs_diff=%.3g steps=%d pass=%d\n", worst, n, ok;
          exit ok ? 0 : 1 }'
