#!/usr/bin/python3
"""lockjepsen exec adapter (docs/protocol.md, version 1): redis-py's Lock, with
its own Lua scripts, against Valkey through Sentinel, one server, or a Valkey
Cluster (redis-py's RedisCluster, which finds the slots and follows MOVED/ASK).

    lockjepsen client-test examples/redis-py/adapter.py
    lockjepsen run --scenario failover-race --recipe exec:examples/redis-py/adapter.py --fence none
    lockjepsen run --topology cluster --scenario baseline --recipe exec:examples/redis-py/adapter.py --fence none

Debian's python3-redis (4.3.4) is enough: apt-get install python3-redis.
Requests are served by a small thread pool, so an extend never waits behind a
slow acquire; answers are matched by id. It takes the "drop_reply" field (the
reply is read, then lost with its connection); not "cancel": a thread cannot
be cancelled mid-call (examples/redis-py-asyncio can). Logs go to stderr.

Option (through --exec-arg): --lock-objects keeps each grant's Lock object
from its acquire to its release and extends and releases through it, as an
application does (by default each request builds a Lock from the request's
token). With it, redis-py before PR #4258 forgets the token of a release that
failed to reach the server (results/findings/009).
"""
import json
import os
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

import redis
from redis.exceptions import (ConnectionError, LockError, LockNotOwnedError,
                              RedisError, ResponseError, TimeoutError)
from redis.lock import Lock
from redis.sentinel import Sentinel

op_timeout = int(os.environ.get("LOCKJEPSEN_OP_TIMEOUT_MS", "1000")) / 1000
objects = "--lock-objects" in sys.argv[1:]
# No retries: a retried SET NX after a lost reply would hide an unknown outcome.
if os.environ.get("LOCKJEPSEN_CLUSTER_NODES"):
    # Valkey Cluster: the nodes are seeds. RedisCluster is driven as shipped:
    # cluster_error_retry_attempts=1 is one attempt, but 4.3.4 still retries a
    # connection error or timeout on the same node up to four times inside one
    # attempt (_execute_command), so an outcome the history calls unknown may
    # have been sent again (docs/protocol.md, "On Valkey Cluster").
    from redis.cluster import ClusterNode, RedisCluster
    seeds = [ClusterNode(a.rsplit(":", 1)[0], int(a.rsplit(":", 1)[1]))
             for a in os.environ["LOCKJEPSEN_CLUSTER_NODES"].split(",")]
    valkey = RedisCluster(startup_nodes=seeds, socket_timeout=op_timeout,
                          socket_connect_timeout=op_timeout, retry_on_timeout=False,
                          cluster_error_retry_attempts=1)
elif os.environ.get("LOCKJEPSEN_ADDR"):
    # One server named directly (--topology standalone: its service address).
    host, port = os.environ["LOCKJEPSEN_ADDR"].rsplit(":", 1)
    valkey = redis.Redis(host=host, port=int(port), socket_timeout=op_timeout,
                         socket_connect_timeout=op_timeout, retry_on_timeout=False)
else:
    sentinels = [(a.rsplit(":", 1)[0], int(a.rsplit(":", 1)[1]))
                 for a in os.environ["LOCKJEPSEN_SENTINELS"].split(",")]
    valkey = Sentinel(sentinels, socket_timeout=op_timeout).master_for(
        os.environ["LOCKJEPSEN_MASTER_SET"], socket_timeout=op_timeout,
        socket_connect_timeout=op_timeout, retry_on_timeout=False)
out = threading.Lock()

# drop_reply: the serving thread carries a one-shot flag; the first reply of
# one of its lock commands is read (the command ran) and then lost with its
# connection. A library's own commands (discovery, handshake) are let through.
dropping = threading.local()
_parse = redis.Redis.parse_response
_own = ("SENTINEL", "PING", "CLIENT", "HELLO", "AUTH", "SELECT", "ROLE", "INFO", "ASKING", "READONLY")


def parse_response(self, connection, command_name, **options):
    try:
        reply = _parse(self, connection, command_name, **options)
    except ConnectionError:
        dropping.broke = True
        raise
    if getattr(dropping, "armed", False) and not str(command_name).upper().startswith(_own):
        dropping.armed, dropping.broke = False, True
        connection.disconnect()
        raise ConnectionError("the reply was lost with its connection (drop_reply)")
    return reply


redis.Redis.parse_response = parse_response


grants = {}  # --lock-objects: token -> the Lock object that acquired it


def lock(key, ttl_ms, token=None):
    if objects and token in grants:
        return grants[token]
    # thread_local=False: the grant is extended and released from other threads.
    lk = Lock(valkey, key, timeout=ttl_ms / 1000, thread_local=False)
    if token is not None:
        lk.local.token = token.encode()  # a grant made by an earlier request
    return lk


def serve(req):
    op, key, token = req["op"], req.get("key"), req.get("token")
    ttl_ms = req.get("ttl_ms", 1000)
    if op == "init":  # sent once, before any operation: answer when ready
        return {"type": "ok", "drop_reply": True}
    dropping.armed, dropping.broke = bool(req.get("drop_reply")), False
    if op == "acquire":
        lk = lock(key, ttl_ms)
        if lk.acquire(blocking=False, token=token):
            if objects:
                grants[token] = lk
            return {"type": "ok"}
        return {"type": "fail", "error": "SET NX PX: held by another client"}
    if op == "extend":
        lock(key, ttl_ms, token).extend(ttl_ms / 1000, replace_ttl=True)
        return {"type": "ok"}
    if op == "release":
        lock(key, ttl_ms, token).release()
        grants.pop(token, None)
        return {"type": "ok"}
    return {"type": "fail", "error": "unknown op " + op}


def answer(req):
    try:
        rep = serve(req)
    except LockNotOwnedError as e:
        if getattr(dropping, "broke", False):
            # RedisCluster sends a command again on a lost connection: the
            # retried script found nothing, perhaps because the first try,
            # its reply lost, did the work. Unknown, not "not held".
            rep = {"type": "info", "error": "%s, after a lost connection and a retry" % e}
        else:  # the script returned 0: not this token's lock
            rep = {"type": "fail", "error": str(e), "not_held": True}
    except LockError as e:
        # Raised before any command: the Lock object holds no token ("Cannot
        # release an unlocked lock"). The library tells its caller the lock
        # is not its own, and an application stops there.
        rep = {"type": "fail", "error": "LockError: %s" % e, "not_held": True}
    except ResponseError as e:  # an error reply (READONLY, NOSCRIPT...): nothing done
        rep = {"type": "fail", "error": str(e)}
    except TimeoutError as e:  # sent, no reply: unknown
        rep = {"type": "info", "error": "timeout: %s" % e}
    except ConnectionError as e:
        # A failed connect (or no primary known) sent nothing; a connection
        # lost mid-command may have run it.
        nothing_sent = "connecting to" in str(e) or "master" in str(e).lower()
        rep = {"type": "fail" if nothing_sent else "info", "error": str(e)}
    except RedisError as e:
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
