# The fused training kernels on the GPU machine, sourced by `bench/run_gpu.sh train_vs_peft` after the CUDA build ($CLI, $OUT,
# step). (a) The fused kernels' bandwidth against the copy ceiling, the LM-head cross-entropy kernel included.
# (b) LoRA training at both shapes with everything on (fused kernels, fused LM-head loss, LoRA epilogue), then
# with selective checkpointing for the memory figure, against HF + PEFT in the same run
# (bench/hf_peft_baseline.py). Targets: tokens/s >= 2.0x HF+PEFT (TinyLlama shape, 8x1024) and >= 1.6x
# (Mistral-7B shape, 4x1024); peak memory <= 0.5x HF+PEFT's. About 5 minutes of GPU time.
step "kernels bench (bf16), cross-entropy included"
"$CLI" bench kernels 2>&1 | tail -40

step "training bench: Forja (kernels, fused loss, LoRA epilogue), plain and selective checkpointing"
rm -f "$OUT/train_vs_peft.jsonl"
for mode in off selective; do
  "$CLI" bench train --shape tinyllama --batch 8 --seq 1024 --steps 8 --recompute $mode --json 2>&1 |
    grep '^{' | tee -a "$OUT/train_vs_peft.jsonl"
  "$CLI" bench train --shape mistral7b --batch 4 --seq 1024 --steps 8 --recompute $mode --json 2>&1 |
    grep '^{' | tee -a "$OUT/train_vs_peft.jsonl"
done

step "HF + PEFT baseline, same shapes"
OUT="$OUT" python3 bench/hf_peft_baseline.py 2>&1 | grep -v "Warning" | tail -8

python3 - "$OUT" <<'PY'
import json, os, sys
out = sys.argv[1]
ours = [json.loads(l) for l in open(os.path.join(out, "train_vs_peft.jsonl")) if l.startswith("{")]
peer_path = os.path.join(out, "hf_peft_baseline.json")
peer = {r["kind"]: r for r in json.load(open(peer_path)) if "tokens_per_s" in r} if os.path.exists(peer_path) else {}
names = {"tinyllama": "tinyllama-1.1b", "mistral7b": "mistral-7b"}
speed_target = {"tinyllama": 2.0, "mistral7b": 1.6}
print("| shape | batch x seq | Forja mode | HF+PEFT tok/s | Forja tok/s | ratio | HF+PEFT peak GiB | Forja peak GiB | ratio |")
print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
for r in ours:
    p = peer.get(names[r["shape"]])
    mode = "selective ckpt" if r.get("selective_checkpointing") else ("recompute" if r.get("recompute") else "plain")
    if not p:
        print(f"| {r['shape']} | {r['batch']}x{r['seq']} | {mode} | - | {r['tokens_per_s']:,.0f} | - | - | {r['peak_gib']:.1f} | - |")
        continue
    speed, mem = r["tokens_per_s"] / p["tokens_per_s"], r["peak_gib"] / p["peak_gib"]
    print(f"| {r['shape']} | {r['batch']}x{r['seq']} | {mode} | {p['tokens_per_s']:,.0f} | {r['tokens_per_s']:,.0f} | "
          f"{speed:.2f}x ({'met' if speed >= speed_target[r['shape']] else 'not met'}) | {p['peak_gib']:.1f} | "
          f"{r['peak_gib']:.1f} | {mem:.2f}x ({'met' if mem <= 0.5 else 'not met'}) |")
PY
