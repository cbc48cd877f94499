#!/bin/sh
# bench_cache_ab.sh - two builds of libadmit.so under one bench_cache
# binary, alternated round by round: is a change of the cache faster or
# slower?
#
# usage: bench_cache_ab.sh OLD_LIBDIR NEW_LIBDIR [ROUNDS [MIX [THREADS]]]
# (each LIBDIR holds a libadmit.so.1, e.g. a copy of .libs from a build of
# each commit; ROUNDS default 9, MIX 100 or 95 (default 100), THREADS 1
# or 2 (default 1)).  Runs, from the build tree, bench/.libs/bench_cache
# --stream on one stream file (AB_STREAM, else one written to a temporary
# file: Zipf 0.99 over 2^20 keys, bench_cache's defaults) with --cache
# admit (AB_CACHE=admit-batch: the batched gets), the two in turn
# (ab_rounds.sh), and prints, for operations a
# second and CPU an operation, both libraries' medians and the median of
# the rounds' new / old ratios with their range (ab_summary.awk).  The
# two libraries must export the same calls (a change inside the library,
# not of its interface).
set -e
old=$1 new=$2 rounds=${3:-9} mix=${4:-100} threads=${5:-1}
if [ -z "$old" ] || [ -z "$new" ]; then
	echo "usage: bench_cache_ab.sh OLD_LIBDIR NEW_LIBDIR [ROUNDS [MIX [THREADS]]]" >&2
	exit 2
fi
bin=${top_builddir:-.}/bench/.libs/bench_cache
[ -x "$bin" ] || { echo "bench_cache_ab.sh: build bench/bench_cache first" >&2; exit 1; }
out=$(mktemp)
tmp=
trap 'rm -f "$out" $tmp' EXIT
stream=${AB_STREAM:-}
if [ -z "$stream" ]; then
	tmp=$(mktemp)
	stream=$tmp
	LD_LIBRARY_PATH=$old "$bin" --write "$stream" --threads 2 >/dev/null
fi
# One run of the cache under libadmit.so.1 from $2, as $1, round $3.
run() {
	LD_LIBRARY_PATH=$2 "$bin" --stream "$stream" --cache "${AB_CACHE:-admit}" \
	  --mix "$mix" --threads "$threads" |
	sed -n 's/^RESULT .*mops=\([0-9.]*\) .*cpu_ns=\([0-9.]*\)$/\1 \2/p' |
	awk -v v="$1" -v r="$3" \
	  '{ print v, r, "Mops/s", $1; print v, r, "CPU_ns/op", $2 }' >> "$out"
}
. "$(dirname "$0")/ab_rounds.sh"
ab_rounds "$rounds" "$old" "$new" run
echo "$mix % gets, $threads thread(s), $rounds rounds: old and new (medians), new / old (median, range)"
awk -f "$(dirname "$0")/ab_summary.awk" "$out"
