#!/bin/sh
# make stress: build (done by make) and run every stress harness and fuzz
# target for a bounded time, one verdict line each, then "N passed, N failed".
#
#   STRESS_SECONDS  each timed harness runs a fifth of it (default 60)
#   STRESS_THREADS  threads of stress_cuckoo, stress_chain and stress_snapshot
#                   (default 16)
#   STRESS_KEYS     keys per thread of those three (default 4096; fewer fill
#                   the table sooner, which slow sanitizer builds need)
#   STRESS_SEED     replay: pass this seed to every harness (default: fresh)
#   FUZZ_SECONDS    time of each fuzz target (default 60; 0 skips them):
#                   fuzz_snapshot and fuzz_api at once, then the chain's,
#                   the Redis module's and admit-dedup's file parsers
# Logs, fuzz corpora and crash inputs go to stress-logs/ in the build tree.
set -u
b=${top_builddir:-.}
total=${STRESS_SECONDS:-60}
threads=${STRESS_THREADS:-16}
keys=${STRESS_KEYS:-4096}
fuzz=${FUZZ_SECONDS:-60}
seed=${STRESS_SEED:+--seed $STRESS_SEED}
per=$(awk -v t="$total" 'BEGIN { s = t / 5; printf "%.1f", s < 1 ? 1 : s }')
logs=$b/stress-logs
mkdir -p "$logs"
passed=0
failed=0

# A harness fails on a non-zero exit or on any sanitizer report in its log.
verdict() { # name log rc summary-pattern
	if [ "$3" -eq 0 ] && ! grep -qE '^(WARNING|ERROR): (ThreadSanitizer|AddressSanitizer|LeakSanitizer)|runtime error:' "$2"; then
		passed=$((passed + 1))
		printf 'PASS %-28s %s\n' "$1" \
			"$(grep -E "$4" "$2" | sed 's/^ *//' | paste -sd '|' - | sed 's/|/ | /g')"
	else
		failed=$((failed + 1))
		printf 'FAIL %-28s exit %s; the end of %s:\n' "$1" "$3" "$2"
		tail -n 25 "$2" | sed 's/^/    /'
	fi
}

run() { # name summary-pattern command...
	name=$1
	pat=$2
	shift 2
	log=$logs/$name.log
	"$@" >"$log" 2>&1
	verdict "$name" "$log" $? "$pat"
}

if [ "$fuzz" != 0 ] && [ -x "$b/fuzz/fuzz_api" ] && [ -x "$b/fuzz/fuzz_snapshot" ]; then
	echo "fuzzing both targets for $fuzz s ..."
	mkdir -p "$logs/corpus-snapshot" "$logs/corpus-api"
	ADMIT_FUZZ_SEEDS=$logs/corpus-snapshot "$b/fuzz/fuzz_snapshot" \
		-max_total_time="$fuzz" -timeout=10 -print_final_stats=1 \
		-artifact_prefix="$logs/crash-snapshot-" "$logs/corpus-snapshot" \
		>"$logs/fuzz_snapshot.log" 2>&1 &
	p1=$!
	"$b/fuzz/fuzz_api" -max_total_time="$fuzz" -timeout=10 -print_final_stats=1 \
		-artifact_prefix="$logs/crash-api-" "$logs/corpus-api" \
		>"$logs/fuzz_api.log" 2>&1 &
	p2=$!
	wait "$p1"
	verdict fuzz_snapshot "$logs/fuzz_snapshot.log" $? '^stat::number_of_executed_units'
	wait "$p2"
	verdict fuzz_api "$logs/fuzz_api.log" $? '^stat::number_of_executed_units'
	# The file parsers, one after the other, each seeding its corpus.
	for t in chain redis_dump dedup_state; do
		[ -x "$b/fuzz/fuzz_$t" ] || continue
		mkdir -p "$logs/corpus-$t"
		ADMIT_FUZZ_SEEDS=$logs/corpus-$t "$b/fuzz/fuzz_$t" \
			-max_total_time="$fuzz" -timeout=10 -print_final_stats=1 \
			-artifact_prefix="$logs/crash-$t-" "$logs/corpus-$t" \
			>"$logs/fuzz_$t.log" 2>&1
		verdict "fuzz_$t" "$logs/fuzz_$t.log" $? '^stat::number_of_executed_units'
	done
