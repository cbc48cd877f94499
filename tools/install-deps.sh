#!/bin/sh
# Install what admit needs to build, test and benchmark, from Debian's
# packages.  Runs apt-get as root, through sudo when not root.
#   tools/install-deps.sh [--bench]
# --bench adds what only the comparisons with other projects run: Java and
# Caffeine for bench/bench_caffeine.sh.
set -e
run=
[ "$(id -u)" -eq 0 ] || run=sudo
export DEBIAN_FRONTEND=noninteractive
$run apt-get update -qq
# time: admit-dedup's benchmark reads peak memory from GNU time;
# libcuckoo-dev: bench_cuckoo's libcuckoo baseline (optional, header-only);
# libssl-dev: the header of the reference cuckoo filter bench_cuckoo
# compiles from ../shared when it is there includes OpenSSL's;
# python3: the reference model test_hitratio.sh compares cache_sim with.
$run apt-get install -y -qq --no-install-recommends \
	build-essential autoconf automake libtool pkg-config \
	liburcu-dev libjemalloc-dev libxxhash-dev check \
	zlib1g-dev liblzma-dev time libcuckoo-dev libssl-dev python3 \
	>/dev/null
# --bench: Caffeine for make bench-caffeine; memcached and pymemcache for
# make bench-memory.
if [ "${1:-}" = --bench ]; then
	$run apt-get install -y -qq --no-install-recommends \
		default-jdk-headless libcaffeine-java memcached \
		python3-pymemcache >/dev/null
fi
echo "install-deps: done"
