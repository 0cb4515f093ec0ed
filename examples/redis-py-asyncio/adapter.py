#!/usr/bin/python3
"""lockjepsen exec adapter (docs/protocol.md, version 1): redis-py's asyncio
Lock (redis.asyncio.lock.Lock) against Valkey through Sentinel or one server.
One event loop serves every request as a task, answered by id, so it takes the
"cancel" request the way an asyncio application cancels: the task is
cancelled (Task.cancel, what asyncio.wait_for does at its deadline and what a
web framework does to the handler of a request whose client went away). It
takes the "drop_reply" field too: the reply is read, then the connection it
came on is closed and the call sees a lost connection.

    lockjepsen client-test examples/redis-py-asyncio/adapter.py
    lockjepsen run --scenario cancelled-calls --recipe exec:examples/redis-py-asyncio/adapter.py --fence none

Options (each through --exec-arg):
    --single-connection  one connection for every call of the process
                         (Redis(single_connection_client=True)), as in the
                         report of redis/redis-py#2624
    --deadline-ms N      every call gets N ms (asyncio.wait_for), as an
                         application with a request deadline does; a call
                         past it is cancelled and answered info
    --lock-objects       keep each grant's Lock object from its acquire to
                         its release and extend and release through it, as
                         an application does (by default each request builds
                         a Lock from the request's token); a token this
                         process never acquired still gets a Lock built from
                         it. With it, redis-py before PR #3900 forgets the
                         token of a release that was cancelled
                         (redis/redis-py#3847, results/findings/007)

Debian's python3-redis (4.3.4) is enough; PYTHONPATH may point at another
redis-py source tree (results/findings/candidates.md, entry J).
"""
import asyncio
import contextvars
import json
import os
import sys

import redis
import redis.asyncio as aredis
import redis.asyncio.client
from redis.asyncio.lock import Lock
from redis.exceptions import (ConnectionError, LockError, LockNotOwnedError,
                              RedisError, ResponseError, TimeoutError)

args = sys.argv[1:]
single = "--single-connection" in args
objects = "--lock-objects" in args
deadline = None
if "--deadline-ms" in args:
    deadline = int(args[args.index("--deadline-ms") + 1]) / 1000
op_timeout = int(os.environ.get("LOCKJEPSEN_OP_TIMEOUT_MS", "1000")) / 1000

# drop_reply: the request's task carries a one-shot flag; the first reply of
# one of its lock commands is read (the command ran) and then lost with its
# connection. A library's own commands (discovery, handshake) are let through.
dropping = contextvars.ContextVar("dropping", default=None)
_parse = redis.asyncio.client.Redis.parse_response
_own = ("SENTINEL", "PING", "CLIENT", "HELLO", "AUTH", "SELECT", "ROLE", "INFO", "ASKING", "READONLY")


async def parse_response(self, connection, command_name, **options):
    reply = await _parse(self, connection, command_name, **options)
    flag = dropping.get()
    if flag and flag[0] and not str(command_name).upper().startswith(_own):
        flag[0] = False
        await connection.disconnect()
        raise ConnectionError("the reply was lost with its connection (drop_reply)")
    return reply


redis.asyncio.client.Redis.parse_response = parse_response


def connect():
    # No retries: a retried SET NX after a lost reply would hide an unknown
    # outcome.
    common = dict(socket_timeout=op_timeout, socket_connect_timeout=op_timeout,
                  retry_on_timeout=False)
    if os.environ.get("LOCKJEPSEN_ADDR"):
        host, port = os.environ["LOCKJEPSEN_ADDR"].rsplit(":", 1)
        return aredis.Redis(host=host, port=int(port), single_connection_client=single, **common)
    if not os.environ.get("LOCKJEPSEN_SENTINELS"):
        print("redis-py-asyncio adapter: needs LOCKJEPSEN_SENTINELS or LOCKJEPSEN_ADDR", file=sys.stderr)
        sys.exit(2)
    from redis.asyncio.sentinel import Sentinel
    sentinels = [(a.rsplit(":", 1)[0], int(a.rsplit(":", 1)[1]))
                 for a in os.environ["LOCKJEPSEN_SENTINELS"].split(",")]
    return Sentinel(sentinels, socket_timeout=op_timeout).master_for(
        os.environ["LOCKJEPSEN_MASTER_SET"], redis_class=Client, **common)


class Client(aredis.Redis):
    # master_for builds its client from the pool alone (a class method in
    # redis-py 6, a call in 4.3): the single-connection choice rides here.
    def __init__(self, *args, **kwargs):
        kwargs.setdefault("single_connection_client", single)
        super().__init__(*args, **kwargs)


valkey = None
grants = {}  # --lock-objects: token -> the Lock object that acquired it


def lock(key, ttl_ms, token=None):
    if objects and token in grants:
        return grants[token]
    lk = Lock(valkey, key, timeout=ttl_ms / 1000, thread_local=False)
    if token is not None:
        lk.local.token = token.encode()  # a grant made by an earlier request
    return lk


async def serve(req):
    op, key, token = req["op"], req.get("key"), req.get("token")
    ttl_ms = req.get("ttl_ms", 1000)
    if req.get("drop_reply"):
        dropping.set([True])
    if op == "acquire":
        lk = lock(key, ttl_ms)
        if await lk.acquire(blocking=False, token=token):
            if objects:
                grants[token] = lk
            return {"type": "ok"}
        return {"type": "fail", "error": "SET NX PX: held by another client"}
    if op == "extend":
        await lock(key, ttl_ms, token).extend(ttl_ms / 1000, replace_ttl=True)
        return {"type": "ok"}
    if op == "release":
        await lock(key, ttl_ms, token).release()
        grants.pop(token, None)
        return {"type": "ok"}
    return {"type": "fail", "error": "unknown op " + op}


def write(rep):
    sys.stdout.write(json.dumps(rep) + "\n")
    sys.stdout.flush()


async def answer(req):
    try:
        if deadline is not None:
            rep = await asyncio.wait_for(serve(req), deadline)
        else:
            rep = await serve(req)
    except asyncio.CancelledError:
        # The application gave up: whether the command ran is not known.
        rep = {"type": "info", "error": "cancelled"}
    except asyncio.TimeoutError:
        rep = {"type": "info", "error": "deadline of %d ms passed" % (deadline * 1000)}
    except LockNotOwnedError as e:  # the script returned 0: not this token's lock
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
        nothing_sent = "connecting to" in str(e) or "master" in str(e).lower()
        rep = {"type": "fail" if nothing_sent else "info", "error": str(e)}
    except RedisError as e:
        rep = {"type": "info", "error": "%s: %s" % (type(e).__name__, e)}
    except Exception as e:  # a reply of another command read as this one's
        rep = {"type": "info", "error": "%s: %s" % (type(e).__name__, e)}
    rep["id"] = req["id"]
    write(rep)


async def main():
    global valkey
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=1 << 20)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    tasks = {}
    while True:
        line = await reader.readline()
        if not line:
            break
        if not line.strip():
            continue
        req = json.loads(line)
        if req["op"] == "init":
            valkey = connect()
            write({"id": req["id"], "type": "ok", "cancel": True, "drop_reply": True})
        elif req["op"] == "cancel":
            t = tasks.get(req.get("cancels"))
            if t is not None:
                t.cancel()
        else:
            t = asyncio.create_task(answer(req))
            tasks[req["id"]] = t
            t.add_done_callback(lambda _, i=req["id"]: tasks.pop(i, None))


if __name__ == "__main__":
    asyncio.run(main())
