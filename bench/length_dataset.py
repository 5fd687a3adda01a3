"""Benchmark data with the lengths of real instruction data and random tokens.

Each example's (prompt, total) token lengths are drawn, with replacement and a fixed seed, from
bench/data/alpaca_llama2_lengths.tsv (Stanford Alpaca's examples under Llama 2's tokenizer; the file's header says
how it was measured); its ids are random in [3, vocab). Writes pre-tokenized JSONL, one
{"input_ids": [...], "labels": [...]} a line with -100 on the prompt, which `forja-cli train` reads and
bench/hf_padfree_baseline.py feeds to HF + PEFT: both train on the same examples in the same order.

    python3 bench/length_dataset.py --examples 6000 --out /tmp/alpaca_lengths.jsonl
"""
import argparse
import json
import os
import random

TABLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "alpaca_llama2_lengths.tsv")


def load_lengths(path=TABLE):
    rows = []
    with open(path) as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            prompt, total = (int(x) for x in line.split())
            if not 0 < prompt < total:
                raise ValueError(f"{path}: prompt {prompt} and total {total} are not 0 < prompt < total")
            rows.append((prompt, total))
    if not rows:
        raise ValueError(f"{path}: no lengths")
    return rows


def examples(count, seed=0, vocab=32000, max_length=1024, path=TABLE):
    """`count` examples as (input_ids, labels) lists; lengths over max_length are cut as training would."""
    table = load_lengths(path)
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        prompt, total = rng.choice(table)
        total = min(total, max_length)
        ids = [rng.randrange(3, vocab) for _ in range(total)]
        labels = [-100] * min(prompt, total) + ids[prompt:]
        out.append((ids, labels))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--examples", type=int, default=6000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--vocab", type=int, default=32000)
    ap.add_argument("--max-length", type=int, default=1024)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    data = examples(a.examples, a.seed, a.vocab, a.max_length)
    with open(a.out, "w") as f:
        for ids, labels in data:
            f.write(json.dumps({"input_ids": ids, "labels": labels}) + "\n")
    lengths = sorted(len(ids) for ids, _ in data)
    n = len(lengths)
    print(f"{n} examples, {sum(lengths)} tokens: median {lengths[n // 2]}, 90th percentile {lengths[int(n * 0.9)]}, "
          f"longest {lengths[-1]}")


if __name__ == "__main__":
    main()
