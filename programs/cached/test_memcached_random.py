#!/usr/bin/env python3
# admit-cached against memcached on random request streams: from a fixed
# seed, sessions of 1 to 12 requests (text and meta commands, valid and
# malformed, noreply, keys of 0, 1, 250 and 251 bytes and of binary bytes,
# NULs, bad and extreme numbers, values that hold "\r\n" and whole
# commands, base64 keys, the stale/win/invalidate flags, HTTP lines,
# spaces around a line, a tab for a space, "\n" and "\r\r\n" endings) are
# written to a fresh admit-cached and a fresh memcached (-U 0, memory
# enough that neither evicts), each session on a connection of its own,
# pipelined and often split at random byte boundaries, then half-closed;
# the two reply streams must be equal byte for byte.  A share of the
# sessions (ADMIT_DIFF_BINARY, default 0.3) speak the binary protocol
# instead: every opcode admit-cached serves, quiet forms, CAS uniques,
# extras of every command, values over --max-item, and bad input (a wrong
# magic after a noop, key and extras longer than the body, lengths that do
# not suit the opcode, keys over 250 bytes, unknown and SASL opcodes).
#
# Only what admit-cached(1) lists under DIFFERENCES FROM MEMCACHED is
# rewritten or left out:
#   - "STAT" lines (binary: stat replies with a key) are dropped; CAS
#     uniques are compared as the order in which each server first
#     showed them; in binary sessions, memcached's reset on closing with
#     unread input is taken as the end of stream admit-cached gives;
#   - a binary incr or decr follows a get, gat or touch of the session
#     only after a noop (as the text one after an mn);
#   - a storage line memcached refuses with CLIENT_ERROR and a valid
#     length: memcached is sent it without the data block (it would run
#     the block as commands, admit-cached skips it);
#   - a get with a key over 250 bytes only opens a session, an HTTP line
#     only ends one after an mn (memcached drops unsent replies);
#   - an incr, decr or ma follows an mg of the session only after an mn,
#     and memcached runs without its LRU threads (either would keep an
#     item from being rewritten in place);
#   - no flush_all with a delay, no k flag with b, no negative TTL for
#     t, no non-get line over 2048 bytes; in binary sessions, a flush
#     without a delay only, and a wrong magic only after a noop
#     (memcached drops the unsent replies when it closes).
# A TTL shown by t may differ by one second (the clocks tick apart).
#
# Knobs (environment): ADMIT_DIFF_SEED (default 1), ADMIT_DIFF_REQUESTS
# (default 4000), ADMIT_DIFF_SHOW (differences printed, default 10),
# ADMIT_DIFF_BINARY (the share of binary sessions, default 0.3).
# Skips (77) when memcached is not installed.  Run by make check through
# test_memcached_random.sh.
import base64
import math
import os
import random
import re
import socket
import struct
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_memcached import start_both  # noqa: E402

SEED = int(os.environ.get("ADMIT_DIFF_SEED", "1"))
REQUESTS = int(os.environ.get("ADMIT_DIFF_REQUESTS", "4000"))
SHOW = int(os.environ.get("ADMIT_DIFF_SHOW", "10"))
# The share of sessions in the binary protocol.
BINARY = float(os.environ.get("ADMIT_DIFF_BINARY", "0.3"))


# ---------------------------------------------------------------- requests
def c_number(tok, kind):
    """A token as memcached's safe_strtol ("l"), safe_strtoul ("ul",
    32 bits kept) or safe_strtoull ("ull") reads it; None when refused."""
    if not re.fullmatch(rb"[+-]?\d+", tok):
        return None
    v = int(tok)
    if kind == "l":
        return v if -2 ** 63 <= v < 2 ** 63 else None
    if abs(v) >= 2 ** 64:
        return None
    v %= 2 ** 64
    if v >= 2 ** 63 and b"-" in tok:
        return None
    return v % 2 ** 32 if kind == "ul" else v


