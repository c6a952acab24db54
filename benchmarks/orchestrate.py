#!/usr/bin/env python3
"""Runs the benchmark cells, applies the parity gate and writes results.jsonl, report.md and a
bar chart (semantics-backend.md 10).

Cells per workload: PyTorch eager (the parity reference) and torch.compile, tinygrad TinyJit
default and BEAM=N, cannl on the C backend (and the reference interpreter where it fits the cap).
Every cell runs in its own process under a wall-clock cap; a cell that fails, times out or is not
applicable becomes a row with its reason. Parity gate: the max relative difference of a cell's
parity-step losses against PyTorch eager on the CPU must be <= 2e-3 (f32; a workload's
"parity_tolerance" replaces it, e.g. for bf16 mixed precision), and its loss must move (>= 1e-6
relative over the window, else "loss stationary"); failing cells are flagged and their timings not
compared. A workload with "cpu_cells": false (gpt2_124m_train) runs only its GPU cells unless
--force-cpu-cells.
"""
import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOLERANCE = 2e-3
GPT_CAP_FACTOR = 4  # the gpt cells' cap is this multiple of the others' (unless --cell-timeout)
MIN_MOVEMENT = 1e-6
ALL_WORKLOADS = ["mlp_small", "mlp_wide", "lenet", "cifar_conv", "gpt2_mini", "gpt2_mini_train",
                 "gpt2_tiny_adamw_bf16", "gpt2_124m_train"]
PYTORCH_GPU_VARIANTS = ["eager", "compile", "compile-reduce-overhead"]


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--workloads", default=",".join(ALL_WORKLOADS))
    p.add_argument("--quick", action="store_true",
                   help="fewer warmup/timed steps (parity steps unchanged), shorter cell cap, "
                        "no BEAM search on the gpt workloads")
    p.add_argument("--fixtures", required=True, help="fixture directory (generated when missing)")
    p.add_argument("--results", required=True, help="output directory")
    p.add_argument("--cannl-bin", required=True, help="the bench_cannl executable")
    p.add_argument("--peer-python", default=sys.executable, help="python with torch and tinygrad")
    p.add_argument("--cell-timeout", type=float, default=None, help="seconds per cell (default 1800, quick 400; gpt cells get 4x unless given)")
    p.add_argument("--budget-s", type=float, default=None,
                   help="once the run has taken this long, the remaining cells are skipped (flagged)")
    p.add_argument("--update", action="store_true",
                   help="keep the rows of --results/results.jsonl for the cells not run this time")
    p.add_argument("--threads", type=int, default=0,
                   help="threads for every cell (OMP_NUM_THREADS, MKL_NUM_THREADS, CANNL_CC_THREADS); "
                        "0: each framework's default")
    p.add_argument("--beam", type=int, default=2)
    p.add_argument("--no-tune", action="store_true", help="skip the cannl tuned cells")
    p.add_argument("--only", default="", help="comma list of frameworks (pytorch,tinygrad,cannl), framework:variant or framework:backend:variant cells to run")
    p.add_argument("--no-torch-compile", action="store_true")
    p.add_argument("--gpu", default="", choices=["", "cuda", "opencl", "cuda-cpu"],
                   help="also run cannl on this GPU backend, and PyTorch on cuda (eager, compile, "
                        "compile reduce-overhead) when it is cuda (cuda-cpu: the CUDA text run on "
                        "the CPU, for rehearsals)")
    p.add_argument("--gpu-only", action="store_true",
                   help="with --gpu: only the GPU cells (the parity reference is PyTorch cuda eager)")
    p.add_argument("--force-cpu-cells", action="store_true",
                   help="run the CPU cells of workloads that leave them out (\"cpu_cells\": false)")
    p.add_argument("--commit", default="", help="the cannl commit named in the report header")
    args = p.parse_args()
    # Cells run in the results' parent folder (build_files/ and caches land there): absolute paths.
    args.fixtures, args.results = os.path.abspath(args.fixtures), os.path.abspath(args.results)
    args.cannl_bin = os.path.abspath(args.cannl_bin)
    if os.sep in args.peer_python:
        args.peer_python = os.path.abspath(args.peer_python)
    return args


