#!/usr/bin/env python3
"""Encode throughput, Forja vs Hugging Face `tokenizers`, in the same run on the same machine.

Makes (or reads) a ~10 MB text, one document per line, and for each tokenizer.json model encodes it
  - on one thread, line by line (HF: Tokenizer.encode per line; Forja: Tokenizer::encode per line), and
  - as one batch on every core (HF: encode_batch, which uses rayon; Forja: encode_batch on N threads),
best of --repeat runs each, with add_special_tokens=False. Both sides read the same tokenizer.json, and the total
token counts are compared so a faster-but-wrong tokenizer shows up. Prints a table; writes JSON to $OUT if set.

    python3 bench/tokenize_bench.py --forja-cli build/app/forja-cli [--model DIR ...] [--text FILE] [--mb 10]
"""

import argparse
import json
import os
import random
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(REPO, "tests", "fixtures", "tokenizers")
DEFAULT_MODELS = ["llama3_bpe", "gpt2_bpe", "qwen2_bpe"]


def make_text(path, megabytes, seed=1234):
    """Lines of 1-40 corpus strings (multilingual, code, emoji, digits, whitespace runs) joined by spaces."""
    with open(os.path.join(FIXTURES, "corpus.json"), encoding="utf-8") as f:
        corpus = [s for s in json.load(f) if s and "\n" not in s]
    rng = random.Random(seed)
    target = int(megabytes * 1e6)
    size = 0
    with open(path, "w", encoding="utf-8") as f:
        while size < target:
            line = " ".join(rng.choice(corpus) for _ in range(rng.randint(1, 40)))
            f.write(line + "\n")
            size += len(line.encode("utf-8")) + 1
    return path


def read_lines(path):
    with open(path, encoding="utf-8") as f:
        return f.read().split("\n")[:-1]


def hf_bench(model_dir, lines, repeat):
    from tokenizers import Tokenizer
    tok = Tokenizer.from_file(os.path.join(model_dir, "tokenizer.json"))
    single = batch = float("inf")
    tokens = 0
    for _ in range(repeat):
        t0 = time.perf_counter()
        n = 0
        for line in lines:
            n += len(tok.encode(line, add_special_tokens=False).ids)
        single = min(single, time.perf_counter() - t0)
        tokens = n
        t0 = time.perf_counter()
        out = tok.encode_batch(lines, add_special_tokens=False)
        batch = min(batch, time.perf_counter() - t0)
        assert sum(len(e.ids) for e in out) == n
    return {"single_s": single, "batch_s": batch, "tokens": tokens}


def forja_bench(cli, model_dir, text, repeat, threads):
    cmd = [cli, "bench", "tokenize", "--model", model_dir, "--text", text, "--repeat", str(repeat), "--json"]
    if threads:
        cmd += ["--threads", str(threads)]
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        raise RuntimeError("forja-cli failed (%d): %s" % (res.returncode, res.stderr.strip()))
    return json.loads(res.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--forja-cli", default=os.path.join(REPO, "build", "app", "forja-cli"))
    ap.add_argument("--model", action="append", help="model folder with tokenizer.json (repeatable)")
    ap.add_argument("--text", help="text file, one document per line (default: generated)")
    ap.add_argument("--mb", type=float, default=10.0, help="size of the generated text in MB")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--threads", type=int, default=0, help="Forja's encode_batch threads (0: all cores)")
    args = ap.parse_args()

    out_dir = os.environ.get("OUT")
    # The generated text stays out of $OUT: only the results travel back.
    text = args.text or make_text(os.path.join("/tmp", "forja_tokenize_bench.txt"), args.mb)
    lines = read_lines(text)
    mb = sum(len(l.encode("utf-8")) for l in lines) / 1e6
    models = args.model or [os.path.join(FIXTURES, m) for m in DEFAULT_MODELS]
    import tokenizers
    results = {"text": text, "megabytes": mb, "lines": len(lines), "cpus": os.cpu_count(),
               "tokenizers_version": tokenizers.__version__, "models": {}}
    print("text: %s, %.2f MB, %d lines; %d CPUs; tokenizers %s" % (text, mb, len(lines), os.cpu_count(),
                                                                    tokenizers.__version__))
    print("%-12s %-22s %12s %12s %8s  %s" % ("model", "mode", "Forja MB/s", "HF MB/s", "ratio", "tokens"))
    ok = True
    for m in models:
        name = os.path.basename(os.path.normpath(m))
        hf = hf_bench(m, lines, args.repeat)
        fj = forja_bench(args.forja_cli, m, text, args.repeat, args.threads)
        same = fj["tokens"] == hf["tokens"]
        ok = ok and same
        rows = [("1 thread", mb / fj["single_s"], mb / hf["single_s"]),
                ("batch (%d threads)" % fj["threads"], mb / fj["batch_s"], mb / hf["batch_s"])]
        for mode, ours, theirs in rows:
            print("%-12s %-22s %12.2f %12.2f %7.2fx  %s" % (name, mode, ours, theirs, ours / theirs,
                                                             "same" if same else "DIFFER %d vs %d" % (fj["tokens"], hf["tokens"])))
        results["models"][name] = {"forja": fj, "hf": hf, "same_token_count": same,
                                   "single_ratio": hf["single_s"] / fj["single_s"],
                                   "batch_ratio": hf["batch_s"] / fj["batch_s"]}
    if out_dir:
        with open(os.path.join(out_dir, "tokenize_bench.json"), "w") as f:
            json.dump(results, f, indent=2)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
