# Batch-1 decode (issue 5), sourced by `bench/run_gpu.sh decode` after the CUDA build: forja-cli bench decode
# with our decode kernels (kernels/decode) vs transformers' generate in the same run, at the TinyLlama-1.1B and
# Mistral-7B shapes with 128- and 2048-token prompts; then ours with the kernels off (the stock LibTorch step).
step "decode: Forja (kernels on) vs HF generate"
python3 bench/decode_bench.py --cli "$CLI" ${DECODE_SKIP_HF:+--skip-hf} 2>&1 | tail -7
[[ -n ${DECODE_SKIP_OFF:-} ]] && return 0
step "decode: Forja with FORJA_KERNELS=off (the stock step)"
for shape in tinyllama mistral7b; do
  for prompt in 128 2048; do
    FORJA_KERNELS=off "$CLI" bench decode --shape $shape --prompt $prompt --new 256 --json 2>&1 | tail -1
  done
done
