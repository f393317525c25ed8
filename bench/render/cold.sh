#!/usr/bin/env bash
# cold.sh [RUNS] [SIZES] — a whole `loom render -w DIR` process, cold, beside
# its floors measured in the same run, on the shared generator's workspaces
# (SIZES defaults to "small medium large"):
#   - hello: a minimal Go program that links net/http (the cost of starting
#     any Go process here);
#   - cat: `cat` of every file the workspace holds (what reading its bytes
#     costs, with no parsing at all);
#   - floor: the hello-world with the libraries the issue requires linked
#     in (only blank-imported, so it runs their package initialisation and
#     nothing else, as bench/cold/run.sh's floor): prometheus/client_golang,
#     pgx, modernc sqlite, the MCP go-sdk and net/http. No loom process can
#     start faster;
#   - start: `loom --version`, loom's own start-up (runtime, package
#     initialisation, page faults of its binary) with no work: the part of
#     each loom figure that is not rendering;
#   - loom: `loom render -w DIR --preset assistant`, a new process each run,
#     so nothing is cached but what the OS caches;
#   - loom+mem: the same on a copy of the workspace with the generator's
#     memories.jsonl imported into its memory.db (2,000 memories on large),
#     which the render lists and selects from.
# Each figure is the median of RUNS runs (default 15), taken in turns so that
# a burst of load on the machine hits all three alike: wall time, and the
# process's CPU time (user + system), which a loaded machine disturbs less.
# The ratios are against cat's, hello's and the floor's.
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
mkdir -p "$tmp/floor"
sed 's|^module .*|module floor|' "$here/go.mod" >"$tmp/floor/go.mod"
cp "$here/go.sum" "$tmp/floor/go.sum"
cat >"$tmp/floor/main.go" <<'GO'
package main

import (
	"fmt"

	_ "github.com/jackc/pgx/v5"
	_ "github.com/jackc/pgx/v5/pgxpool"
	_ "github.com/modelcontextprotocol/go-sdk/mcp"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/prometheus/client_golang/prometheus/collectors"
	_ "github.com/prometheus/client_golang/prometheus/promhttp"
	_ "modernc.org/sqlite"
	_ "net/http"
)

func main() { fmt.Println("loom version dev") }
GO
(cd "$tmp/floor" && GOFLAGS=-mod=mod go build -o "$tmp/floor-bin" .)
# tm CMD...: runs CMD once and prints its wall and CPU time in ms, to the
# microsecond (bench/proctime).
go build -o "$tmp/tm-bin" "$here/bench/proctime"

median() { sort -n | awk '{a[NR]=$1} END {if (NR==0) {print "nan"; exit} m=(NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2; printf "%.1f", m}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b == 0 || b == "nan") print "-"; else printf "%.2fx", a / b }'; }

# run NAME CMD...: one timed run, appending wall ms and CPU ms to NAME's files.
run() {
  local name=$1; shift
  PROCTIME_OUT="$tmp/out.$name" "$tmp/tm-bin" "$@" 2>/dev/null >"$tmp/t"
  awk '{print $1}' "$tmp/t" >>"$tmp/$name.wall"
  awk '{print $2}' "$tmp/t" >>"$tmp/$name.cpu"
}

printf '%-8s %-8s %10s %10s  %-28s %s\n' size what "wall ms" "cpu ms" "wall vs cat, hello, floor" "cpu vs cat, hello, floor"
for size in $sizes; do
  ws="$tmp/ws-$size"
  python3 "$gen" "$size" "$ws" >/dev/null 2>&1
  "$tmp/loom" render -w "$ws" >/dev/null 2>&1 || true # writes .loom/builtin once; warms the OS cache
  find "$ws" -type f -not -path '*/.loom/*' -not -name '*.db*' | sort >"$tmp/files"
  wsm="$tmp/ws-$size-mem"
  rm -rf "$wsm"
  cp -r "$ws" "$wsm"
  "$tmp/loom" memory import -w "$wsm" "$wsm/memories.jsonl" >/dev/null 2>&1
  "$tmp/loom" render -w "$wsm" >/dev/null 2>&1 || true
  rm -f "$tmp"/*.wall "$tmp"/*.cpu
  for _ in $(seq "$runs"); do
    run hello "$tmp/hello-bin"
    run floor "$tmp/floor-bin"
    # shellcheck disable=SC2046 # the generator names files without spaces
    run cat cat $(cat "$tmp/files")
    run start "$tmp/loom" --version
    run loom "$tmp/loom" render -w "$ws" --preset assistant
    run loom+mem "$tmp/loom" render -w "$wsm" --preset assistant
  done
  for what in hello floor cat start loom loom+mem; do
    median <"$tmp/$what.wall" >"$tmp/$what.mw"
    median <"$tmp/$what.cpu" >"$tmp/$what.mc"
  done
  for what in hello floor cat start loom loom+mem; do
    w=$(cat "$tmp/$what.mw"); c=$(cat "$tmp/$what.mc")
    case $what in
    hello | cat)
      printf '%-8s %-8s %10s %10s\n' "$size" "$what" "$w" "$c"
      ;;
    floor)
      printf '%-8s %-8s %10s %10s  %-28s %s\n' "$size" "$what" "$w" "$c" \
        "$(ratio "$w" "$(cat "$tmp/cat.mw")"), $(ratio "$w" "$(cat "$tmp/hello.mw")")" \
        "$(ratio "$c" "$(cat "$tmp/cat.mc")"), $(ratio "$c" "$(cat "$tmp/hello.mc")")"
      ;;
    *)
      extra=""
      case $what in
      loom) extra="   ($(wc -c <"$tmp/out.$what") bytes out, $(wc -l <"$tmp/files") files)" ;;
      loom+mem) extra="   ($(wc -c <"$tmp/out.$what") bytes out)" ;;
      esac
      printf '%-8s %-8s %10s %10s  %-28s %s%s\n' "$size" "$what" "$w" "$c" \
        "$(ratio "$w" "$(cat "$tmp/cat.mw")"), $(ratio "$w" "$(cat "$tmp/hello.mw")"), $(ratio "$w" "$(cat "$tmp/floor.mw")")" \
        "$(ratio "$c" "$(cat "$tmp/cat.mc")"), $(ratio "$c" "$(cat "$tmp/hello.mc")"), $(ratio "$c" "$(cat "$tmp/floor.mc")")" "$extra"
      ;;
    esac
  done
done
