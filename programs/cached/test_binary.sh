#!/bin/sh
# Runs test_binary.py (the binary protocol, case by case) against the built
# admit-cached; skips (77) without python3.
: "${top_srcdir:=.}"
if ! command -v python3 >/dev/null 2>&1; then
	echo "SKIP python3 not found"
	exit 77
fi
exec python3 "$top_srcdir/programs/cached/test_binary.py"
