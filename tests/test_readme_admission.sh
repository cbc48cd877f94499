#!/bin/sh
# The README's admission example is examples/admission_example.c, which make
# check builds; this keeps the two identical and runs the program.
set -u
: "${top_srcdir:=.}" "${top_builddir:=.}"
tmp=$(mktemp) || exit 1
trap 'rm -f "$tmp"' EXIT
sed -n '/<!-- example: examples\/admission_example.c -->/,/^```$/p' \
	"$top_srcdir/README.md" | sed '1,2d;$d' >"$tmp"
if ! diff -u "$top_srcdir/examples/admission_example.c" "$tmp"; then
	echo "FAIL README example differs from examples/admission_example.c"
	exit 1
fi
out=$("$top_builddir/examples/admission_example") ||
	{ echo "FAIL examples/admission_example exited non-zero"; exit 1; }
echo "$out"
case "$out" in
*"seen: home 3, cart 2, faq 1, login 0"*"cart evicts faq: yes"*"faq evicts home: no"*)
	echo "ok README admission example" ;;
*) echo "FAIL unexpected output from examples/admission_example"; exit 1 ;;
esac
