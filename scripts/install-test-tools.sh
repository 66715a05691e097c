#!/usr/bin/env bash
# Install the tools the tests use, pinned and cached under target/, and export where they are.
# The one place that installs anything for the tests: a test never runs npm, apt or git
# itself; without its tool it skips visibly (and fails under CI=true).
#
#   . scripts/install-test-tools.sh     # from the repository root (what .ci/run does)
#
# Exports CCHIST_CLAUDE_BIN (the Claude Code CLI for tests/claude), CCHIST_SARIF_MULTITOOL (the
# SARIF schema test) and, where github.com is reachable, CCHIST_GITLEAKS_EXAMPLES with
# CCHIST_GITLEAKS_REQUIRED=1 (the gitleaks breadth test).
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  echo "source this script (. scripts/install-test-tools.sh) so that its exports reach your shell" >&2
fi
cd "$(dirname "${BASH_SOURCE[0]}")/.." || return 2 2>/dev/null || exit 2

echo "== strace and setpriv for the reliability tests, tmux for the status-line test (CI=true turns their skips into failures)"
if ! command -v strace >/dev/null 2>&1 || ! command -v setpriv >/dev/null 2>&1 || ! command -v tmux >/dev/null 2>&1; then
  (apt-get update && apt-get install -y strace util-linux tmux jq) >/dev/null 2>&1 || true
fi
command -v tmux >/dev/null 2>&1 || echo "warning: tmux missing; the status-line test will fail under CI=true" >&2
command -v strace >/dev/null 2>&1 || echo "warning: strace missing; the rename-window test will fail under CI=true" >&2

echo "== Claude Code CLI for the resume tests (pinned, cached under target/)"
CLI_DIR="target/claude-cli"
CLI_BIN="$CLI_DIR/node_modules/@anthropic-ai/claude-code-linux-x64/claude"
if [ ! -x "$CLI_BIN" ]; then
  if ! command -v npm >/dev/null 2>&1; then
    (apt-get update && apt-get install -y nodejs npm) >/dev/null 2>&1 || true
  fi
  mkdir -p "$CLI_DIR"
  npm install --no-audit --no-fund --prefix "$CLI_DIR" @anthropic-ai/claude-code@2.1.328 >/dev/null 2>&1 || true
fi
if [ -x "$CLI_BIN" ]; then
  export CCHIST_CLAUDE_BIN="$PWD/$CLI_BIN"
  echo "claude: $("$CLI_BIN" --version 2>/dev/null || echo unknown)"
else
  echo "warning: could not install the Claude Code CLI; resume tests will fail under CI=true" >&2
fi

echo "== SARIF Multitool for the SARIF schema test (pinned, cached under target/)"
SARIF_DIR="target/sarif-tool"
SARIF_BIN="$SARIF_DIR/node_modules/@microsoft/sarif-multitool-linux/Sarif.Multitool"
if [ ! -f "$SARIF_BIN" ]; then
  mkdir -p "$SARIF_DIR"
  npm install --no-audit --no-fund --prefix "$SARIF_DIR" @microsoft/sarif-multitool@5.7.0 >/dev/null 2>&1 || true
fi
if [ -f "$SARIF_BIN" ]; then
  chmod u+x "$SARIF_BIN"
  export CCHIST_SARIF_MULTITOOL="$PWD/$SARIF_BIN"
else
  echo "warning: could not install the SARIF Multitool; the SARIF schema test will fail under CI=true" >&2
fi

echo "== gitleaks rule examples for the breadth test (pinned commit, generated, never committed)"
# The examples are gitleaks' text (MIT): they stay out of this repository. Where the machine
# reaches GitHub, clone gitleaks (no build, no checkout) and extract them at the pinned commit,
# then require the breadth test to run; elsewhere it reports itself skipped.
GITLEAKS_COMMIT=b58d3f102cf3a2c84cb7f923d05c25c9b1aed84b
GITLEAKS_GIT="target/gitleaks.git"
GITLEAKS_EXAMPLES="$PWD/target/gitleaks-examples.json"
if [ ! -s "$GITLEAKS_EXAMPLES" ]; then
  if [ ! -d "$GITLEAKS_GIT" ]; then
    timeout 120 git clone --quiet --bare --filter=blob:none https://github.com/gitleaks/gitleaks "$GITLEAKS_GIT" >/dev/null 2>&1 || rm -rf "$GITLEAKS_GIT"
  fi
  if [ -d "$GITLEAKS_GIT" ]; then
    python3 scripts/gitleaks-examples.py "$GITLEAKS_GIT" "$GITLEAKS_COMMIT" -o "$GITLEAKS_EXAMPLES" || rm -f "$GITLEAKS_EXAMPLES"
  fi
fi
if [ -s "$GITLEAKS_EXAMPLES" ]; then
  export CCHIST_GITLEAKS_EXAMPLES="$GITLEAKS_EXAMPLES" CCHIST_GITLEAKS_REQUIRED=1
else
  echo "warning: github.com not reachable; the gitleaks breadth test will report itself skipped" >&2
fi
