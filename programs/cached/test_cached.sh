#!/bin/bash
# admit-cached with real memcached clients (Debian libmemcached-tools):
# memccapable's ASCII and binary conformance tests, memccp/memccat/memcrm
# round trips of 0 B, 1 B, 1 KB and 1 MB values in each protocol, a few
# hostile clients, then SIGTERM and a
# clean exit (under ASan that exit also checks for leaks; under TSan, races
# make it non-zero).  Skips (77) when the clients are not installed.
set -u
: "${top_builddir:=.}"
server="$top_builddir/programs/cached/admit-cached"

for tool in memccapable memccp memccat memcrm; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "SKIP $tool not found (Debian: apt-get install libmemcached-tools)"
		exit 77
	fi
done

tmp=$(mktemp -d) || exit 1
pid=
fails=0
cleanup() {
	[ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
ok() { echo "ok $*"; }

# A free loopback port: try random ones until the server binds.
for attempt in 1 2 3 4 5 6 7 8 9 10; do
	port=$((20000 + (RANDOM * 32768 + RANDOM) % 40000))
	"$server" --port "$port" --threads 2 --memory 64 --idle-timeout 3 \
		--max-line 4096 2>"$tmp/server.log" &
	pid=$!
	for _ in $(seq 50); do
		grep -q listening "$tmp/server.log" && break
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	grep -q listening "$tmp/server.log" && break
	wait "$pid" 2>/dev/null
	pid=
done
if [ -z "$pid" ]; then
	cat "$tmp/server.log"
	echo "FAIL could not start admit-cached"
	exit 1
fi
servers="--servers=127.0.0.1:$port"
echo "admit-cached pid $pid on 127.0.0.1:$port"

# -- memccapable -a: every ASCII protocol test must pass.
timeout 120 memccapable -a -h 127.0.0.1 -p "$port" -t 10 >"$tmp/capable" 2>&1
rc=$?
cat "$tmp/capable"
if [ "$rc" -eq 0 ] && grep -q "All tests passed" "$tmp/capable" &&
   ! grep -q FAIL "$tmp/capable"; then
	ok "memccapable -a: $(grep -c '\[pass\]' "$tmp/capable") tests passed"
else
	fail "memccapable -a (exit $rc)"
fi
# -- memccapable -b: every binary protocol test must pass.
timeout 120 memccapable -b -h 127.0.0.1 -p "$port" -t 10 >"$tmp/capable_b" 2>&1
rc=$?
cat "$tmp/capable_b"
if [ "$rc" -eq 0 ] && grep -q "All tests passed" "$tmp/capable_b" &&
   ! grep -q FAIL "$tmp/capable_b"; then
	ok "memccapable -b: $(grep -c '\[pass\]' "$tmp/capable_b") tests passed"
else
	fail "memccapable -b (exit $rc)"
fi

# -- round trips through memccp / memccat / memcrm
cd "$tmp" || exit 1
: >v0
printf x >v1
head -c 1024 /dev/urandom >v1k
head -c 1048576 /dev/urandom >v1m
for proto in text binary; do
	opt=
	[ "$proto" = binary ] && opt=--binary
	for f in v0 v1 v1k v1m; do
		size=$(wc -c <"$f")
		if ! timeout 20 memccp $opt "$servers" "$f"; then
			fail "memccp $opt $f ($size B)"
			continue
		fi
		rm -f "out.$f"
		if timeout 20 memccat $opt "$servers" --file="out.$f" "$f" &&
		   cmp -s "$f" "out.$f"; then
			ok "memccp/memccat round trip of $size B ($proto)"
		else
			fail "memccat $opt $f ($size B) differs or failed"
		fi
		timeout 20 memcrm $opt "$servers" "$f" || fail "memcrm $opt $f"
		if timeout 20 memccat $opt "$servers" "$f" >/dev/null 2>&1; then
			fail "$f still readable after memcrm $opt"
		else
			ok "memcrm removed the $size B value ($proto)"
		fi
	done
done
cd - >/dev/null || exit 1

# -- hostile clients, each on its own connection (bash's /dev/tcp), while a
# well-behaved one keeps working.
session() {  # session NAME: sends stdin, keeps what comes back in $tmp/NAME
	local name=$1
	exec 3<>"/dev/tcp/127.0.0.1/$port" || return 1
	cat >&3
	timeout 5 cat <&3 >"$tmp/$name"
	exec 3<&-
}
printf 'hello world\r\nset k 0 0 notanumber\r\nget\r\nset good 0 0 2\r\nhi\r\nget good\r\nquit\r\n' |
	session garbage
if [ "$(tr -d '\r' <"$tmp/garbage")" = "$(printf 'ERROR\nCLIENT_ERROR bad command line format\nERROR\nSTORED\nVALUE good 0 2\nhi\nEND')" ]; then
	ok "garbage answered with ERROR / CLIENT_ERROR, connection survives"
else
	fail "garbage: got $(od -c "$tmp/garbage" | head -5)"
fi
head -c 10000 /dev/zero | tr '\0' a | session longline
if grep -q "CLIENT_ERROR line too long" "$tmp/longline"; then
	ok "a line longer than --max-line is refused and the connection closed"
else
	fail "long line: got $(head -c 200 "$tmp/longline")"
fi
printf 'set big 0 0 2000000000\r\n' | session huge
if grep -q "SERVER_ERROR object too large for cache" "$tmp/huge"; then
	ok "a huge declared length is refused"
else
	fail "huge length: got $(head -c 200 "$tmp/huge")"
fi
# A partial line and nothing more: closed by the 3 s idle timeout.
exec 4<>"/dev/tcp/127.0.0.1/$port"
printf 'get partial' >&4
start=$SECONDS
timeout 10 cat <&4 >/dev/null
exec 4<&-
if [ $((SECONDS - start)) -le 8 ]; then
	ok "a client stuck on a partial line is closed by the idle timeout"
else
	fail "partial line: not closed within 8 s"
fi
printf 'get good\r\nstats\r\nquit\r\n' | session after
if grep -q "VALUE good 0 2" "$tmp/after" && grep -q "STAT admission_rejected" "$tmp/after" &&
   grep -q "STAT hit_ratio" "$tmp/after" &&
   grep -q "STAT admission_filter_load 0\.[0-9]" "$tmp/after"; then
	ok "other clients unaffected; stats has admission counters"
else
	fail "after the hostile clients: got $(head -c 300 "$tmp/after")"
fi

# -- expiry, and incr's atomicity across 4 connections on 2 worker threads
printf 'set gone 0 -1 1\r\nx\r\nget gone\r\nset ctr 0 0 1\r\n0\r\nquit\r\n' | session expiry
if [ "$(tr -d '\r' <"$tmp/expiry")" = "$(printf 'STORED\nEND\nSTORED')" ]; then
	ok "an item stored with a negative exptime is expired at once"
else
	fail "expiry: got $(od -c "$tmp/expiry" | head -5)"
fi
incrs=
for i in 1 2 3 4; do
	{ for _ in $(seq 500); do printf 'incr ctr 1 noreply\r\n'; done
	  printf 'quit\r\n'; } | session "incr$i" &
	incrs="$incrs $!"
done
wait $incrs
printf 'get ctr\r\nquit\r\n' | session count
if grep -q "^2000" "$tmp/count"; then
	ok "4 x 500 concurrent incr give 2000"
else
	fail "concurrent incr: got $(head -c 100 "$tmp/count")"
fi

# -- placement: connections that arrive together are spread over the
# workers (each worker's epoll set, in /proc/PID/fdinfo, holds the listening
# socket, the stop and wake eventfds, and its connections).  The server is
# stopped while 4 clients connect, so one worker wakes to a backlog of 4:
# it must keep 2 and give 2 to the other, and all 4 must be answered.
worker_conns() {
	local f n
	for f in /proc/"$pid"/fdinfo/*; do
		n=$(grep -c '^tfd:' "$f" 2>/dev/null) || continue
		echo $((n - 3))
	done | sort -n | tr '\n' ' '
}
for _ in $(seq 50); do  # the earlier clients' connections close first
	[ "$(worker_conns)" = "0 0 " ] && break
	sleep 0.1
done
kill -STOP "$pid"
placed=
for i in 1 2 3 4; do
	exec {fd}<>"/dev/tcp/127.0.0.1/$port" && placed="$placed $fd"
done
kill -CONT "$pid"
answered=0
for fd in $placed; do
	printf 'version\r\n' >&"$fd"
	IFS= read -r -t 5 line <&"$fd" && [ "${line#VERSION }" != "$line" ] &&
		answered=$((answered + 1))
done
spread=$(worker_conns)
for fd in $placed; do exec {fd}>&-; done
if [ "$spread" = "2 2 " ] && [ "$answered" -eq 4 ]; then
	ok "4 connections arriving together: 2 per worker, all answered"
else
	fail "placement: connections per worker '$spread', $answered of 4 answered"
fi

# -- clean shutdown
kill -TERM "$pid"
wait "$pid"
rc=$?
pid=
if [ "$rc" -eq 0 ] && grep -q "shutting down" "$tmp/server.log"; then
	ok "SIGTERM: clean exit"
else
	cat "$tmp/server.log"
	fail "SIGTERM: exit status $rc"
fi
[ "$fails" -eq 0 ] || { echo "$fails check(s) failed"; exit 1; }
echo "all admit-cached checks passed"
