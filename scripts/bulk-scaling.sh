#!/usr/bin/env bash
# Bulk scaling: `cchist run --all` over a Claude config folder of many sessions, one core
# against two (and all cores), page cache warm.
#
#   scripts/bulk-scaling.sh [SESSIONS] [PIPELINE]     (default 64 sessions, scrub)
#
# Builds SESSIONS session files (a 2 MB cut of the corpus each, renumbered; see bigfile.py) in
# SESSIONS/8 project folders, then times `run --all -p PIPELINE --dry-run` with -j1, -j2 and
# -j$(nproc) (best of 3) and prints the speed-up. Needs cargo and python3.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-64}
PIPELINE=${2:-scrub}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

cargo build --release --quiet
BIN=$PWD/target/release/cchist
python3 scripts/bigfile.py 2 "$WORK/one.jsonl" --all
for i in $(seq 1 "$N"); do
  dir="$WORK/config/projects/-home-user-project$((i % (N / 8 + 1)))"
  mkdir -p "$dir"
  # Distinct ids per session, like real sessions.
  python3 - "$WORK/one.jsonl" "$dir/$(python3 -c 'import uuid; print(uuid.uuid4())').jsonl" "$i" <<'EOF'
import re, sys
data = open(sys.argv[1], "rb").read()
k = int(sys.argv[3])
data = re.sub(rb"\b([0-9a-f]{8})(-[0-9a-f]{4}-)", lambda m: b"%08x%s" % (int(m.group(1), 16) ^ (k << 8), m.group(2)), data)
open(sys.argv[2], "wb").write(data)
EOF
done
# Sessions modified within the last minutes count as live and are skipped: age them.
find "$WORK/config" -name '*.jsonl' -exec touch -d '2 hours ago' {} +
BYTES=$(find "$WORK/config" -name '*.jsonl' -printf '%s\n' | awk '{ s += $1 } END { print s }')
cat $(find "$WORK/config" -name '*.jsonl') > /dev/null   # warm the page cache

best() {
  local best=999999
  for _ in 1 2 3; do
    local s e
    s=$(date +%s.%N)
    CLAUDE_CONFIG_DIR="$WORK/config" "$BIN" run -p "$PIPELINE" --all --dry-run -j "$1" > /dev/null 2>&1 || true
    e=$(date +%s.%N)
    best=$(awk -v s="$s" -v e="$e" -v b="$best" 'BEGIN { t = e - s; print (t < b ? t : b) }')
  done
  echo "$best"
}

printf '%s sessions, %s MB, pipeline %s, %s cores, %s\n\n' "$N" "$((BYTES >> 20))" "$PIPELINE" "$(nproc)" "$(date -u +%Y-%m-%d)"
printf '| %-6s | %10s | %10s | %8s |\n' "jobs" "seconds" "MiB/s" "speed-up"
printf '|%s|%s|%s|%s|\n' "--------" "------------" "------------" "----------"
t1=$(best 1)
for j in $(printf "1\n2\n%s\n" "$(nproc)" | sort -un); do
  if [ "$j" = 1 ]; then t=$t1; else t=$(best "$j"); fi
  awk -v j="$j" -v t="$t" -v t1="$t1" -v b="$BYTES" \
    'BEGIN { printf "| %-6s | %10.3f | %10.0f | %7.2fx |\n", j, t, b / 1048576 / t, t1 / t }'
done
