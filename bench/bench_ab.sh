#!/bin/sh
# bench_ab.sh - two builds of libadmit.so under one bench_cuckoo binary,
# alternated round by round (ab_rounds.sh): is a change of the library
# faster or slower?
#
# usage: bench_ab.sh OLD_LIBDIR NEW_LIBDIR [BITS [N [ROUNDS]]]
# (each LIBDIR holds a libadmit.so.1, e.g. a copy of .libs from a build of
# each commit; BITS default 16, N 15938355, ROUNDS 7).  Runs, from the
# build tree, bench/.libs/bench_cuckoo --keep --structures admit at one
# thread and 95 % load, and prints per op the medians and the median of
# the rounds' new / old ratios, with their range.  AB_ARGS: more
# bench_cuckoo arguments (default --no-u64, for an old library without the
# 8-byte-key batches; AB_ARGS=" " keeps them).
set -e
old=$1 new=$2 bits=${3:-16} n=${4:-15938355} rounds=${5:-7}
bin=${top_builddir:-.}/bench/.libs/bench_cuckoo
[ -x "$bin" ] || { echo "bench_ab.sh: build bench/bench_cuckoo first"; exit 1; }
out=$(mktemp)
trap 'rm -f "$out"' EXIT
# One run of the filter under libadmit.so.1 from $2, as $1, round $3.
run() {
	LD_LIBRARY_PATH=$2 "$bin" --n "$n" --bits "$bits" --threads 1 \
	  --loads 95 --reps 1 --seconds 0.25 --keep --structures admit ${AB_ARGS:---no-u64} \
	  --csv 2>/dev/null |
	awk -F, -v v="$1" -v r="$3" '$1 == "admit" { print v, r, $5, $6 }' >> "$out"
}
. "$(dirname "$0")/ab_rounds.sh"
ab_rounds "$rounds" "$old" "$new" run
echo "$n keys, $bits bits, $rounds rounds: op, old and new Mops/s (medians), new / old (median, range)"
awk -f "$(dirname "$0")/ab_summary.awk" "$out"
