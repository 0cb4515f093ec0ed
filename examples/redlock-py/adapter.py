#!/usr/bin/python3
"""lockjepsen exec adapter (docs/protocol.md, version 1): Redlock as the
distlock page ("Distributed Locks with Redis") describes it, in Python over
redis-py, on --topology redlock's N independent primaries
(LOCKJEPSEN_REDLOCK_NODES).

    lockjepsen client-test --topology redlock examples/redlock-py/adapter.py
    lockjepsen run --topology redlock --scenario baseline --recipe exec:examples/redlock-py/adapter.py --fence none
    lockjepsen run --scenario redlock-restart-race --recipe exec:examples/redlock-py/adapter.py --fence none

The algorithm, step by step as the page gives it:
  1. note the time;
  2. SET key token NX PX ttl on every node in turn, each with a timeout small
     against the TTL (here max(50 ms, TTL/100), as the built-in redlock recipe);
  3. the lock is taken when a majority said OK and the validity, the TTL less
     the time spent and the clock drift (TTL * 0.01 + 2 ms), is still positive;
     the validity goes back to lockjepsen as validity_ms;
  4. otherwise every node is unlocked, even those that seemed not to answer.
An extend is the same round with a compare-and-PEXPIRE script, a release one
with a compare-and-DEL script. Redlock draws no fencing token: run --fence none.

Debian's python3-redis (4.3.4) is all it needs. A small thread pool serves the
requests, so an extend never waits behind a slow acquire.
"""
import json
import os
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import redis
from redis.exceptions import ConnectionError, RedisError, ResponseError, TimeoutError

DRIFT = 0.01  # the distlock page's clock drift factor
EXTEND = """if redis.call('get', KEYS[1]) == ARGV[1] then
  return redis.call('pexpire', KEYS[1], ARGV[2]) else return 0 end"""
RELEASE = """if redis.call('get', KEYS[1]) == ARGV[1] then
  return redis.call('del', KEYS[1]) else return 0 end"""

# What a node's answer proves: the command ran (DONE), it certainly did not
# (REFUSED: nil, 0, an error reply, no connection), or either (UNKNOWN: sent,
# no reply in time).
DONE, REFUSED, UNKNOWN = "done", "refused", "unknown"

addrs = [a for a in os.environ.get("LOCKJEPSEN_REDLOCK_NODES", "").split(",") if a]
# --net-proxy: each primary is dialed through the proxy the map names.
dial = dict(p.split("=", 1) for p in os.environ.get("LOCKJEPSEN_DIAL_MAP", "").split(",") if "=" in p)
ttl_default = int(os.environ.get("LOCKJEPSEN_TTL_MS", "10000"))
per_node = max(0.05, ttl_default / 100 / 1000)


def client(addr):
    host, port = dial.get(addr, addr).rsplit(":", 1)
    # No retries: a retried SET NX after a lost reply would hide an unknown outcome.
    return redis.Redis(host=host, port=int(port), socket_timeout=per_node,
                       socket_connect_timeout=per_node, retry_on_timeout=False)


nodes = [client(a) for a in addrs]
# The nodes lockjepsen's partial partition cuts off from this client (the
# "unreachable" request): nothing is sent to them, as the built-in recipe.
cut = set()
quorum = len(nodes) // 2 + 1
scripts = [(n.register_script(EXTEND), n.register_script(RELEASE)) for n in nodes]
out = threading.Lock()


def ask(call):
    """One node's answer: (DONE | REFUSED | UNKNOWN, what it said)."""
    try:
        r = call()
    except ResponseError as e:  # an error reply: the node did nothing
        return REFUSED, str(e)
    except TimeoutError as e:
        return UNKNOWN, "timeout: %s" % e
    except ConnectionError as e:
        # A failed connect sent nothing; a connection lost mid-command may have run it.
        return (REFUSED if "connecting to" in str(e) else UNKNOWN), str(e)
    except RedisError as e:
        return UNKNOWN, "%s: %s" % (type(e).__name__, e)
    return (DONE if r not in (None, 0, False) else REFUSED), r


def count(answers, kind):
    return sum(1 for k, _ in answers if k == kind)


def validity_ms(ttl_ms, start):
    return int(ttl_ms - (time.monotonic() - start) * 1000 - ttl_ms * DRIFT - 2)


