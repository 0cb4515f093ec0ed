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
# A private topology for lab 1, so the capture never touches a running
# `cluster up` session.
./bin/lockjepsen lab --no-wait --dir "$out" --cluster-dir "$out/no-cluster" --capture docs/workshop all
