#!/usr/bin/env python3
"""GPT-2 greedy generation with a key-value cache: cannl against PyTorch eager, in one run.

PyTorch's side is a hand-written loop (no transformers package): the 124M configuration with
random weights (N(0, 0.02) matrices and embeddings, LayerNorm gains 1, biases 0, as Hugging
Face initializes GPT-2), keys and values of every layer in preallocated [heads, positions,
head_dim] buffers, one position per step, greedy argmax. cannl's side is
`cannl gpt2 --random-weights --ids ... --tokens N`, which compiles its cached step once and
reports "compiled in N ms" and "N ms per token" on stderr.

Both generate `--tokens` tokens after a one-token prompt (<|endoftext|>), so both run `tokens`
steps; "ms per token" is the generation's wall time over its steps. Each side runs `--repeats`
times (cannl's compile is cached on disk after the first run, so its first compile time is the
cold one only when the cache was empty), PyTorch at each of `--threads` (default 1 and all
cores: on a loaded machine its spinning threads can lose to one); the report gives every run,
the median and the spread, and the ratio of cannl's median to PyTorch's best.

  python3 benchmarks/gpt2_generate.py --cannl build/cannl --tokens 128 --repeats 3
"""
import argparse
import json
import math
import os
import re
import statistics
import subprocess
import sys
import time


def torch_runs(args, threads):
    import torch

    torch.set_num_threads(threads)
    torch.manual_seed(0)
    V, P, D, L, H = 50257, 1024, 768, 12, 12
    hd = D // H
    g = torch.Generator().manual_seed(0)

    def normal(*shape):
        return torch.randn(*shape, generator=g) * 0.02

    wte, wpe = normal(V, D), normal(P, D)
    layers = []
    for _ in range(L):
        layers.append(dict(
            ln1=(torch.ones(D), torch.zeros(D)), ln2=(torch.ones(D), torch.zeros(D)),
            attn_w=normal(D, 3 * D), attn_b=torch.zeros(3 * D),
            proj_w=normal(D, D), proj_b=torch.zeros(D),
            fc_w=normal(D, 4 * D), fc_b=torch.zeros(4 * D),
            mlp_w=normal(4 * D, D), mlp_b=torch.zeros(D)))
    lnf = (torch.ones(D), torch.zeros(D))
    F = torch.nn.functional
    steps = args.tokens
    T = 1 + steps

    def step(token, pos, kc, vc):
        x = wte[token] + wpe[pos]
        for i, l in enumerate(layers):
            h = F.layer_norm(x, (D,), *l["ln1"])
            q, k, v = (h @ l["attn_w"] + l["attn_b"]).split(D)
            kc[i, :, pos] = k.view(H, hd)
            vc[i, :, pos] = v.view(H, hd)
            att = (kc[i, :, :pos + 1] @ q.view(H, hd, 1)).squeeze(-1) / math.sqrt(hd)
            att = torch.softmax(att, dim=-1)
            y = (att.unsqueeze(1) @ vc[i, :, :pos + 1]).reshape(D)
            x = x + y @ l["proj_w"] + l["proj_b"]
            h = F.layer_norm(x, (D,), *l["ln2"])
            x = x + F.gelu(h @ l["fc_w"] + l["fc_b"], approximate="tanh") @ l["mlp_w"] + l["mlp_b"]
        return F.layer_norm(x, (D,), *lnf) @ wte.T

    runs = []
    with torch.no_grad():
        for _ in range(args.repeats):
            kc, vc = torch.zeros(L, H, T, hd), torch.zeros(L, H, T, hd)
            token, tokens = 50256, []
            start = time.perf_counter()
            for pos in range(steps):
                token = int(torch.argmax(step(token, pos, kc, vc)))
                tokens.append(token)
            runs.append(1000 * (time.perf_counter() - start) / steps)
    return runs


def cannl_runs(args):
    env = dict(os.environ)
    env.setdefault("OMP_WAIT_POLICY", "passive")
    runs, compiles = [], []
    for _ in range(args.repeats):
        p = subprocess.run([args.cannl, "gpt2", "--random-weights", "--ids", "50256", "--tokens",
                            str(args.tokens)], capture_output=True, text=True, env=env, check=True)
        per_token = re.search(r"([0-9.]+) ms per token", p.stderr)
        compiled = re.search(r"compiled in ([0-9.]+) ms", p.stderr)
        if not per_token or not compiled:
            sys.exit("cannl gpt2 printed no timing:\n" + p.stderr)
        runs.append(float(per_token.group(1)))
        compiles.append(float(compiled.group(1)))
    return runs, compiles


def summary(xs):
    return {"runs": [round(x, 2) for x in xs], "median": round(statistics.median(xs), 2),
            "min": round(min(xs), 2), "max": round(max(xs), 2)}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cannl", default="build/cannl", help="the cannl executable")
    ap.add_argument("--tokens", type=int, default=128)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", default=f"1,{os.cpu_count()}",
                    help="PyTorch's thread counts to try (the ratio takes its best median)")
    ap.add_argument("--only", choices=["cannl", "pytorch"], help="run one side only")
    args = ap.parse_args()
    report = {"tokens": args.tokens, "repeats": args.repeats, "load_before": os.getloadavg()[0]}
    if args.only != "pytorch":
        runs, compiles = cannl_runs(args)
        report["cannl_ms_per_token"] = summary(runs)
        report["cannl_compile_ms"] = summary(compiles)
    if args.only != "cannl":
        try:
            for t in sorted({int(x) for x in args.threads.split(",")}):
                report[f"pytorch_threads{t}_ms_per_token"] = summary(torch_runs(args, t))
        except ImportError:
            report["pytorch_ms_per_token"] = "torch is not installed"
    best = [v["median"] for k, v in report.items() if k.startswith("pytorch_threads")]
    if best and "cannl_ms_per_token" in report:
        report["pytorch_best_median_ms_per_token"] = min(best)
        report["cannl_over_pytorch"] = round(report["cannl_ms_per_token"]["median"] / min(best), 3)
    report["load_after"] = os.getloadavg()[0]
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
