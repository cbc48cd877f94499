#!/usr/bin/env python3
# admit-cached --state-file at scale: fills N items (default 1 M) of
# 100-byte values (half with an expiry an hour away, flags varying), reads
# every item's flags and CAS unique, stops the server with SIGTERM, starts
# it again on the same file, reads them all again and prints the save and
# load times (as the server reports them), the file's size and how many
# items came back with the same flags and CAS unique.  By hand, not in
# make check: bench_state.sh [N]; KEEP_DIR=dir keeps the state file there.
# bench_state.sh zipf: a Zipf workload (1 M keys, s = 0.99, 100-byte
# values, get then set on a miss) through a 32 MiB cache: the hit ratio of
# the 300,000 requests before a restart, and of the 300,000 after it with
# --state-file and without (a cache that starts empty, as memcached
# without -e does).
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time

BUILD = os.environ.get("top_builddir", ".")
SERVER = os.path.join(BUILD, "programs", "cached", "admit-cached")
ZIPF = len(sys.argv) > 1 and sys.argv[1] == "zipf"
N = int(sys.argv[1]) if len(sys.argv) > 1 and not ZIPF else 1000000
BATCH = 2000
VALUE = b"v" * 100


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def start(path, err, memory=1024):
    port = free_port()
    state = ["--state-file", path] if path else []
    p = subprocess.Popen([SERVER, "--port", str(port), "--memory",
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


def main():
    if not os.access(SERVER, os.X_OK):
        sys.exit("%s not built" % SERVER)
    with tempfile.TemporaryDirectory() as d:
        d = os.environ.get("KEEP_DIR", d)
        path = os.path.join(d, "bench.state")
        err = tempfile.TemporaryFile()
        p, s = start(path, err)
        t = time.time()
        fill(s)
        before = read_all(s)
        fill_s = time.time() - t
        s.close()
        log = stop(p, err)
        save = re.search(r"saved (\d+) items .* in ([\d.]+) s", log)
        size = os.path.getsize(path)
        err = tempfile.TemporaryFile()
        p, s = start(path, err)
        after = read_all(s)
        s.close()
        log2 = stop(p, err)
        load = re.search(r"loaded (\d+) of (\d+) items .* in ([\d.]+) s", log2)
    same = sum(1 for k, v in before.items() if after.get(k) == v)
    print("items set %d, present before %d (fill and read %.1f s)" %
          (N, len(before), fill_s))
    print("save: %s items in %s s, file %.1f MB" %
          (save.group(1), save.group(2), size / 1e6) if save else
          "save: no line: %r" % log)
    print("load: %s of %s items in %s s" % load.groups() if load else
          "load: no line: %r" % log2)
    print("back with the same flags and CAS: %d of %d (%.3f %%)" %
          (same, len(before), 100.0 * same / max(1, len(before))))


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


def zipf_main():
    import random
    rng = random.Random(1)
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "zipf.state")
        err = tempfile.TemporaryFile()
        p, s = start(path, err, 32)
        replay(s, zipf_keys(2000000, rng))
        before = replay(s, zipf_keys(300000, rng))
        s.close()
        stop(p, err)
        after_keys = zipf_keys(300000, rng)
        results = []
        for state in (path, None):
            err = tempfile.TemporaryFile()
            p, s = start(state, err, 32)
            results.append(replay(s, list(after_keys)))
            s.close()
            stop(p, err)
            if state:
                os.unlink(path)  # the cold run must not save over it
    print("hit ratio before the restart %.2f %%; after it with --state-file "
          "%.2f %%, starting empty %.2f %%" % (before, results[0], results[1]))


if ZIPF:
    zipf_main()
else:
    main()