class Gen:
    """Draws requests.  Each request is (bytes for admit-cached, bytes for
    memcached): the same, except where memcached is sent a refused storage
    line without its data block."""

    def __init__(self, seed):
        self.R = random.Random(seed)
        now = int(time.time())
        # Exptimes that do not run out while the test runs: 0, in the past,
        # far away, beyond 2^31 and malformed.
        self.exptimes = [b"0", b"0", b"-1", b"1000", b"2592000", b"2592001",
                         b"%d" % (now + 3600), b"%d" % (now - 3600),
                         b"2147483647", b"2147483648", b"4294967296", b"-2147483649",
                         b"+100", b"0700", b"x", b"1x", b"", b"99999999999999999999"]
        self.nums = [b"0", b"1", b"2", b"5", b"10", b"100", b"007", b"+3", b"-1",
                     b"-0", b"x", b"5x", b"4294967295", b"4294967296",
                     b"18446744073709551615", b"18446744073709551616", b" 5"]
        self.keys = [b"a", b"b", b"c", b"n", b"Zm9v", b"YQ==", b"k" * 250,
                     b"\x01\x7f\xfe", b"t\tb", b"\x80\xff", b"z\x00z", b"r\rx"]

    def key(self):
        R = self.R
        x = R.random()
        if x < 0.03:
            return b"K" * 251
        if x < 0.05:
            return b""
        if x < 0.07:
            return bytes(R.choice(b"abcdefgh\x01\x02\xfe\x09") for _ in range(R.randrange(1, 6)))
        return R.choice(self.keys)

    def value(self):
        R = self.R
        return R.choice([b"", b"x", b"hello", b"12", b"99", b"007", b"18446744073709551615",
                         b" 5", b"5 ", b"-3", b"get a\r\n", b"flush_all\r\n",
                         b"set a 0 0 1\r\nx\r\n", b"\r\nx", b"\x00\xff\r", b"mn\r\nmn",
                         b"V" * R.randrange(0, 2000)])

    def exptime(self):
        return self.R.choice(self.exptimes)

    def noreply(self):
        return b" noreply" if self.R.random() < 0.2 else b""

    def storage(self):
        R = self.R
        cmd = R.choice([b"set", b"set", b"add", b"replace", b"append", b"prepend", b"cas"])
        k = self.key()
        v = self.value()
        flags = R.choice([b"0", b"0", b"3", b"65535", b"4294967295", b"4294967296",
                          b"+5", b"-0", b"x", b"1x", b"-1"])
        exp = self.exptime()
        n = b"%d" % len(v)
        if R.random() < 0.08:
            n = R.choice([b"%d" % (len(v) + 1), b"%d" % max(len(v) - 1, 0),
                          b"%d" % (len(v) + 2), b"-1", b"x", b"+%d" % len(v),
                          b"0%d" % len(v)])
        cas = b""
        if cmd == b"cas":
            cas = b" " + R.choice([b"%d" % R.randrange(1, 80), b"%d" % R.randrange(1, 80),
                                   b"0", b"x", b"-1", b"18446744073709551616"])
        extra = b""
        if R.random() < 0.04:
            extra = R.choice([b" junk", b" noreply junk", b" 1 2"])
        nr = self.noreply()
        line = b"%s %s %s %s %s%s%s%s\r\n" % (cmd, k, flags, exp, n, cas, extra, nr)
        return self.refusable(line, v)

    def refusable(self, line, v):
        """A storage line and its block, as sent to admit-cached and to
        memcached.  When memcached refuses the line with CLIENT_ERROR and a
        valid length (admit-cached skips the block it announces, memcached
        runs it), the block is made that length and left out for memcached.
        A block of another length than announced ends the session (what
        follows is read out of step, which this model does not follow).
        The line is read as memcached reads it: up to a NUL, words split
        at spaces."""
        w = line[:-2].split(b"\x00")[0].split(b" ")
        w = [x for x in w if x]
        if not w:
            return line + v + b"\r\n", line + v + b"\r\n"
        if w[0] == b"ms":
            ok = len(w) >= 3
            n = c_number(w[2], "l") if ok else None
            bad = ok and (len(w[1]) > 250 or len(w) >= 20)
        else:
            base = 6 if w[0] == b"cas" else 5
            ok = len(w) in (base, base + 1)
            n = c_number(w[4], "l") if ok else None
            bad = ok and (len(w[1]) > 250 or c_number(w[2], "ul") is None or
                          c_number(w[3], "l") is None or
                          (w[0] == b"cas" and c_number(w[5], "ull") is None))
        if n is not None:
            n = (n + 2 ** 31) % 2 ** 32 - 2 ** 31  # memcached's int32_t
            if n < 0:
                n = None
        if not (bad and n is not None):
            if n is not None and n != len(v):
                # Read out of step; spaces at the session's end complete
                # the block (memcached would wait for it, see half-close
                # in admit-cached(1)).
                if n > len(v) + 2000:
                    return b"mn\r\n", b"mn\r\n"
                self.desync = True
                self.short = max(n - len(v), 0)
            return line + v + b"\r\n", line + v + b"\r\n"
        if n > 5000:
            return b"mn\r\n", b"mn\r\n"
        v = (v + b"P" * n)[:n]
        return line + v + b"\r\n", line

    def get(self):
        R = self.R
        cmd = R.choice([b"get", b"gets", b"gat", b"gats"])
        keys = []
        for _ in range(R.randrange(0, 4)):
            k = self.key()
            if len(k) > 250:
                k = b"a"
            keys.append(k)
        sep = R.choice([b" ", b" ", b"  "])
        if cmd.startswith(b"gat"):
            return b"%s %s%s%s\r\n" % (cmd, self.exptime(), sep, sep.join(keys))
        return b"%s%s%s\r\n" % (cmd, sep, sep.join(keys))

    def simple(self):
        R = self.R
        t = R.randrange(9)
        nr = self.noreply()
        if t == 0:
            return b"delete %s%s%s\r\n" % (self.key(), R.choice([b"", b"", b" 0", b" 5", b" x"]), nr)
        if t in (1, 2):
            return b"%s %s %s%s\r\n" % (R.choice([b"incr", b"decr"]), R.choice([b"n", b"a", self.key()]),
                                        R.choice(self.nums), nr)
        if t == 3:
            return b"touch %s %s%s\r\n" % (self.key(), self.exptime(), nr)
        if t == 4:
            # No delay > 0: admit-cached(1) lists what memcached does.
            return b"flush_all%s%s\r\n" % (R.choice([b"", b"", b" 0", b" -1", b" x",
                                                     b" 2147483648", b" 0 0"]), nr)
        if t == 5:
            return b"verbosity%s%s\r\n" % (R.choice([b"", b" 0", b" 1", b" x", b" 1 2"]), nr)
        if t == 6:
            return b"version%s\r\n" % R.choice([b"", b"", b" noreply", b" x"])
        if t == 7:
            return R.choice([b"\r\n", b"foo\r\n", b"GET\r\n", b"  \r\n", b"\x00\r\n",
                             b"get\r\n", b"set\r\n", b"mg\r\n", b"\n", b"stats\r\n",
                             b"stats reset\r\n", b"cas a\r\n"])
        return b"mn\r\n"

    def meta_flag(self, cmd):
        R = self.R
        opts = {b"mg": "bcfkOqstuvNRTEIP",
                b"ms": "bcCFIkOqTMNsSvE",
                b"md": "bCIkOqTxEM",
                b"ma": "bCNJDTMOqtcvkE"}[cmd]
        f = R.choice(opts)
        if f == "M":
            return b"M" + R.choice([b"E", b"A", b"P", b"R", b"S", b"I", b"D", b"+", b"-",
                                    b"a", b"s", b"e", b"p", b"r", b"x", b"", b"EE"])
        if f == "O":
            return b"O" + R.choice([b"abc", b"1", b"", b"x" * 31, b"x" * 32, b"x" * 33])
        if f in "NT":
            return f.encode() + R.choice([b"0", b"3000", b"1000", b"x", b"", b"+300"])
        if f in "RJDFS":
            return f.encode() + R.choice(self.nums[:-1])
        if f in "CE":
            return f.encode() + R.choice([b"%d" % R.randrange(1, 80), b"0", b"x", b""])
        return f.encode()

    def meta(self):
        R = self.R
        cmd = R.choice([b"mg", b"mg", b"ms", b"md", b"ma"])
        flags = [self.meta_flag(cmd) for _ in range(R.randrange(0, 6))]
        if R.random() < 0.02:
            flags = [self.meta_flag(cmd) for _ in range(22)]
        k = self.key()
        if b"b" in flags:
            # Keys of their own, and no k flag (the key it gives back for a
            # b key differs on purpose, see admit-cached(1)); some keys not
            # base64, some base64 only as memcached reads it.
            flags = [f for f in flags if f != b"k"]
            if R.random() < 0.8 and k:
                k = base64.b64encode(b"\xb0" + k[:180])
            else:
                k = R.choice([b"!!!", b"h\x02fgc", b"Y===", b"sLA=", b"s-LA\x01=", b"sLA=sLA="])
        fl = (b" " + b" ".join(flags)) if flags else b""
        if cmd == b"ms":
            v = self.value()
            n = b"%d" % len(v)
            if R.random() < 0.06:
                n = R.choice([b"x", b"-1", b"%d" % (len(v) + 1), b""])
            return self.refusable(b"ms %s %s%s\r\n" % (k, n, fl), v)
        r = b"%s %s%s\r\n" % (cmd, k, fl)
        return r, r

    def request(self):
        x = self.R.random()
        if x < 0.25:
            a, m = self.storage()
        elif x < 0.60:
            a = m = self.get() if x < 0.40 else self.simple()
        else:
            a, m = self.meta()
        return self.spaced(a, m)

    def spaced(self, a, m):
        """The request's line with spaces before or after it, a tab for
        its first space, or ended by "\n" or "\r\r\n" (its data block, if
        any, untouched)."""
        R = self.R
        i = a.find(b"\r\n")
        if i < 0 or not m.startswith(a[:i + 2]):
            return a, m
        line, end, x = a[:i], b"\r\n", R.random()
        if x < 0.04:
            line = b"  " + line
        elif x < 0.08:
            line += b" "
        elif x < 0.14:
            end = b"\n"
        elif x < 0.16 and len(line.split(b" ")[-1]) < 250:
            end = b"\r\r\n"  # (the "\r" joins the last word)
        elif x < 0.18 and a == m:  # (a line read as refused stays so)
            line = line.replace(b" ", b"\t", 1)
        return line + end + a[i + 2:], line + end + m[i + 2:]

    def session(self):
        """(requests, admit bytes, memcached bytes)."""
        R = self.R
        reqs = []
        self.desync, self.short = False, 0
        if R.random() < 0.05:
            cmd = R.choice([b"get", b"gets", b"gat 0", b"gats 0"])
            reqs.append((b"%s a %s b\r\n" % (cmd, b"L" * 251),) * 2)
        mg_unsent = False
        for _ in range(R.randrange(1, 12)):
            a, m = self.request()
            # An mg whose reply memcached has not sent yet keeps the item
            # from being rewritten in place (admit-cached(1)): an mn sends
            # it before an incr, decr or ma.
            word = a.lstrip(b" ")
            if mg_unsent and re.match(rb"(incr|decr|ma) ", word):
                a, m = b"mn\r\n" + a, b"mn\r\n" + m
            if word.startswith(b"mg "):
                mg_unsent = True
            elif word.startswith(b"mn"):
                mg_unsent = False
            reqs.append((a, m))
            if self.desync:
                reqs.append((b" " * self.short + b"\r\n",) * 2)
                break
        reqs.append((b"mn\r\n",) * 2)
        x = R.random()
        if x < 0.03:
            reqs.append((b"quit\r\n",) * 2)
        elif x < 0.05 and not self.desync:
            # After the mn has flushed the replies before it (memcached
            # drops the unsent ones on an HTTP line, see admit-cached(1)).
            reqs.append((R.choice([b"GET / HTTP/1.1\r\n", b"get a HTTP/1.0\r\n"]),) * 2)
        return (len(reqs), b"".join(a for a, _ in reqs), b"".join(m for _, m in reqs))


