#!/usr/bin/env bash
# A broken adapter: reads every request and never answers. Each operation is
# info after the operation timeout; client-test fails its first case and
# skips the rest; a run refuses it at the start (the probe acquire is info).
exec cat >/dev/null