elif [ "$fuzz" = 0 ]; then
	echo "SKIP fuzz_snapshot, fuzz_api: FUZZ_SECONDS=0"
else
	echo "SKIP fuzz_snapshot, fuzz_api: no clang with libFuzzer at configure time" \
	     "(Debian: apt-get install clang libclang-rt-14-dev, then configure again)"
fi

for mode in 16 8 13 counting; do
	run "stress_cuckoo-$mode" '^  (ops|filter stats):' \
		"$b/stress/stress_cuckoo" --mode "$mode" --threads "$threads" --keys "$keys" \
		--seconds "$per" $seed
done
run stress_linear 'rounds in|filter stats' "$b/stress/stress_linear" --seconds "$per" $seed
run stress_linear-8 'rounds in|filter stats' "$b/stress/stress_linear" --bits 8 --seconds "$per" $seed
run stress_linear-13 'rounds in|filter stats' "$b/stress/stress_linear" --bits 13 --seconds "$per" $seed
# 128 buckets, semi-sorted: its power-of-two lookups.
run stress_linear-13-pow2 'rounds in|filter stats' "$b/stress/stress_linear" --bits 13 \
	--capacity 486 --seconds "$per" $seed
# 128 buckets: the power-of-two lookup path.
run stress_linear-8-pow2 'rounds in|filter stats' "$b/stress/stress_linear" --bits 8 \
	--capacity 486 --seconds "$per" $seed
# The same on the lookups compiled without BMI2 (x86-64 runs the BMI2 ones
# where the CPU has them).
run stress_linear-8-pow2-nobmi2 'rounds in|filter stats' env ADMIT_NO_BMI2=1 \
	"$b/stress/stress_linear" --bits 8 --capacity 486 --seconds "$per" $seed
run stress_linear_broken-caught '^broken build caught' \
	env top_builddir="$b" sh "$(dirname "$0")/broken-caught.sh" 30
# The chain at each width it takes (its filters cannot be semi-sorted), then
# its add mutex (max_load) and its single-writer mode, on half the time.
half=$(awk -v p="$per" 'BEGIN { s = p / 2; printf "%.1f", s < 1 ? 1 : s }')
for bits in 16 8; do
	run "stress_chain-$bits" '^  (ops|chain|false positives):' \
		"$b/stress/stress_chain" --bits "$bits" --threads "$threads" --keys "$keys" \
		--seconds "$per" $seed
done
run stress_chain-16-max-load '^  (ops|chain|false positives):' \
	"$b/stress/stress_chain" --max-load 0.5 --threads "$threads" --keys "$keys" \
	--seconds "$half" $seed
run stress_chain-8-single-writer '^  (ops|chain|false positives):' \
	"$b/stress/stress_chain" --bits 8 --single-writer --threads "$threads" \
	--keys "$keys" --seconds "$half" $seed
run stress_chain_broken-caught '^(broken chain caught|defect)' \
	env top_builddir="$b" sh "$(dirname "$0")/chain-broken-caught.sh" 20
run stress_snapshot 'saves' \
	"$b/stress/stress_snapshot" --threads "$threads" --keys "$keys" \
	--seconds "$per" $seed
run stress_snapshot-13 'saves' \
	"$b/stress/stress_snapshot" --mode 13 --threads "$threads" --keys "$keys" \
	--seconds "$per" $seed
# Three policies share one slot of the time budget.
run stress_cache '^stress_cache:' sh "$(dirname "$0")/run_stress_cache.sh" \
	"$b/stress/stress_cache" "$(awk -v p="$per" 'BEGIN { s = p / 3; printf "%.0f", s < 1 ? 1 : s }')"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
