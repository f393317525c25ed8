#!/usr/bin/env bash
# pg-test.sh COMMAND [ARGS...]
#
# Runs COMMAND with a throwaway PostgreSQL server: installs PostgreSQL when
# initdb is missing (apt-get, as root), makes a cluster in a temporary
# folder, starts postgres on a unix socket in that folder (no TCP port),
# exports LOOM_TEST_PG_DSN and runs COMMAND. The server is stopped and the
# folder removed afterwards, also when COMMAND fails or the script is
# interrupted. The script exits with COMMAND's status.
#
#   bash scripts/pg-test.sh go test -race ./...
#   bash scripts/pg-test.sh go test -run PG ./memory/... ./session/...
#
# Also exported, for fault tests: LOOM_TEST_PG_RESTART, a shell command
# that restarts the server (same socket, same data).
set -euo pipefail

if [ $# -eq 0 ]; then
	echo "usage: $0 COMMAND [ARGS...]" >&2
	exit 2
fi

find_bin() {
	if command -v initdb >/dev/null 2>&1; then
		dirname "$(command -v initdb)"
		return
	fi
	ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1
}

bin=$(find_bin)
if [ -z "$bin" ] || [ ! -x "$bin/initdb" ]; then
	if [ "$(id -u)" -ne 0 ]; then
		echo "pg-test.sh: PostgreSQL is not installed; run as root to install it (apt-get install postgresql)" >&2
		exit 1
	fi
	echo "pg-test.sh: installing PostgreSQL" >&2
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq >&2
	apt-get install -y -qq postgresql >&2
	bin=$(find_bin)
	if [ -z "$bin" ] || [ ! -x "$bin/initdb" ]; then
		echo "pg-test.sh: initdb still missing after installing postgresql" >&2
		exit 1
	fi
fi

dir=$(mktemp -d /tmp/loom-pg.XXXXXX)
# PostgreSQL refuses to run as root: as root, the server runs as the
# postgres user (the package makes it; made here if missing).
as_pg=()
if [ "$(id -u)" -eq 0 ]; then
	if ! id postgres >/dev/null 2>&1; then
		useradd --system --no-create-home --shell /usr/sbin/nologin postgres
	fi
	chown postgres "$dir"
	as_pg=(runuser -u postgres --)
fi
chmod 0700 "$dir"

stop() {
	"${as_pg[@]}" "$bin/pg_ctl" -D "$dir/data" stop -m immediate >/dev/null 2>&1 || true
	rm -rf "$dir"
}
trap stop EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

"${as_pg[@]}" "$bin/initdb" -D "$dir/data" -U loom --auth=trust -E UTF8 --no-sync >"$dir/initdb.log" 2>&1 || {
	cat "$dir/initdb.log" >&2
	exit 1
}
opts="-k $dir -c listen_addresses= -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=300"
"${as_pg[@]}" "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -o "$opts" -w -t 60 start >/dev/null || {
	cat "$dir/server.log" >&2
	exit 1
}

export LOOM_TEST_PG_DSN="host=$dir port=5432 user=loom dbname=postgres sslmode=disable"
restart=("${as_pg[@]}" "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -o "$opts" -w -t 60 -m fast restart)
LOOM_TEST_PG_RESTART=$(printf '%q ' "${restart[@]}")
export LOOM_TEST_PG_RESTART
echo "pg-test.sh: PostgreSQL $("$bin/postgres" --version | awk '{print $3}') on $dir" >&2

set +e
"$@"
status=$?
set -e
exit $status