def quick_steps(workload):
    """--quick: a tenth of the warmup and timed steps (at least 1 and 3)."""
    return max(1, workload["warmup_steps"] // 10), max(3, workload["timed_steps"] // 10)


class Cell:
    def __init__(self, framework, backend, variant, command=None, skip_reason=None):
        self.framework, self.backend, self.variant = framework, backend, variant
        self.command, self.skip_reason = command, skip_reason


def cap_factor(workload, args):
    """The cell cap's multiple for this workload: its "cell_cap_factor", else 4 for the gpt
    workloads unless --cell-timeout is given."""
    if "cell_cap_factor" in workload:
        return workload["cell_cap_factor"]
    return GPT_CAP_FACTOR if workload["model"] == "gpt" and not args.cell_timeout else 1


def tolerance_of(workload):
    """The parity gate's max relative loss difference: the workload's own, else the f32 gate."""
    return workload.get("parity_tolerance", TOLERANCE)


def cpu_skip_reason(workload, args):
    """Why the workload's CPU cells do not run (None: they run)."""
    if workload.get("cpu_cells", True) or args.force_cpu_cells:
        return None
    return ("not run: a GPU-only workload (a training step of this size takes minutes on a few CPU "
            "cores); --force-cpu-cells runs it")


def tinygrad_skip_reason(workload):
    """The tinygrad runner trains with plain SGD in f32 only."""
    if workload.get("optimizer", "sgd") != "sgd" or workload.get("precision", "f32") != "f32":
        return "not run: the tinygrad runner has plain SGD in f32 only (this workload: " \
               f"{workload.get('optimizer', 'sgd')}, {workload.get('precision', 'f32')})"
    return None


def gpu_cells(args, workload, torch_run, cannl_run):
    """cannl on the --gpu backend, and PyTorch on the same device when it is cuda (the variants the
    workload's "pytorch_gpu_variants" lists, a comma list; all three by default). Workload fields
    are flat (numbers, strings, arrays of numbers) so that bench_cannl's reader takes them."""
    if not args.gpu:
        return []
    # The profiled twin times every kernel with device events (which costs the step a little), so
    # the default cell stays unprofiled.
    cells = [Cell("cannl", args.gpu, "default", cannl_run + ["--backend", args.gpu]),
             Cell("cannl", args.gpu, "profiled", cannl_run + ["--backend", args.gpu, "--profile", "--variant", "profiled"])]
    if args.gpu == "cuda":
        cuda = torch_run + ["--device", "cuda"]
        commands = {"eager": cuda, "compile": cuda + ["--compile"],
                    "compile-reduce-overhead": cuda + ["--compile", "--compile-mode", "reduce-overhead"]}
        wanted = workload.get("pytorch_gpu_variants", ",".join(PYTORCH_GPU_VARIANTS)).split(",")
        cells = [Cell("pytorch", "cuda", v, commands[v]) for v in PYTORCH_GPU_VARIANTS if v in wanted] + cells
    return cells


def cells_for(workload, args, fixture, step_args):
    py = [args.peer_python]
    torch_run = py + [os.path.join(HERE, "runners", "pytorch", "run.py"), "--fixture", fixture] + step_args
    tg_run = py + [os.path.join(HERE, "runners", "tinygrad", "run.py"), "--fixture", fixture] + step_args
    cannl_run = [args.cannl_bin, "--fixture", fixture] + step_args
    gpt = workload["model"] == "gpt"
    cells = [Cell("pytorch", "cpu", "eager", torch_run),
             Cell("pytorch", "cpu", "compile", torch_run + ["--compile"]) if not args.no_torch_compile
             else Cell("pytorch", "cpu", "compile", skip_reason="disabled by --no-torch-compile"),
             Cell("tinygrad", "CPU", "jit", tg_run),
             Cell("tinygrad", "CPU", f"jit-beam{args.beam}", tg_run + ["--beam", str(args.beam)])
             if not (args.quick and gpt) else
             Cell("tinygrad", "CPU", f"jit-beam{args.beam}",
                  skip_reason="not run in --quick: BEAM search over the gpt kernels exceeds the quick cap"),
             # An empty build_files/ folder: compile_s is a cold compile (warm_compile_s beside it).
             Cell("cannl", "cc", "default", cannl_run + ["--profile", "--fresh-build-files"]),
             # The tuner's pick (its search counts in compile_s; a second run replays the
             # schedule cache and searches 0 s).
             Cell("cannl", "cc", "tuned", cannl_run + ["--tune", "--variant", "tuned"])
             if not args.no_tune else Cell("cannl", "cc", "tuned", skip_reason="disabled by --no-tune")]
    if workload["name"] == "mlp_small":
        cells.append(Cell("cannl", "interpreter", "default", cannl_run + ["--backend", "interpreter"]))
    else:
        cells.append(Cell("cannl", "interpreter", "default",
                          skip_reason="not run: the reference interpreter (a tree walker, the numeric "
                                      "oracle) is orders of magnitude slower than the cell cap allows"))
    tinygrad_skip = tinygrad_skip_reason(workload)
    if tinygrad_skip:
        cells = [Cell(c.framework, c.backend, c.variant, skip_reason=tinygrad_skip)
                 if c.framework == "tinygrad" else c for c in cells]
    gpu_backends = [b for b in workload.get("gpu_backends", "").split(",") if b]  # a comma list
    if args.gpu and gpu_backends and args.gpu not in gpu_backends and not args.force_cpu_cells:
        skip = (f"not run: this workload's GPU cells run on {', '.join(gpu_backends)} only (OpenCL here is "
                "PoCL, a CPU); --force-cpu-cells runs it")
        gpu = [Cell(c.framework, c.backend, c.variant, skip_reason=skip) for c in gpu_cells(args, workload, torch_run, cannl_run)]
    else:
        gpu = gpu_cells(args, workload, torch_run, cannl_run)
    cpu_skip = cpu_skip_reason(workload, args)
    if cpu_skip:
        cells = [Cell(c.framework, c.backend, c.variant, skip_reason=c.skip_reason or cpu_skip) for c in cells]
    if args.gpu_only:
        cells = []
    cells += gpu
    only = [f for f in args.only.split(",") if f]
    return [c for c in cells if not only or c.framework in only or f"{c.framework}:{c.variant}" in only
            or f"{c.framework}:{c.backend}:{c.variant}" in only]


def cell_env(threads):
    """The environment of a cell: every framework's thread count pinned when `threads` > 0."""
    env = dict(os.environ)
    if threads > 0:
        for key in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "CANNL_CC_THREADS"):
            env[key] = str(threads)
    return env


