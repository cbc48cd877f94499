#!/bin/sh
# admit-cached's sources keep to the project's limits: no function over 100
# lines, no file over 700 (tools/check-function-length names each one past).
: "${top_srcdir:=.}"
exec "$top_srcdir/tools/check-function-length" "$top_srcdir/programs/cached"
