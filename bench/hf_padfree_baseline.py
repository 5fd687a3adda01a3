"""Peer baseline on real-length data: HF transformers + PEFT LoRA training on the examples of
bench/length_dataset.py (Alpaca's lengths, random tokens), TinyLlama-1.1B shape with random weights, LoRA r16 / alpha 32
on the 7 projections, bf16 autocast, fused AdamW, as bench/hf_peft_baseline.py sets it up. Two setups:

  padded     16 examples a step, padded on the right to the longest of them (what DataCollatorForSeq2Seq gives:
             -100 labels on padding, an attention mask), SDPA attention;
  flattening transformers' DataCollatorWithFlattening (padding-free: the examples of a step concatenated into one
             row, position_ids restarting per example) over about 16k tokens a step, the same greedy groups
             Forja packs, with each attention implementation that runs on the machine (flash_attention_2 needs the
             flash-attn package; flex_attention and sdpa come with torch).

tokens/s counts real tokens (the examples' own, no padding). Prints one JSON line per setup and writes
hf_padfree_baseline.json into $OUT (or /tmp).

    python3 bench/hf_padfree_baseline.py --data /tmp/alpaca_lengths.jsonl [--steps 10]
"""
import argparse
import json
import os
import sys
import time

import torch
from peft import LoraConfig, get_peft_model
from transformers import AutoModelForCausalLM, DataCollatorWithFlattening, LlamaConfig

TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


def model(attn):
    cfg = LlamaConfig(vocab_size=32000, hidden_size=2048, intermediate_size=5632, num_hidden_layers=22,
                      num_attention_heads=32, num_key_value_heads=4, max_position_embeddings=2048, rms_norm_eps=1e-5)
    cfg._attn_implementation = attn
    torch.manual_seed(0)
    with torch.device("cuda"):
        m = AutoModelForCausalLM.from_config(cfg, torch_dtype=torch.bfloat16)
    m = get_peft_model(m, LoraConfig(r=16, lora_alpha=32, lora_dropout=0.0, target_modules=TARGETS,
                                     task_type="CAUSAL_LM"))
    return m


def padded_batches(data, rows):
    for i in range(0, len(data) - rows + 1, rows):
        part = data[i:i + rows]
        longest = max(len(e["input_ids"]) for e in part)
        ids = torch.zeros(rows, longest, dtype=torch.long)
        labels = torch.full((rows, longest), -100, dtype=torch.long)
        mask = torch.zeros(rows, longest, dtype=torch.long)
        for r, e in enumerate(part):
            n = len(e["input_ids"])
            ids[r, :n] = torch.tensor(e["input_ids"])
            labels[r, :n] = torch.tensor(e["labels"])
            mask[r, :n] = 1
        yield {"input_ids": ids, "labels": labels, "attention_mask": mask}, sum(len(e["input_ids"]) for e in part)


def flat_batches(data, budget):
    collate = DataCollatorWithFlattening(return_position_ids=True, separator_id=-100)
    group, fill = [], 0
    for e in data:
        n = len(e["input_ids"])
        if group and fill + n > budget:
            yield collate(group), fill
            group, fill = [], 0
        group.append({"input_ids": e["input_ids"], "labels": e["labels"]})
        fill += n
    if group:
        yield collate(group), fill


def run(setup, attn, data, steps, warm):
    m = model(attn)
    opt = torch.optim.AdamW([p for p in m.parameters() if p.requires_grad], lr=2e-4, fused=True)
    batches = padded_batches(data, 16) if setup == "padded" else flat_batches(data, 16384)
    torch.cuda.reset_peak_memory_stats()

    def step(batch):
        batch = {k: v.cuda(non_blocking=True) for k, v in batch.items() if torch.is_tensor(v)}
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = m(**batch).loss
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    for _ in range(warm):
        step(next(batches)[0])
    torch.cuda.synchronize()
    tokens, positions, t = 0, 0, time.perf_counter()
    for _ in range(steps):
        b, n = next(batches)
        positions += b["input_ids"].numel()
        tokens += n
        step(b)
    torch.cuda.synchronize()
    dt = time.perf_counter() - t
    r = dict(setup=setup, attention=attn, steps=steps, tokens_per_step=tokens / steps, tokens_per_s=tokens / dt,
             positions_per_s=positions / dt, step_s=dt / steps, peak_gib=torch.cuda.max_memory_allocated() / 2**30)
    del m, opt
    torch.cuda.empty_cache()
    return r


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--warm", type=int, default=3)
    a = ap.parse_args()
    data = [json.loads(line) for line in open(a.data)]
    out = []
    plans = [("padded", "sdpa")] + [("flattening", x) for x in ("flash_attention_2", "flex_attention", "sdpa")]
    for setup, attn in plans:
        try:
            r = run(setup, attn, data, a.steps, a.warm)
        except Exception as e:  # an attention implementation this machine lacks: say so and go on
            r = dict(setup=setup, attention=attn, error=f"{type(e).__name__}: {str(e)[:300]}")
        print(json.dumps(r), flush=True)
        out.append(r)
    json.dump(out, open(os.path.join(os.environ.get("OUT", "/tmp"), "hf_padfree_baseline.json"), "w"), indent=1)


if __name__ == "__main__":
    sys.exit(main())
