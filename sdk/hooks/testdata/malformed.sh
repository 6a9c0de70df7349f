#!/usr/bin/env bash
cat >/dev/null
echo "{not json"
