#!/usr/bin/python3
"""admit_redis.so against a real server: every CF.* command, reply and
error; hostile input; growth; DEBUG RELOAD; SCANDUMP / LOADCHUNK; memory as
the server counts it (used_memory, maxmemory, unfinished loads); and the
persistence tests of test_redis_persist.py (RDB and AOF restarts, an RDB
corrupt or cut short, replicas, a cluster).  Usage: test_redis.py MODULE
[TEST...]; the server is $ADMIT_REDIS_SERVER (redis-server by default, or
Valkey's valkey-server).  Servers and helpers: redis_testlib.py."""

import sys

import redis_testlib
from redis_testlib import *  # noqa: F401,F403 (Server, check, ...)
from test_redis_persist import (test_aof_restart, test_cluster,
                                test_rdb_cut, test_rdb_restart,
                                test_replica, test_replica_diskless)


def test_commands(s):
    r = s.r
    check(r.execute_command("CF.RESERVE", "f", 1000) == b"OK", "reserve")
    check(r.execute_command("CF.ADD", "f", "a") == 1, "add")
    check(r.execute_command("CF.ADD", "f", "a") == 1, "add twice")
    check(r.execute_command("CF.COUNT", "f", "a") == 2, "count 2")
    check(r.execute_command("CF.ADDNX", "f", "a") == 0, "addnx present")
    check(r.execute_command("CF.ADDNX", "f", "b") == 1, "addnx absent")
    check(r.execute_command("CF.EXISTS", "f", "a") == 1, "exists")
    check(r.execute_command("CF.EXISTS", "f", "zz") == 0, "exists absent")
    check(r.execute_command("CF.EXISTS", "nokey", "a") == 0, "exists no key")
    check(r.execute_command("CF.MEXISTS", "f", "a", "zz", "b") == [1, 0, 1],
          "mexists")
    check(r.execute_command("CF.MEXISTS", "nokey", "a") == [0], "mexists no key")
    check(r.execute_command("CF.COUNT", "nokey", "a") == 0, "count no key")
    check(r.execute_command("CF.DEL", "f", "a") == 1, "del")
    check(r.execute_command("CF.COUNT", "f", "a") == 1, "count after del")
    check(r.execute_command("CF.DEL", "f", "a") == 1, "del 2")
    check(r.execute_command("CF.DEL", "f", "a") == 0, "del absent")
    check(r.execute_command("CF.EXISTS", "f", "a") == 0, "gone after del")
    check(r.execute_command("CF.EXISTS", "f", "b") == 1, "b kept")
    inf = info(r, "f")
    check(inf["Number of items inserted"] == 1, "info items %r" % inf)
    check(inf["Number of items deleted"] == 2, "info deleted")
    check(inf["Number of filters"] == 1, "info filters")
    check(inf["Bucket size"] == 4, "info bucket size")
    check(inf["Expansion rate"] == 2, "info expansion")
    check(inf["Capacity"] == 1000, "info capacity")
    check(inf["Max filters"] == 32, "info max filters")
    check(abs(float(inf["Error rate bound"]) - 8 / 65536) < 1e-9, "info bound")
    check(inf["Number of buckets"] * 4 * 0.95 >= 1000, "buckets")
    # Size is what the filter holds, as MEMORY USAGE says: its table and
    # the rest.
    check(inf["Size"] >= inf["Number of buckets"] * 8, "size")
    # (MEMORY USAGE adds the key's name and entry.)
    check(0 <= r.memory_usage("f") - inf["Size"] <= 256, "size is MEMORY USAGE")
    # Options, in any order and case.
    check(r.execute_command("CF.RESERVE", "g", 100, "expansion", 4,
                            "BUCKETSIZE", 3, "MaxIterations", 50) == b"OK",
          "reserve with options")
    check(info(r, "g")["Expansion rate"] == 4, "expansion kept")
    check(r.execute_command("CF.RESERVE", "g0", 100, "EXPANSION", 0) == b"OK",
          "expansion 0")
    check(info(r, "g0")["Expansion rate"] == 0, "expansion 0 reported")
    check(info(r, "g0")["Max filters"] == 1, "expansion 0: one filter")
    # Missing keys are created with RedisBloom's default capacity.
    check(r.execute_command("CF.ADD", "auto", "x") == 1, "add creates")
    check(info(r, "auto")["Capacity"] == 1024, "default capacity")
    check(r.execute_command("CF.ADDNX", "auto2", "x") == 1, "addnx creates")
    check(r.execute_command("CF.INSERT", "ins", "ITEMS", "x", "y", "x") ==
          [1, 1, 1], "insert")
    check(info(r, "ins")["Capacity"] == 1024, "insert default capacity")
    check(r.execute_command("CF.INSERTNX", "ins", "ITEMS", "x", "z", "z") ==
          [0, 1, 0], "insertnx")
    check(r.execute_command("CF.INSERT", "ins2", "CAPACITY", 5000, "ITEMS",
                            "a") == [1], "insert capacity")
    check(info(r, "ins2")["Capacity"] == 5000, "insert capacity kept")
    check(r.execute_command("CF.INSERT", "ins2", "NOCREATE", "ITEMS", "b") ==
          [1], "insert nocreate existing")
    check(r.execute_command("CF.INSERTNX", "ins2", "CAPACITY", 7, "NOCREATE",
                            "ITEMS", "b") == [0], "insertnx existing")
    check(r.type("f") == b"admit-ckf", "type name")
    check(r.memory_usage("f") >= inf["Size"], "memory usage")
    # Empty items are items.
    check(r.execute_command("CF.ADD", "f", "") == 1, "empty item")
    check(r.execute_command("CF.EXISTS", "f", "") == 1, "empty item exists")
    check(r.execute_command("CF.DEL", "f", "") == 1, "empty item del")
    # A long item.
    big = "x" * 1000000
    check(r.execute_command("CF.ADD", "f", big) == 1, "long item")
    check(r.execute_command("CF.EXISTS", "f", big) == 1, "long item exists")


