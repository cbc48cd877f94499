#!/usr/bin/env python3
# admit-cached --state-file: items saved on SIGTERM come back at the next
# start with their flags, expiry and CAS unique (keys and values of any
# bytes, through the binary protocol too; stale and won items with their
# marks), each record holding them as gets and mg show them, and a file
# with bit 61 set in its uniques (the item header's own) loads without
# it; expired ones do not; every kind
# of bad file (empty, truncated at several offsets, a flipped byte, a
# foreign magic, another version, a count that lies, a huge length, a
# directory) is refused with one line on stderr, left in place, and the
# server starts empty; a smaller --memory keeps the hottest items; a full
# disk (a tmpfs 64 KiB larger than the old file, as root) leaves the old
# file intact and exits 1.
# The admission sketch comes back with the items (stats'
# admission_filter_load as it was, where the items alone give less), is
# skipped with one line under another --memory, and a file of format
# version 1 (items only) still loads.
# Run by make check through test_state.sh.
import ctypes
import ctypes.util
import os
import re
import signal
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_memcached import SERVER, free_port, wait_port  # noqa: E402

FAILS = []


def check(cond, what):
    if not cond:
        FAILS.append(what)
        print("FAIL", what)


class Server:
    def __init__(self, path, *extra):
        self.err = tempfile.TemporaryFile()
        for _ in range(10):
            self.port = free_port()
            self.p = subprocess.Popen(
                [SERVER, "--port", str(self.port), "--threads", "2",
                 "--state-file", path] + list(extra),
                stdout=subprocess.DEVNULL, stderr=self.err)
            if wait_port(self.port, self.p):
                return
            self.p.kill()
            self.p.wait()
        sys.exit("FAIL cannot start %s" % SERVER)

    def send(self, data):
        s = socket.create_connection(("127.0.0.1", self.port), timeout=10)
        s.sendall(data)
        s.shutdown(socket.SHUT_WR)
        out = b""
        while True:
            d = s.recv(1 << 20)
            if not d:
                break
            out += d
        s.close()
        return out

    def stop(self):
        """SIGTERM; (exit status, stderr)."""
        self.p.send_signal(signal.SIGTERM)
        rc = self.p.wait(timeout=60)
        self.err.seek(0)
        return rc, self.err.read().decode(errors="replace")

    def stderr_now(self):
        self.err.seek(0)
        return self.err.read().decode(errors="replace")


def bin_set(key, val, flags, exp):
    ext = struct.pack(">II", flags, exp)
    return struct.pack(">BBHBBHIIQ", 0x80, 0x01, len(key), len(ext), 0, 0,
                       len(key) + len(ext) + len(val), 0, 0) + ext + key + val


def bin_get(key):
    return struct.pack(">BBHBBHIIQ", 0x80, 0x00, len(key), 0, 0, 0, len(key),
                       0, 0) + key


def bin_replies(data):
    """[(status, cas, extras, value)] of a stream of binary replies."""
    out = []
    while len(data) >= 24:
        _, _, kl, el, _, status, bl, _, cas = struct.unpack(">BBHBBHIIQ",
                                                          data[:24])
        body = data[24:24 + bl]
        out.append((status, cas, body[:el], body[el + kl:]))
        data = data[24 + bl:]
    return out


TEXT = [  # key, flags, exptime (None: +1000 s as a Unix time), value
    (b"plain", 0, 0, b"hello"),
    (b"flags", 4294967295, 0, b"x"),
    (b"ttl", 7, 100, b"expires later"),
    (b"unix", 9, None, b"unix time"),
    (b"bytes", 1, 0, b"a\r\nb\x00c\xff\r\n"),
    (b"empty", 2, 0, b""),
    (b"k" * 250, 3, 0, b"longest key"),
    (b"big", 5, 0, bytes(range(256)) * 400),
]
BINARY = [b"sp ace", b"nl\nkey", b"nul\x00key", b"\xff\xfe", b"\r\n"]
# Items stale and won (md I, then mg): flags 0 and not.
META = b"ms st0 2\r\nhi\r\nms st1 2 F9\r\nhi\r\nmd st0 I q\r\nmd st1 I q\r\n" \
       b"mg st0 q\r\nmg st1 q\r\nmn\r\n"
META_KEYS = 2


