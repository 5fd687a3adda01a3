#!/usr/bin/env bash
# LoRA training speed, Forja vs HF transformers + PEFT, in one run on the GPU machine (from the repository root):
#   bench/train_bench.sh            build forja-cli (CUDA LibTorch of the Python wheel), run both, print the table
#   SKIP_BUILD=1 bench/train_bench.sh
# Both sides: TinyLlama-1.1B shape at 8x1024 and Mistral-7B shape at 4x1024, random bf16 weights, LoRA r16 alpha32 on
# the 7 projections, random tokens, AdamW. The peer is bench/hf_peft_baseline.py.
set -euo pipefail
OUT=${OUT:-/tmp/forja-bench}
mkdir -p "$OUT"
BUILD=${BUILD:-build-cuda}
BASELINE=${BASELINE:-bench/hf_peft_baseline.py}
STEPS=${STEPS:-10}
if [[ ! -f $BASELINE ]]; then
  echo "missing $BASELINE" >&2
  exit 2
fi
if [[ ${SKIP_BUILD:-0} != 1 ]]; then
  cmake -S . -B "$BUILD" -G Ninja -DFORJA_BUILD_UI=OFF -DFORJA_SKIP_AREAS="tokenizer;store;data" \
    -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$(python3 -c 'import torch;print(torch.utils.cmake_prefix_path)')" \
    >"$OUT/cmake.log"
  cmake --build "$BUILD" -j"$(nproc)" --target forja-cli >>"$OUT/cmake.log"
fi
CLI=$BUILD/app/forja-cli

"$CLI" bench train --shape tinyllama --batch 8 --seq 1024 --steps "$STEPS" --json | tee "$OUT/forja_train.jsonl"
"$CLI" bench train --shape mistral7b --batch 4 --seq 1024 --steps "$STEPS" --json | tee -a "$OUT/forja_train.jsonl"
OUT="$OUT" python3 "$BASELINE" | tee "$OUT/hf_peft_baseline.log"

python3 - "$OUT" <<'PY'
import json, os, sys
out = sys.argv[1]
ours = {r["shape"]: r for r in map(json.loads, open(os.path.join(out, "forja_train.jsonl")))}
peer = {r["kind"]: r for r in json.load(open(os.path.join(out, "hf_peft_baseline.json"))) if "tokens_per_s" in r}
names = {"tinyllama": "tinyllama-1.1b", "mistral7b": "mistral-7b"}
print("| shape | batch x seq | HF+PEFT tok/s | Forja tok/s | ratio | HF+PEFT peak GiB | Forja peak GiB | ratio |")
print("| --- | --- | --- | --- | --- | --- | --- | --- |")
for shape, r in ours.items():
    p = peer[names[shape]]
    print(f"| {shape} | {r['batch']}x{r['seq']} | {p['tokens_per_s']:,.0f} | {r['tokens_per_s']:,.0f} | "
          f"{r['tokens_per_s'] / p['tokens_per_s']:.2f}x | {p['peak_gib']:.1f} | {r['peak_gib']:.1f} | "
          f"{r['peak_gib'] / p['peak_gib']:.2f}x |")
PY
