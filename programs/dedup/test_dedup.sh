#!/bin/bash
# admit-dedup against exact answers: awk '!seen[$0]++' and an exact
# sliding-window awk, on generated streams of 10^6 lines; determinism across
# -j; growth, --on-full=fail, --save/--load; bad input and broken pipes.
#
# False drops (a new key taken for a seen one) are the only difference
# allowed.  Their bound: each new key's lookup matches in a filter with
# probability <= 8 / (2^f - 2) (two buckets of four slots, load <= 1, a
# fingerprint one of 2^f - 1 values, one twice as likely), summed
# over the filters of its chain; a count with mean mu <= B exceeds
# B + 4 sqrt(B) + 5 with probability below 1e-4 (Poisson tail).  Seeds are
# fixed, so every run is the same run.
set -u
: "${top_srcdir:=.}" "${top_builddir:=.}"
dd=$top_builddir/programs/dedup/admit-dedup
gen=$top_builddir/programs/dedup/dedup_gen
export LC_ALL=C
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fails=0 passes=0
# Sanitizer builds run 5x slower: they check for races and memory errors
# on 2 x 10^5 lines; the plain build runs the full 10^6.
n=1000000
[ -n "${SAN_CFLAGS:-}" ] && n=200000
half=$((n / 2))
ok() { echo "ok   $*"; passes=$((passes + 1)); }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }
# expect NAME COND...: run a test command, ok if it succeeds
expect() { local name=$1; shift; if "$@"; then ok "$name"; else bad "$name"; fi; }

# bound NEWKEYS CHAIN FPBITS -> the allowed false-drop count
bound() {
	awk -v n="$1" -v k="$2" -v f="$3" 'BEGIN {
		b = n * k * 8 / (2 ^ f - 2); printf "%d\n", b + 4 * sqrt(b) + 5 }'
}
# subseq REF OURS: lines of OURS that are not in REF after the previous one
# (REF's lines are distinct); 0 means OURS = REF minus some lines
subseq() {
	awk 'NR == FNR { pos[$0] = FNR; next }
	     { if (!($0 in pos) || pos[$0] <= last) bad++; else last = pos[$0] }
	     END { print bad + 0 }' "$1" "$2"
}
lines() { wc -l <"$1" | tr -d ' '; }
# compare_exact NAME REF OURS CHAIN FPBITS
compare_exact() {
	local extra n r lim
	extra=$(subseq "$2" "$3")
	n=$(lines "$3"); r=$(lines "$2"); lim=$(bound "$r" "$4" "$5")
	if [ "$extra" -eq 0 ] && [ $((r - n)) -le "$lim" ]; then
		ok "$1: $n of $r unique lines, $((r - n)) false drops <= $lim"
	else
		bad "$1: $extra lines passed wrongly, $((r - n)) false drops (bound $lim)"
	fi
}

# ---- whole lines, 10^6, against awk -------------------------------------------
"$gen" text "$n" 42 >"$tmp/text"
awk '!seen[$0]++' "$tmp/text" >"$tmp/ref"
"$dd" -j 1 --seed 42 "$tmp/text" >"$tmp/j1"
compare_exact "whole lines -j 1" "$tmp/ref" "$tmp/j1" 1 16
"$dd" -j 8 --seed 42 <"$tmp/text" >"$tmp/j8"
expect "-j 8 output identical to -j 1" cmp -s "$tmp/j1" "$tmp/j8"

# 8-bit fingerprints: many false drops, still within their bound
"$dd" -j 2 --seed 5 --fpr 0.03 --stats "$tmp/text" >"$tmp/f8" 2>"$tmp/f8.err"
expect "--fpr 0.03 picks 8-bit fingerprints" grep -q "8-bit fingerprints" "$tmp/f8.err"
compare_exact "8-bit fingerprints" "$tmp/ref" "$tmp/f8" 1 8