def test_errors(s):
    r = s.r
    r.set("str", "v")
    r.execute_command("CF.RESERVE", "e", 100)
    r.execute_command("CF.ADD", "e", "a")
    before = (r.dbsize(), digest(r, "e"), r.get("str"))
    arity = [("CF.RESERVE",), ("CF.RESERVE", "e"), ("CF.RESERVE", "n", 10, "EXPANSION"),
             ("CF.ADD", "e"), ("CF.ADD", "e", "a", "b"), ("CF.ADDNX", "e"),
             ("CF.INSERT", "e"), ("CF.INSERT", "e", "ITEMS"),
             ("CF.INSERT", "n", "CAPACITY"), ("CF.INSERTNX", "e", "ITEMS"),
             ("CF.EXISTS", "e"), ("CF.EXISTS", "e", "a", "b"),
             ("CF.MEXISTS", "e"), ("CF.DEL", "e"), ("CF.DEL", "e", "a", "b"),
             ("CF.COUNT", "e"), ("CF.INFO",), ("CF.INFO", "e", "x"),
             ("CF.SCANDUMP", "e"), ("CF.LOADCHUNK", "e", 1)]
    for cmd in arity:
        m = error(r, *cmd)
        check("wrong number of arguments" in m, "%r: %s" % (cmd, m))
    for cmd in [("CF.RESERVE", "str", 100), ("CF.ADD", "str", "a"),
                ("CF.ADDNX", "str", "a"), ("CF.INSERT", "str", "ITEMS", "a"),
                ("CF.INSERTNX", "str", "ITEMS", "a"), ("CF.EXISTS", "str", "a"),
                ("CF.MEXISTS", "str", "a"), ("CF.DEL", "str", "a"),
                ("CF.COUNT", "str", "a"), ("CF.INFO", "str"),
                ("CF.SCANDUMP", "str", 0), ("CF.LOADCHUNK", "str", 1, "x")]:
        m = error(r, *cmd)
        check(m.startswith("WRONGTYPE"), "%r: %s" % (cmd, m))
    small = "Capacity must be at least (BucketSize * 2)"
    for cap, want in [(0, small), (-1, small), (1, small), (3, small),
                      (-2 ** 63, small), (2 ** 63, "Bad capacity"),
                      (2 ** 63 - 1, "Bad capacity"), (2 ** 64, "Bad capacity"),
                      ("abc", "Bad capacity"), ("1.5", "Bad capacity"),
                      ("", "Bad capacity")]:
        m = error(r, "CF.RESERVE", "n", cap)
        check(m == want, "capacity %r: %s" % (cap, m))
        m = error(r, "CF.INSERT", "n", "CAPACITY", cap, "ITEMS", "a")
        check(m == want, "insert capacity %r: %s" % (cap, m))
    check(r.execute_command("CF.RESERVE", "two", 2, "BUCKETSIZE", 1) == b"OK",
          "capacity 2, bucket size 1")
    check(r.execute_command("CF.RESERVE", "mi", 510, "MAXITERATIONS", 65535,
                            "BUCKETSIZE", 255, "EXPANSION", 32768)
          == b"OK", "the largest values RedisBloom takes")
    # RedisBloom's ranges and its replies, to the letter.
    ranges = {"BUCKETSIZE": (1, 255), "MAXITERATIONS": (1, 65535),
              "EXPANSION": (0, 32768)}
    for opt, bad in [("BUCKETSIZE", 0), ("BUCKETSIZE", 256), ("BUCKETSIZE", "x"),
                     ("MAXITERATIONS", 0), ("MAXITERATIONS", -5),
                     ("MAXITERATIONS", 65536),
                     ("MAXITERATIONS", 2 ** 63 - 1), ("MAXITERATIONS", "x"),
                     ("EXPANSION", -1), ("EXPANSION", 32769),
                     ("EXPANSION", 2 ** 63 - 1), ("EXPANSION", "x")]:
        m = error(r, "CF.RESERVE", "n", 1000, opt, bad)
        want = ("%s: value must be an integer between %d and %d, inclusive."
                % ((opt,) + ranges[opt]) if bad != "x"
                else "Couldn't parse " + opt)
        check(m == want, "%s %r: %s" % (opt, bad, m))
    for opt, v in [("BUCKETSIZE", 2), ("MAXITERATIONS", 20), ("EXPANSION", 2)]:
        m = error(r, "CF.RESERVE", "n", 1000, opt, v, opt.lower(), v)
        check(m == "%s given more than once" % opt,
              "repeated %s: %s" % (opt, m))
    check(error(r, "CF.RESERVE", "n", 1000, "COLOR", 1) == "syntax error",
          "unknown option")
    check(error(r, "CF.INSERT", "n", "BOGUS", "ITEMS", "a") ==
          "Unknown argument received",
          "insert unknown option")
    check(error(r, "CF.RESERVE", "e", 100) == "item exists", "reserve exists")
    check(error(r, "CF.DEL", "n", "a") == "Not found", "del no key")
    for cmd in [("CF.INFO", "n"), ("CF.SCANDUMP", "n", 0),
                ("CF.INSERT", "n", "NOCREATE", "ITEMS", "a"),
                ("CF.INSERTNX", "n", "NOCREATE", "ITEMS", "a")]:
        check(error(r, *cmd) == "not found", "%r" % (cmd,))
    for cmd in [("CF.SCANDUMP", "e", -1), ("CF.SCANDUMP", "e", "x"),
                ("CF.LOADCHUNK", "n", 0, "x"), ("CF.LOADCHUNK", "n", "x", "x")]:
        check(error(r, *cmd) == "Invalid position", "%r" % (cmd,))
    after = (r.dbsize() - 2, digest(r, "e"), r.get("str"))  # "two", "mi"
    check(after == before, "errors changed nothing: %r %r" % (before, after))
    check(not r.exists("n"), "no key made by a refused command")


