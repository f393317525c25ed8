#!/usr/bin/env bash
# bench/compat/run.sh — loom beside the real nanobot ContextBuilder and the
# real nao renderer, on the same folders, heading by heading.
#
#   NANOBOT_SRC=/path/to/nanobot-checkout [NANOBOT_PYTHON=python3] \
#   NAO_RENDER='command that prints nao'"'"'s system prompt for the folder given last' \
#   bench/compat/run.sh [FOLDER...]
#
# Neither project's code is in this repository: the script runs them from
# where the environment says. NANOBOT_SRC is a checkout of HKUDS/nanobot (its
# nanobot/ package is imported from there, with whatever Python packages it
# needs already installed); NAO_RENDER is any command that renders nao's
# default system prompt for a project folder (nao's SystemPrompt from
# components/ai/system-prompt.tsx, given what its agent gives it). A side
# whose variable is unset, or that fails, is reported with what it needs and
# left out; the loom side always runs.
#
# For each folder (default: the nanobot and nao workspaces in testdata/) it
# prints each renderer's top-level headings (#, ##) in order, the token count
# (o200k_base) and a diff of the heading sequences. The full prompts are left
# in $OUT (default a temporary folder) for a closer look.
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-$(mktemp -d)}
NOW=2026-03-10T15:00:00Z
export LOOM_CACHE_DIR=${LOOM_CACHE_DIR:-$OUT/cache}
go build -o "$OUT/loom" ./cmd/loom
if [ $# -eq 0 ]; then
  set -- testdata/workspaces/nanobot testdata/workspaces/nanobot-head \
    testdata/workspaces/nao/getnao-example testdata/workspaces/nao/nao_demo-example
fi

headings() { grep -E '^#{1,2} ' "$1" || true; }

nanobot() { # folder out: nanobot's system prompt for a copy of folder
  local ws=$OUT/nanobot-ws
  rm -rf "$ws" && cp -r "$1" "$ws" && rm -f "$ws/LICENSE" "$ws/SOURCE.md"
  NANOBOT_SRC=$NANOBOT_SRC WS=$ws "${NANOBOT_PYTHON:-python3}" - >"$2" 2>"$2.err" <<'PY'
import os, sys
sys.path.insert(0, os.environ["NANOBOT_SRC"])
from pathlib import Path
from nanobot.agent.context import ContextBuilder
print(ContextBuilder(Path(os.environ["WS"])).build_system_prompt())
PY
}

for dir in "$@"; do
  name=$(basename "$dir")
  echo "== $name"
  "$OUT/loom" render -w "$dir" --now "$NOW" >"$OUT/$name.loom.md" 2>"$OUT/$name.loom.err"
  printf '  loom:    %s tokens\n' "$("$OUT/loom" tokens "$OUT/$name.loom.md")"
  peer=""
  case "$dir" in
  *nanobot*)
    if [ -z "${NANOBOT_SRC:-}" ]; then
      echo "  nanobot: NEEDS NANOBOT_SRC (a HKUDS/nanobot checkout whose package imports)"
    elif nanobot "$dir" "$OUT/$name.peer.md"; then
      peer=nanobot
    else
      echo "  nanobot: NEEDS its Python dependencies: $(grep -E 'Error' "$OUT/$name.peer.md.err" | tail -1)"
    fi ;;
  *nao*)
    if [ -z "${NAO_RENDER:-}" ]; then
      echo "  nao:     NEEDS NAO_RENDER (a command that prints nao's system prompt for a folder)"
    elif sh -c "$NAO_RENDER \"\$1\"" nao "$dir" >"$OUT/$name.peer.md" 2>"$OUT/$name.peer.md.err"; then
      peer=nao
    else
      echo "  nao:     failed: $(tail -1 "$OUT/$name.peer.md.err")"
    fi ;;
  esac
  if [ -n "$peer" ]; then
    printf '  %-8s %s tokens\n' "$peer:" "$("$OUT/loom" tokens "$OUT/$name.peer.md")"
    if diff <(headings "$OUT/$name.peer.md") <(headings "$OUT/$name.loom.md") >"$OUT/$name.headings.diff"; then
      echo "  headings: the same"
    else
      echo "  headings ($peer < > loom):"; sed 's/^/    /' "$OUT/$name.headings.diff"
    fi
  else
    echo "  loom headings:"; headings "$OUT/$name.loom.md" | sed 's/^/    /'
  fi
done
echo "prompts in $OUT"
