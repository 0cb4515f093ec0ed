#!/usr/bin/env bash
# The soak: clean runs on every deployment, which must all check valid (a
# false alarm is a bug as serious as a missed violation). First the runs with
# no fault at all, then the faults whose expectation is "lock valid" (a leader
# failover, a coordinated switch, a slot move, a dedicated cache, the network
# faults through --net-proxy on every deployment that has proxies, the
# partitions on docker), each with 32 clients on 4 keys for 60 s, over several
# seeds. Long (53 cases x 5 seeds = 265 runs of 70-120 s, about 7 h): run it
# outside CI, in pieces; a run whose folder already holds results.json is not
# run again, so a second call resumes.
#
#   scripts/soak.sh [OUT] [SEEDS]     OUT defaults to results/soak, SEEDS to 4 (make soak: 5)
#   SOAK_ONLY=REGEX   only the cases whose "deployment|case" matches (grep -E)
#   SOAK_TIME=60s     each run's --time-limit (a shorter one to try the script)
#
# Prints and writes OUT/soak.md: per deployment, runs, events, verdicts; every
# run that was not valid is listed with its folder, which is kept. The folders
# of valid runs are deleted once counted (history.jsonl of a 60 s, 32-client run
# is tens of MB); their counts stay in OUT/runs.tsv.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT="${1:-results/soak}"
SEEDS="${2:-4}"
LJ=bin/lockjepsen
# Built here, from the tree whose commit each run's line records: a binary
# left from an older checkout once ran under a newer commit's name.
go build -o "$LJ" ./cmd/lockjepsen || { echo "soak: go build failed" >&2; exit 2; }
mkdir -p "$OUT"
TSV="$OUT/runs.tsv"
[[ -f "$TSV" ]] || printf 'deployment\tcase\tseed\texit\tverdict\tevents\tfolder\tcode\n' > "$TSV"
# The code each run used: the commit, "+dirty" when the work tree differed
# from it (a soak is judged on code no older than the change it vouches for).
CODE=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
git diff --quiet HEAD -- . ':!results' 2>/dev/null || CODE="$CODE+dirty"

LOAD=(--clients 32 --keys 4 --time-limit "${SOAK_TIME:-60s}")

# deployment|case|flags: the clean runs, then the faults expected valid.
CASES=(
  "sentinel|baseline|--scenario baseline"
  "standalone|baseline|--scenario standalone-baseline"
  "redlock|baseline|--scenario redlock-baseline"
  "cluster|baseline|--scenario baseline --topology cluster"
  "etcd|baseline|--scenario baseline --topology etcd --recipe etcd-mutex"
  "zookeeper|baseline|--scenario baseline --topology zookeeper --recipe zk-lock"
  "sql-lease|baseline|--scenario baseline --recipe sql-lease"
  "sentinel|redsync baseline|--scenario baseline --recipe redsync --fence none"
  "redlock|redsync baseline|--scenario redlock-baseline --recipe redsync --fence none"
  "sentinel|redislock baseline|--scenario baseline --recipe redislock --fence none"
  "sentinel|valkeylock baseline|--scenario baseline --recipe valkeylock --fence none"
  "exec redis-py|baseline|--scenario baseline --recipe exec:examples/redis-py/adapter.py --fence none"
  "exec valkey-cli|baseline|--scenario baseline --recipe exec:examples/valkey-cli/adapter.sh --fence none"
  "exec kazoo|baseline|--scenario baseline --topology zookeeper --recipe exec:examples/kazoo/adapter.py"
  "exec node-redis|baseline|--scenario baseline --topology cluster --recipe exec:examples/node-redis/adapter.js --fence none"
  "exec redlock-py|baseline|--scenario redlock-baseline --recipe exec:examples/redlock-py/adapter.py"
  "exec etcd-py|baseline|--scenario baseline --topology etcd --recipe exec:examples/etcd-py/adapter.py"
  "exec pg-py|baseline|--scenario baseline --topology postgres --recipe exec:examples/pg-py/adapter.py"
  "postgres|baseline|--scenario baseline --topology postgres --recipe pg-advisory"
  "postgres|pg-pooler-session|--scenario pg-pooler-session"
  "postgres|pg-xact-pooler-transaction|--scenario pg-xact-pooler-transaction"
  "postgres|pg-terminated-holder|--scenario pg-terminated-holder"
  "sentinel|coordinated-failover|--scenario coordinated-failover"
  "standalone|standalone-coordinated|--scenario standalone-coordinated"
  "standalone|standalone-coordinated-force|--scenario standalone-coordinated-force"
  "cluster|cluster-graceful-failover|--scenario cluster-graceful-failover"
  "sentinel|skewed-replica-behind|--scenario skewed-replica-behind"
  "sentinel|eviction-noeviction|--scenario eviction-noeviction"
  "sentinel|eviction-dedicated|--scenario eviction-dedicated"
  "sentinel|net-latency|--scenario net-latency"
  "sentinel|net-timeout|--scenario net-timeout"
  "sentinel|net-reset|--scenario net-reset"
  "standalone|net-latency|--scenario net-latency --topology standalone"
  "standalone|net-timeout|--scenario net-timeout --topology standalone"
  "standalone|net-reset|--scenario net-reset --topology standalone"
  "cluster|net-latency|--scenario net-latency --topology cluster"
  "cluster|net-timeout|--scenario net-timeout --topology cluster"
  "cluster|net-reset|--scenario net-reset --topology cluster"
  "redlock|net-latency|--scenario net-latency --topology redlock --recipe redlock --fence none"
  "redlock|net-timeout|--scenario net-timeout --topology redlock --recipe redlock --fence none"
  "redlock|net-reset|--scenario net-reset --topology redlock --recipe redlock --fence none"
  "sentinel|net-slow-replication|--scenario net-slow-replication"
  "sentinel|net-slow-replication wait|--scenario net-slow-replication --wait 1:1s"
  "redlock|redlock-restart delayed|--scenario redlock-restart --delayed-restart 12s"
  "cluster|cluster-reshard-legacy|--scenario cluster-reshard-legacy"
  "cluster|cluster-reshard-atomic|--scenario cluster-reshard-atomic"
  "etcd|etcd-leader-failover|--scenario etcd-leader-failover"
  "zookeeper|zk-kill-leader|--scenario zk-kill-leader"
  "zookeeper|zk-pause-leader|--scenario zk-pause-leader"
  "sql-lease|sql-lease-restart|--scenario sql-lease-restart"
  "etcd docker|etcd-partition-member|--scenario etcd-partition-member --runtime docker"
  "zookeeper docker|zk-partition-leader|--scenario zk-partition-leader --runtime docker"
  "redlock docker|redlock-partition-minority|--scenario redlock-partition-minority --runtime docker"
)

