#!/usr/bin/env bash
# One call on the GPU machine: build the engine with the CUDA LibTorch of the PyTorch wheel (our kernels on), then
#   bench/run_gpu.sh part1   GPU tests, doctor, training bench vs HF + PEFT (forja-cli monitor alongside), the same
#                            bench with our kernels off, the kernels' bandwidth bench, tokenizer bench
#   bench/run_gpu.sh part2   decode bench vs HF generate
#   bench/run_gpu.sh tests   only the build and the gpu-labelled tests
#   bench/run_gpu.sh oom     a real CUDA out-of-memory: TinyLlama shape at 64 x 4096 in bf16; the run pauses with the
#                            setting it measured to fit, and resuming with that setting finishes
#   bench/run_gpu.sh "A B"   the topic scripts bench/gpu/A.sh, bench/gpu/B.sh in turn (`tests` = the GPU suites), after
#                            the build; each sees $CLI, $OUT and the helpers step/gpu_tests
#   bench/run_gpu.sh window  the window built against this LibTorch with the carried Qt (bench/gpu/window.sh)
#   bench/run_gpu.sh checks  GPU tests, kernels bench, a Forja adapter and merged export in PEFT / transformers,
#                            the 50-step bf16 loss curve vs PEFT, and the demo model (resources/demo/make_demo.py)
# Logs go to $OUT, packed into $OUT/logs.tgz (at most 8 files come back). part1 runs the peer
# bench/hf_peft_baseline.py.
set -uo pipefail
OUT=${OUT:-/tmp/forja-gpu}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
CLI=build-cuda/app/forja-cli
step() { echo; echo "=== $* ($(date +%T))"; }
has() { "$CLI" "$@" 2>&1 | grep -c . >/dev/null; }  # no grep -q: it would SIGPIPE the CLI under pipefail

configure_and_build() {
  step configure and build
  P=$(python3 -c 'import torch;print(torch.utils.cmake_prefix_path)')
  # The window needs Qt and the journal needs sqlite3.h, neither of which is there; the tokenizer builds when the
  # sentencepiece development files are found, else it is left out too (and so is its benchmark). The window
  # topic brings Qt and SQLite's header along (bench/gpu/qt_carry.sh), and so builds the window and the journal.
  local ui=(-DFORJA_BUILD_UI=OFF) prefix=$P skip=${SKIP_AREAS:-store}
  if [[ " $mode " == *" window "* ]]; then
    source bench/gpu/qt_carry.sh use || exit 1
    read -ra ui <<<"$QT_CARRY_CMAKE_ARGS"
    prefix="$P;$QT_CARRY_PREFIX" skip=${SKIP_AREAS:-}
    rm -f build-cuda/CMakeCache.txt  # a warm machine's engine-only configuration would keep the window out
  fi
  if [[ ! -f build-cuda/build.ninja || ! -f build-cuda/CMakeCache.txt ]]; then
    if ! cmake -S . -B build-cuda -G Ninja "${ui[@]}" -DFORJA_SKIP_AREAS="$skip" -DCMAKE_BUILD_TYPE=Release \
        -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_CUDA_ARCHITECTURES=90-real >"$OUT/cmake.log" 2>&1; then
      [[ " $mode " == *" window "* ]] && { grep -A12 "CMake Error" "$OUT/cmake.log" | head -60; exit 1; }
      echo "configure with the tokenizer failed (see cmake.log); without it"
      rm -rf build-cuda
      cmake -S . -B build-cuda -G Ninja -DFORJA_BUILD_UI=OFF -DFORJA_SKIP_AREAS="tokenizer;store;data" \
        -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$P" -DCMAKE_CUDA_ARCHITECTURES=90-real >>"$OUT/cmake.log" 2>&1 || { tail -30 "$OUT/cmake.log"; exit 1; }
    fi
  fi
  # GPU_TESTS="test_gpu_a test_gpu_b" builds and runs only those suites.
  gpu_tests=${GPU_TESTS:-$(cmake --build build-cuda --target help | sed -n 's/^\(test_gpu_[a-z0-9_]*\|gpu_env_doctor\):.*/\1/p' | tr '\n' ' ')}
  cmake --build build-cuda -j"$(nproc)" --target forja-cli $gpu_tests >"$OUT/build.log" 2>&1 || { tail -40 "$OUT/build.log"; exit 1; }
  echo "compiler warnings: $(grep -c 'warning:' "$OUT/build.log")"
  grep 'warning:' "$OUT/build.log" | grep -v '/usr/include/\|site-packages' | head -5
}

