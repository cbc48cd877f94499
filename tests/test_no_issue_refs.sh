#!/bin/sh
# The tree names no ticket and no work branch: a reader has no issue
# tracker, and a comment or a document says what a thing is, not which
# ticket asked for it (NEWS says what changed for users).  It scans the
# files make dist ships (tests/distfiles.list, written by make check from
# automake's DISTFILES) and, in a git checkout, every file git tracks or
# would add, so it works as well in a clone as in make distcheck's
# unpacked tarball, where there is no .git, and never reads build
# products (an unpacked Valkey, logs) that an in-tree build leaves there.
# Matches are reported as FILE:LINE only, so that this test's own log
# never holds the words it looks for.
set -u
: "${top_srcdir:=.}" "${top_builddir:=.}"

# "issue" then a number; "branch" then a name ending in a digit.  Built
# from pieces so that this file does not match itself.
word1=issue word2=branch
pattern="$word1 [0-9]+|$word2 [a-z]+[0-9]"

# The pattern must catch what it is for and spare ordinary prose, or a
# broken grep would pass every tree.
sample=$(mktemp) || exit 1
trap 'rm -f "$sample"' EXIT
printf '%s\n' "see $word1 12" "$word2 cache6 measured" \
	"issues remain" "a $word2 of 3 keys" "the $word2 misprediction" >"$sample"
n=$(grep -ciE -- "$pattern" "$sample")
if [ "$n" -ne 2 ]; then
	echo "FAIL the pattern matched $n of the 2 sample lines it must match"
	exit 1
fi

files=$(mktemp) || exit 1
trap 'rm -f "$sample" "$files"' EXIT
{
	list="$top_builddir/tests/distfiles.list"
	if [ -r "$list" ]; then
		# Entries are relative to the source directory, or carry its
		# path already (automake's $(top_srcdir)/configure and such).
		while IFS= read -r e; do
			if [ -e "$top_srcdir/$e" ]; then
				printf '%s\n' "$top_srcdir/$e"
			elif [ -e "$e" ]; then
				printf '%s\n' "$e"
			fi
		done <"$list"
	fi
	top=$(git -C "$top_srcdir" rev-parse --show-toplevel 2>/dev/null) &&
		[ "$top" = "$(cd "$top_srcdir" && pwd -P)" ] &&
		git -C "$top_srcdir" ls-files -co --exclude-standard |
		sed "s|^|$top_srcdir/|"
} | sort -u >"$files"
count=$(wc -l <"$files")
if [ "$count" -lt 50 ]; then
	echo "FAIL only $count files to scan: run it from make check, or in a git checkout"
	exit 1
fi

hits=$(tr '\n' '\0' <"$files" | xargs -0 grep -snrIiE -- "$pattern" /dev/null |
	cut -d: -f1,2)
if [ -n "$hits" ]; then
	echo "FAIL ticket numbers or branch names in the tree (FILE:LINE):"
	echo "$hits"
	exit 1
fi
echo "ok   no ticket number or branch name in $count files"
