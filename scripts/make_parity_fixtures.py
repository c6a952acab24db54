#!/usr/bin/env python3
"""Writes the PyTorch parity fixtures of the nn blocks to tests/parity/<case>.safetensors.

For every block: fixed inputs and parameter values, the forward output `out`, fixed random
weights `wts` of out's shape, and the gradients of sum(out * wts) with respect to the inputs and
parameters (`grad_<name>`), all computed by PyTorch in float64: the reference the f32 cannl
results are compared to by tests/nn/parity_test.cpp. Some cases add tensors of their own (the
running statistics of BatchNorm after the step, `out_eval` of the module in eval mode, optimizer
trajectories); the case's function says which.

Format: safetensors (read by tests/nn/parity_util.h), every tensor F64, row-major; the metadata
key "note" names the script, the torch version and the case. Inputs, parameters and weights are
float32 values (held in float64) so that cannl, which reads them in f32, sees the very inputs
PyTorch computed with. Layouts: Linear weights are PyTorch's [out, in],
embeddings [vocab, dim]. Images are stored channels-last (NHWC) and convolution kernels as
[out_channels, kh, kw, in_channels], the memory order of cannl's kernels (`kh, kw, c -> f`): the
script permutes PyTorch's NCHW tensors (and their gradients) before writing them.

Usage: python3 scripts/make_parity_fixtures.py [output_dir]   (default: tests/parity)
Needs torch and safetensors (pip).
"""
import math
import os
import sys
import zlib

import torch
import torch.nn.functional as F
from safetensors.torch import save_file

torch.set_default_dtype(torch.float64)


def f32_exact(t):
    """t rounded to float32 values (kept in float64): cannl reads the inputs in f32, so inputs
    that f32 holds exactly keep input rounding out of the comparison."""
    return t.to(torch.float32).to(torch.float64)


def uniform(gen, *shape, low=-1.0, high=1.0):
    return f32_exact(torch.rand(tuple(shape), generator=gen) * (high - low) + low)


def rand(gen, *shape, low=-1.0, high=1.0):
    return uniform(gen, *shape, low=low, high=high).requires_grad_(True)


def write_fixture(path, tensors, note):
    data = {name: t.detach().to(torch.float64).contiguous() for name, t in tensors.items()}
    # One metadata key: safetensors writes several in a varying order, and regenerating
    # unchanged fixtures should give identical files.
    save_file(data, path, metadata={"note": "scripts/make_parity_fixtures.py, torch %s: %s"
                                            % (torch.__version__, note)})


def finish(out, gen, inputs, extra=None):
    """Weights, the weighted sum and every gradient, as one dict of tensors."""
    wts = uniform(gen, *out.shape)
    (out * wts).sum().backward()
    result = dict(inputs)
    result["out"] = out
    result["wts"] = wts
    for name, t in inputs.items():
        if t.requires_grad:
            result["grad_" + name] = t.grad
    result.update(extra or {})
    return result


def nhwc(t):
    return t.permute(0, 2, 3, 1)


def kernel_layout(w):
    """PyTorch conv weight [f, c, kh, kw] -> cannl's [f, kh, kw, c]."""
    return w.permute(0, 2, 3, 1)


def image_case(gen, inputs, forward, layouts):
    """Runs `forward` on NCHW / PyTorch-layout `inputs`; returns the finished tensors with every
    tensor (and gradient) listed in `layouts` permuted by its layout function."""
    out = forward(inputs)
    result = finish(nhwc(out), gen, inputs)
    for name, to_layout in layouts.items():
        result[name] = to_layout(result[name])
        if "grad_" + name in result:
            result["grad_" + name] = to_layout(result["grad_" + name])
    return result


# ---- layer norm, softmax, losses, embeddings, mlp, attention -------------------------------------

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


def causal_attention(x, p, heads, d_k, prefix="", rope_base=None):
    batch, seq, _ = x.shape
    def split(n):
        y = F.linear(x, p[prefix + "w" + n], p[prefix + "b" + n])
        return y.reshape(batch, seq, heads, d_k)
    q, k, v = split("q"), split("k"), split("v")
    if rope_base is not None:
        q, k = rotary(q, rope_base), rotary(k, rope_base)
    q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
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
    # d_model 8: over 4 features LayerNorm rows are so ill-conditioned that PyTorch's own f32
    # gradients of a random instance are off by ~1e-5, the parity bound.
    d_model, heads, d_ff = 8, 2, 12
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


# ---- normalization with running statistics -------------------------------------------------------

