#!/usr/bin/env python3
"""Writes the PyTorch parity fixtures of the nn blocks to tests/parity/*.txt.

For every block: fixed inputs and parameter values, the forward output `out`, fixed random
weights `wts` of out's shape, and the gradients of sum(out * wts) with respect to the inputs and
parameters (`grad_<name>`), all computed by PyTorch in float64 (the reference the f32 cannl
results are compared to by tests/nn/parity_test.cpp).

File format (read by tests/nn/parity_util.h), text, one tensor per two lines:
    # comment lines start with '#'
    <name> <ndim> <d0> ... <d(ndim-1)>
    <v0> <v1> ...              (row-major, repr of float64, ndim 0 = one value)
Tensors use PyTorch's layout: Linear weights are [out, in], embeddings [vocab, dim].

Usage: python3 scripts/make_parity_fixtures.py [output_dir]   (default: tests/parity)
"""
import math
import os
import sys

import torch
import torch.nn.functional as F

torch.set_default_dtype(torch.float64)


def rand(gen, *shape, low=-1.0, high=1.0):
    return (torch.rand(*shape, generator=gen) * (high - low) + low).requires_grad_(True)


def write_fixture(path, tensors, note):
    with open(path, "w") as f:
        f.write("# cannl parity fixture (scripts/make_parity_fixtures.py, torch %s)\n" % torch.__version__)
        f.write("# %s\n" % note)
        for name, t in tensors.items():
            t = t.detach().to(torch.float64).contiguous()
            f.write("%s %d %s\n" % (name, t.dim(), " ".join(str(d) for d in t.shape)))
            f.write(" ".join(repr(float(v)) for v in t.reshape(-1).tolist()) + "\n")


def finish(out, gen, inputs):
    """Weights, the weighted sum and every gradient, as one dict of tensors."""
    wts = torch.rand(tuple(out.shape), generator=gen) * 2 - 1
    (out * wts).sum().backward()
    result = dict(inputs)
    result["out"] = out
    result["wts"] = wts
    for name, t in inputs.items():
        if t.requires_grad:
            result["grad_" + name] = t.grad
    return result


def layer_norm(gen):
    x, g, b = rand(gen, 2, 3, 5, low=-2, high=2), rand(gen, 5, low=0.5, high=1.5), rand(gen, 5)
    return finish(F.layer_norm(x, (5,), g, b, eps=1e-5), gen, {"x": x, "gamma": g, "beta": b})


def softmax(gen):
    x = rand(gen, 3, 4, low=-3, high=3)
    return finish(F.softmax(x, dim=-1), gen, {"x": x})


def log_softmax(gen):
    x = rand(gen, 3, 4, low=-3, high=3)
    return finish(F.log_softmax(x, dim=-1), gen, {"x": x})


def gelu(gen):
    x = rand(gen, 2, 5, low=-3, high=3)
    return finish(F.gelu(x, approximate="tanh"), gen, {"x": x})


def cross_entropy(gen):
    logits = rand(gen, 4, 6, low=-3, high=3)
    ids = torch.tensor([5, 0, 3, 3])
    out = F.cross_entropy(logits, ids)
    return finish(out, gen, {"logits": logits, "ids": ids.to(torch.float64)})


def cross_entropy_masked(gen):
    logits = rand(gen, 4, 6, low=-3, high=3)
    ids = torch.tensor([1, 2, 0, 4])
    mask = torch.tensor([1.0, 0.0, 1.0, 1.0])
    out = (F.cross_entropy(logits, ids, reduction="none") * mask).sum() / 2.5
    return finish(out, gen, {"logits": logits, "ids": ids.to(torch.float64), "mask": mask})


def embedding(gen):
    table = rand(gen, 7, 4)
    ids = torch.tensor([[6, 0, 2], [2, 2, 5]])
    return finish(F.embedding(ids, table), gen, {"table": table, "ids": ids.to(torch.float64)})


def mlp(gen):
    x, w1, b1, w2 = rand(gen, 3, 4), rand(gen, 5, 4), rand(gen, 5), rand(gen, 2, 5)
    out = F.linear(F.relu(F.linear(x, w1, b1)), w2)
    return finish(out, gen, {"x": x, "w1": w1, "b1": b1, "w2": w2})


