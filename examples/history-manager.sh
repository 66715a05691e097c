#!/bin/sh
# A history manager for `[hook] action = "command"` (the History Management proposal's example):
# at turn 10, replace turns 1-5 with a summary, the summary text written by cchist itself
# (summarize-range's digest of those turns: prompts, files, commands, errors, open todos).
#
#   [hook]
#   action = "command"
#   command = "/path/to/history-manager.sh"
#   at_turns = [10]
#
# cchist runs it once the turn is complete, with the turn's facts in the environment
# (TURN_COUNT, TURN_1 ... TURN_n, TRANSCRIPT_PATH, CCHIST: the cchist binary) and as JSON on
# stdin. It prints nothing (nothing to do) or one modify_history document; cchist applies it
# to a fork (redacted, relinked) and tells the user `claude --resume <fork>`.
# Needs jq (to pick the summary out of summarize-range's output and to quote it as JSON).
set -eu
cat >/dev/null # the JSON input: this manager reads the environment instead
[ "${TURN_COUNT:-0}" -eq 10 ] || exit 0
cchist=${CCHIST:-cchist}
# summarize-range prints the transcript with turns 1-5 replaced by one summary record; keep
# that record's text.
summary=$("$cchist" summarize-range --turns 1-5 "$TRANSCRIPT_PATH" |
  jq -r 'select(.cchistSummary != null) | .message.content')
if [ -z "$summary" ]; then
  echo "history-manager: summarize-range wrote no summary" >&2
  exit 1
fi
jq -cn --arg s "$summary" \
  --arg t1 "$TURN_1" --arg t2 "$TURN_2" --arg t3 "$TURN_3" --arg t4 "$TURN_4" --arg t5 "$TURN_5" \
  '{action: "modify_history",
    operations: [{type: "replace", turns: [$t1, $t2, $t3, $t4, $t5],
                  with: {type: "user", content: ("Summary of turns 1-5 (by cchist):\n" + $s)}}]}'
