#!/usr/bin/env python3
"""Acquire outcomes by kind, per sweep cell: what a fault costs in refusals.

    scripts/acquire-errors.py SWEEP_DIR|RUN_DIR [...]

Reads every trial's history.jsonl under SWEEP_DIR/trials/<cell>/<n>/ (a run
folder given instead, one holding history.jsonl, is a cell of its own) and counts
the acquires that ended ok, the refusals by their error text (another client
holding the lock is contention, not a cost; the rest are classed by the reply
that refused them: EXEC without MULTI, TRYAGAIN, MOVED/ASK, CLUSTERDOWN,
NOREPLICAS, a WAIT short of replicas, OOM, other), and the unknown outcomes.
Prints one Markdown row per cell, with the refusals per fault injected (the
trial's nemesis.jsonl events that begin a fault, i.e. whose name is the cell's
nemesis fault).
"""
import json
import os
import sys
from collections import Counter, defaultdict

KINDS = [
    ("EXEC without MULTI", "EXEC without MULTI"),
    ("TRYAGAIN", "TRYAGAIN"),
    ("MOVED/ASK", ("MOVED", "ASK ")),
    ("CLUSTERDOWN", "CLUSTERDOWN"),
    ("NOREPLICAS", "NOREPLICAS"),
    ("WAIT short", "WAIT"),
    ("OOM", "OOM"),
]


def kind(err):
    if "another client holds" in err or err == "held":
        return "held"
    for name, pat in KINDS:
        pats = pat if isinstance(pat, tuple) else (pat,)
        if any(p in err for p in pats):
            return name
    return "other"


def trials_of(dirs):
    """(cell, the cell's nemesis fault, trial folder) for every trial."""
    for d in dirs:
        if os.path.exists(os.path.join(d, "history.jsonl")):
            yield os.path.basename(os.path.normpath(d)), "", d
            continue
        root = os.path.join(d, "trials")
        for cell in sorted(os.listdir(root)):
            fault = cell.split(".", 1)[1] if "." in cell else cell
            for trial in sorted(os.listdir(os.path.join(root, cell))):
                yield cell, fault, os.path.join(root, cell, trial)


def main(dirs):
    cells = defaultdict(Counter)
    for cell, fault, t in trials_of(dirs):
        c = cells[cell]
        c["trials"] += 1
        try:
            with open(os.path.join(t, "nemesis.jsonl")) as f:
                for line in f:
                    if fault and json.loads(line).get("f") == fault:
                        c["faults"] += 1
        except FileNotFoundError:
            pass
        with open(os.path.join(t, "history.jsonl")) as f:
            for line in f:
                e = json.loads(line)
                if e.get("f") != "acquire" or e.get("type") == "invoke" or e.get("process") == "nemesis":
                    continue
                if e["type"] == "ok":
                    c["ok"] += 1
                elif e["type"] == "info":
                    c["unknown"] += 1
                else:
                    c[kind(e.get("error", ""))] += 1
    cols = ["held"] + [k for k, _ in KINDS] + ["other"]
    print("| cell | trials | faults | acquires ok | refused: " + " | ".join(cols) + " | unknown | refused per fault (not held) |")
    print("|---" * (len(cols) + 6) + "|")
    for cell, c in sorted(cells.items()):
        cost = sum(c[k] for k in cols if k != "held")
        per = f"{cost / c['faults']:.1f}" if c["faults"] else "n/a"
        print(f"| {cell} | {c['trials']} | {c['faults']} | {c['ok']} | " + " | ".join(str(c[k]) for k in cols) + f" | {c['unknown']} | {per} |")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
