#!/usr/bin/env bash
# A sweep plan that ran as shards side by side on one machine (its plan.json
# says "host_parallel": N) is swept again the same way: N containers of the
# runner image, each one shard (--shard /N, JOB_COMPLETION_INDEX 0..N-1) at
# the plan's own --parallel, then `sweep merge --host-parallel N`. Run as one
# sweep on the host at that --parallel it would take N times as long; at N
# times the --parallel it would measure another load than the row it repeats.
#
#   scripts/sweep-shards.sh PLAN OUT
#
# Shard I's folder is OUT/shard-I, the merged sweep OUT/merged (publish that).
# Restartable: a second call waits for a shard container still running and
# continues a stopped shard (--continue) from its folder. Ctrl-C stops the
# containers, which keep their folders. Needs `make images` (lockjepsen/runner).
set -euo pipefail
cd "$(dirname "$0")/.."
usage() { echo "usage: scripts/sweep-shards.sh PLAN OUT (PLAN a plan.json with host_parallel)" >&2; exit 254; }
[[ $# -eq 2 ]] || usage
PLAN=$1 OUT=$2
[[ -f "$PLAN" ]] || { echo "sweep-shards: plan $PLAN: no such file; give a sweep's plan.json" >&2; exit 254; }
N=$(python3 -c 'import json,sys; print(int(json.load(open(sys.argv[1])).get("host_parallel") or 0))' "$PLAN") ||
	{ echo "sweep-shards: plan $PLAN is not a sweep plan (JSON): give a sweep's plan.json" >&2; exit 254; }
[[ "$N" -ge 2 ]] || { echo "sweep-shards: plan $PLAN has host_parallel $N: it ran as one sweep; run lockjepsen sweep --file $PLAN" >&2; exit 254; }
IMAGE=lockjepsen/runner:latest
docker image inspect "$IMAGE" >/dev/null 2>&1 || { echo "sweep-shards: no image $IMAGE: run make images" >&2; exit 254; }
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
# The shards' plan is the row's without host_parallel, which only the merge
# sets; each shard adds its own index.
[[ -f "$OUT/shard-plan.json" ]] ||
	python3 -c 'import json,sys; p=json.load(open(sys.argv[1])); p.pop("host_parallel",None); p.pop("shard",None); json.dump(p,open(sys.argv[2],"w"),indent=2)' "$PLAN" "$OUT/shard-plan.json"
# Names carry the folder's hash, so two sweeps' shards never meet.
TAG=lj-shard-$(printf '%s' "$OUT" | sha1sum | cut -c1-8)
names=()
stop() { docker stop -t 5 "${names[@]}" >/dev/null 2>&1 || true; echo "sweep-shards: stopped; call again to continue" >&2; exit 130; }
trap stop INT TERM
for ((i = 0; i < N; i++)); do
	name=$TAG-$i
	names+=("$name")
	if [[ "$(docker inspect -f '{{.State.Running}}' "$name" 2>/dev/null)" == true ]]; then
		echo "shard $i: $name still running; waiting for it"
		continue
	fi
	docker rm "$name" >/dev/null 2>&1 || true
	docker run -d --name "$name" -e JOB_COMPLETION_INDEX="$i" -v "$OUT:/results" "$IMAGE" \
		sweep --file /results/shard-plan.json --shard "/$N" --continue --out "/results/shard-$i" >/dev/null
	echo "shard $i: $name started (its progress: $OUT/shard-$i/trials/*/run.log)"
done
fail=0
for ((i = 0; i < N; i++)); do
	rc=$(docker wait "${names[$i]}")
	echo "shard $i: exit $rc"
	[[ "$rc" == 0 ]] || fail=1
done
shards=()
for ((i = 0; i < N; i++)); do shards+=("$OUT/shard-$i"); done
go build -o bin/lockjepsen ./cmd/lockjepsen
rm -rf "$OUT/merged"
bin/lockjepsen sweep merge --host-parallel "$N" --out "$OUT/merged" "${shards[@]}"
docker rm "${names[@]}" >/dev/null
exit $fail
