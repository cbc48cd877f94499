"""What the module's test suites share (test_redis.py,
test_redis_persist.py): servers on free loopback ports, each in its own
temporary directory and stopped (by its own pid) when the suite ends,
whatever happens; checks that count; helpers over CF.* commands.  The
module is argv[1]; the server $ADMIT_REDIS_SERVER (redis-server by
default, or Valkey's valkey-server)."""

import atexit
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time

import redis
from redis.exceptions import ResponseError

MODULE = os.path.abspath(sys.argv[1])
SERVER = os.environ.get("ADMIT_REDIS_SERVER", "redis-server")
PROCS = []
TOP = tempfile.mkdtemp(prefix="admit_redis_test.")


def cleanup():
    for p in PROCS:
        if p.poll() is None:
            p.terminate()
            try:
                p.wait(5)
            except subprocess.TimeoutExpired:
                p.kill()
    shutil.rmtree(TOP, ignore_errors=True)


atexit.register(cleanup)


def bindable(port):
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", port))
        return True
    except OSError:
        return False
    finally:
        s.close()


def free_port():
    # A port the kernel just gave out and we released: free unless raced.
    # The cluster bus needs port + 10000 too, which lies in the ephemeral
    # range: any connection on the machine may hold it.
    while True:
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()
        if port + 10000 < 65536 and bindable(port + 10000):
            return port


class Server:
    def __init__(self, name, *extra, port=None, directory=None, modargs=()):
        self.dir = directory or os.path.join(TOP, name)
        os.makedirs(self.dir, exist_ok=True)
        self.port = port or free_port()
        self.extra = list(extra)
        self.modargs = list(modargs)
        # A port of our choosing taken between the check and the server's
        # bind (its own or the cluster bus's): another one.
        for _ in range(5 if port is None else 0):
            try:
                self.start()
                return
            except AssertionError:
                if "Failed listening on port" not in self.log():
                    raise
                self.port = free_port()
        self.start()

    def start(self, expect_fail=False):
        args = [SERVER, "--port", str(self.port), "--bind", "127.0.0.1",
                "--dir", self.dir, "--save", "", "--appendonly", "no",
                "--enable-debug-command", "yes", "--loglevel", "notice",
                "--logfile", os.path.join(self.dir, "log"),
                "--loadmodule", MODULE] + self.modargs + self.extra
        # stdout: redis-check-rdb's report when a load fails, too long.
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL)
        PROCS.append(self.proc)
        self.r = redis.Redis(port=self.port, socket_timeout=5)
        for _ in range(200):
            if self.proc.poll() is not None:
                if expect_fail:
                    return False
                raise AssertionError("redis-server exited: " + self.log())
            try:
                if self.r.ping():
                    if expect_fail:
                        raise AssertionError("server started, expected not")
                    return True
            except redis.ConnectionError:
                time.sleep(0.05)
        raise AssertionError("redis-server did not answer")

    def stop(self, save=False):
        try:
            self.r.shutdown(save=save, nosave=not save)
        except redis.ConnectionError:
            pass
        self.proc.wait(10)

    def log(self):
        try:
            with open(os.path.join(self.dir, "log")) as f:
                return f.read()[-2000:]
        except OSError:
            return ""


checks = 0


def check(cond, what):
    global checks
    checks += 1
    if not cond:
        raise AssertionError(what)


def error(r, *cmd):
    """The error message of a command that must fail."""
    try:
        got = r.execute_command(*cmd)
    except ResponseError as e:
        return str(e)
    raise AssertionError("%r answered %r, expected an error" % (cmd, got))


BAD_CHUNK = "Couldn't load chunk!"


def digest(r, key):
    return r.execute_command("DEBUG", "DIGEST-VALUE", key)[0]


def items(prefix, n):
    return ["%s:%d" % (prefix, i) for i in range(n)]


def add_many(r, key, its, cmd="CF.ADD"):
    p = r.pipeline(transaction=False)
    for it in its:
        p.execute_command(cmd, key, it)
    return p.execute(raise_on_error=False)


def exists_many(r, key, its):
    out = []
    for i in range(0, len(its), 1000):
        out += r.execute_command("CF.MEXISTS", key, *its[i:i + 1000])
    return out


def info(r, key):
    raw = r.execute_command("CF.INFO", key)
    return {raw[i].decode() if isinstance(raw[i], bytes) else raw[i]: raw[i + 1]
            for i in range(0, len(raw), 2)}


def scandump(r, key):
    chunks, it = [], 0
    while True:
        it, data = r.execute_command("CF.SCANDUMP", key, it)
        if it == 0:
            return chunks
        chunks.append((it, data))


def wait_clients(r, n):
    for _ in range(200):
        if r.info("clients")["connected_clients"] == n:
            return
        time.sleep(0.01)
    raise AssertionError("clients stay connected")


def used_memory(r):
    return r.info("memory")["used_memory"]


def wait_sync(master, replica):
    for _ in range(400):
        mo = master.info("replication")["master_repl_offset"]
        ri = replica.info("replication")
        if ri.get("master_link_status") == "up" and \
                ri.get("slave_repl_offset") == mo:
            return
        time.sleep(0.05)
    raise AssertionError("replica did not catch up")
