#!/usr/bin/env python3
"""Batch-1 bf16 greedy decode: Forja (forja-cli bench decode) vs Hugging Face transformers' generate, in one run on
one GPU, at the TinyLlama-1.1B and Mistral-7B shapes (random weights) with 128- and 2048-token prompts.

Prints decode tok/s, time to first token (TTFT) and the fraction of the memory-bandwidth roofline (device-to-device
copy bandwidth measured by forja-cli in the same run / weight bytes), and writes decode_bench.json into $OUT (or
/tmp).

  python3 bench/decode_bench.py --cli build-cuda/app/forja-cli [--new 256] [--hf-new 64]
"""
import argparse
import json
import os
import subprocess
import sys
import time

SHAPES = ["tinyllama", "mistral7b"]
PROMPTS = [128, 2048]
# llama.cpp on the same machine, same day (the team's GPU machine notes; F16, flash attention, llama-bench tg128
# and pp2048). Not measured in this run: shown for reference only.
LLAMA_CPP = {"tinyllama": {"decode_tok_s": 413, "prefill_2048_tok_s": 41600},
             "mistral7b": {"decode_tok_s": 162, "prefill_2048_tok_s": 19100}}


def forja(cli, shape, prompt, new):
    cmd = [cli, "bench", "decode", "--shape", shape, "--prompt", str(prompt), "--new", str(new), "--json"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


# config.json fields of the real models, as forja-cli's bench decode reads them (app/cli/bench_decode.cpp).
CONFIG_SHAPES = {
    "qwen3_1_7b": dict(model_type="qwen3", vocab_size=151936, hidden_size=2048, intermediate_size=6144,
                       num_hidden_layers=28, num_attention_heads=16, num_key_value_heads=8, head_dim=128,
                       max_position_embeddings=40960, rms_norm_eps=1e-6, rope_theta=1000000.0,
                       tie_word_embeddings=True, hidden_act="silu", attention_bias=False),
    "gemma3_1b": dict(model_type="gemma3_text", vocab_size=262144, hidden_size=1152, intermediate_size=6912,
                      num_hidden_layers=26, num_attention_heads=4, num_key_value_heads=1, head_dim=256,
                      query_pre_attn_scalar=256, sliding_window=512, sliding_window_pattern=6,
                      max_position_embeddings=32768, rms_norm_eps=1e-6, rope_theta=1000000.0,
                      rope_local_base_freq=10000.0, hidden_activation="gelu_pytorch_tanh", tie_word_embeddings=True),
    "gemma2_2b": dict(model_type="gemma2", vocab_size=256000, hidden_size=2304, intermediate_size=9216,
                      num_hidden_layers=26, num_attention_heads=8, num_key_value_heads=4, head_dim=256,
                      query_pre_attn_scalar=256, sliding_window=4096, max_position_embeddings=8192,
                      rms_norm_eps=1e-6, rope_theta=10000.0, attn_logit_softcapping=50.0,
                      final_logit_softcapping=30.0, hidden_activation="gelu_pytorch_tanh", tie_word_embeddings=True),
}


def hf_model(shape):
    # The same shapes as forja-cli's (app/cli/bench_decode.cpp) and bench/hf_peft_baseline.py.
    import torch
    import transformers
    from transformers import AutoConfig, AutoModelForCausalLM, LlamaConfig, MistralConfig
    if shape in CONFIG_SHAPES:
        fields = dict(CONFIG_SHAPES[shape])
        if shape == "gemma3_1b":
            # Every sixth layer global, the rest local with their own RoPE base; transformers 5 names these
            # per layer type, 4.x by the older fields.
            fields["layer_types"] = ["full_attention" if (i + 1) % 6 == 0 else "sliding_attention"
                                     for i in range(fields["num_hidden_layers"])]
            if int(transformers.__version__.split(".")[0]) >= 5:
                fields["rope_parameters"] = {
                    "full_attention": {"rope_type": "default", "rope_theta": fields.pop("rope_theta")},
                    "sliding_attention": {"rope_type": "default", "rope_theta": fields.pop("rope_local_base_freq")}}
        cfg = AutoConfig.for_model(fields.pop("model_type"), **fields)
    elif shape == "tinyllama":
        cfg = LlamaConfig(vocab_size=32000, hidden_size=2048, intermediate_size=5632, num_hidden_layers=22,
                          num_attention_heads=32, num_key_value_heads=4, max_position_embeddings=4096,
                          rms_norm_eps=1e-5)
    else:
        cfg = MistralConfig(vocab_size=32000, hidden_size=4096, intermediate_size=14336, num_hidden_layers=32,
                            num_attention_heads=32, num_key_value_heads=8, max_position_embeddings=4096,
                            sliding_window=None)
    cfg._attn_implementation = "sdpa"
    torch.manual_seed(0)
    with torch.device("cuda"):
        return AutoModelForCausalLM.from_config(cfg, torch_dtype=torch.bfloat16).eval()


def hf(model, prompt, new):
    import torch
    x = torch.randint(3, 32000, (1, prompt), device="cuda")  # ids every shape's vocabulary has
    mask = torch.ones_like(x)

    def gen(n):
        torch.cuda.synchronize()
        t = time.perf_counter()
        model.generate(x, attention_mask=mask, max_new_tokens=n, min_new_tokens=n, do_sample=False, pad_token_id=0)
        torch.cuda.synchronize()
        return time.perf_counter() - t

    with torch.no_grad():
        gen(8)  # warm-up
        ttft = min(gen(1) for _ in range(3))
        total = gen(new)
    return {"engine": "transformers", "first_token_ms": ttft * 1e3, "decode_tok_s": (new - 1) / (total - ttft),
            "new_tokens": new}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", default="build-cuda/app/forja-cli")
    ap.add_argument("--new", type=int, default=256, help="tokens Forja generates per run")
    ap.add_argument("--hf-new", type=int, default=64, help="tokens transformers generates (it is slow)")
    ap.add_argument("--skip-hf", action="store_true")
    ap.add_argument("--shapes", nargs="*", default=SHAPES, choices=SHAPES + list(CONFIG_SHAPES))
    args = ap.parse_args()

    rows = []
    for shape in args.shapes:
        ours = {p: forja(args.cli, shape, p, args.new) for p in PROMPTS}
        for p in PROMPTS:
            print(json.dumps(ours[p]), flush=True)
        peer = {}
        if not args.skip_hf:
            import torch
            model = hf_model(shape)
            peer = {p: hf(model, p, args.hf_new) for p in PROMPTS}
            for p in PROMPTS:
                print(json.dumps(peer[p]), flush=True)
            del model
            torch.cuda.empty_cache()
        for p in PROMPTS:
            rows.append({"shape": shape, "prompt": p, "forja": ours[p], "transformers": peer.get(p),
                         "llama_cpp_same_day": LLAMA_CPP.get(shape)})

    print()
    print(f"{'shape':10} {'prompt':>6} | {'forja tok/s':>11} {'HF tok/s':>9} {'x HF':>6} {'roofline':>8} {'% roof':>6}"
          f" {'llama.cpp':>9} | {'forja TTFT ms':>13} {'HF TTFT ms':>10} {'prefill tok/s':>13}")
    for r in rows:
        f, h = r["forja"], r["transformers"]
        hf_tok = h["decode_tok_s"] if h else float("nan")
        hf_ttft = h["first_token_ms"] if h else float("nan")
        print(f"{r['shape']:10} {r['prompt']:>6} | {f['decode_tok_s']:>11.1f} {hf_tok:>9.1f}"
              f" {f['decode_tok_s'] / hf_tok:>6.1f} {f['roofline_tok_s']:>8.0f} {100 * f['roofline_fraction']:>5.0f}%"
              f" {(r['llama_cpp_same_day'] or {}).get('decode_tok_s', '-'):>9} | {f['first_token_ms']:>13.1f} {hf_ttft:>10.1f}"
              f" {f['prefill_tok_s']:>13.0f}")
    out_dir = os.environ.get("OUT", "/tmp")
    with open(os.path.join(out_dir, "decode_bench.json"), "w") as fh:
        json.dump(rows, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
