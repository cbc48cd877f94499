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
# admit, the two in turn and each round's first the other of the round
# before (so that what the order does cancels), and prints the medians
# of both libraries' operations per second and CPU an operation, and the
# median of the rounds' new / old ratios of operations per second, with
# their range.  The two libraries must export the same calls (a change
# inside the library, not of its interface).
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
r=0
while [ "$r" -lt "$rounds" ]; do
	order="old new"
	[ $((r % 2)) = 1 ] && order="new old"
	for v in $order; do
		d=$old
		[ "$v" = new ] && d=$new
		LD_LIBRARY_PATH=$d "$bin" --stream "$stream" --cache admit \
		  --mix "$mix" --threads "$threads" |
		sed -n 's/^RESULT .*mops=\([0-9.]*\) .*cpu_ns=\([0-9.]*\)$/\1 \2/p' |
		awk -v v="$v" -v r="$r" '{ print v, r, $1, $2 }' >> "$out"
	done
	r=$((r + 1))
done
echo "$mix % gets, $threads thread(s), $rounds rounds: old and new M ops/s and CPU ns/op (medians), new / old ops/s (median, range)"
awk '
function median(a, k,   i, j, t) {
	for (i = 1; i <= k; i++)
		for (j = i + 1; j <= k; j++)
			if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
	return k % 2 ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
}
{ m[$1, $2] = $3; c[$1, $2] = $4; if ($2 + 1 > rounds) rounds = $2 + 1 }
END {
	k = 0
	for (r = 0; r < rounds; r++)
		if ((("old", r) in m) && (("new", r) in m)) {
			k++
			O[k] = m["old", r]; N[k] = m["new", r]
			CO[k] = c["old", r]; CN[k] = c["new", r]
			Q[k] = N[k] / O[k]
		}
	if (!k) {
		print "bench_cache_ab.sh: no round completed" > "/dev/stderr"
		exit 1
	}
	lo = hi = Q[1]
	for (i = 2; i <= k; i++) {
		if (Q[i] < lo) lo = Q[i]
		if (Q[i] > hi) hi = Q[i]
	}
	printf "ops/s  %8.2f %8.2f  %.3f (%.2f-%.2f)\n", median(O, k),
	       median(N, k), median(Q, k), lo, hi
	printf "CPU ns %8.1f %8.1f\n", median(CO, k), median(CN, k)
}' "$out"
