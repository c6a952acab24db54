#!/usr/bin/env python3
"""Writes one self-describing safetensors fixture per benchmark workload, plus DIGESTS.txt.

Every runner (cannl, PyTorch, tinygrad) starts from the same initial weights, data and
hyperparameters, read from the fixture alone: the workload's JSON definition is stored in the
header's metadata ("workload"), together with the layout conventions ("layout").

Layout (cannl / OCANNL conventions): a weight is stored output axes first, then input axes;
images are channels-last [n_batches, batch, h, w, c]; a conv kernel is [out_c, kh, kw, in_c];
the first fully connected layer after the convolutions reads the features flattened in
(oh, ow, oc) order; token embeddings are [d_model, vocab] and positions [d_model, seq].
Runners of frameworks with other conventions (PyTorch's NCHW, [vocab, d_model]) convert on load.

Usage: gen_fixtures.py --out DIR [--workloads a,b] [--workload-dir benchmarks/workloads]
"""
import argparse
import hashlib
import json
import math
import os
import sys

import numpy as np
import torch
import struct

FIXTURE_VERSION = "1"


def moons(rng, n, noise):
    """Two interleaving half circles (as scikit-learn's make_moons), shuffled."""
    half = n // 2
    t_out = np.linspace(0, math.pi, n - half)
    t_in = np.linspace(0, math.pi, half)
    x = np.concatenate([np.stack([np.cos(t_out), np.sin(t_out)], 1),
                        np.stack([1 - np.cos(t_in), 1 - np.sin(t_in) - 0.5], 1)])
    y = np.concatenate([np.zeros(n - half, np.int32), np.ones(half, np.int32)])
    x = x + rng.normal(0.0, noise, x.shape)
    order = rng.permutation(n)
    return x[order].astype(np.float32), y[order]


def gaussian(rng, n, dim, classes):
    """Isotropic Gaussian clusters around per-class centres."""
    centres = rng.normal(0.0, 1.0, (classes, dim))
    y = rng.integers(0, classes, n).astype(np.int32)
    x = centres[y] + rng.normal(0.0, 1.0, (n, dim))
    return x.astype(np.float32), y


def images(rng, n, shape, classes):
    """Noise images with a per-class mean pattern, channels-last."""
    patterns = rng.normal(0.0, 0.5, (classes,) + tuple(shape))
    y = rng.integers(0, classes, n).astype(np.int32)
    x = patterns[y] + rng.normal(0.0, 1.0, (n,) + tuple(shape))
    return x.astype(np.float32), y


def linear_tensors(prefix, fan_in, fan_out):
    layer = torch.nn.Linear(fan_in, fan_out)  # PyTorch's default init, seeded by the caller
    return {prefix + ".w": layer.weight.detach().numpy(), prefix + ".b": layer.bias.detach().numpy()}


def mlp_fixture(w, rng):
    dims, n = w["dims"], w["batch"] * w["n_batches"]
    if w["data"] == "moons":
        x, y = moons(rng, n, 0.1)
    else:
        x, y = gaussian(rng, n, dims[0], dims[-1])
    tensors = {"x": x.reshape(w["n_batches"], w["batch"], dims[0]),
               "labels": y.reshape(w["n_batches"], w["batch"])}
    for i in range(len(dims) - 1):
        tensors.update(linear_tensors(f"l{i}", dims[i], dims[i + 1]))
    return tensors


def conv_out(size, kernel, stride):
    return (size - kernel) // stride + 1


def conv_fixture(w, rng):
    h, wd, c = w["image"]
    n = w["batch"] * w["n_batches"]
    x, y = images(rng, n, (h, wd, c), w["classes"])
    tensors = {"x": x.reshape(w["n_batches"], w["batch"], h, wd, c),
               "labels": y.reshape(w["n_batches"], w["batch"])}
    size_h, size_w, in_c = h, wd, c
    for i, (out_c, stride) in enumerate(zip(w["conv_channels"], w["strides"])):
        conv = torch.nn.Conv2d(in_c, out_c, w["kernel"], stride=stride)
        tensors[f"conv{i}.w"] = conv.weight.detach().permute(0, 2, 3, 1).contiguous().numpy()
        tensors[f"conv{i}.b"] = conv.bias.detach().numpy()
        size_h = conv_out(size_h, w["kernel"], stride) // w["pool"]
        size_w = conv_out(size_w, w["kernel"], stride) // w["pool"]
        in_c = out_c
    fan_in = size_h * size_w * in_c  # flattened in (oh, ow, oc) order
    for i, width in enumerate(w["fc"] + [w["classes"]]):
        tensors.update(linear_tensors(f"fc{i}", fan_in, width))
        fan_in = width
    return tensors


