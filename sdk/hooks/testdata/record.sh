#!/usr/bin/env bash
cat > "$1"
