#!/usr/bin/env bash
# Throughput of cchist against the usual tools, on the same bytes, single core, page cache warm.
#
#   scripts/compare.sh [SIZE_MB]     (default 256; PEERS=0 skips the peers; DENSE_MB=50 sizes
#                                     the secret-dense file)
#
# Builds a corpus of SIZE_MB from ../shared/corpus, else tests/corpus (sessions, repeated), then
# times each command (best of $RUNS runs, default 5: a shared VM is noisy) and prints MiB/s.
# With PEERS=1 (the default) the detection peers kingfisher and betterleaks (PyPI, installed
# by scripts/peers-venv.sh) scan the same corpus and the secret-dense file in detect mode (no
# validation, no network), each beside `cchist check`; every ratio is printed in the table.
# Needs: cargo, python3, rg (ripgrep) and jq from the machine's registries
# (apt-get install ripgrep jq).
set -euo pipefail
cd "$(dirname "$0")/.."
SIZE_MB=${1:-256}
RUNS=${RUNS:-5}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

for tool in rg jq python3; do
  command -v "$tool" >/dev/null || { echo "compare.sh needs $tool (apt-get install ripgrep jq python3)" >&2; exit 2; }
done

cargo build --release --quiet
BIN=$PWD/target/release/cchist
CORPUS=$WORK/corpus.jsonl
python3 scripts/bigfile.py "$SIZE_MB" "$CORPUS" --all
BYTES=$(stat -c %s "$CORPUS")
"$BIN" rules --keywords > "$WORK/keywords.txt"
cat "$CORPUS" > /dev/null   # warm the page cache

best() { # best wall time of $RUNS runs, in seconds
  local best=999999
  for _ in $(seq "$RUNS"); do
    local s e
    s=$(date +%s.%N)
    taskset -c 0 bash -c "$1" > /dev/null 2>&1 || true
    e=$(date +%s.%N)
    best=$(awk -v s="$s" -v e="$e" -v b="$best" 'BEGIN { t = e - s; print (t < b ? t : b) }')
  done
  echo "$best"
}

# Detect mode of the detection peers on FILE, as `cchist check` runs (every finding reported,
# nothing validated over the network, no size limit: the corpus may pass kingfisher's 256 MB).
KF="kingfisher 2.14 (detect)"
BL="betterleaks 2.0 (detect)"
kingfisher_cmd() { echo "'$PEERS_BIN/kingfisher' scan '$1' --format json --no-validate --no-dedup --no-update-check --max-file-size 0"; }
betterleaks_cmd() { echo "'$PEERS_BIN/betterleaks' '$1' -o '$WORK/betterleaks.json' --no-banner"; }
CHECK_REFS="rg (redact keywords)"
if [ "${PEERS:-1}" = 1 ]; then
  PEERS_BIN=$(scripts/peers-venv.sh)
  CHECK_REFS="rg (redact keywords);$KF;$BL"
  # One untimed run of each on a small file with planted secrets: kingfisher builds its rule
  # cache on first use (~15 s), and a peer that finds nothing there is not working (its timings
  # would mean nothing).
  FAKE_PEM=$WORK/fake_rsa.pem python3 scripts/peers_gen.py small "$WORK/probe.jsonl" > /dev/null
  bash -c "$(kingfisher_cmd "$WORK/probe.jsonl")" > "$WORK/kingfisher.json" 2> /dev/null || true
  bash -c "$(betterleaks_cmd "$WORK/probe.jsonl")" > /dev/null 2>&1 || true
  python3 - "$WORK/kingfisher.json" "$WORK/betterleaks.json" <<'PY' || exit 2
import json, sys
def count(path):
    try:
        return len(json.JSONDecoder().raw_decode(open(path).read())[0].get("findings") or [])
    except (OSError, ValueError):
        return 0
