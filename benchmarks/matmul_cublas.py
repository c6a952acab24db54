#!/usr/bin/env python3
"""cannl's n x n x n matmul on a GPU backend against PyTorch (cuBLAS) on the same device, per
precision, in one Markdown table with TFLOP/s and the ratio cannl / cuBLAS.

cannl: `cannl bench matmul --n N --reps R --backend B --precision P` (the config keys backend and
precision: f32 buffers, the operands rounded to tf32 / bf16 in the routine, f32 accumulation and an
f32 result). PyTorch: x @ w.T on the same device, f32 with TF32 off (f32), f32 tensors with
torch.backends.cuda.matmul.allow_tf32 (tf32), bf16 tensors (bf16: cuBLAS accumulates in f32 and
writes bf16). Both are timed the same way: one untimed run, then the median wall time of R runs,
each followed by a device sync.

Acceptance (issue: GPU speed): f32 >= 0.8x cuBLAS, tf32 and bf16 >= 0.7x.

  matmul_cublas.py --cannl build/cannl --backend cuda --n 4096 --json out.json --markdown out.md
  matmul_cublas.py --cannl build/cannl --backend opencl --device cpu --n 256   # the plumbing, here
"""
import argparse
import json
import re
import subprocess
import sys
import time

GOALS = {"f32": 0.8, "tf32": 0.7, "bf16": 0.7, "f16": 0.7}
NOT_APPLICABLE = "n/a: "  # a peer measurement that does not exist on this device (not a failure)
MEDIAN = re.compile(r"backend (\S+) precision (\S+): median ([0-9.]+) ms of (\d+) runs")


def tflops(n, ms):
    return 2.0 * n ** 3 / (ms * 1e-3) / 1e12 if ms else None


def cannl_ms(args, precision):
    """The median ms `cannl bench matmul` printed, or (None, why)."""
    command = [args.cannl, "bench", "matmul", "--n", str(args.n), "--reps", str(args.reps),
               "--backend", args.backend, "--precision", precision]
    try:
        proc = subprocess.run(command, capture_output=True, text=True, timeout=args.timeout)
    except subprocess.TimeoutExpired:
        return None, f"timed out after {args.timeout:.0f} s"
    match = MEDIAN.search(proc.stdout)
    if proc.returncode != 0 or not match:
        tail = " | ".join((proc.stderr or proc.stdout).strip().splitlines()[-2:])
        return None, f"exit {proc.returncode}: {tail}"[:300]
    if match.group(2) != precision:
        return None, f"ran in precision {match.group(2)}, not {precision}"
    return float(match.group(3)), None