def gpt_fixture(w, rng):
    d, f, v, s = w["d_model"], w["d_ff"], w["vocab"], w["seq"]
    tokens = rng.integers(0, v, (w["n_batches"], w["batch"], s + 1)).astype(np.int32)
    tensors = {"ids": np.ascontiguousarray(tokens[..., :-1]),
               "targets": np.ascontiguousarray(tokens[..., 1:])}
    normal = lambda *shape: (torch.randn(*shape) * 0.02).numpy()
    tensors["wte"] = normal(d, v)
    tensors["wpe"] = normal(d, s)
    for i in range(w["n_layer"]):
        p = f"h{i}."
        for ln in ("ln1", "ln2"):
            tensors[p + ln + ".gamma"] = np.ones(d, np.float32)
            tensors[p + ln + ".beta"] = np.zeros(d, np.float32)
        for proj in ("q", "k", "v", "o"):
            tensors[p + f"attn.{proj}.w"] = normal(d, d)
            tensors[p + f"attn.{proj}.b"] = np.zeros(d, np.float32)
        tensors[p + "fc.w"], tensors[p + "fc.b"] = normal(f, d), np.zeros(f, np.float32)
        tensors[p + "proj.w"], tensors[p + "proj.b"] = normal(d, f), np.zeros(d, np.float32)
    tensors["ln_f.gamma"] = np.ones(d, np.float32)
    tensors["ln_f.beta"] = np.zeros(d, np.float32)
    return tensors


BUILDERS = {"mlp": mlp_fixture, "conv": conv_fixture, "gpt": gpt_fixture}


DTYPE_NAMES = {np.dtype(np.float32): "F32", np.dtype(np.int32): "I32"}


def save_deterministic(tensors, path, metadata):
    """A safetensors file whose bytes depend only on its contents: the library's writer orders
    the metadata map differently from run to run, which would change the digest."""
    header, offset = {"__metadata__": metadata}, 0
    for name in sorted(tensors):
        t = tensors[name]
        header[name] = {"dtype": DTYPE_NAMES[t.dtype], "shape": list(t.shape),
                        "data_offsets": [offset, offset + t.nbytes]}
        offset += t.nbytes
    text = json.dumps(header, sort_keys=True, separators=(",", ":")).encode()
    text += b" " * (-(8 + len(text)) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text)
        for name in sorted(tensors):
            f.write(tensors[name].astype(tensors[name].dtype.newbyteorder("<")).tobytes())


def write_fixture(workload, out_dir):
    torch.manual_seed(workload["seed"])
    rng = np.random.default_rng(workload["seed"])
    tensors = BUILDERS[workload["model"]](workload, rng)
    tensors = {k: np.ascontiguousarray(t) for k, t in tensors.items()}
    metadata = {"workload": json.dumps(workload, sort_keys=True),
                "layout": "cannl: weights [out..., in...]; images NHWC; conv [oc,kh,kw,ic]; "
                          "fc after conv flattened (oh,ow,oc); wte [d,vocab]; wpe [d,seq]",
                "fixture_version": FIXTURE_VERSION}
    path = os.path.join(out_dir, workload["name"] + ".safetensors")
    save_deterministic(tensors, path, metadata)
    return path


def digest_line(path):
    with open(path, "rb") as f:
        data = f.read()
    return f"{hashlib.sha256(data).hexdigest()}  {len(data)}  {os.path.basename(path)}"


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--workloads", default="")
    parser.add_argument("--workload-dir", default=os.path.join(here, "..", "workloads"))
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    wanted = [w for w in args.workloads.split(",") if w]
    names = wanted or sorted(f[:-5] for f in os.listdir(args.workload_dir) if f.endswith(".json"))
    digests_path = os.path.join(args.out, "DIGESTS.txt")
    digests = {}
    if os.path.exists(digests_path):
        for line in open(digests_path):
            parts = line.split()
            if len(parts) == 3:
                digests[parts[2]] = line.rstrip("\n")
    for name in names:
        with open(os.path.join(args.workload_dir, name + ".json")) as f:
            workload = json.load(f)
        path = write_fixture(workload, args.out)
        digests[os.path.basename(path)] = digest_line(path)
        print(digests[os.path.basename(path)], file=sys.stderr)
    with open(digests_path, "w") as f:
        f.write("".join(digests[k] + "\n" for k in sorted(digests)))


if __name__ == "__main__":
    main()
