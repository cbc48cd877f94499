#!/bin/bash
# admit-cached against Debian's memcached (and against itself with
# --no-admission, i.e. plain LRU): the same read-through Zipf load from
# programs/cached/cached_load, the same memory limit, fresh servers for every run, on
# loopback only.  Prints each run, then the medians and their ratios.
# Each run line ends with the server's peak RSS (VmHWM) and, from its
# "stats" at the end of the load, curr_items, evictions and reclaimed
# (capacity of expired items taken back without a get), then the CPU time
# per request (gets and sets, warm-up included) of the server (all its
# threads, from /proc/PID/task/*/schedstat) and of the load client, in
# microseconds: on a machine shared by server and clients, ops/s follows
# from both, and the server's figure is the less noisy comparison of the
# servers' own work.  It also gives the share of the server's CPU spent in
# the kernel (user and system clock ticks of its threads) and its threads'
# context switches per request (voluntary: asleep in epoll_wait with
# nothing to do; involuntary: preempted), where a server's CPU goes once
# its system calls a request are the same as the other's.
# TTL_FRACTION=0.5 TTL=2 gives half the keys an exptime of 2 s on every set
# (chosen by key hash, the same keys on every server): memory must stay
# bounded while items expire under the load.
# By hand, not in CI:   make bench-cached   (from the build directory), or
#   bench/bench_cached.sh   with the knobs below in the environment.
set -u
: "${top_builddir:=.}"
MEMORY_MB=${MEMORY_MB:-16}         # -m of both servers
SERVER_THREADS=${SERVER_THREADS:-2}
CLIENTS=${CLIENTS:-4}              # load threads, one connection each
KEYS=${KEYS:-1000000}              # key space, far larger than the cache
ZIPF=${ZIPF:-0.99}
VALUE_SIZE=${VALUE_SIZE:-100}
WARMUP=${WARMUP:-300000}           # gets per client, not counted
REQUESTS=${REQUESTS:-150000}       # gets per client, counted
RUNS=${RUNS:-5}
MAX_SECONDS=${MAX_SECONDS:-300}    # bound on each load run
TTL_FRACTION=${TTL_FRACTION:-0}    # fraction of keys set with exptime TTL
TTL=${TTL:-0}                      # seconds
LRU=${LRU:-1}                      # 0: skip admit-cached --no-admission

cached="$top_builddir/programs/cached/admit-cached"
load="$top_builddir/programs/cached/cached_load"
for f in "$cached" "$load"; do
	[ -x "$f" ] || { echo "bench_cached: $f not built (make programs/cached/admit-cached programs/cached/cached_load)"; exit 1; }
done
memcached=$(command -v memcached) || { echo "bench_cached: memcached not installed (apt-get install memcached); skipped"; exit 77; }

pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null' EXIT

