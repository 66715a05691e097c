#!/usr/bin/env python3
"""Write a transcript of about SIZE_MB made of ordinary corpus records (for memory and speed runs).

usage: scripts/bigfile.py SIZE_MB OUT.jsonl [--all]

By default only the generated sessions are used; --all adds every real corpus file (sub-agent
files included), which is what the throughput comparison measures.
"""
import os, sys

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.join(here, "..", "..", "shared", "corpus")
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
    written = 0
    while written < size:
        out.write(block)
        written += len(block)
