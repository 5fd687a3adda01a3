# Multi-GPU fine-tuning over NCCL, sourced by `bench/run_gpu.sh dist` after the CUDA build ($CLI, $OUT,
# step). The machine lent has one GPU, so world size 1 only (2+ ranks are CI's test_dist_train, on Gloo):
#  (a) the fixture model, fp32 on cuda:0, 8 steps: `train --gpus 1` (one NCCL rank) against the plain run; the
#      adapters must agree to 1e-5 (relative, per tensor) and the losses too.
#  (b) the TinyLlama-1.1B shape (random bf16 weights made with transformers), 4 x 512 tokens, 16 steps: tokens/s of
#      `--gpus 1` against the plain run (the cost of the gradient allreduce and the per-step agreement).
# About a minute: the 1.1B model is written once (~2.2 GB), each run loads it.
W=/tmp/forja-dist
rm -rf $W && mkdir -p $W
export NCCL_NVLS_ENABLE=0
step "dist: data and configs"
python3 - $W <<'PY' 2>&1 | grep -v "Warning\|Writing model"
import json, random, sys, torch
from transformers import LlamaConfig, LlamaForCausalLM
w = sys.argv[1]
random.seed(8)
with open(w + "/small.jsonl", "w") as f:
    for _ in range(64):
        f.write(json.dumps({"input_ids": [random.randrange(3, 320) for _ in range(24)]}) + "\n")
with open(w + "/big.jsonl", "w") as f:
    for _ in range(128):
        f.write(json.dumps({"input_ids": [random.randrange(3, 32000) for _ in range(512)]}) + "\n")
cfg = LlamaConfig(vocab_size=32000, hidden_size=2048, intermediate_size=5632, num_hidden_layers=22,
                  num_attention_heads=32, num_key_value_heads=4, max_position_embeddings=2048, tie_word_embeddings=False)
with torch.device("cuda"):
    LlamaForCausalLM(cfg).to(torch.bfloat16).save_pretrained(w + "/tinyllama")
def config(name, model, data, dtype, batch, length, steps):
    json.dump({"model_dir": model, "output_dir": f"{w}/{name}", "device": "cuda", "dtype": dtype, "train_file": data,
               "batch_size": batch, "max_length": length, "max_steps": steps, "checkpoint_every": 0,
               "lora": {"rank": 8, "alpha": 16, "dropout": 0.0}, "optimizer": {"learning_rate": 5e-3}},
              open(f"{w}/{name}.json", "w"))
for name in ("small_plain", "small_gpus1"):
    config(name, "tests/fixtures/models/llama", w + "/small.jsonl", "fp32", 4, 24, 8)
for name in ("big_plain", "big_gpus1"):
    config(name, w + "/tinyllama", w + "/big.jsonl", "bf16", 4, 512, 16)
PY

for size in small big; do
  step "dist: $size, plain vs --gpus 1 (NCCL)"
  timeout 120 "$CLI" train $W/${size}_plain.json --json-progress --no-journal > $W/${size}_plain.jsonl 2> $W/${size}_plain.err
  echo "plain: exit $? $(tail -1 $W/${size}_plain.jsonl)"
  timeout 120 "$CLI" train $W/${size}_gpus1.json --json-progress --no-journal --gpus 1 > $W/${size}_gpus1.jsonl \
    2> $W/${size}_gpus1.err
  echo "--gpus 1: exit $? $(tail -1 $W/${size}_gpus1.jsonl)"
  tail -3 $W/${size}_gpus1.err
done
cp $W/*.jsonl $W/*.err "$OUT"/ 2>/dev/null

python3 - $W <<'PY'
import json, os, sys
w = sys.argv[1]
def steps(name):
    p = f"{w}/{name}.jsonl"
    return [json.loads(l) for l in open(p) if l.startswith("{") and '"event":"step"' in l] if os.path.exists(p) else []
a, b = steps("small_plain"), steps("small_gpus1")
if a and b and len(a) == len(b):
    worst = max(abs(x["loss"] - y["loss"]) / abs(x["loss"]) for x, y in zip(a, b))
    print(f"fixture, fp32: loss lines {len(a)}, worst relative loss difference {worst:.2e}")
    try:
        from safetensors.torch import load_file
        x = load_file(f"{w}/small_plain/adapter/adapter_model.safetensors")
        y = load_file(f"{w}/small_gpus1/adapter/adapter_model.safetensors")
        err = max(((x[k] - y[k]).abs().max() / y[k].abs().max().clamp_min(1e-30)).item() for k in x)
        print(f"fixture, fp32: adapter relative error {err:.2e} (bound 1e-5: {'met' if err <= 1e-5 else 'NOT met'})")
        same = all(open(f"{w}/small_plain/adapter/{f}", "rb").read() == open(f"{w}/small_gpus1/adapter/{f}", "rb").read()
                   for f in ("adapter_model.safetensors", "adapter_config.json"))
        print(f"fixture, fp32: adapter files byte-identical: {'yes' if same else 'no'}")
    except Exception as e:
        print("adapter comparison failed:", e)
else:
    print("fixture runs incomplete: see small_*.err")
a, b = steps("big_plain")[3:], steps("big_gpus1")[3:]
if a and b:
    ta = sum(s["tokens_per_s"] for s in a) / len(a)
    tb = sum(s["tokens_per_s"] for s in b) / len(b)
    print("| TinyLlama shape, bf16, 4x512, steps 4-16 | tokens/s |")
    print("| --- | --- |")
    print(f"| plain | {ta:,.0f} |")
    print(f"| --gpus 1 (NCCL, world 1) | {tb:,.0f} |")
    print(f"--gpus 1 / plain: {tb / ta:.3f}x")
else:
    print("TinyLlama-shape runs incomplete: see big_*.err")
PY
