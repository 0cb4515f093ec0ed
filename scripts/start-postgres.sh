#!/usr/bin/env bash
# Starts a throwaway PostgreSQL cluster on loopback for the fenced resource's tests
# and benchmarks, and prints its DSN on stdout (everything else goes to stderr):
#
#   export LOCKJEPSEN_PG_DSN=$(scripts/start-postgres.sh)
#
# Idempotent: a second run finds the cluster running and only prints the DSN.
# The cluster lives outside the clone ($LOCKJEPSEN_CACHE/pg, default
# /var/cache/lockjepsen/pg), listens on 127.0.0.1:$LOCKJEPSEN_PG_PORT (55432) and a
# unix socket in its data directory, and trusts every local connection: it holds
# test data only. It is separate from Debian's own "15 main" cluster so that the
# tests neither need nor disturb it.
#
#   scripts/start-postgres.sh --stop    stops it again
set -euo pipefail

CACHE="${LOCKJEPSEN_CACHE:-/var/cache/lockjepsen}"
PGDIR="$CACHE/pg"
DATA="$PGDIR/data"
PORT="${LOCKJEPSEN_PG_PORT:-55432}"
DB=lockjepsen
DSN="postgres://postgres@127.0.0.1:$PORT/$DB?sslmode=disable"

die() { echo "start-postgres: $*" >&2; exit 2; }
log() { echo "start-postgres: $*" >&2; }

find_bindir() {
  local d
  for d in /usr/lib/postgresql/*/bin; do
    [[ -x "$d/initdb" && -x "$d/pg_ctl" ]] && { echo "$d"; return 0; }
  done
  command -v pg_ctl >/dev/null && { dirname "$(command -v pg_ctl)"; return 0; }
  return 1
}

BIN=$(find_bindir || true)
if [[ -z "$BIN" ]]; then
  command -v apt-get >/dev/null || die "PostgreSQL not found and no apt-get: install PostgreSQL (initdb, pg_ctl) and retry"
  [[ $(id -u) == 0 ]] || die "PostgreSQL not found: run as root to install it (apt-get install postgresql), or install it yourself"
  log "installing postgresql"
  apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends postgresql >&2
  BIN=$(find_bindir) || die "postgresql installed but initdb/pg_ctl not found"
fi

# PostgreSQL refuses to run as root, so root runs it as the postgres user.
if [[ $(id -u) == 0 ]]; then
  id postgres >/dev/null 2>&1 || die "user postgres missing: install the postgresql package, which creates it"
  OWNER=postgres
  as_owner() { runuser -u postgres -- "$@"; }
else
  OWNER=$(id -un)
  as_owner() { "$@"; }
fi

ready() { "$BIN/pg_isready" -q -h 127.0.0.1 -p "$PORT" >/dev/null 2>&1; }

if [[ "${1:-}" == "--stop" ]]; then
  if [[ -f "$DATA/postmaster.pid" ]]; then
    as_owner "$BIN/pg_ctl" -D "$DATA" -m fast -w stop >&2
  fi
  exit 0
fi

mkdir -p "$PGDIR"
chown "$OWNER" "$PGDIR"
chmod 700 "$PGDIR"

if [[ ! -f "$DATA/PG_VERSION" ]]; then
  log "initdb in $DATA"
  rm -rf "$DATA"
  as_owner "$BIN/initdb" -D "$DATA" -U postgres --auth=trust --encoding=UTF8 --locale=C.UTF-8 >"$PGDIR/initdb.log" 2>&1 ||
    as_owner "$BIN/initdb" -D "$DATA" -U postgres --auth=trust --encoding=UTF8 --locale=C >"$PGDIR/initdb.log" 2>&1 ||
    die "initdb failed, see $PGDIR/initdb.log"
  cat >>"$DATA/postgresql.conf" <<CONF
# lockjepsen test cluster: loopback only, socket beside the data.
listen_addresses = '127.0.0.1'
port = $PORT
unix_socket_directories = '$PGDIR'
max_connections = 200
CONF
fi

if ! ready; then
  # A stale pid file from a killed postmaster would stop pg_ctl; pg_ctl itself
  # checks whether that pid is alive, so only remove it when nothing answers.
  if [[ -f "$DATA/postmaster.pid" ]] && ! as_owner "$BIN/pg_ctl" -D "$DATA" status >/dev/null 2>&1; then
    rm -f "$DATA/postmaster.pid"
  fi
  log "starting postgres on 127.0.0.1:$PORT"
  as_owner "$BIN/pg_ctl" -D "$DATA" -l "$PGDIR/postgres.log" -w -t 60 start >&2 ||
    die "postgres did not start, see $PGDIR/postgres.log"
fi
ready || die "postgres does not answer on 127.0.0.1:$PORT, see $PGDIR/postgres.log"

if [[ -z "$("$BIN/psql" -h 127.0.0.1 -p "$PORT" -U postgres -d postgres -tAc "SELECT 1 FROM pg_database WHERE datname = '$DB'")" ]]; then
  "$BIN/psql" -h 127.0.0.1 -p "$PORT" -U postgres -d postgres -qc "CREATE DATABASE $DB" >&2
fi

echo "$DSN"
