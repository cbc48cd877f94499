#!/bin/sh
# Hit-ratio goals, checked with programs/cache_sim/cache_sim on the traces
# in ../shared/traces and on the built-in workloads:
#   - lru and opt reproduce the published LRU and OPT figures exactly;
#   - adaptive reaches the best published LRU/ARC/W-TinyLFU figure minus 0.5
#     point, and comes within 3 points of OPT on gli and loop;
#   - at every point of ../shared/peers.csv, at the quick points of
#     programs/cache_sim/peers_extra.csv (every one with HITRATIO_FULL=1:
#     make check-full) and on the built-in workloads, adaptive is at least
#     lru - 0.5 and wtinylfu - 0.5, and within 1 point of the best peer;
#   - tinylfu stays within 1 point of lru or above on frequency-heavy traces;
#   - on the built-in workload the policies keep the same order.
# adaptive's and wtinylfu's figures are medians of 5 seeds (cache_sim
# --seeds 5): a different hash seed can turn into a different choice.  A
# goal adaptive does not reach is listed as a known shortfall: the test
# prints by how much, and asserts a regression floor 1 point below its
# figure when written, so it can still fail.  doc/hit-ratio.md says why
# each falls short; "adaptive-frozen" (TinyLFU's aging and random
# admission off) checks the reason given for loop.  Skips (77) without
# ../shared, and in sanitizer builds (the replays take minutes there and
# test no concurrency).
set -u
: "${top_srcdir:=.}" "${top_builddir:=.}" "${SAN_CFLAGS:=}"
traces="$top_srcdir/../shared/traces"
sim="$top_builddir/programs/cache_sim/cache_sim"
if [ ! -d "$traces" ]; then
	echo "SKIP: no $traces (only a checkout next to shared/ has the traces)"
	exit 77
fi
if [ -n "$SAN_CFLAGS" ]; then
	echo "SKIP: sanitizer build ($SAN_CFLAGS); run the hit-ratio goals in a plain build"
	exit 77
fi
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT

S8=250,500,750,1000,1250,1500,1750,2000
L4=250,500,750,1000
peers="$top_srcdir/../shared/peers.csv"
# The points of peers_extra.csv checked too (SPEC traces, generated
# workloads named WORKLOAD-sSEED): with HITRATIO_FULL=1 (make check-full)
# every one, else those that run in seconds and show the shapes that
# matter (a loop a little larger than the cache, near-pure recency, a
# web-like mix at a small cache, a small hot set).
extra="$top_srcdir/programs/cache_sim/peers_extra.csv"
if [ -f "$peers" ]; then
	{
		cat "$peers"
		if [ "${HITRATIO_FULL:-0}" = 1 ]; then
			sed 1d "$extra"
		else
			grep -E '^(zigzag-near-s1|recency-s1|twolf\.keys\.gz|web-s1,1000,)' "$extra"
		fi
	} >"$tmp/points.csv"
	peers="$tmp/points.csv"
fi