for c in "${CASES[@]}"; do
  IFS='|' read -r dep name flags <<<"$c"
  [[ -z "${SOAK_ONLY:-}" ]] || grep -qE "$SOAK_ONLY" <<<"$dep|$name" || continue
  for seed in $(seq 1 "$SEEDS"); do
    dir="$OUT/runs/$(echo "$dep-$name" | tr -c 'a-z0-9-' '-')-seed-$seed"
    # Counted already: a valid run's folder is replaced by a results.json
    # marker, a kept one gets .counted once its line is in runs.tsv (a run
    # stopped between its results.json and that line runs again).
    [[ -f "$dir/.counted" ]] && continue
    grep -qs '"soak"' "$dir/results.json" && continue
    rm -rf "$dir"
    rc=0
    # shellcheck disable=SC2086
    # stderr is kept with a run that is not valid: a run stopped with exit
    # 254 halfway once left no word of why.
    "$LJ" run $flags "${LOAD[@]}" --seed "$seed" --out "$dir" >/dev/null 2>"$dir.stderr" || rc=$?
    mkdir -p "$dir" && mv "$dir.stderr" "$dir/stderr.txt"
    # results.json's "valid": true, false, or "unknown" (python3 is there for the redis-py adapter)
    verdict=$(python3 -c 'import json,sys; v=json.load(open(sys.argv[1])).get("valid"); print({True: "valid", False: "invalid"}.get(v, v))' "$dir/results.json" 2>/dev/null || echo none)
    events=$({ wc -l < "$dir/history.jsonl"; } 2>/dev/null || echo 0)
    keep="$dir"
    if [[ "$verdict" == valid && $rc -eq 0 ]]; then
      rm -rf "$dir"; mkdir -p "$dir"
      echo '{"valid":true,"soak":"counted in runs.tsv; folder removed"}' > "$dir/results.json"
      keep=""
    fi
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$dep" "$name" "$seed" "$rc" "$verdict" "$events" "$keep" "$CODE" >> "$TSV"
    touch "$dir/.counted"
    printf 'soak: %-16s %-26s seed %s: exit %s, %s, %s events\n' "$dep" "$name" "$seed" "$rc" "$verdict" "$events"
  done
done

{
  echo "# Soak: clean runs on every deployment"
  echo
  echo "\`scripts/soak.sh $OUT $SEEDS\` on $(date -u +%Y-%m-%d), $(nproc) cores; 32 clients, 4 keys, ${SOAK_TIME:-60s} a run."
  echo "A run that is not valid (exit other than 0) is a false alarm or a harness failure; its folder is kept."
  echo
  echo "Code the runs used (commit, +dirty when the work tree differed from it): $(awk -F'\t' 'NR>1 {c[$8==""?"unrecorded":$8]++} END {for (k in c) {printf "%s%s (%d runs)", s, k, c[k]; s=", "}}' "$TSV")."
  echo
  echo "| deployment | runs | events | valid | not valid |"
  echo "|---|---|---|---|---|"
  awk -F'\t' 'NR>1 {r[$1]++; e[$1]+=$6; if ($5=="valid" && $4==0) v[$1]++; else n[$1]++}
    END {for (d in r) printf "| %s | %d | %d | %d | %d |\n", d, r[d], e[d], v[d], n[d]}' "$TSV" | sort
  awk -F'\t' 'NR>1 {r++; e+=$6; if ($5=="valid" && $4==0) v++; else n++}
    END {printf "| **all** | %d | %d | %d | %d |\n", r, e, v, n}' "$TSV"
  echo
  echo "By case (the faults whose expectation is \"lock valid\" count as clean runs):"
  echo
  echo "| deployment | case | runs | events | valid | not valid |"
  echo "|---|---|---|---|---|---|"
  awk -F'\t' 'NR>1 {k=$1" | "$2; r[k]++; e[k]+=$6; if ($5=="valid" && $4==0) v[k]++; else n[k]++}
    END {for (k in r) printf "| %s | %d | %d | %d | %d |\n", k, r[k], e[k], v[k], n[k]}' "$TSV" | sort
  echo
  echo "Not valid:"
  awk -F'\t' 'NR>1 && !($5=="valid" && $4==0) {printf "- %s %s seed %s: exit %s, %s, %s\n", $1, $2, $3, $4, $5, $7; f=1}
    END {if (!f) print "- none"}' "$TSV"
  # A kept folder may say what the run was and what changed since (NOTE.md).
  awk -F'\t' 'NR>1 && $7!="" {print $7}' "$TSV" | while read -r kept; do
    if [[ -f "$kept/NOTE.md" ]]; then echo; sed 's/^/  /' "$kept/NOTE.md"; fi
  done
} > "$OUT/soak.md"
cat "$OUT/soak.md"
