#!/usr/bin/env bash
# run.sh [COUNT] — the render engine's figures beside their floors, in one run:
#   - budgeted warm renders at 8k and 32k tokens vs the unbudgeted warm render
#     (large workspace: 2,000 memories; x10: 2,000 skills, 20,000 memories),
#     without a watch (each render stats every file) and with one;
#   - a re-render after one skill or bootstrap file changed (watched, and
#     stat-validated) vs a full render in the same run, and vs nao's 2.2 ms
#     (its React production build re-rendering its whole prompt, from
#     ../shared/reference); without a watch, also vs a stat of every file the
#     render reads (one system call per file, the least it can do);
#   - a cold load of the x10 workspace's 2,000 skills vs `cat` of the same files.
# Medians of COUNT runs (default 6). Each figure is given as wall time and as
# the process's CPU time per operation (cpu-ns/op, which a machine shared
# with other work disturbs much less); ratios are taken on both.
set -euo pipefail
count=${1:-6}
here=$(cd "$(dirname "$0")/../.." && pwd)
cd "$here"
out=$(mktemp)
trap 'rm -f "$out"' EXIT

median() { sort -n | awk '{a[NR]=$1} END {if (NR==0) {print "nan"; exit} m=(NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2; printf "%.0f", m}'; }

# The workspaces are made (and their memories imported) by the first benchmark.
go test -run '^$' -bench 'BenchmarkRenderFull' -benchtime 1x ./prompt >/dev/null
x10=${TMPDIR:-/tmp}/loom-engine-x10

go test -run '^$' -bench 'BenchmarkRenderBudgeted|BenchmarkRenderBudgetedWatched|BenchmarkRerenderAfterEdit|BenchmarkRenderFull|BenchmarkStatFloor' \
  -benchmem -count "$count" ./prompt | tee -a "$out" >/dev/null
# The benchmarks skip (and every figure would read nan) when the shared
# workspace generator is not beside this checkout: say so and stop.
if ! grep -q '^BenchmarkRenderBudgeted/' "$out"; then
  echo "run.sh: no engine benchmark ran; is ../shared/bench/make-workspace beside this checkout ($here)?" >&2
  exit 1
fi
LOOM_BENCH_SKILLS_WS=$x10 go test -run '^$' -bench 'BenchmarkLoadColdWorkspace' \
  -benchmem -count "$count" ./skills | tee -a "$out" >/dev/null

ns() { # median ns/op of the benchmark whose name matches $1 exactly (without -N)
  awk -v want="$1" '$1 ~ /^Benchmark/ { n=$1; sub(/-[0-9]+$/, "", n); if (n == want) print $3 }' "$out" | median
}
cpu() { # median cpu-ns/op of the same
  awk -v want="$1" '$1 ~ /^Benchmark/ { n=$1; sub(/-[0-9]+$/, "", n); if (n != want) next; for (i = 4; i < NF; i++) if ($(i+1) == "cpu-ns/op") print $i }' "$out" | median
}
# `cat` of the same 2,000 SKILL.md files: its wall and CPU time in
# nanoseconds (bench/proctime gives milliseconds to the microsecond).
files=$(find "$x10/skills" -name SKILL.md | sort)
go build -o "$out.proctime" ./bench/proctime
for _ in $(seq "$count"); do
  # shellcheck disable=SC2086 # the generator names files without spaces
  "$out.proctime" cat $files
done >"$out.cat"
cat_ns=$(awk '{printf "%.0f\n", $1 * 1e6}' "$out.cat" | median)
cat_cpu=$(awk '{printf "%.0f\n", $2 * 1e6}' "$out.cat" | median)
rm -f "$out.cat" "$out.proctime"

ms() { awk -v n="$1" 'BEGIN { printf "%.3f", n / 1e6 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b == 0 || b == "nan") print "-"; else printf "%.2fx", a / b }'; }
nao=2200000

row() { # row LABEL WALL_NS CPU_NS RATIO_TEXT
  printf '%-50s %10s %10s  %s\n' "$1" "$(ms "$2")" "$(ms "$3")" "$4"
}
printf '%-50s %10s %10s  %s\n' "figure" "wall ms" "cpu ms" "ratio (wall; cpu)"
budget_rows() { # budget_rows BENCHMARK LABEL SIZE: no budget, then 8k and 32k against it
  local base basec v c b
  base=$(ns "$1/$3/budget=0"); basec=$(cpu "$1/$3/budget=0")
  row "$2, $3, no budget" "$base" "$basec" "1.00x"
  for b in 8000 32000; do
    v=$(ns "$1/$3/budget=$b"); c=$(cpu "$1/$3/budget=$b")
    row "$2, $3, budget $b" "$v" "$c" "$(ratio "$v" "$base"); $(ratio "$c" "$basec") of no budget"
  done
}
for size in large x10; do
  budget_rows BenchmarkRenderBudgeted "warm render" "$size"
  # The same with a watch: no stat calls, so the budget's own cost shows.
  budget_rows BenchmarkRenderBudgetedWatched "warm watched render" "$size"
  full=$(ns "BenchmarkRenderFull/$size"); fullc=$(cpu "BenchmarkRenderFull/$size")
  row "full render (new builder), $size" "$full" "$fullc" "$(ratio "$full" "$nao") of nao's 2.2 ms"
  # Without a watch a render must at least stat every file it reads.
  st=$(ns "BenchmarkStatFloor/$size"); stc=$(cpu "BenchmarkStatFloor/$size")
  row "stat of every file a render reads, $size" "$st" "$stc" "floor of watch=false"
  for w in true false; do
    for f in skill bootstrap; do
      v=$(ns "BenchmarkRerenderAfterEdit/$size/watch=$w/$f"); c=$(cpu "BenchmarkRerenderAfterEdit/$size/watch=$w/$f")
      extra=""
      if [ "$w" = false ]; then extra="; $(ratio "$c" "$stc") of the stat floor (cpu)"; fi
      row "re-render after one $f edit, $size, watch=$w" "$v" "$c" "$(ratio "$v" "$full"); $(ratio "$c" "$fullc") of full; $(ratio "$v" "$nao") of nao (wall)$extra"
    done
  done
done
cold=$(ns "BenchmarkLoadColdWorkspace"); coldc=$(cpu "BenchmarkLoadColdWorkspace")
row "cat of the x10 workspace's 2,000 SKILL.md" "$cat_ns" "$cat_cpu" "1.00x"
row "cold load of those 2,000 skills" "$cold" "$coldc" "$(ratio "$cold" "$cat_ns"); $(ratio "$coldc" "$cat_cpu") of cat"