def fill(srv):
    req = b""
    for k, f, e, v in TEXT:
        e = int(time.time()) + 1000 if e is None else e
        req += b"set %s %d %d %d\r\n%s\r\n" % (k, f, e, len(v), v)
    out = srv.send(req)
    check(out == b"STORED\r\n" * len(TEXT), "fill: %r" % out[:80])
    req = b"".join(bin_set(k, b"v" + k, 11, 0) for k in BINARY)
    check(all(r[0] == 0 for r in bin_replies(srv.send(req))), "binary sets")
    out = srv.send(META)
    check(out == b"HD\r\nHD\r\nHD X W\r\nHD X W\r\nMN\r\n",
          "stale and won items: %r" % out)


def snapshot(srv):
    """gets of the text keys, mg's remaining TTL of ttl and unix, the
    binary keys' (flags, cas, value), and the stale items' mg (flags, CAS
    unique, data, marks)."""
    gets = srv.send(b"gets " + b" ".join(k for k, _, _, _ in TEXT) + b"\r\n")
    ttl = srv.send(b"mg ttl t\r\nmg unix t\r\nmg plain t\r\n")
    binr = bin_replies(srv.send(b"".join(bin_get(k) for k in BINARY)))
    meta = srv.send(b"mg st0 f c v\r\nmg st1 f c v\r\n")
    return gets, ttl, binr, meta


def max_cas(gets):
    return max(int(x) for x in re.findall(rb"VALUE \S+ \d+ \d+ (\d+)", gets))


def round_trip(d):
    path = os.path.join(d, "rt.state")
    srv = Server(path)
    fill(srv)
    before = snapshot(srv)
    rc, err = srv.stop()
    n = len(TEXT) + len(BINARY) + META_KEYS
    check(rc == 0 and "saved %d items" % n in err,
          "save: rc %d, %r" % (rc, err))
    check(not os.path.exists(path + ".tmp"), "no temporary file left")
    file_records(path, before)
    srv = Server(path)
    after = snapshot(srv)
    check(after[0] == before[0], "gets after restart:\n%r\n%r" %
          (before[0][:300], after[0][:300]))
    check(after[0].count(b"VALUE") == len(TEXT), "every text key back")
    check(after[2] == before[2] and all(r[0] == 0 for r in after[2]),
          "binary keys after restart: %r" % after[2])
    check(after[3] == before[3] and after[3].count(b" Z X\r\n") == 2,
          "stale items after restart:\n%r\n%r" % (before[3], after[3]))
    ttls = [int(x) for x in re.findall(rb"t(-?\d+)", after[1])]
    check(len(ttls) == 3 and 90 <= ttls[0] <= 101 and 990 <= ttls[1] <= 1001
          and ttls[2] == -1, "TTLs after restart: %r" % after[1])
    new = srv.send(b"set fresh 0 0 1\r\nz\r\ngets fresh\r\n")
    check(max_cas(new) > max_cas(before[0]),
          "CAS counter above the loaded: %r" % new)
    rc, err = srv.stop()
    check(rc == 0 and "loaded %d of %d items" % (n, n) in err,
          "load: rc %d, %r" % (rc, err))
    return path


def records(data):
    """{key: (flags, cas, data)} of a state file's records."""
    count, off, out = struct.unpack("<Q", data[16:24])[0], 40, {}
    for _ in range(count):
        kl, vl, flags, _, cas, _ = struct.unpack("<IIIIQQ", data[off:off + 32])
        off += 32
        out[data[off:off + kl]] = (flags, cas, data[off + kl:off + kl + vl])
        off += kl + vl
    return out


def file_records(path, snap):
    """The file holds each item's flags, data and CAS unique as gets and
    mg showed them (the stale and won bits as bits 63 and 62), and nothing
    of the item header's own (bit 61)."""
    recs = records(open(path, "rb").read())
    seen = {m[0]: (int(m[1]), int(m[2])) for m in
            re.findall(rb"VALUE (\S+) (\d+) \d+ (\d+)\r\n", snap[0])}
    for k, f, _, v in TEXT:
        got = recs.get(k)
        check(got is not None and got[0] == f and got[2] == v and
              (got[0], got[1]) == seen.get(k), "file record of %r: %r, gets "
              "%r" % (k[:20], got and got[:2], seen.get(k)))
    marks = re.findall(rb"VA 2 f(\d+) c(\d+) Z X\r\nhi\r\n", snap[3])
    for k, (f, cas) in zip((b"st0", b"st1"), marks):
        check(recs.get(k) == (int(f), int(cas) | 3 << 62, b"hi"),
              "file record of %r: %r, mg f%s c%s" % (k, recs.get(k), f, cas))
    check(len(marks) == 2, "mg of the stale items: %r" % snap[3])
    check(all(not r[1] & 1 << 61 for r in recs.values()),
          "no record has bit 61: %r" % [(k, hex(r[1])) for k, r in recs.items()
                                        if r[1] & 1 << 61])


