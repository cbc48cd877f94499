#!/bin/sh
# bench_ref.sh - admit's cuckoo filter against the CoNEXT 2014 authors'
# filter as a user's program meets each (doc/filter-benchmarks.md):
# bench/user_filter.c built with `cc -O2 -march=native $(pkg-config
# --cflags --libs admit)` against the library installed in PREFIX, and
# bench/user_ref.cc, the same program on the reference's own header-only
# code, built with `c++ -O2 -march=native`.  Run alternately, ROUNDS times
# (the order swapped every round), at 8 and 16 bits and in semi-sorted
# buckets of 13-bit fingerprints (BITS 13: admit's semi_sorted layout
# against the reference's PackedTable), N keys; then, at
# BIG_N keys, admit's 8-byte-key batch against the machine's prefetched
# two-line limit (user_filter --batch-only --limit).
#
# usage: bench_ref.sh SRCDIR PREFIX REFDIR
# environment: N (default 16777216), BIG_N (268435456; 0 skips),
#              ROUNDS (5), BITS ("8 16 13"), BIG_BITS (the widths of the
#              BIG_N runs, "8 16"), REF_FLAGS (the reference's compiler
#              flags, "-O2 -march=native" as a user's program), LIMIT
#              (1: the N-key runs measure the machine's limits too, and
#              each limit is compared with the reference's lookup+: what
#              a batch reading two lines a key, or one, could reach)
# Prints every run's Mops/s, then per op the medians and the median of the
# per-round ratios admit / reference; and each filter's bits per item and
# measured false-positive rate (percent) with their ratios.
set -e
src=$1 prefix=$2 ref=$3
n=${N:-16777216} big=${BIG_N:-268435456} rounds=${ROUNDS:-5}
bits_list=${BITS:-8 16 13}
big_bits=${BIG_BITS:-8 16}
limit=
[ "${LIMIT:-0}" = 1 ] && limit=--limit
if [ ! -f "$ref/cuckoofilter.h" ]; then
	echo "bench_ref.sh: no reference filter at $ref: skipped"
	exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
flags=$(PKG_CONFIG_PATH="$prefix/lib/pkgconfig" \
        pkg-config --define-variable=prefix="$prefix" --cflags --libs admit)
${CC:-cc} -O2 -march=native "$src/bench/user_filter.c" $flags -o "$tmp/user_admit"
${CXX:-c++} ${REF_FLAGS:--O2 -march=native} -I"$ref" "$src/bench/user_ref.cc" \
	-o "$tmp/user_ref"
LD_LIBRARY_PATH="$prefix/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export LD_LIBRARY_PATH
cat /proc/loadavg
git -C "$src" rev-parse --short HEAD 2>/dev/null || :
echo "admit: $(ldd "$tmp/user_admit" | grep libadmit)"

run() { # label program args...: "label op mops" lines
	label=$1
	shift
	"$@" | sed "s/^/$label /"
}

for b in $bits_list; do
	out="$tmp/runs-$b"
	: > "$out"
	r=0
	while [ "$r" -lt "$rounds" ]; do
		if [ $((r % 2)) -eq 0 ]; then
			run "$r admit" "$tmp/user_admit" "$n" "$b" $limit >> "$out"
			run "$r ref" "$tmp/user_ref" "$n" "$b" >> "$out"
		else
			run "$r ref" "$tmp/user_ref" "$n" "$b" >> "$out"
			run "$r admit" "$tmp/user_admit" "$n" "$b" $limit >> "$out"
		fi
		r=$((r + 1))
	done
	echo "== $n keys, $b-bit fingerprints, $rounds rounds (Mops/s: median; admit / ref: median of the rounds' ratios)"
	awk -v rounds="$rounds" '
	function median(a, k,   i, j, t) {
		for (i = 1; i <= k; i++)
			for (j = i + 1; j <= k; j++)
				if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
		return k % 2 ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
	}
	{ v[$2, $3, $1] = $4; ops[$3] = 1 }
	END {
		printf "%-14s %9s %9s %14s\n", "op", "admit", "ref", "admit / ref"
		split("insert lookup+ lookup- insert_u64 contains_u64 bits_per_item fpr_percent limit limit1", order, " ")
		for (o = 1; o <= 9; o++) {
			op = order[o]
			# the batches and the limits against the reference single calls
			rop = op == "insert_u64" ? "insert" : op ~ /^(contains_u64|limit1?)$/ ? "lookup+" : op
			ka = kr = kq = 0
			delete A; delete R; delete Q
			for (r = 0; r < rounds; r++) {
				if ((("admit", op, r) in v)) A[++ka] = v["admit", op, r]
				if ((("ref", rop, r) in v)) R[++kr] = v["ref", rop, r]
				if ((("admit", op, r) in v) && (("ref", rop, r) in v))
					Q[++kq] = v["admit", op, r] / v["ref", rop, r]
			}
			if (!ka)
				continue
			printf "%-14s %9.2f %9.2f %14.3f%s\n", op, median(A, ka),
			       median(R, kr), median(Q, kq),
			       rop != op ? "  (ref: " rop ")" : ""
		}
	}' "$out"
	cat "$out" | sed 's/^/  run: /'
done

[ "$big" -gt 0 ] || exit 0
for b in $big_bits; do
	out="$tmp/big-$b"
	: > "$out"
	r=0
	while [ "$r" -lt "$rounds" ]; do
		run "$r admit" "$tmp/user_admit" "$big" "$b" --batch-only --limit >> "$out"
		r=$((r + 1))
	done
	echo "== $big keys, $b-bit: the 8-byte batch against the prefetched two-line limit"
	awk -v rounds="$rounds" '
	function median(a, k,   i, j, t) {
		for (i = 1; i <= k; i++)
			for (j = i + 1; j <= k; j++)
				if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
		return k % 2 ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
	}
	{ v[$3, $1] = $4 }
	END {
		for (r = 0; r < rounds; r++) {
			C[r + 1] = v["contains_u64", r]; L[r + 1] = v["limit", r]
			I[r + 1] = v["insert_u64", r]; L1[r + 1] = v["limit1", r]
			Q[r + 1] = v["contains_u64", r] / v["limit", r]
		}
		printf "insert_u64 %.2f  contains_u64 %.2f  limit %.2f  limit1 %.2f Mops/s  contains_u64 / limit %.3f (median of rounds)\n",
		       median(I, rounds), median(C, rounds), median(L, rounds), median(L1, rounds), median(Q, rounds)
	}' "$out"
	cat "$out" | sed 's/^/  run: /'
done