def torch_ms(args, precision):
    """The median ms of the same matmul in PyTorch, or (None, why)."""
    try:
        import torch
    except ImportError as e:
        return None, f"no torch: {e}"
    device = torch.device(args.device)
    if device.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = precision == "tf32"
    elif precision == "tf32":
        return None, NOT_APPLICABLE + "tf32 is a CUDA mode"
    dtype = {"bf16": torch.bfloat16, "f16": torch.float16}.get(precision, torch.float32)
    gen = torch.Generator(device="cpu").manual_seed(1)
    x = torch.randn(args.n, args.n, generator=gen).to(device=device, dtype=dtype)
    w = torch.randn(args.n, args.n, generator=gen).to(device=device, dtype=dtype)
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    wt = w.t()

    def run():
        x @ wt
        sync()

    run()
    times = []
    for _ in range(args.reps):
        start = time.perf_counter()
        run()
        times.append((time.perf_counter() - start) * 1e3)
    times.sort()
    torch.backends.cuda.matmul.allow_tf32 = False
    return times[len(times) // 2], None


def torch_ms_or_why(args, precision):
    """torch_ms, with a failure of the peer (no driver, out of memory) as its reason."""
    try:
        return torch_ms(args, precision)
    except Exception as e:  # the table keeps cannl's row and says why the peer has none
        return None, f"{type(e).__name__}: {e}"[:300]


def row_for(args, precision):
    ours, our_error = cannl_ms(args, precision)
    peer, peer_error = torch_ms_or_why(args, precision)
    ratio = tflops(args.n, ours) / tflops(args.n, peer) if ours and peer else None
    return {"precision": precision, "n": args.n, "backend": args.backend, "device": args.device,
            "cannl_ms": ours, "cannl_tflops": tflops(args.n, ours), "cannl_error": our_error,
            "torch_ms": peer, "torch_tflops": tflops(args.n, peer), "torch_error": peer_error,
            "ratio": ratio, "goal": GOALS.get(precision),
            "meets_goal": None if ratio is None else ratio >= GOALS.get(precision, 0)}


def fmt(x, digits=3):
    return "-" if x is None else f"{x:.{digits}g}"


def markdown(rows, versions):
    n = rows[0]["n"] if rows else 0
    out = [f"| precision ({n}^3) | cannl {rows[0]['backend'] if rows else ''} ms | cannl TFLOP/s | "
           f"PyTorch (cuBLAS) ms | cuBLAS TFLOP/s | cannl / cuBLAS | goal |",
           "|---|---|---|---|---|---|---|"]
    for r in rows:
        verdict = "-" if r["meets_goal"] is None else ("met" if r["meets_goal"] else "not met")
        ours = fmt(r["cannl_ms"]) if r["cannl_ms"] else f"FAIL: {r['cannl_error']}"
        peer = fmt(r["torch_ms"]) if r["torch_ms"] else (
            r["torch_error"] if r["torch_error"].startswith(NOT_APPLICABLE) else f"FAIL: {r['torch_error']}")
        out.append(f"| {r['precision']} | {ours} | {fmt(r['cannl_tflops'])} | {peer} | {fmt(r['torch_tflops'])} | "
                   f"{fmt(r['ratio'], 2)}{'x' if r['ratio'] else ''} | >= {r['goal']}x: {verdict} |")
    out += ["", f"Median wall time of the runs, each followed by a device sync ({versions}). cannl's "
            "tf32 / bf16 routines round their f32 operands in the routine (counted in its time) and "
            "write f32; PyTorch's bf16 matmul reads bf16 tensors and writes bf16."]
    return "\n".join(out) + "\n"


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cannl", required=True, help="the cannl executable")
    p.add_argument("--backend", default="cuda", help="cannl's backend (cuda, opencl, cc)")
    p.add_argument("--device", default="cuda", help="PyTorch's device")
    p.add_argument("--n", type=int, default=4096)
    p.add_argument("--reps", type=int, default=20)
    p.add_argument("--precisions", default="f32,tf32,bf16")
    p.add_argument("--timeout", type=float, default=120, help="seconds per cannl run")
    p.add_argument("--json", default=None, help="write the rows here (JSON lines)")
    p.add_argument("--markdown", default=None, help="write the table here")
    args = p.parse_args()
    rows = []
    for precision in [q for q in args.precisions.split(",") if q]:
        rows.append(row_for(args, precision))
        print(f"[matmul] {precision}: cannl {fmt(rows[-1]['cannl_ms'])} ms, torch {fmt(rows[-1]['torch_ms'])} ms, "
              f"ratio {fmt(rows[-1]['ratio'], 2)}", file=sys.stderr, flush=True)
    try:
        import torch
        versions = f"torch {torch.__version__}" + (f", {torch.cuda.get_device_name()}" if torch.cuda.is_available() else "")
    except Exception:  # no torch, or a CUDA that does not initialize
        versions = "no usable torch"
    table = markdown(rows, versions)
    if args.json:
        with open(args.json, "w") as f:
            f.writelines(json.dumps(r, sort_keys=True) + "\n" for r in rows)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(table)
    print(table)
    ok = lambda r: r["cannl_ms"] and (r["torch_ms"] or (r["torch_error"] or "").startswith(NOT_APPLICABLE))
    return 0 if rows and all(ok(r) for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