for name, path in zip(("kingfisher", "betterleaks"), sys.argv[1:]):
    if count(path) == 0:
        sys.exit(f"compare.sh: {name} found nothing in a file with planted secrets; "
                 f"check target/peers-venv (rm -rf it to reinstall)")
PY
fi

declare -a NAMES CMDS REFS
# add NAME COMMAND [REFERENCES]: the rows (`;`-separated) the ratio compares against.
add() { NAMES+=("$1"); CMDS+=("$2"); REFS+=("${3:-}"); }
add "cat"                         "cat '$CORPUS'"
add "wc -l"                       "wc -l '$CORPUS'"
add "rg (redact keywords)"        "rg -c -i -F -f '$WORK/keywords.txt' '$CORPUS'"
add "jq -c ."                     "jq -c . '$CORPUS'"
if [ "${PEERS:-1}" = 1 ]; then
  add "$KF"                       "$(kingfisher_cmd "$CORPUS")"
  add "$BL"                       "$(betterleaks_cmd "$CORPUS")"
fi
add "cchist identity"             "'$BIN' run -p filters/identity.toml '$CORPUS'" "wc -l"
add "cchist identity (stdin)"     "'$BIN' run -p filters/identity.toml < '$CORPUS'" "wc -l"
add "cchist redact"               "'$BIN' redact '$CORPUS'" "rg (redact keywords)"
add "cchist check"                "'$BIN' check '$CORPUS'" "$CHECK_REFS"
add "cchist run -p scrub"         "'$BIN' run -p scrub '$CORPUS'" "jq -c ."
add "cchist run -p share"         "'$BIN' run -p share '$CORPUS'" "jq -c ."
add "cchist validate"             "'$BIN' validate '$CORPUS'" "jq -c ."

printf '%s MB corpus, %s, %s, %s\n\n' "$((BYTES >> 20))" "$(nproc) cores (runs pinned to one)" "$(uname -m)" "$(date -u +%Y-%m-%d)"
# ratio TIME REFS: how many times faster than each reference row ("1.17x rg, 30.1x kingfisher").
ratio() {
  local out="" ref
  IFS=';' read -r -a refs <<< "$2"
  for ref in "${refs[@]}"; do
    out+="${out:+, }$(awk -v r="${SECONDS_OF[$ref]}" -v t="$1" -v n="$ref" 'BEGIN { printf "%.2fx %s", r / t, n }')"
  done
  echo "$out"
}
printf '| %-26s | %10s | %10s | %-28s |\n' "command" "seconds" "MiB/s" "ratio"
printf '|%s|%s|%s|%s|\n' "----------------------------" "------------" "------------" "------------------------------"
# scrub = redact + relink; share = redact + drop-tool-noise + relink (the issue's "scrub chain")
declare -A SECONDS_OF
for i in "${!NAMES[@]}"; do
  t=$(best "${CMDS[$i]}")
  SECONDS_OF[${NAMES[$i]}]=$t
  mbs=$(awk -v b="$BYTES" -v t="$t" 'BEGIN { print b / 1048576 / t }')
  printf '| %-26s | %10.3f | %10.0f | %-28s |\n' "${NAMES[$i]}" "$t" "$mbs" "$(ratio "$t" "${REFS[$i]}")"
done