REDISBLOOM_INFO = ["Size", "Number of buckets", "Number of filters",
                   "Number of items inserted", "Number of items deleted",
                   "Bucket size", "Expansion rate", "Max iterations"]


def test_redisbloom_replies(s):
    """Replies a RedisBloom client can tell apart: CF.INFO's field names and
    order, SCANDUMP of a filter that holds nothing, LOADCHUNK's errors."""
    r = s.r
    r.execute_command("CF.RESERVE", "rb", 1000)
    raw = r.execute_command("CF.INFO", "rb")
    check([f.decode() for f in raw[0:16:2]] == REDISBLOOM_INFO,
          "CF.INFO starts with RedisBloom's fields: %r" % raw[0:16:2])
    check(r.execute_command("CF.SCANDUMP", "rb", 0) == [0, None],
          "empty filter: [0, nil]")
    r.execute_command("CF.ADD", "rb", "a")
    r.execute_command("CF.DEL", "rb", "a")
    check(r.execute_command("CF.SCANDUMP", "rb", 0) == [0, None],
          "emptied filter: [0, nil]")
    r.execute_command("CF.ADD", "rb", "a")
    it, data = r.execute_command("CF.SCANDUMP", "rb", 0)
    check(r.execute_command("CF.SCANDUMP", "rb", it) == [0, None],
          "past the end: [0, nil]")
    check(error(r, "CF.LOADCHUNK", "rb", 0, data) == "Invalid position",
          "position 0")
    check(error(r, "CF.LOADCHUNK", "rb", it, data) == "item exists",
          "into a filter")
    check(error(r, "CF.LOADCHUNK", "rb2", it, data[:-1] + b"?") == BAD_CHUNK,
          "altered chunk")
    r.delete("rb")


