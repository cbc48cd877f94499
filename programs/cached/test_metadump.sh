#!/bin/sh
# Runs test_metadump.py (lru_crawler metadump against memcached) against
# the built admit-cached; skips (77) without python3 (and, in it, without
# memcached).
: "${top_srcdir:=.}"
if ! command -v python3 >/dev/null 2>&1; then
	echo "SKIP python3 not found"
	exit 77
fi
exec python3 "$top_srcdir/programs/cached/test_metadump.py"
