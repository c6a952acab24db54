#!/usr/bin/env python3
"""PyTorch runner: eager or torch.compile, on the CPU (or cuda / mps when present).

Models follow the fixture layout (see scripts/gen_fixtures.py): images arrive NHWC and are
transposed once to NCHW; conv kernels [oc,kh,kw,ic] become [oc,ic,kh,kw]; the conv features are
flattened in (oh, ow, oc) order; wte [d, vocab] becomes [vocab, d]. The step is forward + loss
(+ backward + the update: plain SGD p -= lr * grad, or torch.optim.AdamW when the workload's
"optimizer" is "adamw", with weight decay on the parameters of at least "weight_decay_min_rank"
axes). A workload whose "precision" is bf16 or f16 runs its forward and loss under
torch.autocast of that dtype (f32 master weights, as nanoGPT trains); tf32 allows TF32 matmuls.
"peer_attention": "sdpa" uses F.scaled_dot_product_attention (flash attention on a GPU) in place
of the explicit softmax(q k^T) v; "loss": "cross_entropy" uses F.cross_entropy in place of the
one-hot product. Usage: run.py --fixture F [--compile] [--device cpu]
"""
import argparse
import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import harness  # noqa: E402

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402


def ce_loss(logits, labels):
    """Mean over rows of -log_softmax . one_hot."""
    one_hot = F.one_hot(labels.long(), logits.shape[-1]).to(logits.dtype)
    return -(F.log_softmax(logits, dim=-1) * one_hot).sum(-1).mean()


def fused_ce_loss(logits, labels):
    """The same mean cross-entropy through PyTorch's fused kernel (no one-hot tensor)."""
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), labels.reshape(-1).long())


def loss_of_workload(w):
    """F.cross_entropy when the workload asks for the fused loss ("loss": "cross_entropy"); the
    one-hot product of the other workloads' loss names otherwise (the same mean cross-entropy)."""
    return fused_ce_loss if w.get("loss") == "cross_entropy" else ce_loss
AUTOCAST = {"bf16": torch.bfloat16, "f16": torch.float16}


def dense_relu_chain(x, p, prefix, n):
    """n linear layers {prefix}0 .. {prefix}{n-1} with ReLU between them (none after the last)."""
    for i in range(n):
        x = F.linear(x, p[f"{prefix}{i}.w"], p[f"{prefix}{i}.b"])
        if i + 1 < n:
            x = F.relu(x)
    return x


def mlp_model(w, t, p):
    return lambda x: dense_relu_chain(x, p, "l", len(w["dims"]) - 1)


def conv_model(w, t, p):
    def forward(x):  # x: NCHW
        for i, stride in enumerate(w["strides"]):
            x = F.conv2d(x, p[f"conv{i}.w"], p[f"conv{i}.b"], stride=stride)
            x = F.max_pool2d(F.relu(x), w["pool"])
        x = x.permute(0, 2, 3, 1).reshape(x.shape[0], -1)  # (oh, ow, oc)
        return dense_relu_chain(x, p, "fc", len(w["fc"]) + 1)
    return forward


def gpt_model(w, t, p):
    d, heads, seq = w["d_model"], w["n_head"], w["seq"]
    dk = d // heads
    causal = torch.tril(torch.ones(seq, seq, dtype=torch.bool, device=p["wte"].device))

    sdpa = w.get("peer_attention", "explicit") == "sdpa"

    def attention(x, pre):
        b = x.shape[0]
        split = lambda name: F.linear(x, p[pre + name + ".w"], p[pre + name + ".b"]).view(
            b, seq, heads, dk).transpose(1, 2)
        q, k, v = split("q"), split("k"), split("v")
        if sdpa:
            mixed = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(b, seq, d)
            return F.linear(mixed, p[pre + "o.w"], p[pre + "o.b"])
        scores = (q @ k.transpose(-1, -2)) * (1.0 / math.sqrt(dk))
        scores = scores.masked_fill(~causal, -1e9)
        mixed = (scores.softmax(-1) @ v).transpose(1, 2).reshape(b, seq, d)
        return F.linear(mixed, p[pre + "o.w"], p[pre + "o.b"])

    def ln(x, pre):
        return F.layer_norm(x, (d,), p[pre + ".gamma"], p[pre + ".beta"], w["ln_eps"])

    def forward(ids):
        x = p["wte"].t()[ids.long()] + p["wpe"].t()[:seq]
        for i in range(w["n_layer"]):
            pre = f"h{i}."
            x = x + attention(ln(x, pre + "ln1"), pre + "attn.")
            h = F.gelu(F.linear(ln(x, pre + "ln2"), p[pre + "fc.w"], p[pre + "fc.b"]), approximate="tanh")
            x = x + F.linear(h, p[pre + "proj.w"], p[pre + "proj.b"])
        return ln(x, "ln_f") @ p["wte"]  # tied lm_head: wte is [d, vocab]
    return forward