# Peers on secret-dense input (every tenth round holds keys, as a leaked .env session does):
# the redacting peers credcloak, neuralyzer and agentsweep from PyPI in a throwaway virtualenv,
# each run in a scratch HOME on a fresh copy of the dense file; the detection peers on the file
# itself, best of $RUNS like cchist. PEERS=0 skips this part.
if [ "${PEERS:-1}" = 1 ]; then
  python3 -m venv "$WORK/venv"
  "$WORK/venv/bin/pip" install -q credcloak==0.1.0 neuralyzer==0.1.0 agentsweep==0.1.9
  DENSE=$WORK/dense.jsonl
  FAKE_PEM=$WORK/fake_rsa.pem python3 scripts/peers_gen.py big "$DENSE" "${DENSE_MB:-50}"
  DBYTES=$(stat -c %s "$DENSE")
  SID=3f2b8c1e-6d4a-4f7e-9b2c-8a1d5e6f7a90
  # peer NAME COMMAND: best of $PEER_RUNS (default 1) runs in a fresh scratch HOME ($H, session $S)
  peer() {
    local best=999999
    for _ in $(seq "${PEER_RUNS:-1}"); do
      local H=$WORK/home-$1; rm -rf "$H"; mkdir -p "$H/.claude/projects/-home-alice-proj"
      local S=$H/.claude/projects/-home-alice-proj/$SID.jsonl; cp "$DENSE" "$S"
      local s e
      s=$(date +%s.%N)
      HOME=$H CLAUDE_CONFIG_DIR=$H/.claude XDG_CONFIG_HOME=$H/.config XDG_DATA_HOME=$H/.local/share \
        XDG_CACHE_HOME=$H/.cache H=$H S=$S taskset -c 0 bash -c "$2" > /dev/null 2>&1 < /dev/null || true
      e=$(date +%s.%N)
      best=$(awk -v s="$s" -v e="$e" -v b="$best" 'BEGIN { t = e - s; print (t < b ? t : b) }')
    done
    echo "$best"
  }
  V=$WORK/venv/bin
  declare -A PT
  PT[credcloak 0.1.0]=$(peer credcloak "'$V/credcloak' scrub --transcript \"\$S\"")
  PT[neuralyzer 0.1.0]=$(peer neuralyzer "'$V/neuralyzer' scrub --apply \"\$S\"")
  PT[agentsweep 0.1.9]=$(peer agentsweep "echo REDACT | '$V/agentsweep' fix --root \"\$H/.claude\" --force --no-backup --allow-production")
  FASTEST=999999
  for k in "${!PT[@]}"; do FASTEST=$(awk -v a="${PT[$k]}" -v b="$FASTEST" 'BEGIN { print (a < b ? a : b) }'); done
  DT_KF=$(best "$(kingfisher_cmd "$DENSE")")
  DT_BL=$(best "$(betterleaks_cmd "$DENSE")")
  printf '\nsecret-dense file: %s MB, %s lines\n\n' "$((DBYTES >> 20))" "$(wc -l < "$DENSE")"
  printf '| %-26s | %10s | %10s | %-28s |\n' "tool" "seconds" "MiB/s" "ratio (x = times faster)"
  printf '|%s|%s|%s|%s|\n' "----------------------------" "------------" "------------" "------------------------------"
  # row NAME SECONDS [REFERENCE=SECONDS…]: the ratio to each reference; none: to the fastest
  # redacting peer.
  row() {
    local mbs ratio="" name=$1 t=$2 r
    shift 2
    mbs=$(awk -v b="$DBYTES" -v t="$t" 'BEGIN { print b / 1048576 / t }')
    [ $# -gt 0 ] || set -- "fastest redacting peer=$FASTEST"
    for r in "$@"; do
      ratio+="${ratio:+, }$(awk -v f="${r##*=}" -v t="$t" -v n="${r%=*}" 'BEGIN { printf "%.1fx %s", f / t, n }')"
    done
    printf '| %-26s | %10.3f | %10.1f | %-28s |\n' "$name" "$t" "$mbs" "$ratio"
  }
  for k in "credcloak 0.1.0" "neuralyzer 0.1.0" "agentsweep 0.1.9"; do row "$k" "${PT[$k]}"; done
  row "$KF" "$DT_KF" "betterleaks=$DT_BL"
  row "$BL" "$DT_BL" "kingfisher=$DT_KF"
  row "cchist redact" "$(best "'$BIN' redact '$DENSE'")"
  row "cchist run -p scrub" "$(best "'$BIN' run -p scrub '$DENSE'")"
  row "cchist check" "$(best "'$BIN' check '$DENSE'")" "kingfisher=$DT_KF" "betterleaks=$DT_BL"
fi
