#!/usr/bin/env bash
cat >/dev/null
echo "Today is Monday"
