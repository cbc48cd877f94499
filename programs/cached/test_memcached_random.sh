#!/bin/sh
# Runs test_memcached_random.py (random request streams sent to
# admit-cached and to memcached, replies compared byte for byte) against the
# built admit-cached; skips (77) without python3 or memcached.  By hand:
# ADMIT_DIFF_SEED=N ADMIT_DIFF_REQUESTS=N programs/cached/test_memcached_random.sh
: "${top_srcdir:=.}"
if ! command -v python3 >/dev/null 2>&1; then
	echo "SKIP python3 not found"
	exit 77
fi
exec python3 "$top_srcdir/programs/cached/test_memcached_random.py"
