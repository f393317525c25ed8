#!/usr/bin/env bash
# run.sh [REF...] — build weight and start-up of cmd/loom at each git REF
# (default HEAD), beside a Go hello-world, all in one run:
#
#   - the CPU time (user+sys) of a first `go build ./cmd/loom` with an empty
#     build cache (GOCACHE in a new temporary folder) and the size that cache
#     reaches. The module cache (GOMODCACHE) is the machine's own, already
#     filled: the figure is compile and link work, not download time;
#   - the binary's size as `go build` writes it (with DWARF and the symbol
#     table) and as `go run` links it (-ldflags='-s -w', go run's default,
#     so what the README's `go run ./cmd/loom …` builds);
#   - the median wall and CPU time of `loom --version` (both links: loom@ is
#     go build's, run@ go run's) against the hello-world's, and against a
#     floor: the hello-world with the libraries the issue requires linked in
#     (only blank-imported, so it runs their package initialisation and
#     nothing else): prometheus/client_golang, pgx, modernc sqlite, the MCP
#     go-sdk, and net/http. loom cannot start faster than that floor.
#
# With DEPS=1 it also prices each direct dependency: a program that only
# blank-imports it, built cold the same way (CPU time and binary size).
#
#   bench/cold/run.sh                      # HEAD
#   bench/cold/run.sh e84aa91 HEAD         # before and after a change
#   RUNS=201 DEPS=1 bench/cold/run.sh
set -euo pipefail
runs=${RUNS:-101}
repo=$(cd "$(dirname "$0")/../.." && pwd)
refs=("$@")
[ ${#refs[@]} -gt 0 ] || refs=(HEAD)
tmp=$(mktemp -d)
trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
export GOFLAGS=-mod=mod GOTOOLCHAIN=local

# cold_build DIR PKG OUT: build PKG in DIR with an empty build cache; prints
# "cpu_seconds cache_mb".
cold_build() {
  local dir=$1 pkg=$2 out=$3 cache
  cache=$(mktemp -d "$tmp/cache.XXXX")
  local TIMEFORMAT='%U %S'
  local t
  t=$( { time (cd "$dir" && GOCACHE=$cache go build -o "$out" "$pkg") 2>&1 >/dev/null ; } 2>&1 | tail -1)
  # the go run link of the same build, from the now warm cache (not timed)
  (cd "$dir" && GOCACHE=$cache go build -ldflags='-s -w' -o "$out-run" "$pkg") >/dev/null 2>&1 || true
  local mb
  mb=$(du -sm "$cache" | cut -f1)
  chmod -R u+w "$cache"; rm -rf "$cache"
  echo "$t" | awk -v mb="$mb" '{printf "%.1f %d\n", $1+$2, mb}'
}

size_mb() { stat -c %s "$1" | awk '{printf "%.1f (%.1f MB)", $1/1048576, $1/1e6}'; }

mkdir -p "$tmp/hello"
printf 'package main\n\nimport "fmt"\n\nfunc main() { fmt.Println("loom version dev") }\n' >"$tmp/hello/main.go"
printf 'module hello\n\ngo 1.26\n' >"$tmp/hello/go.mod"
read -r hcpu hmb < <(cold_build "$tmp/hello" . "$tmp/hello-bin")

# the floor, with loom's go.mod (at the last REF) so the versions match
floorsrc="$tmp/floor"
mkdir -p "$floorsrc"
git -C "$repo" show "${refs[-1]}:go.mod" >"$floorsrc/go.mod"
git -C "$repo" show "${refs[-1]}:go.sum" >"$floorsrc/go.sum"
sed -i 's|^module .*|module floor|' "$floorsrc/go.mod"
cat >"$floorsrc/main.go" <<'GO'
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
read -r fcpu fmb < <(cold_build "$floorsrc" . "$tmp/floor-bin")

printf "%-22s %12s %9s %18s %18s\n" build "cold CPU s" "cache MB" "binary MiB" "go run MiB"
printf "%-22s %12s %9s %18s %18s\n" hello-world "$hcpu" "$hmb" "$(size_mb "$tmp/hello-bin")" "$(size_mb "$tmp/hello-bin-run")"
printf "%-22s %12s %9s %18s %18s\n" floor "$fcpu" "$fmb" "$(size_mb "$tmp/floor-bin")" "$(size_mb "$tmp/floor-bin-run")"
startup=("hello=$tmp/hello-bin" "floor=$tmp/floor-bin")
for ref in "${refs[@]}"; do
  name=$(git -C "$repo" rev-parse --short "$ref")
  src="$tmp/src-$name"
  mkdir -p "$src"
  git -C "$repo" archive "$ref" | tar -x -C "$src"
  read -r cpu mb < <(cold_build "$src" ./cmd/loom "$tmp/loom-$name")
  printf "%-22s %12s %9s %18s %18s\n" "loom@$name" "$cpu" "$mb" "$(size_mb "$tmp/loom-$name")" "$(size_mb "$tmp/loom-$name-run")"
  startup+=("loom@$name=$tmp/loom-$name --version" "run@$name=$tmp/loom-$name-run --version")
done

echo
echo "start-up ($runs runs each, interleaved; ratio to hello-world):"
(cd "$repo" && go run ./bench/cold/startup -n "$runs" "${startup[@]}")

if [ "${DEPS:-0}" = 1 ]; then
  src="$tmp/src-$(git -C "$repo" rev-parse --short "${refs[-1]}")"
  echo
  printf "%-40s %12s %10s\n" "dependency (blank import)" "cold CPU s" "binary MB"
  for mod in $(cd "$src" && go list -m -f '{{if not .Indirect}}{{if not .Main}}{{.Path}}{{end}}{{end}}' all); do
    deps=$(cd "$src" && go list -deps ./... 2>/dev/null)
    pkg=$(grep -x -m1 -e "$mod" <<<"$deps" || grep -x -m1 -e "$mod/[^/]*" <<<"$deps" || true)
    [ -n "$pkg" ] || continue
    d="$tmp/dep"
    rm -rf "$d"; mkdir -p "$d"
    cp "$src/go.mod" "$src/go.sum" "$d/"
    sed -i 's|^module .*|module depcost|' "$d/go.mod"
    printf 'package main\n\nimport _ "%s"\n\nfunc main() {}\n' "$pkg" >"$d/main.go"
    if ! out=$(cold_build "$d" . "$d/bin") || [ ! -f "$d/bin" ]; then
      printf "%-40s %12s\n" "$pkg" "build failed"
      continue
    fi
    printf "%-40s %12s %10s\n" "$pkg" "${out%% *}" "$(size_mb "$d/bin")"
  done
fi

