#!/usr/bin/env bash
# Runs cpu_bench once (median of 3 repetitions per case) and prints cannl's ratios to OpenBLAS
# sgemm and to the STREAM-style C loops as a Markdown table (the targets: sgemm 1024 and 2048 >= 0.9 x
# OpenBLAS; triad and row sums >= 0.8 x the C loop).
#
#   benchmarks/cpu/report.sh build-release/benchmarks/cpu/cpu_bench [--benchmark_filter=sgemm]
set -euo pipefail
bench="${1:?usage: report.sh path/to/cpu_bench [google-benchmark flags]}"
shift
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
csv=$(mktemp)
trap 'rm -f "$csv"' EXIT
"$bench" --benchmark_format=csv --benchmark_repetitions=3 --benchmark_report_aggregates_only=true \
  "$@" > "$csv"
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

# Which machine and state the numbers come from (a ratio means little without them).
cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')
flags=$(grep -m1 '^flags' /proc/cpuinfo | grep -o 'avx512f\|avx2\|fma' | sort -u | tr '\n' ' ')
echo "CPU: ${cpu:-unknown} ($(nproc) cores; ${flags:-no AVX flags}), load before the run $load_before," \
  "commit $(git -C "$(dirname "$0")" rev-parse --short HEAD 2>/dev/null || echo unknown), $(date -u +%F)"
echo

awk -F, '
  NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
  $1 !~ /_median"?$/ { next }
  {
    name = $1; gsub(/"/, "", name); sub(/_median$/, "", name); sub(/\/real_time$/, "", name)
    n = split(name, part, "/")
    kind = part[1]
    if (kind ~ /sgemm/) { key = part[2] " " part[3]; value = $col["\"flops\""] / 1e9 }
    else { key = part[2]; value = $col["bytes_per_second"] / 1e9 }
    v[kind, key] = value; keys[kind, key] = 1
    if (kind ~ /sgemm/) sg[key] = 1; else bw[key] = 1
  }
  END {
    print "| case | threads | cannl | peer | ratio |"
    print "|---|---|---|---|---|"
    for (k in sg) {
      split(k, nk, " ")
      c = v["BM_cannl_sgemm", k]; t = v["BM_cc_tile_sgemm", k]; p = v["BM_openblas_sgemm", k]
      printf "| sgemm %s | %s | %.1f GFLOP/s | OpenBLAS %.1f GFLOP/s | %.2f |\n", nk[1], nk[2], c, p, (p > 0 ? c / p : 0)
      printf "| sgemm %s (TileMma alone) | %s | %.1f GFLOP/s | OpenBLAS %.1f GFLOP/s | %.2f |\n", nk[1], nk[2], t, p, (p > 0 ? t / p : 0)
      u = v["BM_cannl_tuned_sgemm", k]
      if (u > 0) printf "| sgemm %s (tuned) | %s | %.1f GFLOP/s | OpenBLAS %.1f GFLOP/s | %.2f |\n", nk[1], nk[2], u, p, (p > 0 ? u / p : 0)
    }
    for (k in bw) {
      c = v["BM_cannl_triad", k]; p = v["BM_stream_triad", k]
      printf "| triad 2^23 | %s | %.1f GB/s | C loop %.1f GB/s | %.2f |\n", k, c, p, (p > 0 ? c / p : 0)
      c = v["BM_cannl_row_sums", k]; p = v["BM_stream_row_sums", k]
      printf "| row sums 4096x2048 | %s | %.1f GB/s | C loop %.1f GB/s | %.2f |\n", k, c, p, (p > 0 ? c / p : 0)
    }
  }' "$csv" | { read -r h1; read -r h2; echo "$h1"; echo "$h2"; sort -t'|' -k2,2 -k3,3n; }
echo; echo "Load after the run: $load_after."