def batch_norm(gen, module, x, x_eval, to_layout):
    """One training forward/backward of `module` (momentum 0.1, eps 1e-5) on x, then the eval-mode
    output on x_eval. Adds running_mean / running_var after the step and out_eval."""
    with torch.no_grad():
        module.weight.copy_(uniform(gen, module.num_features, low=0.5, high=1.5))
        module.bias.copy_(uniform(gen, module.num_features))
    gamma, beta = module.weight, module.bias
    module.train()
    out = module(x)
    result = finish(to_layout(out), gen, {"x": x, "gamma": gamma, "beta": beta})
    module.eval()
    with torch.no_grad():
        out_eval = module(x_eval)
    result.update({"running_mean": module.running_mean, "running_var": module.running_var,
                   "x_eval": to_layout(x_eval), "out_eval": to_layout(out_eval)})
    result["x"] = to_layout(result["x"])
    result["grad_x"] = to_layout(result["grad_x"])
    return result


def batch_norm1d(gen):
    x = rand(gen, 6, 4, low=-2, high=3)
    x_eval = uniform(gen, 3, 4, low=-2, high=2)
    return batch_norm(gen, torch.nn.BatchNorm1d(4, eps=1e-5, momentum=0.1), x, x_eval, lambda t: t)


def batch_norm2d(gen):
    x = rand(gen, 2, 3, 3, 4, low=-2, high=3)  # N C H W
    x_eval = uniform(gen, 1, 3, 3, 4, low=-2, high=2)
    return batch_norm(gen, torch.nn.BatchNorm2d(3, eps=1e-5, momentum=0.1), x, x_eval, nhwc)


# ---- convolutions and pooling --------------------------------------------------------------------

def conv2d_case(gen, x_shape, out_channels, kernel, stride, padding, dilation):
    x = rand(gen, *x_shape)
    w = rand(gen, out_channels, x_shape[1], kernel, kernel, low=-0.5, high=0.5)
    b = rand(gen, out_channels, low=-0.5, high=0.5)
    return image_case(gen, {"x": x, "w": w, "b": b},
                      lambda p: F.conv2d(p["x"], p["w"], p["b"], stride=stride, padding=padding,
                                         dilation=dilation),
                      {"x": nhwc, "w": kernel_layout})


def conv2d(gen):
    return conv2d_case(gen, (2, 3, 6, 6), 4, 3, stride=2, padding=1, dilation=1)


def conv2d_dilated(gen):
    return conv2d_case(gen, (1, 2, 7, 6), 3, 3, stride=1, padding=0, dilation=2)


def depthwise_separable_conv(gen):
    channels, out_channels = 3, 4
    x = rand(gen, 2, channels, 5, 5)
    depthwise = rand(gen, channels, 1, 3, 3, low=-0.5, high=0.5)
    pointwise = rand(gen, out_channels, channels, 1, 1, low=-0.5, high=0.5)
    b = rand(gen, out_channels, low=-0.5, high=0.5)
    def forward(p):
        h = F.conv2d(p["x"], p["depthwise"], stride=1, padding=1, groups=channels)
        return F.conv2d(h, p["pointwise"], p["b"])
    return image_case(gen, {"x": x, "depthwise": depthwise, "pointwise": pointwise, "b": b}, forward,
                      {"x": nhwc, "depthwise": lambda t: t.reshape(channels, 3, 3),
                       "pointwise": lambda t: t.reshape(out_channels, channels)})


def max_pool2d(gen):
    x = rand(gen, 2, 3, 4, 6, low=-2, high=2)
    return image_case(gen, {"x": x}, lambda p: F.max_pool2d(p["x"], 2, stride=2), {"x": nhwc})


def avg_pool2d(gen):
    x = rand(gen, 1, 2, 5, 5, low=-2, high=2)
    return image_case(gen, {"x": x}, lambda p: F.avg_pool2d(p["x"], 3, stride=2), {"x": nhwc})


# ---- positions -----------------------------------------------------------------------------------

