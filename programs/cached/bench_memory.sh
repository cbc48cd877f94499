#!/bin/bash
# admit-cached's memory against Debian's memcached, measured as a user
# measures it: each server started with the same -m on loopback, then SETS
# sets of VALUE_SIZE-byte values under distinct keys (far more than -m
# holds), then each server's item count ("stats" curr_items) and resident
# memory (VmRSS of /proc/PID/status), and the ratios.  "empty" is the
# server's VmRSS before the first set: its fixed overhead (tables, buffers,
# threads), which -m does not include.
# The client is pymemcache (Debian's python3-pymemcache) when a python3 has
# it, sending its sets in batches (set_many, each reply read); else the
# same batches over a plain socket.
# By hand, not in CI:   make bench-memory   (from the build directory), or
#   programs/cached/bench_memory.sh   with the knobs below in the environment.
set -u
: "${top_builddir:=.}"
MEMORY_MB=${MEMORY_MB:-256}      # -m of both servers
SETS=${SETS:-3000000}            # distinct keys, one set each
VALUE_SIZE=${VALUE_SIZE:-100}
BATCH=${BATCH:-1000}             # sets in flight per batch
MAX_SECONDS=${MAX_SECONDS:-600}  # bound on each server's load
SERVER_THREADS=${SERVER_THREADS:-4}

cached="$top_builddir/programs/cached/admit-cached"
[ -x "$cached" ] || { echo "bench_memory: $cached not built (make programs/cached/admit-cached)"; exit 1; }
memcached=$(command -v memcached) || { echo "bench_memory: memcached not installed (apt-get install memcached); skipped"; exit 77; }
py=
for p in python3 /usr/bin/python3; do
	command -v "$p" >/dev/null || continue
	[ -z "$py" ] && py=$p
	if "$p" -c 'import pymemcache' 2>/dev/null; then py=$p; break; fi
done
[ -n "$py" ] || { echo "bench_memory: python3 missing; skipped"; exit 77; }

pid=
results=$(mktemp)
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -f "$results"' EXIT

wait_port() {
	for _ in $(seq 100); do
		(exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}

rss_kib() { awk '/^VmRSS/ { print $2 }' "/proc/$1/status"; }

# load PORT: the sets, then "stats" curr_items on stdout.
load() {
	timeout "$MAX_SECONDS" "$py" - "$1" "$SETS" "$VALUE_SIZE" "$BATCH" <<'PY'
import socket, sys

port, sets, vsize, batch = (int(a) for a in sys.argv[1:5])
value = b"v" * vsize
key = lambda i: b"key:%010d" % i

try:
    from pymemcache.client.base import Client
except ImportError:
    Client = None

if Client:
    c = Client(("127.0.0.1", port), connect_timeout=5, timeout=60)
    for lo in range(0, sets, batch):
        failed = c.set_many({key(i): value for i in range(lo, min(sets, lo + batch))},
                            noreply=False)
        if failed:
            sys.exit("bench_memory: %d sets failed" % len(failed))
    items = int(c.stats()[b"curr_items"])
    client = "pymemcache"
else:
    s = socket.create_connection(("127.0.0.1", port), timeout=60)
    f = s.makefile("rb")
    for lo in range(0, sets, batch):
        n = min(sets, lo + batch) - lo
        s.sendall(b"".join(b"set %s 0 0 %d\r\n%s\r\n" % (key(i), vsize, value)
                           for i in range(lo, lo + n)))
        for _ in range(n):
            if f.readline() != b"STORED\r\n":
                sys.exit("bench_memory: a set was not stored")
    s.sendall(b"stats\r\n")
    items = None
    for line in iter(f.readline, b"END\r\n"):
        if not line:
            break
        w = line.split()
        if w[1] == b"curr_items":
            items = int(w[2])
    client = "socket"
print(items, client)
PY
}

# run NAME COMMAND...: starts a server, loads it, prints its figures.
run() {
	local name=$1 port out empty full
	shift
	port=$((20000 + (RANDOM * 32768 + RANDOM) % 40000))
	"$@" -p "$port" >/dev/null 2>&1 &
	pid=$!
	if ! wait_port "$port"; then
		echo "bench_memory: $name did not start on port $port" >&2
		exit 1
	fi
	empty=$(rss_kib "$pid")
	out=$(load "$port") || { echo "bench_memory: $name: the load failed" >&2; exit 1; }
	sleep 1
	full=$(rss_kib "$pid")
	kill "$pid"
	wait "$pid" 2>/dev/null
	pid=
	set -- $out
	echo "$name items=$1 empty_kib=$empty rss_kib=$full client=$2"
}

echo "-m $MEMORY_MB MiB, $SETS sets of $VALUE_SIZE-byte values under distinct keys, server threads $SERVER_THREADS"
# In this shell, not a pipeline's: the EXIT trap must see pid.
run memcached "$memcached" -l 127.0.0.1 -m "$MEMORY_MB" -t "$SERVER_THREADS" \
	-U 0 -u nobody >>"$results"
run admit-cached "$cached" --listen 127.0.0.1 --memory "$MEMORY_MB" \
	--threads "$SERVER_THREADS" >>"$results"
cat "$results"
awk -v m="$MEMORY_MB" '
{
	for (i = 2; i <= NF; i++) { split($i, kv, "="); v[$1, kv[1]] = kv[2] }
}
END {
	printf "\n%-13s %10s %11s %11s %12s %14s\n", "server", "items",
	       "empty MiB", "RSS MiB", "B/item", "RSS/(-m+empty)"
	split("memcached admit-cached", s, " ")
	for (i = 1; i <= 2; i++) {
		n = s[i]
		printf "%-13s %10d %11.1f %11.1f %12.1f %14.3f\n", n, v[n, "items"],
		       v[n, "empty_kib"] / 1024, v[n, "rss_kib"] / 1024,
		       (v[n, "rss_kib"] - v[n, "empty_kib"]) * 1024 / v[n, "items"],
		       v[n, "rss_kib"] / (m * 1024 + v[n, "empty_kib"])
	}
	a = "admit-cached"; c = "memcached"
	printf "\nadmit-cached / memcached: RSS x%.3f, items x%.3f, RSS per item x%.3f\n",
	       v[a, "rss_kib"] / v[c, "rss_kib"], v[a, "items"] / v[c, "items"],
	       (v[a, "rss_kib"] / v[a, "items"]) / (v[c, "rss_kib"] / v[c, "items"])
	printf "admit-cached RSS / (-m + its empty RSS): %.3f (goal <= 1.10)\n",
	       v[a, "rss_kib"] / (m * 1024 + v[a, "empty_kib"])
}' "$results"
