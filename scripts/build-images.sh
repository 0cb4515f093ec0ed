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
#   lockjepsen/zookeeper:<version> (and :latest) Debian's ZooKeeper jars and the JRE that runs them
#                                        (its java, lib/ and conf/, the libraries ldd lists), if zookeeper
#                                        is installed (make setup does it); skipped otherwise
#
# Usage: scripts/build-images.sh [--quiet] [--runner-only | --only IMAGE]     (make images)
#   --only valkey|lockjepsen|runner|etcd|zookeeper builds that image alone.
set -euo pipefail
cd "$(dirname "$0")/.."

CACHE="${LOCKJEPSEN_CACHE:-/var/cache/lockjepsen}"
STAGE="${LOCKJEPSEN_STAGE:-$CACHE/docker-stage}"
QUIET=0
ONLY=""
while (($#)); do
  case "$1" in
    --quiet) QUIET=1 ;;
    --runner-only) ONLY=runner ;;
    --only)
      ONLY="${2:-}"; shift
      case "$ONLY" in valkey|lockjepsen|runner|etcd|zookeeper) ;; *)
        echo "build-images: --only wants one of valkey, lockjepsen, runner, etcd, zookeeper (got '$ONLY')" >&2; exit 2 ;;
      esac ;;
    *) echo "build-images: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
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

# One build at a time: the tests of two packages, run side by side, each build
# the images, and both would rebuild the same staging folders under each
# other. The second waits, then finds every layer cached. flock: the kernel
# drops the lock with a killed build.
mkdir -p "$CACHE"
exec 9>"$CACHE/build-images.lock"
flock 9

# need_valkey finds the Valkey build and libfaketime (the valkey and runner
# images hold them): the directory scripts/setup.sh recorded, or
# LOCKJEPSEN_VALKEY_BIN.
need_valkey() {
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
}
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
need_valkey
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
# No -trimpath: with it every package compiled again, apart from the tests' builds
# (the Makefile's CGO_ENABLED=0 makes them the same compile); only the link differs.
CGO_ENABLED=0 go build -buildvcs=false -ldflags='-s -w' -o "$L/rootfs/usr/local/bin/lockjepsen" ./cmd/lockjepsen \
  || die "go build of the static lockjepsen binary failed"
cp docker/lockjepsen.Dockerfile "$L/Dockerfile"
log "lockjepsen/lockjepsen:latest (static, CGO_ENABLED=0)"
dbuild -t lockjepsen/lockjepsen:latest "$L" || die "docker build of lockjepsen/lockjepsen failed"
}

# --- etcd and ZooKeeper, staged into a rootfs ---------------------------------
# stage_etcd ROOTFS copies Debian's etcd binary and the libraries ldd lists for
# it into ROOTFS and sets EV to its version; it returns 1 (nothing copied) when
# etcd is not installed. The etcd image and the runner image share it.
stage_etcd() {
local root=$1 ETCD="${LOCKJEPSEN_ETCD_BIN:-$(command -v etcd || true)}"
[[ -n "$ETCD" && -x "$ETCD" ]] || return 1
EV=$("$ETCD" --version | sed -n 's/^etcd Version: \([0-9.]*\).*/\1/p')
[[ -n "$EV" ]] || die "$ETCD --version names no version"
mkdir -p "$root/usr/local/bin"
cp -L "$ETCD" "$root/usr/local/bin/etcd"
copy_libs "$ETCD" "$root"
}

# stage_zookeeper ROOTFS copies Debian's ZooKeeper server (jars) and the JRE
# that runs it on the host into ROOTFS and sets ZV to its version; it returns
# 1 (nothing copied) when zookeeper is not installed. The jars are the
# server's classpath with its manifests followed (deployments/zookeeper/zkjars, the same
# classpath the local runtime starts), at the paths the manifests name. The
# JRE is JAVA_HOME (readlink -f of java, two levels up) at the same path:
# bin/java, lib/ and conf/ dereferenced (several are links into
# /etc/java-*), less what a server never loads (the JDK's ct.sym and
# src.zip, the java.desktop module's native libraries), and the shared
# libraries ldd lists for java and every library left; /usr/local/bin/java
# links to it, so that a PATH lookup finds it.
stage_zookeeper() {
local root=$1 JAVA="${LOCKJEPSEN_JAVA:-$(command -v java || true)}"
if [[ -z "$JAVA" || ! -x "$JAVA" || ( ! -f /usr/share/java/zookeeper.jar && -z "${LOCKJEPSEN_ZK_CLASSPATH:-}" ) ]]; then
  return 1
fi
local JH JARS f
JH=$(dirname "$(dirname "$(readlink -f "$JAVA")")")
[[ -x "$JH/bin/java" && -d "$JH/lib" ]] || die "$JAVA is not a JRE's bin/java (JAVA_HOME $JH has no lib/)"
JARS=$(go run ./deployments/zookeeper/zkjars) || die "the ZooKeeper classpath could not be read (deployments/zookeeper/zkjars)"
# shellcheck disable=SC2086 # one jar a line, no spaces in Debian's paths
ZV=$("$JH/bin/java" -cp "$(echo $JARS | tr ' ' ':')" org.apache.zookeeper.version.VersionInfoMain 2>/dev/null | sed -n 's/^Apache ZooKeeper, version \([0-9.]*\).*/\1/p')
[[ -n "$ZV" ]] || die "ZooKeeper's VersionInfoMain named no version"
mkdir -p "$root/usr/local/bin" "$root$JH/bin"
cp -L "$JH/bin/java" "$root$JH/bin/java"
ln -sf "$JH/bin/java" "$root/usr/local/bin/java"
# (the list from the host's JAVA_HOME, so that ldd resolves each library's
# $ORIGIN there, at the paths the image repeats)
local JRE
JRE=$(cd "$JH" && find -L lib conf -type f \
    ! -name ct.sym ! -name src.zip \
    ! -name 'libawt*.so' ! -name libfontmanager.so ! -name libjavajpeg.so ! -name libjawt.so ! -name libjsound.so \
    ! -name liblcms.so ! -name libmlib_image.so ! -name libsplashscreen.so ! -name libatk-wrapper.so) \
  || die "listing the JRE under $JH failed"
(cd "$JH" && echo "$JRE" | xargs cp -L --parents -t "$root$JH/") || die "copying the JRE from $JH failed"
copy_libs "$JH/bin/java" "$root"
for f in $(echo "$JRE" | grep '\.so$'); do copy_libs "$JH/$f" "$root"; done
for f in $JARS; do
  mkdir -p "$root$(dirname "$f")"
  cp -L "$f" "$root$f"
done
}

