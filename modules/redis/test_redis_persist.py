"""admit_redis.so's persistence against a real server: RDB restarts, an
RDB corrupt or cut short, AOF restarts, a replica (diskless too) and a
three-node cluster.  Run by test_redis.py, which names the tests."""

import os
import subprocess
import time

import redis

from redis_testlib import *  # noqa: F401,F403 (Server, check, ...)


def test_rdb_restart():
    s = Server("rdb")
    r = s.r
    r.execute_command("CF.RESERVE", "p", 300)
    its = items("p", 2000)
    add_many(r, "p", its)
    r.execute_command("CF.DEL", "p", its[0])
    d, inf = digest(r, "p"), info(r, "p")
    s.stop(save=True)
    s.start()
    check(digest(s.r, "p") == d, "digest after RDB restart")
    check(info(s.r, "p") == inf, "counters after RDB restart")
    check(all(exists_many(s.r, "p", its[1:])), "items after RDB restart")
    s.stop()

    # A corrupt RDB fails loudly: written without Redis's own checksum, so
    # that only admit's can catch the flipped byte.
    s = Server("rdbbad", "--rdbchecksum", "no", "--rdbcompression", "no")
    s.r.execute_command("CF.RESERVE", "p", 5000)
    add_many(s.r, "p", items("p", 100))
    s.stop(save=True)
    path = os.path.join(s.dir, "dump.rdb")
    with open(path, "rb") as f:
        raw = bytearray(f.read())
    at = raw.find(b"ADMITCKF")
    check(at > 0, "filter in the RDB")
    raw[at + 2000] ^= 0x40  # inside the table
    with open(path, "wb") as f:
        f.write(raw)
    check(s.start(expect_fail=True) is False, "corrupt RDB refused")
    check("admit: a filter in the RDB is" in s.log(), "loud: " + s.log())



def test_rdb_cut():
    """An RDB cut short inside a filter is refused as one cut inside a
    string is: the server logs the short read and exits 1, where a module
    that cannot handle I/O errors makes it abort (exit 134)."""
    s = Server("rdbcut", "--rdbcompression", "no")
    s.r.set("str", "v" * 3000)
    s.r.execute_command("CF.RESERVE", "p", 5000)
    add_many(s.r, "p", items("p", 100))
    s.stop(save=True)
    path = os.path.join(s.dir, "dump.rdb")
    with open(path, "rb") as f:
        raw = f.read()
    at, sat = raw.find(b"ADMITCKF"), raw.find(b"v" * 3000)
    check(at > 0 and sat > 0, "filter and string in the RDB")
    # In the string, then in the filter's deleted count, its dump's
    # length, header, table and trailer.
    cuts = [sat + 1500, at - 9, at - 2, at + 5, at + 100, at + 2000,
            len(raw) - 12]
    for cut in cuts:
        with open(path, "wb") as f:
            f.write(raw[:cut])
        check(s.start(expect_fail=True) is False, "cut at %d refused" % cut)
        log = s.log()
        check(s.proc.returncode == 1 and "Guru Meditation" not in log,
              "cut at %d of %d: exit %s: %s" % (cut, len(raw),
                                                s.proc.returncode, log))
        os.unlink(os.path.join(s.dir, "log"))


def test_replica_diskless():
    """A replica loads the master's RDB straight from the socket: with
    repl-diskless-load on-empty-db, which the server allows only when every
    module type handles I/O errors, and with swapdb (a replica that holds
    data serves it while the new data loads aside), which also asks every
    module to declare that it handles that async loading."""
    m = Server("dlmaster", "--repl-diskless-sync", "yes",
               "--repl-diskless-sync-delay", "0")
    m.r.execute_command("CF.RESERVE", "dl", 500)
    add_many(m.r, "dl", items("dl", 1000))
    for mode in ["on-empty-db", "swapdb"]:
        rs = Server("dlreplica-" + mode, "--repl-diskless-load", mode)
        rs.r.execute_command("CF.RESERVE", "mine", 100)
        if mode == "on-empty-db":
            rs.r.flushall()
        rs.r.execute_command("REPLICAOF", "127.0.0.1", str(m.port))
        wait_sync(m.r, rs.r)
        log = rs.log()
        check("Loading DB in memory" in log and
              "Skipping diskless-load" not in log,
              mode + " diskless load: " +
              "".join(l for l in log.splitlines(True) if "disk" in l))
        check(digest(rs.r, "dl") == digest(m.r, "dl"),
              mode + " diskless replica digest")
        check(not rs.r.exists("mine"), mode + ": the replica's own data gone")
        rs.stop()
    m.stop()


