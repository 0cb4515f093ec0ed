#!/usr/bin/python3
"""redis-py's asyncio client alone, no lock and no lockjepsen: a client with
single_connection_client=True whose connection was lost (as a failover, a
network blip or a lost reply leaves it) is handed eight GETs at once, as an
asyncio application serving several requests does. Each GET must return the
key's value within 2 s. redis/redis-py#2540: in single-connection mode nothing
serialised concurrent commands, so each reconnected and read whatever came;
fixed by PR #2568 (a lock around execute_command). One Valkey on PORT:

    examples/redis-py-asyncio/reconnect_race.py PORT
    PYTHONPATH=/path/to/redis-py-6.4.0 examples/redis-py-asyncio/reconnect_race.py PORT

It writes the key reconnect-race. Exit 1 when a GET was wrong or hung.
"""
import asyncio
import sys

import redis
import redis.asyncio as aredis


async def main(port):
    r = aredis.Redis(port=port, single_connection_client=True)
    await r.set("reconnect-race", "value")
    await r.connection.disconnect()  # the connection lost, as after a failover

    async def get():
        try:
            v = await asyncio.wait_for(r.get("reconnect-race"), 2)
        except Exception as e:
            return type(e).__name__
        return "ok" if v == b"value" else "wrong value %r" % v

    got = await asyncio.gather(*[get() for _ in range(8)])
    bad = [g for g in got if g != "ok"]
    print("redis-py %s from %s: %d of 8 GETs right; %s" % (
        redis.__version__, redis.__file__.rsplit("/redis/", 1)[0], 8 - len(bad), ", ".join(bad) or "none wrong"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(int(sys.argv[1]))))