class BinGen:
    """Draws binary-protocol sessions (the first byte 0x80 makes a
    connection binary): every opcode admit-cached serves with random
    extras, keys, values, CAS uniques and quiet forms, and bad input
    (a wrong magic after a noop, lengths that do not fit, keys over 250
    bytes, unknown opcodes)."""

    OPS = {"get": 0x00, "set": 0x01, "add": 0x02, "replace": 0x03,
           "delete": 0x04, "incr": 0x05, "decr": 0x06, "quit": 0x07,
           "flush": 0x08, "getq": 0x09, "noop": 0x0a, "version": 0x0b,
           "getk": 0x0c, "getkq": 0x0d, "append": 0x0e, "prepend": 0x0f,
           "stat": 0x10, "setq": 0x11, "addq": 0x12, "replaceq": 0x13,
           "deleteq": 0x14, "incrq": 0x15, "decrq": 0x16, "quitq": 0x17,
           "flushq": 0x18, "appendq": 0x19, "prependq": 0x1a,
           "touch": 0x1c, "gat": 0x1d, "gatq": 0x1e, "gatk": 0x23,
           "gatkq": 0x24}

    def __init__(self, seed, text_gen):
        self.R = random.Random(seed)
        self.text = text_gen   # shares its keys and values

    @staticmethod
    def packet(op, key=b"", ext=b"", val=b"", cas=0, opaque=0,
               magic=0x80, keylen=None, bodylen=None):
        kl = len(key) if keylen is None else keylen
        bl = len(key) + len(ext) + len(val) if bodylen is None else bodylen
        return struct.pack(">BBHBBHIIQ", magic, op, kl, len(ext), 0, 0, bl,
                           opaque, cas) + ext + key + val

    def key(self):
        R = self.R
        if R.random() < 0.03:
            return R.choice([b"K" * 251, b""])
        return R.choice(self.text.keys[:6] + [b"\x00", b"b k", b"\r\n"])

    def exptime(self):
        now = int(time.time())
        return self.R.choice([0, 0, 1000, 2592000, 2592001, now + 3600, now - 3600])

    def cas(self):
        R = self.R
        x = R.random()
        if x < 0.7:
            return 0
        return R.choice([R.randrange(1, 80), R.randrange(1, 80), 1 << 40])

    def value(self):
        R = self.R
        if R.random() < 0.01:
            return b"L" * ((1 << 20) + 1)   # over --max-item: refused, skipped
        return R.choice([b"", b"7", b"12", b"007", b"18446744073709551615",
                         b"abc", b"x" * R.randrange(0, 300), self.text.value()])

    def request(self, name):
        R, P = self.R, self.packet
        op = self.OPS[name]
        base = name.rstrip("q") if name not in ("getq", "gatq") else name[:-1]
        opaque = R.randrange(0, 1 << 32)
        if base in ("set", "add", "replace"):
            ext = struct.pack(">II", R.choice([0, 3, 0xffffffff]), self.exptime())
            return P(op, self.key(), ext, self.value(), self.cas(), opaque)
        if base in ("append", "prepend"):
            return P(op, self.key(), b"", self.value(), self.cas(), opaque)
        if base in ("get", "getk", "delete"):
            return P(op, self.key(), cas=self.cas() if base == "delete" else 0,
                     opaque=opaque)
        if base in ("incr", "decr"):
            ext = struct.pack(">QQI", R.choice([0, 1, 5, 1 << 63, (1 << 64) - 1]),
                              R.choice([0, 10, (1 << 64) - 1]),
                              R.choice([0, 1000, 0xffffffff]))
            return P(op, self.key(), ext, cas=self.cas(), opaque=opaque)
        if base in ("touch", "gat", "gatk"):
            return P(op, self.key(), struct.pack(">I", self.exptime()), opaque=opaque)
        if base == "flush":
            return P(op, ext=R.choice([b"", b"\0\0\0\0"]), opaque=opaque)
        if base == "stat":
            return P(op, R.choice([b"", b"settings", b"nosuch"]), opaque=opaque)
        return P(op, opaque=opaque)   # noop, version, quit

    def bad(self):
        """A request memcached refuses, closing or skipping."""
        R, P = self.R, self.packet
        x = R.random()
        if x < 0.25:   # key and extras longer than the body: closes
            k = R.randrange(1, 40)
            return P(0x00, b"k" * k, bodylen=R.randrange(0, k)), True
        if x < 0.45:   # lengths that do not suit the opcode: closes
            return R.choice([P(0x00, b"k", ext=b"1234"), P(0x0a, b"k"),
                             P(0x01, b"k", ext=b"123", val=b"v"),
                             P(0x05, b"k", ext=b"1" * 8),
                             P(0x1c, b"k"), P(0x08, ext=b"12")]), True
        if x < 0.6:    # a key over 250 bytes: closes
            return P(0x00, b"K" * 300), True
        if x < 0.8:    # wrong magic (after a noop, whose reply is sent)
            return P(0x0a) + P(0x0a, magic=R.choice([0x00, 0x81, 0x47])), True
        # unknown opcode: its body length is skipped after its key
        body = bytes(R.randrange(256) for _ in range(R.randrange(0, 30)))
        if x < 0.9:    # authentication, which admit-cached has not
            return P(R.choice([0x20, 0x21, 0x22]), R.choice([b"", b"PLAIN"]),
                     val=body), False
        return P(R.choice([0x1b, 0x30, 0x7f, 0xff]), val=body), False

    def session(self):
        """(requests, bytes): ends with a noop (every quiet reply sent)."""
        R = self.R
        names = list(self.OPS)
        out, n = [], 0
        got = False
        for _ in range(R.randrange(1, 12)):
            if R.random() < 0.06:
                req, closes = self.bad()
                out.append(req)
                n += 1
                if closes:
                    return n, b"".join(out)
                continue
            name = R.choice(names)
            if name in ("quit", "quitq") and R.random() < 0.7:
                name = "noop"
            # memcached holds a hit's item until its reply is sent, and
            # then writes an incr's result to a new item rather than in
            # place (admit-cached(1)): a noop sends the replies first.
            if got and name.startswith(("incr", "decr")):
                out.append(self.packet(0x0a))
                got = False
            if name.startswith(("get", "gat", "touch")):
                got = True
            out.append(self.request(name))
            n += 1
            if name in ("quit", "quitq"):
                return n, b"".join(out)
        out.append(self.packet(0x0a))
        return n + 1, b"".join(out)


