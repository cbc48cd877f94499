#!/usr/bin/env python3
# admit-cached's binary protocol, case by case: each case is written to a
# connection of its own (then half-closed) and what comes back must be the
# replies listed, byte for byte, as memcached 1.6 gives them (the random
# comparison against memcached itself is test_memcached_random.py).  A CAS
# unique is checked as zero or not, and as equal to the one a case reads
# back where it says so.  Then 400 sessions of random headers (any
# opcode, key, extras and body lengths, absurd ones included) followed by
# random bytes: every reply stream must be whole packets then the end of
# stream, and the server must still answer.  Run by make check through
# test_binary.sh.
import os
import random
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_memcached import SERVER, exchange, start  # noqa: E402

ANY = object()   # a non-zero CAS unique


def req(op, key=b"", ext=b"", val=b"", cas=0, opaque=0x01020304, magic=0x80,
        keylen=None, bodylen=None):
    kl = len(key) if keylen is None else keylen
    bl = len(key) + len(ext) + len(val) if bodylen is None else bodylen
    return struct.pack(">BBHBBHIIQ", magic, op, kl, len(ext), 0, 0, bl,
                       opaque, cas) + ext + key + val


def res(op, status=0, key=b"", ext=b"", val=b"", cas=0, opaque=0x01020304):
    """A reply as a (header without CAS, CAS, body) triple."""
    hdr = struct.pack(">BBHBBHII", 0x81, op, len(key), len(ext), 0, status,
                      len(key) + len(ext) + len(val), opaque)
    return (hdr, cas, ext + key + val)


def err(op, status, words, opaque=0x01020304):
    return res(op, status, val=words, opaque=opaque)


NOT_FOUND = (1, b"Not found")
EXISTS = (2, b"Data exists for key.")
TOO_BIG = (3, b"Too large.")
EINVAL = (4, b"Invalid arguments")
NOT_STORED = (5, b"Not stored.")
BADVAL = (6, b"Non-numeric server-side value for incr or decr")
UNKNOWN = (0x81, b"Unknown command")


def setx(op, key, val, flags=0, exp=0, cas=0):
    return req(op, key, struct.pack(">II", flags, exp), val, cas)


def incr(op, key, delta, initial, exp, cas=0):
    return req(op, key, struct.pack(">QQI", delta, initial, exp), cas=cas)


def flags(n):
    return struct.pack(">I", n)


def num(n):
    return struct.pack(">Q", n)


def send(port, data):
    return exchange(port, {"send": [data]})


def parse(stream):
    """(replies as triples, the rest: b"<EOF>" when the server closed)."""
    out, i = [], 0
    while i + 24 <= len(stream) and stream[i] == 0x81:
        body = struct.unpack(">I", stream[i + 8:i + 12])[0]
        out.append((stream[i:i + 16], struct.unpack(">Q", stream[i + 16:i + 24])[0],
                    stream[i + 24:i + 24 + body]))
        i += 24 + body
    return out, stream[i:]


