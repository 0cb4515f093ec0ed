#!/usr/bin/env bash
# A broken adapter: answers init, then reads every request and never answers.
# Each operation is info after the operation timeout; client-test fails its
# first case and skips the rest (exit 1); a run refuses it at its start (the
# probe acquire is info: exit 2).
IFS= read -r line
[[ $line =~ \"id\":([0-9]+) ]] && printf '{"id":%s,"type":"ok"}\n' "${BASH_REMATCH[1]}"
exec cat >/dev/null
