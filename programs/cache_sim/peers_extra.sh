#!/bin/sh
# Prints peers_extra.csv (peers.csv's format: trace,size,policy,hit_ratio):
# the peers cache_sim simulates as libCacheSim does (arc, lirs, s3fifo,
# sieve, 2q, clock, and lru) on the points beyond ../shared/peers.csv:
#   - the SPEC CPU traces gzip, mcf and twolf of ../shared/traces, from a
#     small share of their distinct keys to most of them;
#   - the generated workloads of cache_sim (workload.h) built for the
#     shapes where a choice of policy is hardest (zigzag-near, recency,
#     short-large, web), each with the trace seeds 1, 2, 3 at its own
#     sizes, named WORKLOAD-sSEED (cache_sim --workload WORKLOAD --seed
#     SEED replays it), and the built-in zigzag and scan-hot (seed 1:
#     zigzag draws nothing from it);
#   - zipf-scans, the demo's workload (Zipf 0.9 with one-off scans), with
#     the seeds 1, 2, 3 at its sizes 1000, 10000, 100000.
# Usage: peers_extra.sh [CACHE_SIM] >peers_extra.csv.  Needs ../shared for
# the SPEC traces (skips them, saying so on stderr, without).  About two
# minutes on one core; the result is kept in the tree
# (programs/cache_sim/peers_extra.csv): the peers are deterministic.
set -u
: "${top_srcdir:=.}" "${top_builddir:=.}"
sim=${1:-$top_builddir/programs/cache_sim/cache_sim}
traces="$top_srcdir/../shared/traces"
peers=lru,arc,lirs,s3fifo,sieve,2q,clock
# cache_sim's names -> peers.csv's
rename='BEGIN { m["lru"] = "LRU"; m["arc"] = "ARC"; m["lirs"] = "LIRS"
	m["s3fifo"] = "S3FIFO"; m["sieve"] = "Sieve"; m["2q"] = "TwoQ"; m["clock"] = "Clock" }
NR > 1 { print t, $3, m[$2], $6 }'
echo trace,size,policy,hit_ratio
for t in gzip.keys.gz:1000,10000,50000,131072 mcf.keys.gz:1000,50000,131072,500000 \
	twolf.keys.gz:250,1000,2500,5000; do
	if [ ! -f "$traces/${t%:*}" ]; then
		echo "peers_extra.sh: no $traces/${t%:*}: skipped" >&2
		continue
	fi
	"$sim" --csv --sizes "${t#*:}" --policies $peers "$traces/${t%:*}" |
		awk -F, -v OFS=, -v t="${t%:*}" "$rename" || exit 1
done
for w in zigzag-near recency short-large web zigzag scan-hot zipf-scans; do
	seeds="1 2 3"
	case $w in zigzag | scan-hot) seeds=1 ;; esac
	for seed in $seeds; do
		"$sim" --csv --workload $w --seed $seed --policies $peers |
			awk -F, -v OFS=, -v t="$w-s$seed" "$rename" || exit 1
	done
done
