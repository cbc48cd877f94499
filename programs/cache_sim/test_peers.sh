#!/bin/sh
# The policies users compare with, as cache_sim simulates them (peers.c),
# against libCacheSim's figures in ../shared/peers.csv: every trace of
# peers.csv at each of its sizes, through arc, lirs, s3fifo, sieve, 2q,
# clock and lru, one cache_sim run per trace.  Fails on any point more
# than 1 point from peers.csv, or missing; prints how many agree to the
# hundredth.  Skips (77) without ../shared, and in sanitizer builds (the
# replays take minutes there and test no concurrency).
set -u
: "${top_srcdir:=.}" "${top_builddir:=.}" "${SAN_CFLAGS:=}"
shared="$top_srcdir/../shared"
sim="$top_builddir/programs/cache_sim/cache_sim"
if [ ! -f "$shared/peers.csv" ] || [ ! -d "$shared/traces" ]; then
	echo "SKIP: no $shared/peers.csv (only a checkout next to shared/ has it)"
	exit 77
fi
if [ -n "$SAN_CFLAGS" ]; then
	echo "SKIP: sanitizer build ($SAN_CFLAGS); run the peers in a plain build"
	exit 77
fi
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT

for t in $(awk -F, 'NR > 1 { print $1 }' "$shared/peers.csv" | sort -u); do
	sizes=$(awk -F, -v t="$t" 'NR > 1 && $1 == t { print $2 }' "$shared/peers.csv" |
		sort -nu | paste -sd, -)
	# Binary traces whose record width the content does not tell
	# (../shared/README.md, "traces").
	case $t in
	orm-night.* | web12.*) fmt=i32be ;;
	scarab-recs.*) fmt=i64be ;;
	*) fmt=auto ;;
	esac
	"$sim" --csv --format $fmt --sizes "$sizes" \
		--policies lru,arc,lirs,s3fifo,sieve,2q,clock "$shared/traces/$t" \
		>"$tmp/rows" 2>"$tmp/err" ||
		{ echo "FAIL cache_sim --format $fmt --sizes $sizes $t"; cat "$tmp/err"; exit 1; }
	sed 1d "$tmp/rows" >>"$tmp/out.csv"
done

# peers.csv: trace,size,policy,hit_ratio; cache_sim: trace,policy,size,...
awk -F, '
BEGIN { m["LRU"] = "lru"; m["ARC"] = "arc"; m["LIRS"] = "lirs"; m["S3FIFO"] = "s3fifo"
	m["Sieve"] = "sieve"; m["TwoQ"] = "2q"; m["Clock"] = "clock" }
FNR == NR { got[$1 "," $3 "," $2] = $6; next }
FNR > 1 && ($3 in m) {
	key = $1 "," $2 "," m[$3]; n++
	if (!(key in got)) { printf "FAIL %s %s at %s: no result\n", $1, m[$3], $2; bad++; next }
	d = got[key] - $4; ad = d < 0 ? -d : d
	if (ad > max) max = ad
	if (sprintf("%.2f", got[key]) == sprintf("%.2f", $4)) same++
	else printf "%s %s %s at %s: %.2f, peers.csv %.2f (%+.2f)\n",
		(ad > 1 ? "FAIL" : "note"), $1, m[$3], $2, got[key], $4, d
	if (ad > 1) bad++
}
END {
	printf "peers: %d points, %d equal to the hundredth, largest difference %.2f, %d failed\n",
		n, same, max, bad
	exit bad > 0 || n == 0
}' "$tmp/out.csv" "$shared/peers.csv"
