#!/bin/sh
# The hit-ratio table of doc/hit-ratio.md: at every point (trace, size) of
# ../shared/peers.csv and of programs/cache_sim/peers_extra.csv, adaptive
# and the fixed wtinylfu (medians of 5 seeds), lru, the best of the peers
# there, and the rules: adaptive >= lru - 0.5, adaptive >= wtinylfu - 0.5,
# adaptive within 1 of the best peer; then how many points meet each, and
# the worst shortfall to the best peer.
#
# Usage: hitratio_table.sh [--points shared|extra|all] [--csv FILE]
#                          [--rows FILE] [--loo NAME=V1,V2,...]
#                          [--min-size N]
#   --points  which points (default all; shared needs ../shared/peers.csv,
#             extra's SPEC traces need ../shared/traces).
#   --min-size  only the points whose size exceeds N (2048: the caches
#             whose mini caches are sampled, the only ones a change to the
#             sampled caches' choice moves).
#   --csv     keeps every replay's row (trace,policy,size,hit_ratio; with
#             --loo a fifth field, the value, and the lru and wtinylfu
#             rows without it).
#   --rows    prints the table of rows kept so (one value's: a --loo
#             file's rows with that value and without one), replaying
#             nothing.
#   --loo     leave one trace out for the constant NAME of src/minisim.c:
#             builds a cache_sim for each value (make cache-sim-variant),
#             replays adaptive with each at every point, then for each
#             trace picks the value that does best on all the other
#             traces (fewest points under lru - 0.5 or wtinylfu - 0.5,
#             then the smallest worst shortfall to the best peer, then the
#             smallest mean) and scores it on the trace left out.  The
#             generated workloads count as one trace each, whatever their
#             seed.  Prints the table of the values so chosen.
# CACHE_SIM names another cache_sim to replay with.  Run from the build
# directory (make hitratio-table does).  Takes about
# 10 minutes on 2 idle cores for all points, times the values with --loo.
set -u
: "${top_srcdir:=.}" "${top_builddir:=.}"
sim=${CACHE_SIM:-$top_builddir/programs/cache_sim/cache_sim}
traces="$top_srcdir/../shared/traces"
peers_shared="$top_srcdir/../shared/peers.csv"
peers_extra="$top_srcdir/programs/cache_sim/peers_extra.csv"
points=all csv= loo= rows= minsize=0
while [ $# -gt 0 ]; do
	case $1 in
	--points) points=$2; shift 2 ;;
	--csv) csv=$2; shift 2 ;;
	--loo) loo=$2; shift 2 ;;
	--rows) rows=$2; shift 2 ;;
	--min-size) minsize=$2; shift 2 ;;
	*) echo "usage: hitratio_table.sh [--points shared|extra|all] [--csv FILE] [--rows FILE] [--loo NAME=V1,V2,...] [--min-size N]" >&2
	   exit 2 ;;
	esac
done
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
: >"$tmp/peers.csv"
case $points in
shared | all)
	if [ -f "$peers_shared" ]; then sed 1d "$peers_shared" >>"$tmp/peers.csv"
	else echo "note: no $peers_shared: the shared points are left out" >&2; fi ;;
esac
case $points in
extra | all)
	sed 1d "$peers_extra" | while IFS=, read -r t rest; do
		case $t in
		*.gz | *.xz) [ -f "$traces/$t" ] || continue ;;
		esac
		echo "$t,$rest"
	done >>"$tmp/peers.csv" ;;
esac
awk -F, -v m="$minsize" '$2 + 0 > m + 0' "$tmp/peers.csv" >"$tmp/p.csv"
mv "$tmp/p.csv" "$tmp/peers.csv"
[ -s "$tmp/peers.csv" ] || { echo "hitratio_table.sh: no points" >&2; exit 1; }
jobs=$(nproc 2>/dev/null || echo 2)

# src TRACE: cache_sim's arguments that replay it.
src() {
	case $1 in
	*.gz | *.xz)
		case $1 in
		orm-night.* | web12.*) echo "--format i32be $traces/$1" ;;
		scarab-recs.*) echo "--format i64be $traces/$1" ;;
		*) echo "$traces/$1" ;;
		esac ;;
	*) echo "--workload ${1%-s*} --seed ${1##*-s}" ;;
	esac
}

