#!/bin/sh
# The history checker's self-test: stress_linear_broken (lookups that skip
# miss validation) must be reported as non-linearizable, within the time
# given (default 30 s; it is usually caught in its first round), at each
# table layout (16 and 8 bits, 13 in semi-sorted buckets: src/cuckoo_broken.c
# replaces every layout's lookups in that build).
bin=${top_builddir:-.}/stress/stress_linear_broken
for bits in 16 8 13; do
	out=$("$bin" --bits "$bits" --until-fail --seconds "${1:-30}" 2>&1)
	rc=$?
	if [ "$rc" -eq 1 ] && printf '%s\n' "$out" | grep -q '^NOT LINEARIZABLE'; then
		printf '%s\n' "$out" | grep -E '^(NOT LINEARIZABLE|  [0-9]+ rounds)'
		echo "broken build caught at $bits bits"
		continue
	fi
	printf '%s\n' "$out" | tail -n 20
	echo "broken build NOT caught at $bits bits (exit $rc)"
	exit 1
done
exit 0
