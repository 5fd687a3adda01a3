# Batch-1 decode, sourced by `bench/run_gpu.sh decode` after the CUDA build: forja-cli bench decode
# with our decode kernels (kernels/decode) vs transformers' generate in the same run, at the TinyLlama-1.1B and
# Mistral-7B shapes with 128- and 2048-token prompts; then ours with the kernels off (the stock LibTorch step).
if [[ -n ${DECODE_PROFILE:-} ]]; then
  # Where a TinyLlama-shaped decode step's time goes: kernel time by name from a Kineto trace of 20 steps.
  step "decode profile (TinyLlama shape, CUDA graphs, kernels on)"
  FORJA_DECODE_PROFILE=/tmp/decode_trace.json build-cuda/tests/gpu/infer/test_gpu_decode_kernels 2>&1 | tail -3
  python3 - /tmp/decode_trace.json <<'PY'
import collections, json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
k = [e for e in ev if e.get("cat") == "kernel"]
by = collections.defaultdict(lambda: [0.0, 0])
for e in k:
    by[e["name"][:90]][0] += e["dur"]; by[e["name"][:90]][1] += 1
span = (max(e["ts"] + e["dur"] for e in k) - min(e["ts"] for e in k)) if k else 0
busy = sum(v[0] for v in by.values())
print(f"20 steps: {len(k)} kernels, {busy / 20:.1f} us of kernel time per step, span {span / 20:.1f} us per step")
for name, (dur, n) in sorted(by.items(), key=lambda x: -x[1][0])[:16]:
    print(f"{dur / 20:8.1f} us/step {n // 20:4d}/step {dur / n:7.2f} us each  {name}")
PY
  [[ $DECODE_PROFILE == only ]] && return 0
fi
if [[ -n ${DECODE_AB:-} ]]; then
  # One build, one card: the earlier GEMV and attention kernels (FORJA_DECODE_BASELINE=1), the current ones
  # without programmatic dependent launch (FORJA_DECODE_PDL=0), and as they ship (PDL on): the test's checks and kernel
  # speeds under each, then the TinyLlama-shaped runner and forja-cli bench decode, alternating so that a drift
  # of the card shows as spread rather than as a gain.
  T=build-cuda/tests/gpu/infer/test_gpu_decode_kernels
  arms=("FORJA_DECODE_BASELINE=1 FORJA_DECODE_PDL=0" "FORJA_DECODE_PDL=0" "FORJA_DECODE_PDL=1")
  for i in 0 1 2; do
    step "decode kernels A/B: ${arms[$i]}, checks and kernel speeds"
    env ${arms[$i]} $T >"$OUT/decode_ab_test_$i.log" 2>&1
    echo "exit $?"; grep -E "speed|FAIL" "$OUT/decode_ab_test_$i.log" | grep -E "tinyllama|mistral|FAIL"
  done
  step "decode kernels A/B: TinyLlama-shaped runner, then forja-cli bench decode --shape tinyllama --prompt 128"
  for arm in "${arms[@]}"; do
    echo "$arm: $(env $arm FORJA_DECODE_PROFILE=/tmp/decode_ab.json $T 2>&1 | grep 'tinyllama shape')"
  done
  for rep in 1 2; do
    for arm in "${arms[@]}"; do
      echo "$arm: $(env $arm "$CLI" bench decode --shape tinyllama --prompt 128 --new 256 --json 2>&1 | tail -1)"
    done
  done
  [[ $DECODE_AB == only ]] && return 0
fi
if [[ -n ${DECODE_ATTN_AB:-} ]]; then
  # The attention's prefetch and staged merge against the same kernels without them (FORJA_DECODE_ATTN=serial),
  # one build, one card: the checks under both, then forja-cli bench decode alternating the arms at 128 and
  # 2048 tokens of context.
  T=build-cuda/tests/gpu/infer/test_gpu_decode_kernels
  for arm in FORJA_DECODE_ATTN=serial FORJA_DECODE_ATTN=staged; do
    step "attention A/B: $arm, checks"
    env $arm $T >"$OUT/attn_ab_test_${arm#*=}.log" 2>&1
    echo "exit $?"; grep -E "FAIL|attention speed|gpu decode kernels" "$OUT/attn_ab_test_${arm#*=}.log"
  done
  step "attention A/B: forja-cli bench decode (decode tok/s, first token ms)"
  for shape in ${ATTN_AB_SHAPES:-tinyllama mistral7b}; do
    for prompt in 128 2048; do
      for rep in 1 2; do
        for arm in FORJA_DECODE_ATTN=serial FORJA_DECODE_ATTN=staged; do
          env $arm "$CLI" bench decode --shape $shape --prompt $prompt --new 256 --json 2>/dev/null | tail -1 |
            python3 -c "import json,sys; r=json.load(sys.stdin); print('$shape $prompt ${arm#*=} %.1f %.2f' % (r['decode_tok_s'], r['first_token_ms']))"
        done
      done
    done
  done
  [[ $DECODE_ATTN_AB == only ]] && return 0
fi
step "decode: Forja (kernels on) vs HF generate"
python3 bench/decode_bench.py --cli "$CLI" ${DECODE_SKIP_HF:+--skip-hf} 2>&1 | tail -7
[[ -n ${DECODE_SKIP_OFF:-} ]] && return 0
step "decode: Forja with FORJA_KERNELS=off (the stock step)"
for shape in tinyllama mistral7b; do
  for prompt in 128 2048; do
    FORJA_KERNELS=off "$CLI" bench decode --shape $shape --prompt $prompt --new 256 --json 2>&1 | tail -1
  done
done