def to_torch_layout(name, value):
    """Conv kernels [oc,kh,kw,ic] -> [oc,ic,kh,kw]; everything else keeps the fixture layout."""
    if name.startswith("conv") and name.endswith(".w"):
        return value.transpose(0, 3, 1, 2).copy()
    return value


MODELS = {"mlp": mlp_model, "conv": conv_model, "gpt": gpt_model}
DATA_KEYS = {"mlp": ("x", "labels"), "conv": ("x", "labels"), "gpt": ("ids", "targets")}


def adamw(w, params, dev):
    """torch.optim.AdamW (decoupled decay, bias correction) with nanoGPT's two groups: weight decay
    on the parameters of at least weight_decay_min_rank axes, none on the others. Fused on a GPU
    (as nanoGPT), the default foreach implementation on the CPU: the same arithmetic."""
    min_rank = int(w.get("weight_decay_min_rank", 0))
    groups = [{"params": [p for p in params if p.dim() >= min_rank], "weight_decay": w.get("weight_decay", 0.01)},
              {"params": [p for p in params if p.dim() < min_rank], "weight_decay": 0.0}]
    groups = [g for g in groups if g["params"]]
    return torch.optim.AdamW(groups, lr=w["lr"], betas=(w.get("beta1", 0.9), w.get("beta2", 0.999)),
                             eps=w.get("eps", 1e-8), fused=dev.type == "cuda" or None)


def make_run(args):
    def run(w, t):
        torch.manual_seed(w["seed"])
        precision = w.get("precision", "f32")
        torch.set_float32_matmul_precision("high" if precision == "tf32" else "highest")
        torch.backends.cudnn.allow_tf32 = False  # f32 convolutions, as every other cell computes
        dev = torch.device(args.device)
        inputs_key, labels_key = DATA_KEYS[w["model"]]
        params = {k: torch.tensor(to_torch_layout(k, v), device=dev,
                                  requires_grad=w["mode"] == "train")
                  for k, v in t.items() if k not in (inputs_key, labels_key)}
        xs = torch.tensor(t[inputs_key], device=dev)
        if w["model"] == "conv":
            xs = xs.permute(0, 1, 4, 2, 3).contiguous()
        ys = torch.tensor(t[labels_key], device=dev).long()
        forward = MODELS[w["model"]](w, t, params)
        loss_fn = loss_of_workload(w)
        if precision in AUTOCAST:
            def loss_of(x, y):
                with torch.autocast(device_type=dev.type, dtype=AUTOCAST[precision]):
                    return loss_fn(forward(x), y)
        else:
            loss_of = lambda x, y: loss_fn(forward(x), y)
        state = {}

        def build():
            state["loss"] = torch.compile(loss_of, mode=args.compile_mode) if args.compile else loss_of

        plist = list(params.values())
        optimizer = adamw(w, plist, dev) if w.get("optimizer", "sgd") == "adamw" else None

        def step(k):
            b = k % w["n_batches"]
            if w["mode"] != "train":
                with torch.no_grad():
                    return state["loss"](xs[b], ys[b])
            loss = state["loss"](xs[b], ys[b])
            if optimizer is not None:
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                optimizer.step()
                return loss.detach()
            grads = torch.autograd.grad(loss, plist)
            with torch.no_grad():
                torch._foreach_add_(plist, grads, alpha=-w["lr"])
            return loss.detach()

        def sync(loss):
            value = loss.item()  # .item() waits for the device
            return value

        return harness.measure(w, args, build, step, sync)
    return run


def main():
    parser = argparse.ArgumentParser(description="PyTorch benchmark runner")
    harness.add_common_args(parser)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--compile", action="store_true")
    parser.add_argument("--compile-mode", default=None)
    args = parser.parse_args()
    variant = "compile" + (f"-{args.compile_mode}" if args.compile_mode else "") if args.compile else "eager"
    versions = {"torch": torch.__version__, "threads": torch.get_num_threads()}
    return harness.run_cell(args, "pytorch", args.device, variant, versions, make_run(args))


if __name__ == "__main__":
    sys.exit(main())
