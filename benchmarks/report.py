"""The Markdown report and the bar chart of a benchmark run (semantics-backend.md 10.3).

One table per workload, cells that pass the parity gate ordered by step p50, then the flagged
ones; under each table the fastest peer (a passing non-cannl cell) and cannl's ratio to it.
"""
import dataclasses
import datetime
import os
import platform
import shutil
import subprocess


@dataclasses.dataclass
class Header:
    started: datetime.datetime
    commit: str
    quick: bool
    load: float
    timeout: float
    tolerance: float
    min_movement: float


def cpu_name():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def fmt(x, digits=3):
    if x is None:
        return "-"
    if abs(x) >= 100:
        return f"{x:.0f}"
    return f"{x:.{digits}g}"


def passed(row):
    return (row.get("parity") or "").startswith(("PASS", "REF"))


def cell_name(r):
    return f"{r['framework']} {r['backend']} {r['variant']}"


def flag_of(r):
    if r.get("status") != "ok":
        return f"{r.get('status', 'error').upper()}: {r.get('reason', '')}"
    return r.get("parity") or "-"


def warm_compile(r):
    """A second compile in the same process with the compile cache filled, and how many C
    compiler processes it ran (cannl's cc cells; "-" for the others)."""
    if r.get("warm_compile_s") is None:
        return "-"
    return f"{fmt(r.get('warm_compile_s'))} ({r.get('warm_cc_invocations', '?')} cc)"


def workload_table(name, rows, note=None):
    gpt = any(r.get("tokens_per_s") for r in rows)
    ok = sorted([r for r in rows if passed(r)], key=lambda r: r.get("step_p50_ms") or float("inf"))
    failed = [r for r in rows if r.get("status") == "ok" and not passed(r)]
    flagged = [r for r in rows if r.get("status") != "ok"]
    head = ["framework", "backend", "variant", "step p50 ms", "p10", "p90", "queued ms", "compile s",
            "warm compile s", "parity"]
    if gpt:
        head.append("tok/s")
    lines = [f"### {name}", ""] + ([note, ""] if note else []) + \
        ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in ok + failed:
        timing = [fmt(r.get("step_p50_ms")), fmt(r.get("step_p10_ms")), fmt(r.get("step_p90_ms")),
                  fmt(r.get("queued_step_ms")), fmt(r.get("compile_s")), warm_compile(r)]
        if not passed(r):  # flagged: timings are not compared
            timing = [f"({t})" for t in timing]
        cells = [r["framework"], r["backend"], r["variant"]] + timing + [flag_of(r)]
        if gpt:
            cells.append(fmt(r.get("tokens_per_s"), 4) if passed(r) else "-")
        lines.append("| " + " | ".join(cells) + " |")
    for r in flagged:
        cells = [r["framework"], r["backend"], r["variant"]] + ["-"] * 6 + [flag_of(r)]
        if gpt:
            cells.append("-")
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    lines += ratio_lines(ok)
    lines += profile_lines(ok)
    return "\n".join(lines) + "\n"


def profile_lines(ok):
    """Where a passing cannl cell's step goes: its top kernels from bench_cannl --profile."""
    out = []
    for r in ok:
        if r["framework"] == "cannl" and r.get("kernel_profile"):
            out += ["", f"Top kernels of cannl {r['backend']} {r['variant']} (`bench_cannl --profile`: total over "
                        "the timed steps, mean per call, share of the step; label; line of the generated C):",
                    "", "```"] + r["kernel_profile"] + ["```"]
    return out + [""] if out else []


def ratio_lines(ok):
    peers = [r for r in ok if r["framework"] != "cannl" and r.get("step_p50_ms")]
    ours = [r for r in ok if r["framework"] == "cannl" and r.get("step_p50_ms")]
    if not peers:
        return ["No peer cell passed the parity gate.", ""]
    best = peers[0]
    out = [f"Fastest peer: **{cell_name(best)}**, p50 {fmt(best['step_p50_ms'])} ms."]
    for r in ours:
        ratio = r["step_p50_ms"] / best["step_p50_ms"]
        verdict = f"{ratio:.2f}x its step time" + (" (faster)" if ratio < 1 else " (slower)")
        search = ""
        if r.get("tune_outcome") == "cache":
            search = " Tuned: replayed from the schedule cache (0 s searching)."
        elif r.get("tune_outcome"):
            search = f" Tuned: {fmt(r.get('tune_search_s'))} s of search, winner `{r.get('tune_winner', '?')}`."
        out.append(f"cannl {r['backend']} {r['variant']}: p50 {fmt(r['step_p50_ms'])} ms = {verdict}.{search}")
    if not ours:
        out.append("No cannl cell passed the parity gate.")
    return out + [""]