CASES = [
    # A lone 24-byte request is answered at once; so is a noop then text,
    # which is no binary request (bad magic): the connection is closed.
    ("noop", req(0x0a), [res(0x0a)], b"<EOF>"),
    ("noop then text", req(0x0a) + b"get a\r\n", [res(0x0a)], b"<EOF>"),
    ("version", req(0x0b), [res(0x0b, val=b"1.6.18")], b"<EOF>"),
    ("set get getk getq getkq",
     setx(0x01, b"k1", b"hello", flags=7) + req(0x00, b"k1") + req(0x0c, b"k1") +
     req(0x09, b"k1") + req(0x0d, b"k1") + req(0x09, b"nope") + req(0x0d, b"nope") +
     req(0x00, b"nope") + req(0x0c, b"nope") + req(0x0a),
     [res(0x01, cas=ANY), res(0x00, ext=flags(7), val=b"hello", cas=ANY),
      res(0x0c, key=b"k1", ext=flags(7), val=b"hello", cas=ANY),
      res(0x09, ext=flags(7), val=b"hello", cas=ANY),
      res(0x0d, key=b"k1", ext=flags(7), val=b"hello", cas=ANY),
      err(0x00, *NOT_FOUND), res(0x0c, 1, key=b"nope"), res(0x0a)], b"<EOF>"),
    ("quiet stores answer errors only",
     setx(0x11, b"q1", b"v") + setx(0x12, b"q1", b"w") + setx(0x13, b"q-none", b"w") +
     req(0x19, b"q1", val=b"+") + req(0x1a, b"q-none", val=b"+") +
     req(0x14, b"q1") + req(0x14, b"q1") + req(0x0a),
     [err(0x12, *EXISTS), err(0x13, *NOT_FOUND), err(0x1a, *NOT_STORED),
      err(0x14, *NOT_FOUND), res(0x0a)], b"<EOF>"),
    ("add replace append prepend delete",
     setx(0x02, b"a1", b"mid") + setx(0x02, b"a1", b"x") + setx(0x03, b"a-none", b"x") +
     req(0x0e, b"a1", val=b">") + req(0x0f, b"a1", val=b"<") + req(0x00, b"a1") +
     req(0x0e, b"a-none", val=b"x") + req(0x04, b"a1") + req(0x04, b"a1"),
     [res(0x02, cas=ANY), err(0x02, *EXISTS), err(0x03, *NOT_FOUND),
      res(0x0e, cas=ANY), res(0x0f, cas=ANY),
      res(0x00, ext=flags(0), val=b"<mid>", cas=ANY), err(0x0e, *NOT_STORED),
      res(0x04), err(0x04, *NOT_FOUND)], b"<EOF>"),
    ("incr decr, initial values, fail if absent",
     incr(0x05, b"n1", 5, 10, 0) + incr(0x05, b"n1", 5, 10, 0) +
     incr(0x06, b"n1", 100, 0, 0) + incr(0x05, b"n2", 1, 0, 0xffffffff) +
     incr(0x15, b"n1", 1, 0, 0) + req(0x00, b"n1") + setx(0x01, b"n3", b"abc") +
     incr(0x05, b"n3", 1, 0, 0) + incr(0x05, b"n1", 2 ** 64 - 1, 0, 0),
     [res(0x05, val=num(10), cas=ANY), res(0x05, val=num(15), cas=ANY),
      res(0x06, val=num(0), cas=ANY), err(0x05, *NOT_FOUND),
      # padded in place to the length of "15", as memcached rewrites it
      res(0x00, ext=flags(0), val=b"1 ", cas=ANY), res(0x01, cas=ANY),
      err(0x05, *BADVAL), res(0x05, val=num(0), cas=ANY)], b"<EOF>"),
    ("touch gat gatk gatq",
     setx(0x01, b"t1", b"v", flags=9) + req(0x1c, b"t1", flags(100)) +
     req(0x1d, b"t1", flags(100)) + req(0x23, b"t1", flags(100)) +
     req(0x1e, b"t-none", flags(100)) + req(0x1c, b"t-none", flags(100)) +
     req(0x24, b"t-none", flags(100)) + req(0x0a),
     [res(0x01, cas=ANY), res(0x1c, ext=flags(9), cas=ANY),
      res(0x1d, ext=flags(9), val=b"v", cas=ANY),
      res(0x23, key=b"t1", ext=flags(9), val=b"v", cas=ANY),
      err(0x1c, *NOT_FOUND), res(0x0a)], b"<EOF>"),
    ("flush flushq",
     setx(0x01, b"f1", b"v") + req(0x08) + req(0x00, b"f1") +
     req(0x18, ext=flags(0)) + req(0x0a),
     [res(0x01, cas=ANY), res(0x08), err(0x00, *NOT_FOUND), res(0x0a)], b"<EOF>"),
    ("stat: statistics, then an empty reply",
     req(0x10, b"nosuch") + req(0x0a),
     [err(0x10, *NOT_FOUND), res(0x0a)], b"<EOF>"),
    ("stat detail: on and off an empty reply, dump one reply, else not found",
     req(0x10, b"detail on") + req(0x10, b"detail dump") +
     req(0x10, b"detail off") + req(0x10, b"detail") +
     req(0x10, b"detail foo") + req(0x0a),
     [res(0x10), res(0x10, key=b"detailed", val=b"END\r\n"), res(0x10),
      res(0x10), err(0x10, *NOT_FOUND), err(0x10, *NOT_FOUND), res(0x0a)],
     b"<EOF>"),
    ("quit", req(0x07) + req(0x0a), [res(0x07)], b"<EOF>"),
    ("quitq", req(0x17) + req(0x0a), [], b"<EOF>"),
    ("too large: refused, the value skipped",
     setx(0x01, b"L", b"x" * ((1 << 20) + 1)) + req(0x0a),
     [err(0x01, *TOO_BIG), res(0x0a)], b"<EOF>"),
    ("empty value", setx(0x01, b"e", b"", flags=3) + req(0x00, b"e"),
     [res(0x01, cas=ANY), res(0x00, ext=flags(3), cas=ANY)], b"<EOF>"),
    # Bad input: memcached's replies, and a close where it closes.
    ("wrong magic mid-stream", req(0x0a) + req(0x0a, magic=0x81) + req(0x0a),
     [res(0x0a)], b"<EOF>"),
    ("key longer than the body", req(0x00, b"abc", bodylen=1) + b"xx",
     [err(0x00, *UNKNOWN)], b"<EOF>"),
    ("key over 250 bytes", req(0x00, b"k" * 300) + req(0x0a),
     [err(0x00, *EINVAL)], b"<EOF>"),
    ("extras where none belong", req(0x00, b"k", ext=b"xxxx") + req(0x0a),
     [err(0x00, *EINVAL)], b"<EOF>"),
    ("incr without its 20 bytes of extras", req(0x05, b"k", ext=b"1" * 8),
     [err(0x05, *EINVAL)], b"<EOF>"),
    ("a body of 4 GiB on a get", req(0x00, b"k", bodylen=0xffffffff),
     [err(0x00, *EINVAL)], b"<EOF>"),
    ("a set of 4 GiB: refused, skipped until the client closes",
     req(0x01, b"k", ext=b"\0" * 8, bodylen=0xffffffff) + b"x" * 100,
     [err(0x01, *TOO_BIG)], b"<EOF>"),
    ("unknown opcode: its body skipped after the key",
     req(0x30, val=b"abc") + req(0x0a), [err(0x30, *UNKNOWN), res(0x0a)], b"<EOF>"),
    ("no authentication", req(0x20) + req(0x21, b"PLAIN", val=b"\0u\0p") + req(0x0a),
     [err(0x20, *UNKNOWN), err(0x21, *UNKNOWN), res(0x0a)], b"<EOF>"),
    ("opaque given back", req(0x0a, opaque=0xdeadbeef) + req(0x0b, opaque=7),
     [res(0x0a, opaque=0xdeadbeef), res(0x0b, val=b"1.6.18", opaque=7)], b"<EOF>"),
]


