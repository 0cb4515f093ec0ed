#!/bin/sh
# Acquire latency of each lock backend at the same load, no faults: 16 client
# processes on 16 keys (little contention), 20 s each, one run per backend;
# p50 / p99 of completed acquires (ok or refused) from each run's results.json.
# Then `lockjepsen bench locks`, which puts valkey-benchmark's SET rate beside
# the native recipe's at the same 16 connections.
#   scripts/backend-latency.sh [OUT]      # default /tmp/lockjepsen-latency
set -eu
cd "$(dirname "$0")/.."
go build -o bin/lockjepsen ./cmd/lockjepsen
out=${1:-/tmp/lockjepsen-latency}
rm -rf "$out"
mkdir -p "$out"
load="--clients 16 --keys 16 --time-limit 20s"
for c in \
	'sentinel-native --scenario baseline' \
	'redlock --scenario redlock-baseline' \
	'etcd-mutex --scenario etcd-leader-failover --faults none' \
	'sql-lease --scenario sql-lease-restart --faults none'; do
	name=${c%% *}
	# shellcheck disable=SC2086 # flags are words on purpose
	code=0
	./bin/lockjepsen run ${c#* } $load --out "$out/$name" >"$out/$name.txt" 2>&1 || code=$?
	python3 -c 'import json,sys
r=json.load(open(sys.argv[1]))
a=r["latency_ms"]["acquire"]
print("%-16s exit %s: %6d acquires, p50 %7.2f ms, p99 %7.2f ms" % (sys.argv[2], sys.argv[3], a["count"], a["p50"], a["p99"]))' \
		"$out/$name/results.json" "$name" "$code"
done
./bin/lockjepsen bench locks --clients 16 --time-limit 10s 2>/dev/null | tail -3
