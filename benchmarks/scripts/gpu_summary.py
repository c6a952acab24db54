#!/usr/bin/env python3
"""The acceptance lines of a GPU check (scripts/gpu_check.sh) as Markdown: the matmul ratios
against cuBLAS (benchmarks/matmul_cublas.py rows) and the GPT-2 124M training step against
PyTorch eager bf16 and torch.compile (orchestrate.py rows of gpt2_124m_train).

  gpu_summary.py --matmul matmul.jsonl --results results.jsonl [--workload gpt2_124m_train]
"""
import argparse
import json
import os


def rows_of(path):
    if not path or not os.path.exists(path):
        return []
    return [json.loads(line) for line in open(path) if line.strip()]


def fmt(x, digits=3):
    return "-" if x is None else f"{x:.{digits}g}"


def matmul_lines(rows):
    if not rows:
        return ["- matmul against cuBLAS: not measured (no rows)."]
    out = []
    for r in rows:
        if r.get("ratio") is None:
            why = r.get("cannl_error") or r.get("torch_error") or "no ratio"
            out.append(f"- matmul {r['n']}^3 {r['precision']}: not measured ({why}).")
            continue
        verdict = "met" if r["meets_goal"] else "NOT met"
        out.append(f"- matmul {r['n']}^3 {r['precision']}: cannl {fmt(r['cannl_tflops'])} TFLOP/s, cuBLAS "
                   f"{fmt(r['torch_tflops'])} TFLOP/s: **{r['ratio']:.2f}x** (goal >= {r['goal']}x: {verdict}).")
    return out


def tokens(r):
    return "-" if r.get("tokens_per_s") is None else f"{r['tokens_per_s']:,.0f}"


def cell(rows, workload, framework, variant):
    return next((r for r in rows if r.get("workload") == workload and r.get("framework") == framework
                 and r.get("variant") == variant and r.get("backend") in ("cuda", "opencl")), None)


def passed(r):
    return r is not None and r.get("status") == "ok" and (r.get("parity") or "").startswith(("PASS", "REF"))


def describe(r):
    if r is None:
        return "no cell"
    if r.get("status") != "ok":
        return f"{r.get('status')}: {r.get('reason', '')}"[:300]
    return f"p50 {fmt(r.get('step_p50_ms'))} ms ({r.get('parity')})"


def training_lines(rows, workload):
    ours = cell(rows, workload, "cannl", "default")
    eager = cell(rows, workload, "pytorch", "eager")
    compiled = cell(rows, workload, "pytorch", "compile")
    out = [f"- {workload}: cannl {describe(ours)}; PyTorch eager bf16 {describe(eager)}; "
           f"torch.compile {describe(compiled)}."]
    if not passed(ours):
        out.append(f"- {workload}: cannl's step is not compared (it did not run or failed the parity gate).")
        return out
    for name, peer, goal in (("PyTorch eager bf16", eager, "acceptance"), ("torch.compile", compiled, "goal beyond")):
        if passed(peer) and peer.get("step_p50_ms"):
            ratio = ours["step_p50_ms"] / peer["step_p50_ms"]
            verdict = "faster" if ratio < 1 else "slower"
            out.append(f"- {workload} against {name} ({goal}): cannl's step is **{ratio:.2f}x** its time ({verdict}); "
                       f"{tokens(ours)} against {tokens(peer)} tokens/s.")
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--matmul", default=None)
    p.add_argument("--results", default=None)
    p.add_argument("--workload", default="gpt2_124m_train")
    args = p.parse_args()
    lines = matmul_lines(rows_of(args.matmul)) + training_lines(rows_of(args.results), args.workload)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