PROFILE_HEADER = "bench_cannl: top kernels"


def kernel_profile(stderr, top=5):
    """The first `top` kernel lines bench_cannl --profile printed (timed steps only), or []."""
    lines = stderr.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith(PROFILE_HEADER)), None)
    if start is None:
        return []
    return [line.strip() for line in lines[start + 1:start + 1 + top] if line.strip()]


def run_cell(cell, workload, timeout, cwd=None, threads=0):
    base = {"workload": workload["name"], "framework": cell.framework, "backend": cell.backend,
            "variant": cell.variant}
    if threads > 0:
        base["threads"] = threads
    if cell.skip_reason:
        return dict(base, status="skipped", reason=cell.skip_reason)
    print(f"[bench] {workload['name']}: {cell.framework} {cell.backend} {cell.variant} ...",
          file=sys.stderr, flush=True)
    start = time.time()
    try:
        proc = subprocess.run(cell.command, capture_output=True, text=True, timeout=timeout, cwd=cwd,
                              env=cell_env(threads))
    except subprocess.TimeoutExpired as e:
        # What the cell had said so far (bench_cannl prints its compile time and when each early
        # step starts, on stderr): where a long cell was when the cap ended it.
        said = e.stderr.decode(errors="replace") if isinstance(e.stderr, bytes) else (e.stderr or "")
        tail = " | ".join(said.strip().splitlines()[-2:])
        return dict(base, status="timeout",
                    reason=f"exceeded the cell cap of {timeout:.0f} s" + (f"; last said: {tail}" if tail else "")[:400])
    wall = time.time() - start
    rows = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if not rows:
        tail = (proc.stderr or "").strip().splitlines()[-3:]
        return dict(base, status="error", reason=f"exit {proc.returncode}, no result row: {' | '.join(tail)}"[:500])
    row = json.loads(rows[-1])
    row.update({k: v for k, v in base.items() if k != "workload"})
    profile = kernel_profile(proc.stderr or "")
    if profile:
        row["kernel_profile"] = profile
    row["cell_wall_s"] = wall
    print(f"[bench]   {row.get('status')} p50 {row.get('step_p50_ms')} ms ({wall:.0f} s)", file=sys.stderr, flush=True)
    return row