def header_bit(d, good_path):
    """A file whose records have bit 61 set in their CAS uniques (no
    server writes it; a hostile one may) loads, with each item's flags
    and data as the file says and its unique without the bit."""
    h = xxh3()
    if not h:
        print("SKIP the file with bit 61: no libxxhash")
        return
    data = bytearray(open(good_path, "rb").read())
    count, off = struct.unpack("<Q", data[16:24])[0], 40
    for _ in range(count):
        kl, vl = struct.unpack("<II", data[off:off + 8])
        cas = struct.unpack("<Q", data[off + 16:off + 24])[0]
        data[off + 16:off + 24] = struct.pack("<Q", cas | 1 << 61)
        off += 32 + kl + vl
    path = os.path.join(d, "bit61.state")
    with open(path, "wb") as f:
        f.write(fix_sum(bytes(data), h))
    srv = Server(path)
    got = srv.send(b"gets plain flags empty\r\nmg st0 f c v\r\n")
    rc, err = srv.stop()
    recs = records(open(good_path, "rb").read())
    want = b"".join(b"VALUE %s %d %d %d\r\n%s\r\n" % (k, recs[k][0], len(recs[k][2]),
                                                     recs[k][1], recs[k][2])
                    for k in (b"plain", b"flags", b"empty")) + b"END\r\n"
    want += b"VA 2 f0 c%d Z X\r\nhi\r\n" % (recs[b"st0"][1] & ~(3 << 62))
    check(got == want, "bit 61 in the file:\n%r\n%r" % (want, got))
    check(rc == 0 and "loaded %d of %d" % (count, count) in err,
          "bit 61: rc %d %r" % (rc, err))


def top_unique(d, good_path):
    """A file whose largest unique is the top of the uniques' range
    (2^61 - 1; no server gets there, a hostile file may): the next set
    gets a unique in range, which gets shows and cas accepts."""
    h = xxh3()
    if not h:
        print("SKIP the file at the top unique: no libxxhash")
        return
    data = bytearray(open(good_path, "rb").read())
    data[40 + 16:40 + 24] = struct.pack("<Q", (1 << 61) - 1)
    path = os.path.join(d, "top.state")
    with open(path, "wb") as f:
        f.write(fix_sum(bytes(data), h))
    srv = Server(path)
    got = srv.send(b"set next 5 0 2\r\nhi\r\ngets next\r\n")
    m = re.search(rb"VALUE next 5 2 (\d+)\r\nhi\r\nEND\r\n$", got)
    unique = int(m.group(1)) if m else 0
    got2 = srv.send(b"cas next 0 0 2 %d\r\nho\r\nget next\r\n" % unique)
    srv.stop()
    check(m and 0 < unique < 1 << 61, "the unique after the top: %r" % got)
    check(got2 == b"STORED\r\nVALUE next 0 2\r\nho\r\nEND\r\n",
          "cas with the unique after the top: %r" % got2)


def expired(d):
    path = os.path.join(d, "exp.state")
    srv = Server(path)
    srv.send(b"set short 0 1 1\r\na\r\nset long 0 1000 1\r\nb\r\n")
    srv.stop()
    time.sleep(2.2)
    srv = Server(path)
    out = srv.send(b"get short long\r\n")
    rc, err = srv.stop()
    check(out == b"VALUE long 0 1\r\nb\r\nEND\r\n", "expired dropped: %r" % out)
    check("1 expired" in err, "expired counted: %r" % err)
    return path


def xxh3():
    """libxxhash's XXH3_64bits, or None."""
    name = ctypes.util.find_library("xxhash")
    for n in ([name] if name else []) + ["libxxhash.so.0", "libxxhash.so"]:
        try:
            lib = ctypes.CDLL(n)
            f = lib.XXH3_64bits
            f.restype = ctypes.c_uint64
            f.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
            return f
        except (OSError, AttributeError):
            continue
    return None


