#!/bin/sh
# The Redis module against both servers it must load into: Debian's
# redis-server (linked with the shared libjemalloc) and Valkey 8.0.1 built
# from ../shared as upstream's `make noopt` builds it (jemalloc linked
# statically; `valkey.sh noopt` builds it once per build tree), each
# running the whole of modules/redis/test_redis.py (python3-redis).  First, the module must link
# neither jemalloc nor liburcu: a server with its own static jemalloc
# cannot load a second one.  A server that is missing is skipped with a
# message; skips (77) when neither runs, and under a sanitizer build:
# neither server can load a module built with one.
: "${top_srcdir:=.}" "${top_builddir:=.}"
export top_srcdir top_builddir
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
if ! [ -f "$mod" ]; then
	echo "FAIL: $mod not built"
	exit 1
fi
needed=$(readelf -d "$mod" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
echo "$mod needs: $(echo $needed)"
case " $(echo $needed) " in
*jemalloc* | *urcu*)
	echo "FAIL: the module links jemalloc or liburcu"
	exit 1
	;;
esac
if ! [ -x $py ] || ! $py -c 'import redis' 2>/dev/null; then
	echo "SKIP: python3-redis not found (Debian: python3-redis)"
	exit 77
fi

# Valkey builds (when not built yet) while the suite runs against
# redis-server, which leaves the cores mostly idle waiting on its server.
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
"$top_srcdir/modules/redis/valkey.sh" noopt >"$tmp/valkey" 2>"$tmp/valkey.err" &
vpid=$!
ran=0 fail=0
if command -v redis-server >/dev/null 2>&1; then
	echo "== $(redis-server --version)"
	ADMIT_REDIS_SERVER=redis-server $py \
		"$top_srcdir/modules/redis/test_redis.py" "$mod" || fail=1
	ran=$((ran + 1))
else
	echo "redis-server not found (Debian: redis-server): skipped"
fi
wait $vpid
vrc=$?
cat "$tmp/valkey.err"
valkey=$(cat "$tmp/valkey")
case $vrc in
0)
	echo "== $("$valkey" --version)"
	ADMIT_REDIS_SERVER=$valkey $py \
		"$top_srcdir/modules/redis/test_redis.py" "$mod" || fail=1
	ran=$((ran + 1))
	;;
77)
	echo "Valkey skipped (above: why)"
	;;
*)
	echo "FAIL: Valkey did not build"
	fail=1
	;;
esac
echo "servers run: $ran"
[ $fail -eq 0 ] || exit 1
[ $ran -gt 0 ] || exit 77
exit 0
