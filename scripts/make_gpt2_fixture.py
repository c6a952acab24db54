#!/usr/bin/env python3
"""Writes the GPT-2 parity fixture of tests/nn/gpt2_test.cpp and tests/apps/gpt2_cli.sh.

Builds Hugging Face's GPT2LMHeadModel(GPT2Config(...)) with random weights (fixed seed), saves
its state dict with safetensors and computes reference logits in float64 from the float32 weights
that were saved (so the reference carries no rounding of its own).

Output directory (default tests/parity/gpt2):
  config.json              the model's Hugging Face config
  model.safetensors        GPT2LMHeadModel state dict: `transformer.`-prefixed names, lm_head.weight
                           and the causal-mask buffers h.N.attn.bias / h.N.attn.masked_bias
  bare.safetensors         the same weights under the official file's bare names (wte.weight, ...)
  ids.txt                  the token ids, comma-separated, one line
  logits.txt               reference logits [seq, vocab], one row per line
  last_logits.txt          the last position's logits, one per line (cannl gpt2 --print-logits)
  greedy.txt               PyTorch's greedy continuation of ids (4 tokens), comma-separated

Usage:
  python3 scripts/make_gpt2_fixture.py                     # the small CI fixture
  python3 scripts/make_gpt2_fixture.py --full /tmp/gpt2    # the real 124M architecture (~650 MB)
  GPT2_124M_DIR=/tmp/gpt2 build/test_nn --gtest_filter=Gpt2Test.Full124MMatchesPyTorch

Needs torch, transformers, safetensors and numpy (pip).
"""
import argparse
import json
import os

import torch
from safetensors.torch import save_file
from transformers import GPT2Config, GPT2LMHeadModel

SMALL = dict(vocab_size=100, n_positions=16, n_embd=32, n_layer=2, n_head=4, bos_token_id=99,
             eos_token_id=99)
FULL = dict()  # GPT2Config's defaults are the 124M model


def randomize(model, std, seed):
    """Every parameter random (biases and LayerNorm gains too, so the test sees all of them)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            noise = torch.randn(p.shape, generator=g, dtype=torch.float32)
            if ".ln_" in name or name.startswith("transformer.ln_f"):
                p.copy_((1.0 if name.endswith("weight") else 0.0) + 0.1 * noise)
            else:
                p.copy_(std * noise)


def state_dicts(model, n_layer, n_positions):
    prefixed = {k: v.detach().clone().contiguous() for k, v in model.state_dict().items()}
    # lm_head.weight shares wte's storage; safetensors wants distinct tensors.
    prefixed["lm_head.weight"] = prefixed["transformer.wte.weight"].clone()
    mask = torch.tril(torch.ones(n_positions, n_positions, dtype=torch.bool))
    for i in range(n_layer):  # buffers older checkpoints carry; cannl must ignore them
        prefixed.setdefault(f"transformer.h.{i}.attn.bias", mask.view(1, 1, n_positions, n_positions).clone())
        prefixed.setdefault(f"transformer.h.{i}.attn.masked_bias", torch.tensor(-1e4))
    bare = {k[len("transformer."):]: v.clone() for k, v in prefixed.items() if k.startswith("transformer.")}
    return prefixed, bare


def rel_err(got, want, floor=1e-2):
    """The tests' measure: |got - want| / max(|want|, floor * max |want|), maximized."""
    scale = want.abs().max()
    return float(((got - want).abs() / torch.clamp(want.abs(), min=float(floor * scale))).max())


def write_rows(path, rows):
    with open(path, "w") as f:
        for row in rows:
            f.write(" ".join(repr(float(x)) for x in row) + "\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--full", metavar="DIR", help="write the 124M architecture to DIR instead")
    ap.add_argument("--seq", type=int, default=None, help="number of token ids")
    args = ap.parse_args()
    full = args.full is not None
    out = args.full or os.path.join(os.path.dirname(__file__), "..", "tests", "parity", "gpt2")
    os.makedirs(out, exist_ok=True)

    torch.manual_seed(0)
    config = GPT2Config(**(FULL if full else SMALL), attn_implementation="eager")
    model = GPT2LMHeadModel(config).eval()
    randomize(model, 0.02 if full else 0.2, seed=1234)
    prefixed, bare = state_dicts(model, config.n_layer, config.n_positions)
    save_file(prefixed, os.path.join(out, "model.safetensors"), metadata={"format": "pt"})
    if not full:
        save_file(bare, os.path.join(out, "bare.safetensors"), metadata={"format": "pt"})
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(config.to_dict(), f, indent=2, sort_keys=True, default=str)

    seq = args.seq or (8 if full else 11)
    g = torch.Generator().manual_seed(99)
    ids = torch.randint(0, config.vocab_size, (seq,), generator=g)
    with torch.no_grad():
        logits32 = model(ids.view(1, -1)).logits[0].double()
    model = model.double()
    with torch.no_grad():
        logits = model(ids.view(1, -1)).logits[0]
        greedy, cur = [], ids.tolist()
        for _ in range(4):
            nxt = int(model(torch.tensor([cur])).logits[0, -1].argmax())
            greedy.append(nxt)
            cur.append(nxt)
    with open(os.path.join(out, "ids.txt"), "w") as f:
        f.write(",".join(str(int(i)) for i in ids) + "\n")
    if not full:
        write_rows(os.path.join(out, "logits.txt"), logits.tolist())
    write_rows(os.path.join(out, "last_logits.txt"), [[x] for x in logits[-1].tolist()])
    with open(os.path.join(out, "greedy.txt"), "w") as f:
        f.write(",".join(str(i) for i in greedy) + "\n")
    print(f"wrote {out}: seq {seq}, logits {tuple(logits.shape)}, greedy {greedy}")
    print(f"PyTorch's own f32 logits vs the f64 reference: max rel err {rel_err(logits32, logits):.3g} "
          f"(floor 1e-2 of max |logit| = {float(logits.abs().max()):.4g}); last position "
          f"{rel_err(logits32[-1], logits[-1]):.3g}")


if __name__ == "__main__":
    main()
