# ab_rounds.sh - sourced by the A/B scripts (bench_ab.sh,
# bench_cache_ab.sh).  ab_rounds ROUNDS OLD_LIBDIR NEW_LIBDIR FN calls
# FN VERSION LIBDIR ROUND for each round, VERSION old then new, each
# round's first the other of the round before (so that what the order
# does cancels).
ab_rounds() {
	_r=0
	while [ "$_r" -lt "$1" ]; do
		if [ $((_r % 2)) = 1 ]; then
			"$4" new "$3" "$_r"
			"$4" old "$2" "$_r"
		else
			"$4" old "$2" "$_r"
			"$4" new "$3" "$_r"
		fi
		_r=$((_r + 1))
	done
}
