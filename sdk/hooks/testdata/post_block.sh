#!/usr/bin/env bash
cat >/dev/null
echo '{"decision":"block","reason":"the output leaks a secret"}'