gpu_tests() {
  step GPU tests
  local only=""
  [[ -n ${GPU_TESTS:-} ]] && only="-R ^($(echo $GPU_TESTS | tr ' ' '|'))\$"
  (cd build-cuda && ctest -L gpu $only --output-on-failure >"$OUT/gpu_tests.log" 2>&1
   grep -E "Test +#|tests passed|FAILED" "$OUT/gpu_tests.log" | tail -20
   # What the suites measured and printed (passing suites' output is only in CTest's own log): kept with the logs.
   cp Testing/Temporary/LastTest.log "$OUT/gpu_tests_output.log" 2>/dev/null
   grep -E "^(100 steps|NF4|nf4_linear|gemv speed|tinyllama|llama|mistral|attention|cross|loss|PASS|FAIL)" \
     Testing/Temporary/LastTest.log | tail -40)
}

# $1/data.jsonl: bench/length_dataset.py's real-length examples; $1/base: a random-weight TinyLlama-1.1B-shape
# model in bf16. Shared by the topics that train on real-length data (padfree, qlora_realdata).
real_length_data_and_base() {
  step "real-length data: dataset and random-weight TinyLlama-1.1B-shape base"
  python3 bench/length_dataset.py --examples 8000 --out "$1/data.jsonl"
  python3 - "$1" <<'PY' 2>&1 | grep -v "Warning\|Writing model"
import sys, torch
from transformers import LlamaConfig, LlamaForCausalLM
cfg = LlamaConfig(vocab_size=32000, hidden_size=2048, intermediate_size=5632, num_hidden_layers=22,
                  num_attention_heads=32, num_key_value_heads=4, max_position_embeddings=2048, rms_norm_eps=1e-5)
torch.manual_seed(0)
with torch.device("cuda"):
    LlamaForCausalLM(cfg).to(torch.bfloat16).save_pretrained(sys.argv[1] + "/base")
PY
}

kernels_bench() {
  if "$CLI" bench 2>&1 | grep kernels >/dev/null; then
    step kernels bench
    "$CLI" bench kernels 2>&1 | tail -32
  fi
}

pack_logs() {
  (cd "$OUT" && tar -czf /tmp/forja-logs.tgz --exclude=logs.tgz --exclude='*.tgz' --exclude='*.json' . &&
   find . -maxdepth 1 -type f ! -name '*.tgz' ! -name '*.json' -delete && mv /tmp/forja-logs.tgz logs.tgz)
}

# llama.cpp's llama-bench for the decode peer (bench/gpu/llamacpp.sh), built from the sources of the llama.cpp
# release node-llama-cpp 3.22.1 ships: its git bundle, carried as .device-carry/llama.cpp.bundle (see that
# script). CUDA for this GPU only, into build-peer/, which a warm machine keeps between calls.
llama_bench_build() {
  [[ -x build-peer/build/bin/llama-bench ]] && return 0
  [[ -d build-peer/llama.cpp ]] || git clone -q .device-carry/llama.cpp.bundle build-peer/llama.cpp || return 1
  local arch
  arch=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d .)
  cmake -S build-peer/llama.cpp -B build-peer/build -G Ninja -DCMAKE_BUILD_TYPE=Release -DGGML_CUDA=ON \
    -DCMAKE_CUDA_ARCHITECTURES="$arch" -DGGML_NATIVE=OFF -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF \
    -DLLAMA_BUILD_SERVER=OFF && cmake --build build-peer/build --target llama-bench -j12
}

mode=${1:-part1}
# The peer's CUDA build takes minutes: it runs alongside Forja's.
if [[ " $mode " == *" llamacpp "* ]]; then
  llama_bench_build >"$OUT/llamacpp_build.log" 2>&1 &
  PEER_BUILD=$!
fi
configure_and_build

if [[ $mode == tests ]]; then
  gpu_tests
elif [[ $mode == oom ]]; then
  W=/tmp/forja-oom
  rm -rf $W && mkdir -p $W
  step "out of memory: TinyLlama-1.1B shape, 64 x 4096 tokens per micro-batch, bf16"
  python3 - $W <<'PY' 2>&1 | grep -v "Warning\|Writing model"
import json, sys, torch
from transformers import LlamaConfig, LlamaForCausalLM
w = sys.argv[1]
cfg = LlamaConfig(vocab_size=32000, hidden_size=2048, intermediate_size=5632, num_hidden_layers=22,
                  num_attention_heads=32, num_key_value_heads=4, max_position_embeddings=4096, tie_word_embeddings=False)
with torch.device("cuda"):
    LlamaForCausalLM(cfg).to(torch.bfloat16).save_pretrained(w + "/base")
g = torch.Generator().manual_seed(0)
with open(w + "/train.jsonl", "w") as f:
    for _ in range(256):
        f.write(json.dumps({"input_ids": torch.randint(3, 32000, (4096,), generator=g).tolist()}) + "\n")
json.dump({"model_dir": w + "/base", "output_dir": w + "/run", "device": "cuda", "dtype": "bf16",
           "train_file": w + "/train.jsonl", "batch_size": 64, "max_length": 4096, "max_steps": 2,
           "checkpoint_every": 0}, open(w + "/cfg.json", "w"))
PY
  $CLI train $W/cfg.json --json-progress | tee $W/first.jsonl | grep -v '"event":"step"'
  python3 - $W <<'PY'
