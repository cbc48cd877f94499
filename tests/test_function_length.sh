#!/bin/sh
# The programs' and the module's sources keep to the project's limits: no
# function over 100 lines, no file over 700 (tools/check-function-length
# names each one past).  An in-tree build unpacks Valkey's source under
# modules/redis to test the module against it: that is not ours.
: "${top_srcdir:=.}"
files=$(find "$top_srcdir/programs" "$top_srcdir/modules" \
	-path '*/modules/redis/valkey*' -prune -o -name '*.[ch]' -type f -print)
# shellcheck disable=SC2086
exec "$top_srcdir/tools/check-function-length" $files
