#!/bin/sh
# The tree names no ticket and no work branch: a reader has no issue
# tracker, and a comment or a document says what a thing is, not which
# ticket asked for it (NEWS says what changed for users).  Every text file
# under the source directory is scanned, so the check works as well in a
# git checkout as in an unpacked tarball (make distcheck, where there is
# no .git).  Matches are reported as FILE:LINE only, so that this test's
# own log never holds the words it looks for.
set -u
: "${top_srcdir:=.}"

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

hits=$(grep -rnIiE --exclude-dir=.git -- "$pattern" "$top_srcdir" | cut -d: -f1,2)
if [ -n "$hits" ]; then
	echo "FAIL ticket numbers or branch names in the tree (FILE:LINE):"
	echo "$hits"
	exit 1
fi
echo "ok   no ticket number or branch name under $top_srcdir"
