#!/bin/sh
# The chain harness's self-test: stress_chain_broken (src/chain_broken.c)
# must fail on each planted defect, each caught by the check named beside
# it, within the time given (default 20 s; each is usually caught in its
# first epoch, well under a second).
bin=${top_builddir:-.}/stress/stress_chain_broken
secs=${1:-20}
for case in "lookup:contains\(own key" "count:count\(own key" \
            "size:info: .* items but adds - deletes" \
            "unique:(add_unique\(own key|unique round .* succeeded)"; do
	defect=${case%%:*}
	want=${case#*:}
	out=$("$bin" --defect "$defect" --threads 4 --keys 512 --seconds "$secs" 2>&1)
	rc=$?
	if [ "$rc" -eq 1 ] && printf '%s\n' "$out" | grep -Eq "^FAIL: .*$want"; then
		printf '%s\n' "$out" | grep -E -m 1 "^FAIL: .*$want"
		echo "defect $defect caught"
		continue
	fi
	printf '%s\n' "$out" | tail -n 20
	echo "defect $defect NOT caught by \"$want\" (exit $rc)"
	exit 1
done
# The harness passes on the same build with no defect picked.
out=$("$bin" --threads 4 --keys 512 --seconds 2 2>&1)
rc=$?
if [ "$rc" -ne 0 ]; then
	printf '%s\n' "$out" | tail -n 20
	echo "stress_chain_broken fails with no defect (exit $rc)"
	exit 1
fi
echo "broken chain caught: every defect"
