#!/usr/bin/env bash
# Fills OUT/<target>/ with the seed inputs of every fuzz target: the small committed ones
# (tests/fuzz/seeds/<target>/) plus inputs made at run time from the repository's fixtures and
# examples (kept out of seeds/ so nothing is committed twice) and, when BUILD_DIR/topotrain exists,
# topology files it writes for its presets.
# Usage: tests/fuzz/make_seeds.sh OUT [BUILD_DIR]
# The committed binary seeds were generated once: llm.c shards (uint16, uint32, empty), checkpoint
# containers (no, one empty, two sections), a tiny llm.c model (fp32, bf16 with maxT=4 V=8 L=1 NH=1
# C=4 Vp=128), safetensors files (mixed dtypes, empty), and tokenizer.json from tests/fuzz/vocab.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
out="${1:?usage: make_seeds.sh OUT [BUILD_DIR]}"
build="${2:-}"
fx="$root/tests/fixtures"
mkdir -p "$out"
for dir in "$root"/tests/fuzz/seeds/*/; do
  name="$(basename "$dir")"
  mkdir -p "$out/$name"
  cp -f "$dir"* "$out/$name/" 2>/dev/null || true
done

# add TARGET FILE...: copies files as TARGET seeds, named after their path below the repository.
add() {
  local target="$1"; shift
  mkdir -p "$out/$target"
  for f in "$@"; do
    [[ -f "$f" ]] && cp -f "$f" "$out/$target/$(realpath --relative-to="$root" "$f" | tr '/' '_')"
  done
  return 0
}
add config_text "$root"/examples/*.pbtxt
add shard "$fx/models/eval_tokens.bin"
add safetensors "$fx/models/gpt2-tiny/model.safetensors" "$fx/models/llama-bf16-shards/model-00001-of-00004.safetensors"
add hf_config "$fx"/models/*/config.json
add hf_index "$fx/models/llama-bf16-shards/model.safetensors.index.json"
add nvlink_records "$fx"/topology/nvml-*.txt
mapfile -t sysfs_files < <(find "$fx/topology" -path '*sysfs-*' -type f | sort)
add sysfs "${sysfs_files[@]}"
mkdir -p "$out/bpe_encode" "$out/bpe_openai" "$out/text_codec"
head -c 4096 "$root/README.md" > "$out/bpe_encode/readme_head.txt"

# Tokenizer seeds from the committed fuzz vocabulary.
enc="$root/tests/fuzz/vocab/encoder.json"
bpe="$root/tests/fuzz/vocab/vocab.bpe"
{ cat "$enc"; printf '\n@@\n'; cat "$bpe"; } > "$out/bpe_openai/fuzz_vocab.txt"
{ printf 'bpe:%s\n' "$(stat -c %s "$enc")"; cat "$enc" "$bpe"; } > "$out/text_codec/fuzz_vocab.txt"

# Topology files as `probe --dump` writes them (text and JSON).
if [[ -n "$build" && -x "$build/topotrain" ]]; then
  for preset in 8x4090-pcie 2x8xh100-sxm-400g-ib; do
    "$build/topotrain" probe --preset "$preset" --dump "$out/topology/$preset.pbtxt" >/dev/null 2>&1 || true
    "$build/topotrain" probe --preset "$preset" --dump "$out/topology/$preset.json" >/dev/null 2>&1 || true
  done
fi
