#!/usr/bin/env python3
# "lru_crawler metadump" against memcached: the refusals (wrong arity,
# unknown subcommand, bad class ids, an empty list) and the dumps of an
# empty cache byte for byte; then, after the same stores on both servers,
# each dump's lines in memcached's shape ("key=<URI-encoded> exp= la= cas=
# fetch= cls= size=", ending "\n", then "END\r\n"), the same keys with the
# same encoding, the same CAS uniques and expiry times (within 2 s: the
# servers' clocks step apart); admit-cached's la is the dump's time, fetch
# yes and cls 1 (admit-cached(1) says why).  Last, a dump larger than
# --conn-memory ends with SERVER_ERROR and the connection goes on, and
# an item with flags 0 (stored without them) is charged less than one with
# flags 1 where the 4 bytes cross a size class.  Skips
# (77) without memcached.  Run by make check through test_metadump.sh.
import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_memcached import SERVER, exchange, start, start_both  # noqa: E402

LINE = re.compile(rb"key=([A-Za-z0-9._~%-]+) exp=(-1|\d+) la=(\d+) cas=(\d+) "
                  rb"fetch=(yes|no) cls=(\d+) size=(\d+)\n")
FAILS = []


def check(cond, what):
    if not cond:
        FAILS.append(what)
        print("FAIL", what)


def ask(port, data):
    return exchange(port, {"send": [data]})


def refusals(mport, aport):
    for args in [b"", b" bogus", b" metadump", b" metadump all noreply",
                 b" metadump 1 2", b" metadump 0", b" metadump 64",
                 b" metadump -1", b" metadump 1x", b" metadump 0x1",
                 b" metadump all,1", b" metadump ALL", b" crawl",
                 b" metadump all", b" metadump hash", b" metadump 1",
                 b" metadump 2", b" metadump 63", b" metadump 01",
                 b" metadump +1", b" metadump 1,,2",
                 b"  metadump  all ", b" metadump all\r\nversion"]:
        req = b"lru_crawler" + args + b"\r\n"
        m, a = ask(mport, req), ask(aport, req)
        check(m == a, "%r: memcached %r, admit-cached %r" % (req, m, a))
    # An empty class list: memcached's first answer, after which its
    # crawler answers every metadump with an error; not sent to it.
    a = ask(aport, b"lru_crawler metadump ,\r\n")
    check(a == b"NOTSTARTED no items to crawl\r\n<EOF>", "empty list: %r" % a)


KEYS = [b"plain", b"a-._~!*'()@:;=,$&?#[]Zz09", b"k%20x", b"\xc3\xa9/+",
        b"k" * 250, b"ttl", b"unix"]


def store(port, unix):
    req = b""
    for k in KEYS:
        e = 1000 if k == b"ttl" else unix if k == b"unix" else 0
        req += b"set %s 3 %d 2\r\nxy\r\n" % (k, e)
    out = ask(port, req + b"get plain\r\n")
    check(out.startswith(b"STORED\r\n" * len(KEYS)), "stores: %r" % out[:60])


def parse(out):
    """{key: (exp, la, cas, fetch, cls, size)}; checks the shape."""
    check(out.endswith(b"END\r\n<EOF>"), "ends with END: %r" % out[-30:])
    body = out[:-len(b"END\r\n<EOF>")]
    lines = LINE.findall(body)
    check(b"".join(b"key=%s exp=%s la=%s cas=%s fetch=%s cls=%s size=%s\n" % m
                   for m in lines) == body, "every line in shape: %r" % body)
    return {m[0]: tuple(int(x) if x.lstrip(b"-").isdigit() else x
                        for x in m[1:]) for m in lines}


def dumps(mport, aport):
    unix = int(time.time()) + 5000
    store(mport, unix)
    store(aport, unix)
    now = time.time()
    m = parse(ask(mport, b"lru_crawler metadump all\r\n"))
    a = parse(ask(aport, b"lru_crawler metadump all\r\n"))
    check(sorted(m) == sorted(a) and len(a) == len(KEYS),
          "same keys, same encoding: %r %r" % (sorted(m), sorted(a)))
    for k in set(m) & set(a):
        (me, _, mc, _, _, _), (ae, al, ac, af, acl, asz) = m[k], a[k]
        check(mc == ac, "%r: cas %d %d" % (k, mc, ac))
        check((me == -1) == (ae == -1) and abs(me - ae) <= 2,
              "%r: exp %d %d" % (k, me, ae))
        check(abs(al - now) <= 2 and af == b"yes" and acl == 1 and asz > 2,
              "%r: la %d fetch %r cls %d size %d" % (k, al, af, acl, asz))
    check(m[b"ttl"][0] != -1 and m[b"unix"][0] == unix,
          "memcached's exp as read: %r %r" % (m[b"ttl"], m[b"unix"]))
    for how in (b"hash", b"1", b"2,1"):
        again = parse(ask(aport, b"lru_crawler metadump %s\r\n" % how))
        check(sorted(again) == sorted(a), "metadump %s" % how.decode())


def too_large():
    p, port = start(lambda port: [SERVER, "--port", str(port), "--threads",
                                  "1", "--conn-memory", "1"])
    try:
        key = b"%" * 245
        ask(port, b"".join(b"set %s%05d 0 0 1 noreply\r\nx\r\n" % (key, i)
                           for i in range(3000)))
        out = ask(port, b"lru_crawler metadump all\r\nversion\r\n")
        tail = b"SERVER_ERROR out of memory writing metadump\r\nVERSION "
        check(tail in out and out.endswith(b"\r\n<EOF>"),
              "over --conn-memory: %r" % out[-120:])
        check(out.count(b"\n") > 100, "the lines that fit come first")
    finally:
        p.kill()
        p.wait()


def header_sizes():
    """Flags 0 are not stored: an item with them costs at most what one
    with flags 1 and the same key and data lengths does, less for the
    lengths where the 4 bytes cross an allocator's size class; each dump
    line's cas is what gets gives, for both kinds."""
    p, port = start(lambda port: [SERVER, "--port", str(port), "--threads",
                                  "1"])
    try:
        lens = range(1, 65)
        ask(port, b"".join(b"set z%02d 0 0 %d\r\n%s\r\nset o%02d 1 0 %d\r\n%s\r\n"
                           % (n, n, b"v" * n, n, n, b"v" * n) for n in lens))
        a = parse(ask(port, b"lru_crawler metadump all\r\n"))
        gets = ask(port, b"gets " + b" ".join(sorted(a)) + b"\r\n")
        cas = {k: int(c) for k, c in
               re.findall(rb"VALUE (\S+) \d+ \d+ (\d+)\r\n", gets)}
        check(len(a) == 2 * len(lens) and
              all(cas.get(k) == a[k][2] for k in a),
              "dump's cas is gets's: %r %r" % (sorted(a.items())[:2], gets[:80]))
        sizes = [(a.get(b"z%02d" % n, (0,) * 6)[5], a.get(b"o%02d" % n,
                                                           (0,) * 6)[5])
                 for n in lens]
        check(all(z <= o for z, o in sizes), "flags 0 cost no more: %r" %
              sizes)
        check(any(z < o for z, o in sizes), "flags 0 cost less at some "
              "length: %r" % sizes)
    finally:
        p.kill()
        p.wait()


def main():
    (pm, mport), (pa, aport) = start_both(64)
    try:
        refusals(mport, aport)
        dumps(mport, aport)
    finally:
        for p in (pm, pa):
            p.kill()
            p.wait()
    too_large()
    header_sizes()
    if FAILS:
        sys.exit("FAIL %d checks" % len(FAILS))
    print("PASS")


main()
