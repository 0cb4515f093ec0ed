#!/usr/bin/python3
"""lockjepsen exec adapter (docs/protocol.md, version 1): kazoo's Lock, the
ZooKeeper lock recipe of ZooKeeper's most used Python client, driven unchanged
(client.Lock(path, identifier), acquire, release) on a ZooKeeper ensemble.

    lockjepsen client-test --topology zookeeper examples/kazoo/adapter.py
    lockjepsen run --topology zookeeper --scenario baseline --recipe exec:examples/kazoo/adapter.py

Debian's python3-kazoo (2.8.0) is enough: apt-get install python3-kazoo.

kazoo's lock has no TTL: the lease is the session, one per program, whose
timeout is LOCKJEPSEN_TTL_MS (kazoo's heartbeats keep it while the process
runs). So, as lockjepsen's own zk-lock recipe does:
  - acquire: Lock.acquire(blocking=False) under the key's znode
    /lockjepsen/<key>; the fence is the lock znode's czxid.
  - extend: a write on the lock znode (its own data again): ok proves the
    znode, hence the session, alive at the leader; it cannot lengthen the
    session, so a ttl_ms beyond the session timeout is refused.
  - a lost session: kazoo's Lock still calls itself acquired, and its
    release swallows the missing znode and says True. The adapter counts
    the LOST states kazoo reports (the docs' advice) and answers
    not_held for a grant of an earlier session.
Requests are served by a small thread pool; answers are matched by id.
"""
import json
import os
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

from kazoo.client import KazooClient
from kazoo.exceptions import (KazooException, NoNodeError,
                              SessionExpiredError, ZookeeperError)
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.protocol.states import KazooState

op_timeout = int(os.environ.get("LOCKJEPSEN_OP_TIMEOUT_MS", "1000")) / 1000
# The session never shorter than the TTL the history records, nor below the
# servers' minimum of two ticks (lock.ZKSessionTimeout).
session_s = max(int(os.environ.get("LOCKJEPSEN_TTL_MS", "5000")), 400) / 1000
servers = os.environ.get("LOCKJEPSEN_ZK_SERVERS", "")
# kazoo's calls retry on a lost connection; a deadline inside the operation's
# timeout leaves room to answer before lockjepsen gives up on it.
budget = op_timeout * 0.6
# No servers (not --topology zookeeper): no client; init says so.
zk = servers and KazooClient(
    hosts=servers, timeout=session_s,
    # Reconnect at once and keep trying: the session may still be alive.
    connection_retry=dict(max_tries=-1, delay=0.05, max_delay=0.5),
    # Lock.release's retry: bounded, and a session expiry is an answer.
    command_retry=dict(max_tries=-1, delay=0.05, max_delay=0.2, deadline=budget, ignore_expire=False))
out = threading.Lock()
mu = threading.Lock()
epoch = 0      # LOST states seen: a session expiry took every grant with it
grants = {}    # token -> (kazoo Lock, epoch of its session)
orphans = {}   # lock path -> grants whose release lost its answer
acquiring = {}  # token -> Event set once its acquire has returned


def on_state(state):
    global epoch
    if state == KazooState.LOST:
        with mu:
            epoch += 1


def lock_path(key):
    return "/lockjepsen/" + key.replace("/", "_")


def fail(error, not_held=False):
    rep = {"type": "fail", "error": error}
    if not_held:
        rep["not_held"] = True
    return rep


def info(error):
    return {"type": "info", "error": error}


def mine(lk):
    """Our znode among the lock's children, and whether it is the lowest."""
    kids = zk.get_children_async(lk.path).get(timeout=budget)
    ours = [k for k in kids if k.startswith(lk.prefix)]
    seqs = sorted(k[-10:] for k in kids)
    return (ours[0], ours[0][-10:] == seqs[0]) if ours else (None, False)


def free(lk):
    """Give a grant's znode back; the answer for its release."""
    if lk.is_acquired:
        lk.release()
        return {"type": "ok"}
    # An acquire whose outcome was lost: kazoo's Lock does not know its
    # znode, which may hold the lock or queue for it.
    node, lowest = mine(lk)
    if node is None:
        return fail("no znode of this grant under " + lk.path, not_held=True)
    zk.delete_async(lk.path + "/" + node).get(timeout=budget)
    if lowest:
        return {"type": "ok"}
    return fail("deleted %s, a waiter's znode: it never held the lock" % node, not_held=True)


def reap(path):
    """Retry the releases under path that lost their answer: such a znode
    would hold or queue for the lock as long as the session lives."""
    with mu:
        pending, cur = orphans.pop(path, []), epoch
    for lk, ep in pending:
        if ep != cur:
            continue  # the session went, and the znode with it
        try:
            free(lk)
        except (KazooException, KazooTimeoutError):
            with mu:
                orphans.setdefault(path, []).append((lk, ep))


