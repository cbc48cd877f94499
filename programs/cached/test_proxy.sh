#!/bin/bash
# Three admit-cached instances behind Debian's nutcracker (twemproxy) on
# loopback, as README's "More than one machine" configures it (ketama,
# auto_eject_hosts): set/get/multi-get/delete through the proxy, memcslap
# through it, keys spread over all three; then one instance is killed and
# the proxy must eject it while the other two keep serving every key.
# Skips (77) without nutcracker or python3.
set -u
: "${top_builddir:=.}"
server="$top_builddir/programs/cached/admit-cached"

for tool in nutcracker python3; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "SKIP $tool not found (Debian: apt-get install nutcracker python3)"
		exit 77
	fi
done

tmp=$(mktemp -d) || exit 1
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
	rm -rf "$tmp"
}
trap cleanup EXIT

wait_port() {
	for _ in $(seq 50); do
		(exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}

# Five free ports in a row from a random base: three servers, the proxy
# and its stats port.  Below the kernel's ephemeral range: a port that a
# client connection holds as its own (the other tests make thousands)
# answers no connect, yet cannot be listened on.
low=$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null)
[ "${low:-0}" -gt 12000 ] 2>/dev/null || low=32768
for attempt in 1 2 3 4 5 6 7 8 9 10; do
	base=$((10000 + (RANDOM * 32768 + RANDOM) % (low - 10010)))
	busy=0
	for i in 0 1 2 3 4; do
		(exec 3<>"/dev/tcp/127.0.0.1/$((base + i))") 2>/dev/null && busy=1
	done
	[ "$busy" -eq 0 ] && break
done
ports=("$base" "$((base + 1))" "$((base + 2))")
proxy=$((base + 3))
stats=$((base + 4))

for i in 0 1 2; do
	"$server" --port "${ports[$i]}" --threads 1 --memory 16 \
		2>"$tmp/server$i.log" &
	pids+=($!)
	disown $!  # no "Killed" notices from bash when stopped
	spid[$i]=$!
	wait_port "${ports[$i]}" || { cat "$tmp/server$i.log"; echo "FAIL admit-cached $i did not start"; exit 1; }
done

# The configuration README shows: ketama over the three, an instance that
# fails once is ejected for 30 s.
cat >"$tmp/nutcracker.yml" <<EOF
cached:
  listen: 127.0.0.1:$proxy
  hash: fnv1a_64
  distribution: ketama
  timeout: 1000
  auto_eject_hosts: true
  server_retry_timeout: 30000
  server_failure_limit: 1
  servers:
   - 127.0.0.1:${ports[0]}:1 cached0
   - 127.0.0.1:${ports[1]}:1 cached1
   - 127.0.0.1:${ports[2]}:1 cached2
EOF
nutcracker -t -c "$tmp/nutcracker.yml" >"$tmp/conf-test.log" 2>&1 ||
	{ cat "$tmp/conf-test.log"; echo "FAIL nutcracker rejects the configuration"; exit 1; }
nutcracker -c "$tmp/nutcracker.yml" -s "$stats" -a 127.0.0.1 -i 500 \
	-p "$tmp/nutcracker.pid" -o "$tmp/nutcracker.log" &
pids+=($!)
disown $!
wait_port "$proxy" || { cat "$tmp/nutcracker.log"; echo "FAIL nutcracker did not start"; exit 1; }
echo "admit-cached on ${ports[*]}, nutcracker on $proxy (stats $stats)"

fails=0
memcslap_rc=skip
if command -v memcslap >/dev/null 2>&1; then
	timeout 60 memcslap --servers="127.0.0.1:$proxy" --test=set \
		--concurrency=2 --execute-number=500 >"$tmp/memcslap.log" 2>&1 &&
	timeout 60 memcslap --servers="127.0.0.1:$proxy" --test=get \
		--concurrency=2 --execute-number=500 >>"$tmp/memcslap.log" 2>&1
	memcslap_rc=$?
fi

PROXY=$proxy STATS=$stats PORTS="${ports[*]}" KILL_PID="${spid[1]}" \
MEMCSLAP_RC=$memcslap_rc python3 - <<'EOF' || fails=$((fails + 1))
import json, os, signal, socket, sys, time

proxy = int(os.environ["PROXY"])
stats_port = int(os.environ["STATS"])
ports = [int(p) for p in os.environ["PORTS"].split()]
failures = 0


def check(name, cond, detail=""):
    global failures
    print(("ok " if cond else "FAIL ") + name + ("" if cond else " " + detail))
    failures += not cond