def test_counters(s):
    """Items deleted survive a SCANDUMP / LOADCHUNK copy and DEBUG RELOAD
    (RDB and AOF restarts: test_rdb_restart, test_aof_restart)."""
    r = s.r
    r.execute_command("CF.RESERVE", "cnt", 1000)
    add_many(r, "cnt", items("cnt", 50))
    for it in items("cnt", 7):
        r.execute_command("CF.DEL", "cnt", it)
    want = info(r, "cnt")
    check(want["Number of items deleted"] == 7, "7 deleted")
    for it, data in scandump(r, "cnt"):
        r.execute_command("CF.LOADCHUNK", "cnt2", it, data)
    check(info(r, "cnt2") == want, "copy keeps every counter: %r" %
          info(r, "cnt2"))
    r.delete("cnt", "cnt2")


def test_memory():
    """INFO's used_memory grows by MEMORY USAGE (within 1 %) and comes back
    when the filter goes; maxmemory refuses what would not fit, and once
    used_memory is past it, CF.* writes get the server's own OOM error."""
    s = Server("memory", "--maxmemory", "200mb")
    r = s.r
    # The first commands make some of the server's own buffers.
    r.execute_command("CF.RESERVE", "m", 1000)
    add_many(r, "m", items("m", 10))
    r.memory_usage("m")
    used_memory(r)
    r.delete("m")
    used_memory(r)
    for cap, grow in [(10 ** 6, 0), (10 ** 7, 0), (10 ** 5, 300000)]:
        before = used_memory(r)
        r.execute_command("CF.RESERVE", "m", cap, "EXPANSION", 1)
        if grow:   # growth: more filters, added from a connection of its
            # own, closed after with the server's buffers for it
            c = redis.Redis(port=s.port)
            add_many(c, "m", items("m", grow))
            c.connection_pool.disconnect()
            wait_clients(r, 1)
        check(grow == 0 or info(r, "m")["Number of filters"] > 1, "grown")
        usage = r.memory_usage("m")
        grew = used_memory(r) - before
        # Within 1 %; after a burst of 300,000 pipelined commands the
        # server's own buffers differ by up to some 40 KB, whoever sent
        # them (each growth itself adds what MEMORY USAGE adds, exactly).
        slack = max(usage / 100, 64 << 10 if grow else 0)
        check(abs(grew - usage) <= slack,
              "capacity %d: used_memory +%d, MEMORY USAGE %d" %
              (cap, grew, usage))
        check(0 <= usage - info(r, "m")["Size"] <= 256, "CF.INFO Size")
        r.delete("m")
        check(abs(used_memory(r) - before) <= slack,
              "capacity %d: given back" % cap)
    # The rule: a filter's first table must fit in what maxmemory leaves.
    m = error(r, "CF.RESERVE", "huge", 10 ** 8)
    check(m.startswith("OOM") and "maxmemory" in m, "past maxmemory: " + m)
    m = error(r, "CF.INSERT", "huge", "CAPACITY", 10 ** 8, "ITEMS", "a")
    check(m.startswith("OOM"), "insert past maxmemory: " + m)
    check(not r.exists("huge"), "nothing made")
    # ... and in the machine's memory, with or without maxmemory.
    r.config_set("maxmemory", 0)
    m = error(r, "CF.RESERVE", "huge", 16320875721)
    check("more than this machine's memory" in m, "past the machine: " + m)
    # Past maxmemory the server itself refuses (deny-oom), as for strings.
    r.execute_command("CF.RESERVE", "f1", 10 ** 7)
    r.config_set("maxmemory", used_memory(r) - (1 << 20))
    for cmd in [("CF.RESERVE", "f2", 1000), ("CF.ADD", "f3", "a"),
                ("CF.ADD", "f1", "a"), ("CF.INSERT", "f1", "ITEMS", "a"),
                ("SET", "s", "v")]:
        m = error(r, *cmd)
        check(m.startswith("OOM command not allowed"), "%r: %s" % (cmd, m))
    check(r.execute_command("CF.EXISTS", "f1", "a") == 0, "reads still run")
    check(r.execute_command("CF.DEL", "f1", "a") == 0, "deletes still run")
    s.stop()