# --- lockjepsen/runner -------------------------------------------------------
# A sweep shard in one container: the static lockjepsen binary starts the
# Valkey nodes, Sentinels, clients and resource as processes (local runtime),
# exactly as on the host. The Valkey binaries and libfaketime come with their
# ldd-listed libraries; libfaketime sits where cluster.FindBinaries looks.
# etcd and ZooKeeper (with its JRE) come too when the host has them, so that a
# shard can run every deployment of the comparison (--configs etcd,zookeeper).
build_runner() {
need_valkey
R="$STAGE/runner"
rm -rf "$R"; mkdir -p "$R/rootfs/usr/local/bin" "$R/rootfs/usr/lib/x86_64-linux-gnu/faketime" "$R/rootfs/results" "$R/rootfs/tmp"
chmod 1777 "$R/rootfs/tmp" "$R/rootfs/results"
cp "$BIN/valkey-server" "$BIN/valkey-cli" "$R/rootfs/usr/local/bin/"
ln -s valkey-server "$R/rootfs/usr/local/bin/valkey-sentinel"
cp -L "$FAKETIME" "$R/rootfs/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"
for f in "$BIN/valkey-server" "$BIN/valkey-cli" "$FAKETIME"; do copy_libs "$f" "$R/rootfs"; done
local extra=""
if stage_etcd "$R/rootfs"; then extra+=" + etcd $EV"; fi
if stage_zookeeper "$R/rootfs"; then extra+=" + ZooKeeper $ZV and its JRE"; fi
# No -trimpath, as above: the tests' compile cache serves this build.
CGO_ENABLED=0 go build -buildvcs=false -ldflags='-s -w' -o "$R/rootfs/usr/local/bin/lockjepsen" ./cmd/lockjepsen \
  || die "go build of the static lockjepsen binary failed"
cp docker/runner.Dockerfile "$R/Dockerfile"
log "lockjepsen/runner:latest (lockjepsen static + Valkey $VERSION + libfaketime$extra)"
dbuild -t lockjepsen/runner:latest --label "org.lockjepsen.valkey-version=$VERSION" "$R" || die "docker build of lockjepsen/runner failed"
}

# --- lockjepsen/etcd ---------------------------------------------------------
# Debian's etcd-server binary (a Go program) and whatever ldd lists for it:
# --runtime docker --topology etcd. Without etcd installed the image is
# skipped with a note; the docker runtime then names the command that builds it.
build_etcd() {
E="$STAGE/etcd"
rm -rf "$E"; mkdir -p "$E/rootfs/data" "$E/rootfs/tmp"
chmod 1777 "$E/rootfs/tmp"
if ! stage_etcd "$E/rootfs"; then
  log "lockjepsen/etcd skipped: etcd is not installed (make setup-etcd installs Debian's etcd-server)"
  return 0
fi
cp docker/etcd.Dockerfile "$E/Dockerfile"
log "lockjepsen/etcd:$EV from ${LOCKJEPSEN_ETCD_BIN:-$(command -v etcd)} ($(cd "$E/rootfs" && find . -type f | sed 's|^\.||' | sort | tr '\n' ' '))"
dbuild -t "lockjepsen/etcd:$EV" -t lockjepsen/etcd:latest --label "org.lockjepsen.etcd-version=$EV" "$E" \
  || die "docker build of lockjepsen/etcd failed"
}

# --- lockjepsen/zookeeper ----------------------------------------------------
# Debian's ZooKeeper server on the JRE that runs it on the host (stage_zookeeper),
# FROM scratch: --runtime docker --topology zookeeper. Without zookeeper
# installed the image is skipped with a note; the docker runtime then names
# the command that builds it.
build_zookeeper() {
Z="$STAGE/zookeeper"
rm -rf "$Z"; mkdir -p "$Z/rootfs/data" "$Z/rootfs/tmp"
chmod 1777 "$Z/rootfs/tmp"
if ! stage_zookeeper "$Z/rootfs"; then
  log "lockjepsen/zookeeper skipped: zookeeper is not installed (make setup installs Debian's zookeeper and default-jre-headless)"
  return 0
fi
cp docker/zookeeper.Dockerfile "$Z/Dockerfile"
log "lockjepsen/zookeeper:$ZV ($(du -sh "$Z/rootfs" | cut -f1))"
dbuild -t "lockjepsen/zookeeper:$ZV" -t lockjepsen/zookeeper:latest --label "org.lockjepsen.zookeeper-version=$ZV" "$Z" \
  || die "docker build of lockjepsen/zookeeper failed"
}

case "$ONLY" in
  "")
    build_valkey
    build_lockjepsen
    build_runner
    build_etcd
    build_zookeeper ;;
  *) "build_$ONLY" ;;
esac

log "done: $(docker images --format '{{.Repository}}:{{.Tag}} {{.Size}}' | grep '^lockjepsen/' | tr '\n' ' ')"
