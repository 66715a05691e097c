#!/usr/bin/env bash
# Check the import structure of src/: no import circles between files, and no arrow running
# back up the layer order below (a folder may use only folders below it). Reads `use`
# lines and `crate::`/`cchist::`/`super::` paths as text, tests left out (`#[cfg(test)]`
# modules at the end of a file, `tests.rs`). Prints each circle and upward arrow, then a
# summary; exits 1 when there is any.
#
#   scripts/check-layers.sh            # check
#   scripts/check-layers.sh --edges    # also print every folder-to-folder arrow
set -euo pipefail
cd "$(dirname "$0")/.."
python3 - "$@" <<'PY'
import os, re, sys

# The layer order, bottom first: a folder (or top-level file) may import only from folders
# on its own line or below. `lib.rs` and `testkit.rs` declare and re-export; they are not
# layers.
LAYERS = [
    ["error", "json"],
    ["io"],
    ["transcript"],
    ["stages"],
    ["findings"],
    ["engine"],
    ["claude"],
    ["cmd"],
    ["cli"],
    ["main"],
]
RANK = {name: i for i, names in enumerate(LAYERS) for name in names}
BINARY = {"cmd", "cli", "main"}  # the binary crate: `crate::` is the binary, `cchist::` the library

files = {}
for dirpath, _, names in os.walk("src"):
    for n in names:
        if n.endswith(".rs"):
            p = os.path.join(dirpath, n)
            files[p] = None

def module_of(path):
    """Module path segments of a file: src/a/b.rs -> [a, b]; src/a/mod.rs -> [a]."""
    rel = path[len("src/"):-len(".rs")].split("/")
    if rel[-1] == "mod":
        rel = rel[:-1]
    return rel

def folder_of(path):
    return module_of(path)[0]

by_module = {tuple(module_of(p)): p for p in files}

def resolve(segs):
    """The file a path of module segments names: the longest prefix that is a file."""
    for k in range(len(segs), 0, -1):
        f = by_module.get(tuple(segs[:k]))
        if f:
            return f
    return None

def production_text(path):
    text = open(path, encoding="utf-8").read()
    # Tests sit in a `#[cfg(test)] mod …` at the end of a file: cut there.
    m = re.search(r"^#\[cfg\(test\)\]\s*\n\s*mod\s", text, re.M)
    if m:
        text = text[: m.start()]
    text = re.sub(r"//[^\n]*", "", text)
    return text

PATH = re.compile(r"\b(crate|cchist|super|self)((?:::[A-Za-z_][A-Za-z0-9_]*)+)(::\{)?")

def brace_group(text, start):
    """The text inside the braces opening at text[start-1] == '{'."""
    depth, i = 1, start
    while i < len(text) and depth:
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
        i += 1
    return text[start : i - 1]

def split_top(s):
    out, depth, cur = [], 0, ""
    for ch in s:
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    out.append(cur)
    return [x.strip() for x in out if x.strip()]

def expand(prefix, inner):
    paths = []
    for item in split_top(inner):
        item = re.sub(r"\s+as\s+\w+$", "", item)
        if "{" in item:
            head, _, rest = item.partition("::{")
            paths += expand(prefix + [s for s in head.split("::") if s], rest.rsplit("}", 1)[0])
        else:
            paths.append(prefix + [s for s in item.split("::") if s and s != "self"])
    return paths

edges = {}
for f in files:
    if f.endswith("/tests.rs") or "/tests/" in f:
        continue
    me = module_of(f)
    is_mod = f.endswith("/mod.rs") or f in ("src/lib.rs", "src/main.rs")
    text = production_text(f)
    for m in PATH.finditer(text):
        root, rest = m.group(1), [s for s in m.group(2).split("::") if s]
        paths = [rest]
        if m.group(3):
            paths = expand(rest, brace_group(text, m.end()))
        for segs in paths:
            if root == "crate":
                if folder_of(f) in BINARY and segs and segs[0] not in ("cmd", "cli"):
                    continue
                target = segs
            elif root == "cchist":
                target = segs
            else:
                # `super` is the parent module of this file's module (its own for a mod.rs
                # the module itself is the folder); `self` is this module.
                base = me if is_mod else me[:-1]
                if root == "super":
                    target = base[:-1] + segs if is_mod else base + segs
                else:
                    target = me + segs
            t = resolve(target)
            if t and t != f:
                edges.setdefault(f, set()).add(t)

# Circles: strongly connected components of more than one file (Tarjan).
index, low, stack, on, sccs, counter = {}, {}, [], set(), [], [0]
sys.setrecursionlimit(10000)
def strong(v):
    index[v] = low[v] = counter[0]; counter[0] += 1
    stack.append(v); on.add(v)
    for w in edges.get(v, ()):
        if w not in index:
            strong(w); low[v] = min(low[v], low[w])
        elif w in on:
            low[v] = min(low[v], index[w])
    if low[v] == index[v]:
        comp = []
        while True:
            w = stack.pop(); on.discard(w); comp.append(w)
            if w == v:
                break
        if len(comp) > 1:
            sccs.append(sorted(comp))
for v in sorted(files):
    if v not in index:
        strong(v)

upward, folder_edges = [], set()
for a, ts in sorted(edges.items()):
    fa = folder_of(a)
    for b in sorted(ts):
        fb = folder_of(b)
        if fa == fb or fa not in RANK or fb not in RANK:
            continue
        folder_edges.add((fa, fb))
        if RANK[fb] > RANK[fa]:
            upward.append((a, b))

for c in sccs:
    print("circle: " + " <-> ".join(c))
for a, b in upward:
    print(f"upward: {a} -> {b} ({folder_of(a)} is below {folder_of(b)})")
if "--edges" in sys.argv[1:]:
    for a, b in sorted(folder_edges):
        print(f"arrow: {a} -> {b}")
print(f"{len(sccs)} import circles, {len(upward)} upward arrows, {len(folder_edges)} arrows between folders")
sys.exit(1 if sccs or upward else 0)
PY
