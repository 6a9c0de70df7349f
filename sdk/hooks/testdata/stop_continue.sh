#!/usr/bin/env bash
input=$(cat)
case "$input" in *'"stop_hook_active":true'*) exit 0 ;; esac
echo '{"decision":"block","reason":"Also run the tests"}'
