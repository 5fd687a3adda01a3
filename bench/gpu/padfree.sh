# Padding-free packing on real-length data, sourced by `bench/run_gpu.sh padfree` after the CUDA build ($CLI, $OUT,
# step). The examples of bench/length_dataset.py (Stanford Alpaca's lengths under Llama 2's tokenizer, random
# tokens), TinyLlama-1.1B shape with random weights, LoRA r16 / alpha 32 on the 7 projections, bf16:
#   Forja  `forja-cli train`, 16 rows x 1024 packed (variable-length attention, about 16k tokens a step), and the
#          same with packing off (16 examples a step, padded to the longest);
#   HF + PEFT  bench/hf_padfree_baseline.py: padded (16 rows) and DataCollatorWithFlattening (about 16k tokens a
#          step) with each attention implementation that runs here.
# tokens/s counts real tokens everywhere. Forja's figure is the median of its steps 6..16 (progress lines); its
# memory is the allocator's reserved bytes at a step's end, which bounds its peak from above. About 4 minutes.
W=/tmp/forja-padfree
rm -rf $W && mkdir -p $W
real_length_data_and_base $W
for packing in true false; do
  step "Forja forja-cli train, packing $packing"
  cat >$W/cfg-$packing.json <<JSON
{"model_dir": "$W/base", "output_dir": "$W/run-$packing", "device": "cuda", "dtype": "bf16",
 "train_file": "$W/data.jsonl", "batch_size": 16, "max_length": 1024, "packing": $packing, "shuffle": false,
 "max_steps": 16, "checkpoint_every": 0, "lora": {"rank": 16, "alpha": 32, "dropout": 0.0}}
JSON
  "$CLI" train $W/cfg-$packing.json --json-progress >$W/forja-$packing.jsonl 2>$W/forja-$packing.err
  grep -v '"event":"step"' $W/forja-$packing.jsonl | tail -2
  tail -2 $W/forja-$packing.err
  cp $W/forja-$packing.jsonl "$OUT/" 2>/dev/null
done
step "HF + PEFT on the same examples: padded, and the flattening collator"
OUT="$OUT" python3 bench/hf_padfree_baseline.py --data $W/data.jsonl --steps 8 2>&1 | grep -v "Warning\|warn(" | tail -8
python3 - "$OUT" $W <<'PY'
import json, os, statistics, sys
out, w = sys.argv[1], sys.argv[2]
def forja(packing):
    steps = [json.loads(l) for l in open(os.path.join(w, f"forja-{packing}.jsonl")) if '"event":"step"' in l]
    timed = [s for s in steps if s["step"] > 5]
    if not timed:
        return None
    med = lambda k: statistics.median(s[k] for s in timed)
    return dict(tokens_per_s=med("tokens_per_s"), positions_per_s=med("positions_per_s"),
                tokens=med("tokens"), trained=med("trained_tokens"), positions=med("positions"),
                gib=max(s["gpu_reserved_gib"] for s in steps), steps=len(timed))
peer = json.load(open(os.path.join(out, "hf_padfree_baseline.json")))
ran = [p for p in peer if "tokens_per_s" in p]
print("| run | real tokens/step | real tokens/s | positions/s | peak GiB |")
print("| --- | --- | --- | --- | --- |")
for packing, name in (("true", "Forja, packing (varlen attention)"), ("false", "Forja, packing off (padded)")):
    f = forja(packing)
    if f:
        print(f"| {name} | {f['tokens']:,.0f} ({f['trained']:,.0f} trained) | {f['tokens_per_s']:,.0f} | "
              f"{f['positions_per_s']:,.0f} | {f['gib']:.1f} (reserved) |")
for p in peer:
    if "tokens_per_s" in p:
        print(f"| HF + PEFT, {p['setup']}, {p['attention']} | {p['tokens_per_step']:,.0f} | {p['tokens_per_s']:,.0f} | "
              f"{p['positions_per_s']:,.0f} | {p['peak_gib']:.1f} |")
    else:
        print(f"| HF + PEFT, {p['setup']}, {p['attention']} | did not run: {p['error'][:120]} | | | |")
ours = forja("true")
if ours and ran:
    padded = [p for p in ran if p["setup"] == "padded"]
    flat = [p for p in ran if p["setup"] == "flattening"]
    if padded:
        print(f"Forja packed / HF padded: {ours['tokens_per_s'] / padded[0]['tokens_per_s']:.2f}x (target 6x)")
    if flat:
        best = max(flat, key=lambda p: p["tokens_per_s"])
        print(f"Forja packed / HF flattening ({best['attention']}, its best here): "
              f"{ours['tokens_per_s'] / best['tokens_per_s']:.2f}x (target 1.5x); memory {ours['gib']:.1f} vs "
              f"{best['peak_gib']:.1f} GiB")
PY
