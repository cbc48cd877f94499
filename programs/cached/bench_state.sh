#!/bin/sh
# admit-cached --state-file with N items (default 1000000) of 100-byte
# values: save time, load time, items back with their flags and CAS.
# Run from the build directory: programs/cached/bench_state.sh [N]
# (make bench-state).
: "${top_srcdir:=$(dirname "$0")/../..}"
exec python3 "$top_srcdir/programs/cached/bench_state.py" "$@"
