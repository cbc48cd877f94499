#!/bin/bash
# bench_redis.sh [top_builddir] - the module's cost against the server's
# own commands, on Debian's redis-server and on Valkey 8.0.1 built from
# ../shared (modules/redis/valkey.sh: built once per build tree; skipped,
# saying so, without ../shared).  make bench-redis; by hand, not in CI:
# about 3 minutes for both servers on an idle 2-core machine.
#
#  1. Throughput: CF.ADD against SET and CF.EXISTS against EXISTS, each
#     measured by redis-benchmark (50 clients, random keys from 10^7) with no
#     pipelining and with 16 commands per round trip; the median of RUNS runs
#     of each, alternated, and the ratio module / Redis.
#  2. Memory per item: N items in one filter reserved for N (MEMORY USAGE)
#     against the same items in a Redis set (SADD) and as N string keys
#     (INFO used_memory before and after), and RedisBloom's own sizing for
#     the same capacity computed from its documented layout (buckets of 2
#     one-byte fingerprints, a power-of-two bucket count).
#  3. Growth past the reserved capacity: reserve 1000, add 20,000, the measured
#     false-positive rate over 100,000 absent items and the stated bound.
#
# Environment: RUNS (default 5), REQUESTS per run (default 200000), ITEMS
# for the memory part (default 1000000).
set -eu
top=${1:-.}
: "${top_srcdir:=$(cd "$(dirname "$0")/../.." && pwd)}" "${top_builddir:=$top}"
export top_srcdir top_builddir
mod=$(cd "$top" && pwd)/modules/redis/.libs/admit_redis.so
RUNS=${RUNS:-5}
REQUESTS=${REQUESTS:-200000}
ITEMS=${ITEMS:-1000000}
py=/usr/bin/python3
for t in redis-server redis-benchmark redis-cli; do
	command -v $t >/dev/null || { echo "bench-redis: $t not found"; exit 1; }
done
[ -f "$mod" ] || { echo "bench-redis: $mod not built"; exit 1; }
$py -c 'import redis' || { echo "bench-redis: python3-redis not found"; exit 1; }

servers=redis-server
if valkey=$("$top_srcdir/modules/redis/valkey.sh"); then
	servers="$servers $valkey"
else
	echo "bench-redis: Valkey skipped (above: why)"
fi
dir=$(mktemp -d)
pid=
trap '[ -z "$pid" ] || kill $pid 2>/dev/null; wait 2>/dev/null; rm -rf "$dir"' EXIT
cli() { redis-cli -p "$port" "$@"; }

# rps of one redis-benchmark run of one command.
rps() {
	local pipe=$1; shift
	nice -n 10 redis-benchmark -p "$port" -n "$REQUESTS" -c 50 -r 10000000 \
		-P "$pipe" --csv "$@" | awk -F'"' 'NR == 2 { print $4 }'
}
median() { sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

# Everything below, once per server.
bench_server() {
server=$1
port=$($py -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
nice -n 10 "$server" --port "$port" --bind 127.0.0.1 --dir "$dir" --save '' \
	--appendonly no --loadmodule "$mod" --logfile "$dir/log" &
pid=$!
for _ in $(seq 100); do
	cli ping >/dev/null 2>&1 && break
	sleep 0.05
done
echo "==== $("$server" --version)"
echo "== throughput (redis-benchmark, 50 clients, $REQUESTS requests, median of $RUNS)"
cli cf.reserve bench 20000000 >/dev/null
for pipe in 1 16; do
	: >"$dir/add"; : >"$dir/set"; : >"$dir/ex"; : >"$dir/kex"
	for _ in $(seq "$RUNS"); do
		rps $pipe CF.ADD bench __rand_int__ >>"$dir/add"
		rps $pipe SET key:__rand_int__ x >>"$dir/set"
		rps $pipe CF.EXISTS bench __rand_int__ >>"$dir/ex"
		rps $pipe EXISTS key:__rand_int__ >>"$dir/kex"
	done
	add=$(median <"$dir/add"); set=$(median <"$dir/set")
	ex=$(median <"$dir/ex"); kex=$(median <"$dir/kex")
	awk -v p=$pipe -v a="$add" -v s="$set" -v e="$ex" -v k="$kex" 'BEGIN {
		printf "pipeline %2d: CF.ADD %9.0f/s  SET    %9.0f/s  ratio %.2f\n", p, a, s, a / s
		printf "pipeline %2d: CF.EXISTS %6.0f/s  EXISTS %9.0f/s  ratio %.2f\n", p, e, k, e / k }'
done
cli flushall >/dev/null

echo "== memory per item ($ITEMS items)"
PORT=$port ITEMS=$ITEMS $py - <<'EOF'
import math, os, redis
r = redis.Redis(port=int(os.environ["PORT"]))
n = int(os.environ["ITEMS"])

def fill(cmd, key_of, batch=10000):
    for i in range(0, n, batch):
        p = r.pipeline(transaction=False)
        for j in range(i, min(n, i + batch)):
            cmd(p, j)
        p.execute()

r.execute_command("CF.RESERVE", "cf", n)
fill(lambda p, j: p.execute_command("CF.ADD", "cf", "item:%d" % j), None)
cf = r.memory_usage("cf")
info = r.execute_command("CF.INFO", "cf")
fill(lambda p, j: p.sadd("set", "item:%d" % j), None)
st = r.memory_usage("set", samples=0)
r.flushall()
before = r.info("memory")["used_memory"]
fill(lambda p, j: p.set("item:%d" % j, 1), None)
keys = r.info("memory")["used_memory"] - before
# RedisBloom: capacity / 2 buckets rounded up to a power of two, 2 slots of
# one byte each.
rb = 2 ** math.ceil(math.log2(n / 2)) * 2
print("CF (admit)           %8.2f bytes/item (%d bytes, %s filters)"
      % (cf / n, cf, info[info.index(b"Number of filters") + 1]))
print("SADD set             %8.2f bytes/item  ratio set/CF %.1f" % (st / n, st / cf))
print("SET string keys      %8.2f bytes/item  ratio keys/CF %.1f" % (keys / n, keys / cf))
print("RedisBloom (derived) %8.2f bytes/item, false-positive bound 2*2/2^8 = 1.56 %%"
      " (admit: 8/2^16 = 0.012 %%)" % (rb / n))
r.flushall()

print("== growth: reserve 1000, add 20000, 100000 absent items probed")
for exp in (None, 1):
    args = ["CF.RESERVE", "g", 1000] + (["EXPANSION", exp] if exp else [])
    r.execute_command(*args)
    p = r.pipeline(transaction=False)
    for i in range(20000):
        p.execute_command("CF.ADD", "g", "in:%d" % i)
    p.execute()
    fp = 0
    for i in range(0, 100000, 1000):
        fp += sum(r.execute_command("CF.MEXISTS", "g",
                                    *["out:%d" % j for j in range(i, i + 1000)]))
    inf = r.execute_command("CF.INFO", "g")
    d = {inf[i]: inf[i + 1] for i in range(0, len(inf), 2)}
    print("EXPANSION %-10s filters %2d  false positives %.4f %%  bound %.4f %%"
          "  (RedisBloom 2.6: 26.6 %%)"
          % (exp or "default 2", d[b"Number of filters"], fp / 1000.0,
             float(d[b"Error rate bound"]) * 100))
    r.delete("g")
EOF
cli shutdown nosave >/dev/null 2>&1 || true
wait $pid 2>/dev/null || true
pid=
}

for s in $servers; do
	bench_server "$s"
done
