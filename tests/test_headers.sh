#!/bin/sh
# Every public header must compile alone, as C and as C++: it includes what
# it uses and nothing of it depends on an include order.
set -u
: "${CC:=cc}" "${CXX:=c++}" "${top_srcdir:=.}"
fail=0 n=0
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
for h in "$top_srcdir"/include/admit/*.h; do
	name=admit/$(basename "$h")
	printf '#include <%s>\n#include <%s>\nint admit_header_probe;\n' "$name" "$name" >"$tmp/t.c"
	cp "$tmp/t.c" "$tmp/t.cc"
	for lang in c cc; do
		n=$((n + 1))
		if [ $lang = c ]; then
			cmd="$CC -std=c11 -Wall -Wextra -Werror -pedantic"
		else
			cmd="$CXX -std=c++11 -Wall -Wextra -Werror"
		fi
		if $cmd -I"$top_srcdir/include" -fsyntax-only "$tmp/t.$lang" 2>"$tmp/err"; then
			echo "ok   $name ($lang)"
		else
			echo "FAIL $name ($lang)"; cat "$tmp/err"; fail=$((fail + 1))
		fi
	done
done
echo "headers: $((n - fail)) passed, $fail failed"
[ "$fail" -eq 0 ]
