#!/usr/bin/env bash
cat >/dev/null
echo '{"continue":false,"stopReason":"enough for today"}'