# ---- growth and --on-full -------------------------------------------------------
"$dd" -j 2 --seed 42 --capacity 20000 --stats "$tmp/text" >"$tmp/grow" 2>"$tmp/grow.err"
chain=$(sed -n 's/.*longest chain \([0-9]*\).*/\1/p' "$tmp/grow.err")
expect "a small --capacity grows the chain ($chain filters)" [ "${chain:-0}" -ge 3 ]
compare_exact "grown chain" "$tmp/ref" "$tmp/grow" "${chain:-1}" 16
"$dd" -j 2 --seed 42 --capacity 20000 --on-full=fail "$tmp/text" >"$tmp/full" 2>"$tmp/full.err"
st=$?
expect "--on-full=fail exits 3 with a message" \
	[ $st -eq 3 -a -n "$(grep 'filter is full' "$tmp/full.err")" ]
sz=$(wc -c <"$tmp/full")
expect "--on-full=fail wrote a prefix of the grown run ($sz bytes)" \
	cmp -s "$tmp/full" <(head -c "$sz" "$tmp/grow")

# ---- sliding window, against an exact awk window ------------------------------
# Half the repeats reach back past the window.  With a window, a false drop
# also lets the key's next occurrence through: up to two differing lines each.
"$gen" text "$n" 7 10000 >"$tmp/wtext"
awk -v N=5000 '{ if (($0 in pos) && pos[$0] > cnt - N) next
                 cnt++; pos[$0] = cnt; print }' "$tmp/wtext" >"$tmp/wref"
"$dd" -j 1 --seed 3 --window 5000 --fpr 1e-5 "$tmp/wtext" >"$tmp/w1"
"$dd" -j 8 --seed 3 --window 5000 --fpr 1e-5 "$tmp/wtext" >"$tmp/w8"
expect "--window: -j 8 identical to -j 1" cmp -s "$tmp/w1" "$tmp/w8"
ndiff=$(diff "$tmp/wref" "$tmp/w1" | grep -c '^[<>]')
lim=$(awk -v n="$(lines "$tmp/wref")" 'BEGIN { b = n * 1e-5; printf "%d\n", 2 * (b + 4 * sqrt(b) + 5) }')
expect "--window 5000 matches the exact window: $ndiff lines differ <= $lim" [ "$ndiff" -le "$lim" ]
# A small --capacity grows the chain while the window fills; keys leave it
# oldest first, so the emptied older filters are freed (admit_chain_trim):
# the chain ends short though it grew, and answers stay exact.
"$dd" -j 1 --seed 3 --window 5000 --fpr 1e-5 --capacity 200 --stats \
	"$tmp/wtext" >"$tmp/wt1" 2>"$tmp/wt1.err"
"$dd" -j 8 --seed 3 --window 5000 --fpr 1e-5 --capacity 200 "$tmp/wtext" >"$tmp/wt8"
expect "--window, chain grown and trimmed: -j 8 identical to -j 1" cmp -s "$tmp/wt1" "$tmp/wt8"
grown=$(sed -n 's/.*, \([0-9]*\) grown;.*/\1/p' "$tmp/wt1.err")
chain=$(sed -n 's/.*longest chain \([0-9]*\),.*/\1/p' "$tmp/wt1.err")
expect "--window frees the filters it emptied ($grown grown, chain of $chain left)" \
	[ "${grown:-0}" -ge 4 -a "${chain:-99}" -le 2 ]
ndiff=$(diff "$tmp/wref" "$tmp/wt1" | grep -c '^[<>]')
expect "--window 5000 grown and trimmed matches the exact window: $ndiff lines differ <= $lim" \
	[ "$ndiff" -le "$lim" ]