def test_pending_loads():
    """Unfinished LOADCHUNK loads hold their chunks in the server's memory
    until FLUSHALL / FLUSHDB or PENDING_TIMEOUT seconds without a chunk."""
    s = Server("pending", modargs=["PENDING_TIMEOUT", "3"])
    r = s.r
    r.execute_command("CF.RESERVE", "src", 10 ** 7)
    add_many(r, "src", items("src", 100))
    chunks = scandump(r, "src")
    check(len(chunks) == 2, "two chunks")
    r.delete("src")

    def load(chunk):
        # From a connection of its own, closed after: the server frees
        # its query buffer (megabytes) with it, so that r's used_memory
        # sees the load alone.
        c = redis.Redis(port=s.port)
        try:
            return c.execute_command("CF.LOADCHUNK", "dst", *chunk)
        except ResponseError as e:
            return str(e)
        finally:
            c.connection_pool.disconnect()
            wait_clients(r, 1)

    # The load's bytes are in used_memory while it waits and leave with
    # it (measured after the loading client has gone with its buffers).
    for flush in [lambda: r.flushall(), lambda: r.flushdb(),
                  lambda: time.sleep(4.5)]:
        check(load(chunks[0]) == b"OK", "first chunk")
        held = used_memory(r)
        flush()
        freed = held - used_memory(r)
        check(freed >= len(chunks[0][1]) * 0.99,
              "the chunk was counted and given back: %d" % freed)
        check(load(chunks[1]) == "not found", "the load is gone")
    # A FLUSHDB of another database leaves it.
    r.execute_command("CF.LOADCHUNK", "dst", *chunks[0])
    r2 = redis.Redis(port=s.port, db=1)
    r2.flushdb()
    check(r.execute_command("CF.LOADCHUNK", "dst", *chunks[1]) == b"OK",
          "load of db 0 kept by FLUSHDB of db 1")
    s.stop()


