#!/usr/bin/env bash
# Builds lockjepsen's two Docker images locally; nothing is pulled (both are
# FROM scratch). Idempotent: the staging directories are rebuilt from scratch
# every time and Docker's layer cache makes an unchanged rebuild a no-op.
#
#   lockjepsen/valkey:<version> (and :9)  valkey-server, valkey-sentinel (a symlink),
#                                        valkey-cli, libfaketime, exactly their libraries
#   lockjepsen/lockjepsen:latest          the static lockjepsen binary
#   lockjepsen/runner:latest              both: a sweep shard on the local runtime in one container
#   lockjepsen/etcd:<version> (and :latest) Debian's etcd binary and its libraries, if etcd-server is
#                                        installed (make setup-etcd; setup-ci does it); skipped otherwise
#
# Usage: scripts/build-images.sh [--quiet] [--runner-only]     (make images)
set -euo pipefail
cd "$(dirname "$0")/.."

CACHE="${LOCKJEPSEN_CACHE:-/var/cache/lockjepsen}"
STAGE="${LOCKJEPSEN_STAGE:-$CACHE/docker-stage}"
QUIET=0
RUNNER_ONLY=0
for a in "$@"; do
  case "$a" in
    --quiet) QUIET=1 ;;
    --runner-only) RUNNER_ONLY=1 ;;
    *) echo "build-images: unknown argument $a" >&2; exit 2 ;;
  esac
done

die() { echo "build-images: $*" >&2; exit 2; }
log() { ((QUIET)) || echo "build-images: $*" >&2; }
# dbuild ARGS...: docker build, without the legacy builder's deprecation banner
# (buildx is not installed here and BuildKit would try to pull its frontend).
dbuild() {
  local out
  if ! out=$(DOCKER_BUILDKIT=0 docker build -q "$@" 2>&1); then
    echo "$out" | grep -v -e DEPRECATED -e 'legacy builder' -e buildx -e 'docs.docker.com/go/buildx' >&2
    return 1
  fi
}

command -v docker >/dev/null || die "the docker CLI is not installed (apt-get install docker.io)"
docker info >/dev/null 2>&1 || die "Docker is not running (or this user may not use it): start it with 'systemctl start docker' (or dockerd &) and retry"

# Valkey: the directory scripts/setup.sh recorded, or LOCKJEPSEN_VALKEY_BIN.
BIN="${LOCKJEPSEN_VALKEY_BIN:-}"
if [[ -z "$BIN" && -f "$CACHE/env" ]]; then
  BIN=$(sed -n 's/^LOCKJEPSEN_VALKEY_BIN=//p' "$CACHE/env")
fi
[[ -n "$BIN" && -x "$BIN/valkey-server" ]] || die "Valkey is not built: run 'make setup' first (it builds Valkey 9 into $CACHE)"
VERSION=$("$BIN/valkey-server" --version | sed -n 's/.*v=\([0-9.]*\).*/\1/p')
[[ "${VERSION%%.*}" -ge 9 ]] 2>/dev/null || die "$BIN/valkey-server is Valkey '$VERSION', not 9.x: run 'make setup'"
FAKETIME="${LOCKJEPSEN_FAKETIME_LIB:-}"
if [[ -z "$FAKETIME" && -f "$CACHE/env" ]]; then
  FAKETIME=$(sed -n 's/^LOCKJEPSEN_FAKETIME_LIB=//p' "$CACHE/env")
fi
[[ -n "$FAKETIME" && -f "$FAKETIME" ]] || FAKETIME=/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1
[[ -f "$FAKETIME" ]] || die "libfaketime is not installed: run 'make setup'"
command -v go >/dev/null || die "go is not on PATH (the lockjepsen image holds a Go binary built here)"

# copy_libs FILE ROOT: copies the libraries ldd lists for FILE into ROOT at the
# paths ldd names (dereferenced: the image holds files, not dangling links).
copy_libs() {
  local f=$1 root=$2 lib
  # (|| true: ldd fails on a static binary, which needs nothing copied)
  { ldd "$f" 2>/dev/null || true; } | awk '/=>/ { print $3; next } /^[ \t]*\// { print $1 }' | while read -r lib; do
    [[ -n "$lib" && -f "$lib" ]] || continue
    mkdir -p "$root$(dirname "$lib")"
    cp -L "$lib" "$root$lib"
  done
}

# --- lockjepsen/valkey -------------------------------------------------------
build_valkey() {
V="$STAGE/valkey"
rm -rf "$V"; mkdir -p "$V/rootfs/usr/local/bin" "$V/rootfs/usr/lib/faketime" "$V/rootfs/etc/valkey" "$V/rootfs/data" "$V/rootfs/tmp"
cp "$BIN/valkey-server" "$BIN/valkey-cli" "$V/rootfs/usr/local/bin/"
# valkey-sentinel is valkey-server under another name (argv[0] decides).
ln -s valkey-server "$V/rootfs/usr/local/bin/valkey-sentinel"
cp -L "$FAKETIME" "$V/rootfs/usr/lib/faketime/libfaketime.so.1"
for f in "$BIN/valkey-server" "$BIN/valkey-cli" "$FAKETIME"; do copy_libs "$f" "$V/rootfs"; done
# Sentinel refuses to start without a writable config file; compose passes
# every setting as arguments and lets Sentinel rewrite this empty file.
: > "$V/rootfs/etc/valkey/sentinel.conf"
chmod 0666 "$V/rootfs/etc/valkey/sentinel.conf"
chmod 1777 "$V/rootfs/tmp"
cp docker/valkey.Dockerfile "$V/Dockerfile"
log "lockjepsen/valkey:$VERSION from $BIN ($(cd "$V/rootfs" && find . -type f | sed 's|^\.||' | sort | tr '\n' ' '))"
dbuild -t "lockjepsen/valkey:$VERSION" -t "lockjepsen/valkey:${VERSION%%.*}" \
  --label "org.lockjepsen.valkey-version=$VERSION" "$V" || die "docker build of lockjepsen/valkey failed"
}