# a window of 1 and 2: batches of one line, every branch of the expiry
printf 'a\na\nb\na\nb\nb\nc\na\n' | "$dd" --window 1 -j 2 >"$tmp/w1l"
expect "--window 1" [ "$(tr '\n' ' ' <"$tmp/w1l")" = "a b a b c a " ]
printf 'a\nb\na\nc\na\nb\nc\nb\n' | "$dd" --window 2 -j 2 >"$tmp/w2l"
expect "--window 2" [ "$(tr '\n' ' ' <"$tmp/w2l")" = "a b c a b c " ]
printf 'a\nb\na\nc\na\nb\nc\nb\n' | "$dd" --horizon 2 -j 2 >"$tmp/h2l"
expect "--horizon 2 (--window's new name)" [ "$(tr '\n' ' ' <"$tmp/h2l")" = "a b c a b c " ]
# the documented maximum works, with memory for the keys seen, not 2^40
"$dd" -j 2 --seed 42 --horizon 1099511627776 "$tmp/text" >"$tmp/hmax" 2>"$tmp/err"
expect "--horizon 2^40: exit 0" [ $? -eq 0 ]
compare_exact "--horizon 2^40" "$tmp/ref" "$tmp/hmax" 1 16

# ---- fields ----------------------------------------------------------------------
"$gen" fields $((n * 3 / 10)) 9 >"$tmp/fields"
awk '!seen[$2]++' "$tmp/fields" >"$tmp/fref"
"$dd" -j 2 --seed 9 --field 2 "$tmp/fields" >"$tmp/fout"
compare_exact "--field 2" "$tmp/fref" "$tmp/fout" 1 16
awk -F'\t' '!seen[$3]++' "$tmp/fields" >"$tmp/fref3"
"$dd" -j 2 --seed 9 -f 3 -d '\t' "$tmp/fields" >"$tmp/fout3"
compare_exact "-f 3 -d '\\t'" "$tmp/fref3" "$tmp/fout3" 1 16
printf 'x,1\ny,1\nz,2\nw\n' | "$dd" -d , -f 2 >"$tmp/comma"
expect "-d , -f 2: a line without field 2 has the empty key" \
	[ "$(tr '\n' ' ' <"$tmp/comma")" = "x,1 z,2 w " ]

# ---- bytes: CR, empty lines, NUL, no final newline, several files ------------------
printf 'a\r\na\n\n\nb' >"$tmp/cr"
expect "a \\r is part of the key" cmp -s <("$dd" "$tmp/cr") <(printf 'a\r\na\n\nb\n')
expect "--strip-cr" cmp -s <("$dd" --strip-cr "$tmp/cr") <(printf 'a\r\n\nb\n')
printf 'b\nc' >"$tmp/cr2"
expect "two files are one stream; each one's last line ends there" \
	cmp -s <("$dd" "$tmp/cr" "$tmp/cr2") <(printf 'a\r\na\n\nb\nc\n')
"$gen" binary 200000 11 >"$tmp/bin"
"$dd" -j 2 "$tmp/bin" >"$tmp/binout"
{ cat "$tmp/bin"; echo; } | sort -u >"$tmp/binref"
expect "binary lines with NUL bytes: the same set as sort -u" \
	cmp -s <(sort "$tmp/binout") "$tmp/binref"
expect "binary lines: each written once" \
	[ "$(lines "$tmp/binout")" -eq "$(sort -u "$tmp/binout" | wc -l)" ]

# ---- a 100 MB line -------------------------------------------------------------
big() { head -c 100000000 /dev/zero | tr '\0' x; }
bytes=$({ big; echo; echo y; big; echo; big; } | "$dd" -j 2 | wc -c)
expect "a 100 MB line, three times: written once ($bytes bytes)" [ "$bytes" -eq 100000003 ]

