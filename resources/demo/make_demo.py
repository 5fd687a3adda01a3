#!/usr/bin/env python3
"""Makes Forja's built-in demo model (resources/demo/model) with Hugging Face tokenizers + transformers.

Run on the GPU machine (it has transformers, tokenizers and torch; this machine has none of them):

    python3 resources/demo/make_demo.py --out resources/demo/model

What it makes, and why:
  * a byte-level BPE tokenizer (Qwen2-style pre-tokenizer, ChatML special tokens and chat template) trained on the
    texts of resources/demo/dataset.jsonl, so that its words are single tokens and the examples stay short;
  * a tiny Llama (4 layers, 128 wide, about 1M parameters) whose weights start random and are then *pretrained*
    on the texts of the dataset as plain documents, each question followed by its answer, with no chat format.
    Like a real base model, it "knows the texts" but has never seen a conversation: its chat template's special
    tokens are new to it, and asked a question in the chat it rambles. The demo's LoRA fine-tune (in Forja, on
    the CPU, in well under a minute) teaches it the conversation format, which is what supervised fine-tuning
    does to a real base model, at toy scale;
  * expected.json: transformers' greedy continuation of a few prompts (fp32, CPU), for Forja's CI to compare.

The result is a few MB of bf16 safetensors plus the tokenizer files; commit it.
"""
import argparse
import json
import os
import random
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
sys.path.insert(0, os.path.join(REPO, "tests", "fixtures"))
import make_tokenizer_fixtures as fixtures  # noqa: E402  (the tokenizer fixtures' pre-tokenizer and trainer)


def read_records(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def build_tokenizer(texts, vocab_size, out):
    # The Qwen2-style byte-level BPE of the tokenizer fixtures, trained on the demo's texts.
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors
    tok = Tokenizer(models.BPE())
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(fixtures.QWEN2_PAT), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False),
    ])
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    fixtures.train_bpe(tok, texts, vocab_size, [])
    tok.add_special_tokens([AddedToken(s, special=True, normalized=False) for s in SPECIALS])
    tok.save(os.path.join(out, "tokenizer.json"))
    with open(os.path.join(REPO, "core", "tokenizer", "templates", "chatml.jinja"), encoding="utf-8") as f:
        template = f.read()
    j = json.loads(tok.to_str())
    decoder = fixtures.added_tokens_decoder(j)
    config = {"tokenizer_class": "PreTrainedTokenizerFast", "bos_token": None, "eos_token": "<|im_end|>",
              "pad_token": "<|endoftext|>", "unk_token": None, "model_max_length": 512,
              "clean_up_tokenization_spaces": False, "errors": "replace", "split_special_tokens": False,
              "added_tokens_decoder": decoder, "chat_template": template}
    with open(os.path.join(out, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        json.dump(config, f, indent=2, ensure_ascii=False)
    with open(os.path.join(out, "special_tokens_map.json"), "w", encoding="utf-8") as f:
        json.dump({"eos_token": "<|im_end|>", "pad_token": "<|endoftext|>",
                   "additional_special_tokens": ["<|im_start|>", "<|im_end|>"]}, f, indent=2)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=os.path.join(HERE, "dataset.jsonl"))
    ap.add_argument("--out", default=os.path.join(HERE, "model"))
    ap.add_argument("--steps", type=int, default=600)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    random.seed(0)
    torch.manual_seed(0)

    import transformers
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM
    records = read_records(args.data)
    texts = [m["content"] for r in records for m in r["messages"]]
    build_tokenizer(texts, 1400, args.out)
    tok = AutoTokenizer.from_pretrained(args.out)
    vocab = (len(tok) + 63) // 64 * 64
    eos = tok.convert_tokens_to_ids("<|im_end|>")
    pad = tok.convert_tokens_to_ids("<|endoftext|>")
    config = LlamaConfig(vocab_size=vocab, hidden_size=128, intermediate_size=384, num_hidden_layers=4,
                         num_attention_heads=4, num_key_value_heads=2, head_dim=32, max_position_embeddings=512,
                         rms_norm_eps=1e-6, tie_word_embeddings=True, bos_token_id=None, eos_token_id=eos,
                         pad_token_id=pad, rope_theta=10000.0)
    model = LlamaForCausalLM(config)

    # Pretraining: each question and its answer as a plain document ending with <|endoftext|>. Full model, fp32.
    docs = []
    for r in records:
        turns = [m["content"] for m in r["messages"] if m["role"] != "system"]
        docs.append(tok("\n".join(turns), add_special_tokens=False)["input_ids"] + [pad])
    stream = [t for d in docs for t in d]
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    model.to(dev).train()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.0)
    sched = transformers.get_cosine_schedule_with_warmup(opt, 30, args.steps)
    seq, batch = 128, 16
    data = torch.tensor(stream, device=dev)
    for step in range(args.steps):
        starts = torch.randint(0, len(stream) - seq - 1, (batch,), device=dev)
        x = torch.stack([data[s:s + seq] for s in starts])
        loss = model(input_ids=x, labels=x).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step(), sched.step(), opt.zero_grad()
        if step % 100 == 0 or step == args.steps - 1:
            print(f"pretrain step {step}: loss {loss.item():.4f}")
    model.to("cpu").eval()
    model.to(torch.bfloat16).save_pretrained(args.out, safe_serialization=True)

    # What transformers generates greedily from the saved (bf16) weights, in fp32 on the CPU: Forja's CI checks
    # its own greedy tokens against these. One prompt in the chat template (before any fine-tune), one plain.
    ref = LlamaForCausalLM.from_pretrained(args.out, torch_dtype=torch.float32).eval()
    prompts = [
        tok.apply_chat_template([{"role": "user", "content": "What is CUDA?"}], add_generation_prompt=True,
                                tokenize=False),
        "What is CUDA?\n",
    ]
    expected = []
    for p in prompts:
        ids = tok(p, add_special_tokens=False, return_tensors="pt")["input_ids"]
        with torch.no_grad():
            out = ref.generate(ids, max_new_tokens=24, do_sample=False, eos_token_id=None, pad_token_id=pad)
        expected.append({"prompt": p, "prompt_ids": ids[0].tolist(), "greedy_ids": out[0, ids.shape[1]:].tolist(),
                         "text": tok.decode(out[0, ids.shape[1]:])})
    with open(os.path.join(args.out, "expected.json"), "w", encoding="utf-8") as f:
        json.dump({"transformers": transformers.__version__, "torch": torch.__version__, "generations": expected},
                  f, indent=1, ensure_ascii=False)
    print("vocab", vocab, "params", sum(p.numel() for p in model.parameters()))
    for e in expected:
        print(repr(e["text"]))


if __name__ == "__main__":
    main()