def markdown(rows, h, chart_name=None, notes=None):
    """`notes`: a line per workload name, printed above its table (precision, optimizer, its own
    parity tolerance)."""
    digests = sorted({(r.get("fixture"), r.get("fixture_sha256")) for r in rows if r.get("fixture_sha256")})
    versions = {}
    for r in rows:
        versions.update(r.get("versions") or {})
    out = [f"# cannl cross-framework benchmark ({'quick' if h.quick else 'full'} run)", "",
           f"Platform: {platform.system()} {platform.machine()}, {cpu_name()}, {os.cpu_count()} cores; "
           f"load average {h.load:.1f} at the start (shared machine: timings are noisy). "
           f"cannl commit {h.commit or 'unknown'}"
           + "".join(f", {k} {v}" for k, v in sorted(versions.items()) if k != "threads")
           + (f" ({versions['threads']} threads)" if "threads" in versions else "")
           + "".join(f"; every cell pinned to {t} thread{'s' if t > 1 else ''} (OMP_NUM_THREADS, CANNL_CC_THREADS)"
                     for t in sorted({r["threads"] for r in rows if r.get("threads")}))
           + f". Started {h.started:%Y-%m-%d %H:%M} UTC.", "",
           f"Parity gate: each cell's first parity-step losses against PyTorch eager on the CPU (REF; on the "
           f"GPU in a run of GPU cells only), "
           f"max relative difference <= {h.tolerance:g} (f32; a workload's own tolerance is named above its table), and the loss must move by >= "
           f"{h.min_movement:g} relative over the window (else FAIL loss stationary). Failing cells "
           f"are flagged and their timings (in parentheses) not compared. Step = forward + loss "
           f"(+ backward + plain SGD, or the workload's optimizer); step ms with a sync per step, queued ms = mean per step with "
           f"one sync at the end; compile s = building, compiling and running step 0 (cannl's default cc "
           f"cell: into an empty compile cache); warm compile s = the same again in that process with "
           f"the cache filled, and the C compiler processes it ran. "
           f"Per-cell cap {h.timeout:.0f} s."
           + (" Quick mode: a tenth of the warmup and timed steps (parity steps unchanged)." if h.quick else ""),
           ""]
    if digests:
        out += ["Fixtures (sha256): " + "; ".join(f"{f} `{d[:16]}`" for f, d in digests), ""]
    if chart_name:
        out += [f"![step p50 per cell]({chart_name})", ""]
    for name in dict.fromkeys(r["workload"] for r in rows):
        out.append(workload_table(name, [r for r in rows if r["workload"] == name], (notes or {}).get(name)))
    return "\n".join(out)


def chart(rows, path):
    """Step p50 of the passing cells per workload (log scale). matplotlib, else gnuplot."""
    data = [(r["workload"], cell_name(r), r["step_p50_ms"]) for r in rows if passed(r) and r.get("step_p50_ms")]
    if not data:
        return
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return gnuplot_chart(data, path)
    workloads = list(dict.fromkeys(d[0] for d in data))
    cells = sorted(dict.fromkeys(d[1] for d in data))
    width = 0.8 / len(cells)
    fig, ax = plt.subplots(figsize=(max(8, 1.6 * len(workloads)), 4.5))
    for i, cell in enumerate(cells):
        xs = [w + (i - len(cells) / 2 + 0.5) * width for w in range(len(workloads))]
        ys = [next((d[2] for d in data if d[0] == wl and d[1] == cell), 0) for wl in workloads]
        ax.bar(xs, ys, width, label=cell)
    ax.set_xticks(range(len(workloads)), workloads)
    ax.set_yscale("log")
    ax.set_ylabel("step p50 (ms, log scale)")
    ax.set_title("Step time per cell (cells that pass the parity gate)")
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def gnuplot_chart(data, path):
    if not shutil.which("gnuplot"):
        return
    table = path + ".dat"
    with open(table, "w") as f:
        for wl, cell, p50 in data:
            f.write(f'"{wl}: {cell}" {p50}\n')
    script = (f'set terminal png size 1000,500; set output "{path}"; set logscale y; '
              f'set style fill solid; set xtics rotate by -60 font ",7"; '
              f'plot "{table}" using 2:xtic(1) with boxes title "step p50 ms"')
    subprocess.run(["gnuplot", "-e", script], check=False)
    os.remove(table)