# ---- --save / --load: a stream in two pieces ----------------------------------------
head -n "$half" "$tmp/text" >"$tmp/part1"
tail -n +$((half + 1)) "$tmp/text" >"$tmp/part2"
"$dd" -j 2 --seed 42 --save "$tmp/state" "$tmp/part1" >"$tmp/p1"
"$dd" -j 2 --load "$tmp/state" "$tmp/part2" >"$tmp/p2"
expect "--save then --load equals one run" cmp -s <(cat "$tmp/p1" "$tmp/p2") "$tmp/j1"
"$dd" -j 2 --seed 42 --capacity 20000 --save "$tmp/gstate" "$tmp/part1" >"$tmp/g1"
"$dd" -j 2 --load "$tmp/gstate" "$tmp/part2" >"$tmp/g2"
expect "--save/--load keep a grown chain" cmp -s <(cat "$tmp/g1" "$tmp/g2") "$tmp/grow"
head -n "$half" "$tmp/wtext" >"$tmp/wpart1"
tail -n +$((half + 1)) "$tmp/wtext" >"$tmp/wpart2"
"$dd" --seed 3 --window 5000 --fpr 1e-5 --save "$tmp/wstate" "$tmp/wpart1" >"$tmp/wp1"
"$dd" --load "$tmp/wstate" "$tmp/wpart2" >"$tmp/wp2"
ndiff=$(diff <(cat "$tmp/wp1" "$tmp/wp2") "$tmp/w1" | grep -c '^[<>]')
expect "--save/--load keep the window ring ($ndiff lines differ)" [ "$ndiff" -le 4 ]
"$dd" --seed 3 --window 5000 --fpr 1e-5 --capacity 200 --save "$tmp/wtstate" \
	"$tmp/wpart1" >"$tmp/wtp1"
"$dd" --load "$tmp/wtstate" "$tmp/wpart2" >"$tmp/wtp2"
ndiff=$(diff <(cat "$tmp/wtp1" "$tmp/wtp2") "$tmp/wt1" | grep -c '^[<>]')
expect "--save/--load keep a chain the window trimmed ($ndiff lines differ)" [ "$ndiff" -le 4 ]
"$dd" --load "$tmp/wstate" --window 6000 </dev/null 2>"$tmp/err"
expect "--load with another --window is refused" [ $? -eq 2 ]
printf 'ADMITDD1\001\000\000\000\000\000\000\000\000\000\000\000' >"$tmp/v1"
"$dd" --load "$tmp/v1" </dev/null 2>"$tmp/err"
expect "a state file of format 1 (before 0.2.0): exit 2, says so" \
	[ $? -eq 2 -a -n "$(grep 'state format 1' "$tmp/err")" ]
head -c 1000 "$tmp/state" >"$tmp/trunc"
"$dd" --load "$tmp/trunc" </dev/null 2>"$tmp/err"
expect "truncated state: exit 2, clear message" \
	[ $? -eq 2 -a -n "$(grep 'cannot load' "$tmp/err")" ]
cp "$tmp/state" "$tmp/flip"
printf '\377' | dd of="$tmp/flip" bs=1 seek=5000 conv=notrunc 2>/dev/null
"$dd" --load "$tmp/flip" </dev/null 2>"$tmp/err"
expect "altered state: exit 2" [ $? -eq 2 ]
"$dd" --load "$tmp/text" </dev/null 2>"$tmp/err"
expect "not a state file: exit 2" [ $? -eq 2 ]
# Edited with the checksum recomputed (dedup_gen resum): each field must
# agree with the rest of the file, or the load refuses it (exit 2) before
# writing a line.  poke FILE OFFSET BYTES (printf escapes); the header's
# u64 admitted is at 64, the first shard's estimate at 80, and the ring's
# newest entry (u64 hash, u8 filter) 17 bytes before the end.
poke() { cp "$1" "$tmp/edit"; printf "$3" |
	dd of="$tmp/edit" bs=1 seek="$2" conv=notrunc 2>/dev/null; "$gen" resum "$tmp/edit"; }
