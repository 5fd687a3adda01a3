#!/usr/bin/env python3
"""Forja against Hugging Face transformers + PEFT, on the GPU machine (which has both); two checks.

  interop  A Forja-trained adapter of the tiny llama fixture loads in PEFT and gives Forja's logits; the model
           `forja-cli export --merge` wrote loads in transformers and gives them too (fp32, CPU).
           Needs: --base, --adapter (Forja's), --merged (Forja's export), --forja-cli.
  curve    50 optimizer steps of LoRA at the TinyLlama-1.1B shape in bf16 on the GPU, Forja and PEFT from the same
           initial adapter on the same batches (file order): the per-step losses side by side and their largest
           relative difference. The data is learnable (each row repeats a random 32-token motif over a 64-token
           alphabet), so the loss falls and the curves mean something.
           Needs: --forja-cli, --work (a scratch folder).

    python3 bench/peft_check.py interop --base tests/fixtures/models/llama --adapter A --merged M --forja-cli CLI
    python3 bench/peft_check.py curve --forja-cli CLI --work /tmp/curve
"""
import argparse
import json
import math
import os
import subprocess
import sys

import torch


def forja_logits(cli, model, ids_path, out, adapter=None):
    cmd = [cli, "score", model, "--ids", ids_path, "--dump-logits", out]
    if adapter:
        cmd += ["--adapter", adapter]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    from safetensors.torch import load_file
    return load_file(out)["logits"]  # [sequences, tokens, vocab]


def interop(args):
    import peft
    from transformers import AutoModelForCausalLM
    g = torch.Generator().manual_seed(0)
    base = AutoModelForCausalLM.from_pretrained(args.base, torch_dtype=torch.float32).eval()
    vocab = base.config.vocab_size
    ids = torch.randint(3, vocab, (2, 24), generator=g)
    ids_path = os.path.join(args.work, "ids.json")
    os.makedirs(args.work, exist_ok=True)
    json.dump(ids.tolist(), open(ids_path, "w"))
    with torch.no_grad():
        plain = base(ids).logits
        peft_model = peft.PeftModel.from_pretrained(base, args.adapter).eval()
        with_adapter = peft_model(ids).logits
        merged = AutoModelForCausalLM.from_pretrained(args.merged, torch_dtype=torch.float32).eval()(ids).logits
    ours_adapter = forja_logits(args.forja_cli, args.base, ids_path, os.path.join(args.work, "a.st"), args.adapter)
    ours_merged = forja_logits(args.forja_cli, args.merged, ids_path, os.path.join(args.work, "m.st"))
    rows = [
        ("the adapter changes the logits (PEFT vs base)", (with_adapter - plain).abs().max().item()),
        ("PEFT(base + Forja adapter) vs Forja(base + adapter)", (with_adapter - ours_adapter).abs().max().item()),
        ("transformers(Forja merged export) vs PEFT(base + adapter)", (merged - with_adapter).abs().max().item()),
        ("Forja(merged export) vs Forja(base + adapter)", (ours_merged - ours_adapter).abs().max().item()),
    ]
    print(f"interop: peft {peft.__version__}, fixture {args.base}, logits {tuple(with_adapter.shape)}")
    ok = rows[0][1] > 1e-3 and all(v <= 1e-4 for _, v in rows[1:])
    for name, v in rows:
        print(f"  max |diff| {v:.3e}  {name}")
    print("interop:", "PASS" if ok else "FAIL")
    return ok


