# ab_summary.awk - the summary of an A/B run (bench_ab.sh,
# bench_cache_ab.sh): input lines "old|new ROUND MEASURE VALUE"; prints,
# per measure, the medians of the old and new values over the rounds that
# have both, and the median of the rounds' new / old ratios with their
# range.
function median(a, k,   i, j, t) {
	for (i = 1; i <= k; i++)
		for (j = i + 1; j <= k; j++)
			if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
	return k % 2 ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
}
{ v[$1, $2, $3] = $4; ops[$3] = 1; if ($2 + 1 > rounds) rounds = $2 + 1 }
END {
	for (op in ops) {
		delete O; delete N; delete Q
		k = 0
		for (r = 0; r < rounds; r++)
			if ((("old", r, op) in v) && (("new", r, op) in v)) {
				k++
				O[k] = v["old", r, op]; N[k] = v["new", r, op]
				Q[k] = N[k] / O[k]
			}
		if (!k)
			continue
		lo = hi = Q[1]
		for (i = 2; i <= k; i++) {
			if (Q[i] < lo) lo = Q[i]
			if (Q[i] > hi) hi = Q[i]
		}
		printf "%-14s %8.2f %8.2f  %.3f (%.2f-%.2f)\n", op, median(O, k),
		       median(N, k), median(Q, k), lo, hi
		done++
	}
	if (!done) {
		print "ab_summary.awk: no round has both runs" > "/dev/stderr"
		exit 1
	}
}