refused() {
	"$dd" --load "$tmp/edit" "$tmp/wpart2" >"$tmp/eout" 2>"$tmp/err"
	expect "edited state, checksum recomputed: $1: exit 2, nothing written" \
		[ $? -eq 2 -a ! -s "$tmp/eout" -a -n "$(grep 'cannot load' "$tmp/err")" ]
}
wlen=$(wc -c <"$tmp/wstate")
poke "$tmp/wstate" $((wlen - 17)) '\125'; refused "a ring hash changed"
poke "$tmp/wstate" $((wlen - 9 - 17)) '\125'; refused "an older ring hash changed"
poke "$tmp/wstate" 64 '\377\377\377\377\377\377\377\377'; refused "admitted = 2^64 - 1"
poke "$tmp/wstate" 64 '\000\000\000\000\000\000\000\000'; refused "admitted = 0"
poke "$tmp/wstate" 80 '\000\000\000\000\000\000\370\177'; refused "a NaN estimate"
poke "$tmp/wstate" 80 '\000\000\000\000\000\000\360\377'; refused "a -inf estimate"
poke "$tmp/state" 64 '\001'; refused "admitted not the filters' item count"
poke "$tmp/wstate" 32 '\000\000\000\000\000\000\000\000'; refused "seed 0"
# The header of a --seed 5 state on the chains of a --seed 6 one: each is
# sound alone, but the lines would be hashed with 5 and the filters hold
# keys hashed with 6.
head -n 1000 "$tmp/text" >"$tmp/small"
"$dd" --seed 5 --save "$tmp/s5" "$tmp/small" >/dev/null
"$dd" --seed 6 --save "$tmp/s6" "$tmp/small" >/dev/null
{ head -c 80 "$tmp/s5"; tail -c +81 "$tmp/s6"; } >"$tmp/edit"
"$gen" resum "$tmp/edit"
"$dd" --load "$tmp/edit" "$tmp/small" >"$tmp/eout" 2>"$tmp/err"
expect "edited state, checksum recomputed: chains of another seed: exit 2, nothing written" \
	[ $? -eq 2 -a ! -s "$tmp/eout" -a -n "$(grep 'cannot load' "$tmp/err")" ]
poke "$tmp/wstate" 0 'ADMITDD1'
"$dd" --load "$tmp/edit" </dev/null >/dev/null 2>&1
expect "an unedited state, resummed, still loads" [ $? -eq 0 ]
echo a | "$dd" --save "$tmp/no/such/dir/state" >/dev/null 2>"$tmp/err"
expect "--save into a missing directory: exit 4" [ $? -eq 4 ]
ln -s state2 "$tmp/slink"
"$dd" -j 2 --seed 42 --save "$tmp/slink" "$tmp/part1" >/dev/null
expect "--save through a symlink writes the file it names, the link stays" \
	[ -L "$tmp/slink" -a -f "$tmp/state2" ] && cmp -s "$tmp/state" "$tmp/state2"
mkfifo "$tmp/fifo"
timeout 20 "$dd" --load "$tmp/fifo" </dev/null 2>"$tmp/err"
expect "--load of a FIFO: exit 2 at once, 'not a regular file'" \
	[ $? -eq 2 -a -n "$(grep 'not a regular file' "$tmp/err")" ]
echo a | "$dd" --save "$tmp/fifo" >/dev/null 2>"$tmp/err"
expect "--save over a FIFO: exit 4, the FIFO left alone" \
	[ $? -eq 4 -a -p "$tmp/fifo" -a -n "$(grep 'not a regular file' "$tmp/err")" ]

# ---- bad input, bad options, broken output ------------------------------------------
printf 'q\n' >"$tmp/q"
out=$("$dd" "$tmp/nonexistent" "$tmp/q" 2>"$tmp/err")
expect "unreadable file: exit 1, message, other files still read" \
	[ $? -eq 1 -a "$out" = q -a -n "$(grep "cannot open '$tmp/nonexistent'" "$tmp/err")" ]
"$dd" "$tmp" >/dev/null 2>"$tmp/err"
expect "a directory: exit 1 with a message" [ $? -eq 1 -a -s "$tmp/err" ]
for opt in "--fpr 2" "--fpr 0" "-j 0" "--capacity 0" "--window 0" "--field 0" \
	"--horizon 0" "--horizon 1099511627777" \
	"-d ab" "--on-full=maybe" "--seed 0" "--bogus" "--fpr 1e-12"; do
	# shellcheck disable=SC2086
	"$dd" $opt </dev/null >/dev/null 2>"$tmp/err"
	st=$?
	expect "bad option '$opt': exit 2 with a message" [ $st -eq 2 -a -s "$tmp/err" ]
