#!/bin/bash
# What a request costs memcached and admit-cached, counted rather than
# timed (counts hold on a loaded machine, where CPU times do not): under
# bench_cached.sh's read-through load, shortened, each server's system
# calls a request (perf's syscall tracepoints on its threads), the TCP
# segments a request (nstat, the whole host's: run it on a quiet one), and
# its user instructions a request (callgrind; memcached's include its
# start-up, amortised over the load).  Needs perf (root, or
# perf_event_paranoid <= 1), valgrind and Debian's memcached; skips a
# count whose tool is missing.
# By hand, not in CI:   make count-cached   (from the build directory), or
#   programs/cached/count_cached.sh   with the knobs below in the environment.
set -u
: "${top_builddir:=.}"
MEMORY_MB=${MEMORY_MB:-16}
SERVER_THREADS=${SERVER_THREADS:-2}
CLIENTS=${CLIENTS:-4}
WARMUP=${WARMUP:-5000}          # gets per client
REQUESTS=${REQUESTS:-5000}      # gets per client

cached="$top_builddir/programs/cached/admit-cached"
load="$top_builddir/programs/cached/cached_load"
for f in "$cached" "$load"; do
	[ -x "$f" ] || { echo "count_cached: $f not built"; exit 1; }
done
memcached=$(command -v memcached) || { echo "count_cached: memcached not installed; skipped"; exit 77; }
tmp=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$tmp"' EXIT

# start NAME [WRAPPER...]: starts server NAME on a fresh port under the
# wrapper (a valgrind command line, or nothing); sets pid and port.
start() {
	local name=$1
	shift
	port=$((20000 + (RANDOM * 32768 + RANDOM) % 40000))
	if [ "$name" = memcached ]; then
		# memcached sets its descriptor limit to -c; valgrind keeps a
		# few descriptors above the limit it was started with for itself.
		(ulimit -n 1036 2>/dev/null
		 exec "$@" "$memcached" -l 127.0.0.1 -m "$MEMORY_MB" -t "$SERVER_THREADS" \
			-U 0 -c 1024 -u "$(id -un)" -p "$port") 2>"$tmp/err" &
	elif [ $# -gt 0 ]; then
		"$top_builddir/libtool" --mode=execute "$@" "$cached" --listen 127.0.0.1 \
			--memory "$MEMORY_MB" --threads "$SERVER_THREADS" -p "$port" 2>"$tmp/err" &
	else
		"$cached" --listen 127.0.0.1 --memory "$MEMORY_MB" \
			--threads "$SERVER_THREADS" -p "$port" 2>"$tmp/err" &
	fi
	pid=$!
	for _ in $(seq 300); do
		(exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && return 0
		sleep 0.1
	done
	echo "count_cached: $name did not start"; cat "$tmp/err"; exit 1
}

stop() { kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; pid=; }

# load: runs the load against port; prints the requests it sent.
load() {
	"$load" --port "$port" --threads "$CLIENTS" --warmup "$WARMUP" \
		--requests "$REQUESTS" --max-seconds 1800 --seed 1 |
		awk '{ for (i = 1; i < NF; i++) if ($i == "all_requests") print $(i + 1) }'
}

# syscalls NAME: system calls a request, total and the three busiest.
syscalls() {
	local n
	start "$1"
	perf stat -x, -e 'syscalls:sys_enter_*' -p "$pid" -o "$tmp/perf" &
	local ppid=$!
	sleep 0.5
	n=$(load)
	kill -INT "$ppid"; wait "$ppid"
	stop
	sort -t, -k1,1nr "$tmp/perf" | awk -F, -v n="$n" -v s="$1" '
		$1 ~ /^[0-9]+$/ && $1 > 0 { t += $1; if (k++ < 4) {
			sub(/syscalls:sys_enter_/, "", $3); top = top sprintf(" %s %.3f", $3, $1 / n) } }
		END { printf "%-13s system calls a request %.3f:%s\n", s, t / n, top }'
}

# segments NAME: TCP segments sent a request, the whole host's.
segments() {
	local n
	start "$1"
	nstat -n
	n=$(load)
	nstat -z TcpOutSegs | awk -v n="$n" -v s="$1" '
		$1 == "TcpOutSegs" { printf "%-13s TCP segments a request %.3f\n", s, $2 / n }'
	stop
}

# instructions NAME: user instructions a request (callgrind).
instructions() {
	local n ir
	start "$1" valgrind --tool=callgrind --callgrind-out-file="$tmp/cg.$1"
	[ "$1" = memcached ] || callgrind_control -z "$pid" >/dev/null 2>&1
	n=$(load)
	stop
	ir=$(callgrind_annotate "$tmp/cg.$1" 2>/dev/null |
		awk '/PROGRAM TOTALS/ { gsub(",", "", $1); print $1 }')
	awk -v ir="$ir" -v n="$n" -v s="$1" 'BEGIN {
		printf "%-13s user instructions a request %.0f\n", s, ir / n }'
}

echo "memory ${MEMORY_MB} MiB, server threads $SERVER_THREADS, $CLIENTS clients," \
	"$WARMUP + $REQUESTS gets/client"
for s in memcached admit-cached; do
	if command -v perf >/dev/null && perf stat -e 'syscalls:sys_enter_read' true >/dev/null 2>&1; then
		syscalls "$s"
	else
		echo "$s: no perf syscall tracepoints; system calls not counted"
	fi
	command -v nstat >/dev/null && segments "$s"
	if command -v valgrind >/dev/null; then
		instructions "$s"
	else
		echo "$s: no valgrind; instructions not counted"
	fi
done
