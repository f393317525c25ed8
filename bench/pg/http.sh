#!/usr/bin/env bash
# http.sh [SECONDS] [CLIENTS] — HTTP load of real `loom serve` processes:
# 4 replicas with --store postgres on one throwaway PostgreSQL, CLIENTS
# clients each (default 16), for SECONDS (default 60); then one replica on
# SQLite and session files with CLIENTS clients, the same load, in the same
# run. The clients take turns on 50 shared sessions (fake model endpoint),
# add, supersede and forget memories, render, and render on another replica
# right after each write. Prints throughput, p50 and p99 per request kind
# for both, and checks the end state (every acknowledged write stored once,
# every session's turns whole and in order). Then PostgreSQL itself is
# restarted in the middle of a shorter load (503s, then recovery).
set -euo pipefail
secs=${1:-60}
clients=${2:-16}
here=$(cd "$(dirname "$0")/../.." && pwd)
cd "$here"
export LOOM_PG_HTTP_SECONDS="$secs" LOOM_PG_HTTP_CLIENTS="$clients" LOOM_PG_HTTP_SQLITE=1
exec bash scripts/pg-test.sh bash -c "go test -count=1 -run 'TestHTTPReplicas\$' -v -timeout 60m ./bench/pg/ &&
	LOOM_PG_HTTP_REAL_RESTART=1 go test -count=1 -run 'TestHTTPPostgresRestart\$' -v ./bench/pg/"