# --- lockjepsen/lockjepsen ---------------------------------------------------
build_lockjepsen() {
L="$STAGE/lockjepsen"
rm -rf "$L"; mkdir -p "$L/rootfs/usr/local/bin" "$L/rootfs/data" "$L/rootfs/tmp"
chmod 1777 "$L/rootfs/tmp"
CGO_ENABLED=0 go build -trimpath -buildvcs=false -ldflags='-s -w' -o "$L/rootfs/usr/local/bin/lockjepsen" ./cmd/lockjepsen \
  || die "go build of the static lockjepsen binary failed"
cp docker/lockjepsen.Dockerfile "$L/Dockerfile"
log "lockjepsen/lockjepsen:latest (static, CGO_ENABLED=0)"
dbuild -t lockjepsen/lockjepsen:latest "$L" || die "docker build of lockjepsen/lockjepsen failed"
}

# --- lockjepsen/runner -------------------------------------------------------
# A sweep shard in one container: the static lockjepsen binary starts the
# Valkey nodes, Sentinels, clients and resource as processes (local runtime),
# exactly as on the host. The Valkey binaries and libfaketime come with their
# ldd-listed libraries; libfaketime sits where cluster.FindBinaries looks.
build_runner() {
R="$STAGE/runner"
rm -rf "$R"; mkdir -p "$R/rootfs/usr/local/bin" "$R/rootfs/usr/lib/x86_64-linux-gnu/faketime" "$R/rootfs/results" "$R/rootfs/tmp"
chmod 1777 "$R/rootfs/tmp" "$R/rootfs/results"
cp "$BIN/valkey-server" "$BIN/valkey-cli" "$R/rootfs/usr/local/bin/"
ln -s valkey-server "$R/rootfs/usr/local/bin/valkey-sentinel"
cp -L "$FAKETIME" "$R/rootfs/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"
for f in "$BIN/valkey-server" "$BIN/valkey-cli" "$FAKETIME"; do copy_libs "$f" "$R/rootfs"; done
CGO_ENABLED=0 go build -trimpath -buildvcs=false -ldflags='-s -w' -o "$R/rootfs/usr/local/bin/lockjepsen" ./cmd/lockjepsen \
  || die "go build of the static lockjepsen binary failed"
cp docker/runner.Dockerfile "$R/Dockerfile"
log "lockjepsen/runner:latest (lockjepsen static + Valkey $VERSION + libfaketime)"
dbuild -t lockjepsen/runner:latest --label "org.lockjepsen.valkey-version=$VERSION" "$R" || die "docker build of lockjepsen/runner failed"
}

# --- lockjepsen/etcd ---------------------------------------------------------
# Debian's etcd-server binary (a Go program) and whatever ldd lists for it:
# --runtime docker --topology etcd. Without etcd installed the image is
# skipped with a note; the docker runtime then names the command that builds it.
build_etcd() {
local ETCD="${LOCKJEPSEN_ETCD_BIN:-$(command -v etcd || true)}"
if [[ -z "$ETCD" || ! -x "$ETCD" ]]; then
  log "lockjepsen/etcd skipped: etcd is not installed (make setup-etcd installs Debian's etcd-server)"
  return 0
fi
local EV
EV=$("$ETCD" --version | sed -n 's/^etcd Version: \([0-9.]*\).*/\1/p')
[[ -n "$EV" ]] || die "$ETCD --version names no version"
E="$STAGE/etcd"
rm -rf "$E"; mkdir -p "$E/rootfs/usr/local/bin" "$E/rootfs/data" "$E/rootfs/tmp"
chmod 1777 "$E/rootfs/tmp"
cp -L "$ETCD" "$E/rootfs/usr/local/bin/etcd"
copy_libs "$ETCD" "$E/rootfs"
cp docker/etcd.Dockerfile "$E/Dockerfile"
log "lockjepsen/etcd:$EV from $ETCD ($(cd "$E/rootfs" && find . -type f | sed 's|^\.||' | sort | tr '\n' ' '))"
dbuild -t "lockjepsen/etcd:$EV" -t lockjepsen/etcd:latest --label "org.lockjepsen.etcd-version=$EV" "$E" \
  || die "docker build of lockjepsen/etcd failed"
}

if ((RUNNER_ONLY)); then
  build_runner
else
  build_valkey
  build_lockjepsen
  build_runner
  build_etcd
fi

log "done: $(docker images --format '{{.Repository}}:{{.Tag}} {{.Size}}' | grep '^lockjepsen/' | tr '\n' ' ')"
