#!/usr/bin/env bash
# Regenerates docs/workshop/: runs every lab back to back with the lockjepsen
# binary and rewrites the pages' generated regions (question, command, claims,
# captured output, timelines, the wall-time table). The only way the pages'
# outputs are made: never edit them by hand.
set -euo pipefail
cd "$(dirname "$0")/.."
make setup build >/dev/null
out=$(mktemp -d /tmp/lockjepsen-workshop-XXXXXX)
trap 'rm -rf "$out"' EXIT
./bin/lockjepsen lab --no-wait --dir "$out" --capture docs/workshop all
