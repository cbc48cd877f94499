#!/usr/bin/env python3
# admit-cached --state-file at scale: fills N items (default 1 M) of
# 100-byte values (half with an expiry an hour away, flags varying), reads
# every item's flags and CAS unique, stops the server with SIGTERM, starts
# it again on the same file, reads them all again and prints the save and
# load times (as the server reports them), the file's size and how many
# items came back with the same flags and CAS unique.  By hand, not in
# make check: bench_state.sh [N]; KEEP_DIR=dir keeps the state file there.
# BASELINE=path/to/another/admit-cached alternates it with the built one
# for ROUNDS rounds (default 3) and prints each one's medians: the saves
# with and without the admission sketch, against a build whose file has
# none.
# bench_state.sh zipf: a Zipf workload (1 M keys, s = 0.99, 100-byte
# values, get then set on a miss) through a 32 MiB cache: the hit ratio of
# the 300,000 requests before a restart, and of the 300,000 after it with
# --state-file (the items and the admission sketch), with the same file
# cut to its items (format version 1: no sketch; needs libxxhash), and
# without (a cache that starts empty, as memcached without -e does); the
# three restarts alternate for ROUNDS rounds (default 3), medians printed.
import ctypes
import ctypes.util
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import statistics
import struct
import time

BUILD = os.environ.get("top_builddir", ".")
SERVER = os.path.join(BUILD, "programs", "cached", "admit-cached")
ZIPF = len(sys.argv) > 1 and sys.argv[1] == "zipf"
N = int(sys.argv[1]) if len(sys.argv) > 1 and not ZIPF else 1000000
ROUNDS = int(os.environ.get("ROUNDS", "3"))
BATCH = 2000
VALUE = b"v" * 100


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def start(path, err, memory=1024, server=SERVER):
    port = free_port()
    state = ["--state-file", path] if path else []
    p = subprocess.Popen([server, "--port", str(port), "--memory",
                          str(memory)] + state, stdout=subprocess.DEVNULL,
                         stderr=err)
    for _ in range(600):
        try:
            s = socket.create_connection(("127.0.0.1", port))
        except OSError:
            time.sleep(0.05)
            continue
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return p, s
    sys.exit("cannot start %s" % SERVER)


def recv_until(s, end, buf):
    while not buf.endswith(end):
        d = s.recv(1 << 20)
        if not d:
            sys.exit("server closed")
        buf += d
    return buf


def fill(s):
    for i in range(0, N, BATCH):
        req = b"".join(b"set key:%d %d %d 100 noreply\r\n%s\r\n" %
                       (k, k % 65536, 3600 if k % 2 else 0, VALUE)
                       for k in range(i, min(i + BATCH, N)))
        s.sendall(req)
    s.sendall(b"mn\r\n")
    recv_until(s, b"MN\r\n", b"")


def read_all(s):
    """{key: (flags, cas)} of every item present."""
    out = {}
    for i in range(0, N, BATCH):
        s.sendall(b"gets " + b" ".join(b"key:%d" % k for k in
                                       range(i, min(i + BATCH, N))) + b"\r\n")
        buf = recv_until(s, b"END\r\n", b"")
        for m in re.finditer(rb"VALUE (\S+) (\d+) 100 (\d+)\r\n", buf):
            out[m.group(1)] = (int(m.group(2)), int(m.group(3)))
    return out


def stop(p, err):
    p.send_signal(signal.SIGTERM)
    p.wait()
    err.seek(0)
    return err.read().decode()


def one_round(server):
    """(save s, load s, file MB, items back the same, items before)."""
    with tempfile.TemporaryDirectory() as d:
        d = os.environ.get("KEEP_DIR", d)
        path = os.path.join(d, "bench.state")
        err = tempfile.TemporaryFile()
        p, s = start(path, err, server=server)
        fill(s)
        before = read_all(s)
        s.close()
        log = stop(p, err)
        save = re.search(r"saved (\d+) items .* in ([\d.]+) s", log)
        size = os.path.getsize(path)
        err = tempfile.TemporaryFile()
        p, s = start(path, err, server=server)
        after = read_all(s)
        s.close()
        log2 = stop(p, err)
        load = re.search(r"loaded (\d+) of (\d+) items .* in ([\d.]+) s", log2)
    if not save or not load:
        sys.exit("no save or load line: %r %r" % (log, log2))
    same = sum(1 for k, v in before.items() if after.get(k) == v)
    return (float(save.group(2)), float(load.group(3)), size / 1e6, same,
            len(before))


