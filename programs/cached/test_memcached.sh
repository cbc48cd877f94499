#!/bin/sh
# Runs test_memcached.py (admit-cached's replies against memcached's, byte
# for byte) against the built admit-cached; skips (77) without python3 or
# memcached.
: "${top_srcdir:=.}"
if ! command -v python3 >/dev/null 2>&1; then
	echo "SKIP python3 not found"
	exit 77
fi
exec python3 "$top_srcdir/programs/cached/test_memcached.py"