class Conn:
    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.buf = b""

    def line(self):
        while b"\r\n" not in self.buf:
            d = self.s.recv(65536)
            if not d:
                raise EOFError("closed")
            self.buf += d
        ln, self.buf = self.buf.split(b"\r\n", 1)
        return ln

    def cmd(self, data):
        self.s.sendall(data)
        return self.line()

    def get(self, keys):
        self.s.sendall(b"get " + b" ".join(keys) + b"\r\n")
        vals = {}
        while True:
            ln = self.line()
            f = ln.split(b" ")
            if f[0] != b"VALUE":
                return vals, ln
            n = int(f[3])
            while len(self.buf) < n + 2:
                self.buf += self.s.recv(65536)
            vals[f[1]] = self.buf[:n]
            self.buf = self.buf[n + 2:]


def items(port):
    c = Conn(port)
    c.s.sendall(b"stats\r\n")
    n = None
    while True:
        ln = c.line()
        if ln == b"END":
            return n
        if ln.startswith(b"STAT curr_items "):
            n = int(ln.split()[2])


rc = os.environ["MEMCSLAP_RC"]
if rc != "skip":
    check("memcslap set and get through the proxy", rc == "0", "exit " + rc)
    before = [items(p) for p in ports]
    check("memcslap's keys on all three instances", all(n > 0 for n in before), repr(before))

p = Conn(proxy)
base = [items(q) for q in ports]
keys = [b"proxy:%d" % i for i in range(300)]
ok = all(p.cmd(b"set %s 0 0 %d\r\nv-%s\r\n" % (k, len(k) + 2, k)) == b"STORED" for k in keys)
check("300 sets through the proxy", ok)
vals, end = p.get(keys)
check("one multi-get of the 300 through the proxy", end == b"END" and len(vals) == 300 and
      all(vals[k] == b"v-" + k for k in keys), "%d values, %r" % (len(vals), end))
spread = [items(q) - b for q, b in zip(ports, base)]
check("keys spread over all three instances %r" % spread,
      sum(spread) == 300 and min(spread) >= 30, repr(spread))
ok = all(p.cmd(b"delete %s\r\n" % k) == b"DELETED" for k in keys[:50])
vals, _ = p.get(keys[:60])
check("deletes through the proxy", ok and len(vals) == 10, "%d left" % len(vals))

# Kill the second instance: the proxy sees its connection close, and with
# server_failure_limit 1 ejects it at once; its keys then map to the other
# two, where they are misses (nothing is replicated), and nothing fails.
on1, _ = Conn(ports[1]).get(keys[50:])
os.kill(int(os.environ["KILL_PID"]), signal.SIGKILL)
time.sleep(0.5)
errors, misses = 0, 0
for k in keys[50:]:
    try:
        r = p.cmd(b"get %s\r\n" % k)
    except (OSError, EOFError):
        r = b"closed"
    if r.startswith(b"VALUE"):
        p.line(); p.line()
    elif r == b"END":
        misses += 1
    else:
        errors += 1
        print("  proxy answered", r)
        p = Conn(proxy)  # twemproxy may close a client on a server error
check("the killed instance's %d keys now misses, the rest hits, %d errors"
      % (len(on1), errors), errors == 0 and misses == len(on1) and len(on1) > 0,
      "%d misses" % misses)
time.sleep(1.5)  # stats are aggregated every 0.5 s
st = json.loads(socket.create_connection(("127.0.0.1", stats_port)).makefile().read())
s1 = st["cached"]["cached1"]
check("nutcracker ejected the killed instance", s1["server_ejected_at"] > 0 and
      s1["server_connections"] == 0, json.dumps(s1))
p = Conn(proxy)
live0 = [items(ports[0]), items(ports[2])]
new = [b"after:%d" % i for i in range(200)]
ok = sum(p.cmd(b"set %s 0 0 1\r\nx\r\n" % k) == b"STORED" for k in new)
vals, end = p.get(new)
check("after the ejection: 200 of 200 sets and gets served (%d, %d)" % (ok, len(vals)),
      ok == 200 and len(vals) == 200 and end == b"END")
live = [items(ports[0]) - live0[0], items(ports[2]) - live0[1]]
check("the two live instances hold the 200 (%r)" % live, sum(live) == 200 and min(live) > 0)
sys.exit(1 if failures else 0)
EOF
[ "$fails" -eq 0 ] || { tail -20 "$tmp/nutcracker.log"; echo "FAIL test_proxy"; exit 1; }
echo "all proxy checks passed"