def main():
    servers = [("built", SERVER)]
    if os.environ.get("BASELINE"):
        servers.append(("baseline", os.environ["BASELINE"]))
    for _, srv in servers:
        if not os.access(srv, os.X_OK):
            sys.exit("%s not built" % srv)
    res = {name: [] for name, _ in servers}
    for r in range(ROUNDS if len(servers) > 1 else 1):
        for name, srv in (servers if r % 2 == 0 else servers[::-1]):
            res[name].append(one_round(srv))
            print("round %d %s: save %.3f s, load %.3f s, file %.1f MB, "
                  "back %d of %d" % ((r, name) + res[name][-1]), flush=True)
    for name, _ in servers:
        v = res[name]
        print("%s: %d items of 100 bytes, median save %.3f s, load %.3f s, "
              "file %.1f MB; back with the same flags and CAS: %d of %d" %
              (name, N, statistics.median(x[0] for x in v),
               statistics.median(x[1] for x in v), v[0][2],
               min(x[3] for x in v), v[0][4]))


def zipf_keys(n, rng):
    """n keys drawn from 1 M keys with Zipf s = 0.99."""
    if not hasattr(zipf_keys, "cdf"):
        acc, cdf = 0.0, []
        for r in range(1, 1000001):
            acc += 1.0 / r ** 0.99
            cdf.append(acc)
        zipf_keys.cdf = cdf
    return rng.choices(range(1000000), cum_weights=zipf_keys.cdf, k=n)


def replay(s, keys):
    """Hit ratio of get-then-set-on-miss over keys."""
    hits = 0
    for i in range(0, len(keys), 500):
        batch = keys[i:i + 500]
        s.sendall(b"".join(b"get z:%d\r\n" % k for k in batch))
        buf = b""
        while buf.count(b"END\r\n") < len(batch):
            buf += s.recv(1 << 20)
        found = set(int(m) for m in re.findall(rb"VALUE z:(\d+) ", buf))
        hits += sum(1 for k in batch if k in found)
        miss = [k for k in batch if k not in found]
        s.sendall(b"".join(b"set z:%d 0 0 100 noreply\r\n%s\r\n" %
                           (k, VALUE) for k in miss))
    return 100.0 * hits / len(keys)


def xxh3():
    """libxxhash's XXH3_64bits, or None."""
    name = ctypes.util.find_library("xxhash")
    for n in ([name] if name else []) + ["libxxhash.so.0", "libxxhash.so"]:
        try:
            f = ctypes.CDLL(n).XXH3_64bits
            f.restype = ctypes.c_uint64
            f.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
            return f
        except (OSError, AttributeError):
            continue
    return None


def items_only(data, h):
    """A state file of format version 2 cut to version 1: no sketch, the
    checksum (programs/cached/state.h) recomputed."""
    slen = struct.unpack("<Q", data[-16:-8])[0]
    v1 = data[:8] + struct.pack("<I", 1) + data[12:-16 - slen]
    body = v1[40:] + v1[:40]
    return v1 + struct.pack("<Q", h(body, len(body)))


def restarted(d, saved, kind, keys):
    """Hit ratio of keys after a start on saved (kind: sketch, items, or
    empty)."""
    path = os.path.join(d, "restart.state")
    if kind != "empty":
        with open(path, "wb") as f:
            f.write(saved if kind == "sketch" else items_only(saved, xxh3()))
    err = tempfile.TemporaryFile()
    p, s = start(path if kind != "empty" else None, err, 32)
    hr = replay(s, list(keys))
    s.close()
    stop(p, err)
    if os.path.exists(path):
        os.unlink(path)
    return hr


def zipf_main():
    import random
    rng = random.Random(1)
    kinds = ["sketch", "items", "empty"] if xxh3() else ["sketch", "empty"]
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "zipf.state")
        err = tempfile.TemporaryFile()
        p, s = start(path, err, 32)
        replay(s, zipf_keys(2000000, rng))
        before = replay(s, zipf_keys(300000, rng))
        s.close()
        stop(p, err)
        saved = open(path, "rb").read()
        after_keys = zipf_keys(300000, rng)
        res = {k: [] for k in kinds}
        for r in range(ROUNDS):
            for k in (kinds if r % 2 == 0 else kinds[::-1]):
                res[k].append(restarted(d, saved, k, after_keys))
            print("round %d: %s" % (r, ", ".join(
                "%s %.2f %%" % (k, res[k][-1]) for k in kinds)), flush=True)
    med = {k: statistics.median(v) for k, v in res.items()}
    print("hit ratio before the restart %.2f %%; after it (medians of %d) "
          "with --state-file %.2f %%, with its items alone %s, starting "
          "empty %.2f %%" % (before, ROUNDS, med["sketch"],
                             "%.2f %%" % med["items"] if "items" in med
                             else "(no libxxhash)", med["empty"]))


if ZIPF:
    zipf_main()
else:
    main()
