#!/usr/bin/env bash
# Sentinel's second failover of its own: one local Sentinel topology, its
# primary SIGKILLed N times (`lockjepsen cluster kill-primary`, 5 s apart), then
# the Sentinels' logs read for what followed each +switch-master: a +sdown of
# the new primary within 1.5 s (the missed first PING; see
# deployments/sentinel/watcher.go), a +odown on it, and how many switches each
# Sentinel made (N kills make N; more are failovers nobody drove).
#   scripts/sentinel-second-failover.sh            # down-after 1s, 30 kills
#   scripts/sentinel-second-failover.sh 2s 30      # above a second and a tick
set -euo pipefail
cd "$(dirname "$0")/.."
down_after=${1:-1s}
kills=${2:-30}
go build -o bin/lockjepsen ./cmd/lockjepsen
dir=$(mktemp -d /tmp/lockjepsen-second-failover-XXXXXX)
trap 'bin/lockjepsen cluster down --dir "$dir" >/dev/null 2>&1 || true' EXIT
bin/lockjepsen cluster up --dir "$dir" --down-after "$down_after" >/dev/null
for i in $(seq 1 "$kills"); do
	bin/lockjepsen cluster kill-primary --dir "$dir" >/dev/null
	sleep 5
done
bin/lockjepsen cluster down --dir "$dir" >/dev/null
echo "down-after $down_after, $kills kills of the primary; logs in $dir"
python3 - "$dir" "$kills" <<'PY'
import datetime, glob, re, sys
d, kills = sys.argv[1], int(sys.argv[2])
line = re.compile(r'\S+ (\d+ \w+ \d+ [\d:.]+) # (\S+) (.*)')
flags, odowns, delays = 0, 0, []
for f in sorted(glob.glob(d + '/sentinel-*/sentinel-*.log')):
    ev = []
    for l in open(f, errors='replace'):
        m = line.match(l)
        if m:
            ev.append((datetime.datetime.strptime(m.group(1), '%d %b %Y %H:%M:%S.%f'), m.group(2), m.group(3)))
    switches = [e for e in ev if e[1] == '+switch-master']
    print(f"  {f.split('/')[-1]}: {len(switches)} switches ({len(switches) - kills} more than the kills)")
    for i, (t, k, rest) in enumerate(ev):
        if k != '+switch-master':
            continue
        new = ' '.join(rest.split()[3:5])
        for t2, k2, r2 in ev[i + 1:]:
            if (t2 - t).total_seconds() > 1.5:
                break
            if k2 == '+sdown' and r2.startswith('master') and new in r2:
                flags += 1
                delays.append((t2 - t).total_seconds())
            if k2 == '+odown' and new in r2:
                odowns += 1
span = f" ({min(delays):.3f}-{max(delays):.3f} s after the switch)" if delays else ""
print(f"  the new primary flagged +sdown within 1.5 s of a switch: {flags}{span}; +odown at once: {odowns}")
PY