def parity(row, reference, tolerance=TOLERANCE):
    """'REF', 'PASS (d)', 'FAIL (why)' or None when the cell has no losses."""
    if row.get("status") != "ok":
        return None
    losses = row.get("losses") or []
    if row is reference:
        return "REF"
    if any(x is None for x in losses) or not losses:
        return "FAIL (non-finite loss)"
    if abs(losses[-1] - losses[0]) < MIN_MOVEMENT * max(abs(losses[0]), 1e-12):
        return "FAIL (loss stationary)"
    if reference is None or reference.get("status") != "ok":
        return "NO REF (PyTorch eager cell failed)"
    ref = reference["losses"]
    if len(ref) != len(losses):
        return f"FAIL ({len(losses)} parity losses, reference has {len(ref)})"
    worst = max(abs(a - b) / max(abs(b), 1e-12) for a, b in zip(losses, ref))
    return f"PASS ({worst:.1e})" if worst <= tolerance else f"FAIL (max rel diff {worst:.1e} > {tolerance:g})"


def passed(row):
    return (row.get("parity") or "").startswith(("PASS", "REF"))


def ensure_fixtures(args, names):
    """Generates the fixtures that are missing (the others are reused: gpt2_124m_train's is about
    500 MB); `names`: the workloads with at least one cell to run."""
    if not names:
        return
    digests = os.path.join(args.fixtures, "DIGESTS.txt")
    missing = [n for n in names if not os.path.exists(os.path.join(args.fixtures, n + ".safetensors"))]
    if missing or not os.path.exists(digests):
        subprocess.run([args.peer_python, os.path.join(HERE, "scripts", "gen_fixtures.py"),
                        "--out", args.fixtures, "--workloads", ",".join(missing or names)], check=True)


def load_workload(name):
    with open(os.path.join(HERE, "workloads", name + ".json")) as f:
        return json.load(f)


def main():
    args = parse_args()
    names = [w for w in args.workloads.split(",") if w]
    timeout = args.cell_timeout or (400.0 if args.quick else 1800.0)
    os.makedirs(args.results, exist_ok=True)
    started = datetime.datetime.now(datetime.timezone.utc)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    plan = []  # (workload, cell): the reference and cannl cells of every workload first
    for name in names:
        workload = load_workload(name)
        fixture = os.path.join(args.fixtures, name + ".safetensors")
        step_args = []
        if args.quick:
            warmup, timed = quick_steps(workload)
            step_args = ["--warmup-steps", str(warmup), "--timed-steps", str(timed)]
        plan += [(workload, c) for c in cells_for(workload, args, fixture, step_args)]
    plan.sort(key=lambda wc: 0 if essential(wc[1]) else 1)  # stable: workload order kept
    ensure_fixtures(args, list(dict.fromkeys(w["name"] for w, c in plan if not c.skip_reason)))
    rows = previous_rows(args, plan) if args.update else []
    names = list(dict.fromkeys([r["workload"] for r in rows] + names))
    for workload, cell in plan:
        if args.budget_s and time.time() - started.timestamp() > args.budget_s and not cell.skip_reason:
            cell.skip_reason = f"not run: the run's time budget (--budget-s {args.budget_s:.0f}) was spent"
        cap = timeout * cap_factor(workload, args)
        rows.append(run_cell(cell, workload, cap, cwd=os.path.dirname(os.path.abspath(args.results)),
                             threads=args.threads))
        rows = gated(rows, names)
        write_outputs(args, rows, started, load, timeout)
    return 0