import json, sys
w = sys.argv[1]
done = [json.loads(l) for l in open(w + "/first.jsonl") if '"done"' in l][-1]
s = done["out_of_memory"]["suggested"]
c = json.load(open(w + "/cfg.json"))
c.update(batch_size=s["batch_size"], grad_accum=s["grad_accum"], activation_checkpointing=s["activation_checkpointing"])
json.dump(c, open(w + "/cfg2.json", "w"))
print("resuming with", s)
PY
  $CLI train $W/cfg2.json --json-progress | grep -v '"event":"step"' | tail -3
elif [[ $mode == checks ]]; then
  gpu_tests
  kernels_bench
  W=/tmp/forja-checks
  rm -rf $W && mkdir -p $W
  step "interop: a Forja adapter in PEFT, Forja's merged export in transformers"
  python3 - $W <<'PY'
import json, random, sys
random.seed(3)
with open(sys.argv[1] + "/train.jsonl", "w") as f:
    for _ in range(32):
        f.write(json.dumps({"input_ids": [random.randrange(3, 320) for _ in range(20)]}) + "\n")
json.dump({"model_dir": "tests/fixtures/models/llama", "output_dir": sys.argv[1] + "/run", "device": "cpu",
           "dtype": "fp32", "train_file": sys.argv[1] + "/train.jsonl", "batch_size": 4, "max_length": 32,
           "max_steps": 12, "checkpoint_every": 0, "lora": {"rank": 8, "alpha": 16, "dropout": 0.0},
           "optimizer": {"learning_rate": 1e-2}}, open(sys.argv[1] + "/cfg.json", "w"))
PY
  $CLI train $W/cfg.json | tail -1
  $CLI export tests/fixtures/models/llama --adapter $W/run/adapter --merge --out $W/merged | tail -1
  python3 bench/peft_check.py interop --forja-cli $CLI --base tests/fixtures/models/llama --adapter $W/run/adapter \
    --merged $W/merged --work $W/interop 2>&1 | grep -v "Warning\|Loading weights\|deprecated"
  step "loss curve: 50 steps bf16, Forja (kernels on) vs PEFT from the same init"
  python3 bench/peft_check.py curve --forja-cli $CLI --work $W/curve --out "$OUT" --lr "${CURVE_LR:-2e-3}" 2>&1 |
    grep -v "Warning\|Writing model" | tail -20
  rm -rf $W/curve
  step "demo model"
  python3 resources/demo/make_demo.py --out $W/demo_model 2>&1 | grep -v "Warning\|Loading weights\|Writing model" | tail -12
  tar -C $W -czf "$OUT/demo_model.tgz" demo_model
elif [[ $mode == part1 ]]; then
  gpu_tests
  step doctor
  $CLI doctor | tee "$OUT/doctor.txt"
  nvidia-smi --query-gpu=name,memory.total,driver_version,utilization.gpu --format=csv | tee "$OUT/nvidia-smi.csv"
  step training bench, with forja-cli monitor sampling alongside
  $CLI monitor --interval 1000 --count 240 >"$OUT/monitor.log" 2>&1 &
  MON=$!
  SKIP_BUILD=1 BUILD=build-cuda STEPS=8 OUT="$OUT" bash bench/train_bench.sh 2>&1 | grep -v "^step\|Warning" | tail -25
  kill -INT $MON 2>/dev/null; wait $MON 2>/dev/null
  echo "monitor: $(wc -l <"$OUT/monitor.log") samples; memory used min/max:"
  grep -o 'GPU0 [0-9.]*' "$OUT/monitor.log" | awk '{print $2 " GiB"}' | sort -n | sed -n '1p;$p'
  step "training bench with our kernels switched off (FORJA_KERNELS=off), same build"
  FORJA_KERNELS=off $CLI bench train --shape tinyllama --batch 8 --seq 1024 --steps 8 --json 2>/dev/null | tail -1
  FORJA_KERNELS=off $CLI bench train --shape mistral7b --batch 4 --seq 1024 --steps 8 --json 2>/dev/null | tail -1
  kernels_bench
  if [[ ${SKIP_TOKENIZE:-0} != 1 ]] && "$CLI" help 2>&1 | grep tokenize >/dev/null; then
    step tokenizer bench
    python3 bench/tokenize_bench.py --forja-cli $CLI 2>&1 | tail -20
  fi
elif [[ $mode == part2 ]]; then
  step decode bench
  python3 bench/decode_bench.py --cli $CLI 2>&1 | tail -30
else
  # Any other mode is a topic script of bench/gpu/: several topics in one call, e.g. `run_gpu.sh "tests qlora"`.
  for topic in $mode; do
    if [[ $topic == tests ]]; then gpu_tests; continue; fi
    [[ -f bench/gpu/$topic.sh ]] || { echo "no mode or bench/gpu/$topic.sh"; continue; }
    step "bench/gpu/$topic.sh"
    source "bench/gpu/$topic.sh"
  done
fi
pack_logs
step done
