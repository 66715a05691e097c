#!/usr/bin/env python3
"""Write a transcript of about SIZE_MB made of ordinary corpus records (for memory and speed runs).

usage: scripts/bigfile.py SIZE_MB OUT.jsonl [--all]

By default only the generated sessions are used; --all adds every real corpus file (sub-agent
files included), which is what the throughput comparison measures.
"""
import os, re, sys

UUID = re.compile(rb"\b([0-9a-f]{8})(-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\b")
IDS = re.compile(rb"\b((?:msg|toolu|req)_[A-Za-z0-9]+)")


def renumber(block, k):
    """Copy k of the corpus with every uuid, message, tool and request id changed the same way,
    so copies do not collide
    (a real session has no duplicate uuids) while references inside a copy still resolve."""
    if k == 0:
        return block
    block = UUID.sub(lambda m: b"%08x%s" % (int(m.group(1), 16) ^ k, m.group(2)), block)
    return IDS.sub(lambda m: m.group(1) + b"x%d" % k, block)

here = os.path.dirname(os.path.abspath(__file__))
# The extended corpus beside the repository (the README's figures were measured on it), else the
# repository's own.
root = os.path.join(here, "..", "..", "shared", "corpus")
if not os.path.isdir(root):
    root = os.path.join(here, "..", "tests", "corpus")
    print("note: no ../shared/corpus; using tests/corpus", file=sys.stderr)
dirs = [os.path.join(root, "generated")]
if "--all" in sys.argv[3:]:
    dirs.append(os.path.join(root, "real"))
size = int(sys.argv[1]) << 20
lines = []
for corpus in dirs:
    for name in sorted(os.listdir(corpus)):
        if name.endswith(".jsonl"):
            with open(os.path.join(corpus, name), "rb") as f:
                lines.extend(l if l.endswith(b"\n") else l + b"\n" for l in f)
block = b"".join(lines)
with open(sys.argv[2], "wb") as out:
    written, k = 0, 0
    while written < size:
        copy = renumber(block, k)
        out.write(copy)
        written += len(copy)
        k += 1
