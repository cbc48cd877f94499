#!/bin/sh
# The Redis module against Debian's redis-server, driven by python3-redis
# (modules/redis/test_redis.py).  Skips (77) without them, and under a
# sanitizer build: redis-server cannot load a module built with one.
: "${top_srcdir:=.}" "${top_builddir:=.}"
mod="$top_builddir/modules/redis/.libs/admit_redis.so"
py=/usr/bin/python3
if [ -n "${SAN_CFLAGS:-}" ]; then
	echo "SKIP: sanitizer build ($SAN_CFLAGS): redis-server cannot load it"
	exit 77
fi
if nm -D --undefined-only "$mod" 2>/dev/null | grep -q '__[at]san_'; then
	echo "SKIP: $mod is built with a sanitizer: redis-server cannot load it"
	exit 77
fi
for t in redis-server redis-cli; do
	if ! command -v $t >/dev/null 2>&1; then
		echo "SKIP: $t not found (Debian: redis-server, redis-tools)"
		exit 77
	fi
done
if ! [ -x $py ] || ! $py -c 'import redis' 2>/dev/null; then
	echo "SKIP: python3-redis not found (Debian: python3-redis)"
	exit 77
fi
if ! [ -f "$mod" ]; then
	echo "FAIL: $mod not built"
	exit 1
fi
exec $py "$top_srcdir/modules/redis/test_redis.py" "$mod"
