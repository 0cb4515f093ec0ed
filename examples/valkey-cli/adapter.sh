#!/usr/bin/env bash
# lockjepsen exec adapter (docs/protocol.md, version 1) over valkey-cli, with
# Valkey 9's native lock commands exactly as the seed article prints them:
#   acquire   SET key token NX PX ttl
#   extend    SET key token IFEQ token PX ttl
#   release   DELIFEQ key token
# The primary a Sentinel named is kept in a file and asked again only after a
# command there timed out, could not connect or was refused as READONLY (the
# node is a replica now): as a Sentinel-aware client's connection pool does.
# Asking before every command cost a second timeout + valkey-cli per operation,
# half of what the adapter spends; under a loaded CI machine that halving is
# the difference between 30 and 60 grants in a 10 s baseline. Requests run
# concurrently (one background job each), answers are one printf each, so
# lines never interleave.
#   lockjepsen client-test examples/valkey-cli/adapter.sh
#   lockjepsen run --scenario failover-race --recipe exec:examples/valkey-cli/adapter.sh --fence none
set -u
CLI=${LOCKJEPSEN_VALKEY_CLI:-valkey-cli}
IFS=, read -ra SENTINELS <<<"$LOCKJEPSEN_SENTINELS"
SET_NAME=$LOCKJEPSEN_MASTER_SET
MS=${LOCKJEPSEN_OP_TIMEOUT_MS:-1000}
printf -v T '%d.%03d' $((MS / 1000)) $((MS % 1000)) # seconds, for timeout(1)

answer() { printf '%s\n' "$1"; }

# DIAL is --net-proxy's dial map (LOCKJEPSEN_DIAL_MAP, announced=dial pairs):
# a primary Sentinel names is dialed through the proxy the map gives, so a
# fault that slows replication alone leaves this program's commands alone.
declare -A DIAL
IFS=, read -ra PAIRS <<<"${LOCKJEPSEN_DIAL_MAP:-}"
for p in "${PAIRS[@]}"; do DIAL[${p%%=*}]=${p#*=}; done

# PRIMARY_FILE holds "host port" of the primary last named by a Sentinel. A
# request's job writes it through a rename, so a concurrent reader sees the
# old or the new pair, never half of one.
PRIMARY_FILE=$(mktemp "${TMPDIR:-/tmp}/lockjepsen-valkey-cli.XXXXXX") || exit 1
trap 'rm -f "$PRIMARY_FILE" "$PRIMARY_FILE".*' EXIT
trap 'exit 143' TERM INT # so that the EXIT trap runs when lockjepsen ends us

# primary sets HOST and PORT: the one server named directly (LOCKJEPSEN_ADDR,
# --topology standalone), else the primary kept from before, else the first
# Sentinel that knows the primary.
primary() {
  local s out
  if [[ -n ${LOCKJEPSEN_ADDR:-} ]]; then
    HOST=${LOCKJEPSEN_ADDR%:*} PORT=${LOCKJEPSEN_ADDR##*:}
    return 0
  fi
  read -r HOST PORT <"$PRIMARY_FILE" && [[ -n $HOST && $PORT =~ ^[0-9]+$ ]] && return 0
  for s in "${SENTINELS[@]}"; do
    out=$(timeout "$T" "$CLI" -h "${s%:*}" -p "${s##*:}" SENTINEL get-master-addr-by-name "$SET_NAME" 2>/dev/null) || continue
    HOST=${out%%$'\n'*} PORT=${out##*$'\n'}
    if [[ -n $HOST && $PORT =~ ^[0-9]+$ ]]; then
      printf '%s %s\n' "$HOST" "$PORT" >"$PRIMARY_FILE.$BASHPID" && mv -f "$PRIMARY_FILE.$BASHPID" "$PRIMARY_FILE"
      return 0
    fi
  done
  return 1
}

# forget drops the kept primary if it is still HOST PORT, so that a newer one
# another job found is kept (the check and the truncation race; losing the
# race costs one more Sentinel question).
forget() {
  local h p
  read -r h p <"$PRIMARY_FILE" && [[ $h == "$HOST" && $p == "$PORT" ]] && : >"$PRIMARY_FILE"
}

# cmd runs one command on the primary; sets REPLY and RC (124: timed out).
cmd() {
  if ! primary; then REPLY="no Sentinel knows the primary" RC=1; return; fi
  local to=${DIAL[$HOST:$PORT]:-$HOST:$PORT}
  REPLY=$(timeout "$T" "$CLI" -h "${to%:*}" -p "${to##*:}" "$@" 2>&1)
  RC=$?
  if ((RC != 0)) || [[ $REPLY == READONLY* ]]; then forget; fi
}

# outcome maps what valkey-cli printed to ok / fail / info. want is the reply
# that means success (OK or 1); a nil ("") or 0 means the server refused.
outcome() {
  local id=$1 want=$2 notheld=$3
  if ((RC == 124)); then
    answer "{\"id\":$id,\"type\":\"info\",\"error\":\"no reply within ${MS} ms\"}"
  elif ((RC != 0)); then
    # Could not connect: nothing was sent.
    [[ $REPLY == *"Could not connect"* ]] && answer "{\"id\":$id,\"type\":\"fail\",\"error\":\"${REPLY//\"/\'}\"}" \
      || answer "{\"id\":$id,\"type\":\"info\",\"error\":\"${REPLY//\"/\'}\"}"
  elif [[ $REPLY == "$want" ]]; then
    answer "{\"id\":$id,\"type\":\"ok\"}"
  elif [[ $REPLY == "" || $REPLY == 0 ]]; then
    answer "{\"id\":$id,\"type\":\"fail\",\"error\":\"$4 returned ${REPLY:-nil}\"$notheld}"
  elif [[ $REPLY =~ ^[A-Z]+\  ]]; then
    answer "{\"id\":$id,\"type\":\"fail\",\"error\":\"${REPLY//\"/\'}\"}" # an error reply: the server did nothing
  else
    answer "{\"id\":$id,\"type\":\"info\",\"error\":\"unexpected reply ${REPLY//\"/\'}\"}"
  fi
}

handle() {
  local line=$1 id op key tok ttl
  [[ $line =~ \"id\":([0-9]+) ]] && id=${BASH_REMATCH[1]} || return
  [[ $line =~ \"op\":\"([a-z]+)\" ]] && op=${BASH_REMATCH[1]}
  [[ $line =~ \"key\":\"([^\"]*)\" ]] && key=${BASH_REMATCH[1]}
  [[ $line =~ \"token\":\"([^\"]*)\" ]] && tok=${BASH_REMATCH[1]}
  [[ $line =~ \"ttl_ms\":([0-9]+) ]] && ttl=${BASH_REMATCH[1]}
  case $op in
  init) answer "{\"id\":$id,\"type\":\"ok\",\"dial_map\":true}" ;;
  acquire) cmd SET "$key" "$tok" NX PX "$ttl"; outcome "$id" OK "" "SET NX PX" ;;
  extend) cmd SET "$key" "$tok" IFEQ "$tok" PX "$ttl"; outcome "$id" OK ',"not_held":true' "SET IFEQ PX" ;;
  release) cmd DELIFEQ "$key" "$tok"; outcome "$id" 1 ',"not_held":true' "DELIFEQ" ;;
  *) answer "{\"id\":$id,\"type\":\"fail\",\"error\":\"unknown op $op\"}" ;;
  esac
}

while IFS= read -r line; do
  handle "$line" &
done
wait
