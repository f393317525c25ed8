#!/usr/bin/env bash
# run.sh [SECONDS] — what loom's gateway adds to a streamed chat completion,
# on the shared generator's large workspace: 32 clients for SECONDS (default
# 30) straight to a fake upstream, then through `loom serve`, in one run;
# then both open-loop at RATE req/s (default a third of loom's throughput).
# PROTOCOLS=1 run.sh [SECONDS] compares the wire formats instead: the same
# turn direct and through loom as Chat Completions, Responses and Messages,
# at 1 and 16 clients, ROUNDS (default 3) alternating rounds of SECONDS each.
# FIT=1 run.sh [SECONDS] measures context-window fitting the same way: a
# 200-message request only counted, fitted with nothing to drop, and fitted
# with drops.
set -euo pipefail
secs=${1:-30}
here=$(cd "$(dirname "$0")/../.." && pwd)
gen="$here/../shared/bench/make-workspace"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/loom" "$here/cmd/loom"
go build -o "$tmp/gateway-load" "$here/bench/gateway"
python3 "$gen" large "$tmp/ws" >/dev/null
if [ -n "${PROTOCOLS:-}" ]; then
	"$tmp/gateway-load" -loom "$tmp/loom" -w "$tmp/ws" -protocols -c 16 -d "${secs}s" -rounds "${ROUNDS:-3}"
	exit
fi
if [ -n "${FIT:-}" ]; then
	"$tmp/gateway-load" -loom "$tmp/loom" -w "$tmp/ws" -fit -c 16 -d "${secs}s" -rounds "${ROUNDS:-3}"
	exit
fi
"$tmp/gateway-load" -loom "$tmp/loom" -w "$tmp/ws" -c 32 -d "${secs}s" -rate "${RATE:-0}"
