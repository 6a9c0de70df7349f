#!/usr/bin/env bash
input=$(cat)
case "$input" in *'"source":"startup"'*) ;; *) exit 0 ;; esac
echo '{"hookSpecificOutput":{"hookEventName":"SessionStart","additionalContext":"The project uses Deno"}}'