def bin_records(stream, cas_map):
    """Splits a binary reply stream into packets, drops the statistics
    (opcode stat with a key), renumbers CAS uniques."""
    recs = []
    i = 0
    while i + 24 <= len(stream) and stream[i] == 0x81:
        op, keylen, extlen = stream[i + 1], struct.unpack(">H", stream[i + 2:i + 4])[0], stream[i + 4]
        body = struct.unpack(">I", stream[i + 8:i + 12])[0]
        cas = struct.unpack(">Q", stream[i + 16:i + 24])[0]
        pkt = stream[i:i + 24 + body]
        i += 24 + body
        if op == 0x10 and keylen:
            continue
        num = cas_map.setdefault(cas, len(cas_map)) if cas else 0
        recs.append(pkt[:16] + b"#%d" % num + pkt[24:])
    if i < len(stream):
        recs.append(stream[i:])
    return recs


# ---------------------------------------------------------------- exchange
def exchange(port, data, cuts):
    """Writes data in pieces cut at the given offsets, half-closes, reads
    to the end."""
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    out = []

    def reader():
        try:
            while True:
                d = s.recv(1 << 20)
                if not d:
                    out.append(b"<EOF>")
                    return
                out.append(d)
        except socket.timeout:
            out.append(b"<OPEN>")
        except OSError:
            out.append(b"<RESET>")

    t = threading.Thread(target=reader)
    t.start()
    try:
        last = 0
        for c in cuts + [len(data)]:
            s.sendall(data[last:c])
            last = c
            if c != len(data):
                time.sleep(0.002)
        s.shutdown(socket.SHUT_WR)
    except OSError:
        pass
    t.join()
    s.close()
    return b"".join(out)