wait_port() {
	for _ in $(seq 100); do
		(exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}

# cpu_ns PID: CPU time of all the process's threads in nanoseconds
# (schedstat; /proc/PID/stat's clock ticks where schedstat is missing).
cpu_ns() {
	local t a total=0
	for t in /proc/"$1"/task/*; do
		if [ -r "$t/schedstat" ]; then
			read -r a _ < "$t/schedstat"
		else
			a=$(awk -v hz="$(getconf CLK_TCK)" '{
				sub(/^.*\) /, ""); printf "%.0f", ($12 + $13) * 1e9 / hz }' "$t/stat")
		fi
		total=$((total + a))
	done
	echo "$total"
}

# sched PID: "user_ticks system_ticks switches" summed over the process's
# threads (/proc/PID/task/*/stat and status).
sched() {
	local t u=0 s=0 cs=0 a b
	for t in /proc/"$1"/task/*; do
		read -r a b < <(awk '{ sub(/^.*\) /, ""); print $12, $13 }' "$t/stat")
		u=$((u + a)); s=$((s + b))
		a=$(awk '/ctxt_switches/ { n += $2 } END { print n + 0 }' "$t/status")
		cs=$((cs + a))
	done
	echo "$u $s $cs"
}

# server_stats PORT: "curr_items N evictions N reclaimed N" from "stats".
server_stats() {
	local line out=
	exec 4<>"/dev/tcp/127.0.0.1/$1" || return 0
	printf 'stats\r\n' >&4
	while IFS= read -r -t 5 line <&4; do
		line=${line%$'\r'}
		[ "$line" = END ] && break
		set -- $line
		case $2 in
		curr_items|evictions|reclaimed) out="$out $2 $3" ;;
		esac
	done
	printf 'quit\r\n' >&4 2>/dev/null
	exec 4<&- 4>&-
	echo "$out"
}

# run NAME COMMAND...: starts a server on a fresh port, loads it, stops it.
run() {
	local name=$1 port out
	shift
	port=$((20000 + (RANDOM * 32768 + RANDOM) % 40000))
	"$@" -p "$port" >/dev/null 2>&1 &
	pid=$!
	if ! wait_port "$port"; then
		echo "bench_cached: $name did not start on port $port"
		exit 1
	fi
	cpu0=$(cpu_ns "$pid")
	read -r u0 s0 cs0 < <(sched "$pid")
	out=$(nice "$load" --port "$port" --threads "$CLIENTS" --keys "$KEYS" \
		--zipf "$ZIPF" --value-size "$VALUE_SIZE" --warmup "$WARMUP" \
		--requests "$REQUESTS" --max-seconds "$MAX_SECONDS" --seed "$run_no" \
		--ttl-fraction "$TTL_FRACTION" --ttl "$TTL") ||
		{ echo "bench_cached: load on $name failed: $out"; exit 1; }
	cpu1=$(cpu_ns "$pid")
	read -r u1 s1 cs1 < <(sched "$pid")
	cpu=$(echo "$out" | awk -v ns=$((cpu1 - cpu0)) -v u=$((u1 - u0)) \
		-v s=$((s1 - s0)) -v cs=$((cs1 - cs0)) '{
		for (i = 1; i < NF; i++) {
			if ($i == "all_requests") n = $(i + 1)
			if ($i == "load_cpu_s") l = $(i + 1)
		}
		if (n > 0)
			printf " srv_cpu_us_req %.3f load_cpu_us_req %.3f", ns / 1e3 / n, l * 1e6 / n
		if (n > 0 && u + s > 0)
			printf " srv_sys_pct %.1f srv_switches_req %.3f", 100 * s / (u + s), cs / n }')
	stats=$(server_stats "$port")
	# VmHWM: the peak resident set over the server's whole life.
	rss=$(awk '/VmHWM/ { print $2 }' "/proc/$pid/status")
	kill "$pid"
	wait "$pid" 2>/dev/null
	pid=
	echo "$name $out peak_rss_kib $rss$stats$cpu" | tee -a "$results"
}

results=$(mktemp)
echo "memory ${MEMORY_MB} MiB, server threads $SERVER_THREADS, $CLIENTS clients," \
	"$KEYS keys Zipf($ZIPF), values $VALUE_SIZE B, $WARMUP + $REQUESTS gets/client, $RUNS runs," \
	"TTL ${TTL} s on a fraction $TTL_FRACTION of the keys"
for run_no in $(seq "$RUNS"); do
	run memcached "$memcached" -l 127.0.0.1 -m "$MEMORY_MB" -t "$SERVER_THREADS" \
		-U 0 -c 1024 -u nobody
	run admit-cached "$cached" --listen 127.0.0.1 --memory "$MEMORY_MB" \
		--threads "$SERVER_THREADS"
	[ "$LRU" = 0 ] ||
	run admit-cached-lru "$cached" --listen 127.0.0.1 --memory "$MEMORY_MB" \
		--threads "$SERVER_THREADS" --no-admission
done
# Medians per server, then ratios against memcached.
awk -v mem_mb="$MEMORY_MB" '
function median(a, n,   i, j, t) {
	for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++)
		if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
{
	s = $1; k = ++n[s]
	for (i = 2; i < NF; i++)
		if ($i ~ /^(ops\/s|hit_ratio|peak_rss_kib|curr_items|reclaimed|evictions|srv_cpu_us_req|load_cpu_us_req|srv_sys_pct|srv_switches_req)$/)
			v[s, $i, k] = $(i + 1)
}
function med(s, f,   i, a) {
	for (i = 1; i <= n[s]; i++) a[i] = v[s, f, i] + 0
	return median(a, n[s])
}
END {
	split("memcached admit-cached admit-cached-lru", names, " ")
	printf "\nmedians of %d runs (memory limit %d MiB)\n", n["memcached"], mem_mb
	printf "%-18s %10s %9s %13s %10s %10s %10s %14s %15s %6s %9s\n", "server", "ops/s",
		"hit ratio", "peak RSS MiB", "curr_items", "evictions", "reclaimed",
		"server CPU us", "client CPU us", "sys %", "switches"
	for (k = 1; k <= 3; k++) {
		s = names[k]
		if (!n[s])
			continue
		mo[s] = med(s, "ops/s"); mh[s] = med(s, "hit_ratio")
		mc[s] = med(s, "srv_cpu_us_req")
		printf "%-18s %10.0f %9.4f %13.1f %10.0f %10.0f %10.0f %14.2f %15.2f %6.1f %9.3f\n", s, mo[s], mh[s],
			med(s, "peak_rss_kib") / 1024, med(s, "curr_items"),
			med(s, "evictions"), med(s, "reclaimed"), mc[s],
			med(s, "load_cpu_us_req"), med(s, "srv_sys_pct"),
			med(s, "srv_switches_req")
	}
	printf "(CPU us: CPU time per request, gets and sets, warm-up included, of the\n"
	printf " server'"'"'s threads and of the load client; the clients share the cores;\n"
	printf " sys %%: the kernel'"'"'s share of the server'"'"'s CPU; switches: its threads'"'"'\n"
	printf " context switches a request, asleep or preempted)\n"
	printf "\nadmit-cached / memcached: ops/s x%.2f (target >= 1.2), hit ratio %+.4f (target > 0)\n",
		mo["admit-cached"] / mo["memcached"], mh["admit-cached"] - mh["memcached"]
	printf "  ops/s per round:"
	for (k = 1; k <= n["memcached"] && k <= n["admit-cached"]; k++)
		printf " x%.2f", v["admit-cached", "ops/s", k] / v["memcached", "ops/s", k]
	if (mc["memcached"] > 0)
		printf "\n  server CPU per request: x%.2f of memcached'"'"'s (below 1: less work)",
			mc["admit-cached"] / mc["memcached"]
	printf "\n"
	if (n["admit-cached-lru"])
		printf "admit-cached / its own plain LRU: ops/s x%.2f, hit ratio %+.4f\n",
			mo["admit-cached"] / mo["admit-cached-lru"], mh["admit-cached"] - mh["admit-cached-lru"]
}' "$results"
rm -f "$results"