done
"$dd" --help >"$tmp/help"
expect "--help" grep -q -- '--horizon' "$tmp/help"
"$dd" "$tmp/text" 2>"$tmp/err" | head -n 1 >/dev/null
st=${PIPESTATUS[0]}
# A shell that inherited SIGPIPE ignored cannot restore it (bit 13 of SigIgn)
ign=$(awk '/^SigIgn/ { print substr($2, length($2) - 3, 1) }' /proc/$$/status 2>/dev/null)
case $ign in
[13579bBdDfF]) expect "stdout closed by the reader, SIGPIPE ignored by our parent: exit 4" \
	[ "$st" -eq 4 ] ;;
*) expect "stdout closed by the reader: killed by SIGPIPE (status $st)" [ "$st" -eq 141 ] ;;
esac
(trap '' PIPE; "$dd" "$tmp/text" 2>"$tmp/err" | head -n 1 >/dev/null; exit "${PIPESTATUS[0]}")
st=$?
expect "SIGPIPE ignored: exit 4, 'Broken pipe' (status $st)" \
	[ "$st" -eq 4 -a -n "$(grep 'Broken pipe' "$tmp/err")" ]
"$dd" "$tmp/q" >&- 2>"$tmp/err"
expect "stdout closed: exit 4 with a message" [ $? -eq 4 -a -s "$tmp/err" ]
if [ -w /dev/full ]; then
	"$dd" "$tmp/text" >/dev/full 2>"$tmp/err"
	expect "disk full: exit 4 with a message" [ $? -eq 4 -a -s "$tmp/err" ]
fi

# ---- a signal during --save leaves no temporary file ------------------------------
# A 50M-key filter saves about 100 MB: SIGTERM is sent as soon as the
# temporary file appears.  The program must still die by the signal, leave
# no FILE.tmp.* behind, and any FILE it leaves must load.
mkdir "$tmp/sig"
caught=0
for try in 1 2 3; do
	rm -f "$tmp/sig/"*
	seq 1 100000 | "$dd" --capacity 50M --save "$tmp/sig/state" >/dev/null &
	pid=$!
	for _ in $(seq 2000); do
		ls "$tmp/sig/" 2>/dev/null | grep -q 'state\.tmp\.' && break
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.002
	done
	if ls "$tmp/sig/" | grep -q 'state\.tmp\.'; then
		kill -TERM "$pid"
		caught=1
	fi
	wait "$pid"
	st=$?
	[ "$caught" -eq 1 ] && break
done
if [ "$caught" -eq 0 ]; then
	echo "note: the save finished before SIGTERM could be sent (3 tries)"
else
	left=$(ls "$tmp/sig/" | grep -c 'state\.tmp\.')
	expect "SIGTERM during --save: killed by it (status $st), no temporary file left ($left)" \
		[ "$st" -eq 143 -a "$left" -eq 0 ]
	if [ -e "$tmp/sig/state" ]; then
		echo x | "$dd" --load "$tmp/sig/state" >/dev/null
		expect "the state saved before the signal loads" [ $? -eq 0 ]
	fi
fi
rm -rf "$tmp/sig"

# ---- the README's example runs as written ---------------------------------------
mkdir "$tmp/readme"
ln -s "$(cd "$top_builddir" && pwd)/programs" "$tmp/readme/programs"
sed -n '/<!-- example: admit-dedup -->/,/^```$/p' "$top_srcdir/README.md" |
	sed '1,2d;$d' >"$tmp/readme/example.sh"
if (cd "$tmp/readme" && bash -e example.sh) >"$tmp/readme.out" 2>"$tmp/readme.err" &&
	[ "$(tr '\n' '|' <"$tmp/readme.out")" = \
	  "login alice|login bob|logout alice|login alice|login bob|" ] &&
	grep -q 'unique out' "$tmp/readme.err"; then
	ok "README example"
else
	bad "README example"
fi

echo "dedup: $passes passed, $fails failed"
[ "$fails" -eq 0 ]