def acquire(key, token, ttl_ms):
    done = threading.Event()
    with mu:
        acquiring[token] = done
    try:
        return take(key, token, ttl_ms)
    finally:
        with mu:
            acquiring.pop(token, None)
        done.set()


def take(key, token, ttl_ms):
    if ttl_ms > session_s * 1000:
        return fail("ttl_ms %d: the lease is the session, %d ms" % (ttl_ms, session_s * 1000))
    path = lock_path(key)
    reap(path)
    lk = zk.Lock(path, identifier=token)
    try:
        got = lk.acquire(blocking=False, timeout=budget)
    except (KazooException, KazooTimeoutError) as e:
        got = e
    with mu:
        # Kept for the release, with the session of now: a znode this
        # grant made in an earlier session (kazoo retries across a LOST)
        # went with that session.
        grants[token] = (lk, epoch)
    if isinstance(got, Exception):
        return info("Lock.acquire: %s: %s" % (type(got).__name__, got))
    if not got:
        # False is both "held by another" and "kazoo's retries ran out";
        # only a znode of ours verifiably gone makes it a refusal.
        node, _ = mine(lk)
        if node is not None:
            return info("Lock.acquire gave up and left %s behind" % node)
        with mu:
            del grants[token]
        return fail("held by another session")
    st = zk.exists_async(lk.path + "/" + lk.node).get(timeout=budget)
    if st is None:
        return info("granted, then %s was gone before its czxid was read" % lk.node)
    return {"type": "ok", "fence": st.czxid}


def held(token):
    """The grant of token if its session lives, else the answer why not."""
    with mu:
        g, cur = grants.get(token), epoch
    if g is None:
        return None, fail("no grant of this token", not_held=True)
    if g[1] != cur:
        return None, fail("the session of this grant expired, and its znode with it", not_held=True)
    return g[0], None


def extend(token, ttl_ms):
    lk, why = held(token)
    if why:
        return why
    if not lk.is_acquired:
        return fail("this grant's acquire did not end ok", not_held=True)
    if ttl_ms > session_s * 1000:
        return fail("ttl_ms %d: the lease is the session, %d ms" % (ttl_ms, session_s * 1000))
    zk.set_async(lk.path + "/" + lk.node, lk.data).get(timeout=budget)
    return {"type": "ok"}


def release(token):
    with mu:
        running = acquiring.get(token)
    if running is not None:
        # lockjepsen gave up on this token's acquire and releases it, but
        # the acquire still runs: kazoo's calls have no deadline and wait
        # through a reconnect (seen under zk-pause-leader: a delete answered
        # 2.5 s after its request). Answered now, "no grant" would leave a
        # znode the acquire makes later to hold the lock for the session's
        # life (20 s of a 25 s run). The release waits for the acquire's
        # outcome and gives back whatever it took.
        running.wait()
    lk, why = held(token)
    with mu:
        grants.pop(token, None)
    if why:
        return why
    try:
        return free(lk)
    except (ZookeeperError, KazooException, KazooTimeoutError):
        with mu:
            orphans.setdefault(lk.path, []).append((lk, epoch))
        raise


def serve(req):
    op = req["op"]
    if op == "init":  # sent once, before any operation
        if req.get("protocol") != 1:
            return fail("protocol %s: this adapter speaks 1" % req.get("protocol"))
        if not servers:
            return fail("LOCKJEPSEN_ZK_SERVERS is not set: run with --topology zookeeper")
        return {"type": "ok"}
    if op == "acquire":
        return acquire(req["key"], req["token"], req.get("ttl_ms", session_s * 1000))
    if op == "extend":
        return extend(req["token"], req.get("ttl_ms", session_s * 1000))
    if op == "release":
        return release(req["token"])
    return fail("unknown op " + op)


def answer(req):
    try:
        rep = serve(req)
    except (NoNodeError, SessionExpiredError) as e:  # the znode went with its session
        rep = fail("%s: the session expired and its znode went with it" % type(e).__name__, not_held=True)
    except (KazooTimeoutError, KazooException) as e:
        # A lost connection, a request unanswered by the deadline: it may
        # have taken effect.
        rep = info("%s: %s" % (type(e).__name__, e))
    rep["id"] = req["id"]
    line = json.dumps(rep) + "\n"
    with out:
        sys.stdout.write(line)
        sys.stdout.flush()


def main():
    if zk:
        zk.add_listener(on_state)
        zk.start(timeout=15)
    try:
        with ThreadPoolExecutor(max_workers=8) as pool:
            for line in sys.stdin:
                if line.strip():
                    pool.submit(answer, json.loads(line))
    finally:
        if zk:
            zk.stop()  # ends the session: its znodes go at once
            zk.close()


if __name__ == "__main__":
    main()
