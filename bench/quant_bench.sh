#!/usr/bin/env bash
# Quantized GGUF export at a real shape (Mistral-7B by default, random bf16 weights from `forja-cli bench model`),
# Forja against llama.cpp's own quantizer on the same weights, in the same run:
#   - time and peak resident memory (GNU time's %M, which counts the mapped input's resident pages) of
#     `forja-cli export --format gguf --dtype T` from the model folder, and of llama_model_quantize (what
#     llama-quantize runs; tests/fixtures/gguf/llama_quantize.c against the library node-llama-cpp ships) from
#     the bf16 GGUF Forja wrote of the same folder, both on all cores;
#   - how many tensors of the two files are byte-identical;
#   - the mean KL of each file's next-token distributions against the bf16 file's over a fixed text, as llama.cpp
#     computes them (bench/gguf_kl.mjs).
#   bash bench/quant_bench.sh [path/to/forja-cli]     SHAPE=mistral7b TYPES="q8_0 q4_k_m" WORK=dir (kept if given)
# Needs node and npm's registry, gcc, python3, GNU time (/usr/bin/time), and about 45 GB free for the Mistral-7B shape.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cli=$(realpath "${1:-$root/build/app/forja-cli}")
shape=${SHAPE:-mistral7b}
types=${TYPES:-q8_0 q4_k_m}
if [[ -n ${WORK:-} ]]; then work=$WORK; mkdir -p "$work"; else work=$(mktemp -d); trap 'rm -rf "$work"' EXIT; fi
threads=$(nproc)

bash "$root/tests/fixtures/gguf/llama_cpp_setup.sh" "$work"
cp "$root/bench/gguf_kl.mjs" "$work/"

# Drops the model's and the GGUF files' pages from the page cache (written back first), so that every measured
# command reads its input from disk, as a first export does: the two files of a 7B model do not both fit in memory.
evict() {
  python3 - "$work" <<'PY'
import os, sys
work = sys.argv[1]
paths = [os.path.join(d, f) for d, _, fs in os.walk(os.path.join(work, "model")) for f in fs]
paths += [os.path.join(work, f) for f in os.listdir(work) if f.endswith(".gguf")]
for p in paths:
    fd = os.open(p, os.O_RDONLY)
    os.fsync(fd)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    os.close(fd)
PY
}

# Runs "$@" from a cold page cache, printing its wall time, CPU time and peak resident memory after `label`.
measure() {
  local label=$1
  shift
  evict
  /usr/bin/time -f "%e %U %S %M" -o "$work/time.txt" "$@" >"$work/last.log" 2>&1 || { tail -5 "$work/last.log"; exit 1; }
  read -r secs user sys kib <"$work/time.txt"
  awk -v l="$label" -v s="$secs" -v u="$user" -v y="$sys" -v k="$kib" \
    'BEGIN { printf "%-28s %7.1f s wall %7.1f s CPU %6.2f GiB peak RSS\n", l, s, u + y, k / 1048576 }'
}
ftype() { case $1 in q4_0) echo 2 ;; q8_0) echo 7 ;; q4_k_m) echo 15 ;; q5_k_m) echo 17 ;; q6_k) echo 18 ;; esac; }

echo "== $shape, $threads threads, $(date -u +%F)"
if [[ ! -f $work/model/config.json ]]; then
  rm -rf "$work/model"
  "$cli" bench model --shape "$shape" --out "$work/model"
  cp "$root/tests/fixtures/gguf/sp_bpe_320/tokenizer.model" "$work/model/"
fi
rm -f "$work/bf16.gguf"
measure "forja export bf16" "$cli" export "$work/model" --format gguf --dtype bf16 --out "$work/bf16.gguf"
sed -n '1,40p' "$root/README.md" | tr -s '\n' ' ' >"$work/text.txt"
for t in $types; do
  rm -f "$work/forja.$t.gguf" "$work/llama.$t.gguf"
  measure "forja export $t" "$cli" export "$work/model" --format gguf --dtype "$t" --out "$work/forja.$t.gguf"
  measure "llama_model_quantize $t" "$work/llama_quantize" "$work/bf16.gguf" "$work/llama.$t.gguf" "$(ftype "$t")" \
    "$threads"
  python3 "$root/tests/fixtures/gguf/gguf_tensors.py" --compare "$work/forja.$t.gguf" "$work/llama.$t.gguf"
  (cd "$work" && node gguf_kl.mjs bf16.gguf text.txt "forja.$t.gguf" "llama.$t.gguf") | python3 -c "
import json, sys
r = json.load(sys.stdin)
for f, m in r['files'].items():
    print(f\"  {f:22} mean KL {m['mean_kl']:.3e}  max {m['max_kl']:.3e}  same top token {m['same_top1']:.1%}\"
          f\" over {r['tokens']} tokens\")"
  rm -f "$work/forja.$t.gguf" "$work/llama.$t.gguf"
done
