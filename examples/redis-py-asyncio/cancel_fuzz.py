#!/usr/bin/python3
"""redis-py's asyncio client alone, no lock and no lockjepsen: 12,000 GETs of
keys whose values are known, four at a time, each under asyncio.wait_for with a
deadline drawn from 20 us to 1.5 ms, so that many are cancelled mid-call. It
counts the GETs that returned another key's value or a fragment of a reply
(redis/redis-py#2624 and #2665: a cancelled command's reply left for the next
command on the connection). One Valkey on PORT:

    examples/redis-py-asyncio/cancel_fuzz.py PORT pool      # a connection pool (the default client)
    examples/redis-py-asyncio/cancel_fuzz.py PORT single    # single_connection_client=True
    PYTHONPATH=/path/to/redis-py-6.4.0 examples/redis-py-asyncio/cancel_fuzz.py PORT single

It writes keys fuzz:0 .. fuzz:49.
"""
import asyncio
import random
import sys

import redis
import redis.asyncio as aredis


async def main(port, single):
    r = aredis.Redis(port=port, single_connection_client=single)
    for i in range(50):
        await r.set("fuzz:%d" % i, "v%d" % i)
    counts = {"returned": 0, "cancelled": 0, "wrong": 0}
    errors = {}

    async def one():
        i = random.randrange(50)
        try:
            v = await asyncio.wait_for(r.get("fuzz:%d" % i), random.uniform(0.00002, 0.0015))
        except (asyncio.TimeoutError, asyncio.CancelledError):
            counts["cancelled"] += 1
            return
        except Exception as e:
            errors[type(e).__name__] = errors.get(type(e).__name__, 0) + 1
            return
        counts["returned"] += 1
        if v != ("v%d" % i).encode():
            counts["wrong"] += 1

    for _ in range(3000):
        await asyncio.gather(*[one() for _ in range(4)])
    print("redis-py %s from %s, %s: %d GETs returned, %d cancelled, %d returned a wrong value; errors %s" % (
        redis.__version__, redis.__file__.rsplit("/redis/", 1)[0], "single connection" if single else "pool",
        counts["returned"], counts["cancelled"], counts["wrong"], errors or "none"))
    try:
        await r.close()
    except Exception:
        pass


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]), sys.argv[2] == "single"))