# replay SIM POLICIES OUT [lru]: one job per point for POLICIES (5
# seeds), and with lru one job per trace for lru; rows in OUT as
# trace,policy,size,hit_ratio.
replay() {
	rm -f "$tmp"/j*.sh "$tmp"/j*.csv "$tmp"/j*.err
	n=0
	for t in $(cut -d, -f1 "$tmp/peers.csv" | sort -u); do
		sizes=$(awk -F, -v t="$t" '$1 == t { print $2 }' "$tmp/peers.csv" | sort -nu)
		for s in $sizes ${4:+lru}; do
			n=$((n + 1))
			if [ "$s" = lru ]; then
				a="--sizes $(echo $sizes | tr ' ' ,) --policies lru"
			else
				a="--sizes $s --policies $2 --seeds 5"
			fi
			# shellcheck disable=SC2046 # src's words
			printf '"%s" --csv %s %s >"%s/j%04d.rows" 2>"%s/j%04d.err" || echo FAIL >>"%s/j%04d.err"\n' \
				"$1" "$a" "$(src "$t")" "$tmp" $n "$tmp" $n "$tmp" $n >"$tmp/j$(printf %04d $n).sh"
			printf 'awk -F, -v OFS=, -v t="%s" '"'"'NR > 1 { print t, $2, $3, $6 }'"'"' "%s/j%04d.rows" >"%s/j%04d.csv"\n' \
				"$t" "$tmp" $n "$tmp" $n >>"$tmp/j$(printf %04d $n).sh"
		done
	done
	# The longest first: the large caches and long traces.
	for f in "$tmp"/j*.sh; do
		case $(head -1 "$f") in
		*131072* | *orm-night* | *P3* | *scarab* | *short-large*) echo "0 $f" ;;
		*) echo "1 $f" ;;
		esac
	done | sort | cut -d' ' -f2 | xargs -P "$jobs" -n 1 nice -n 10 sh
	for e in "$tmp"/j*.err; do
		grep -q '^FAIL$' "$e" && { echo "FAIL: $(head -1 "${e%.err}.sh")"; cat "$e"; return 1; }
	done
	cat "$tmp"/j*.csv >"$3"
}

# table ROWS: the table and its summary from ROWS (trace,policy,size,
# hit_ratio; adaptive, wtinylfu, lru; an optional fifth field is printed
# as the value chosen) and the peers.
table() {
	awk -F, -v rows="$1" '
	FILENAME == rows { v[$1 "," $3 "," $2] = $4; if (NF > 4) { c[$1 "," $3] = $5; nc++ }; next }
	{ k = $1 "," $2; if (!(k in best) || $4 + 0 > best[k]) { best[k] = $4 + 0; who[k] = $3 }
	  if (!(k in seen)) { seen[k] = 1; order[++np] = k } }
	END {
		printf "| trace | size | lru | wtinylfu | adaptive | best peer | adaptive − lru | adaptive − wtinylfu | adaptive − best |%s\n", (nc ? " value |" : "")
		printf "|---|---:|---:|---:|---:|---|---:|---:|---:|%s\n", (nc ? "---|" : "")
		for (i = 1; i <= np; i++) {
			k = order[i]; split(k, p, ",")
			a = v[k ",adaptive"]; l = v[k ",lru"]; w = v[k ",wtinylfu"]
			if (a == "" || l == "" || w == "") { printf "missing: %s\n", k; bad = 1; continue }
			n++; m = ""
			okl = a >= l - 0.5 - 1e-9; okw = a >= w - 0.5 - 1e-9; okb = a >= best[k] - 1 - 1e-9
			if (!okb) m = m "†"
			if (!okl) m = m "‡"
			if (!okw) m = m "§"
			nl += okl; nw += okw; nb += okb; all += okl && okw && okb
			sf = best[k] - a; sum += sf
			if (n == 1 || sf > worst) { worst = sf; wk = k }
			if (n == 1 || a - l < wl) { wl = a - l; wlk = k }
			if (n == 1 || a - w < ww) { ww = a - w; wwk = k }
			printf "| %s | %s | %.2f | %.2f | %.2f%s | %.2f (%s) | %+.2f | %+.2f | %+.2f |%s\n",
				p[1], p[2], l, w, a, m, best[k], who[k], a - l, a - w, a - best[k],
				(nc ? " " c[k] " |" : "")
		}
		printf "\n%d points: >= lru - 0.5 at %d, >= wtinylfu - 0.5 at %d, within 1 of the best peer at %d (%.1f %%), all three at %d\n",
			n, nl, nw, nb, 100 * nb / n, all
		printf "worst shortfall to the best peer %.2f (%s); mean %.2f; worst adaptive - lru %+.2f (%s); worst adaptive - wtinylfu %+.2f (%s)\n",
			worst, wk, sum / n, wl, wlk, ww, wwk
		exit bad
	}' "$1" "$tmp/peers.csv"
}

