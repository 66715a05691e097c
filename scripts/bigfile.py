#!/usr/bin/env python3
"""Write a transcript of about SIZE_MB made of ordinary corpus records (for memory and speed runs).

usage: scripts/bigfile.py SIZE_MB OUT.jsonl
"""
import os, sys

here = os.path.dirname(os.path.abspath(__file__))
corpus = os.path.join(here, "..", "..", "shared", "corpus", "generated")
size = int(sys.argv[1]) << 20
lines = []
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
