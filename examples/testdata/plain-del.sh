#!/usr/bin/env bash
# A broken adapter for client-test: ../valkey-cli/adapter.sh with its DELIFEQ
# sent as a plain DEL, the anti-pattern that deletes whoever holds the lock.
# client-test must fail the foreign-token release and that case alone: every
# case starts from a fresh key of its own.
here=$(cd "$(dirname "$0")" && pwd)
export LOCKJEPSEN_REAL_VALKEY_CLI=${LOCKJEPSEN_VALKEY_CLI:-valkey-cli}
export LOCKJEPSEN_VALKEY_CLI=$here/del-cli.sh
exec "$here/../valkey-cli/adapter.sh" "$@"