def cell_key(workload_name, framework, backend, variant):
    return (workload_name, framework, backend, variant)


def previous_rows(args, plan):
    """The earlier run's rows, less those of the cells about to run."""
    path = os.path.join(args.results, "results.jsonl")
    if not os.path.exists(path):
        return []
    rerun = {cell_key(w["name"], c.framework, c.backend, c.variant) for w, c in plan}
    rows = [json.loads(line) for line in open(path) if line.strip()]
    return [r for r in rows
            if cell_key(r["workload"], r["framework"], r["backend"], r["variant"]) not in rerun]


def essential(cell):
    return (cell.framework, cell.variant) in (("pytorch", "eager"), ("cannl", "default"))


def gated(rows, names):
    """Rows in workload order, each with its parity verdict against its workload's reference."""
    out = []
    for name in names:
        group = [r for r in rows if r["workload"] == name]
        eager = [r for r in group if r["framework"] == "pytorch" and r["variant"] == "eager"]
        # PyTorch eager on the CPU, or on cuda when the run has only GPU cells (or the workload
        # has none on the CPU).
        reference = next((r for r in eager if r["backend"] == "cpu" and r.get("status") != "skipped"), None) or \
            next((r for r in eager if r["backend"] == "cuda"), None)
        tolerance = tolerance_of(load_workload(name)) if os.path.exists(
            os.path.join(HERE, "workloads", name + ".json")) else TOLERANCE
        for r in group:
            r["parity"] = parity(r, reference, tolerance)
        out += group
    return out


def workload_notes(names):
    """A line under a workload's table when it departs from the f32 SGD protocol."""
    notes = {}
    for name in names:
        if not os.path.exists(os.path.join(HERE, "workloads", name + ".json")):
            continue
        w = load_workload(name)
        parts = []
        if w.get("optimizer", "sgd") == "adamw":
            parts.append(f"AdamW (torch.optim.AdamW semantics) lr {w['lr']:g}, betas ({w.get('beta1', 0.9):g}, "
                         f"{w.get('beta2', 0.999):g}), eps {w.get('eps', 1e-8):g}, weight decay "
                         f"{w.get('weight_decay', 0.01):g} on parameters of >= {w.get('weight_decay_min_rank', 0)} axes")
        if w.get("precision", "f32") != "f32":
            parts.append(f"{w['precision']} mixed precision (cannl precision={w['precision']}; PyTorch "
                         f"torch.autocast {w['precision']}), f32 master weights")
        if "parity_tolerance" in w:
            parts.append(f"parity tolerance {w['parity_tolerance']:g} (the workload's own)")
        if parts:
            notes[name] = "; ".join(parts) + "."
    return notes


def write_outputs(args, rows, started, load, timeout):
    sys.path.insert(0, HERE)
    import report  # noqa: E402
    with open(os.path.join(args.results, "results.jsonl"), "w") as f:
        for r in rows:
            f.write(json.dumps(r, sort_keys=True) + "\n")
    header = report.Header(started=started, commit=args.commit, quick=args.quick, load=load,
                           timeout=timeout, tolerance=TOLERANCE, min_movement=MIN_MOVEMENT)
    names = list(dict.fromkeys(r["workload"] for r in rows))
    with open(os.path.join(args.results, "report.md"), "w") as f:
        f.write(report.markdown(rows, header, chart_name="chart.png", notes=workload_notes(names)))
    report.chart(rows, os.path.join(args.results, "chart.png"))


if __name__ == "__main__":
    sys.exit(main())
