#!/usr/bin/env bash
# A JSON deny whose reason makes stdout larger than the bridge reads (256 KB).
cat >/dev/null
printf '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"'
head -c 300000 /dev/zero | tr '\0' 'r'
printf '"}}'
