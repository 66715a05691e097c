#!/usr/bin/env bash
# Time `cchist hook` at SessionEnd on a large session (default 50 MB), as Claude Code runs it.
#
#   scripts/hook-timing.sh [SIZE_MB]
#
# The session is built from the generated corpus (which holds planted secrets, so the scrub
# pipeline has real work to do), placed in a throwaway config folder, and the hook is given
# the JSON Claude Code sends. Prints wall time for the first run (redacts) and a second run
# (nothing left to change).
set -euo pipefail
cd "$(dirname "$0")/.."
SIZE_MB=${1:-50}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cargo build --release --quiet
BIN=$PWD/target/release/cchist
PROJ=$WORK/projects/-home-dev-big
mkdir -p "$PROJ"
SESSION=$PROJ/big.jsonl
python3 scripts/bigfile.py "$SIZE_MB" "$SESSION"
touch -d '1 hour ago' "$SESSION"
INPUT="{\"session_id\":\"big\",\"transcript_path\":\"$SESSION\",\"cwd\":\"/home/dev/big\",\"hook_event_name\":\"SessionEnd\",\"reason\":\"exit\"}"
cat "$SESSION" > /dev/null
for run in first second; do
  s=$(date +%s.%N)
  echo "$INPUT" | CLAUDE_CONFIG_DIR=$WORK "$BIN" hook --strict
  e=$(date +%s.%N)
  awk -v s="$s" -v e="$e" -v r="$run" -v b="$(stat -c %s "$SESSION")" \
    'BEGIN { printf "%s run: %.3f s for %.1f MB\n", r, e - s, b / 1048576 }'
done
