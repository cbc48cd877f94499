#!/usr/bin/env bash
# bench_caffeine.sh - admit_lru against Caffeine and against a mutex + hash
# map + LRU list, on the workload of bench/bench_cache.c (Zipf 0.99 over 1 M
# 8-byte keys, capacity 100,000, 32-byte values; 95 % gets and 5 % sets, and
# 100 % gets; 1 and 2 threads, 4 M operations per thread).  They run
# alternately, one process each, in a rotated order every round; the tables
# give each one's median over the rounds and admit's ratios: operations per
# second of wall time, and CPU time per operation (the whole process's).
# Caffeine runs twice: as built by default, its maintenance on
# ForkJoinPool.commonPool() (another core, where there is one), and with
# executor(Runnable::run), its maintenance on the calling thread as
# admit_lru's is ("Caffeine, caller").
#
#   bench/bench_caffeine.sh [BUILDDIR [ROUNDS]]    (make bench-caffeine)
#
# Caffeine is Debian's libcaffeine-java (2.6.2) run by java from
# default-jdk-headless; without them its column is skipped with a message.
# Run it on an idle machine: a build or a test beside it moves the figures.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-.}
rounds=${2:-5}
ops=${BENCH_OPS:-4194304}
prog=$build/bench/bench_cache
[ -x "$prog" ] || { echo "bench_caffeine: build $prog first (make bench)" >&2; exit 2; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

jar=/usr/share/java/caffeine.jar
contenders="admit maplru"
if command -v java >/dev/null && command -v javac >/dev/null && [ -f "$jar" ]; then
	javac -d "$tmp" -cp "$jar" "$here/CaffeineBench.java"
	contenders="admit caffeine caffeine-caller maplru"
else
	echo "bench_caffeine: java, javac or $jar missing (apt-get install default-jdk-headless libcaffeine-java): Caffeine skipped"
fi

echo "load at start: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) CPUs; commit $(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo '?')"
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
				run "${!j}" "$mix" "$t" | grep '^RESULT' | tee -a "$tmp/results"
			done
		done
	done
done

awk '
function median(key,   n, i, j, t, v) {
	n = split(vals[key], v, " ")
	for (i = 1; i <= n; i++)
		for (j = i + 1; j <= n; j++)
			if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
	return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
}
function cell(v, fmt) { return v ? sprintf(fmt, v) : "-" }
function ratio(a, b) { return (a && b) ? sprintf("%.2f", a / b) : "-" }
# The median "mops" (what "") or "cpu_ns" (what "cpu ") of contender c
# at k, 0 when c did not run.
function of(what, c, k) { return (c in seen) ? median(what c " " k) : 0 }
function label(mix, t) { return (mix == 95 ? "95% gets" : "100% gets") ", " t " thr" }
{
	for (i = 2; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
	key = f["cache"] " " f["mix"] " " f["threads"]
	vals[key] = vals[key] " " f["mops"]
	vals["cpu " key] = vals["cpu " key] " " f["cpu_ns"]
	hit[key] = f["hit"]
	seen[f["cache"]] = 1
}
END {
	printf "\n%-18s %9s %9s %9s %9s %9s %9s %9s %11s\n", "medians (M ops/s)",
	       "admit_lru", "Caffeine", "Caf.call", "map+LRU", "/Caffeine",
	       "/Caf.call", "/map+LRU", "hit a/C"
	for (mix = 95; mix <= 100; mix += 5)
		for (t = 1; t <= 2; t++) {
			k = mix " " t
			a = of("", "admit", k); m = of("", "maplru", k)
			c = of("", "caffeine", k); cc = of("", "caffeine-caller", k)
			printf "%-18s %9.2f %9s %9s %9.2f %9s %9s %9.2f %11s\n",
			       label(mix, t), a, cell(c, "%.2f"), cell(cc, "%.2f"), m,
			       ratio(a, c), ratio(a, cc), a / m,
			       sprintf("%.3f/%s", hit["admit " k],
			               c ? sprintf("%.3f", hit["caffeine " k]) : "-")
		}
	for (mix = 95; mix <= 100; mix += 5)
		printf "admit_lru 2 threads / 1 thread, %d%% gets: %.2f\n", mix,
		       of("", "admit", mix " 2") / of("", "admit", mix " 1")
	printf "\n%-18s %9s %9s %9s %9s %12s %12s\n", "medians (CPU ns/op)",
	       "admit_lru", "Caffeine", "Caf.call", "map+LRU", "Caffeine/a",
	       "Caf.call/a"
	for (mix = 95; mix <= 100; mix += 5)
		for (t = 1; t <= 2; t++) {
			k = mix " " t
			a = of("cpu ", "admit", k); m = of("cpu ", "maplru", k)
			c = of("cpu ", "caffeine", k); cc = of("cpu ", "caffeine-caller", k)
			printf "%-18s %9.1f %9s %9s %9.1f %12s %12s\n", label(mix, t),
			       a, cell(c, "%.1f"), cell(cc, "%.1f"), m, ratio(c, a),
			       ratio(cc, a)
		}
}' "$tmp/results"
