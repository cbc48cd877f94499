#!/bin/sh
# Runs stress/stress_cache under each policy and prints one verdict line.
#   run_stress_cache.sh [PATH/TO/stress_cache] [SECONDS]
set -u
prog=${1:-stress/stress_cache}
secs=${2:-2}
fail=0 runs=0
for policy in adaptive tinylfu lru; do
	runs=$((runs + 1))
	out=$("$prog" --threads 4 --seconds "$secs" --policy "$policy" 2>&1)
	rc=$?
	if [ $rc -ne 0 ]; then
		fail=$((fail + 1))
		printf '%s\n' "$out" >&2
	fi
done
if [ $fail -eq 0 ]; then
	echo "stress_cache: PASS ($runs runs of $secs s: adaptive, tinylfu, lru)"
else
	echo "stress_cache: FAIL ($fail of $runs runs failed)"
	exit 1
fi
