"""Shared by the Python runners: fixture loading with the digest check, the measurement protocol
and the result row. The cannl runner (C++) implements the same protocol in bench_harness.cpp.

Protocol (semantics-backend.md 10.1): step 0 is the compile probe (compile_s: building the model,
compiling, running step 0 and reading its loss) and the first parity step; the losses of the first
`parity_steps` steps are recorded (each read before that step's update takes effect);
`warmup_steps` untimed steps; `timed_steps` steps each followed by a sync (p10/p50/p90 step_ms);
`timed_steps` more with one sync at the end (queued_step_ms, the mean). Step k uses batch
k mod n_batches.
"""
import hashlib
import json
import math
import os
import platform
import sys
import time


class FixtureError(Exception):
    pass


def file_digest(path):
    h = hashlib.sha256()
    size = 0
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
            size += len(chunk)
    return h.hexdigest(), size


def check_fixture(path, digest_file=None):
    """Returns the fixture's sha256; raises FixtureError unless DIGESTS.txt lists the same sha256
    and size for it."""
    digest_file = digest_file or os.path.join(os.path.dirname(os.path.abspath(path)), "DIGESTS.txt")
    sha, size = file_digest(path)
    name = os.path.basename(path)
    try:
        lines = open(digest_file).read().splitlines()
    except OSError as e:
        raise FixtureError(f"cannot read the digest file {digest_file}: {e}")
    for line in lines:
        parts = line.split()
        if len(parts) == 3 and parts[2] == name:
            if parts[0] != sha or int(parts[1]) != size:
                raise FixtureError(f"fixture {name}: sha256 {sha} size {size} does not match "
                                   f"{digest_file} ({parts[0]} size {parts[1]}); regenerate it")
            return sha
    raise FixtureError(f"fixture {name} is not listed in {digest_file}")


def load_fixture(path):
    """(workload dict, {name: numpy array}) from a fixture whose digest was checked."""
    from safetensors import safe_open
    with safe_open(path, "np") as f:
        workload = json.loads(f.metadata()["workload"])
        tensors = {k: f.get_tensor(k) for k in f.keys()}
    return workload, tensors


def percentile(sorted_values, q):
    """Linear interpolation between closest ranks (numpy's default)."""
    if not sorted_values:
        return None
    pos = (len(sorted_values) - 1) * q
    lo, hi = math.floor(pos), math.ceil(pos)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def steps_of(workload, args):
    warmup = workload["warmup_steps"] if args.warmup_steps is None else args.warmup_steps
    timed = workload["timed_steps"] if args.timed_steps is None else args.timed_steps
    return workload["parity_steps"], warmup, timed


def measure(workload, args, build, step, sync):
    """build() compiles/prepares; step(k) runs step k and returns a loss handle; sync(handle)
    waits for the device and returns the loss as a float."""
    parity, warmup, timed = steps_of(workload, args)
    start = time.perf_counter()
    build()
    losses = [sync(step(0))]
    compile_s = time.perf_counter() - start
    k = 1
    for _ in range(1, parity):
        losses.append(sync(step(k)))
        k += 1
    for _ in range(warmup):
        sync(step(k))
        k += 1
    times = []
    for _ in range(timed):
        t = time.perf_counter()
        sync(step(k))
        times.append((time.perf_counter() - t) * 1e3)
        k += 1
    t = time.perf_counter()
    last = None
    for _ in range(timed):
        last = step(k)
        k += 1
    if last is not None:
        sync(last)
    queued = (time.perf_counter() - t) * 1e3 / timed if timed else None
    times.sort()
    return {"compile_s": compile_s, "losses": losses, "step_p10_ms": percentile(times, 0.1),
            "step_p50_ms": percentile(times, 0.5), "step_p90_ms": percentile(times, 0.9),
            "queued_step_ms": queued, "steps": {"parity": parity, "warmup": warmup, "timed": timed}}


def tokens_per_s(workload, row):
    if workload["model"] != "gpt" or not row.get("step_p50_ms"):
        return None
    return workload["batch"] * workload["seq"] / (row["step_p50_ms"] / 1e3)


def finite_or_none(x):
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, list):
        return [finite_or_none(v) for v in x]
    if isinstance(x, dict):
        return {k: finite_or_none(v) for k, v in x.items()}
    return x


def emit(args, row):
    """Appends the row to --out (JSON lines; non-finite numbers as null) and prints it."""
    row = finite_or_none(row)
    line = json.dumps(row, sort_keys=True)
    if args.out:
        with open(args.out, "a") as f:
            f.write(line + "\n")
    print(line)


def add_common_args(parser):
    parser.add_argument("--fixture", required=True)
    parser.add_argument("--digests", default=None, help="default: DIGESTS.txt beside the fixture")
    parser.add_argument("--out", default=None, help="append the result row to this JSONL file")
    parser.add_argument("--warmup-steps", type=int, default=None)
    parser.add_argument("--timed-steps", type=int, default=None)


def run_cell(args, framework, backend, variant, versions, run):
    """Checks the fixture, runs `run(workload, tensors) -> measurement`, emits the row; a failure
    becomes a row with status "error" and the reason (never a missing row)."""
    row = {"framework": framework, "backend": backend, "variant": variant,
           "platform": f"{platform.system()} {platform.machine()}", "versions": versions,
           "fixture": os.path.basename(args.fixture)}
    try:
        row["fixture_sha256"] = check_fixture(args.fixture, args.digests)
        workload, tensors = load_fixture(args.fixture)
        row["workload"] = workload["name"]
        row.update(run(workload, tensors))
        row["tokens_per_s"] = tokens_per_s(workload, row)
        row["status"] = "ok"
    except FixtureError as e:
        row.update(status="error", reason=f"fixture refused: {e}")
    except Exception as e:  # the orchestrator reports the reason instead of a missing cell
        row.update(status="error", reason=f"{type(e).__name__}: {e}"[:500])
    row.setdefault("workload", os.path.basename(args.fixture).split(".")[0])
    emit(args, row)
    return 0 if row["status"] == "ok" else 1
