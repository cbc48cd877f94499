#!/bin/sh
# Each C example in the README and in doc/guide.md is a file in examples/
# that make check builds: the document's copy must be that file to the
# byte, and the built program must print what its reader is told to expect.
set -u
: "${top_srcdir:=.}" "${top_builddir:=.}"
tmp=$(mktemp) || exit 1
trap 'rm -f "$tmp"' EXIT
fail=0 n=0

check() { # document example-name expected-output-glob (used unquoted, so * works)
	doc="$top_srcdir/$1"
	shift
	n=$((n + 1))
	# The fenced block right after the marker line.
	sed -n "/<!-- example: examples\/$1.c -->/,/^\`\`\`\$/p" "$doc" |
		sed '1,2d;$d' >"$tmp"
	if [ ! -s "$tmp" ]; then
		echo "FAIL no copy of examples/$1.c in $doc"
		fail=$((fail + 1))
		return
	fi
	if ! diff -u "$top_srcdir/examples/$1.c" "$tmp"; then
		echo "FAIL $doc: the example differs from examples/$1.c"
		fail=$((fail + 1))
		return
	fi
	if ! out=$("$top_builddir/examples/$1"); then
		echo "FAIL examples/$1 exited non-zero"
		fail=$((fail + 1))
		return
	fi
	echo "$out"
	case "$out" in
	$2) echo "ok   examples/$1" ;;
	*) echo "FAIL unexpected output from examples/$1"; fail=$((fail + 1)) ;;
	esac
}

check README.md hello '*login:alice  new*login:bob    new*login:alice  duplicate*'
check doc/guide.md admission_example '*seen: home 3, cart 2, faq 1, login 0*cart evicts faq: yes*faq evicts home: no*'
check doc/guide.md lru_example '*alice  miss*bob    miss*alice  hit   profile of alice*bob    hit*3 hits, 3 misses, 3 entries*'

echo "examples in documents: $((n - fail)) passed, $fail failed"
[ "$fail" -eq 0 ]
