#!/usr/bin/env python3
"""Why a failover race did or did not grant twice: each cut-replication
injection of the trial folders given, classified by the first grant after
its kill.

  fast: the promoted replica granted within 4.5 s of the kill, while the client
        granted inside the cut still held (a double grant) or after it had
        released;
  slow: the first grant waited for the key of a holder granted before the cut
        to expire (that key reached the replicas; its release inside the cut did
        not), by when the client granted inside the cut had found its lease lost.

Usage: scripts/failover-phase.py SWEEP/trials/<config>.failover/*
(results/comparison/README.md quotes it on the comparison's Sentinel cells).
"""
import collections
import json
import sys


def classify(folder):
    evs = [json.loads(line) for line in open(folder + "/history.jsonl")]
    t0 = evs[0]["time"]
    sec = lambda t: (t - t0) / 1e9
    nem = [(sec(e["time"]), e["f"]) for e in evs if e["process"] == "nemesis"]
    grants, released, invoked, ttl = [], {}, {}, {}
    for e in evs:
        if e["process"] == "nemesis":
            continue
        if e.get("f") == "acquire":
            if e["type"] == "invoke":
                invoked[e["token"]] = sec(e["time"])
                ttl[e["token"]] = e.get("ttl_ms", 0) / 1000
            elif e["type"] == "ok":
                grants.append((sec(e["time"]), e["token"]))
        elif e.get("f") == "release" and e["type"] == "invoke":
            released.setdefault(e["token"], sec(e["time"]))
    out = []
    for cut in [t for t, f in nem if f == "cut-replication"]:
        kill = next((t for t, f in nem if f == "kill" and t > cut), None)
        inside = [g for g in grants if kill is not None and cut <= g[0] <= kill]
        after = [g for g in grants if kill is not None and g[0] > kill]
        if not inside or not after:
            continue
        holder, first = inside[-1][1], after[0][0]
        before = [g for g in grants if g[0] < cut]
        prev_end = invoked[before[-1][1]] + ttl[before[-1][1]] if before else None
        stopped = released.get(holder, float("inf")) < first
        speed = "slow" if first - kill > 4.5 else "fast"
        why = "waited for the key of a holder granted before the cut" if prev_end and abs(first - prev_end) < 0.3 else ""
        out.append((speed, "the cut's holder had released" if stopped else "the cut's holder still held", why))
    return out


counts = collections.Counter()
for folder in sys.argv[1:]:
    counts.update(classify(folder))
for key, n in counts.most_common():
    print(n, ", ".join(k for k in key if k))
