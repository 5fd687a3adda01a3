# Batch-1 decode against llama.cpp built from source in the same call, sourced by `bench/run_gpu.sh llamacpp`
# (llama_bench_build there starts the peer's build alongside Forja's). Its sources, the llama.cpp release
# node-llama-cpp 3.22.1 ships, go with the call as a git bundle:
#   bash tests/fixtures/gguf/llama_cpp_setup.sh DIR
#   mkdir -p .device-carry && cp DIR/node_modules/node-llama-cpp/llama/gitRelease.bundle .device-carry/llama.cpp.bundle
# then carry .device-carry. bench/decode_bench.py runs forja-cli bench decode, llama-bench (F16 GGUF of the same
# random weights, flash attention on) and transformers' generate (DECODE_SKIP_HF=1 leaves it out) at
# LLAMA_SHAPES (default: the TinyLlama-1.1B and Mistral-7B shapes).
step "llama.cpp's llama-bench, built alongside Forja"
[[ -n ${PEER_BUILD:-} ]] && wait "$PEER_BUILD"
if ! llama_bench_build >>"$OUT/llamacpp_build.log" 2>&1; then
  echo "llama-bench did not build:"
  tail -20 "$OUT/llamacpp_build.log"
  return 0
fi
(cd build-peer/llama.cpp && git log -1 --format='llama.cpp %h %cs' 2>/dev/null)
step "decode: Forja, llama.cpp and transformers at ${LLAMA_SHAPES:-tinyllama mistral7b}"
hf_flag="--hf-new 32"
[[ ${DECODE_SKIP_HF:-0} == 1 ]] && hf_flag="--skip-hf"
# shellcheck disable=SC2086
python3 bench/decode_bench.py --cli "$CLI" --shapes ${LLAMA_SHAPES:-tinyllama mistral7b} $hf_flag \
  --llama-bench build-peer/build/bin/llama-bench --work /tmp/forja-peer-gguf 2>&1 | grep -v "Warning\|warn" | tail -8
