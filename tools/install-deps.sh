#!/bin/sh
# Install what admit needs to build, test and benchmark, from Debian's
# packages.  Runs apt-get as root, through sudo when not root.
set -e
run=
[ "$(id -u)" -eq 0 ] || run=sudo
export DEBIAN_FRONTEND=noninteractive
$run apt-get update -qq
$run apt-get install -y -qq --no-install-recommends \
	build-essential autoconf automake libtool pkg-config \
	liburcu-dev libjemalloc-dev libxxhash-dev check \
	>/dev/null
# bench_cuckoo's libcuckoo baseline (header-only C++); optional: configure
# builds the benchmark without it when it is missing.
$run apt-get install -y -qq --no-install-recommends libcuckoo-dev >/dev/null
echo "install-deps: done"
