#!/usr/bin/env bash
# A broken adapter: grants everything (no Valkey at all), and after $1
# requests (default 0) answers every request twice. lockjepsen must stop with
# a protocol error naming this line: "second answer to id N".
n=0 good=${1:-0}
while IFS= read -r line; do
  [[ $line =~ \"id\":([0-9]+) ]] || continue
  printf '{"id":%s,"type":"ok"}\n' "${BASH_REMATCH[1]}"
  if ((++n > good)); then printf '{"id":%s,"type":"ok"}\n' "${BASH_REMATCH[1]}"; fi
done
