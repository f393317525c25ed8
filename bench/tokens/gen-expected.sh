#!/bin/sh
# gen-expected.sh regenerates tokens/testdata/expected.json with npm tiktoken.
# It installs the pinned packages into a scratch folder, so nothing lands in
# the repository but the JSON.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
cp "$here/package.json" "$here/gen-expected.mjs" "$scratch/"
(cd "$scratch" && npm install --no-audit --no-fund --silent >/dev/null)
node "$scratch/gen-expected.mjs" "$root"
