#!/bin/sh
# libadmit exports exactly the functions its public headers declare: every
# one of them, and nothing else.  Internal functions are hidden where they
# are defined (-fvisibility=hidden; include/admit/status.h), whatever their
# name, so a new internal function cannot leak into the ABI by accident.
set -u
: "${top_srcdir:=.}" "${top_builddir:=.}"
lib=$top_builddir/.libs/libadmit.so
if [ ! -f "$lib" ] || ! command -v nm >/dev/null; then
	echo "SKIP: no shared libadmit ($lib) or no nm"
	exit 77
fi
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
# Defined dynamic symbols; names starting with _ are the toolchain's.
nm -D --defined-only "$lib" | awk 'NF == 3 && $3 !~ /^_/ { print $3 }' |
	sed 's/@.*//' | sort -u >"$tmp/exported"
# Declarations start a line: "type name(" or, on its own line, "name(".
# A static inline definition (cuckoo_inline.h) is the caller's own code,
# not an export: its name follows a line starting "static".
awk '{
	name = ""
	if (match($0, /^[a-z][^(]*[ *]admit_[a-z0-9_]*\(/) && $1 != "static")
		name = substr($0, RSTART, RLENGTH - 1)
	else if (match($0, /^admit_[a-z0-9_]*\(/) && prev !~ /^static/)
		name = substr($0, RSTART, RLENGTH - 1)
	if (name != "") {
		sub(/.*[ *]/, "", name)
		print name
	}
	prev = $0
}' "$top_srcdir"/include/admit/*.h | sort -u >"$tmp/declared"
fail=0
if [ "$(wc -l <"$tmp/declared")" -lt 20 ]; then
	echo "FAIL: found only $(wc -l <"$tmp/declared") declarations; is the parser broken?"
	fail=1
fi
comm -13 "$tmp/declared" "$tmp/exported" | sed 's/^/FAIL exported, not in a public header: /'
comm -23 "$tmp/declared" "$tmp/exported" | sed 's/^/FAIL declared, not exported: /'
[ -z "$(comm -3 "$tmp/declared" "$tmp/exported")" ] || fail=1
echo "exports: $(wc -l <"$tmp/exported") symbols, $(wc -l <"$tmp/declared") declared"
exit $fail
