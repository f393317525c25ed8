#!/usr/bin/env bash
# cold.sh [RUNS] [SIZES] — a whole `loom render -w DIR` process, cold, beside
# its floors measured in the same run, on the shared generator's workspaces
# (SIZES defaults to "small medium large"):
#   - hello: a minimal Go program that links net/http (the cost of starting
#     any Go process here);
#   - cat: `cat` of every file the workspace holds (what reading its bytes
#     costs, with no parsing at all);
#   - loom: `loom render -w DIR --preset assistant`, a new process each run,
#     so nothing is cached but what the OS caches.
# Each figure is the median of RUNS runs (default 15), taken in turns so that
# a burst of load on the machine hits all three alike: wall time, and the
# process's CPU time (user + system), which a loaded machine disturbs less.
# The ratios are loom's against cat's and hello's.
set -euo pipefail
runs=${1:-15}
sizes=${2:-small medium large}
here=$(cd "$(dirname "$0")/../.." && pwd)
gen="$here/../shared/bench/make-workspace"
if [ ! -e "$gen" ]; then
  echo "cold.sh: needs the shared benchmark generator at $gen" >&2
  exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/loom" "$here/cmd/loom"
mkdir -p "$tmp/hello"
printf 'package main\nimport (\n\t"fmt"\n\t_ "net/http"\n)\nfunc main() { fmt.Println("hi") }\n' >"$tmp/hello/main.go"
printf 'module hello\ngo 1.26\n' >"$tmp/hello/go.mod"
(cd "$tmp/hello" && go build -o "$tmp/hello-bin" .)
# tm CMD...: runs CMD once and prints its wall and CPU time in ms, to the
# microsecond (bench/proctime).
go build -o "$tmp/tm-bin" "$here/bench/proctime"

median() { sort -n | awk '{a[NR]=$1} END {if (NR==0) {print "nan"; exit} m=(NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2; printf "%.1f", m}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b == 0 || b == "nan") print "-"; else printf "%.2fx", a / b }'; }

# run NAME CMD...: one timed run, appending wall ms and CPU ms to NAME's files.
run() {
  local name=$1; shift
  PROCTIME_OUT="$tmp/out" "$tmp/tm-bin" "$@" 2>/dev/null >"$tmp/t"
  awk '{print $1}' "$tmp/t" >>"$tmp/$name.wall"
  awk '{print $2}' "$tmp/t" >>"$tmp/$name.cpu"
}

printf '%-8s %-6s %10s %10s  %-22s %s\n' size what "wall ms" "cpu ms" "wall vs cat, hello" "cpu vs cat, hello"
for size in $sizes; do
  ws="$tmp/ws-$size"
  python3 "$gen" "$size" "$ws" >/dev/null 2>&1
  "$tmp/loom" render -w "$ws" >/dev/null 2>&1 || true # writes .loom/builtin once; warms the OS cache
  find "$ws" -type f -not -path '*/.loom/*' -not -name '*.db*' | sort >"$tmp/files"
  rm -f "$tmp"/*.wall "$tmp"/*.cpu
  for _ in $(seq "$runs"); do
    run hello "$tmp/hello-bin"
    # shellcheck disable=SC2046 # the generator names files without spaces
    run cat cat $(cat "$tmp/files")
    run loom "$tmp/loom" render -w "$ws" --preset assistant
  done
  bytes=$(wc -c <"$tmp/out")
  for what in hello cat loom; do
    median <"$tmp/$what.wall" >"$tmp/$what.mw"
    median <"$tmp/$what.cpu" >"$tmp/$what.mc"
  done
  for what in hello cat loom; do
    w=$(cat "$tmp/$what.mw"); c=$(cat "$tmp/$what.mc")
    if [ "$what" = loom ]; then
      printf '%-8s %-6s %10s %10s  %-22s %s   (%s bytes out, %s files)\n' "$size" "$what" "$w" "$c" \
        "$(ratio "$w" "$(cat "$tmp/cat.mw")"), $(ratio "$w" "$(cat "$tmp/hello.mw")")" \
        "$(ratio "$c" "$(cat "$tmp/cat.mc")"), $(ratio "$c" "$(cat "$tmp/hello.mc")")" "$bytes" "$(wc -l <"$tmp/files")"
    else
      printf '%-8s %-6s %10s %10s\n' "$size" "$what" "$w" "$c"
    fi
  done
done
