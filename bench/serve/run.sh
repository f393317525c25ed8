#!/usr/bin/env bash
# run.sh [SECONDS] [SOAK_MINUTES] — load benchmark of `loom serve` on the
# shared generator's large workspace: cold start, then 64 clients for
# SECONDS (default 30) each against a bare net/http floor serving the same
# bytes, render, render with If-None-Match, and messages with a 200-message
# history; then floor and render open-loop at a fixed rate (RATE req/s,
# default half the floor's throughput) for the p99; with SOAK_MINUTES, that
# many more minutes of render load with the server's RSS each minute.
set -euo pipefail
secs=${1:-30}
soak=${2:-0}
here=$(cd "$(dirname "$0")/../.." && pwd)
gen="$here/../shared/bench/make-workspace"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/loom" "$here/cmd/loom"
go build -o "$tmp/serve-load" "$here/bench/serve"
python3 "$gen" large "$tmp/ws" >/dev/null
"$tmp/serve-load" -loom "$tmp/loom" -w "$tmp/ws" -c 64 -d "${secs}s" -history 200 -soak "${soak}m" -rate "${RATE:-0}"
