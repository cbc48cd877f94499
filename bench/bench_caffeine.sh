#!/usr/bin/env bash
# bench_caffeine.sh - admit_lru against Caffeine, against the tight locked
# LRU cache a careful user writes by hand (bench/tightlru.c: a mutex, an
# open-addressed map, an LRU list in one array) and against a mutex around a
# chained hash map with an LRU list (bench/maplru.c), on the workload of
# bench/bench_cache.c (Zipf 0.99 over 1 M 8-byte keys, capacity 100,000,
# 32-byte values; 95 % gets and 5 % sets, and 100 % gets; 1 and 2 threads,
# 4 M operations per thread).  admit_lru runs twice: one call a get, and
# "batched", each run of up to 16 gets between two sets in one
# admit_lru_get_many_u64 call (the keys of a multi-key request); every other
# contender makes one call a get.
#
# admit_lru is measured as a user's program meets it: the build tree is
# installed into a temporary prefix (make install prefix=...), and
# bench_cache is compiled against that installation with
#   cc -O2 ... $(pkg-config --cflags --libs admit) -Wl,-rpath,PREFIX/lib
# so it runs the installed shared library, not the libtool-linked one.
#
# The contenders run alternately, one process each, in a rotated order
# every round (ROUNDS, 5 by default).  The tables give each contender's
# median over the rounds (operations per second of wall time, and CPU time
# per operation of the whole process) and the medians over the rounds of
# admit's ratio to each within the same round.  Caffeine runs twice: as
# built by default, its maintenance on ForkJoinPool.commonPool() (another
# core, where there is one), and with executor(Runnable::run), its
# maintenance on the calling thread as admit_lru's is ("Caffeine, caller").
#
#   bench/bench_caffeine.sh [BUILDDIR [ROUNDS]]    (make bench-caffeine)
#
# Caffeine is Debian's libcaffeine-java (2.6.2) run by java from
# default-jdk-headless; without them its columns are skipped with a
# message.  BENCH_OPS sets the operations per thread.  Run it on an idle
# machine: a build or a test beside it moves the figures.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/.." && pwd)
build=$(cd "${1:-.}" && pwd)
rounds=${2:-5}
ops=${BENCH_OPS:-4194304}
[ -f "$build/Makefile" ] || { echo "bench_caffeine: $build is not a configured build tree" >&2; exit 2; }
command -v pkg-config >/dev/null || { echo "bench_caffeine: pkg-config missing" >&2; exit 2; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The library installed as a user installs it, and the benchmark built
# against it.  --define-variable points admit.pc (written for the
# configured prefix) at the temporary one.
prefix=$tmp/prefix
make -C "$build" install prefix="$prefix" >"$tmp/install.log" 2>&1 ||
	{ tail -n 20 "$tmp/install.log"; echo "bench_caffeine: make install failed" >&2; exit 2; }
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
pc="pkg-config --define-variable=prefix=$prefix"
prog=$tmp/bench_cache
# bench_cache's helpers (the key mixer, the Zipf table) are the tests'
# headers; maplru hashes with xxHash, as the library does.
cc -O2 -I"$src/bench" -I"$src/tests/util" -I"$src/src" \
	"$src/bench/bench_cache.c" "$src/bench/maplru.c" "$src/bench/tightlru.c" \
	-o "$prog" $($pc --cflags --libs admit) $(pkg-config --cflags --libs libxxhash) \
	-Wl,-rpath,"$prefix/lib" -lpthread -lm
ldd "$prog" >"$tmp/ldd"
grep -q "=> $prefix/lib/libadmit.so" "$tmp/ldd" ||
	{ echo "bench_caffeine: $prog does not load $prefix/lib/libadmit.so" >&2; exit 2; }

jar=/usr/share/java/caffeine.jar
contenders="admit admit-batch tight maplru"
if command -v java >/dev/null && command -v javac >/dev/null && [ -f "$jar" ]; then
	javac -d "$tmp" -cp "$jar" "$here/CaffeineBench.java"
	contenders="admit admit-batch caffeine caffeine-caller tight maplru"
else
	echo "bench_caffeine: java, javac or $jar missing (apt-get install default-jdk-headless libcaffeine-java): Caffeine skipped"
fi

echo "load at start: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) CPUs; commit $(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo '?')"
echo "admit_lru through $($pc --libs admit) -Wl,-rpath,$prefix/lib; $rounds rounds"
"$prog" --write "$tmp/ops" --threads 2 --ops "$ops"

run() { # cache mix threads
	if [ "$1" = caffeine ]; then
		java -cp "$jar:$tmp" CaffeineBench "$tmp/ops" "$3" "$2" 100000 3
	elif [ "$1" = caffeine-caller ]; then
		java -cp "$jar:$tmp" CaffeineBench "$tmp/ops" "$3" "$2" 100000 3 caller
	else
		"$prog" --stream "$tmp/ops" --cache "$1" --mix "$2" --threads "$3" --passes 3
	fi
}

set -- $contenders
n=$#
for r in $(seq 1 "$rounds"); do
	for mix in 95 100; do
		for t in 1 2; do
			# Rotate the order so that no contender always runs first.
			for i in $(seq 0 $((n - 1))); do
				j=$(( (i + r) % n + 1 ))
				run "${!j}" "$mix" "$t" | grep '^RESULT' |
					sed "s/^RESULT/RESULT round=$r/" | tee -a "$tmp/results"
			done
		done
	done
done

awk '
function median(s,   n, i, j, t, v) {
	n = split(s, v, " ")
	if (n == 0)
		return 0
	for (i = 1; i <= n; i++)
		for (j = i + 1; j <= n; j++)
			if (v[j] + 0 < v[i] + 0) { t = v[i]; v[i] = v[j]; v[j] = t }
	return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
}
# The median over the rounds of what ("mops" or "cpu") of contender c at
# k ("mix threads"); 0 when c did not run.
function of(what, c, k,   s, r) {
	s = ""
	for (r = 1; r <= rounds; r++)
		if ((what, c, k, r) in val)
			s = s " " val[what, c, k, r]
	return median(s)
}
# The median over the rounds of a / b, a and b measured in the same round:
# contender a at ka against contender b at kb; "-" when either did not run.
function ratio(what, a, ka, b, kb,   s, r) {
	s = ""
	for (r = 1; r <= rounds; r++)
		if ((what, a, ka, r) in val && (what, b, kb, r) in val && val[what, b, kb, r] > 0)
			s = s " " val[what, a, ka, r] / val[what, b, kb, r]
	return s == "" ? "-" : sprintf("%.2f", median(s))
}
# A table at every mix and thread count of, for each contender of the
# list (what: "mops" or "cpu"): its median ("median", in width w with
# format fmt), the ratio of contender a to it ("ratio") or its ratio to a
# ("inverse").  The medians of operations a second end with the hit ratios.
function table(title, what, mode, a, list, heads, w, fmt,   n, o, h, i, mix, t, k, x, hits) {
	n = split(list, o, " ")
	split(heads, h, " ")
	hits = mode == "median" && what == "mops"
	printf "\n%-18s", title
	for (i = 1; i <= n; i++) printf " %*s", w, h[i]
	printf hits ? "   hit ratio admit/Caffeine/tight\n" : "\n"
	for (mix = 95; mix <= 100; mix += 5)
		for (t = 1; t <= 2; t++) {
			k = mix " " t
			printf "%-18s", label(mix, t)
			for (i = 1; i <= n; i++) {
				if (mode == "median")
					x = cell(of(what, o[i], k), fmt)
				else if (mode == "ratio")
					x = ratio(what, a, k, o[i], k)
				else
					x = ratio(what, o[i], k, a, k)
				printf " %*s", w, x
			}
			if (hits)
				printf "   %s/%s/%s", hit["admit", k],
				       ("caffeine", k) in hit ? hit["caffeine", k] : "-", hit["tight", k]
			printf "\n"
		}
}
function cell(v, fmt) { return v ? sprintf(fmt, v) : "-" }
function label(mix, t) { return (mix == 95 ? "95% gets" : "100% gets") ", " t " thr" }
{
	delete f
	for (i = 2; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
	k = f["mix"] " " f["threads"]
	val["mops", f["cache"], k, f["round"]] = f["mops"]
	val["cpu", f["cache"], k, f["round"]] = f["cpu_ns"]
	hit[f["cache"], k] = f["hit"]
	if (f["round"] > rounds)
		rounds = f["round"]
}
END {
	all = "admit admit-batch caffeine caffeine-caller tight maplru"
	names = "admit_lru batched Caffeine Caf.call tight map+LRU"
	others = "caffeine caffeine-caller tight maplru"
	onames = "Caffeine Caf.call tight map+LRU"
	nc = split(all, cs, " ")
	split(names, nm, " ")
	table("medians (M ops/s)", "mops", "median", "", all, names, 9, "%.2f")
	table("admit_lru ÷ (ops/s)", "mops", "ratio", "admit", others, onames, 10)
	table("batched ÷ (ops/s)", "mops", "ratio", "admit-batch", "admit " others,
	      "admit_lru " onames, 10)
	printf "\n%-18s", "2 threads ÷ 1"
	for (i = 1; i <= nc; i++) printf " %10s", nm[i]
	printf "\n"
	for (mix = 95; mix <= 100; mix += 5) {
		printf "%-18s", (mix == 95 ? "95% gets" : "100% gets")
		for (i = 1; i <= nc; i++)
			printf " %10s", ratio("mops", cs[i], mix " 2", cs[i], mix " 1")
		printf "\n"
	}
	table("medians (CPU ns/op)", "cpu", "median", "", all, names, 9, "%.1f")
	table("CPU/op ÷ admit_lru", "cpu", "inverse", "admit", others, onames, 10)
}' "$tmp/results"
