#!/usr/bin/env bash
# cold.sh [RUNS] — median wall time of a whole `loom render -w DIR` process on
# the shared generator's small, medium and large workspaces. Each run is a
# new process, so nothing is cached but what the OS caches.
set -euo pipefail
runs=${1:-15}
here=$(cd "$(dirname "$0")/../.." && pwd)
gen="$here/../shared/bench/make-workspace"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/loom" "$here/cmd/loom"
# A baseline in the same run: the process start of a minimal Go program that
# links net/http, which on some machines is most of what any process costs.
mkdir -p "$tmp/hello"
printf 'package main\nimport (\n\t"fmt"\n\t_ "net/http"\n)\nfunc main() { fmt.Println("hi") }\n' >"$tmp/hello/main.go"
printf 'module hello\ngo 1.26\n' >"$tmp/hello/go.mod"
(cd "$tmp/hello" && go build -o "$tmp/hello-bin" .)
median() { sort -n | awk '{a[NR]=$1} END {m=(NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2; printf "%.1f", m}'; }
printf "%-8s %10s %10s\n" size "median ms" "bytes out"
for _ in $(seq "$runs"); do
  s=$(date +%s%N); "$tmp/hello-bin" >/dev/null; e=$(date +%s%N); echo $(( (e - s) / 1000 ))
done | awk '{print $1/1000}' | median >"$tmp/m"
printf "%-8s %10s %10s\n" "hello" "$(cat "$tmp/m")" "-"
for size in small medium large; do
  python3 "$gen" "$size" "$tmp/ws-$size" >/dev/null 2>&1
  "$tmp/loom" render -w "$tmp/ws-$size" >/dev/null 2>&1 || true   # warm the OS file cache
  for _ in $(seq "$runs"); do
    s=$(date +%s%N)
    "$tmp/loom" render -w "$tmp/ws-$size" --preset assistant >"$tmp/out" 2>/dev/null
    e=$(date +%s%N)
    echo $(( (e - s) / 1000 ))
  done | awk '{print $1/1000}' | median >"$tmp/m"
  printf "%-8s %10s %10s\n" "$size" "$(cat "$tmp/m")" "$(wc -c <"$tmp/out")"
done
