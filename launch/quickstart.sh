#!/usr/bin/env bash
# The quick start: installs what is missing, builds, writes the built-in synthetic corpus (no
# downloads), trains a small GPT on it with 2 data-parallel ranks, prints the final losses next to
# the corpus' entropy floor, plots the loss curves (runs/quickstart/loss.png), writes the run's report
# page (runs/quickstart/report.html, with a trace of three steps on both ranks) and prints a sample.
# Training takes about a minute on 2 CPU cores (plus the first build).
set -euo pipefail
cd "$(dirname "$0")/.."
launch/install_deps.sh
TT_BUILD_TARGET=topotrain launch/build.sh
RUN=runs/quickstart
rm -rf "$RUN"
build/topotrain data synth --out "$RUN/data" --vocab 32 --order 2 --concentration 30 --seed 1 --train-tokens 4000000 --val-tokens 200000
# Two data-parallel ranks on this machine (mpirun refuses root unless told, and may see 1 core).
MPIRUN=(mpirun -np 2 --oversubscribe)
if [[ $(id -u) -eq 0 ]]; then MPIRUN+=(--allow-run-as-root); fi
# Steps 1000-1002 are traced on both ranks (runs/quickstart/trace/, open in https://ui.perfetto.dev).
"${MPIRUN[@]}" build/topotrain train --config examples/gpt2-tiny-synth.pbtxt --set train.trace_steps=1000-1002
build/topotrain plot --run "$RUN"
build/topotrain report "$RUN"   # runs/quickstart/report.html: curves, phases per rank, prediction, config
echo "--- sample (temperature 0.8) ---"
build/topotrain sample --checkpoint "$RUN" --prompt "the " --tokens 200 --temperature 0.8 --seed 7
