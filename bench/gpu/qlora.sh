# QLoRA on the GPU machine, sourced by `bench/run_gpu.sh qlora` after the CUDA build ($CLI, $OUT, step).
# All at the Mistral-7B shape with random weights (forja-cli bench makes them on the device; no model files):
#  (a) training, 4 x 1024 tokens, activation checkpointing on: QLoRA (NF4 base, double quantization) against our
#      bf16 LoRA in the same run. Targets: peak GPU memory <= 10 GiB, tokens/s >= 0.8x bf16 LoRA's.
#  (b) batch-1 decode on the NF4 base (fused dequantize-GEMV) against bf16, each with its roofline: the copy
#      bandwidth measured in the same run over the bytes a decode step reads (4-bit codes + fp32 absmax per 64).
# About 4 minutes of GPU time: 2 x (load + 3 warm-up + 10 steps) and 2 x (3 runs of 128 + 256 tokens).
step "QLoRA training, Mistral-7B shape, 4x1024, checkpointing on"
"$CLI" bench train --shape mistral7b --batch 4 --seq 1024 --steps 10 --warmup 3 --recompute on --base-quant nf4 \
  --json | tee "$OUT/qlora_train.jsonl"
"$CLI" bench train --shape mistral7b --batch 4 --seq 1024 --steps 10 --warmup 3 --recompute on --json \
  | tee -a "$OUT/qlora_train.jsonl"

step "Batch-1 decode, Mistral-7B shape: NF4 base vs bf16"
"$CLI" bench decode --shape mistral7b --prompt 128 --new 256 --runs 3 --base-quant nf4 --json \
  | tee "$OUT/qlora_decode.jsonl"
"$CLI" bench decode --shape mistral7b --prompt 128 --new 256 --runs 3 --json | tee -a "$OUT/qlora_decode.jsonl"

python3 - "$OUT" <<'PY'
import json, os, sys
out = sys.argv[1]
def rows(name):
    path = os.path.join(out, name)
    if not os.path.exists(path):
        return []
    return [json.loads(l) for l in open(path) if l.startswith("{")]
train = {r.get("base_quant", "none"): r for r in rows("qlora_train.jsonl")}
if "nf4" in train and "none" in train:
    q, b = train["nf4"], train["none"]
    ratio = q["tokens_per_s"] / b["tokens_per_s"]
    print("| Mistral-7B shape, 4x1024, checkpointing | tokens/s | peak GiB | loss first -> last |")
    print("| --- | --- | --- | --- |")
    for name, r in (("bf16 LoRA", b), ("QLoRA (NF4 base)", q)):
        print(f"| {name} | {r['tokens_per_s']:,.0f} | {r['peak_gib']:.2f} | {r['loss_first']:.3f} -> {r['loss_last']:.3f} |")
    print(f"QLoRA / LoRA tokens/s: {ratio:.2f}x (target >= 0.80x: {'met' if ratio >= 0.8 else 'NOT met'}); "
          f"peak {q['peak_gib']:.2f} GiB (target <= 10 GiB: {'met' if q['peak_gib'] <= 10 else 'NOT met'})")
else:
    print("training rows missing: see the output above")
dec = {r.get("base_quant", "none"): r for r in rows("qlora_decode.jsonl")}
if dec:
    print("| decode, Mistral-7B shape | weight GB | tok/s | roofline tok/s | fraction |")
    print("| --- | --- | --- | --- | --- |")
    for name in ("none", "nf4"):
        if name in dec:
            r = dec[name]
            print(f"| {'bf16' if name == 'none' else 'NF4'} | {r['weight_bytes'] / 1e9:.2f} | {r['decode_tok_s']:.1f} | "
                  f"{r['roofline_tok_s']:.1f} | {r['roofline_fraction']:.2f} |")
    if "nf4" in dec and "none" in dec:
        print(f"NF4 / bf16 decode tok/s: {dec['nf4']['decode_tok_s'] / dec['none']['decode_tok_s']:.2f}x")
PY
