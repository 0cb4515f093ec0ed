#!/usr/bin/python3
"""A broken adapter for client-test --topology zookeeper: ../kazoo/adapter.py
trusting kazoo's Lock after a lost session, as an application that does not
watch for LOST does: extend answers ok while Lock.is_acquired says so (no
write), and release says what Lock.release says (True: it swallows the
missing znode). client-test must fail the session-expiry case and that case
alone."""
import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the adapter's folder
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "kazoo"))
import adapter  # noqa: E402


def held(token):
    with adapter.mu:
        g = adapter.grants.get(token)
    if g is None:
        return None, adapter.fail("no grant of this token", not_held=True)
    return g[0], None


def extend(token, ttl_ms):
    lk, why = held(token)
    if why:
        return why
    if not lk.is_acquired:
        return adapter.fail("Lock.is_acquired is False", not_held=True)
    return {"type": "ok"}


adapter.held, adapter.extend = held, extend
adapter.main()
