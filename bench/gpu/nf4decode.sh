# Batch-1 decode on the NF4 base only, sourced by `bench/run_gpu.sh nf4decode` after
# the CUDA build ($CLI, $OUT, step): the Mistral-7B shape with random weights quantized on the device, NF4 and
# bf16 in the same run, each against its roofline (copy bandwidth measured in the same run / bytes a decode step
# reads). The decoder's NF4 step runs kernels/decode's NF4 GEMV (RMSNorm / SwiGLU prologue, residual epilogue)
# where it agrees with and beats the stock prologue + kernels/nf4 GEMV; FORJA_KERNELS=off gives the stock step.
# About 2 minutes of GPU time; `bench/gpu/qlora.sh` runs the same decode rows after its training rows.
step "Batch-1 decode, Mistral-7B shape: NF4 base (kernels on, then off) vs bf16"
"$CLI" bench decode --shape mistral7b --prompt 128 --new 256 --runs 3 --base-quant nf4 --json \
  | tee "$OUT/nf4_decode.jsonl"
FORJA_KERNELS=off "$CLI" bench decode --shape mistral7b --prompt 128 --new 256 --runs 3 --base-quant nf4 --json \
  | sed 's/"base_quant": *"nf4"/"base_quant": "nf4 (kernels off)"/' | tee -a "$OUT/nf4_decode.jsonl"
"$CLI" bench decode --shape mistral7b --prompt 128 --new 256 --runs 3 --json | tee -a "$OUT/nf4_decode.jsonl"
python3 - "$OUT/nf4_decode.jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
print("| decode, Mistral-7B shape | weight GB | tok/s | roofline tok/s | fraction |")
print("| --- | --- | --- | --- | --- |")
for r in rows:
    print(f"| {r.get('base_quant', 'none')} | {r['weight_bytes'] / 1e9:.2f} | {r['decode_tok_s']:.1f} | "
          f"{r['roofline_tok_s']:.1f} | {r['roofline_fraction']:.2f} |")
PY
