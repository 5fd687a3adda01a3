# Decode and LoRA training at the Qwen3-1.7B and Gemma-3-1B shapes (random bf16 weights), ours and the peer's in
# the same run: forja-cli bench decode vs transformers' generate (bench/decode_bench.py), forja-cli bench train
# vs HF + PEFT (bench/hf_peft_baseline.py with BASELINE_SHAPES), 8 x 1024 tokens, LoRA r16 on the 7 projections.
# Sourced by `bench/run_gpu.sh families` after the CUDA build.
# FAMILIES_DECODE=0 leaves the decode half out.
if [[ ${FAMILIES_DECODE:-1} != 0 ]]; then
  step "decode at the Qwen3-1.7B and Gemma-3-1B shapes, ours and transformers"
  python3 bench/decode_bench.py --cli "$CLI" --shapes qwen3_1_7b gemma3_1b 2>&1 | grep -v "Warning\|warn" | tail -7
fi
step "LoRA training 8 x 1024 at the same shapes: ours, then HF + PEFT"
rm -f "$OUT/families_train.jsonl"
for s in qwen3_1_7b gemma3_1b; do
  "$CLI" bench train --shape $s --batch 8 --seq 1024 --steps 8 --json 2>/dev/null | tail -1 | tee -a "$OUT/families_train.jsonl"
done
BASELINE_SHAPES="qwen3_1_7b gemma3_1b" OUT="$OUT" python3 bench/hf_peft_baseline.py 2>&1 | grep -v "Warning\|warn" | tail -3
python3 - "$OUT" <<'PY'
import json, os, sys
out = sys.argv[1]
ours = {r["shape"]: r for r in map(json.loads, open(os.path.join(out, "families_train.jsonl")))}
peer = {r["kind"]: r for r in json.load(open(os.path.join(out, "hf_peft_baseline.json"))) if "tokens_per_s" in r}
print(f"{'shape':12} {'forja tok/s':>11} {'HF+PEFT tok/s':>13} {'x':>5} {'forja GiB':>9} {'HF GiB':>7}")
for s, o in ours.items():
    p = peer.get(s)
    if p:
        print(f"{s:12} {o['tokens_per_s']:>11.0f} {p['tokens_per_s']:>13.0f} {o['tokens_per_s'] / p['tokens_per_s']:>5.2f}"
              f" {o['peak_gib']:>9.1f} {p['peak_gib']:>7.1f}")
PY
