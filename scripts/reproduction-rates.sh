#!/bin/sh
# Reproduction rate of scenarios over seeds 1..N (`lockjepsen bench scenario`):
# one line per case, "reproduced K of N seeds" meaning the scenario's own
# expectation held (for a remedy case that is "valid"). Run folders go under
# results/bench-*; the table goes to stdout.
#   scripts/reproduction-rates.sh                 # the Redlock and stuck-lock cases, 10 seeds
#   SEEDS=3 scripts/reproduction-rates.sh 'failover-race' 'paused-client --fence none'
set -eu
cd "$(dirname "$0")/.."
go build -o bin/lockjepsen ./cmd/lockjepsen
seeds=${SEEDS:-10}
if [ $# -eq 0 ]; then
	set -- \
		'redlock-baseline' \
		'redlock-clock-jump' \
		'redlock-restart' \
		'redlock-restart --appendfsync always' \
		'redlock-restart --delayed-restart 4s' \
		'redlock-paused-client' \
		'stuck-lock --recipe setnx-expire' \
		'stuck-lock --recipe extend-no-px' \
		'stuck-lock --recipe native'
fi
start=$(date +%s)
for c in "$@"; do
	name=${c%% *}
	rest=
	[ "$name" != "$c" ] && rest=${c#* }
	# shellcheck disable=SC2086 # the case's flags are words on purpose
	./bin/lockjepsen bench scenario --scenario "$name" --seeds "$seeds" $rest 2>/dev/null |
		sed "s|^|$c: |" || echo "$c: not carried out (exit $?)"
done
echo "wall time: $(( $(date +%s) - start )) s for $# cases x $seeds seeds"