def fix_sum(data, h):
    """The file with its trailer recomputed (state.h's checksum)."""
    body = data[40:-8] + data[:40]
    return data[:-8] + struct.pack("<Q", h(body, len(body)))


def bad_files(good, h):
    """(name, bytes, reason the server must give or None)."""
    n = len(good)
    out = [("empty", b"", "empty file"),
           ("foreign", b"GIF89a" + good[6:], "not an admit-cached state file"),
           ("version", good[:8] + b"\x03" + good[9:], "unknown format version"),
           ("flipped", good[:n // 2] + bytes([good[n // 2] ^ 1]) +
            good[n // 2 + 1:], "checksum mismatch")]
    for cut in (4, 39, 40, 47, 48, 100, n // 2, n - 9, n - 1):
        out.append(("truncated at %d" % cut, good[:cut], None))
    if h:
        count = struct.unpack("<Q", good[16:24])[0]
        for name, data, why in [
                ("count lies up", good[:16] + struct.pack("<Q", count + 1) +
                 good[24:], "item count"),
                ("count lies down", good[:16] + struct.pack("<Q", count - 1) +
                 good[24:], "item count"),
                ("count huge", good[:16] + struct.pack("<Q", 2 ** 64 - 1) +
                 good[24:], "item count"),
                ("huge data length", good[:44] + b"\xff\xff\xff\xff" +
                 good[48:], "record longer than the file"),
                ("huge key length", good[:40] + b"\xff\xff\xff\x7f" +
                 good[44:], "bad key length"),
                ("zero key length", good[:40] + b"\0\0\0\0" + good[44:],
                 "bad key length"),
                ("bad shard", good[:52] + b"\xff\xff\xff\xff" + good[56:],
                 "bad shard index"),
                ("huge sketch length", good[:-16] + b"\xff" * 8 + good[-8:],
                 "sketch section longer"),
                ("no sketch length", good[:40] + good[-8:],
                 "truncated sketch section")]:
            out.append((name, fix_sum(data, h), why))
    else:
        print("SKIP the cases with a valid checksum: no libxxhash")
    return out


def corrupt(d, good_path):
    good = open(good_path, "rb").read()
    path = os.path.join(d, "bad.state")
    for name, data, why in bad_files(good, xxh3()):
        with open(path, "wb") as f:
            f.write(data)
        srv = Server(path)
        out = srv.send(b"get plain\r\n")
        running = srv.stderr_now()
        kept = open(path, "rb").read() == data
        rc, err = srv.stop()
        lines = [l for l in running.splitlines() if "refused" in l]
        check(out == b"END\r\n", "%s: starts empty: %r" % (name, out))
        check(len(lines) == 1 and path in lines[0], "%s: one line: %r" %
              (name, running))
        check(why is None or (lines and why in lines[0]),
              "%s: reason %r in %r" % (name, why, lines))
        check(kept, "%s: the bad file is left in place" % name)
        check(rc == 0, "%s: exit %d" % (name, rc))
    os.unlink(path)
    os.mkdir(path)
    srv = Server(path)
    rc, err = srv.stop()
    check("refused" in err and "cannot save" in err and rc == 1,
          "a directory: %r" % err)


def smaller(d):
    path = os.path.join(d, "small.state")
    srv = Server(path, "--memory", "16", "--max-item", "1024",
                 "--no-admission")
    val = b"v" * 1000
    for i in range(0, 6000, 500):
        srv.send(b"".join(b"set k%d 0 0 1000 noreply\r\n%s\r\n" % (j, val)
                          for j in range(i, i + 500)))
    out = srv.send(b"get " + b" ".join(b"k%d" % j for j in range(6000)) +
                   b"\r\n")
    saved = out.count(b"VALUE")
    srv.stop()
    srv = Server(path, "--memory", "4", "--max-item", "1024")
    cold = srv.send(b"get " + b" ".join(b"k%d" % j for j in range(1000)) +
                    b"\r\n").count(b"VALUE")
    hot = srv.send(b"get " + b" ".join(b"k%d" % j for j in range(5700, 6000))
                   + b"\r\n").count(b"VALUE")
    rc, err = srv.stop()
    check(rc == 0 and "coldest beyond --memory" in err, "smaller: rc %d %r" %
          (rc, err))
    print("smaller --memory: %d saved; back: %d of the 1000 coldest, %d of "
          "the 300 hottest" % (saved, cold, hot))
    check(saved == 6000, "all 6000 fit in 16 MiB: %d" % saved)
    check(hot == 300 and cold == 0, "the hottest fit: %d hot, %d cold" %
          (hot, cold))


def filter_load(srv):
    m = re.search(rb"STAT admission_filter_load (\S+)", srv.send(b"stats\r\n"))
    return m.group(1).decode() if m else None


def items_only(data, h):
    """A version 2 file made a version 1 file: the sketch section cut."""
    slen = struct.unpack("<Q", data[-16:-8])[0]
    v1 = data[:8] + struct.pack("<I", 1) + data[12:-16 - slen] + data[-8:]
    return fix_sum(v1, h)


def sketch(d):
    path = os.path.join(d, "sketch.state")
    small = ("--memory", "1", "--max-item", "1024")
    srv = Server(path, *small)
    val = b"v" * 100
    for r in range(3):
        for i in range(0, 30000, 1000):
            srv.send(b"".join(b"set s%d 0 0 100 noreply\r\n%s\r\n" % (j, val)
                              for j in range(i, i + 1000 if r == 0 else
                                             i + 100)))
    before = filter_load(srv)
    srv.stop()
    saved = open(path, "rb").read()
    srv = Server(path, *small)
    back = filter_load(srv)
    rc, err = srv.stop()
    check(rc == 0 and "and the admission sketch" in err,
          "sketch loaded: rc %d %r" % (rc, err))
    check(back == before and float(before) > 0,
          "admission_filter_load back: %s, was %s" % (back, before))
    h = xxh3()
    if h:
        with open(path, "wb") as f:
            f.write(items_only(saved, h))
        srv = Server(path, *small)
        alone = filter_load(srv)
        rc, err = srv.stop()
        check(rc == 0 and re.search(r"loaded [1-9]\d* of", err) and
              "admission sketch" not in err, "version 1: rc %d %r" % (rc, err))
        check(float(alone) < float(before), "items alone: %s, the sketch "
              "had %s" % (alone, before))
        print("admission_filter_load: %s before, %s with the sketch, %s "
              "with the items alone" % (before, back, alone))
    else:
        print("SKIP the version 1 file: no libxxhash")
    with open(path, "wb") as f:
        f.write(saved)
    srv = Server(path, "--memory", "3", "--max-item", "1024")
    rc, err = srv.stop()
    lines = [l for l in err.splitlines() if "admission sketch" in l]
    check(rc == 0 and re.search(r"loaded [1-9]\d* of", err) and
          len(lines) == 1 and "skipped" in lines[0] and
          "another --memory" in lines[0], "another --memory: %r" % err)


def full_disk(d, good_path):
    mnt = os.path.join(d, "tiny")
    os.mkdir(mnt)
    # Room for the old file (its sketch included) and 64 KiB more.
    size = (os.path.getsize(good_path) + 4095) // 4096 * 4 + 64
    if os.geteuid() != 0 or subprocess.call(
            ["mount", "-t", "tmpfs", "-o", "size=%dk" % size, "tmpfs", mnt],
            stderr=subprocess.DEVNULL) != 0:
        print("SKIP full disk: cannot mount a small tmpfs")
        return
    try:
        path = os.path.join(mnt, "full.state")
        shutil.copyfile(good_path, path)
        old = open(path, "rb").read()
        srv = Server(path)
        srv.send(b"".join(b"set f%d 0 0 1000 noreply\r\n%s\r\n" % (i, b"x" *
                 1000) for i in range(200)))
        rc, err = srv.stop()
        check(rc == 1 and "cannot save" in err, "full disk: rc %d %r" %
              (rc, err))
        check(open(path, "rb").read() == old, "full disk: old file intact")
        check(os.listdir(mnt) == ["full.state"], "full disk: no temporary "
              "file: %r" % os.listdir(mnt))
    finally:
        subprocess.call(["umount", mnt])


def main():
    if not os.access(SERVER, os.X_OK):
        sys.exit("FAIL %s not built" % SERVER)
    with tempfile.TemporaryDirectory() as d:
        good = round_trip(d)
        header_bit(d, good)
        top_unique(d, good)
        small = expired(d)
        corrupt(d, good)
        smaller(d)
        sketch(d)
        full_disk(d, small)
    if FAILS:
        sys.exit("FAIL %d checks" % len(FAILS))
    print("PASS")


main()