def attention_params(gen, d_model, heads, d_k, prefix=""):
    p = {}
    for n in "qkv":
        p[prefix + "w" + n] = rand(gen, heads * d_k, d_model, low=-0.7, high=0.7)
        p[prefix + "b" + n] = rand(gen, heads * d_k, low=-0.2, high=0.2)
    p[prefix + "wo"] = rand(gen, d_model, heads * d_k, low=-0.7, high=0.7)
    p[prefix + "bo"] = rand(gen, d_model, low=-0.2, high=0.2)
    return p


def causal_attention(x, p, heads, d_k, prefix=""):
    batch, seq, _ = x.shape
    def split(n):
        y = F.linear(x, p[prefix + "w" + n], p[prefix + "b" + n])
        return y.reshape(batch, seq, heads, d_k).transpose(1, 2)
    q, k, v = split("q"), split("k"), split("v")
    scores = q @ k.transpose(-1, -2) / math.sqrt(d_k)
    causal = torch.tril(torch.ones(seq, seq, dtype=torch.bool))
    attn = F.softmax(scores.masked_fill(~causal, float("-inf")), dim=-1)
    mixed = (attn @ v).transpose(1, 2).reshape(batch, seq, heads * d_k)
    return F.linear(mixed, p[prefix + "wo"], p[prefix + "bo"])


def attention(gen):
    x = rand(gen, 2, 3, 4)
    p = attention_params(gen, 4, 2, 3)
    return finish(causal_attention(x, p, 2, 3), gen, {"x": x, **p})


def decoder_block(gen):
    d_model, heads, d_ff = 4, 2, 6
    x = rand(gen, 2, 3, d_model)
    p = {"ln1_g": rand(gen, d_model, low=0.5, high=1.5), "ln1_b": rand(gen, d_model),
         "ln2_g": rand(gen, d_model, low=0.5, high=1.5), "ln2_b": rand(gen, d_model)}
    p.update(attention_params(gen, d_model, heads, d_model // heads))
    p.update({"fc_w": rand(gen, d_ff, d_model), "fc_b": rand(gen, d_ff),
              "proj_w": rand(gen, d_model, d_ff), "proj_b": rand(gen, d_model)})
    h = x + causal_attention(F.layer_norm(x, (d_model,), p["ln1_g"], p["ln1_b"], eps=1e-5), p,
                             heads, d_model // heads)
    ff = F.linear(F.gelu(F.linear(F.layer_norm(h, (d_model,), p["ln2_g"], p["ln2_b"], eps=1e-5),
                                  p["fc_w"], p["fc_b"]), approximate="tanh"), p["proj_w"], p["proj_b"])
    return finish(h + ff, gen, {"x": x, **p})


CASES = {
    "layer_norm": (layer_norm, "F.layer_norm over the last axis, eps 1e-5"),
    "softmax": (softmax, "F.softmax(dim=-1)"),
    "log_softmax": (log_softmax, "F.log_softmax(dim=-1)"),
    "gelu": (gelu, "F.gelu(approximate='tanh')"),
    "cross_entropy": (cross_entropy, "F.cross_entropy(logits, ids), mean over rows"),
    "cross_entropy_masked": (cross_entropy_masked, "sum(F.cross_entropy(reduction='none') * mask) / 2.5"),
    "embedding": (embedding, "F.embedding(ids, table)"),
    "mlp": (mlp, "linear(relu(linear(x, w1, b1)), w2)"),
    "attention": (attention, "causal multi-head self-attention, 2 heads, d_k 3, biases"),
    "decoder_block": (decoder_block, "pre-LN GPT-2 block: x + attn(ln1 x); h + proj(gelu(fc(ln2 h)))"),
}


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "tests", "parity")
    os.makedirs(out_dir, exist_ok=True)
    for seed, (name, (make, note)) in enumerate(sorted(CASES.items())):
        gen = torch.Generator().manual_seed(1000 + seed)
        write_fixture(os.path.join(out_dir, name + ".txt"), make(gen), note)
        print("wrote", name)


if __name__ == "__main__":
    main()
