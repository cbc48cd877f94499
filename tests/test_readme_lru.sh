#!/bin/sh
# The README's admit_lru example is examples/lru_example.c, which make check
# builds: keep the two identical, and check what the program prints.
set -u
: "${top_srcdir:=.}" "${top_builddir:=.}"
tmp=$(mktemp) || exit 1
trap 'rm -f "$tmp"' EXIT
sed -n '/<!-- example: examples\/lru_example.c -->/,/^```$/p' "$top_srcdir/README.md" |
	sed '1,2d;$d' >"$tmp"
if ! diff -u "$top_srcdir/examples/lru_example.c" "$tmp"; then
	echo "FAIL README example differs from examples/lru_example.c"
	exit 1
fi
out=$("$top_builddir/examples/lru_example") || { echo "FAIL examples/lru_example exited non-zero"; exit 1; }
echo "$out"
case "$out" in
*"alice  miss"*"bob    miss"*"alice  hit   profile of alice"*"bob    hit"*"3 hits, 3 misses, 3 entries"*)
	echo "ok README lru example" ;;
*) echo "FAIL unexpected output from examples/lru_example"; exit 1 ;;
esac
