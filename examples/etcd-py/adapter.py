#!/usr/bin/python3
"""lockjepsen exec adapter (docs/protocol.md, version 1): python-etcd3's Lock,
driven as shipped, on --topology etcd (LOCKJEPSEN_ETCD_ENDPOINTS).

    lockjepsen client-test --topology etcd examples/etcd-py/adapter.py
    lockjepsen run --topology etcd --scenario etcd-leader-failover --recipe exec:examples/etcd-py/adapter.py

Debian's python3-etcd3 (0.12.0) is all it needs. What its Lock does, read from
its code: an acquire grants a lease of the TTL (whole seconds) and, in one
transaction, puts /locks/NAME with the lock's value on that lease if the key
was never created; refresh() keeps the lease alive for its TTL again (it cannot
change it); release() deletes the key if it still holds the lock's value. Its
value is set to the token lockjepsen sends, so that the key holds it. The
fence is the key's create revision, read back after the grant.

The client (python-etcd3 0.12 has no multi-endpoint client) talks to one member;
a request that cannot reach it moves the next request to the next member, and a
grant's Lock and lease are moved there with it. A small thread pool serves the requests.
"""
import json
import math
import os
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

import etcd3
from etcd3 import exceptions

op_timeout = int(os.environ.get("LOCKJEPSEN_OP_TIMEOUT_MS", "1000")) / 1000
endpoints = [a for a in os.environ.get("LOCKJEPSEN_ETCD_ENDPOINTS", "").split(",") if a]
out = threading.Lock()
mu = threading.Lock()
state = {"at": 0, "client": None}
locks = {}  # token -> the Lock object of its grant


def client():
    with mu:
        if state["client"] is None:
            host, port = endpoints[state["at"] % len(endpoints)].rsplit(":", 1)
            state["client"] = etcd3.client(host=host, port=int(port), timeout=op_timeout)
        return state["client"]


def next_member(c):
    """After a failure to reach a member: the next request goes to the next."""
    with mu:
        if state["client"] is c:
            state["at"] += 1
            state["client"] = None


def acquire(key, token, ttl_ms):
    c = client()
    lk = etcd3.Lock(key, ttl=max(1, math.ceil(ttl_ms / 1000)), etcd_client=c)
    lk.uuid = token.encode()  # the value the key holds: the grant's token
    if not lk.acquire(timeout=0):
        return {"type": "fail", "error": "txn create(/locks/key) == 0 failed: held by another client"}
    locks[token] = lk
    value, meta = c.get(lk.key)
    if value != lk.uuid:
        # Granted, then lost before the read: the lease ran out already.
        return {"type": "info", "error": "granted, but %s no longer holds the token when read back" % lk.key}
    return {"type": "ok", "fence": meta.create_revision}


def bind(lk):
    """A Lock and its lease keep the client they were made with: after that
    member went away (the leader killed), they are moved to the member the
    adapter talks to now. Without this every later extend of the grant failed
    to connect (seen in CI when the killed leader was that member)."""
    c = client()
    lk.etcd_client = c
    if lk.lease is not None:
        lk.lease.etcd_client = c


def extend(key, token, ttl_ms):
    lk = locks.get(token)
    if lk is None:
        return {"type": "fail", "error": "no grant of this token here", "not_held": True}
    bind(lk)
    replies = lk.refresh()
    ttl = replies[0].TTL if replies else 0
    if ttl <= 0:
        # The lease is gone (expired or revoked): etcd deleted the key with it.
        return {"type": "fail", "error": "the lease has expired", "not_held": True}
    if not lk.is_acquired():
        return {"type": "fail", "error": "the key no longer holds this token", "not_held": True}
    # The lease is renewed to the TTL it was granted with, whatever ttl_ms asks.
    return {"type": "ok", "validity_ms": ttl * 1000}


def release(key, token):
    lk = locks.get(token)
    if lk is not None:
        bind(lk)
    if lk is None or not lk.release():
        return {"type": "fail", "error": "txn value(/locks/key) == token failed: not this token's lock", "not_held": True}
    locks.pop(token, None)
    return {"type": "ok"}


def serve(req):
    op, key, token = req["op"], req.get("key"), req.get("token")
    ttl_ms = req.get("ttl_ms", 5000)
    if op == "init":  # sent once: answer when ready
        if not endpoints:
            return {"type": "fail", "error": "LOCKJEPSEN_ETCD_ENDPOINTS is not set: run with --topology etcd"}
        # Ready when any member answers: the first may be the one a fault
        # has paused (seen in CI, a client started late under load met
        # etcd-pause-leader, and its init timed out on that member alone).
        for _ in endpoints:
            c = client()
            try:
                c.status()
                return {"type": "ok"}
            except (exceptions.ConnectionFailedError, exceptions.ConnectionTimeoutError) as e:
                next_member(c)
                last = e
        return {"type": "fail", "error": "no etcd member answered: %s" % last}
    if op == "acquire":
        return acquire(key, token, ttl_ms)
    if op == "extend":
        return extend(key, token, ttl_ms)
    if op == "release":
        return release(key, token)
    return {"type": "fail", "error": "unknown op " + op}


def answer(req):
    c = state["client"]
    try:
        rep = serve(req)
    except exceptions.ConnectionFailedError as e:
        # The member could not be reached: nothing was applied by it, but a
        # request it had already taken may have been; unknown.
        next_member(c)
        rep = {"type": "info", "error": "ConnectionFailedError: %s" % e}
    except exceptions.ConnectionTimeoutError as e:
        next_member(c)
        rep = {"type": "info", "error": "ConnectionTimeoutError: %s" % e}
    except Exception as e:  # anything else: the outcome is not known
        rep = {"type": "info", "error": "%s: %s" % (type(e).__name__, e)}
    rep["id"] = req["id"]
    line = json.dumps(rep) + "\n"
    with out:
        sys.stdout.write(line)
        sys.stdout.flush()


def main():
    with ThreadPoolExecutor(max_workers=4) as pool:
        for line in sys.stdin:
            if line.strip():
                pool.submit(answer, json.loads(line))


if __name__ == "__main__":
    main()
