#!/bin/sh
# bench_ab.sh - two builds of libadmit.so under one bench_cuckoo binary,
# alternated round by round (each round's first the other of the round
# before): is a change of the library faster or slower?
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
r=0
while [ "$r" -lt "$rounds" ]; do
	order="old new"
	[ $((r % 2)) = 1 ] && order="new old"
	for v in $order; do
		d=$old
		[ "$v" = new ] && d=$new
		LD_LIBRARY_PATH=$d "$bin" --n "$n" --bits "$bits" --threads 1 \
		  --loads 95 --reps 1 --seconds 0.25 --keep --structures admit ${AB_ARGS:---no-u64} \
		  --csv 2>/dev/null |
		awk -F, -v v="$v" -v r="$r" '$1 == "admit" { print v, r, $5, $6 }' >> "$out"
	done
	r=$((r + 1))
done
echo "$n keys, $bits bits, $rounds rounds: op, old and new Mops/s (medians), new / old (median, range)"
awk '
function median(a, k,   i, j, t) {
	for (i = 1; i <= k; i++)
		for (j = i + 1; j <= k; j++)
			if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
	return k % 2 ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
}
{ v[$1, $2, $3] = $4; ops[$3] = 1; if ($2 + 1 > rounds) rounds = $2 + 1 }
END {
	for (op in ops) {
		delete O; delete N; delete Q
		k = 0
		for (r = 0; r < rounds; r++)
			if ((("old", r, op) in v) && (("new", r, op) in v)) {
				k++
				O[k] = v["old", r, op]; N[k] = v["new", r, op]
				Q[k] = N[k] / O[k]
			}
		if (!k)
			continue
		lo = hi = Q[1]
		for (i = 2; i <= k; i++) {
			if (Q[i] < lo) lo = Q[i]
			if (Q[i] > hi) hi = Q[i]
		}
		printf "%-14s %8.2f %8.2f  %.3f (%.2f-%.2f)\n", op, median(O, k),
		       median(N, k), median(Q, k), lo, hi
	}
}' "$out"
