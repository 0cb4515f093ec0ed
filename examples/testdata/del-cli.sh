#!/usr/bin/env bash
# valkey-cli, but "DELIFEQ key token" goes out as "DEL key" (plain-del.sh).
args=()
while (($#)); do
  if [[ $1 == DELIFEQ ]]; then
    args+=(DEL "$2")
    shift 3
    continue
  fi
  args+=("$1")
  shift
done
exec "$LOCKJEPSEN_REAL_VALKEY_CLI" "${args[@]}"
