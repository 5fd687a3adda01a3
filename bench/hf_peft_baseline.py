"""Peer baseline: HF transformers + PEFT LoRA training throughput and HF generate decode speed, on
random-weight models of real architectures (TinyLlama-1.1B and Mistral-7B shapes). The peer the HF + PEFT figures
in bench/RESULTS.md were measured with: keep its settings unchanged so that those figures stay comparable."""
import json, os, sys, time, torch
from transformers import LlamaConfig, MistralConfig, AutoModelForCausalLM
from peft import LoraConfig, get_peft_model

def make(kind):
    if kind in ("qwen3_1_7b", "gemma3_1b"):
        # Built from the fields forja-cli's shapes use (bench/decode_bench.py, core/io/bench_shapes.cpp).
        from decode_bench import hf_model
        return hf_model(kind)
    if kind == "tinyllama-1.1b":
        cfg = LlamaConfig(vocab_size=32000, hidden_size=2048, intermediate_size=5632, num_hidden_layers=22,
                          num_attention_heads=32, num_key_value_heads=4, max_position_embeddings=2048, rms_norm_eps=1e-5)
    else:
        cfg = MistralConfig(vocab_size=32000, hidden_size=4096, intermediate_size=14336, num_hidden_layers=32,
                            num_attention_heads=32, num_key_value_heads=8, max_position_embeddings=4096, sliding_window=None)
    cfg._attn_implementation = "sdpa"
    torch.manual_seed(0)
    with torch.device("cuda"):
        m = AutoModelForCausalLM.from_config(cfg, torch_dtype=torch.bfloat16)
    return m

def train(kind, bs, seq, steps=10, warm=3):
    m = make(kind)
    n_params = sum(p.numel() for p in m.parameters())
    lc = LoraConfig(r=16, lora_alpha=32, lora_dropout=0.0, target_modules=["q_proj","k_proj","v_proj","o_proj","gate_proj","up_proj","down_proj"], task_type="CAUSAL_LM")
    m = get_peft_model(m, lc)
    opt = torch.optim.AdamW([p for p in m.parameters() if p.requires_grad], lr=2e-4, fused=True)
    x = torch.randint(0, 32000, (bs, seq), device="cuda")
    torch.cuda.reset_peak_memory_stats()
    def step():
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = m(input_ids=x, labels=x).loss
        loss.backward(); opt.step(); opt.zero_grad(set_to_none=True)
        return loss
    for _ in range(warm): step()
    torch.cuda.synchronize(); t = time.perf_counter()
    for _ in range(steps): step()
    torch.cuda.synchronize(); dt = (time.perf_counter() - t) / steps
    tok_s = bs * seq / dt
    # FLOPs of a LoRA step ~ 4*N*tokens (frozen base: forward + input-gradient backward) + attention
    r = dict(kind=kind, bs=bs, seq=seq, params=n_params, step_s=dt, tokens_per_s=tok_s,
             tflops_4N=4 * n_params * tok_s / 1e12, peak_gib=torch.cuda.max_memory_allocated() / 2**30)
    del m, opt; torch.cuda.empty_cache()
    return r

def decode(kind, prompt=128, new=256):
    m = make(kind).eval()
    x = torch.randint(0, 32000, (1, prompt), device="cuda")
    with torch.no_grad():
        m.generate(x, max_new_tokens=16, min_new_tokens=16, do_sample=False)
        torch.cuda.synchronize(); t = time.perf_counter()
        m(input_ids=x); torch.cuda.synchronize(); ttft = time.perf_counter() - t
        t = time.perf_counter()
        m.generate(x, max_new_tokens=new, min_new_tokens=new, do_sample=False)
        torch.cuda.synchronize(); dt = time.perf_counter() - t
    n = sum(p.numel() for p in m.parameters())
    r = dict(kind=kind, prompt=prompt, new=new, decode_tok_s=new / dt, prefill_s=ttft,
             roofline_tok_s=4.8e12 / (2 * n))
    del m; torch.cuda.empty_cache()
    return r

out = []
# BASELINE_SHAPES="qwen3_1_7b gemma3_1b": training only, at those shapes (8 x 1024), instead of the default set.
extra = os.environ.get("BASELINE_SHAPES", "").split()
for args in [(k, 8, 1024) for k in extra] or [("tinyllama-1.1b", 8, 1024), ("mistral-7b", 4, 1024)]:
    r = train(*args); print(json.dumps(r)); out.append(r)
for k in [] if extra else ["tinyllama-1.1b", "mistral-7b"]:
    r = decode(k); print(json.dumps(r)); out.append(r)
json.dump(out, open(os.path.join(os.environ.get("OUT", "/tmp"), "hf_peft_baseline.json"), "w"), indent=1)
