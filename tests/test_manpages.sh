#!/bin/sh
# Each installed program's man page documents it whole: every option its
# --help prints (long and short forms, aliases included) appears in the
# page, and the page has the sections a user looks for (EXIT STATUS,
# SIGNALS, EXAMPLES); the Redis module's page names every command the
# module registers.  So an option or a command added without its page
# fails make check.
set -u
: "${top_srcdir:=.}" "${top_builddir:=.}"
fail=0 n=0

# The page's text with roff's font changes and escaped hyphens undone.
page_text() {
	sed -e 's/\\f[BIRP]//g' -e 's/\\f(..//g' -e 's/\\-/-/g' \
		-e 's/\\(en/-/g' -e 's/\\(em/-/g' "$1"
}

check() { # program man-page
	prog="$top_builddir/$1" page="$top_srcdir/$2"
	n=$((n + 1))
	if ! help=$("$prog" --help); then
		echo "FAIL $1 --help exited non-zero"
		fail=$((fail + 1))
		return
	fi
	text=$(page_text "$page")
	longs=$(printf '%s\n' "$help" |
		grep -oE -- '(^|[^a-zA-Z0-9-])--[a-z][a-z0-9-]*' |
		sed 's/^[^-]*//' | sort -u)
	shorts=$(printf '%s\n' "$help" |
		grep -oE -- '^ +-[a-zA-Z],' | sed 's/^ *//; s/,$//' | sort -u)
	if [ -z "$longs" ]; then
		echo "FAIL $1 --help lists no option: the extraction is broken"
		fail=$((fail + 1))
		return
	fi
	missing=
	for o in $longs $shorts; do
		printf '%s\n' "$text" |
			grep -qE -- "(^|[^a-zA-Z0-9-])$o([^a-zA-Z0-9-]|\$)" ||
			missing="$missing $o"
	done
	for s in 'EXIT STATUS' 'SIGNALS' 'EXAMPLES'; do
		grep -q "^\.SH \"*$s" "$page" || missing="$missing [section $s]"
	done
	if [ -n "$missing" ]; then
		echo "FAIL $2 lacks:$missing"
		fail=$((fail + 1))
		return
	fi
	echo "ok   $2: $(echo $longs $shorts | wc -w) options of $1 --help"
}

# The Redis/Valkey module has no --help: its page must name every command
# the module registers (the "cf.*" names in its sources).
n=$((n + 1))
page="$top_srcdir/modules/redis/admit_redis.7"
cmds=$(cat "$top_srcdir"/modules/redis/*.c | grep -oE '"cf\.[a-z]+"' |
	tr -d '"' | tr a-z A-Z | sort -u)
missing=
for c in $cmds; do
	page_text "$page" | grep -qE "(^|[^A-Z.])$c([^A-Z]|\$)" ||
		missing="$missing $c"
done
if [ -z "$cmds" ]; then
	echo "FAIL no cf.* command found in modules/redis/*.c"
	fail=$((fail + 1))
elif [ -n "$missing" ]; then
	echo "FAIL modules/redis/admit_redis.7 lacks:$missing"
	fail=$((fail + 1))
else
	echo "ok   modules/redis/admit_redis.7: $(echo $cmds | wc -w) commands"
fi

check programs/dedup/admit-dedup programs/dedup/admit-dedup.1
check programs/cached/admit-cached programs/cached/admit-cached.1
check programs/cache_sim/cache_sim programs/cache_sim/cache_sim.1

echo "man pages: $((n - fail)) passed, $fail failed"
[ "$fail" -eq 0 ]
