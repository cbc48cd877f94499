#!/bin/sh
# valkey.sh [noopt] - prints the path of a valkey-server built as upstream
# builds it (jemalloc linked statically) from
# ../shared/src/valkey-8.0.1.tar.gz, next to the source tree, building it
# under $top_builddir/modules/redis/valkey the first time (about 3 minutes
# on 2 cores) and reusing it after.  With "noopt", the server alone as
# upstream's `make noopt` builds it (-O0, no LTO), under
# modules/redis/valkey-noopt: what make check loads the module into;
# benchmarks take the optimised build.  To build faster, nothing in it
# carries debug information (the server, hiredis and Lua at -O0 without
# -g; upstream: -g -ggdb, Lua at -O2), and the jemalloc it links
# statically is Debian's libjemalloc.a (libjemalloc-dev: 5.3.0, the
# version Valkey bundles, without Valkey's je_ prefix, 8-byte quantum and
# defragmentation hint), which leaves a server with its own jemalloc in
# its static TLS, as upstream's, for 40 % of the build's CPU; without
# libjemalloc.a, Valkey's own jemalloc at -Og -g0 (upstream: -O3 -g3;
# -Og compiles faster than -O0, which its forced inlining bloats).
# Exits 77, saying why, when the source is absent (a user's clone has no
# ../shared); 1 if the build fails.
: "${top_srcdir:=.}" "${top_builddir:=.}"
tarball=$top_srcdir/../shared/src/valkey-8.0.1.tar.gz
dir=$top_builddir/modules/redis/valkey
case ${1:-} in
noopt)
	dir=$dir-noopt
	# LUA_CFLAGS: deps/Makefile's own flags, with -O0 for its -O2.
	set -- OPTIMIZATION=-O0 DEBUG= DEBUG_FLAGS= \
		LUA_CFLAGS="-Wall -DLUA_ANSI -DENABLE_CJSON_GLOBAL -DLUA_USE_MKSTEMP -O0" \
		JEMALLOC_CFLAGS="-Og -g0 -fno-unroll-loops" valkey-server
	# The compiler prints the bare name when it finds no such file.
	sysje=$(${CC:-cc} -print-file-name=libjemalloc.a)
	case $sysje in /*) ;; *) sysje= ;; esac
	;;
*) set --; sysje= ;;
esac
server=$dir/valkey-8.0.1/src/valkey-server
if [ -x "$server" ]; then
	echo "$server"
	exit 0
fi
if [ ! -f "$tarball" ]; then
	echo "no $tarball: Valkey not built" >&2
	exit 77
fi
mkdir -p "$dir"
# One build at a time: tests running in parallel wait for the first.
while ! mkdir "$dir/lock" 2>/dev/null; do
	sleep 2
	[ -x "$server" ] && { echo "$server"; exit 0; }
done
trap 'rmdir "$dir/lock"' EXIT
echo "building Valkey 8.0.1 into $dir (log: $dir/build.log)" >&2
rm -rf "$dir/valkey-8.0.1"
tar xzf "$tarball" -C "$dir" || { echo "cannot unpack $tarball" >&2; exit 1; }
# Debian's jemalloc in the place of Valkey's: its archive where the
# server's link takes deps/jemalloc's, its header found in the system's
# include path, unprefixed (the server calls je_* names, which
# JEMALLOC_NO_DEMANGLE keeps as macros), and no jemalloc among the
# dependencies built.
if [ -n "$sysje" ]; then
	je=$dir/valkey-8.0.1/deps/jemalloc
	rm -rf "$je" && mkdir -p "$je/lib" &&
		ln -s "$sysje" "$je/lib/libjemalloc.a" || exit 1
	set -- "$@" SERVER_CFLAGS=-DJEMALLOC_NO_DEMANGLE \
		DEPENDENCY_TARGETS="hiredis linenoise lua hdr_histogram fpconv"
fi
if make -C "$dir/valkey-8.0.1" -j"$(nproc)" BUILD_TLS=no "$@" >"$dir/build.log" 2>&1 &&
   [ -x "$server" ]; then
	echo "$server"
	exit 0
fi
echo "Valkey's build failed: tail of $dir/build.log:" >&2
tail -n 20 "$dir/build.log" >&2
exit 1
