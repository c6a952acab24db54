#!/usr/bin/env python3
"""Per-step overhead of driving a compiled training step from Python, against a C++ loop.

    python3 benchmarks/python/step_overhead.py [--steps 400] [--rounds 7] [--backend cc]

The workload is the benchmark suite's mlp_small (benchmarks/workloads/mlp_small.json: an MLP
2 -> 64 -> 64 -> 2 with relu, batch 64, 32 batches, SGD lr 0.1, softmax cross-entropy) on the
committed fixture benchmarks/ci/mlp_small.safetensors, built as bench_cannl builds it. One step
routine is compiled, then timed in alternating rounds: `ctx.run(step, [k % 32])` in a Python loop
(what a Python training loop does), and the same routine run by a C++ loop (cannl._cannl._run_steps,
one call for the whole round). On a shared machine the rounds' spread is large, so it also times a
near-empty routine both ways: the difference is the Python call's own overhead per step
(dispatch, the GIL released and the library lock taken), set against the mlp_small step. Prints
both and one JSON line. Not a test: timings depend on the machine and its load.
"""
import argparse
import json
import pathlib
import statistics
import time

import cannl

ROOT = pathlib.Path(__file__).resolve().parents[2]
WORKLOAD = json.loads((ROOT / "benchmarks" / "workloads" / "mlp_small.json").read_text())
FIXTURE = ROOT / "benchmarks" / "ci" / "mlp_small.safetensors"


def mlp_small(ctx):
    """bench_cannl's mlp graph (benchmarks/runners/cannl/bench_models.cpp) and its training step."""
    data = cannl.io.SafetensorsFile.open(FIXTURE)
    dims, batch_size, n_batches = WORKLOAD["dims"], WORKLOAD["batch"], WORKLOAD["n_batches"]
    batch = cannl.StaticSymbol(n_batches, "batch")
    x = data.numpy("x")
    labels = data.numpy("labels").astype(int).ravel()
    one_hot = [1.0 if c == label else 0.0 for label in labels for c in range(dims[-1])]
    h = cannl.slice_batch(cannl.literal("x", x, batch=[n_batches, batch_size], output=[dims[0]]), batch)
    for i, width in enumerate(dims[1:]):
        h = cannl.nn.Linear(f"l{i}", [width])(h)
        if i + 2 < len(dims):
            h = cannl.relu(h)
    y = cannl.literal("labels", one_hot, batch=[n_batches, batch_size], output=[dims[-1]])
    loss = cannl.nn.cross_entropy_loss(h, cannl.slice_batch(y, batch))
    step = cannl.train.compile_step(ctx, loss, sgd=cannl.train.SgdOptions(lr=WORKLOAD["lr"]),
                                    batch=batch, n_batches=n_batches, name="mlp_small_step")
    return step, n_batches


def python_loop(ctx, routine, steps, n_batches):
    run = ctx.run
    start = time.perf_counter()
    if routine.statics:
        for k in range(steps):
            run(routine, [k % n_batches])
    else:
        for _ in range(steps):
            run(routine)
    return (time.perf_counter() - start) / steps


def cpp_loop(ctx, routine, steps, n_batches):
    start = time.perf_counter()
    cannl._cannl._run_steps(ctx, routine, steps, n_batches)
    return (time.perf_counter() - start) / steps


def trivial_routine(ctx):
    """A routine doing almost nothing (one 2-element add): its run time is the call overhead."""
    x = cannl.literal("overhead_x", [1.0, 2.0])
    return cannl.train.compile_forward(ctx, [x + 1.0], "overhead_probe")


def timed_rounds(ctx, routine, steps, rounds, n_batches):
    """Per-step seconds of alternating Python and C++ rounds (alternating: both see the same load)."""
    python_loop(ctx, routine, 3 * n_batches, n_batches)       # warm-up: caches, OpenMP pool
    cpp_loop(ctx, routine, 3 * n_batches, n_batches)
    py, cc = [], []
    for k in range(rounds):                                   # which goes first alternates too
        if k % 2:
            py.append(python_loop(ctx, routine, steps, n_batches))
        cc.append(cpp_loop(ctx, routine, steps, n_batches))
        if not k % 2:
            py.append(python_loop(ctx, routine, steps, n_batches))
    return py, cc


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=400, help="steps per timed round")
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--backend", default="cc")
    args = parser.parse_args()
    cannl.config.set("backend", args.backend)
    ctx = cannl.Context.from_config()
    step, n_batches = mlp_small(ctx)
    py, cc = timed_rounds(ctx, step.step, args.steps, args.rounds, n_batches)
    py_us, cc_us = statistics.median(py) * 1e6, statistics.median(cc) * 1e6
    probe = trivial_routine(ctx)
    probe_py, probe_cc = timed_rounds(ctx, probe, 20 * args.steps, args.rounds, 1)
    call_us = (min(probe_py) - min(probe_cc)) * 1e6
    print(f"mlp_small step on {ctx.backend_name} (medians of {args.rounds} rounds x {args.steps} steps): "
          f"C++ loop {cc_us:.1f} us, Python loop {py_us:.1f} us ({(py_us - cc_us) / cc_us * 100:+.1f}%)")
    print(f"call overhead (a near-empty routine, {20 * args.steps} calls per round): Python "
          f"{min(probe_py) * 1e6:.2f} us, C++ {min(probe_cc) * 1e6:.2f} us: {call_us:+.2f} us per step = "
          f"{call_us / cc_us * 100:+.2f}% of the mlp_small step")
    print(json.dumps({"workload": "mlp_small", "backend": ctx.backend_name,
                      "cpp_us_per_step": round(cc_us, 2), "python_us_per_step": round(py_us, 2),
                      "python_call_overhead_us": round(call_us, 3),
                      "overhead_percent_of_step": round(call_us / cc_us * 100, 3),
                      "python_rounds_us": [round(v * 1e6, 1) for v in py],
                      "cpp_rounds_us": [round(v * 1e6, 1) for v in cc]}))


if __name__ == "__main__":
    main()
