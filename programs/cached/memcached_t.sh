#!/bin/sh
# memcached_t.sh T_DIR [TEST [ADMIT_CACHED]]: runs one of memcached's own
# Perl tests (T_DIR/TEST.t, default binary, with T_DIR/lib beside it, from
# a memcached source tree; not shipped here) against a fresh admit-cached,
# as memcached's suite runs against a daemon it did not start
# (T_MEMD_USE_DAEMON).  admit-cached runs with --no-admission: the tests
# expect every value stored to be found (doc/cached.md, "Tests").
# Prints the test's TAP output; exits with its status.
set -u
t=${1:?usage: memcached_t.sh T_DIR [TEST [ADMIT_CACHED]]}
test=${2:-binary}
bin=${3:-programs/cached/admit-cached}
[ -f "$t/$test.t" ] || { echo "memcached_t.sh: no $t/$test.t" >&2; exit 2; }
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$bin" --port "$port" --threads 4 --no-admission 2>/dev/null &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null' EXIT
for _ in $(seq 50); do
	python3 -c "import socket; socket.create_connection(('127.0.0.1', $port)).close()" \
		2>/dev/null && break
	sleep 0.1
done
T_MEMD_USE_DAEMON=127.0.0.1:$port timeout 300 perl "$t/$test.t"
