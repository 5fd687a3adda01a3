#!/usr/bin/env python3
"""Batch-1 bf16 greedy decode: Forja (forja-cli bench decode) vs Hugging Face transformers' generate, in one run on
one GPU, at the TinyLlama-1.1B and Mistral-7B shapes (random weights) with 128- and 2048-token prompts; with
--llama-bench, llama.cpp's llama-bench too, on the same shape's random weights as an F16 GGUF file.

Prints decode tok/s, time to first token (TTFT) and the fraction of the memory-bandwidth roofline (device-to-device
copy bandwidth measured by forja-cli in the same run / weight bytes), and writes decode_bench.json into $OUT (or
/tmp).

  python3 bench/decode_bench.py --cli build-cuda/app/forja-cli [--new 256] [--hf-new 64] [--llama-bench PATH]
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHAPES = ["tinyllama", "mistral7b"]
PROMPTS = [128, 2048]


def forja(cli, shape, prompt, new):
    cmd = [cli, "bench", "decode", "--shape", shape, "--prompt", str(prompt), "--new", str(new), "--json"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def llama_cpp(bench, cli, shape, new, work):
    """llama-bench on the shape's random weights (forja-cli bench model, written as an F16 GGUF file with the
    fixtures' 320-token SentencePiece tokenizer): all layers on the GPU, flash attention on, the median of 3
    repetitions of `new` generated tokens after each prompt length of context (-d), and prefill of 2048 tokens."""
    model, gguf = os.path.join(work, shape), os.path.join(work, shape + ".f16.gguf")
    if not os.path.exists(gguf):
        subprocess.run([cli, "bench", "model", "--shape", shape, "--out", model], check=True, capture_output=True)
        shutil.copy(os.path.join(ROOT, "tests/fixtures/gguf/sp_bpe_320/tokenizer.model"), model)
        subprocess.run([cli, "export", model, "--format", "gguf", "--dtype", "fp16", "--out", gguf], check=True,
                       capture_output=True)
        shutil.rmtree(model)
    common = [bench, "-m", gguf, "-ngl", "99", "-fa", "1", "-r", "3", "-o", "json"]
    runs = json.loads(subprocess.run(common + ["-p", "0", "-n", str(new), "-d", ",".join(map(str, PROMPTS))],
                                     check=True, capture_output=True, text=True).stdout)
    runs += json.loads(subprocess.run(common + ["-p", "2048", "-n", "0"], check=True, capture_output=True,
                                      text=True).stdout)
    out = {p: {"engine": "llama.cpp", "build": runs[0].get("build_commit"), "new_tokens": new,
               "decode_tok_s": next(r["avg_ts"] for r in runs if r["n_gen"] == new and r["n_depth"] == p)}
           for p in PROMPTS}
    out[2048]["prefill_tok_s"] = next(r["avg_ts"] for r in runs if r["n_prompt"] == 2048 and r["n_gen"] == 0)
    return out


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
    ap.add_argument("--llama-bench", help="llama.cpp's llama-bench, built for this GPU: run it as a peer too")
    ap.add_argument("--work", help="where the peer's GGUF files go (kept); a temporary folder by default")
    ap.add_argument("--shapes", nargs="*", default=SHAPES, choices=SHAPES + list(CONFIG_SHAPES))
    args = ap.parse_args()

    work = args.work or tempfile.mkdtemp(prefix="decode_bench_")
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
        lcpp = {}
        if args.llama_bench:
            lcpp = llama_cpp(args.llama_bench, args.cli, shape, args.new, work)
            for p in PROMPTS:
                print(json.dumps(lcpp[p]), flush=True)
        for p in PROMPTS:
            rows.append({"shape": shape, "prompt": p, "forja": ours[p], "transformers": peer.get(p),
                         "llama_cpp": lcpp.get(p)})
    if not args.work:
        shutil.rmtree(work)

    print()
    nan = float("nan")
    print(f"{'shape':10} {'prompt':>6} | {'forja tok/s':>11} {'HF tok/s':>9} {'x HF':>6} {'llama.cpp':>9}"
          f" {'x llama':>7} {'roofline':>8} {'% roof':>6} | {'forja TTFT ms':>13} {'HF TTFT ms':>10}"
          f" {'prefill tok/s':>13} {'llama.cpp':>9}")
    for r in rows:
        f, h, l = r["forja"], r["transformers"] or {}, r["llama_cpp"] or {}
        hf_tok, lc_tok = h.get("decode_tok_s", nan), l.get("decode_tok_s", nan)
        print(f"{r['shape']:10} {r['prompt']:>6} | {f['decode_tok_s']:>11.1f} {hf_tok:>9.1f}"
              f" {f['decode_tok_s'] / hf_tok:>6.1f} {lc_tok:>9.1f} {f['decode_tok_s'] / lc_tok:>7.2f}"
              f" {f['roofline_tok_s']:>8.0f} {100 * f['roofline_fraction']:>5.0f}%"
              f" | {f['first_token_ms']:>13.1f} {h.get('first_token_ms', nan):>10.1f}"
              f" {f['prefill_tok_s']:>13.0f} {l.get('prefill_tok_s', nan):>9.0f}")
    out_dir = os.environ.get("OUT", "/tmp")
    with open(os.path.join(out_dir, "decode_bench.json"), "w") as fh:
        json.dump(rows, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
