#!/bin/sh
# Runs test_state.py (--state-file: round trip, expiry, bad files, a
# smaller --memory, a full disk) against the built admit-cached; skips (77)
# without python3.
: "${top_srcdir:=.}"
if ! command -v python3 >/dev/null 2>&1; then
	echo "SKIP python3 not found"
	exit 77
fi
exec python3 "$top_srcdir/programs/cached/test_state.py"
