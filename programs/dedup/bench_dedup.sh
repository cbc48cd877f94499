#!/bin/bash
# bench_dedup - admit-dedup against awk '!seen[$0]++' and sort -u on the same
# 10^7-line stream (half of the lines new keys, half repeats): lines/s and
# peak RSS (GNU time), median of REPS runs each, and the ratios to awk.
# Target: admit-dedup >= 3x awk's throughput with <= 1/10 of its peak memory.
#
#   bench/bench_dedup.sh [BUILDDIR]     env: LINES (10000000), REPS (3)
# Needs /usr/bin/time (Debian package "time").  By hand, not in CI:
# `make bench-dedup` runs it.
set -euo pipefail
build=${1:-.}
dd=$build/programs/dedup/admit-dedup
gen=$build/programs/dedup/dedup_gen
lines=${LINES:-10000000}
reps=${REPS:-3}
export LC_ALL=C
[ -x /usr/bin/time ] || { echo "bench_dedup: needs /usr/bin/time (apt-get install time)"; exit 1; }
[ -x "$dd" ] && [ -x "$gen" ] || { echo "bench_dedup: build $dd and $gen first (make bench-dedup)"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$gen" text "$lines" 1 >"$tmp/in"
uniq=$(awk '!seen[$0]++' "$tmp/in" | wc -l)
echo "input: $lines lines, $uniq distinct, $(($(wc -c <"$tmp/in") / 1000000)) MB; $(nproc) CPUs; median of $reps"
printf '%-44s %12s %12s %10s\n' tool lines/s "peak MiB" "out lines"

calc() { awk "BEGIN { printf \"%.6f\", $1 }"; }

# run NAME CMD...: median seconds and peak RSS (KiB) into $secs, $rss
run() {
	local name=$1 i t=() r=() out
	shift
	for ((i = 0; i < reps; i++)); do
		/usr/bin/time -f '%e %M' -o "$tmp/time" "$@" <"$tmp/in" >"$tmp/out"
		read -r s m <"$tmp/time"
		t+=("$s"); r+=("$m")
	done
	secs=$(printf '%s\n' "${t[@]}" | sort -g | sed -n "$(((reps + 1) / 2))p")
	rss=$(printf '%s\n' "${r[@]}" | sort -g | sed -n "$(((reps + 1) / 2))p")
	out=$(wc -l <"$tmp/out")
	printf '%-44s %12.0f %12.1f %10s\n' "$name" "$(calc "$lines / $secs")" \
		"$(calc "$rss / 1024")" "$out"
}
declare -A S R
run "awk '!seen[\$0]++' ($(readlink -f "$(command -v awk)" | xargs basename))" awk '!seen[$0]++'
S[awk]=$secs R[awk]=$rss
run "sort -u" sort -u
S[sort]=$secs R[sort]=$rss
for j in 1 2; do
	run "admit-dedup -j $j --capacity $uniq" "$dd" -j "$j" --capacity "$uniq"
	S[j$j]=$secs R[j$j]=$rss
done
run "admit-dedup -j 2 (default capacity: grows)" "$dd" -j 2
S[grow]=$secs R[grow]=$rss
# A small horizon must cost about what a large one does (at most 2x).
for h in 1 1000000; do
	run "admit-dedup -j 2 --horizon $h" "$dd" -j 2 --horizon "$h"
	S[h$h]=$secs R[h$h]=$rss
done

echo
for k in j1 j2 grow; do
	printf 'admit-dedup %-5s vs awk: %5.2fx throughput (target >= 3), %6.3f of its peak memory (target <= 0.1); vs sort -u: %5.2fx, %6.3f\n' \
		"$k" "$(calc "${S[awk]} / ${S[$k]}")" "$(calc "${R[$k]} / ${R[awk]}")" \
		"$(calc "${S[sort]} / ${S[$k]}")" "$(calc "${R[$k]} / ${R[sort]}")"
done
printf 'admit-dedup --horizon 1 vs --horizon 1000000: %5.2fx the time (target <= 2)\n' \
	"$(calc "${S[h1]} / ${S[h1000000]}")"
