#!/usr/bin/env python3
"""tinygrad runner: TinyJit (--jit 1, default) or eager (--jit 0), BEAM search (--beam N, set
before tinygrad is imported), on the CPU (or another tinygrad device).

Models follow the fixture layout (see scripts/gen_fixtures.py) and the PyTorch runner: images
NHWC -> NCHW once, conv kernels [oc,kh,kw,ic] -> [oc,ic,kh,kw], conv features flattened in
(oh, ow, oc) order, embeddings as one-hot products. The step is forward + loss (+ backward + plain
SGD). Usage: run.py --fixture F [--device CPU] [--jit 0|1] [--beam N]
"""
import argparse
import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import harness  # noqa: E402


def parse_args():
    parser = argparse.ArgumentParser(description="tinygrad benchmark runner")
    harness.add_common_args(parser)
    parser.add_argument("--device", default="CPU")
    parser.add_argument("--jit", type=int, default=1)
    parser.add_argument("--beam", type=int, default=0)
    return parser.parse_args()


ARGS = parse_args()
# Tensors made without a device (masks, aranges) go to tinygrad's default device, which is the
# first backend it finds (OpenCL where an ICD such as PoCL is installed): pin it to the cell's.
os.environ["DEV"] = ARGS.device
if ARGS.beam:
    os.environ["BEAM"] = str(ARGS.beam)  # read by tinygrad at import time

import numpy as np  # noqa: E402
import tinygrad  # noqa: E402
from tinygrad import Context, Tensor, TinyJit, nn  # noqa: E402


def ce_loss(logits, labels):
    """Mean over rows of -log_softmax . one_hot."""
    return -(logits.log_softmax(-1) * labels.one_hot(logits.shape[-1])).sum(-1).mean()


def linear(x, p, name):
    return x.linear(p[name + ".w"].T, p[name + ".b"])


def dense_relu_chain(x, p, prefix, n):
    """n linear layers {prefix}0 .. {prefix}{n-1} with ReLU between them (none after the last)."""
    for i in range(n):
        x = linear(x, p, f"{prefix}{i}")
        if i + 1 < n:
            x = x.relu()
    return x


def mlp_model(w, p):
    return lambda x: dense_relu_chain(x, p, "l", len(w["dims"]) - 1)


def conv_model(w, p):
    def forward(x):  # NCHW
        for i, stride in enumerate(w["strides"]):
            x = x.conv2d(p[f"conv{i}.w"], p[f"conv{i}.b"], stride=stride).relu().max_pool2d(w["pool"])
        x = x.permute(0, 2, 3, 1).reshape(x.shape[0], -1)  # (oh, ow, oc)
        return dense_relu_chain(x, p, "fc", len(w["fc"]) + 1)
    return forward


def gpt_model(w, p):
    d, heads, seq, vocab = w["d_model"], w["n_head"], w["seq"], w["vocab"]
    dk = d // heads
    causal = Tensor.ones(seq, seq).tril().cast("bool")

    def ln(x, pre):
        return x.layernorm(eps=w["ln_eps"]) * p[pre + ".gamma"] + p[pre + ".beta"]

    def attention(x, pre):
        b = x.shape[0]
        split = lambda name: linear(x, p, pre + name).reshape(b, seq, heads, dk).transpose(1, 2)
        q, k, v = split("q"), split("k"), split("v")
        scores = (q @ k.transpose(-1, -2)) * (1.0 / math.sqrt(dk))
        scores = causal.where(scores, -1e9)
        mixed = (scores.softmax(-1) @ v).transpose(1, 2).reshape(b, seq, d)
        return linear(mixed, p, pre + "o")

    def forward(ids):
        x = ids.one_hot(vocab) @ p["wte"].T + p["wpe"].T
        for i in range(w["n_layer"]):
            pre = f"h{i}."
            x = x + attention(ln(x, pre + "ln1"), pre + "attn.")
            h = linear(ln(x, pre + "ln2"), p, pre + "fc").gelu()
            x = x + linear(h, p, pre + "proj")
        return ln(x, "ln_f") @ p["wte"]  # tied lm_head: wte is [d, vocab]
    return forward


MODELS = {"mlp": mlp_model, "conv": conv_model, "gpt": gpt_model}
DATA_KEYS = {"mlp": ("x", "labels"), "conv": ("x", "labels"), "gpt": ("ids", "targets")}


def to_tinygrad_layout(name, value):
    if name.startswith("conv") and name.endswith(".w"):
        return value.transpose(0, 3, 1, 2).copy()
    return value


def make_run(args):
    def run(w, t):
        train = w["mode"] == "train"
        inputs_key, labels_key = DATA_KEYS[w["model"]]
        params = {k: Tensor(to_tinygrad_layout(k, v), device=args.device).realize()
                  for k, v in t.items() if k not in (inputs_key, labels_key)}
        xs = t[inputs_key]
        if w["model"] == "conv":
            xs = xs.transpose(0, 1, 4, 2, 3)
        xs = [Tensor(np.ascontiguousarray(x), device=args.device).realize() for x in xs]
        ys = [Tensor(y.astype(np.int32), device=args.device).realize() for y in t[labels_key]]
        forward = MODELS[w["model"]](w, params)
        opt = nn.optim.SGD(list(params.values()), lr=w["lr"]) if train else None

        def one_step(x, y):
            if not train:
                return ce_loss(forward(x), y).realize()
            opt.zero_grad()
            loss = ce_loss(forward(x), y)
            loss.backward()
            # One schedule: realizing the loss after opt.step() would read the updated weights.
            Tensor.realize(loss, *opt.schedule_step())
            return loss

        state = {}

        def build():
            state["step"] = TinyJit(one_step) if args.jit else one_step

        def step(k):
            b = k % w["n_batches"]
            with Context(TRAINING=int(train)):
                return state["step"](xs[b], ys[b])

        return harness.measure(w, args, build, step, lambda loss: float(loss.item()))
    return run


def main():
    args = ARGS
    variant = ("jit" if args.jit else "nojit") + (f"-beam{args.beam}" if args.beam else "")
    try:
        from importlib.metadata import version
        versions = {"tinygrad": version("tinygrad")}
    except Exception:  # not installed as a distribution (a source checkout)
        versions = {"tinygrad": getattr(tinygrad, "__version__", "unknown")}
    return harness.run_cell(args, "tinygrad", args.device, variant, versions, make_run(args))


if __name__ == "__main__":
    sys.exit(main())
