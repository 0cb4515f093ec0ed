#!/usr/bin/env bash
# A broken adapter: grants everything (no Valkey at all), and after $1
# requests (default 0) writes a line that is not JSON. lockjepsen must stop
# with a protocol error naming the line.
n=0 good=${1:-0}
while IFS= read -r line; do
  [[ $line =~ \"id\":([0-9]+) ]] || continue
  if ((++n > good)); then printf '{"id":%s,"type":"ok"\n' "${BASH_REMATCH[1]}"; continue; fi
  printf '{"id":%s,"type":"ok"}\n' "${BASH_REMATCH[1]}"
done
