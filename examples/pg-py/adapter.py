#!/usr/bin/python3
"""lockjepsen exec adapter (docs/protocol.md, version 1): PostgreSQL's session
advisory lock through psycopg2, on --topology postgres (LOCKJEPSEN_PG_DSN).

    lockjepsen client-test --topology postgres examples/pg-py/adapter.py
    lockjepsen run --topology postgres --scenario pg-terminated-holder --recipe exec:examples/pg-py/adapter.py

Debian's python3-psycopg2 (2.9.5) is all it needs. The lock is what an
application writes by hand: SELECT pg_try_advisory_lock(k) in autocommit, the
key k a bigint hash of the lock's name, pg_advisory_unlock(k) to let go.

Each grant holds its own session, taken from a small pool of idle ones. A
session lock is reentrant: a second pg_try_advisory_lock of a key from the
session that holds it succeeds, so one session shared by two callers (two
threads of one process, one pooled connection) hands both the lock.
client-test's "refuse a held key" is that mistake's test.

No TTL reaches the server: a grant lasts until its release or its session's
end. An extend asks the grant's session whether it still holds the key
(pg_locks), so a session ended under it (an administrator's
pg_terminate_backend, a failover, idle_session_timeout) is noticed at the next
extend and answered not_held. Behind PgBouncer in transaction pooling mode
each statement may run on another server session, so the lock is taken and
asked after on sessions that are not the grant's: run client-test with
--pooler transaction to see it refused.

The fence is nextval('lockjepsen_fence') drawn in the granting statement.
"""
import json
import os
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

import psycopg2

dsn = os.environ.get("LOCKJEPSEN_PG_DSN", "")
out = threading.Lock()
mu = threading.Lock()
idle = []  # sessions holding nothing, ready for the next grant
grants = {}  # token -> (session, key)

# Key K's lock is the advisory lock on FNV-1a 64 of K shifted right by 2 (a
# non-negative bigint), the convention client-test reads pg_locks by.
FNV_OFFSET, FNV_PRIME = 0xCBF29CE484222325, 0x100000001B3


def advisory_key(key):
    h = FNV_OFFSET
    for b in key.encode():
        h = ((h ^ b) * FNV_PRIME) & 0xFFFFFFFFFFFFFFFF
    return h >> 2


HELD = """SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted
    AND pid = pg_backend_pid() AND objsubid = 1
    AND classid = (%(k)s::bigint >> 32)::oid AND objid = (%(k)s::bigint & 4294967295)::oid)"""


def session():
    with mu:
        if idle:
            return idle.pop()
    s = psycopg2.connect(dsn)
    s.autocommit = True
    return s


def give_back(s):
    with mu:
        idle.append(s)


def acquire(key, token):
    s = session()
    try:
        with s.cursor() as c:
            c.execute("SELECT CASE WHEN pg_try_advisory_lock(%s) THEN nextval('lockjepsen_fence') END", (advisory_key(key),))
            fence = c.fetchone()[0]
    except Exception:
        s.close()  # its outcome is unknown: the session goes, and a lock it took with it
        raise
    if fence is None:
        give_back(s)
        return {"type": "fail", "error": "pg_try_advisory_lock returned false: another session holds it"}
    with mu:
        grants[token] = (s, key)
    return {"type": "ok", "fence": fence}


def lost(token, why):
    with mu:
        g = grants.pop(token, None)
    if g is not None:
        g[0].close()
    return {"type": "fail", "error": why, "not_held": True}


def extend(key, token):
    with mu:
        g = grants.get(token)
    if g is None or g[1] != key:
        return {"type": "fail", "error": "no grant of this token here", "not_held": True}
    try:
        with g[0].cursor() as c:
            c.execute(HELD, {"k": advisory_key(key)})
            held = c.fetchone()[0]
    except psycopg2.Error as e:
        # The grant's session is gone, and its lock with it: the program
        # never uses that session again.
        return lost(token, "the grant's session ended: %s" % str(e).strip())
    if not held:
        return lost(token, "the grant's session no longer holds the key (pg_locks)")
    return {"type": "ok"}


def release(key, token):
    with mu:
        g = grants.get(token)
        if g is None or g[1] != key:
            return {"type": "fail", "error": "no grant of this token here", "not_held": True}
        del grants[token]
    s = g[0]
    try:
        with s.cursor() as c:
            c.execute("SELECT pg_advisory_unlock(%s)", (advisory_key(key),))
            freed = c.fetchone()[0]
    except Exception:
        s.close()  # closing ends the session and any lock it still held; when is unknown
        raise
    give_back(s)
    if not freed:
        return {"type": "fail", "error": "pg_advisory_unlock returned false: the session did not hold it", "not_held": True}
    return {"type": "ok"}


def serve(req):
    op, key, token = req["op"], req.get("key"), req.get("token")
    if op == "init":  # sent once: answer when ready
        if not dsn:
            return {"type": "fail", "error": "LOCKJEPSEN_PG_DSN is not set: run with --topology postgres"}
        give_back(session())
        return {"type": "ok"}
    if op == "acquire":
        return acquire(key, token)
    if op == "extend":
        return extend(key, token)
    if op == "release":
        return release(key, token)
    return {"type": "fail", "error": "unknown op " + op}


def answer(req):
    try:
        rep = serve(req)
    except Exception as e:  # the server may or may not have acted: unknown
        rep = {"type": "info", "error": "%s: %s" % (type(e).__name__, str(e).strip())}
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
