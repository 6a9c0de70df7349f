#!/usr/bin/env bash
cat >/dev/null
echo "boom" >&2
exit 3