def cas_flow(port):
    """CAS: a set with the unique read back stores; with an old one, or on
    an absent key, it is refused; delete compares it too."""
    got, _ = parse(send(port, setx(0x01, b"c1", b"v1") + req(0x00, b"c1")))
    if len(got) != 2 or not got[1][1]:
        return "no CAS unique read back: %r" % (got,)
    cas = got[1][1]
    data = (setx(0x01, b"c1", b"v2", cas=cas) + setx(0x01, b"c1", b"v3", cas=cas) +
            setx(0x02, b"c-none", b"v", cas=cas) + req(0x0e, b"c1", val=b"+", cas=cas) +
            req(0x04, b"c1", cas=cas) + incr(0x05, b"c1", 1, 0, 0, cas=cas))
    got, rest = parse(send(port, data))
    codes = [struct.unpack(">H", g[0][6:8])[0] for g in got]
    if codes != [0, 2, 1, 2, 2, 2] or got[0][1] == cas or rest != b"<EOF>":
        return "CAS replies %r" % (codes,)
    return None


def random_sessions(port, n=400, seed=38):
    """Random binary input: replies well formed, then the end of stream."""
    R = random.Random(seed)
    ops = [0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x08, 0x09, 0x0a, 0x0b,
           0x0c, 0x0d, 0x0e, 0x0f, 0x10, 0x11, 0x19, 0x1c, 0x1d, 0x20, 0x21,
           0x23, 0x24, 0x7f, 0xff]
    for i in range(n):
        data = b""
        for _ in range(R.randrange(1, 6)):
            op = R.choice(ops) if R.random() < 0.9 else R.randrange(256)
            keylen = R.choice([0, 1, 5, 250, 251, R.randrange(0, 300), 65535])
            extlen = R.choice([0, 4, 8, 20, R.randrange(0, 32), 255])
            body = R.choice([keylen + extlen, keylen + extlen + R.randrange(0, 100),
                             R.randrange(0, 600), 0xffffffff, 0])
            head = struct.pack(">BBHBBHIIQ", 0x80, op, keylen, extlen, 0, 0, body,
                               i, R.choice([0, 1, 2 ** 64 - 1]))
            tail = bytes(R.randrange(256) for _ in range(min(body, R.randrange(0, 700))))
            data += head + tail
        got, rest = parse(send(port, data))
        if rest != b"<EOF>":
            return "session %d: a reply stream ends in %r" % (i, rest[:80])
    got, rest = parse(send(port, req(0x0b)))
    if len(got) != 1 or got[0][2] != b"1.6.18":
        return "no answer after the random sessions: %r %r" % (got, rest)
    return None


def main():
    proc, port = start(lambda p: [SERVER, "-p", str(p), "-t", "2"])
    failed = 0
    try:
        for name, data, want, want_rest in CASES:
            got, rest = parse(send(port, data))
            ok = len(got) == len(want) and rest == want_rest
            for (gh, gc, gb), (wh, wc, wb) in zip(got, want):
                ok = ok and gh == wh and gb == wb and \
                    (gc != 0 if wc is ANY else gc == wc)
            if not ok:
                failed += 1
                print("FAIL %s\n  got  %r %r\n  want %r %r" % (name, got, rest, want, want_rest))
        msg = cas_flow(port)
        if msg:
            failed += 1
            print("FAIL cas: %s" % msg)
        msg = random_sessions(port)
        if msg:
            failed += 1
            print("FAIL random: %s" % msg)
    finally:
        proc.terminate()
        proc.wait(30)
    print("%d binary cases and 400 random sessions, %d failed" % (len(CASES) + 1, failed))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