def test_aof_restart():
    s = Server("aof", "--appendonly", "yes", "--aof-use-rdb-preamble", "no",
               "--appendfsync", "always")
    r = s.r
    r.execute_command("CF.RESERVE", "a", 300, "EXPANSION", 3)
    its = items("a", 1500)
    add_many(r, "a", its[:1000])
    r.execute_command("CF.DEL", "a", its[1])    # before the rewrite
    r.execute_command("BGREWRITEAOF")
    for _ in range(200):
        if r.info("persistence")["aof_rewrite_in_progress"] == 0 and \
                r.info("persistence")["aof_rewrite_scheduled"] == 0:
            break
        time.sleep(0.05)
    add_many(r, "a", its[1000:])
    r.execute_command("CF.DEL", "a", its[0])
    d, inf = digest(r, "a"), info(r, "a")
    check(inf["Number of items deleted"] == 2, "2 deleted")
    aofdir = os.path.join(s.dir, "appendonlydir")
    base = [f for f in os.listdir(aofdir) if ".base." in f]
    check(base, "a base AOF")
    with open(os.path.join(aofdir, base[0]), "rb") as f:
        check(b"CF.LOADCHUNK" in f.read(), "rewrite emits CF.LOADCHUNK")
    s.stop()
    s.start()
    check(digest(s.r, "a") == d, "digest after AOF restart")
    check(info(s.r, "a") == inf, "counters after AOF restart")
    check(all(exists_many(s.r, "a", its[2:])), "items after AOF restart")
    s.stop()


def test_replica():
    m = Server("master")
    m.r.execute_command("CF.RESERVE", "rep", 500)
    its = items("rep", 3000)
    add_many(m.r, "rep", its[:1000])        # before: the full sync's RDB
    rs = Server("replica", "--replicaof", "127.0.0.1", str(m.port))
    wait_sync(m.r, rs.r)
    add_many(m.r, "rep", its[1000:])        # after: the command stream
    add_many(m.r, "rep2", its[:100], "CF.ADDNX")   # created by ADDNX
    m.r.execute_command("CF.INSERT", "rep3", "CAPACITY", 50, "ITEMS", *its[:200])
    m.r.execute_command("CF.DEL", "rep", its[5])
    chunk = scandump(m.r, "rep3")[0]
    m.r.execute_command("CF.LOADCHUNK", "rep4", *chunk)
    # A two-chunk load whose first chunk the replica never saw (it was
    # sent before the replica existed): the last chunk carries them all.
    m.r.execute_command("CF.RESERVE", "big", 10000000)
    add_many(m.r, "big", its[:100])
    chunks = scandump(m.r, "big")
    m.r.delete("big")
    rs.stop()
    m.r.execute_command("CF.LOADCHUNK", "big5", *chunks[0])
    rs.start()
    wait_sync(m.r, rs.r)
    check(m.r.execute_command("CF.LOADCHUNK", "big5", *chunks[1]) == b"OK",
          "second chunk")
    wait_sync(m.r, rs.r)
    for k in ["rep", "rep2", "rep3", "rep4", "big5"]:
        check(digest(rs.r, k) == digest(m.r, k), "replica digest " + k)
    check(info(rs.r, "rep") == info(m.r, "rep"), "replica info")
    check(rs.r.execute_command("CF.EXISTS", "rep", its[2999]) == 1, "replica")
    check("read only" in error(rs.r, "CF.ADD", "rep", "x"), "replica read-only")
    rs.stop()
    m.stop()


def test_cluster():
    from redis.cluster import RedisCluster
    nodes = []
    for i in range(3):
        nodes.append(Server("node%d" % i, "--cluster-enabled", "yes",
                            "--cluster-config-file", "nodes.conf",
                            "--cluster-node-timeout", "5000"))
    # Slots split in three ranges, then the nodes introduced to each other.
    ranges = [(0, 5460), (5461, 10922), (10923, 16383)]
    for n, (a, b) in zip(nodes, ranges):
        n.r.execute_command("CLUSTER", "ADDSLOTSRANGE", a, b)
    for n in nodes[1:]:
        nodes[0].r.execute_command("CLUSTER", "MEET", "127.0.0.1", n.port)
    for _ in range(400):
        if all(n.r.execute_command("CLUSTER", "INFO").decode().find(
                "cluster_state:ok") >= 0 for n in nodes):
            break
        time.sleep(0.05)
    else:
        raise AssertionError("cluster did not form")
    rc = RedisCluster(host="127.0.0.1", port=nodes[0].port)
    # One key in each node's slots.
    keys, want = [], {0, 1, 2}
    for i in range(1000):
        k = "cf%d" % i
        slot = rc.keyslot(k)
        owner = 0 if slot <= 5460 else 1 if slot <= 10922 else 2
        if owner in want:
            want.discard(owner)
            keys.append((k, owner))
    check(len(keys) == 3, "keys in three nodes")
    for k, owner in keys:
        check(rc.execute_command("CF.RESERVE", k, 1000) == b"OK", "c reserve")
        for it in items(k, 300):
            rc.execute_command("CF.ADD", k, it)
        check(rc.execute_command("CF.ADDNX", k, "cf0:0") in (0, 1), "addnx")
        check(all(rc.execute_command("CF.EXISTS", k, it) == 1
                  for it in items(k, 300)), "cluster exists")
        check(rc.execute_command("CF.MEXISTS", k, "zz", items(k, 1)[0]) ==
              [0, 1], "cluster mexists")
        # The filter lives on the node that owns its slot.
        slot = rc.keyslot(k)
        check([n.r.execute_command("CLUSTER", "COUNTKEYSINSLOT", slot)
               for n in nodes] == [int(i == owner) for i in range(3)],
              "on its node only")
    rc.close()
    for n in nodes:
        n.stop()
