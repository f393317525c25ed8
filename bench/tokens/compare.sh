#!/bin/sh
# compare.sh measures loom's token counting beside npm tiktoken (wasm) and
# gpt-tokenizer (pure JS) on the same corpus files, in one run, and prints
# the medians and ratios as a Markdown table.
#
#   bench/tokens/compare.sh [repetitions]     (default 6)
#
# The npm packages are installed into a scratch folder that is removed on
# exit; nothing is added to the repository or to loom's go.mod.
set -eu
reps=${1:-6}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

cp "$here/package.json" "$here/compare.mjs" "$scratch/"
(cd "$scratch" && npm install --no-audit --no-fund --silent >/dev/null)

echo "go: go test -bench 'BenchmarkCorpus(NoMemo)?' -count $reps ./tokens" >&2
(cd "$root" && GOMAXPROCS=1 go test -run '^$' -bench '^BenchmarkCorpus(NoMemo)?$' -benchtime 300ms -count "$reps" ./tokens) >"$scratch/go.txt"
echo "node: tiktoken, gpt-tokenizer" >&2
node "$scratch/compare.mjs" "$root" "$scratch/go.txt" "$reps"
