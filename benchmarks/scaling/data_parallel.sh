#!/usr/bin/env bash
# Data-parallel scaling of mlp_wide (256 -> 1024 -> 1024 -> 10, global batch 256, SGD):
# global steps/s on 1 process and on P processes under mpirun (each with one OpenMP thread), plus
# one process with 2 CPU devices and one process with 2 OpenMP threads for comparison. Writes
# <out>.tsv and <out>.png (gnuplot). Usage:
#   benchmarks/scaling/data_parallel.sh build/cannl benchmarks/reports/data-parallel "1 2" [steps] [rounds]
set -euo pipefail
cannl="$(realpath "$1")"
out="$(realpath -m "$2")"
processes="${3:-1 2}"
steps="${4:-30}"
rounds="${5:-3}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_WAIT_POLICY=passive

rate() { grep -E '^(global_steps_per_s|step_ms)' | awk '/step_ms/ { printf "%.3f\n", 1000 / $2; exit }'; }
printf "setup\tround\tsteps_per_s\tload\n" > "$out.tsv"
for round in $(seq "$rounds"); do
  for p in $processes; do
    load="$(cut -d' ' -f1 /proc/loadavg)"
    if [[ $p == 1 ]]; then
      r="$("$cannl" bench mlp --threads 1 --steps "$steps" | rate)"
    else
      r="$(mpirun -np "$p" --oversubscribe --bind-to none "$cannl" bench mlp --distributed --threads 1 --steps "$steps" | rate)"
    fi
    label="$p processes"; [[ $p == 1 ]] && label="1 process"
    printf "%s\t%s\t%s\t%s\n" "$label" "$round" "$r" "$load" >> "$out.tsv"
  done
  load="$(cut -d' ' -f1 /proc/loadavg)"
  r="$("$cannl" bench mlp --devices 2 --threads 1 --steps "$steps" | rate)"
  printf "1 process, 2 devices\t%s\t%s\t%s\n" "$round" "$r" "$load" >> "$out.tsv"
  load="$(cut -d' ' -f1 /proc/loadavg)"
  r="$("$cannl" bench mlp --threads 2 --steps "$steps" | rate)"
  printf "1 process, 2 threads\t%s\t%s\t%s\n" "$round" "$r" "$load" >> "$out.tsv"
done
cat "$out.tsv"

# The median over the rounds per setup, as bars, in the order measured.
tail -n +2 "$out.tsv" | cut -f1 | awk '!seen[$0]++' | while IFS= read -r setup; do
  median="$(awk -F'\t' -v s="$setup" '$1 == s { print $3 }' "$out.tsv" | sort -g |
            awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')"
  printf '"%s"\t%s\n' "$setup" "$median"
done > medians.dat
cat medians.dat
if command -v gnuplot > /dev/null; then
  gnuplot <<GNUPLOT
set terminal pngcairo size 900,420 noenhanced
set output "$out.png"
set title "mlp_wide data-parallel training, global batch 256 (median global steps/s)"
set ylabel "global steps / s"
set style fill solid 0.6
set boxwidth 0.6
set yrange [0:*]
set grid ytics
plot "medians.dat" using 0:2:xtic(1) with boxes notitle, "" using 0:2:(sprintf("%.2f", \$2)) with labels offset 0,0.8 notitle
GNUPLOT
  echo "wrote $out.png"
fi