# ----------------------------------------------------------------- compare
META_CODES = (b"VA", b"HD", b"NF", b"NS", b"EX", b"EN", b"MN")


def records(stream, cas_map):
    """Splits a reply stream into lines (value data kept whole), drops STAT
    lines, renumbers CAS uniques; returns (records, ttls) where the TTLs of
    t flags are taken out for a comparison of their own."""
    recs, ttls = [], []
    i = 0

    def cas(num):
        return b"#%d" % cas_map.setdefault(num, len(cas_map))

    while i < len(stream):
        j = stream.find(b"\r\n", i)
        if j < 0:
            recs.append(stream[i:])
            break
        line = stream[i:j]
        i = j + 2
        tok = line.split(b" ")
        data = None
        if tok[0] == b"VALUE" and len(tok) in (4, 5) and tok[3].isdigit():
            n = int(tok[3])
            data = stream[i:i + n + 2]
            i += n + 2
            if len(tok) == 5:
                tok[4] = cas(tok[4])
        elif tok[0] in META_CODES:
            first = 1
            if tok[0] == b"VA" and len(tok) > 1 and tok[1].isdigit():
                data = stream[i:i + int(tok[1]) + 2]
                i += int(tok[1]) + 2
                first = 2
            for x in range(first, len(tok)):
                if tok[x][:1] == b"c" and tok[x][1:].isdigit():
                    tok[x] = b"c" + cas(tok[x][1:])
                elif tok[x][:1] == b"t" and re.fullmatch(rb"t-?\d+", tok[x]):
                    ttls.append(int(tok[x][1:]))
                    tok[x] = b"t?"
        elif tok[0] == b"STAT":
            continue
        recs.append(b" ".join(tok))
        if data is not None:
            recs.append(data)
    return recs, ttls


