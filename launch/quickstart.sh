#!/usr/bin/env bash
# The quick start: installs what is missing, builds, writes the built-in synthetic corpus (no
# downloads), trains a small GPT on it, and prints the losses next to the corpus' entropy floor and
# a generated sample. About 2-3 minutes on 2 CPU cores.
set -euo pipefail
cd "$(dirname "$0")/.."
launch/install_deps.sh
launch/build.sh
RUN=runs/quickstart
rm -rf "$RUN"
build/topotrain data synth --out "$RUN/data" --vocab 32 --order 2 --concentration 30 --seed 1 --train-tokens 4000000 --val-tokens 200000
build/topotrain train --config examples/gpt2-tiny-synth.pbtxt
build/topotrain plot --run "$RUN"
echo "--- sample (temperature 0.8) ---"
build/topotrain sample --checkpoint "$RUN" --prompt "the " --tokens 200 --temperature 0.8 --seed 7