# Every cache_sim run is a job in $tmp/jobs, run $jobs at a time (the
# replays are independent and single-threaded); each writes its rows to a
# file of its own.  adaptive's 5-seed runs serve both the goals below and
# the peers.csv block at the end, one run per trace and size, the longest
# first.
jobs=$(nproc 2>/dev/null || echo 2)
nj=0
job() { # [LABEL=name] trace sizes policies [option...]
	label=
	case $1 in LABEL=*) label=${1#LABEL=}; shift ;; esac
	nj=$((nj + 1))
	{
		printf '"%s" --csv' "$sim"
		for a in --sizes "$2" --policies "$3"; do printf ' "%s"' "$a"; done
		jt=$1 tl=
		shift 3
		# A generated workload: WORKLOAD-sSEED, its rows named so.
		case $jt in
		*/*) set -- "$@" "$jt" ;;
		*) set -- "$@" --workload "${jt%-s*}" --seed "${jt##*-s}"; tl=$jt ;;
		esac
		for a in "$@"; do printf ' "%s"' "$a"; done
		printf ' >"%s/j%03d.rows" 2>"%s/j%03d.err" || echo FAIL >>"%s/j%03d.err"\n' \
			"$tmp" $nj "$tmp" $nj "$tmp" $nj
		printf 'awk -F, -v OFS=, -v l="%s" -v tl="%s" '"'"'NR > 1 { if (l != "") $2 = l; if (tl != "") $1 = tl; print }'"'"' "%s/j%03d.rows" >"%s/j%03d.csv"\n' \
			"$label" "$tl" "$tmp" $nj "$tmp" $nj
	} >"$tmp/j$(printf %03d $nj).sh"
}
# trace_of T: job's trace argument for point T of peers.csv.
trace_of() {
	case $1 in
	*.gz | *.xz) echo "$traces/$1" ;;
	*) echo "$1" ;;
	esac
}
# The built-in workloads (below, "The built-in patterns"): each replay and
# each model run is a job running one of builtin.sh's functions, which
# print rows in out.csv's form.
pyth=$(command -v python3 || true)
[ -n "$pyth" ] ||
	echo "note: no python3: the rules comparing wtinylfu with tools/wtinylfu_model.py are skipped"
export sim tmp pyth top_srcdir
cat >"$tmp/builtin.sh" <<'EOF'
# builtin_sim W [--no-random-admit]: W's rows, medians of 5 seeds (with
# the option, wtinylfu alone, named wtinylfu-exact).
builtin_sim() {
	if [ $# -gt 1 ]; then
		"$sim" --csv --workload "$1" --policies wtinylfu --seeds 5 "$2" \
			>"$tmp/$1.exact" || return 1
		awk -F, -v OFS=, 'NR > 1 { $2 = $2 "-exact"; print }' "$tmp/$1.exact"
	else
		"$sim" --csv --workload "$1" --policies lru,opt,wtinylfu,adaptive \
			--seeds 5 >"$tmp/$1.rows" || return 1
		sed 1d "$tmp/$1.rows"
	fi
}
# builtin_model W M: tools/wtinylfu_model.py on W's keys at W's sizes, as
# policy M: "model" (random admission, medians of 5 seeds) or
# "model-exact" (none).
builtin_model() {
	"$sim" --workload "$1" --write-trace "$tmp/$1-$2.lirs" || return 1
	sizes=$("$sim" --csv --workload "$1" --policies lru |
		awk -F, 'NR > 1 { printf "%s%s", c, $3; c = "," }')
	opt="--random-admit --seeds 5"
	[ "$2" = model-exact ] && opt=
	# shellcheck disable=SC2086 # $opt is words
	"$pyth" "$top_srcdir/tools/wtinylfu_model.py" --doorkeeper $opt \
		"$sizes" "$tmp/$1-$2.lirs" >"$tmp/$1-$2.out" || return 1
	awk -v OFS=, -v t="builtin-$1" -v m="$2" '{ print t, m, $1, "", "", $2 }' \
		"$tmp/$1-$2.out"
}
# builtin_demo: the README's demo (10,000 entries), its trace named builtin.
builtin_demo() {
	"$sim" --csv --sizes 10000 --policies lru,tinylfu,wtinylfu,adaptive,opt \
		>"$tmp/demo.rows" || return 1
	sed '1d; s/^builtin[^,]*,/builtin,/' "$tmp/demo.rows"
}
EOF
bjob() { # function argument...: a job running one of builtin.sh's functions
	nj=$((nj + 1))
	f=$tmp/j$(printf %03d $nj)
	printf '. "%s/builtin.sh"; %s >"%s.csv" 2>"%s.err" || echo FAIL >>"%s.err"\n' \
		"$tmp" "$*" "$f" "$f" "$f" >"$f.sh"
}
for w in scan-hot zigzag scan-repeat; do
	bjob builtin_sim $w
	bjob builtin_sim $w --no-random-admit
	[ -z "$pyth" ] || bjob builtin_model $w model
	[ -z "$pyth" ] || bjob builtin_model $w model-exact
done
bjob builtin_demo
fmt_of() {
	case $1 in
	orm-night.* | web12.*) echo i32be ;;
	scarab-recs.*) echo i64be ;;
	*) echo auto ;;
	esac
}
# The policies the rules below need beside lru on a trace, run in its lru
# job at the sizes peers.csv has for it (the rules' own: a size missing
# there fails its rules with "no result").
more_of() {
	case $1 in
	OLTP.* | gli.* | loop.*) echo ,tinylfu,opt ;;
	multi[123].* | P3.*) echo ,tinylfu ;;
	scarab-recs.*) echo ,opt ;;
	esac
}
# adaptive, 5 seeds, at every peers.csv point (and lru there), one job per
# size: these dominate the run.
if [ -f "$peers" ]; then
	# The longest replays first (orm-night's at 1000 take about twice P3's,
	# three times one of OLTP's eight).
	for t in $(awk -F, 'NR > 1 { print $1 }' "$peers" | sort -u |
		awk '{ print (/^(orm-night|short-large)/ ? 0 : /^P3/ ? 1 : /^OLTP/ ? 2 : 3), $0 }' |
		sort | cut -d' ' -f2); do
		for s in $(awk -F, -v t="$t" 'NR > 1 && $1 == t { print $2 }' "$peers" | sort -nu); do
			job "$(trace_of "$t")" "$s" adaptive,wtinylfu --format "$(fmt_of "$t")" --seeds 5
		done
		job "$(trace_of "$t")" "$(awk -F, -v t="$t" 'NR > 1 && $1 == t { print $2 }' "$peers" |
			sort -nu | paste -sd, -)" "lru$(more_of "$t")" --format "$(fmt_of "$t")"
	done
else
	for t in OLTP.lis.gz gli.trace.gz scarab-recs.trace.xz P3.lis.gz; do
		job "$traces/$t" "$S8" adaptive --format "$(fmt_of "$t")" --seeds 5
	done
	job "$traces/loop.trace.gz" "$L4" adaptive --seeds 5
	for t in OLTP.lis.gz:$S8 gli.trace.gz:$S8 loop.trace.gz:$L4 \
		multi1.trace.gz:$S8 multi2.trace.gz:$S8 multi3.trace.gz:$S8 \
		P3.lis.gz:32768 scarab-recs.trace.xz:100000; do
		job "$traces/${t%:*}" "${t#*:}" "lru$(more_of "${t%:*}")" \
			--format "$(fmt_of "${t%:*}")"
	done
fi
job LABEL=adaptive-frozen "$traces/loop.trace.gz" $L4 adaptive \
	--sample-factor 100000 --no-random-admit
# At a lower priority: make check runs the other tests one after
# another beside this one, and they finish sooner, all cores busy to the
# end, when the replays take only what they leave.
ls "$tmp"/j*.sh | xargs -P "$jobs" -n 1 nice -n 10 sh
for e in "$tmp"/j*.err; do
	grep -q '^FAIL$' "$e" &&
		{ echo "FAIL $(cat "${e%.err}.sh" | head -1)"; grep -v '^FAIL$' "$e"; exit 1; }
done
cat "$tmp"/j*.csv | grep -v '^$' >"$tmp/all.csv"
# HITRATIO_CSV=FILE keeps every row of the replays (doc/hit-ratio.md's
# table is made from it).
[ -z "${HITRATIO_CSV:-}" ] || cp "$tmp/all.csv" "$HITRATIO_CSV"
# The goals read the traces as the rules name them: adaptive at every
# size of every trace from the jobs above.
cp "$tmp/all.csv" "$tmp/out.csv"

# Rules: trace size policy op bound.  op: eq (to the hundredth), ge, or
# short (a known shortfall: goal, then the regression floor).  A bound may
# be "opt-3" or "lru-1": that policy's figure on the same trace and size.
cat >"$tmp/rules" <<'EOF'
OLTP.lis.gz 250 lru eq 16.47
OLTP.lis.gz 500 lru eq 23.45
OLTP.lis.gz 750 lru eq 28.28
OLTP.lis.gz 1000 lru eq 32.83
OLTP.lis.gz 1250 lru eq 36.21
OLTP.lis.gz 1500 lru eq 38.70
OLTP.lis.gz 1750 lru eq 40.79
OLTP.lis.gz 2000 lru eq 42.47
OLTP.lis.gz 250 opt eq 38.47
OLTP.lis.gz 500 opt eq 46.43
OLTP.lis.gz 750 opt eq 50.67
OLTP.lis.gz 1000 opt eq 53.62
OLTP.lis.gz 1250 opt eq 55.84
OLTP.lis.gz 1500 opt eq 57.62
OLTP.lis.gz 1750 opt eq 59.13
OLTP.lis.gz 2000 opt eq 60.40
gli.trace.gz 250 lru eq 0.91
gli.trace.gz 500 lru eq 0.95
gli.trace.gz 750 lru eq 1.15
gli.trace.gz 1000 lru eq 11.21
gli.trace.gz 1250 lru eq 21.25
gli.trace.gz 1500 lru eq 36.56
gli.trace.gz 1750 lru eq 45.04
gli.trace.gz 2000 lru eq 57.41
gli.trace.gz 250 opt eq 17.71
gli.trace.gz 500 opt eq 34.33
gli.trace.gz 750 opt eq 46.13
gli.trace.gz 1000 opt eq 53.15
gli.trace.gz 1250 opt eq 57.31
loop.trace.gz 250 lru eq 0.00
loop.trace.gz 500 lru eq 0.00
loop.trace.gz 750 lru eq 0.00
loop.trace.gz 1000 lru eq 0.00
loop.trace.gz 250 opt eq 24.68
loop.trace.gz 500 opt eq 49.36
loop.trace.gz 750 opt eq 74.04
loop.trace.gz 1000 opt eq 98.71
scarab-recs.trace.xz 100000 lru eq 75.91
scarab-recs.trace.xz 100000 opt eq 79.25
P3.lis.gz 32768 lru eq 3.57
OLTP.lis.gz 250 adaptive ge 24.23
OLTP.lis.gz 500 adaptive ge 33.20
OLTP.lis.gz 750 adaptive ge 36.61
OLTP.lis.gz 1000 adaptive ge 39.45
OLTP.lis.gz 1250 adaptive ge 41.83
OLTP.lis.gz 1500 adaptive ge 43.21
OLTP.lis.gz 1750 adaptive ge 44.51
OLTP.lis.gz 2000 adaptive ge 45.58
gli.trace.gz 250 adaptive ge opt-3
gli.trace.gz 500 adaptive ge opt-3
gli.trace.gz 750 adaptive ge opt-3
gli.trace.gz 1000 adaptive ge opt-3
gli.trace.gz 1250 adaptive short opt-3 50.85
gli.trace.gz 1500 adaptive short opt-3 52.55
gli.trace.gz 1750 adaptive ge opt-3
gli.trace.gz 2000 adaptive ge opt-3
gli.trace.gz 2000 adaptive ge 56.91
loop.trace.gz 250 adaptive ge opt-3
loop.trace.gz 500 adaptive ge opt-3
loop.trace.gz 750 adaptive ge opt-3
loop.trace.gz 1000 adaptive ge opt-3
loop.trace.gz 250 adaptive-frozen ge opt-3
loop.trace.gz 500 adaptive-frozen ge opt-3
loop.trace.gz 750 adaptive-frozen ge opt-3
loop.trace.gz 1000 adaptive-frozen ge opt-3
scarab-recs.trace.xz 100000 adaptive ge lru-0.5
P3.lis.gz 32768 adaptive ge 16.62
P3.lis.gz 32768 tinylfu ge lru-1
builtin 10000 tinylfu ge lru
builtin 10000 adaptive ge tinylfu
builtin 10000 adaptive ge wtinylfu-0.5
builtin 10000 opt ge adaptive
EOF
for t in gli.trace.gz loop.trace.gz multi1.trace.gz multi2.trace.gz multi3.trace.gz; do
	for s in $(echo $S8 | tr , ' '); do
		[ $t = loop.trace.gz ] && [ "$s" -gt 1000 ] && continue
		echo "$t $s tinylfu ge lru-1"
	done
done >>"$tmp/rules"

# ---- The built-in patterns (zigzag, scan-repeat, scan-hot) ----
# LRU is optimal on zigzag and scores 0 on scan-repeat; opt and lru are
# exact.  wtinylfu agrees within a point with tools/wtinylfu_model.py, a
# W-TinyLFU with exact counts (doorkeeper on), read from the very keys
# cache_sim replays (--write-trace): with the library's random admission,
# both medians of 5 seeds ("model"), and without it ("model-exact", which
# has no randomness, against wtinylfu-exact).  Both collapse on zigzag
# (doc/hit-ratio.md, "The built-in patterns").  The model needs python3;
# without it those rules are skipped, and the test says so.
{
	for z in 250:24.00 500:48.00; do
		echo "builtin-zigzag ${z%:*} lru eq ${z#*:}"
		echo "builtin-zigzag ${z%:*} opt eq ${z#*:}"
		echo "builtin-scan-repeat ${z%:*} lru eq 0.00"
		echo "builtin-scan-repeat ${z%:*} opt eq ${z#*:}"
	done
	for s in 1000 2500 5000; do
		echo "builtin-scan-hot $s opt ge lru"
	done
	# adaptive: never below lru - 0.5 nor wtinylfu - 0.5.
	for w in zigzag:250 zigzag:500 scan-repeat:250 scan-repeat:500 \
		scan-hot:1000 scan-hot:2500 scan-hot:5000; do
		t=builtin-${w%:*} s=${w#*:}
		echo "$t $s adaptive ge lru-0.5"
		echo "$t $s adaptive ge wtinylfu-0.5"
	done
	[ -n "$pyth" ] &&
		for w in zigzag:250 zigzag:500 scan-repeat:250 scan-repeat:500 \
			scan-hot:1000 scan-hot:2500 scan-hot:5000; do
			t=builtin-${w%:*} s=${w#*:}
			echo "$t $s wtinylfu ge model-1"
			echo "$t $s model ge wtinylfu-1"
			echo "$t $s wtinylfu-exact ge model-exact-1"
			echo "$t $s model-exact ge wtinylfu-exact-1"
		done
} >>"$tmp/rules"
# ---- end of the built-in patterns ----

awk -F, -v rules="$tmp/rules" '
FNR == NR { r[$1 "," $3 "," $2] = $6; next }
function val(t, s, expr,   p, d) {
	if (expr ~ /^[0-9.]+$/) return expr + 0
	p = expr; d = 0
	if (match(expr, /[-+][0-9.]+$/)) { p = substr(expr, 1, RSTART - 1); d = substr(expr, RSTART) + 0 }
	if (!((t "," s "," p) in r)) { missing = missing " " t "/" s "/" p; return -1 }
	return r[t "," s "," p] + d
}
END {
	while ((getline line < rules) > 0) {
		split(line, f, " ")
		t = f[1]; s = f[2]; p = f[3]; op = f[4]
		key = t "," s "," p
		if (!(key in r)) { printf "FAIL %s %s at %s: no result\n", t, p, s; bad++; continue }
		got = r[key] + 0; want = val(t, s, f[5])
		if (op == "eq") ok = sprintf("%.2f", got) == sprintf("%.2f", want)
		else if (op == "ge") ok = got >= want - 0.000001
		else { floor = f[6] + 0; ok = got >= floor
			if (got >= want) printf "note %s %s at %s: %.2f now meets the goal %.2f; tighten the rule\n", t, p, s, got, want
			else printf "SHORT %s %s at %s: %.2f, %.2f below the goal %.2f (floor %.2f)\n", t, p, s, got, want - got, want, floor
			short++ }
		if (!ok) { printf "FAIL %s %s at %s: %.2f, want %s %s\n", t, p, s, got, op, (op == "short" ? f[6] : sprintf("%.2f", want)); bad++ }
		n++
	}
	printf "hit-ratio goals: %d rules, %d failed, %d known shortfalls\n", n, bad, short
	exit bad > 0
}' "$tmp/out.csv"
goals=$?

# ---- adaptive against lru, wtinylfu and the best of the eleven peers ----
# On every point of ../shared/peers.csv and of the points of
# peers_extra.csv checked (above), adaptive (median of 5 seeds) must
# be at least lru - 0.5 and wtinylfu - 0.5 (the fixed 1 % window, its
# start before it had LIRS), and within 1 point of the best peer there,
# except at the known shortfalls listed below (trace, size, the goal it
# misses, a regression floor 1 point under its figure when it was
# written; doc/hit-ratio.md says why each falls short).
# The points of peers_extra.csv short of a goal follow (the generated
# workloads and SPEC traces; doc/hit-ratio.md, "Shortfalls").
cat >"$tmp/floors" <<'EOF'
orm-night.trace.xz 1000 best 66.80
gli.trace.gz 1000 wtinylfu 49.19
short-large-s2 131072 lru 35.29
EOF
if [ -f "$peers" ]; then
	grep -E ',(lru|adaptive|wtinylfu),' "$tmp/all.csv" >"$tmp/peer_rows.csv"
	awk -F, -v floors="$tmp/floors" -v rows="$tmp/peer_rows.csv" '
	FILENAME == floors { split($0, f, " "); fl[f[1] "," f[2] "," f[3]] = f[4]; next }
	FILENAME == rows { got[$1 "," $2 "," $3] = $6; next }
	FNR > 1 { k = $1 "," $2; if (!(k in best) || $4 + 0 > best[k]) { best[k] = $4 + 0; who[k] = $3 } }
	function check(k, t, s, a, goal, what, name, slack,   f) {
		f = k "," what
		if (a >= goal - slack) {
			if (f in fl) printf "note %s at %s: %.2f now within %s of %s %.2f; drop its floor\n", t, s, a, slack, name, goal
			return 1
		}
		if (!(f in fl)) { printf "FAIL %s at %s: adaptive %.2f, more than %s below %s %.2f\n", t, s, a, slack, name, goal; bad++; return 0 }
		printf "SHORT %s at %s: adaptive %.2f, %s %.2f (floor %.2f)\n", t, s, a, name, goal, fl[f]
		if (a < fl[f]) { printf "FAIL %s at %s: %.2f under its floor %.2f\n", t, s, a, fl[f]; bad++ }
		return 0
	}
	END {
		for (k in best) {
			split(k, p, ","); n++
			a = got[p[1] ",adaptive," p[2]]; l = got[p[1] ",lru," p[2]]
			w = got[p[1] ",wtinylfu," p[2]]
			if (a == "" || l == "" || w == "") { printf "FAIL %s at %s: no result\n", p[1], p[2]; bad++; continue }
			check(k, p[1], p[2], a, l, "lru", "lru", 0.5)
			check(k, p[1], p[2], a, w, "wtinylfu", "wtinylfu", 0.5)
			within += check(k, p[1], p[2], a, best[k], "best", who[k], 1)
		}
		printf "peers.csv goals: %d points, %d within 1 of the best peer, %d failed\n", n, within, bad
		exit bad > 0 || n == 0
	}' "$tmp/floors" "$tmp/peer_rows.csv" "$peers" || goals=1
fi
exit $goals