def rotary(x, base):
    """GPT-NeoX / LLaMA rotary embedding ("rotate half", Hugging Face's apply_rotary_pos_emb) of
    x [batch, seq, heads, d] at positions 0..seq-1."""
    seq, d = x.shape[1], x.shape[-1]
    inv_freq = 1.0 / (base ** (torch.arange(0, d, 2, dtype=torch.float64) / d))
    freqs = torch.outer(torch.arange(seq, dtype=torch.float64), inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    cos, sin = emb.cos()[None, :, None, :], emb.sin()[None, :, None, :]
    x1, x2 = x[..., : d // 2], x[..., d // 2:]
    return x * cos + torch.cat((-x2, x1), dim=-1) * sin


def rope(gen):
    x = rand(gen, 2, 5, 2, 6, low=-2, high=2)
    return finish(rotary(x, 10000.0), gen, {"x": x})


def attention_rope(gen):
    x = rand(gen, 2, 4, 6)
    p = attention_params(gen, 6, 2, 4)
    return finish(causal_attention(x, p, 2, 4, rope_base=10000.0), gen, {"x": x, **p})


def sinusoidal_table(seq, d):
    """Vaswani et al.: pe[pos, 2i] = sin(pos / 10000^(2i/d)), pe[pos, 2i+1] = cos(same angle)."""
    pos = torch.arange(seq, dtype=torch.float64)[:, None]
    div = torch.exp(torch.arange(0, d, 2, dtype=torch.float64) * (-math.log(10000.0) / d))
    pe = torch.zeros(seq, d)
    pe[:, 0::2] = torch.sin(pos * div)
    pe[:, 1::2] = torch.cos(pos * div)
    return pe


def sinusoidal_positions(gen):
    x = rand(gen, 2, 5, 6)
    return finish(x + sinusoidal_table(5, 6), gen, {"x": x})


def learned_positions(gen):
    x, table = rand(gen, 2, 4, 5), rand(gen, 7, 5)
    return finish(x + table[:4], gen, {"x": x, "table": table})


# ---- optimizers ----------------------------------------------------------------------------------

def optimizer_steps(gen, make_optimizer, hyper, steps=5):
    """`steps` full-batch steps of a linear least-squares model: loss = sum((x w^T + b - y)^2) / 4.
    Records the loss before each step and w, b after it."""
    x, y = uniform(gen, 4, 3), uniform(gen, 4, 2)
    w, b = rand(gen, 2, 3), rand(gen, 2)
    w0, b0 = w.detach().clone(), b.detach().clone()
    opt = make_optimizer([w, b])
    losses, ws, bs = [], [], []
    for _ in range(steps):
        opt.zero_grad()
        loss = ((F.linear(x, w, b) - y) ** 2).sum() / 4
        loss.backward()
        opt.step()
        losses.append(loss.detach().clone())
        ws.append(w.detach().clone())
        bs.append(b.detach().clone())
    return {"x": x, "y": y, "w": w0, "b": b0, "hyper": torch.tensor(hyper),
            "losses": torch.stack(losses), "w_steps": torch.stack(ws), "b_steps": torch.stack(bs)}


def adam_steps(gen):
    lr, b1, b2, eps, wd = 0.05, 0.9, 0.999, 1e-8, 0.05
    return optimizer_steps(gen, lambda ps: torch.optim.Adam(ps, lr=lr, betas=(b1, b2), eps=eps,
                                                            weight_decay=wd), [lr, b1, b2, eps, wd])


def adamw_steps(gen):
    lr, b1, b2, eps, wd = 0.05, 0.8, 0.99, 1e-8, 0.1
    return optimizer_steps(gen, lambda ps: torch.optim.AdamW(ps, lr=lr, betas=(b1, b2), eps=eps,
                                                             weight_decay=wd), [lr, b1, b2, eps, wd])


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
    "batch_norm1d": (batch_norm1d, "nn.BatchNorm1d(4), one train step, then eval on x_eval"),
    "batch_norm2d": (batch_norm2d, "nn.BatchNorm2d(3), one train step, then eval on x_eval; NHWC"),
    "conv2d": (conv2d, "F.conv2d 3->4 channels, kernel 3, stride 2, padding 1, bias; NHWC"),
    "conv2d_dilated": (conv2d_dilated, "F.conv2d 2->3 channels, kernel 3, dilation 2, no padding; NHWC"),
    "depthwise_separable_conv": (depthwise_separable_conv,
                                 "depthwise 3x3 (groups=3, padding 1, no bias), pointwise 1x1 3->4 + bias; NHWC"),
    "max_pool2d": (max_pool2d, "F.max_pool2d(window 2, stride 2); NHWC"),
    "avg_pool2d": (avg_pool2d, "F.avg_pool2d(window 3, stride 2); NHWC"),
    "rope": (rope, "rotary embedding, rotate-half (GPT-NeoX / LLaMA), base 10000, x [b, s, h, d]"),
    "attention_rope": (attention_rope, "causal attention, 2 heads, d_k 4, rotate-half RoPE on q and k"),
    "sinusoidal_positions": (sinusoidal_positions, "x + sinusoidal table (Vaswani), seq 5, d 6"),
    "learned_positions": (learned_positions, "x + table[:4], table [max_len 7, d 5]"),
    "adam_steps": (adam_steps, "5 steps of torch.optim.Adam (L2 weight decay); hyper = lr, b1, b2, eps, wd"),
    "adamw_steps": (adamw_steps, "5 steps of torch.optim.AdamW; hyper = lr, b1, b2, eps, wd"),
}


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "tests", "parity")
    os.makedirs(out_dir, exist_ok=True)
    for name, (make, note) in sorted(CASES.items()):
        # A seed per case name: adding a case leaves the others' values unchanged.
        gen = torch.Generator().manual_seed(zlib.crc32(name.encode()))
        write_fixture(os.path.join(out_dir, name + ".safetensors"), make(gen), note)
        print("wrote", name)


if __name__ == "__main__":
    main()