def curve(args):
    import peft
    import transformers
    from transformers import LlamaConfig, LlamaForCausalLM
    work = args.work
    os.makedirs(work, exist_ok=True)
    torch.manual_seed(0)
    steps, batch, seq, lr, warmup = args.steps, 8, 1024, args.lr, 5
    cfg = LlamaConfig(vocab_size=32000, hidden_size=2048, intermediate_size=5632, num_hidden_layers=22,
                      num_attention_heads=32, num_key_value_heads=4, max_position_embeddings=2048,
                      rms_norm_eps=1e-5, tie_word_embeddings=False)
    model_dir = os.path.join(work, "base")
    with torch.device("cuda"):
        model = LlamaForCausalLM(cfg).to(torch.bfloat16)
    model.save_pretrained(model_dir, safe_serialization=True)

    # Learnable rows: a random 32-token motif over a 64-token alphabet, repeated; every token carries loss. The
    # loss falls from ln(32000) towards ln(64) as the adapter learns the alphabet, and below as it learns to copy.
    g = torch.Generator().manual_seed(1)
    alphabet = torch.randperm(31900, generator=g)[:64] + 100
    rows = []
    for _ in range(steps * batch):
        motif = alphabet[torch.randint(0, 64, (32,), generator=g)]
        rows.append(motif.repeat(seq // 32).tolist())
    data_path = os.path.join(work, "train.jsonl")
    with open(data_path, "w") as f:
        for r in rows:
            f.write(json.dumps({"input_ids": r}) + "\n")

    targets = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
    lcfg = peft.LoraConfig(r=16, lora_alpha=32, lora_dropout=0.0, target_modules=targets, task_type="CAUSAL_LM")
    pm = peft.get_peft_model(model, lcfg)  # adapters in fp32 (autocast_adapter_dtype), base frozen in bf16
    init_dir = os.path.join(work, "init_adapter")
    pm.save_pretrained(init_dir)

    params = [p for p in pm.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0)
    sched = transformers.get_cosine_schedule_with_warmup(opt, warmup, steps)
    pm.train()
    peft_loss = []
    for s in range(steps):
        x = torch.tensor(rows[s * batch:(s + 1) * batch], device="cuda")
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = pm(input_ids=x, labels=x).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step(), sched.step(), opt.zero_grad(set_to_none=True)
        peft_loss.append(loss.item())
    del pm, model, opt
    torch.cuda.empty_cache()

    config = {"model_dir": model_dir, "output_dir": os.path.join(work, "forja_run"), "device": "cuda",
              "dtype": "bf16", "train_file": data_path, "data_format": "tokenized", "shuffle": False,
              "batch_size": batch, "max_length": seq, "max_steps": steps, "checkpoint_every": 0,
              "init_adapter": init_dir,
              "lora": {"rank": 16, "alpha": 32, "dropout": 0.0, "target_modules": targets},
              "optimizer": {"learning_rate": lr, "weight_decay": 0.0, "max_grad_norm": 1.0, "schedule": "cosine",
                            "warmup_steps": warmup}}
    cfg_path = os.path.join(work, "forja.json")
    json.dump(config, open(cfg_path, "w"))
    out = subprocess.run([args.forja_cli, "train", cfg_path, "--json-progress"], check=True, capture_output=True,
                         text=True).stdout
    ours = [e["loss"] for e in map(json.loads, out.splitlines()) if e.get("event") == "step"]
    worst = max(abs(a - b) / b for a, b in zip(ours, peft_loss))
    print(f"curve: TinyLlama-1.1B shape, {batch}x{seq}, {steps} steps, bf16, LoRA r16 a32 on 7 projections, lr {lr}")
    print("| step | HF+PEFT loss | Forja loss | rel. diff |")
    print("| --- | --- | --- | --- |")
    for i in list(range(0, steps, 5)) + [steps - 1]:
        print(f"| {i + 1} | {peft_loss[i]:.4f} | {ours[i]:.4f} | {abs(ours[i] - peft_loss[i]) / peft_loss[i]:.2%} |")
    print(f"curve: largest relative difference over {steps} steps: {worst:.3%} (target 1%) ->",
          "PASS" if worst <= 0.01 and len(ours) == steps else "FAIL")
    json.dump({"peft": peft_loss, "forja": ours}, open(os.path.join(args.out, "loss_curve.json"), "w"))
    return worst <= 0.01


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=["interop", "curve"])
    ap.add_argument("--forja-cli", required=True)
    ap.add_argument("--base")
    ap.add_argument("--adapter")
    ap.add_argument("--merged")
    ap.add_argument("--work", default="/tmp/forja-peft-check")
    ap.add_argument("--out", default=os.environ.get("OUT", "/tmp"))
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--lr", type=float, default=2e-3)
    args = ap.parse_args()
    ok = interop(args) if args.what == "interop" else curve(args)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