def each(call):
    """call(i) on every node in turn, a cut-off node answering REFUSED at once."""
    return [(REFUSED, "unreachable") if addrs[i] in cut else ask(lambda i=i: call(i)) for i in range(len(nodes))]


def release_all(key, token):
    return each(lambda i: scripts[i][1](keys=[key], args=[token]))


def acquire(key, token, ttl_ms):
    start = time.monotonic()
    answers = each(lambda i: nodes[i].set(key, token, nx=True, px=ttl_ms))
    got, maybe = count(answers, DONE), count(answers, UNKNOWN)
    left = validity_ms(ttl_ms, start)
    if got >= quorum and left > 0:
        return {"type": "ok", "validity_ms": left}
    # Step 4: not taken; unlock every node, those that seemed not to answer too.
    undo = release_all(key, token)
    if got + maybe >= quorum and count(undo, UNKNOWN) > 0:
        # A majority may still hold this token: the outcome is not known.
        return {"type": "info", "error": "no valid majority (%d of %d set, %d unknown, validity %d ms), and the unlock of %d node(s) went unanswered"
                % (got, len(nodes), maybe, left, count(undo, UNKNOWN))}
    held = sum(1 for k, r in answers if k == REFUSED and r is None)
    why = "held by another client on %d of %d nodes" % (held, len(nodes)) if held else "errors: %s" % "; ".join(
        str(r) for k, r in answers if k != DONE)
    if got >= quorum:
        why = "a majority set, but the validity left was %d ms" % left
    return {"type": "fail", "error": "SET NX PX on a majority failed: " + why}


def extend(key, token, ttl_ms):
    start = time.monotonic()
    answers = each(lambda i: scripts[i][0](keys=[key], args=[token, ttl_ms]))
    done, refused = count(answers, DONE), count(answers, REFUSED)
    left = validity_ms(ttl_ms, start)
    if done >= quorum:
        # A validity of 0 or less is a lease already over: the client stops.
        return {"type": "ok", "validity_ms": left}
    rep = {"type": "fail", "error": "compare-PEXPIRE took on %d of %d nodes" % (done, len(nodes))}
    not_held = sum(1 for k, r in answers if k == REFUSED and r == 0)
    if not_held > len(nodes) - quorum:
        rep["not_held"] = True  # a majority said this token holds no key
    return rep


def release(key, token):
    answers = release_all(key, token)
    done = count(answers, DONE)
    not_held = sum(1 for k, r in answers if k == REFUSED and r == 0)
    still = len(nodes) - done - not_held  # nodes that may still hold the token
    if done == 0 and not_held > len(nodes) - quorum:
        return {"type": "fail", "error": "compare-DEL found the token on %d of %d nodes" % (done, len(nodes)), "not_held": True}
    if still < quorum:
        return {"type": "ok"}  # no majority can hold it any more
    if count(answers, UNKNOWN) == 0:
        return {"type": "fail", "error": "compare-DEL refused on %d of %d nodes: %s" % (
            still, len(nodes), "; ".join(str(r) for k, r in answers if k == REFUSED and r != 0))}
    return {"type": "info", "error": "compare-DEL unanswered on %d of %d nodes" % (count(answers, UNKNOWN), len(nodes))}


def serve(req):
    op, key, token = req["op"], req.get("key"), req.get("token")
    ttl_ms = req.get("ttl_ms", ttl_default)
    if op == "init":  # sent once: answer when ready
        if not nodes:
            return {"type": "fail", "error": "LOCKJEPSEN_REDLOCK_NODES is not set: run with --topology redlock"}
        return {"type": "ok", "dial_map": True, "unreachable": True}
    if op == "unreachable":  # lockjepsen's partial partition: skip these nodes until told again
        cut.clear()
        cut.update(req.get("addrs", []))
        return {"type": "ok"}
    if op == "acquire":
        return acquire(key, token, ttl_ms)
    if op == "extend":
        return extend(key, token, ttl_ms)
    if op == "release":
        return release(key, token)
    return {"type": "fail", "error": "unknown op " + op}


def answer(req):
    try:
        rep = serve(req)
    except Exception as e:  # a bug here must not look like a lock outcome
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