def main():
    # memcached's background threads hold items for moments, and an incr
    # of a held item writes a new item rather than padding the old one
    # (admit-cached(1)): without them its replies depend on the requests
    # alone.
    (pm, mport), (pa, aport) = start_both(1024, ["-o", "no_lru_crawler,"
                                                 "no_lru_maintainer,no_slab_automove"])
    gen = Gen(SEED)
    bgen = BinGen(SEED ^ 0xb1, gen)
    cut_rng = random.Random(SEED ^ 0x5eed)
    kind_rng = random.Random(SEED ^ 0xb2)
    bin_sessions = 0
    cas_m, cas_a = {}, {}
    requests = sessions = differ = 0
    slowest = 0.0
    t0 = time.time()
    try:
        while requests < REQUESTS:
            binary = kind_rng.random() < BINARY
            if binary:
                n, a_bytes = bgen.session()
                m_bytes = a_bytes
                bin_sessions += 1
            else:
                n, a_bytes, m_bytes = gen.session()
            requests += n
            sessions += 1
            cuts_a = cuts_m = []
            if cut_rng.random() < 0.3:
                k = cut_rng.randrange(1, 4)
                cuts_a = sorted(cut_rng.randrange(1, len(a_bytes)) for _ in range(k))
                cuts_m = sorted(cut_rng.randrange(1, len(m_bytes)) for _ in range(k))
            t_start = time.time()
            want = exchange(mport, m_bytes, cuts_m)
            got = exchange(aport, a_bytes, cuts_a)
            # A TTL is read in each server at most one session pair's
            # time apart, and was written at most one pair's time apart:
            # the two differ by at most the longest pair plus a second of
            # clock granularity (an immediate flush_all allocates a new
            # cache, which a sanitizer build under load takes seconds for).
            slowest = max(slowest, time.time() - t_start)
            ttl_slack = 1 + math.ceil(slowest)
            if binary:
                # memcached closes on unread input (a reset), admit-cached
                # reads it first (an end of stream).
                rw, tw = bin_records(want.replace(b"<RESET>", b"<EOF>"), cas_m), []
                rg, tg = bin_records(got, cas_a), []
            else:
                rw, tw = records(want, cas_m)
                rg, tg = records(got, cas_a)
            if rw == rg and len(tw) == len(tg) and all(abs(x - y) <= ttl_slack for x, y in zip(tw, tg)):
                continue
            differ += 1
            if differ <= SHOW:
                print("DIFF seed %d session %d\n  sent      %r\n  memcached %r\n  admit     %r" %
                      (SEED, sessions, a_bytes[:3000], want[:1500], got[:1500]))
    finally:
        for p in (pm, pa):
            p.terminate()
            p.wait(30)
    print("seed %d: %d requests in %d sessions (%d binary), %d sessions differ "
          "(%.1f s, slowest session pair %.2f s)" %
          (SEED, requests, sessions, bin_sessions, differ, time.time() - t0, slowest))
    sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