if [ -n "$rows" ]; then
	cut -d, -f1-4 "$rows" >"$tmp/rows.csv"
	table "$tmp/rows.csv"
	exit
fi
if [ -z "$loo" ]; then
	replay "$sim" adaptive,wtinylfu "$tmp/rows.csv" lru || exit 1
	[ -z "$csv" ] || cp "$tmp/rows.csv" "$csv"
	table "$tmp/rows.csv"
	exit
fi

# ---- leave one trace out ----
name=${loo%%=*}
values=$(echo "${loo#*=}" | tr , ' ')
# Every variant built first: the sources may change while they replay.
for v in $values; do
	echo "building cache_sim with -D$name=$v" >&2
	make -s -C "$top_builddir" cache-sim-variant VARIANT_CPPFLAGS="-D$name=$v" \
		VARIANT_OUT="$tmp/sim-$v" >&2 || exit 1
done
replay "$sim" wtinylfu "$tmp/base.csv" lru || exit 1
for v in $values; do
	replay "$tmp/sim-$v" adaptive "$tmp/a-$v.csv" || exit 1
	awk -F, -v OFS=, -v v="$v" '{ print $0, v }' "$tmp/a-$v.csv" >>"$tmp/all.csv"
	echo "$name = $v, every trace:" >&2
	cat "$tmp/base.csv" "$tmp/a-$v.csv" >"$tmp/one.csv"
	table "$tmp/one.csv" | tail -2 >&2
done
[ -z "$csv" ] || cat "$tmp/base.csv" "$tmp/all.csv" >"$csv"
# For each trace (a workload whatever its seed), the value that does best
# without it, then that value's rows for it.
awk -F, -v OFS=, -v rows="$tmp/base.csv" -v vals="$values" '
function unit(t) { sub(/-s[0-9]+$/, "", t); return t }
FILENAME == rows { v[$1 "," $3 "," $2] = $4; next }
FILENAME ~ /peers/ { k = $1 "," $2; if (!(k in best) || $4 + 0 > best[k]) best[k] = $4 + 0; next }
{ a[$1 "," $3 "," $5] = $4; u[unit($1)] = 1; pts[$1 "," $3] = 1 }
END {
	nv = split(vals, val, " ")
	for (out in u) {
		chosen = ""
		for (j = 1; j <= nv; j++) {
			broken = 0; worst = -1e9; sum = 0; n = 0
			for (k in pts) {
				split(k, p, ",")
				if (unit(p[1]) == out) continue
				x = a[k "," val[j]]; n++
				broken += (x < v[k ",lru"] - 0.5 - 1e-9) + (x < v[k ",wtinylfu"] - 0.5 - 1e-9)
				if (best[k] - x > worst) worst = best[k] - x
				sum += best[k] - x
			}
			if (chosen == "" || broken < cb || (broken == cb && (worst < cw - 1e-9 ||
			    (worst < cw + 1e-9 && sum < cs - 1e-9)))) {
				chosen = val[j]; cb = broken; cw = worst; cs = sum
			}
		}
		for (k in pts) {
			split(k, p, ",")
			if (unit(p[1]) == out)
				print p[1], "adaptive", p[2], a[k "," chosen], chosen
		}
	}
}' "$tmp/base.csv" "$tmp/peers.csv" "$tmp/all.csv" >"$tmp/loo.csv"
cat "$tmp/base.csv" "$tmp/loo.csv" >"$tmp/table.csv"
echo "Leave one trace out: $name chosen among $values without the trace, scored on it"
table "$tmp/table.csv"
