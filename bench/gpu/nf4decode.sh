# Batch-1 decode on the NF4 base only, sourced by `bench/run_gpu.sh nf4decode` after
# the CUDA build ($CLI, $OUT, step): the Mistral-7B shape with random weights quantized on the device, NF4 and
# bf16 in the same run, each against its roofline (copy bandwidth measured in the same run / bytes a decode step
# reads). The decoder's NF4 step runs kernels/decode's NF4 GEMV (RMSNorm / SwiGLU prologue, residual epilogue)
# where it agrees with and beats the stock prologue + kernels/nf4 GEMV; FORJA_DECODE_BASELINE=1 gives the earlier
# decode kernels (the A/B in one build), FORJA_KERNELS=off the stock step (NF4_SKIP_OFF=1 leaves that row out: it
# decodes at a few tok/s). The TinyLlama shape's rows follow.
# About 2 minutes of GPU time; `bench/gpu/qlora.sh` runs the same decode rows after its training rows.
step "Batch-1 decode: NF4 base (kernels, earlier kernels, kernels off) vs bf16"
: >"$OUT/nf4_decode.jsonl"
nf4_row() {  # label, shape, one environment assignment, then extra arguments for forja-cli
  local label=$1 shape=$2 setting=$3
  shift 3
  env "$setting" "$CLI" bench decode --shape "$shape" --prompt 128 --new 256 --runs 3 --json "$@" \
    | python3 -c "import json,sys; r=json.loads([l for l in sys.stdin if l.startswith('{')][-1]); r['label']='$label'; print(json.dumps(r))" \
    | tee -a "$OUT/nf4_decode.jsonl"
}
nf4_row "NF4, kernels on" mistral7b FORJA_DECODE_BASELINE=0 --base-quant nf4
nf4_row "NF4, earlier kernels" mistral7b FORJA_DECODE_BASELINE=1 --base-quant nf4
[ "${NF4_SKIP_OFF:-0}" = 1 ] || nf4_row "NF4, kernels off (stock step)" mistral7b FORJA_KERNELS=off --base-quant nf4
nf4_row "bf16, kernels on" mistral7b FORJA_DECODE_BASELINE=0
nf4_row "NF4, kernels on" tinyllama FORJA_DECODE_BASELINE=0 --base-quant nf4
nf4_row "NF4, earlier kernels" tinyllama FORJA_DECODE_BASELINE=1 --base-quant nf4
nf4_row "bf16, kernels on" tinyllama FORJA_DECODE_BASELINE=0
python3 - "$OUT/nf4_decode.jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
print("| shape | decode | weight GB | tok/s | roofline tok/s | fraction |")
print("| --- | --- | --- | --- | --- | --- |")
for r in rows:
    print(f"| {r.get('shape', '?')} | {r['label']} | {r['weight_bytes'] / 1e9:.2f} | {r['decode_tok_s']:.1f} | "
          f"{r['roofline_tok_s']:.1f} | {r['roofline_fraction']:.2f} |")
PY
