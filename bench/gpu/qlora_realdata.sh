# QLoRA against bf16 LoRA on real-length data, sourced by `bench/run_gpu.sh qlora_realdata` after the CUDA build
# ($CLI, $OUT, step). The examples of bench/length_dataset.py (Stanford Alpaca's lengths under Llama 2's tokenizer,
# random tokens), TinyLlama-1.1B shape with random weights, LoRA r16 / alpha 32 on the 7 projections, 16 rows x 1024
# packed (variable-length attention): the same run with the bf16 base and with the NF4 base (double quantization).
# The target is QLoRA at >= 0.9x bf16 LoRA's real tokens/s. Median of steps 6..16 of each run; memory is the
# allocator's reserved bytes at a step's end (an upper bound on the peak). About 3 minutes.
W=/tmp/forja-qlora-real
rm -rf $W && mkdir -p $W
real_length_data_and_base $W
for quant in none nf4; do
  step "Forja forja-cli train, packing, base_quant $quant"
  cat >$W/cfg-$quant.json <<JSON
{"model_dir": "$W/base", "output_dir": "$W/run-$quant", "device": "cuda", "dtype": "bf16", "base_quant": "$quant",
 "train_file": "$W/data.jsonl", "batch_size": 16, "max_length": 1024, "packing": true, "shuffle": false,
 "max_steps": 16, "checkpoint_every": 0, "lora": {"rank": 16, "alpha": 32, "dropout": 0.0}}
JSON
  "$CLI" train $W/cfg-$quant.json --json-progress --no-journal >$W/forja-$quant.jsonl 2>$W/forja-$quant.err
  grep -v '"event":"step"' $W/forja-$quant.jsonl | tail -2
  tail -2 $W/forja-$quant.err
  cp $W/forja-$quant.jsonl "$OUT/qlora-real-$quant.jsonl" 2>/dev/null
done
python3 - $W <<'PY'
import json, os, statistics, sys
w = sys.argv[1]
def run(quant):
    p = os.path.join(w, f"forja-{quant}.jsonl")
    steps = [json.loads(l) for l in open(p) if '"event":"step"' in l] if os.path.exists(p) else []
    timed = [s for s in steps if s["step"] > 5]
    if not timed:
        return None
    return dict(tps=statistics.median(s["tokens_per_s"] for s in timed),
                tokens=statistics.median(s["tokens"] for s in timed),
                gib=max(s["gpu_reserved_gib"] for s in steps), loss=steps[-1]["loss"])
print("| TinyLlama shape, real-length data, packed 16 x 1024 | real tokens/step | real tokens/s | reserved GiB | last loss |")
print("| --- | --- | --- | --- | --- |")
rows = {q: run(q) for q in ("none", "nf4")}
for q, name in (("none", "LoRA, bf16 base"), ("nf4", "QLoRA, NF4 base")):
    r = rows[q]
    print(f"| {name} | {r['tokens']:,.0f} | {r['tps']:,.0f} | {r['gib']:.1f} | {r['loss']:.4f} |" if r else
          f"| {name} | did not run (see forja-{q}.err) | | | |")
if rows["none"] and rows["nf4"]:
    print(f"QLoRA / LoRA real tokens/s: {rows['nf4']['tps'] / rows['none']['tps']:.3f}x (target >= 0.9x)")
PY