def test_growth(s):
    r = s.r
    for exp, minf in [(None, 5), (1, 20)]:
        key = "grow%s" % exp
        args = ["CF.RESERVE", key, 1000] + (["EXPANSION", exp] if exp else [])
        r.execute_command(*args)
        present = items(key, 20000)
        check(all(x == 1 for x in add_many(r, key, present)), "grow adds")
        check(all(exists_many(r, key, present)), "no false negative")
        absent = items("absent" + key, 100000)
        fp = sum(exists_many(r, key, absent))
        inf = info(r, key)
        bound = float(inf["Error rate bound"])
        check(inf["Number of filters"] >= minf, "filters %r" % inf)
        check(inf["Number of items inserted"] == 20000, "items")
        check(bound < 0.01, "bound below 1 %")
        # A bound on the expected rate: allow four standard deviations.
        check(fp <= bound * 1e5 + 4 * (bound * 1e5) ** 0.5,
              "fpr %g above %g" % (fp / 1e5, bound))
        print("growth: reserve 1000, EXPANSION %s, 20000 added: %d filters, "
              "false positives %d / 100000 (%.4f %%), bound %.4f %%"
              % (exp or "default(2)", inf["Number of filters"], fp,
                 fp / 1000.0, bound * 100))
    # One item again and again: refused once its buckets are full, no
    # chain of ever larger filters.
    r.execute_command("CF.RESERVE", "same", 1000)
    res = add_many(r, "same", ["x"] * 100)
    ok = sum(1 for x in res if x == 1)
    errs = [x for x in res if isinstance(x, ResponseError)]
    check(ok == 8 and len(errs) == 92 and str(errs[0]) == "Filter is full",
          "same item: %d ok" % ok)
    check(info(r, "same")["Number of filters"] == 1, "same item: no growth")
    # A one-filter chain (EXPANSION 0) fills up.
    r.execute_command("CF.RESERVE", "fixed", 100, "EXPANSION", 0)
    res = add_many(r, "fixed", items("fx", 300))
    check(any(isinstance(x, ResponseError) for x in res), "fixed fills")
    res = r.execute_command("CF.INSERT", "fixed", "ITEMS", *items("fy", 50))
    check(-1 in res, "insert into full answers -1")
    check(info(r, "fixed")["Number of filters"] == 1, "fixed stays one")


def test_reload(s):
    r = s.r
    r.execute_command("CF.RESERVE", "rl", 500, "EXPANSION", 2)
    its = items("rl", 3000)
    add_many(r, "rl", its)
    r.execute_command("CF.DEL", "rl", its[0])
    d, inf = digest(r, "rl"), info(r, "rl")
    check(r.execute_command("DEBUG", "RELOAD") == b"OK", "debug reload")
    check(digest(r, "rl") == d, "digest after reload")
    check(info(r, "rl") == inf, "info after reload")
    check(all(exists_many(r, "rl", its[1:])), "items after reload")


