#!/usr/bin/env bash
# One call on the GPU machine: build the engine with the CUDA LibTorch of the PyTorch wheel, run the gpu-labelled
# tests, the doctor (against nvidia-smi), and the benchmarks with their peers in the same run. Logs go to $OUT.
#   bench/run_gpu.sh part1   build, GPU tests, doctor, training bench (forja-cli monitor alongside), tokenizer bench
#   bench/run_gpu.sh part2   decode bench vs HF generate (reuses build-cuda)
# Needs .device-carry/hf_peft_baseline.py (a copy of shared/bench/hf_peft_baseline.py) for part1.
set -uo pipefail
OUT=${OUT:-/tmp/forja-gpu}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
CLI=build-cuda/app/forja-cli
step() { echo; echo "=== $* ($(date +%T))"; }

if [[ ${1:-part1} == part1 ]]; then
  step configure
  P=$(python3 -c 'import torch;print(torch.utils.cmake_prefix_path)')
  # The window needs Qt and the journal needs sqlite3.h, neither of which is there; the tokenizer builds when the
  # sentencepiece development files are found, else it is left out too (and so is its benchmark).
  if ! cmake -S . -B build-cuda -G Ninja -DFORJA_BUILD_UI=OFF -DFORJA_SKIP_AREAS="store" -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_PREFIX_PATH="$P" >"$OUT/cmake.log" 2>&1; then
    echo "configure with the tokenizer failed (see cmake.log); without it"
    rm -rf build-cuda
    cmake -S . -B build-cuda -G Ninja -DFORJA_BUILD_UI=OFF -DFORJA_SKIP_AREAS="tokenizer;store;data" \
      -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$P" >>"$OUT/cmake.log" 2>&1 || { tail -30 "$OUT/cmake.log"; exit 1; }
  fi
  step build
  gpu_tests=$(cmake --build build-cuda --target help | sed -n 's/^\(test_gpu_[a-z_]*\|gpu_env_doctor\):.*/\1/p' | tr '\n' ' ')
  cmake --build build-cuda -j"$(nproc)" --target forja-cli $gpu_tests >"$OUT/build.log" 2>&1 || { tail -40 "$OUT/build.log"; exit 1; }
  grep -c "warning:" "$OUT/build.log" | sed 's/^/compiler warnings: /'
  step GPU tests
  (cd build-cuda && ctest -L gpu --output-on-failure 2>&1 | tail -25)
  step doctor
  $CLI doctor | tee "$OUT/doctor.txt"
  $CLI doctor --json >"$OUT/doctor.json"
  nvidia-smi --query-gpu=name,memory.total,driver_version,utilization.gpu --format=csv | tee "$OUT/nvidia-smi.csv"
  step training bench, with forja-cli monitor sampling alongside
  cp .device-carry/hf_peft_baseline.py /tmp/ 2>/dev/null
  $CLI monitor --interval 1000 --count 240 >"$OUT/monitor.log" 2>&1 &
  MON=$!
  SKIP_BUILD=1 BUILD=build-cuda STEPS=8 OUT="$OUT" bash bench/train_bench.sh 2>&1 | grep -v "^step\|Warning" | tail -25
  kill -INT $MON 2>/dev/null; wait $MON 2>/dev/null
  echo "monitor: $(wc -l <"$OUT/monitor.log") samples; memory used min/max:"
  grep -o 'GPU0 [0-9.]*' "$OUT/monitor.log" | awk '{print $2 " GiB"}' | sort -n | sed -n '1p;$p'
  if [[ -x $CLI ]] && $CLI help 2>&1 | grep -q tokenize; then
    step tokenizer bench
    python3 bench/tokenize_bench.py --forja-cli $CLI 2>&1 | tail -20
  fi
else
  step decode bench
  python3 bench/decode_bench.py --cli $CLI 2>&1 | tail -30
fi
step done
