#!/usr/bin/env bash
# Compare the outputs of every shipped pipeline between two cchist binaries, file by file, on
# a corpus (default: tests/corpus, plus ../shared/corpus when present). Prints one line per
# (pipeline, file) that differs and a summary; exits 1 when anything differs. Records a stage
# creates (relink's answer to an unanswered tool call, a summary) had a fresh random uuid on
# every run before their uuids were derived from what they stand for; so that such binaries
# compare, uuids absent from the input are numbered in order of appearance first.
#
#   scripts/compare-outputs.sh OLD_BINARY [NEW_BINARY] [CORPUS_DIR…]
set -euo pipefail
old=${1:?usage: compare-outputs.sh OLD_BINARY [NEW_BINARY] [CORPUS_DIR…]}
new=${2:-target/release/cchist}
shift $(( $# >= 2 ? 2 : 1 ))
dirs=("$@")
if [ ${#dirs[@]} -eq 0 ]; then
  [ -d tests/corpus ] && dirs+=(tests/corpus)
  [ -d ../shared/corpus ] && dirs+=(../shared/corpus)
fi
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
normalize() { # normalize INPUT OUTPUT: number the uuids of OUTPUT that INPUT does not hold
  python3 - "$1" "$2" <<'PY'
import re, sys
known = set(re.findall(rb"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", open(sys.argv[1], "rb").read()))
fresh = {}
def sub(m):
    u = m.group(0)
    return u if u in known else fresh.setdefault(u, b"<new-uuid-%d>" % len(fresh))
data = open(sys.argv[2], "rb").read()
open(sys.argv[2], "wb").write(re.sub(rb"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", sub, data))
PY
}
same=0; differ=0
while IFS= read -r -d '' f; do
  for p in identity scrub share compact; do
    "$old" run -p "$p" "$f" >"$tmp/old" 2>/dev/null || true
    "$new" run -p "$p" "$f" >"$tmp/new" 2>/dev/null || true
    if ! cmp -s "$tmp/old" "$tmp/new"; then
      normalize "$f" "$tmp/old"
      normalize "$f" "$tmp/new"
    fi
    if cmp -s "$tmp/old" "$tmp/new"; then
      same=$((same + 1))
    else
      differ=$((differ + 1))
      echo "differs: $p $f"
    fi
  done
done < <(find "${dirs[@]}" -name '*.jsonl' -print0 | sort -z)
echo "$same identical, $differ differ (pipelines identity, scrub, share, compact)"
[ "$differ" -eq 0 ]