def test_scandump(s):
    r = s.r
    r.execute_command("CF.RESERVE", "sd", 200, "EXPANSION", 2)
    add_many(r, "sd", items("sd", 1000))
    chunks = scandump(r, "sd")
    check(len(chunks) == 1, "one chunk")
    it, data = chunks[0]
    check(it == len(data), "iterator is the end offset")
    check(data[:8] == b"ADMITCHN", "admit's format")
    check(r.execute_command("CF.LOADCHUNK", "sd2", it, data) == b"OK", "load")
    check(digest(r, "sd2") == digest(r, "sd"), "loaded equal")
    check(all(exists_many(r, "sd2", items("sd", 1000))), "loaded answers")
    # Loading over an existing filter is refused (RedisBloom's answer) and
    # changes nothing.
    r.execute_command("CF.ADD", "sd3", "other")
    keep = digest(r, "sd3")
    check(error(r, "CF.LOADCHUNK", "sd3", it, data) == "item exists",
          "no replace")
    check(digest(r, "sd3") == keep and
          r.execute_command("CF.EXISTS", "sd3", "other") == 1, "kept")
    # Every truncation, with its iterator or the truncated length: refused
    # (a chunk that continues no load, into a missing key: not found), but
    # the chain's dump without the 24-byte trailer, which is what older
    # modules wrote: a whole filter, with 0 items deleted.
    chain = len(data) - 24
    check(r.execute_command("CF.LOADCHUNK", "old", chain, data[:chain]) ==
          b"OK" and digest(r, "old") == digest(r, "sd"), "older dump")
    r.delete("old")
    for n in range(len(data)):
        for i in {it, n} - {0, chain}:
            m = error(r, "CF.LOADCHUNK", "bad", i, data[:n])
            want = BAD_CHUNK if i == n or n == 0 else "not found"
            check(m == want, "truncated %d at %d: %s" % (n, i, m))
            m = error(r, "CF.LOADCHUNK", "sd3", i, data[:n])
    # Every byte flipped (and a few bit patterns at some bytes).
    for k in range(len(data)):
        b = bytearray(data)
        b[k] ^= 0x01 if k % 3 else 0x80
        m = error(r, "CF.LOADCHUNK", "bad", it, bytes(b))
        check(m == BAD_CHUNK, "flip at %d: %s" % (k, m))
    # Foreign chunks: random bytes, another format's magic, an empty one.
    rnd = random.Random(7)
    for blob in [bytes(rnd.getrandbits(8) for _ in range(len(data))),
                 b"ADMITCKF" + data[8:], b"\x00" * 100, b"x"]:
        m = error(r, "CF.LOADCHUNK", "bad", len(blob), blob)
        check(m == BAD_CHUNK, "foreign: %s" % m)
    check(error(r, "CF.LOADCHUNK", "bad", 5, "") == BAD_CHUNK, "empty")
    check(not r.exists("bad"), "nothing half-loaded")
    check(digest(r, "sd3") == keep, "existing key untouched by refused chunks")
    check(r.ping(), "alive")


def test_scandump_chunks(s):
    """A dump of more than one 16 MiB chunk: a chunk out of order or cut
    refuses the load, in order it loads."""
    r = s.r
    r.execute_command("CF.RESERVE", "big", 10000000)
    add_many(r, "big", items("big", 2000))
    chunks = scandump(r, "big")
    check(len(chunks) == 2, "two chunks: %d" % len(chunks))
    check(error(r, "CF.LOADCHUNK", "big2", *chunks[1]) == "not found",
          "second chunk first")
    check(r.execute_command("CF.LOADCHUNK", "big2", *chunks[0]) == b"OK", "c1")
    check(not r.exists("big2"), "not visible before the last chunk")
    it, data = chunks[1]
    check(error(r, "CF.LOADCHUNK", "big2", it - 1, data[:-1]) == BAD_CHUNK,
          "cut last chunk")
    check(not r.exists("big2"), "cut last chunk: nothing loaded")
    for it, data in chunks:
        check(r.execute_command("CF.LOADCHUNK", "big2", it, data) == b"OK", "c")
    check(digest(r, "big2") == digest(r, "big"), "two-chunk load equal")


def main():
    s = Server("main")
    tests = [("commands", lambda: test_commands(s)),
             ("errors", lambda: test_errors(s)),
             ("growth", lambda: test_growth(s)),
             ("reload", lambda: test_reload(s)),
             ("scandump", lambda: test_scandump(s)),
             ("scandump-chunks", lambda: test_scandump_chunks(s)),
             ("redisbloom-replies", lambda: test_redisbloom_replies(s)),
             ("counters", lambda: test_counters(s)),
             ("memory", test_memory),
             ("pending-loads", test_pending_loads),
             ("rdb", test_rdb_restart),
             ("aof", test_aof_restart),
             ("replica", test_replica),
             ("rdb-cut", test_rdb_cut),
             ("replica-diskless", test_replica_diskless),
             ("cluster", test_cluster)]
    only = set(sys.argv[2:])
    failed = 0
    for name, fn in tests:
        if only and name not in only:
            continue
        try:
            fn()
            print("ok   %s" % name)
        except Exception as e:  # report each failure, run the rest
            failed += 1
            print("FAIL %s: %s" % (name, e))
        if s.proc.poll() is not None:
            print("FAIL: the server died\n" + s.log())
            return 1
    s.stop()
    print("%s: %d checks, %d test groups failed" % (SERVER, redis_testlib.checks,
                                                     failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
