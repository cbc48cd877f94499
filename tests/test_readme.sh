#!/bin/sh
# The README's "use it in your program" example is examples/hello.c, which
# make check builds; this test keeps the two from drifting apart and runs
# the built program.
set -u
: "${top_srcdir:=.}" "${top_builddir:=.}"
readme="$top_srcdir/README.md"
tmp=$(mktemp) || exit 1
trap 'rm -f "$tmp"' EXIT
# The fenced block right after the marker line.
sed -n '/<!-- example: examples\/hello.c -->/,/^```$/p' "$readme" |
	sed '1,2d;$d' >"$tmp"
if ! diff -u "$top_srcdir/examples/hello.c" "$tmp"; then
	echo "FAIL README example differs from examples/hello.c"
	exit 1
fi
out=$("$top_builddir/examples/hello") || { echo "FAIL examples/hello exited non-zero"; exit 1; }
echo "$out"
case "$out" in
*"login:alice  new"*"login:bob    new"*"login:alice  duplicate"*) echo "ok README example" ;;
*) echo "FAIL unexpected output from examples/hello"; exit 1 ;;
esac
